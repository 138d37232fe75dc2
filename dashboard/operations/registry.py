"""Every declared operation, by area: the one list of declaration modules.

Adding an area: write ``dashboard/operations/<area>.py`` with ``OPERATIONS`` and add it to
:data:`AREAS` (one line, alphabetical). Its URL patterns join :mod:`dashboard.urls`, its entries the
OpenAPI document.
"""

from __future__ import annotations

from django.urls import URLPattern

from dashboard.operations import (
    audit,
    dlq,
    monitoring,
    partitions,
    pending_actions,
    position,
    replay_jobs,
    retention,
    timeline,
)
from dashboard.operations.declare import Operation

__all__ = ["OPERATIONS", "urlpatterns"]

AREAS = (
    audit,
    dlq,
    monitoring,
    partitions,
    pending_actions,
    position,
    replay_jobs,
    retention,
    timeline,
)

OPERATIONS: tuple[Operation, ...] = tuple(op for area in AREAS for op in area.OPERATIONS)
urlpatterns: list[URLPattern] = [url for op in OPERATIONS for url in op.urls()]
