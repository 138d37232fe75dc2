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
Replies are then Redis's own (``SET`` answers ``b"OK"``, not ``True``).

:func:`run_transaction` runs commands in one MULTI/EXEC the same way; a big
argument (a pass's snapshot, megabytes of JSON) goes to the socket as it is,
not copied into a packed buffer first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import redis
from hiredis import pack_command as pack

from mqcore.wire import Wire, read_replies, wire_capable

__all__ = [
    "BULK_PER_EXECUTE",
    "COMMANDS_PER_EXECUTE",
    "MEMBERS_PER_COMMAND",
    "WHAT",
    "chunks",
    "first_error",
    "run_batched",
    "run_transaction",
    "send_batched",
]

MEMBERS_PER_COMMAND = 250  # keys of one script call, members of one ZADD
COMMANDS_PER_EXECUTE = 1000  # small commands (one key, a few bytes) per round trip
BULK_PER_EXECUTE = 100  # commands of MEMBERS_PER_COMMAND members, or big values, per round trip
BIG_ARGUMENT = 1 << 16  # bytes from which a transaction's last argument is sent as it is
WHAT = "console store"  # names the store in translated connection errors

T = TypeVar("T")
Command = tuple[Any, ...]  # ("ZADD", key, score, member, ...): as redis-py's execute_command


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


def first_error(replies: Sequence[Any]) -> Exception | None:
    """The first error reply of a batch, if any."""
    for reply in replies:
        if isinstance(reply, Exception):
            return reply
    return None


def run_transaction(client: redis.Redis, commands: Sequence[Command]) -> list[Any]:
    """Run ``commands`` in one MULTI/EXEC, one round trip; their replies (the first error
    reply raises). Connection errors are redis-py's own, retried as its pipelines are."""
    if not wire_capable(client):
        pipe: Any = client.pipeline(transaction=True)
        for cmd in commands:
            pipe.execute_command(*cmd)
        return pipe.execute()  # type: ignore[no-any-return]
    packed = _packed([("MULTI",), *commands, ("EXEC",)])
    pool = client.connection_pool
    conn: Any = pool.get_connection()
    try:
        return conn.retry.call_with_retry(  # type: ignore[no-any-return]
            lambda: _exec(conn, packed, len(commands)), lambda _error: conn.disconnect()
        )
    finally:
        pool.release(conn)


def _packed(commands: Sequence[Command]) -> list[bytes]:
    """The commands packed by hiredis, a big last argument left out of the packing."""
    out: list[bytes] = []
    small: list[bytes] = []
    for cmd in commands:
        last = cmd[-1]
        if isinstance(last, bytes) and len(last) >= BIG_ARGUMENT:
            head = pack((*cmd[:-1], b""))  # ends with the empty argument: b"$0\r\n\r\n"
            small.append(head[:-6])
            small.append(b"$%d\r\n" % len(last))
            out.append(b"".join(small))
            out.append(last)
            small = [b"\r\n"]
        else:
            small.append(pack(cmd))
    out.append(b"".join(small))
    return out


def _exec(conn: Any, packed: list[bytes], queued: int) -> list[Any]:
    conn.send_packed_command(packed)
    # MULTI's OK, a QUEUED per command, EXEC's replies; a command refused aborts the lot
    answers = read_replies(conn, queued + 2)
    refused = first_error(answers)
    if refused is not None:
        raise refused
    replies = answers[-1]
    error = first_error(replies)
    if error is not None:
        raise error
    return list(replies)
