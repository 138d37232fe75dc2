"""Writing the audit log: intent before the action, outcome after, one hash chain.

Every state-changing service (Zulip style) takes ``acting_user`` and an
:class:`Origin` (request id, client address) and calls :func:`audit_begin`
before it touches Redis and :func:`audit_complete` after. Appends are serialised
(a row lock on :class:`AuditChainHead` plus a process lock) so the chain never
forks, whatever the number of threads, workers and web processes. Each append
records the topics the row's details name (:class:`AuditTopic`, who may read it) and,
once committed, exports the new chain head (:mod:`.head`).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import HttpRequest

from dashboard.audit_details import named_topics
from dashboard.client_addr import client_ip, request_id
from dashboard.models import AuditChainHead, AuditEvent, AuditEventType, AuditPhase, AuditTopic
from dashboard.models.audit import GENESIS_HASH
from dashboard.services.audit.head import export_head, new_head

__all__ = [
    "AuditReasonError",
    "ConfirmationError",
    "Origin",
    "audit_begin",
    "audit_complete",
    "audit_failure",
    "audit_record",
    "hmac_key",
    "origin_from_request",
    "require_reason",
]

_append_lock = threading.Lock()
MAX_LETTER_IDS = 1000  # longer id lists are referenced by a frozen set, not copied


class AuditReasonError(ValueError):
    """Raised when a bulk or destructive action comes without a reason or ticket."""


class ConfirmationError(ValueError):
    """Raised when a destructive action comes without its target's name typed exactly
    (purge a DLQ, trim a topic, move a group, delete every matching retry item)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an action came from: request id and client address (empty for jobs, commands)."""

    request_id: str = ""
    client_addr: str = ""

    @classmethod
    def system(cls, name: str) -> Origin:
        return cls(request_id=f"{name}-{uuid.uuid4().hex[:12]}", client_addr="")


def origin_from_request(request: HttpRequest) -> Origin:
    """Request id (a well-formed ``X-Request-ID``, else a new one) and the client's address
    (``X-Forwarded-For`` only from a trusted proxy; see :mod:`dashboard.client_addr`)."""
    return Origin(request_id=request_id(request), client_addr=client_ip(request)[:64])


def require_reason(reason: str, ticket: str = "") -> str:
    """The trimmed reason, or AuditReasonError when both reason and ticket are empty."""
    reason = (reason or "").strip()
    if not reason and not (ticket or "").strip():
        raise AuditReasonError("a reason or ticket is required for this action")
    return reason


def _append(row: AuditEvent) -> AuditEvent:
    with _append_lock, transaction.atomic():
        if not AuditChainHead.objects.filter(pk=1).update(appended=F("appended") + 1):
            try:
                with transaction.atomic():
                    AuditChainHead.objects.create(pk=1, appended=1)
            except IntegrityError:
                AuditChainHead.objects.filter(pk=1).update(appended=F("appended") + 1)
        count = AuditChainHead.objects.values_list("appended", flat=True).get(pk=1)
        prev = (
            AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
            or GENESIS_HASH
        )
        row.prev_hash = prev
        row.hash = row.compute_hash(prev)
        key = hmac_key()
        row.mac = row.compute_mac(key) if key else ""
        row.save(force_insert=True)
        _name_topics(row)
        # exported once committed: a head never names a row a rollback took back
        head = new_head(row.pk, row.hash, int(count), bool(row.mac))
        transaction.on_commit(partial(export_head, head))
    return row


def _name_topics(row: AuditEvent) -> None:
    """The topics ``row``'s details name, recorded on its intent row (who may read it)."""
    intent_id = row.completes_id or row.pk
    named = named_topics(row.event_type, row.detail, topic=row.topic)
    if named:
        AuditTopic.objects.bulk_create(
            [AuditTopic(event_id=intent_id, topic=t) for t in sorted(named)],
            ignore_conflicts=True,
        )


def hmac_key() -> bytes:
    return str(getattr(settings, "AUDIT_HMAC_KEY", "") or "").encode()


def _actor(acting_user: Any) -> tuple[str, int | None]:
    if acting_user is None or not getattr(acting_user, "is_authenticated", False):
        return ("system", None)
    return (acting_user.get_username(), acting_user.pk)


def audit_begin(
    *,
    acting_user: Any,
    event_type: AuditEventType,
    origin: Origin | None = None,
    cluster: str = "",
    topic: str = "",
    letter_ids: Iterable[str] = (),
    frozen_set: str = "",
    reason: str = "",
    ticket: str = "",
    detail: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Write the intent row (outcome "unknown") before the action runs."""
    actor, actor_id = _actor(acting_user)
    origin = origin or Origin()
    ids = list(letter_ids)
    extra = dict(detail or {})
    if len(ids) > MAX_LETTER_IDS:
        extra["letter_count"] = len(ids)
        ids = ids[:MAX_LETTER_IDS]
    return _append(
        AuditEvent(
            phase=AuditPhase.INTENT,
            event_type=event_type,
            actor=actor,
            actor_id=actor_id,
            cluster=cluster,
            topic=topic,
            letter_ids=ids,
            frozen_set=frozen_set[:300],
            reason=reason,
            ticket=ticket[:100],
            outcome="unknown",
            detail=extra,
            request_id=origin.request_id,
            client_addr=origin.client_addr,
        )
    )


def audit_complete(
    intent: AuditEvent,
    *,
    outcome: str,
    counts: Mapping[str, int] | None = None,
    detail: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Append the outcome row of ``intent`` (the intent row itself is never changed)."""
    return _append(
        AuditEvent(
            phase=AuditPhase.OUTCOME,
            event_type=intent.event_type,
            actor=intent.actor,
            actor_id=intent.actor_id,
            cluster=intent.cluster,
            topic=intent.topic,
            frozen_set=intent.frozen_set,
            outcome=outcome[:32],
            counts=dict(counts or {}),
            detail=dict(detail or {}),
            request_id=intent.request_id,
            client_addr=intent.client_addr,
            completes=intent,
        )
    )


@contextmanager
def audit_failure(intent: AuditEvent) -> Iterator[AuditEvent]:
    """Run the action of ``intent``; if it raises, append a "failed" outcome and re-raise.

    The success outcome is the caller's (after the ``with`` block), so a crash
    inside the block that kills the process leaves the intent at "unknown".
    """
    try:
        yield intent
    except Exception as exc:
        audit_complete(intent, outcome="failed", detail={"error": f"{type(exc).__name__}: {exc}"})
        raise


def audit_record(
    *, acting_user: Any, event_type: AuditEventType, outcome: str = "completed", **fields: Any
) -> AuditEvent:
    """Intent and outcome at once, for changes that already happened (admin edits, syncs)."""
    intent = audit_begin(acting_user=acting_user, event_type=event_type, **fields)
    audit_complete(intent, outcome=outcome)
    return intent
