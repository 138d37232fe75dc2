"""Lua scripts shipped with mqcore, loaded from ``*.lua`` once per process.

Each script opens with a ``KEYS[n] = ... / ARGV[n] = ...`` header and receives
every key it touches through KEYS (Redis Cluster). Scripts run only through
:func:`call_script`, on redis-py's :class:`~redis.commands.core.Script`
(EVALSHA, loaded again on NOSCRIPT; works on a pipeline and on Redis Cluster),
and only from the one typed Python function that owns each script. A caller with a
:class:`~mqcore.wire.Wire` of its own may send the EVALSHA on it (half the client-side
time of a redis-py call: the DLQ replay of one letter). The scripts that only read
(:data:`READ_ONLY_SCRIPTS`) go as ``EVALSHA_RO``: Redis then checks their keys as reads,
so a user with read-only key permissions (``%R~``, docs/deploy.md) may run them, and
refuses any write in them. Another package's scripts (the console store's, in
``dashboard/scripts/``) load and run the same way: ``script_for(name, package)``, and
batched calls through :meth:`Script.command`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.client import Pipeline

from mqcore.boundary import redis_errors
from mqcore.wire import Command, Wire

__all__ = ["READ_ONLY_SCRIPTS", "call_script", "lua_source", "script_for"]

# scripts that write nothing: run as EVALSHA_RO (a plain EVALSHA counts every key as written)
READ_ONLY_SCRIPTS = frozenset({"retry_rows_after", "stream_seek"})


@dataclass(frozen=True, slots=True)
class Script:
    """One bundled script: its source and SHA1, run on any client by EVALSHA (loaded on
    NOSCRIPT: a restarted or flushed Redis). It holds no client, so nothing keeps a client
    and its sockets alive (redis-py's ``Script`` holds the client it was registered on)."""

    name: str
    script: str
    sha: str
    read_only: bool  # EVALSHA_RO: a plain EVALSHA counts every key as written

    def __call__(self, keys: Sequence[Any], args: Sequence[Any], client: Any) -> Any:
        run = client.evalsha_ro if self.read_only else client.evalsha
        try:
            return run(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            client.script_load(self.script)
            return run(self.sha, len(keys), *keys, *args)

    def command(self, keys: Sequence[Any], args: Sequence[Any]) -> Command:
        """One call as a raw command, for a batch of them on a :class:`~mqcore.wire.Wire`:
        a NOSCRIPT reply there is the caller's to answer with :meth:`load` and a resend."""
        return ("EVALSHA_RO" if self.read_only else "EVALSHA", self.sha, len(keys), *keys, *args)

    def load(self, client: Any) -> None:
        """Load the script into ``client``'s Redis (a new, restarted or flushed one)."""
        client.script_load(self.script)


_INCLUDE = re.compile(r"^--#include (\w+)$", re.MULTILINE)


@cache
def lua_source(name: str, package: str = __package__) -> str:
    """Source of ``mqcore/scripts/<name>.lua`` (or of ``<name>.lua`` in ``package``), with
    each ``--#include <lib>`` line replaced by ``mqcore/scripts/lib/<lib>.lua``: Lua
    scripts cannot share functions, so the helpers several scripts need (ids, Redisson's
    Kryo strings, the header rule, the commit frontier, the retention floor, an entry's
    payload key, a pipeline group's position) have one home there and are pasted in when
    a script is loaded."""
    text = resources.files(package).joinpath(f"{name}.lua").read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: _lib(m.group(1)), text)


@cache
def _lib(name: str) -> str:
    lib = resources.files(__package__).joinpath("lib", f"{name}.lua").read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: _lib(m.group(1)), lib).rstrip("\n")


@cache
def script_for(name: str, package: str = __package__) -> Script:
    """The bundled script ``name`` (its source with includes, and SHA1), one per process;
    ``package``: the folder of another package's scripts (``"dashboard.scripts"``)."""
    source = lua_source(name, package)
    sha = hashlib.sha1(source.encode("utf-8")).hexdigest()  # noqa: S324 (Redis's script id)
    return Script(name, source, sha, package == __package__ and name in READ_ONLY_SCRIPTS)


def call_script(
    client: Any,
    name: str,
    keys: Sequence[str],
    args: Sequence[Any],
    *,
    pipe: Pipeline | Any | None = None,
    wire: Wire | None = None,
) -> Any:
    """Run bundled script ``name``; Redis errors are translated (:func:`mqcore.boundary.translate`).

    On ``pipe`` the EVALSHA is only queued and its reply comes from ``execute``;
    a ``NoScriptError`` there (a restarted or flushed Redis) is the caller's to
    retry without ``pipe``, which loads the script. (redis-py's own pipeline
    script handling would add a SCRIPT EXISTS round trip to every execute.)

    On ``wire`` (a :class:`~mqcore.wire.Wire` of ``client`` made with ``translate=False``,
    when it talks to Redis directly) the EVALSHA goes out as a raw command; its reply is
    as Redis sends it (bytes, never decoded), NOSCRIPT loads the script and sends it again.
    """
    script = script_for(name)
    if pipe is not None:
        run = pipe.evalsha_ro if script.read_only else pipe.evalsha
        return run(script.sha, len(keys), *keys, *args)
    with redis_errors(f"script {name}"):
        if wire is None or not wire.direct:
            return script(keys, args, client)
        call = (
            "EVALSHA_RO" if script.read_only else "EVALSHA",
            script.sha,
            len(keys),
            *keys,
            *args,
        )
        [reply] = wire.run([call])
        if isinstance(reply, redis.exceptions.NoScriptError):  # a restarted or flushed Redis
            client.script_load(script.script)
            [reply] = wire.run([call])
        if isinstance(reply, Exception):
            raise reply
        return reply
