"""Writing the audit log: intent before the action, outcome after, one hash chain.

Every state-changing service (Zulip style) takes ``acting_user`` and an
:class:`Origin` (request id, client address) and calls :func:`audit_begin`
before it touches Redis and :func:`audit_complete` after. Appends are serialised
(a row lock on :class:`AuditChainHead` plus a process lock) so the chain never
forks, whatever the number of threads, workers and web processes.
"""

from __future__ import annotations

import hmac
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import HttpRequest
from django.utils import timezone

from dashboard.client_addr import client_ip, request_id
from dashboard.models import AuditChainHead, AuditEvent, AuditEventType, AuditPhase
from dashboard.models.audit import GENESIS_HASH

__all__ = [
    "AuditReasonError",
    "ChainReport",
    "ConfirmationError",
    "Origin",
    "audit_begin",
    "audit_complete",
    "audit_failure",
    "audit_record",
    "audit_verify",
    "audit_verify_cached",
    "origin_from_request",
]

_append_lock = threading.Lock()
_verify_lock = threading.Lock()
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
        prev = (
            AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
            or GENESIS_HASH
        )
        row.prev_hash = prev
        row.hash = row.compute_hash(prev)
        key = _hmac_key()
        row.mac = row.compute_mac(key) if key else ""
        row.save(force_insert=True)
    return row


def _hmac_key() -> bytes:
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


@dataclass(frozen=True, slots=True)
class ChainReport:
    intact: bool
    checked: int
    first_broken_id: int | None = None
    problem: str = ""
    unsigned: int = 0  # rows written before the HMAC key was configured

    def __str__(self) -> str:
        if self.intact:
            note = f", {self.unsigned} written before the HMAC key" if self.unsigned else ""
            return f"intact ({self.checked} rows{note})"
        return f"broken at row {self.first_broken_id}: {self.problem} ({self.checked} rows checked)"


def audit_verify(*, chunk_size: int = 2000) -> ChainReport:
    """Recompute the chain in id order; the first row whose links do not hold is reported.

    With ``AUDIT_HMAC_KEY`` set, every row from the first one that carries an HMAC on
    must carry the right one: a wrong key, or rows rebuilt without it, are reported.
    """
    prev = GENESIS_HASH
    checked = unsigned = 0
    key = _hmac_key()
    signed_seen = False
    for row in AuditEvent.objects.order_by("id").iterator(chunk_size=chunk_size):
        checked += 1
        if row.prev_hash != prev:
            return ChainReport(False, checked, row.pk, "prev_hash does not match the row before")
        if row.compute_hash(prev) != row.hash:
            return ChainReport(False, checked, row.pk, "content does not match its hash")
        if key and (row.mac or signed_seen):
            signed_seen = True
            if not hmac.compare_digest(row.mac.encode(), row.compute_mac(key).encode()):
                problem = "HMAC does not match (wrong AUDIT_HMAC_KEY, or a rewritten chain)"
                return ChainReport(False, checked, row.pk, problem)
        elif key:
            unsigned += 1
        prev = row.hash
    appended = AuditChainHead.objects.filter(pk=1).values_list("appended", flat=True).first()
    if appended is not None and appended > checked:
        last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
        missing = appended - checked
        return ChainReport(False, checked, last, f"{missing} row(s) missing after this one")
    return ChainReport(True, checked, unsigned=unsigned)


VERIFY_CACHE_KEY = "dashboard:audit-verify"


def audit_verify_cached() -> tuple[ChainReport, datetime]:
    """:func:`audit_verify`, re-run at most once per ``AUDIT_VERIFY_INTERVAL_S`` per cache
    (the pages' check: one full re-hash a minute, however often it is asked);
    returns the report and when it was computed. ``manage.py audit_verify`` always re-runs.
    """
    cached = cache.get(VERIFY_CACHE_KEY)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    with _verify_lock:
        cached = cache.get(VERIFY_CACHE_KEY)
        if cached is None:
            cached = (audit_verify(), timezone.now())
            cache.set(VERIFY_CACHE_KEY, cached, int(settings.AUDIT_VERIFY_INTERVAL_S))
    return cached  # type: ignore[no-any-return]
