"""Per-user rate limits on the console's costly reads, counted by django-ratelimit.

Four groups, each a setting holding a django-ratelimit rate (``"60/m"``; empty: no limit):

- ``browse`` (``RATELIMIT_BROWSE``): the topic message browser, the DLQ list and the
  retry browser, pages and API; every request counts.
- ``filter`` (``RATELIMIT_FILTER``): those requests again when they carry a filter that
  reads entries (the browser's key, header, text or where; the DLQ's and the retry
  browser's key and text), which scan far more than they show.
- ``export`` (``RATELIMIT_EXPORT``): "export all matching" of lag, pending and DLQ, the
  export of selected dead letters and the raw payload downloads, pages and API.
- ``tail`` (``RATELIMIT_TAIL``): the live tail's polls, page and API (its filters are not
  counted again: each poll reads a bounded few entries per partition).

Counts are per user (the page and the API share them; a request without a user counts
by address) in the cache ``RATELIMIT_USE_CACHE``: the console store, so every web worker
sees the same counts. Over a limit, :class:`TooManyRequests` (a django-ratelimit
``Ratelimited``) answers 429 with ``Retry-After`` through :mod:`dashboard.errors`.
When the console store cannot be reached the limits are not applied (a warning is
logged): the store's outage must not take the browser down with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import redis
from django.conf import settings
from django.http import HttpRequest
from django_ratelimit.core import get_usage
from django_ratelimit.exceptions import Ratelimited

__all__ = [
    "BROWSE_FILTERS",
    "DLQ_FILTERS",
    "GROUPS",
    "RETRY_FILTERS",
    "TooManyRequests",
    "check_rate",
    "count_request",
    "rate_limited",
]

log = logging.getLogger(__name__)

GROUPS = {
    "browse": ("RATELIMIT_BROWSE", "browse requests"),
    "filter": ("RATELIMIT_FILTER", "filtered requests"),
    "export": ("RATELIMIT_EXPORT", "exports"),
    "tail": ("RATELIMIT_TAIL", "live tail polls"),
}
# the query parameters of a filter that reads entries, per endpoint (the "filter" group)
BROWSE_FILTERS = ("key", "header", "text", "where")
DLQ_FILTERS = ("key", "text")
RETRY_FILTERS = ("key", "text")
_PERIODS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}

V = TypeVar("V", bound=Callable[..., Any])


class TooManyRequests(Ratelimited):  # type: ignore[misc]
    """Over a rate limit (429); ``retry_after``: seconds until the window ends."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _per(rate: str) -> str:
    """``"60/m"`` -> ``"60 a minute"``, ``"5/10s"`` -> ``"5 per 10 seconds"``."""
    count, period = rate.split("/", 1)
    number, unit = period[:-1], _PERIODS[period[-1]]
    return f"{count} per {number} {unit}s" if number else f"{count} a {unit}"


def check_rate(request: HttpRequest, group: str) -> None:
    """Count one request of ``request``'s user in ``group``; TooManyRequests when over."""
    setting, what = GROUPS[group]
    rate = str(getattr(settings, setting, "") or "")
    if not rate:
        return
    try:
        usage = get_usage(
            request, group=f"console.{group}", key="user_or_ip", rate=rate, increment=True
        )
    except redis.RedisError as exc:
        log.warning("rate limit %s not applied: console store error %s", group, type(exc).__name__)
        return
    if usage is None or not usage["should_limit"]:
        return
    wait = max(1, int(usage["time_left"]))
    raise TooManyRequests(
        f"Too many {what}: at most {_per(rate)} per user ({setting}). Try again in {wait} s.",
        wait,
    )


def count_request(request: HttpRequest, group: str, filters: tuple[str, ...] = ()) -> None:
    """Count ``request`` in ``group``, and in ``filter`` too when one of the query
    parameters ``filters`` is set (TooManyRequests when over either)."""
    check_rate(request, group)
    if any(str(request.GET.get(name) or "").strip() for name in filters):
        check_rate(request, "filter")


def rate_limited(group: str, *, filters: tuple[str, ...] = ()) -> Callable[[V], V]:
    """Count each request in ``group``, and in ``filter`` too when one of the query
    parameters ``filters`` is set. Put it under the decorator that authenticates and
    answers errors (``page_guard``, ``api_view``)."""
    if group not in GROUPS:
        raise ValueError(f"unknown rate limit group {group!r}")

    def decorator(view: V) -> V:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            count_request(request, group, filters)
            return view(request, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
