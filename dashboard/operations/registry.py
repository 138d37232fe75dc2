"""Every declared operation, by area: the one list of declaration modules.

Adding an area: write ``dashboard/operations/<area>.py`` with ``OPERATIONS`` and add its
name to :data:`AREAS` (one line, alphabetical). Its URL patterns join
:mod:`dashboard.urls`, its entries the OpenAPI document.
"""

from __future__ import annotations

from importlib import import_module

from django.urls import URLPattern

from dashboard.operations.declare import Operation

__all__ = ["OPERATIONS", "urlpatterns"]

AREAS = (
    "access",
    "audit",
    "browse",
    "clusters",
    "dlq",
    "exports",
    "monitoring",
    "partitions",
    "payloads",
    "pending_actions",
    "pipelines",
    "position",
    "replay_jobs",
    "retention",
    "retries",
    "timeline",
    "topic",
)

OPERATIONS: tuple[Operation, ...] = tuple(
    op for area in AREAS for op in import_module(f"dashboard.operations.{area}").OPERATIONS
)
urlpatterns: list[URLPattern] = [url for op in OPERATIONS for url in op.urls()]
