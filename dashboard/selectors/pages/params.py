"""Query parameters of the read pages and the API: parsing, paging, and the errors they raise."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.http import Http404

__all__ = [
    "ORDERS",
    "PAGE_SIZE",
    "NotFoundError",
    "Paged",
    "ParamError",
    "parse_choice",
    "parse_int",
]

PAGE_SIZE = 50
ORDERS = ("desc", "asc")


class NotFoundError(Http404):
    """Raised when a topic, group, partition or message named in a request does not exist."""


class ParamError(ValueError):
    """Raised when a filter, sort or paging parameter is invalid (the API answers 400)."""


def parse_int(
    raw: str | None, name: str, *, default: int | None, minimum: int = 0, maximum: int | None = None
) -> int | None:
    """An int query parameter within bounds; ParamError with a clear message otherwise."""
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ParamError(f"{name} must be an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and {maximum}" if maximum is not None else ""
        raise ParamError(f"{name} must be between {minimum}{upper}")
    return value


def parse_choice(raw: str | None, name: str, choices: Iterable[str], default: str) -> str:
    """``raw`` when it is one of ``choices``, ``default`` when empty; ParamError otherwise."""
    if raw is None or raw == "":
        return default
    allowed = tuple(choices)
    if raw not in allowed:
        raise ParamError(f"{name} must be one of {', '.join(allowed)}")
    return raw


@dataclass
class Paged:
    """A page of rows plus what a pager needs."""

    items: list[Any]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def has_next(self) -> bool:
        return self.page < self.pages

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def start(self) -> int:
        return 0 if self.total == 0 else (self.page - 1) * self.per_page + 1

    @property
    def end(self) -> int:
        return min(self.total, self.page * self.per_page)
