"""Role data: custom permissions, per-group topic scopes, sensitive topics.

The roles themselves are the Django groups "Viewer", "Operator" and "Admin",
created and kept in sync from ``dashboard.permissions.ROLES`` after every ``migrate``
(``dashboard.signals``) and by ``manage.py sync_roles``;
``dashboard.permissions`` turns these rows into answers.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from django.contrib.auth.models import Group
from django.db import models

__all__ = ["ConsoleAccess", "GroupTopicScope", "SensitiveTopic"]


class ConsoleAccess(models.Model):
    """Carrier of the console's custom permissions (no table). The permissions are not
    listed here: a post-migrate step creates one per :class:`dashboard.permissions.Action`
    and syncs the role groups (``dashboard.signals``), so no migration restates them."""

    class Meta:
        managed = False
        default_permissions = ()

    def __str__(self) -> str:
        return "console access"


class GroupTopicScope(models.Model):
    """A topic name pattern (fnmatch, e.g. ``orders-*``) that a group is limited to.

    A group without any scope row sees every topic; a group with rows sees and
    acts on the topics matching at least one of them.
    """

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="topic_scopes")
    cluster = models.CharField(max_length=100, blank=True, help_text="empty: every cluster")
    pattern = models.CharField(max_length=200)

    class Meta:
        unique_together = ("group", "cluster", "pattern")
        ordering = ("group__name", "pattern")

    def __str__(self) -> str:
        return f"{self.group.name}: {self.cluster or '*'}/{self.pattern}"

    def matches(self, cluster: str, topic: str) -> bool:
        return (not self.cluster or self.cluster == cluster) and fnmatchcase(topic, self.pattern)


class SensitiveTopic(models.Model):
    """Topics (fnmatch pattern) whose payloads viewers see masked."""

    cluster = models.CharField(max_length=100, blank=True, help_text="empty: every cluster")
    pattern = models.CharField(max_length=200)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        unique_together = ("cluster", "pattern")
        ordering = ("pattern",)

    def __str__(self) -> str:
        return f"{self.cluster or '*'}/{self.pattern}"

    def matches(self, cluster: str, topic: str) -> bool:
        return (not self.cluster or self.cluster == cluster) and fnmatchcase(topic, self.pattern)
