"""One row of the API description: a route, its role, query and body fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DLQ_FILTERS", "REASON", "Route", "route"]

REASON = ("string", "why (recorded in the audit log)")
DLQ_FILTERS = {
    "text": "payload text contains",
    "partition": "source partition",
    "key": "message key",
    "since": "dead-lettered at or after (epoch ms or ISO time)",
    "until": "dead-lettered before (epoch ms or ISO time)",
}


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: str
    tag: str
    role: str
    summary: str
    query: dict[str, str] = field(default_factory=dict)
    body: dict[str, tuple[str, str]] = field(default_factory=dict)


def route(*args: Any, **kwargs: Any) -> Route:
    """A row, positional as the tables write it."""
    return Route(*args, **kwargs)
