"""Bulk replay jobs: the frozen set of letter ids, progress, and the runner's lease.

The set is frozen at preview time and stored with the job (newline separated
ids, newest first as browsed), so the job replays exactly what the operator saw
counted, however the DLQ changes meanwhile. ``cursor`` counts the ids whose
outcome is already in ``replayed``/``skipped``/``failed``: progress is exact.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["ReplayJob", "ReplayJobStatus"]


class ReplayJobStatus(models.TextChoices):
    DRAFT = "draft", "previewed"  # set frozen and shown; not started
    QUEUED = "queued", "queued"  # created, waiting for a worker
    RUNNING = "running", "running"  # a worker holds the lease and replays
    CANCELLING = "cancelling", "cancelling"  # cancel asked; the runner stops at its next chunk
    CANCELLED = "cancelled", "cancelled"  # stopped by a user before the end
    COMPLETED = "completed", "completed"  # every frozen id has an outcome
    FAILED = "failed", "failed"  # the runner gave up (error recorded)


ACTIVE = (ReplayJobStatus.QUEUED, ReplayJobStatus.RUNNING, ReplayJobStatus.CANCELLING)


class ReplayJob(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    cluster = models.CharField(max_length=100)
    topic = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField()
    ticket = models.CharField(max_length=100, blank=True)
    filters = models.JSONField(default=dict, blank=True)
    frozen_ids = models.TextField()
    frozen_hash = models.CharField(max_length=64)
    total = models.PositiveIntegerField()
    first_id = models.CharField(max_length=40, blank=True)
    last_id = models.CharField(max_length=40, blank=True)
    force = models.BooleanField(default=False)
    target_topic = models.CharField(max_length=200, blank=True)
    target_partition = models.IntegerField(null=True, blank=True)
    rate_limit = models.PositiveIntegerField(default=0, help_text="letters per second; 0 = none")
    status = models.CharField(
        max_length=12, choices=ReplayJobStatus.choices, default=ReplayJobStatus.QUEUED
    )
    cursor = models.PositiveIntegerField(default=0)
    replayed = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    audit_event_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"replay job {self.id} ({self.topic}, {self.status})"

    def ids(self) -> list[str]:
        return self.frozen_ids.split("\n") if self.frozen_ids else []

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def percent(self) -> int:
        return 100 if not self.total else int(self.cursor * 100 / self.total)

    @property
    def runner_tag(self) -> str:
        """Written into replay records' ``by``; tells this job's own replays apart."""
        return f"job:{self.id}"
