"""The slow log without what the commands carried: each entry's command name and key names.

``SLOWLOG GET`` keeps up to 32 arguments of each slow command, 128 bytes each: for an
``XADD`` that is the payload, for an ``EVALSHA`` the values a script writes. None of it
leaves here. The key names are told from the command alone, without asking Redis
(``COMMAND GETKEYS`` would need the whole argument list again): the commands of the MQ
and the console (streams, hashes, sets, sorted sets, strings) name their keys at known
positions; ``EVAL``/``EVALSHA``/``FCALL`` by their ``numkeys`` argument; any other
command shows no keys. A key Redis cut short (``... (N more bytes)``) is still counted
but never named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mqcore.codec import decode_text

__all__ = ["command_keys", "slowlog_entries"]

# commands whose first argument is their one key
_FIRST_KEY = frozenset({
    "XADD", "XRANGE", "XREVRANGE", "XLEN", "XACK", "XDEL", "XTRIM", "XPENDING", "XCLAIM",
    "XAUTOCLAIM", "XSETID",
    "HSET", "HSETNX", "HGET", "HMGET", "HMSET", "HGETALL", "HDEL", "HLEN", "HEXISTS", "HKEYS",
    "HVALS", "HSCAN", "HINCRBY", "HSTRLEN",
    "SADD", "SREM", "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SSCAN", "SRANDMEMBER",
    "SPOP",
    "ZADD", "ZREM", "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX",
    "ZCARD", "ZCOUNT", "ZSCORE", "ZMSCORE", "ZRANK", "ZREVRANK", "ZSCAN", "ZINCRBY", "ZPOPMIN",
    "ZPOPMAX", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK",
    "GET", "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL", "GETEX", "INCR", "INCRBY",
    "DECR", "DECRBY", "APPEND", "STRLEN",
    "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST", "TTL", "PTTL", "TYPE", "DUMP",
    "RESTORE",
    "LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE", "LLEN", "LTRIM",
})  # fmt: skip
# commands whose every argument is a key
_ALL_KEYS = frozenset({"DEL", "UNLINK", "EXISTS", "TOUCH", "MGET", "WATCH"})
# commands whose first two arguments are keys
_TWO_KEYS = frozenset({"COPY", "RENAME", "RENAMENX", "SMOVE"})
# container commands, named with their subcommand; after these subcommands, one key
_SUB_KEY = {
    "XINFO": frozenset({"STREAM", "GROUPS", "CONSUMERS"}),
    "XGROUP": frozenset({"CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"}),
    "MEMORY": frozenset({"USAGE"}),
    "OBJECT": frozenset({"ENCODING", "FREQ", "IDLETIME", "REFCOUNT"}),
    **dict.fromkeys(("CONFIG", "CLIENT", "SCRIPT", "FUNCTION", "CLUSTER", "SLOWLOG", "ACL"),
                    frozenset[str]()),
}  # fmt: skip
_SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_|.-]{0,39}")
_MORE_ARGS = re.compile(r"\.\.\. \(\d+ more arguments\)")  # Redis keeps 32 arguments
_CUT_SHORT = re.compile(r"\.\.\. \(\d+ more bytes\)$")  # and 128 bytes of each


def command_keys(args: Sequence[str]) -> tuple[str, list[str]]:
    """The command name (``XINFO GROUPS``: with its subcommand) and the key names of one
    command's arguments ``args`` as the slow log kept them; never an argument's value."""
    name = args[0].upper() if args and _NAME.fullmatch(args[0]) else "?"
    rest = list(args[1:])
    if rest and _MORE_ARGS.fullmatch(rest[-1]):
        rest.pop()
    sub = rest[0].upper() if name in _SUB_KEY and rest and _NAME.fullmatch(rest[0]) else ""
    if sub:
        return f"{name} {sub}", rest[1:2] if sub in _SUB_KEY[name] else []
    if name in _FIRST_KEY:
        return name, rest[:1]
    if name in _ALL_KEYS:
        return name, rest
    if name in _TWO_KEYS:
        return name, rest[:2]
    if name in _SCRIPTS:
        return name, rest[2 : 2 + _count(rest[1:2])]
    if name in ("XREAD", "XREADGROUP"):
        upper = [a.upper() for a in rest]
        if "STREAMS" in upper:
            streams = rest[upper.index("STREAMS") + 1 :]
            return name, streams[: len(streams) // 2]
    return name, []


def _count(arg: Sequence[str]) -> int:
    text = arg[0] if arg else ""
    return int(text) if text.isdigit() and len(text) < 7 else 0


def slowlog_entries(raw: Any) -> list[dict[str, Any]]:
    """Rows of a raw ``SLOWLOG GET`` reply: id, start (s), duration (µs), the command name
    and its key names (``keys``; ``cut_keys``: keys Redis cut short, not named)."""
    out = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, list | tuple) or len(entry) < 4:
            continue
        # Redis Enterprise puts a complexity figure before the arguments
        words = entry[3] if isinstance(entry[3], list) else (entry[4] if len(entry) > 4 else [])
        name, keys = command_keys([decode_text(w) for w in words])
        whole = [k for k in keys if not _CUT_SHORT.search(k)]
        out.append(
            {
                "id": int(entry[0]),
                "at_s": int(entry[1]),
                "duration_us": int(entry[2]),
                "command": name,
                "keys": whole,
                "cut_keys": len(keys) - len(whole),
            }
        )
    return out
