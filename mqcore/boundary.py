"""The one translation of redis-py errors into mqcore errors, at the library boundary.

Callers of mqcore never need to import redis to handle a failure: timeouts and
connection errors become :class:`ConnectionLostError`, a missing consumer group
(``NOGROUP``) becomes :class:`UnknownGroupError`, a command or key the connection's ACL
user may not use (``NOPERM``, also from inside a script) becomes
:class:`NoPermissionError`, anything else Redis refuses
becomes :class:`MQError` (with the original chained).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from mqcore.errors import ConnectionLostError, MQError, NoPermissionError, UnknownGroupError

__all__ = ["is_missing_key", "is_no_permission", "redis_errors", "translate"]

# how Redis words an ACL refusal of a call made by a script (the reply is a plain error)
_SCRIPT_REFUSED = "user executing the script can't"


def translate(exc: BaseException, what: str) -> MQError:
    """The mqcore error for a redis-py (or socket) error; callers ``raise ... from exc``."""
    if isinstance(exc, MQError):
        return exc
    if isinstance(exc, redis.TimeoutError | redis.ConnectionError | TimeoutError | ConnectionError):
        return ConnectionLostError(f"{what}: Redis unreachable or timed out ({exc})")
    if is_no_permission(exc):
        return NoPermissionError(f"{what}: Redis refused it to this user (NOPERM): {exc}")
    if isinstance(exc, redis.ResponseError) and str(exc).startswith("NOGROUP"):
        return UnknownGroupError(f"{what}: {exc}")
    return MQError(f"{what}: Redis error: {exc}")


def is_no_permission(exc: BaseException) -> bool:
    """An ACL refusal: a command or key the connection's user may not use, directly or in a
    script."""
    if isinstance(exc, redis.exceptions.NoPermissionError):
        return True
    return isinstance(exc, redis.ResponseError) and _SCRIPT_REFUSED in str(exc)


def is_missing_key(reply: object) -> bool:
    """A reply that says the stream (or key) does not exist."""
    return isinstance(reply, redis.ResponseError) and "no such key" in str(reply).lower()


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Run a block of Redis calls; re-raise redis errors as mqcore errors naming ``what``."""
    try:
        yield
    except MQError:
        raise
    except (redis.RedisError, TimeoutError, ConnectionError) as exc:
        raise translate(exc, what) from exc
