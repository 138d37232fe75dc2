"""Reply shapes of the pass's commands, raw RESP2 or parsed by redis-py, read the same way."""

from __future__ import annotations

from typing import Any

import redis

from mqcore.codec import decode_text

__all__ = [
    "as_hash",
    "entry_id",
    "first_score",
    "last_generated",
    "ok",
    "parse_groups",
    "pending_consumer",
    "pending_id",
    "pending_idle",
]


_GROUP_FIELDS = [b"name", b"consumers", b"pending", b"last-delivered-id", b"entries-read", b"lag"]


def parse_groups(reply: Any) -> list[tuple[str, int, str, int | None, int | None]]:
    """XINFO GROUPS -> (name, pending, last-delivered-id, entries-read, lag) per group."""
    out: list[tuple[str, int, str, int | None, int | None]] = []
    for g in reply or ():
        if g.__class__ is list and len(g) == 12 and g[::2] == _GROUP_FIELDS:
            # RESP2 of Redis 7 (name, consumers, pending, last-delivered-id, entries-read,
            # lag): read by position, the common case of every partition of every pass
            read, lag = g[9], g[11]
            out.append(
                (
                    decode_text(g[1]),
                    g[5] if g[5].__class__ is int else int(g[5] or 0),
                    decode_text(g[7]),
                    read if read is None or read.__class__ is int else int(read),
                    lag if lag is None or lag.__class__ is int else int(lag),
                )
            )
            continue
        if not isinstance(g, dict):  # RESP2: a flat list of name, value, ...
            pairs = iter(g)
            g = dict(zip(pairs, pairs, strict=False))
        if b"name" in g:
            get = g.get
            name, pending, last = get(b"name"), get(b"pending"), get(b"last-delivered-id")
            read, lag = get(b"entries-read"), get(b"lag")
        else:  # parsed by redis-py: str keys
            get = g.get
            name, pending, last = get("name"), get("pending"), get("last-delivered-id")
            read, lag = get("entries-read"), get("lag")
        n_pending = int(pending or 0)
        n_read: int | None = read if read is None or read.__class__ is int else int(read)
        n_lag: int | None = lag if lag is None or lag.__class__ is int else int(lag)
        out.append((decode_text(name), n_pending, decode_text(last), n_read, n_lag))
    return out


def entry_id(entry: Any) -> str:
    """The id of a stream entry ``[id, fields]``."""
    raw = entry[0]
    # bytes (the usual reply): decode_text's result without its call
    return raw.decode("utf-8", "replace") if raw.__class__ is bytes else decode_text(raw)


def pending_idle(reply: Any) -> int | None:
    """Idle ms of the first entry of an ``XPENDING key group - + 1`` reply, None when empty."""
    if not reply:
        return None
    first = reply[0]
    if isinstance(first, dict):
        return int(first["time_since_delivered"])
    return int(first[2])


def pending_id(reply: Any) -> str | None:
    """Id of the first (lowest) entry of an ``XPENDING key group - + 1`` reply, None when
    empty: the group's retention floor on that partition."""
    if not reply:
        return None
    first = reply[0]
    if isinstance(first, dict):
        return decode_text(first["message_id"])
    return decode_text(first[0])


def pending_consumer(reply: Any) -> str | None:
    """The consumer holding the first (lowest) entry of an ``XPENDING key group - + 1`` reply,
    None when empty."""
    if not reply:
        return None
    first = reply[0]
    if isinstance(first, dict):
        return decode_text(first["consumer"])
    return decode_text(first[1])


def as_hash(reply: Any) -> dict[Any, Any]:
    """An ``HGETALL`` reply (a dict, or RESP2's flat list) as a dict."""
    if isinstance(reply, dict):
        return reply
    if not reply:
        return {}
    return dict(zip(reply[::2], reply[1::2], strict=True))


def last_generated(reply: Any) -> str | None:
    """The last-generated id of an ``XINFO STREAM`` reply (a dict, or RESP2's flat list)."""
    info = as_hash(reply)
    raw = info.get(b"last-generated-id", info.get("last-generated-id"))
    return None if raw is None else decode_text(raw)


def first_score(reply: Any) -> int | None:
    """The score of the first member of a ``WITHSCORES`` reply, None when empty."""
    if not reply:
        return None
    first = reply[0]
    if isinstance(first, list | tuple):
        return int(float(first[1]))
    return int(float(reply[1]))


def _missing(reply: Any) -> bool:
    return isinstance(reply, redis.ResponseError) and "no such key" in str(reply).lower()


def ok(reply: Any, errors: dict[int, str], owner: int, default: Any = None) -> Any:
    """The reply, or ``default`` for a missing stream; other errors mark the topic."""
    if isinstance(reply, Exception):
        if not _missing(reply):
            errors.setdefault(owner, f"{type(reply).__name__}: {reply}")
        return default
    return reply
