"""The audit log: append-only, hash-chained rows, one pair per operator action.

An action writes an *intent* row (outcome ``unknown``) before it touches Redis and
an *outcome* row after it, so a crash in between leaves an "unknown outcome" row,
never a missing one. Rows are never updated or deleted: the model layer refuses
it here and, on PostgreSQL, a trigger refuses it in the database (migration
0003) and, on SQLite, triggers do (migration 0005). Each row stores
``hash = sha256(prev_hash + canonical(row))``; rewriting any row breaks the chain
from there on, which ``manage.py audit_verify`` reports. With ``AUDIT_HMAC_KEY`` set,
each row also stores ``mac = HMAC(key, hash)``: whoever can write the database but
lacks the key cannot rebuild a consistent chain.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections, models
from django.utils import timezone

__all__ = [
    "GENESIS_HASH",
    "AuditChainHead",
    "AuditEvent",
    "AuditEventType",
    "AuditImmutableError",
    "AuditPhase",
    "AuditTopic",
    "suspended_audit_triggers",
]

GENESIS_HASH = "0" * 64


class AuditImmutableError(Exception):
    """Raised when code tries to update or delete an audit row (the log is append-only)."""


class AuditEventType(models.TextChoices):
    DLQ_REPLAY = "dlq.replay", "replay one letter"
    DLQ_REPLAY_FORCED = "dlq.replay_forced", "force replay"
    DLQ_REPLAY_TARGET = "dlq.replay_target", "replay to another target"
    DLQ_BULK_REPLAY = "dlq.bulk_replay", "bulk replay job"
    DLQ_BULK_CANCEL = "dlq.bulk_cancel", "cancel bulk replay"
    DLQ_DELETE = "dlq.delete", "delete letter"
    DLQ_PURGE = "dlq.purge", "purge DLQ"
    DLQ_EXPORT = "dlq.export", "export letters"
    LAG_EXPORT = "lag.export", "export lag"
    PENDING_EXPORT = "pending.export", "export pending entries"
    PENDING_CLAIM = "pending.claim", "claim pending entries"
    PENDING_MOVE_TO_DLQ = "pending.move_to_dlq", "move pending entries to DLQ"
    GROUP_SET_POSITION = "group.set_position", "move a group's position"
    MESSAGE_PRODUCE = "message.produce", "produce a test message"
    RETENTION_TRIM = "retention.trim", "trim partition streams by retention rules"
    RETRY_NOW = "retry.now", "retry items of the retry set now"
    RETRY_DELETE = "retry.delete", "delete items of the retry set"
    TOPIC_CREATE = "topic.create", "create a topic"
    TOPIC_GROW = "topic.grow", "grow a topic's partitions"
    TOPIC_TRIM = "topic.trim", "trim a topic's partitions"
    TOPIC_DELETE = "topic.delete", "delete a topic"
    GROUP_CREATE = "group.create", "create a consumer group"
    GROUP_DELETE = "group.delete", "delete a consumer group"
    ALERT_SILENCE = "alert.silence", "silence an alert"
    ALERT_ACK = "alert.ack", "acknowledge an alert"
    ALERT_UNSILENCE = "alert.unsilence", "lift an alert's silence or acknowledgement"
    ROLE_CHANGE = "role.change", "role or membership change"
    ROLE_SYNC = "role.sync", "roles synced"
    API_TOKEN_ISSUE = "token.issue", "API token issued"
    API_TOKEN_REVOKE = "token.revoke", "API token revoked"
    ACCESS_DENIED = "access.denied", "refused action (no permission)"


class AuditPhase(models.TextChoices):
    INTENT = "intent", "intent"  # written before the action; outcome unknown until completed
    OUTCOME = "outcome", "outcome"  # written after the action; points at its intent row


class AuditQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditImmutableError("audit rows cannot be updated")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditImmutableError("audit rows cannot be deleted")

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AuditImmutableError("audit rows cannot be updated")


class AuditChainHead(models.Model):
    """One row whose UPDATE serialises chain appends across threads and processes."""

    appended = models.BigIntegerField(default=0)

    class Meta:
        default_permissions = ()

    def __str__(self) -> str:
        return f"audit chain head ({self.appended} appended)"


class AuditEvent(models.Model):
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    phase = models.CharField(max_length=8, choices=AuditPhase.choices, default=AuditPhase.INTENT)
    event_type = models.CharField(max_length=32, choices=AuditEventType.choices, db_index=True)
    actor = models.CharField(max_length=150, db_index=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    cluster = models.CharField(max_length=100, blank=True)
    topic = models.CharField(max_length=200, blank=True, db_index=True)
    letter_ids = models.JSONField(default=list, blank=True)
    frozen_set = models.CharField(max_length=300, blank=True)
    reason = models.TextField(blank=True)
    ticket = models.CharField(max_length=100, blank=True)
    outcome = models.CharField(max_length=32, default="unknown")
    counts = models.JSONField(default=dict, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    client_addr = models.CharField(max_length=64, blank=True)
    completes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="completion"
    )
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # HMAC-SHA256 of ``hash`` with settings.AUDIT_HMAC_KEY (kept outside the database);
    # empty for rows written while no key was configured.
    mac = models.CharField(max_length=64, blank=True, default="")

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ("-id",)
        default_permissions = ("view",)

    def __str__(self) -> str:
        return f"#{self.pk} {self.event_type} by {self.actor} ({self.outcome})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditImmutableError("audit rows cannot be updated")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditImmutableError("audit rows cannot be deleted")

    def canonical(self) -> dict[str, Any]:
        """The hashed content of this row (everything except its own hash)."""
        return {
            "created_at": self.created_at.isoformat(),
            "phase": self.phase,
            "event_type": self.event_type,
            "actor": self.actor,
            "actor_id": self.actor_id,
            "cluster": self.cluster,
            "topic": self.topic,
            "letter_ids": list(self.letter_ids or []),
            "frozen_set": self.frozen_set,
            "reason": self.reason,
            "ticket": self.ticket,
            "outcome": self.outcome,
            "counts": dict(self.counts or {}),
            "detail": dict(self.detail or {}),
            "request_id": self.request_id,
            "client_addr": self.client_addr,
            "completes_id": self.completes_id,
        }

    def compute_mac(self, key: bytes) -> str:
        return hmac.new(key, self.hash.encode(), hashlib.sha256).hexdigest()

    def compute_hash(self, prev_hash: str) -> str:
        body = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256((prev_hash + body).encode()).hexdigest()

    @property
    def final_outcome(self) -> str:
        """The outcome of an intent row: its completion's outcome, or "unknown"."""
        try:
            done = self.completion
        except AuditEvent.DoesNotExist:
            return "unknown"
        return done.outcome if done is not None else "unknown"


class AuditTopic(models.Model):
    """A topic an audit action's details name (a replay's target, a housekeeper run's
    partitions, an alert's topic), on the intent row's cluster; ``topic=""`` marks an
    action only users who see every topic may read (access changes, tokens).

    Derived from the rows when they are appended (``dashboard.services.audit``), never
    hashed: it only decides who may read a row, so scoped users read an action only when
    every topic it names is theirs.
    """

    event = models.ForeignKey(AuditEvent, on_delete=models.CASCADE, related_name="named_topics")
    topic = models.CharField(max_length=200, blank=True)

    class Meta:
        default_permissions = ()
        constraints = [models.UniqueConstraint(fields=["event", "topic"], name="audit_topic_once")]

    def __str__(self) -> str:
        return f"#{self.event_id} names {self.topic or '(global)'}"


@contextmanager
def suspended_audit_triggers(using: str = "default") -> Iterator[None]:
    """Suspend the SQLite triggers that keep the table append-only, for ``flush`` only: on
    SQLite Django's ``flush`` (between transactional tests, ``manage.py flush``) empties
    tables with DELETE, which they refuse (PostgreSQL's TRUNCATE passes its row trigger).
    They are read back from ``sqlite_master``, dropped, and re-created as they were."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
            ["dashboard_auditevent"],
        )
        triggers = cursor.fetchall()
        for name, _ in triggers:
            cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            for _, sql in triggers:
                cursor.execute(sql)
