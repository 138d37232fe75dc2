"""Translation of redis-py errors into mqcore errors, at the library boundary.

Callers of mqcore never need to import redis to handle a failure: timeouts and
connection errors become :class:`ConnectionLostError`, anything else Redis
refuses becomes :class:`MQError` (with the original chained).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from mqcore.errors import ConnectionLostError, MQError

__all__ = ["redis_errors"]


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Run a block of Redis calls; re-raise redis errors as mqcore errors naming ``what``."""
    try:
        yield
    except MQError:
        raise
    except (redis.TimeoutError, redis.ConnectionError, TimeoutError, ConnectionError) as exc:
        raise ConnectionLostError(f"{what}: Redis unreachable or timed out ({exc})") from exc
    except redis.RedisError as exc:
        raise MQError(f"{what}: Redis error: {exc}") from exc
