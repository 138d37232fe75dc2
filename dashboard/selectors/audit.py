"""Audit reads: the action list (intent rows with their outcome), CSV and JSON exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Q, QuerySet

from dashboard.audit_details import GLOBAL, shown_detail
from dashboard.models import AuditEvent, AuditEventType, AuditPhase, AuditTopic
from dashboard.permissions import view_scopes
from dashboard.selectors.outside import outside_audit
from mqcore.csvsafe import csv_line, csv_safe

__all__ = [
    "AuditFilterError",
    "AuditFilters",
    "AuditView",
    "audit_chain_json",
    "audit_csv",
    "audit_event_json",
    "audit_json_chunks",
    "audit_list",
    "audit_view",
    "csv_safe",
]

PER_PAGE = 50
CSV_COLUMNS = [
    "id",
    "created_at",
    "actor",
    "action",
    "cluster",
    "topic",
    "letter_ids",
    "frozen_set",
    "reason",
    "ticket",
    "outcome",
    "counts",
    "request_id",
    "client_addr",
    "hash",
]


class AuditFilterError(ValueError):
    """Raised when an audit filter parameter is malformed."""


def _time(name: str, raw: str) -> datetime | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise AuditFilterError(f"{name}: use ISO time, e.g. 2026-01-31T12:00") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class AuditFilters:
    actor: str = ""
    action: str = ""
    topic: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def from_query(cls, query: Any) -> AuditFilters:
        action = str(query.get("action", "") or "").strip()
        if action and action not in AuditEventType.values:
            raise AuditFilterError(f"action: one of {', '.join(AuditEventType.values)}")
        return cls(
            actor=str(query.get("actor", "") or "").strip()[:150],
            action=action,
            topic=str(query.get("topic", "") or "").strip()[:200],
            since=_time("since", str(query.get("since", "") or "")),
            until=_time("until", str(query.get("until", "") or "")),
        )


def _glob_regex(pattern: str) -> str:
    """A topic pattern (``*`` and ``?`` wildcards) as a regex both SQLite and PostgreSQL
    read alike; any other character is literal (a ``[...]`` class matches less, never more)."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return f"^{body}$"


def scope_q(user: Any) -> Q | None:
    """The rows of ``user``'s topic scopes, or None: no limit. A row is in scope when its
    topic is (rows without topic: when a scope reaches their cluster) and so is every
    topic its details name (:class:`AuditTopic`); rows about every topic (access
    changes, API tokens, refusals of topic-less actions) only for unscoped users."""
    scopes = view_scopes(user)
    if scopes is None:
        return None
    q = Q(pk__in=[])
    named_ok = Q(pk__in=[])  # a named topic the user sees, on the row's cluster
    for cluster, pattern in scopes:
        where = Q(cluster=cluster) if cluster else Q()
        q |= where & (Q(topic__regex=_glob_regex(pattern)) | Q(topic=""))
        on = Q(event__cluster=cluster) if cluster else Q()
        named_ok |= on & Q(topic__regex=_glob_regex(pattern))
    hidden = AuditTopic.objects.filter(event=OuterRef("pk")).exclude(~Q(topic=GLOBAL) & named_ok)
    return q & ~Q(Exists(hidden))


def audit_list(
    *, filters: AuditFilters, user: Any, before: int | None = None
) -> QuerySet[AuditEvent]:
    """Intent rows ``user`` may see (their topic scopes), newest first, each with its
    outcome row (``completion``) joined."""
    qs = AuditEvent.objects.filter(phase=AuditPhase.INTENT).select_related("completion")
    limit = scope_q(user)
    if limit is not None:
        qs = qs.filter(limit)
    if filters.actor:
        qs = qs.filter(actor=filters.actor)
    if filters.action:
        qs = qs.filter(event_type=filters.action)
    if filters.topic:
        qs = qs.filter(topic=filters.topic)
    if filters.since:
        qs = qs.filter(created_at__gte=filters.since)
    if filters.until:
        qs = qs.filter(created_at__lte=filters.until)
    if before:
        qs = qs.filter(id__lt=before)
    return qs.order_by("-id")


@dataclass(frozen=True)
class AuditView:
    """The events a user may see by the filters, newest first: ``context()`` for the page
    (50 a page), ``json()`` for the API (``limit`` a page, ``next_before`` the cursor)."""

    filters: AuditFilters
    events: QuerySet[AuditEvent]
    user: Any = None
    first_page: bool = True

    def context(self, page: str | None, query: str) -> dict[str, Any]:
        listed = Paginator(self.events, PER_PAGE).get_page(page)
        return {
            "events": listed,
            "filters": self.filters,
            "actions": AuditEventType.choices,
            "query": query,
            "outside": None if listed.number > 1 or self.filters.action else self.outside(PER_PAGE),
        }

    def json(self, limit: int) -> dict[str, Any]:
        events = list(self.events[: limit + 1])
        more, events = len(events) > limit, events[:limit]
        return {
            "events": [audit_event_json(e) for e in events],
            "next_before": events[-1].pk if more and events else None,
            "outside": self.outside(limit)["events"] if self.first_page else [],
        }

    def outside(self, limit: int) -> dict[str, Any]:
        """The newest actions taken outside the console (mqcore's CLI and library) by the
        same filters (``actor`` is who acted); none when an action type is chosen, since
        those are the console's."""
        f = self.filters
        if f.action:
            return {"events": [], "errors": {}}
        return outside_audit(
            self.user,
            actor=f.actor,
            topic=f.topic,
            since_ms=int(f.since.timestamp() * 1000) if f.since else None,
            until_ms=int(f.until.timestamp() * 1000) if f.until else None,
            limit=limit,
        )


def audit_view(*, user: Any, before: int | None = None, **query: Any) -> AuditView:
    """The events by the filters of ``query`` (actor, action, topic, since, until; others
    ignored), before the id ``before``."""
    filters = AuditFilters.from_query(query)
    events = audit_list(filters=filters, user=user, before=before)
    return AuditView(filters, events, user=user, first_page=before is None)


def audit_chain_json(report: Any, checked_at: Any) -> dict[str, Any]:
    """The chain check's report as the API gives it."""
    keys = ("intact", "checked", "first_broken_id", "problem", "unsigned")
    return {k: getattr(report, k) for k in keys} | {
        "summary": str(report),
        "checked_at": checked_at,
    }


def _has_completion(event: AuditEvent) -> bool:
    try:
        return event.completion is not None
    except AuditEvent.DoesNotExist:
        return False


def audit_event_json(event: AuditEvent) -> dict[str, Any]:
    done = event.completion if _has_completion(event) else None
    return {
        "id": event.pk,
        "created_at": event.created_at.isoformat(),
        "actor": event.actor,
        "action": event.event_type,
        "cluster": event.cluster,
        "topic": event.topic,
        "letter_ids": list(event.letter_ids or []),
        "frozen_set": event.frozen_set,
        "reason": event.reason,
        "ticket": event.ticket,
        "detail": shown_detail(event.detail or {}),
        "outcome": done.outcome if done else "unknown",
        "counts": dict(done.counts) if done else {},
        "outcome_detail": shown_detail(done.detail or {}) if done else {},
        "completed_at": done.created_at.isoformat() if done else None,
        "request_id": event.request_id,
        "client_addr": event.client_addr,
        "hash": event.hash,
        "outcome_hash": done.hash if done else None,
    }


def audit_csv(events: QuerySet[AuditEvent]) -> Iterator[str]:
    """CSV lines (header first); every cell is neutralised against formula injection."""
    yield csv_line(CSV_COLUMNS)
    for event in events.iterator(chunk_size=1000):
        data = audit_event_json(event)
        yield csv_line(
            (
                data["id"],
                data["created_at"],
                data["actor"],
                data["action"],
                data["cluster"],
                data["topic"],
                " ".join(data["letter_ids"]),
                data["frozen_set"],
                data["reason"],
                data["ticket"],
                data["outcome"],
                " ".join(f"{k}={v}" for k, v in sorted(data["counts"].items())),
                data["request_id"],
                data["client_addr"],
                data["hash"],
            )
        )


def audit_json_chunks(events: QuerySet[AuditEvent]) -> Iterator[str]:
    """A JSON array of :func:`audit_event_json` objects, one chunk per row (streamed)."""
    yield "["
    first = True
    for event in events.iterator(chunk_size=1000):
        item = json.dumps(audit_event_json(event), indent=2, default=str)
        yield ("\n" if first else ",\n") + item
        first = False
    yield "\n]\n"
