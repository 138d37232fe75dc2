"""The one table from exceptions to HTTP answers, for pages, htmx partials and the API.

Views never map errors themselves: the one guard, :func:`dashboard.guard.guard` (pages
through ``page_guard``, the API through ``api_view``), reads :data:`ERROR_TABLE`
through :func:`http_error`, first match wins.
Messages never carry secrets: a cluster error names the cluster and the error
type only.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django_ratelimit.exceptions import Ratelimited

from dashboard.clusters import ReadOnlyClusterError
from dashboard.sso.mapping import SSOProviderError, SSORefused
from mqcore.config import redact_urls
from mqcore.errors import (
    AlreadyExistsError,
    ConcurrentChangeError,
    InUseError,
    MQError,
    NoPermissionError,
    PartialMoveError,
    PipelineGroupError,
    UnknownGroupError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)

__all__ = ["ERROR_TABLE", "HttpError", "http_error"]

READ_ONLY_TITLE = "Read-only cluster"
# (exception types, status, title); ValueError covers every "bad parameter" error of
# the selectors and services and mqcore's InvalidArgumentError
ERROR_TABLE: tuple[tuple[tuple[type[BaseException], ...], int, str], ...] = (
    ((Ratelimited,), 429, "Too many requests"),  # a PermissionDenied: before it
    # a read-only cluster (settings), or Redis refusing the console's user (NOPERM)
    ((ReadOnlyClusterError, NoPermissionError), 403, READ_ONLY_TITLE),
    ((PermissionDenied,), 403, "Forbidden"),
    ((SSORefused,), 403, "Single sign-on refused"),
    ((SSOProviderError,), 502, "Identity provider unavailable"),
    (
        (Http404, UnknownTopicError, UnknownGroupError, UnknownPartitionError, UnknownMessageError),
        404,
        "Not found",
    ),
    ((ValueError,), 400, "Bad request"),
    (
        (
            ConcurrentChangeError,
            PipelineGroupError,
            PartialMoveError,
            InUseError,
            AlreadyExistsError,
        ),
        409,
        "Conflict",
    ),
    ((MQError,), 503, "Cluster unavailable"),
)


@dataclass(frozen=True, slots=True)
class HttpError:
    status: int
    title: str
    message: str
    retry_after: int | None = None  # seconds, for a Retry-After header (429)


def http_error(exc: BaseException, *, cluster: str = "") -> HttpError | None:
    """The answer for ``exc``, or None when it is not an expected error (a real bug)."""
    for types, status, title in ERROR_TABLE:
        if isinstance(exc, types):
            if isinstance(exc, NoPermissionError):  # never Redis's text: it names keys
                where = f"cluster {cluster}" if cluster else "this cluster"
                message = (
                    f"this console is read-only for {where}: Redis refused the command "
                    "to the console's user (NOPERM)"
                )
            elif status == 503:
                where = f"cluster {cluster}" if cluster else "the cluster"
                message = f"Could not read from {where}: {type(exc).__name__}"
            else:
                message = redact_urls(str(exc)) or title.lower()
            return HttpError(status, title, message, getattr(exc, "retry_after", None))
    return None
