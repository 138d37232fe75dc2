"""Pipelined reads where a missing stream (or group) answers None instead of failing."""

from __future__ import annotations

from typing import Any

import redis

from mqcore.boundary import redis_errors, translate
from mqcore.config import RedisClient

__all__ = [
    "Calls",
    "missing_as_none",
    "no_such_key",
    "pipeline_consumers",
    "pipeline_lenient",
]

Calls = list[tuple[str, tuple[Any, ...]]]  # (redis-py pipeline method, its arguments)


def no_such_key(exc: BaseException) -> bool:
    return isinstance(exc, redis.ResponseError) and "no such key" in str(exc).lower()


def missing_as_none(replies: list[Any], what: str) -> list[Any]:
    """Pipeline replies with a missing stream or group as None; other errors raise MQError."""
    out: list[Any] = []
    for reply in replies:
        if isinstance(reply, redis.ResponseError) and (
            "NOGROUP" in str(reply) or no_such_key(reply)
        ):
            out.append(None)
        elif isinstance(reply, Exception):
            raise translate(reply, what) from reply
        else:
            out.append(reply)
    return out


def pipeline_lenient(client: RedisClient, calls: Calls) -> list[Any]:
    """Run calls in one pipeline; a missing stream answers None, other errors raise."""
    with redis_errors("pipeline"):
        pipe = client.pipeline(transaction=False)
        for name, args in calls:
            getattr(pipe, name)(*args)
        replies = pipe.execute(raise_on_error=False) if calls else []
    out: list[Any] = []
    for reply in replies:
        if isinstance(reply, Exception):
            if no_such_key(reply):
                out.append(None)
                continue
            with redis_errors("pipeline"):
                raise reply
        out.append(reply)
    return out


def pipeline_consumers(client: RedisClient, calls: Calls) -> list[Any]:
    """Like :func:`pipeline_lenient`, but a missing group answers None too."""
    with redis_errors("read consumers"):
        pipe = client.pipeline(transaction=False)
        for name, args in calls:
            getattr(pipe, name)(*args)
        replies = pipe.execute(raise_on_error=False)
    return missing_as_none(replies, "read consumers")
