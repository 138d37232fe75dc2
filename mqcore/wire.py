"""Batched commands: the collector's snapshot reads, the producer's ``send_many`` writes.

A snapshot sends tens of thousands of small read commands. redis-py's pipeline
builds a command object, a callback and a parsed reply per command, which costs
more than Redis spends on them. On a plain client the :class:`Wire` instead packs
a whole phase with hiredis' ``pack_command`` and sends it on a socket of its own
(:mod:`mqcore.wire_link`: one ``hiredis.Reader`` fed a ``recv`` at a time); for TLS,
a credential provider or a single-connection client, on a pooled redis-py connection
(``Connection.send_packed_command``, then ``read_response`` per reply). Replies come
back as Redis sends them, without response callbacks, and an error reply stays in
the list as an exception. Redis keeps reading while its replies wait, so up to
``WIRE_CHUNK`` commands go out per round trip.

Any other client (Redis Cluster, a client with client-side caching) goes through
an ordinary non-transactional pipeline, ``batch`` commands per round trip, with
the typed redis-py method of each command; its replies are redis-py's parsed
shapes. The snapshot reads both shapes (see the contract test).

:meth:`Wire.send` writes a round trip now and reads its replies when asked, so that
the caller's own work meanwhile overlaps Redis's (the console store's series writes
run while the pass encodes its snapshot). :meth:`Wire.transaction` runs commands in one
MULTI/EXEC, one round trip; a big last argument (a pass's snapshot, megabytes of JSON)
goes to the socket as it is, not copied into the packed buffer first, or as the parts a
:class:`Chunked` makes while it is sent (never held whole).

Connection errors and timeouts raise ``ConnectionLostError`` naming ``what``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from hiredis import pack_command as pack

from mqcore.boundary import redis_errors
from mqcore.wire_link import give_back, link_capable, take_link

__all__ = [
    "BIG_ARGUMENT",
    "WIRE_CHUNK",
    "Chunked",
    "Command",
    "Wire",
    "first_error",
    "read_replies",
    "wire_capable",
]

WIRE_CHUNK = 10_000  # commands per round trip on the wire path (a few MB of replies at most)
BIG_ARGUMENT = 1 << 16  # bytes from which a transaction's last argument is sent as it is
Command = tuple[Any, ...]  # raw command arguments, e.g. ("XLEN", key)
_LOST = (redis.ConnectionError, redis.TimeoutError)

_TYPED: dict[str, Callable[[Any, Command], Any]] = {
    "HGET": lambda p, a: p.hget(a[1], a[2]),
    "XLEN": lambda p, a: p.xlen(a[1]),
    "ZCARD": lambda p, a: p.zcard(a[1]),
    "SMEMBERS": lambda p, a: p.smembers(a[1]),
    "XINFO": lambda p, a: p.xinfo_groups(a[2]) if a[1] == "GROUPS" else p.xinfo_stream(a[2]),
    "XRANGE": lambda p, a: p.xrange(a[1], a[2], a[3], a[5]),
    "XREVRANGE": lambda p, a: p.xrevrange(a[1], a[2], a[3], a[5]),
    "XPENDING": lambda p, a: p.xpending_range(a[1], a[2], a[3], a[4], a[5]),
    "MGET": lambda p, a: p.mget(list(a[1:])),
    "GET": lambda p, a: p.get(a[1]),
    "PTTL": lambda p, a: p.pttl(a[1]),
    "HGETALL": lambda p, a: p.hgetall(a[1]),
    "ZRANGE": lambda p, a: p.zrange(a[1], a[2], a[3], withscores=True),
    "ZRANGEBYSCORE": lambda p, a: p.zrangebyscore(
        a[1], a[2], a[3], start=a[6], num=a[7], withscores=True
    ),
}


@dataclass(frozen=True, slots=True)
class Chunked:
    """A transaction's big last argument made in parts as it is sent: ``make()`` gives
    parts of the lengths ``sizes``, the same each time it is called (a resend makes them
    again). A part of another length raises before it is sent."""

    sizes: tuple[int, ...]
    make: Callable[[], Iterable[bytes]]

    def parts(self) -> Iterator[bytes]:
        for n, (want, part) in enumerate(zip(self.sizes, self.make(), strict=True)):
            if len(part) != want:
                raise ValueError(f"part {n} of a chunked argument changed length")
            yield part

    def joined(self) -> bytes:
        return b"".join(self.parts())


@contextmanager
def _untranslated(_what: str) -> Iterator[None]:
    yield


def wire_capable(client: Any) -> bool:
    """A plain client without client-side caching (no push messages between replies)."""
    return isinstance(client, redis.Redis) and client.get_cache() is None


def read_replies(conn: Any, n: int) -> list[Any]:
    """The next ``n`` replies on a redis-py connection, as Redis sent them; an error reply
    stays in the list, a lost connection or timeout is raised (by ``read_response``)."""
    out: list[Any] = []
    append, read = out.append, conn.read_response
    for _ in range(n):
        try:
            append(read(disable_decoding=True))
        except redis.ResponseError as exc:  # one command failed: the others stand
            append(exc)
    return out


def first_error(replies: Sequence[Any]) -> Exception | None:
    """The first error reply of a round trip, if any."""
    for reply in replies:
        if isinstance(reply, Exception):
            return reply
    return None


class Wire:
    """Runs commands in round trips; counts what it sent in ``commands``."""

    def __init__(
        self, client: Any, batch: int, what: str = "snapshot", *, translate: bool = True
    ) -> None:
        self.client = client
        self.batch = max(1, batch)
        self.what = what
        self.translate = translate  # False: redis-py's own connection errors propagate
        self.commands = 0
        self.direct = wire_capable(client)
        self.linked = self.direct and link_capable(client)  # the wire's own sockets

    def run(self, cmds: list[Command], *, step: int | None = None) -> list[Any]:
        """The replies of ``cmds`` in order (error replies as exception instances);
        ``step`` commands per round trip (default: ``WIRE_CHUNK`` direct, ``batch`` piped)."""
        out: list[Any] = []
        if step is None:
            step = max(self.batch, WIRE_CHUNK) if self.direct else self.batch
        guard = redis_errors if self.translate else _untranslated
        for start in range(0, len(cmds), step):
            chunk = cmds[start : start + step]
            with guard(self.what):
                # the direct path raises a lost connection as it reads; a pipeline lists it
                replies = self._direct(chunk) if self.direct else self._pipeline(chunk)
            out.extend(replies)
            self.commands += len(chunk)
        return out

    def send(self, cmds: list[Command], *, step: int | None = None) -> Callable[[], list[Any]]:
        """Write the first round trip of ``cmds`` now; the returned function reads its
        replies, runs the rest (:meth:`run`) and returns the replies of all. Call it
        (in a ``finally``): until then the connection is held, its replies unread."""
        if step is None:
            step = max(self.batch, WIRE_CHUNK) if self.direct else self.batch
        if not self.direct or not cmds:
            return lambda: self.run(cmds, step=step)
        head, rest = cmds[:step], cmds[step:]
        guard = redis_errors if self.translate else _untranslated
        with guard(self.what):
            conn = _Borrowed(self)
            try:
                conn.send(b"".join([pack(cmd) for cmd in head]))
            except BaseException:
                conn.release()
                raise

        def replies() -> list[Any]:
            try:
                with guard(self.what):
                    out = conn.read(len(head))
            finally:
                conn.release()
            self.commands += len(head)
            return out + self.run(rest, step=step) if rest else out

        return replies

    def transaction(self, cmds: Sequence[Command]) -> list[Any]:
        """The replies of ``cmds`` run in one MULTI/EXEC, one round trip (the first error
        reply raises: a command refused aborts the lot, one failing as it runs leaves the
        others standing, as in Redis). Connection errors are redis-py's own, retried as its
        pipelines are (on a pooled connection, not the wire's own links)."""
        if not self.direct:
            pipe: Any = self.client.pipeline(transaction=True)
            for cmd in cmds:
                last = cmd[-1]
                pipe.execute_command(*cmd[:-1], last.joined() if type(last) is Chunked else last)
            return pipe.execute()  # type: ignore[no-any-return]
        packed = _Packed(_packed([("MULTI",), *cmds, ("EXEC",)]))
        pool = self.client.connection_pool
        conn: Any = pool.get_connection()
        try:
            return conn.retry.call_with_retry(  # type: ignore[no-any-return]
                lambda: _exec(conn, packed, len(cmds)), lambda _error: conn.disconnect()
            )
        finally:
            pool.release(conn)

    def _pipeline(self, chunk: list[Command]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for cmd in chunk:
            typed = _TYPED.get(cmd[0])
            if typed is not None:
                typed(pipe, cmd)
            else:
                pipe.execute_command(*cmd)
        replies: list[Any] = pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, _LOST):
                raise reply
        return replies

    def _direct(self, chunk: list[Command]) -> list[Any]:
        conn = _Borrowed(self)
        try:
            return conn.exchange(b"".join([pack(cmd) for cmd in chunk]), len(chunk))
        finally:
            conn.release()


def _packed(commands: Sequence[Command]) -> list[bytes | Chunked]:
    """The commands packed by hiredis, a big last argument left out of the packing."""
    out: list[bytes | Chunked] = []
    small: list[bytes] = []
    for cmd in commands:
        last = cmd[-1]
        chunked = type(last) is Chunked
        if chunked or (isinstance(last, bytes) and len(last) >= BIG_ARGUMENT):
            head = pack((*cmd[:-1], b""))  # ends with the empty argument: b"$0\r\n\r\n"
            small.append(head[:-6])
            small.append(b"$%d\r\n" % (sum(last.sizes) if chunked else len(last)))
            out.append(b"".join(small))
            out.append(last)
            small = [b"\r\n"]
        else:
            small.append(pack(cmd))
    out.append(b"".join(small))
    return out


class _Packed:
    """What :func:`_packed` gives, each :class:`Chunked` made as it is sent (again for a
    resend)."""

    def __init__(self, items: list[bytes | Chunked]) -> None:
        self.items = items

    def __iter__(self) -> Iterator[bytes]:
        for item in self.items:
            if type(item) is Chunked:
                yield from item.parts()
            else:
                yield item  # type: ignore[misc]


def _exec(conn: Any, packed: _Packed, queued: int) -> list[Any]:
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


class _Borrowed:
    """One round trip's connection: a link of the wire's own (:mod:`mqcore.wire_link`), or
    a pooled redis-py connection (TLS, a credential provider, a single-connection client)."""

    def __init__(self, wire: Wire) -> None:
        self.client = wire.client
        self.link = take_link(self.client) if wire.linked else None
        self.done = False  # all replies read: the link may serve another round trip
        self.own = self.client.connection is None  # a single_connection_client keeps its own
        if self.link is None:
            pool = self.client.connection_pool
            self.conn = pool.get_connection() if self.own else self.client.connection

    def send(self, data: bytes) -> None:
        if self.link is not None:
            self.link.send(data)
        else:
            self.conn.send_packed_command([data])

    def exchange(self, data: bytes, n: int) -> list[Any]:
        if self.link is not None:
            out = self.link.exchange(data, n)
            self.done = True
            return out
        self.send(data)
        return self.read(n)

    def read(self, n: int) -> list[Any]:
        """The next ``n`` replies; an error reply stays in the list, a lost connection or
        timeout is raised."""
        if self.link is not None:
            replies = self.link.read(n)
            self.done = True
            return replies
        return read_replies(self.conn, n)

    def release(self) -> None:
        """Back to its pool; a link whose replies were not all read is closed."""
        if self.link is not None:
            if self.done:
                give_back(self.client, self.link)
            else:
                self.link.close()
        elif self.own:
            self.client.connection_pool.release(self.conn)
