"""Query parameters of the read pages and the API: parsing, paging, and the errors they raise."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec
from django.http import Http404

from mqcore.errors import (
    InvalidArgumentError,
    UnknownGroupError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)

__all__ = [
    "PAGE_SIZE",
    "NotFoundError",
    "Order",
    "Paged",
    "ParamError",
    "convert",
    "doc",
    "mq_refusals",
    "parse_choice",
    "parse_int",
]

PAGE_SIZE = 50
T = TypeVar("T")
Order = Literal["desc", "asc"]  # a list's order (desc: the default)


def doc(description: str, **constraints: Any) -> msgspec.Meta:
    """An input field's description in the OpenAPI document (and its constraints):
    ``limit: Annotated[int, doc("page size", ge=1)] = 50``."""
    return msgspec.Meta(description=description, **constraints)


class NotFoundError(Http404):
    """Raised when a topic, group, partition or message named in a request does not exist."""


class ParamError(ValueError):
    """Raised when a filter, sort or paging parameter is invalid (the API answers 400)."""


def convert(data: Any, kind: type[T], *, strict: bool) -> T:
    """``data`` as the input struct ``kind``; bad input is a ParamError ``field: what was
    wrong`` (``body`` for the whole)."""
    try:
        return msgspec.convert(data, kind, strict=strict)
    except msgspec.ValidationError as exc:
        text = str(exc)
        where = re.search(r" - at `\$\.?([^`]*)`$", text)
        if where is None:
            raise ParamError(text) from exc
        raise ParamError(f"{where.group(1) or 'body'}: {text[: where.start()]}") from exc


@contextmanager
def mq_refusals(
    topic: str, *, group: str | None = None, partition: int | None = None, entry_id: str = ""
) -> Iterator[None]:
    """mqcore's refusals in the console's words: what the URL names and does not exist a 404
    (a partition too when ``entry_id`` names an entry in it), a bad filter or id a 400."""
    try:
        yield
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownGroupError:
        raise NotFoundError(f"unknown group {group!r} of topic {topic!r}") from None
    except UnknownPartitionError:
        if entry_id:
            raise NotFoundError(f"partition {partition} of {topic!r} does not exist") from None
        raise ParamError(f"partition {partition} does not exist") from None
    except UnknownMessageError:
        raise NotFoundError(f"no entry {entry_id} in {topic!r} partition {partition}") from None
    except InvalidArgumentError as exc:  # InvalidIdError included
        raise ParamError(str(exc)) from None


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
