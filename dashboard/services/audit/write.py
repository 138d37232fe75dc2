"""Writing the audit log: intent before the action, outcome after, one hash chain.

Every state-changing service takes an :class:`Actor` (who acts, from which request, on
which cluster and topic: built once per request), checks the permission with it and its
input (:func:`require_reason`, :func:`require_confirmation`) and runs the action in
``with audited(actor, event_type, ...) as audit:``, which records the actor as it is:
the intent row is written before it touches Redis, the outcome row (the one the block
sets, or "failed" with the error) when the block ends. Appends are serialised
(a row lock on :class:`AuditChainHead` plus a process lock) so the chain never
forks, whatever the number of threads, workers and web processes. Each append
records the topics the row's details name (:class:`AuditTopic`, who may read it) and,
once committed, exports the new chain head (:mod:`.head`).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
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
from dashboard.permissions import Action, require_action
from dashboard.services.audit.head import export_head, new_head

__all__ = [
    "Actor",
    "AuditReasonError",
    "Audited",
    "ConfirmationError",
    "Origin",
    "audit_begin",
    "audit_complete",
    "audit_record",
    "audited",
    "hmac_key",
    "origin_from_request",
    "require_confirmation",
    "require_reason",
]

_append_lock = threading.Lock()
SYSTEM = {"actor": "system", "actor_id": None}  # the audit row's who of a job or command
MAX_LETTER_IDS = 1000  # longer id lists are referenced by a frozen set, not copied
# what an outcome row repeats of its intent row: who, where, what, from which request
_CARRIED = (
    "event_type",
    "actor",
    "actor_id",
    "cluster",
    "topic",
    "frozen_set",
    "request_id",
    "client_addr",
)


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


@dataclass(frozen=True, slots=True)
class Actor:
    """Who acts (``user``: None for the system), from where (``origin``) and on what
    (``cluster``, ``topic``: "" when the action names none). A request builds it once
    (:class:`dashboard.operations.declare.Call`); a service checks its permission with it
    (:meth:`require`) and hands it to :func:`audited` as it is."""

    user: Any
    origin: Origin = Origin()
    cluster: str = ""
    topic: str = ""

    def at(self, cluster: str | None = None, topic: str | None = None) -> Actor:
        """The same actor on another cluster or topic (one the input names)."""
        cluster = self.cluster if cluster is None else cluster
        return replace(self, cluster=cluster, topic=self.topic if topic is None else topic)

    def require(self, action: Action, *, topic: str | None = None) -> None:
        """PermissionDenied unless the user holds ``action`` on the cluster and the topic
        (``topic``: another one, such as a replay's target); with neither, a global action."""
        where = (self.topic if topic is None else topic) or None
        require_action(self.user, action, cluster=self.cluster or None, topic=where)

    def columns(self) -> dict[str, Any]:
        """The audit row's who and where: the user's name and id (``system`` for none or
        an anonymous user), the cluster, the topic and the origin."""
        user = self.user
        known = user is not None and getattr(user, "is_authenticated", False)
        who = {"actor": user.get_username(), "actor_id": user.pk} if known else SYSTEM
        return who | {"cluster": self.cluster, "topic": self.topic, **asdict(self.origin)}


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


def require_confirmation(confirm: str, expected: str, message: str) -> None:
    """ConfirmationError(``message``) unless ``confirm`` (trimmed) is ``expected`` exactly."""
    if (confirm or "").strip() != expected:
        raise ConfirmationError(message)


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


def audited(
    actor: Actor,
    event_type: AuditEventType,
    *,
    letter_ids: Iterable[str] = (),
    frozen_set: str = "",
    reason: str = "",
    ticket: str = "",
    detail: Mapping[str, Any] | None = None,
    failure_detail: Callable[[Exception], Mapping[str, Any]] | None = None,
) -> Audited:
    """Write the intent row (outcome "unknown") of ``actor``'s action and return its
    handle: run the action in ``with`` it, and it writes the outcome row when the block
    ends (see :class:`Audited`). ``failure_detail`` adds to a failed outcome's
    ``{"error"}``."""
    ids = list(letter_ids)
    extra = dict(detail or {})
    if len(ids) > MAX_LETTER_IDS:
        extra["letter_count"] = len(ids)
        ids = ids[:MAX_LETTER_IDS]
    intent = _append(
        AuditEvent(
            phase=AuditPhase.INTENT,
            event_type=event_type,
            **actor.columns(),
            letter_ids=ids,
            frozen_set=frozen_set[:300],
            reason=reason,
            ticket=ticket[:100],
            outcome="unknown",
            detail=extra,
        )
    )
    return Audited(intent, failure_detail)


class Audited:
    """An action's open intent row. Used as ``with audited(...) as audit:``, it writes
    the outcome row when the block ends:

    - normally (or a stream's reader stops, ``GeneratorExit``): the outcome the block
      set with :meth:`set` (default "completed", no counts, no detail);
    - by an exception: "failed" with ``{"error": "Type: message"}`` (plus the
      ``failure_detail`` of :func:`audited`), and the exception goes on;
    - when the process stops (``KeyboardInterrupt``, ``SystemExit``): none, the intent
      stays "unknown", as when the process is killed.

    :meth:`close` writes the outcome set so far at once (the block then writes none);
    :meth:`leave_open` leaves it to a later writer (a bulk replay job's runner).
    """

    __slots__ = ("_failure", "_held", "_written", "counts", "detail", "intent", "outcome")

    def __init__(
        self,
        intent: AuditEvent,
        failure_detail: Callable[[Exception], Mapping[str, Any]] | None = None,
    ) -> None:
        self.intent = intent
        self.outcome = "completed"
        self.counts: Mapping[str, int] | None = None
        self.detail: Mapping[str, Any] | None = None
        self._failure = failure_detail
        self._written = self._held = False

    def set(
        self,
        outcome: str,
        *,
        counts: Mapping[str, int] | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """The outcome row to write when the block ends normally."""
        self.outcome, self.counts, self.detail = outcome, counts, detail

    def close(self) -> None:
        """Write the outcome row set so far, now (once: the block's end then writes none)."""
        if not self._written:
            self._written = True
            audit_complete(
                self.intent, outcome=self.outcome, counts=self.counts, detail=self.detail
            )

    def leave_open(self) -> None:
        """The block's end writes no outcome row: a later writer completes the intent."""
        self._held = True

    def __enter__(self) -> Audited:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if self._held or not (exc is None or isinstance(exc, (Exception, GeneratorExit))):
            return  # left open, or the process is stopping: the intent stays "unknown"
        if isinstance(exc, Exception):
            extra = self._failure(exc) if self._failure else {}
            self.set("failed", detail={"error": f"{type(exc).__name__}: {exc}", **extra})
        self.close()


def audit_begin(actor: Actor, event_type: AuditEventType, **fields: Any) -> AuditEvent:
    """The intent row alone, for an outcome written apart by :func:`audit_complete`
    (services use :func:`audited`)."""
    return audited(actor, event_type, **fields).intent


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
            outcome=outcome[:32],
            counts=dict(counts or {}),
            detail=dict(detail or {}),
            completes=intent,
            **{name: getattr(intent, name) for name in _CARRIED},
        )
    )


def audit_record(
    actor: Actor, event_type: AuditEventType, outcome: str = "completed", **fields: Any
) -> AuditEvent:
    """Intent and outcome at once, for changes that already happened (admin edits, syncs)."""
    with audited(actor, event_type, **fields) as audit:
        audit.set(outcome)
    return audit.intent
