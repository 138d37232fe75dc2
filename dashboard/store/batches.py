"""Commands to the console store in bounded batches, packed on one connection.

No single command may hold Redis for long on big data: writes that carry many
keys or members (the series APPEND script, the series index ZADD) are split into
commands of at most :data:`MEMBERS_PER_COMMAND` each: a script call of 250 APPENDs
takes 0.3-0.5 ms of Redis time (median; 500 took 0.55-1 ms, up to 2 ms at p99 on the
50,000-partition bench). The commands then go out in batches per non-transactional pipeline
(:data:`COMMANDS_PER_EXECUTE` small ones, :data:`BULK_PER_EXECUTE` big ones), so
a pass costs one round trip per batch, not one per key. They go through
:class:`mqcore.wire.Wire`, as the collector's reads do: packed by hiredis on one
connection of a plain client (redis-py's pipeline packer costs more than Redis
spends on a script call of 250 keys), an ordinary pipeline on any other client.
Replies are then Redis's own (``SET`` answers ``b"OK"``, not ``True``). A pass's
MULTI/EXEC goes through the same wire (:meth:`mqcore.wire.Wire.transaction`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import redis

from mqcore.wire import Command, Wire

__all__ = [
    "BULK_PER_EXECUTE",
    "COMMANDS_PER_EXECUTE",
    "MEMBERS_PER_COMMAND",
    "WHAT",
    "chunks",
    "run_batched",
    "send_batched",
]

MEMBERS_PER_COMMAND = 250  # keys of one script call, members of one ZADD
COMMANDS_PER_EXECUTE = 1000  # small commands (one key, a few bytes) per round trip
BULK_PER_EXECUTE = 100  # commands of MEMBERS_PER_COMMAND members, or big values, per round trip
WHAT = "console store"  # names the store in translated connection errors

T = TypeVar("T")


def chunks(items: Sequence[T], size: int = MEMBERS_PER_COMMAND) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    step = max(1, size)
    for start in range(0, len(items), step):
        yield items[start : start + step]


def run_batched(
    client: redis.Redis,
    commands: Sequence[Command],
    *,
    per_execute: int = COMMANDS_PER_EXECUTE,
    translate: bool = True,
) -> list[Any]:
    """Run ``commands`` in order, ``per_execute`` per pipeline round trip; their replies.

    Error replies come back in the list as exception instances. With
    ``translate``, a lost connection or timeout raises
    :class:`mqcore.errors.ConnectionLostError` naming the console store;
    without, the redis-py error itself.
    """
    step = max(1, per_execute)
    return Wire(client, step, WHAT, translate=translate).run(list(commands), step=step)


def send_batched(
    client: redis.Redis,
    commands: Sequence[Command],
    *,
    per_execute: int = COMMANDS_PER_EXECUTE,
    background: bool = False,
) -> Callable[[], list[Any]]:
    """:func:`run_batched` (translated errors), started now: its first round trip is
    written, the rest go out as replies come back when the returned function is called
    (call it, in a ``finally``); that function gives the replies of all.

    ``background``: run every round trip from a thread of its own, so that the caller
    goes on while Redis works through them all (a big deployment's pass sends thousands
    of script calls, tens of round trips). The thread takes the GIL after each partial
    write and read, only as often as the busy caller gives it up (every few
    milliseconds), so it keeps fewer round trips in flight than a caller that waits;
    but the caller does not wait: at 50,000 partitions a first pass waited 570 ms for
    the store with only the first round trip written early, 280 ms this way."""
    step = max(1, per_execute)
    wire = Wire(client, step, WHAT)
    cmds = list(commands)
    if not background:
        return wire.send(cmds, step=step)
    sent: list[list[Any]] = []
    failed: list[BaseException] = []

    def write() -> None:
        try:
            sent.append(wire.run(cmds, step=step))
        except BaseException as exc:  # raised to the caller by the returned function
            failed.append(exc)

    writer = threading.Thread(target=write, name="store-send", daemon=True)
    writer.start()

    def replies() -> list[Any]:
        writer.join()
        if failed:
            raise failed[0]
        return sent[0]

    return replies
