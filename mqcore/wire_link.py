"""The wire path's own sockets: RESP2 over a plain TCP or Unix socket, parsed by hiredis.

redis-py reads a reply through a chain of Python calls (connection, retry guard,
parser, health bookkeeping) that costs more than hiredis spends parsing it: at
20,000 small replies a collector pass, a third of the read time. A :class:`Link`
is a socket of the wire's own that feeds whole ``recv`` buffers to one
``hiredis.Reader`` and takes the replies out in a loop. A round trip larger than
the socket buffers is written while the replies that have come back are parsed
(:meth:`Link.exchange`): Redis runs the rest of the commands meanwhile.

Links are made from the client's public ``connection_pool.connection_kwargs``
(host or path, port, username, password, db, client name, timeouts, keepalive) for
a pool of plain ``redis.Connection`` or ``redis.UnixDomainSocketConnection``
without a credential provider; :func:`link_capable` says so. A Sentinel client's
master pool over plain TCP (``redis+sentinel://``, :mod:`mqcore.sentinel`) gets links
too: a new link goes where the Sentinels name the master (``get_master_address``), an
idle link to another address than the pool's master is dropped, and so is a link that
got a READONLY reply (a demoted master). Any other client (TLS, credential providers,
a single-connection client) keeps redis-py's connection (see :mod:`mqcore.wire`).

Idle links are kept per client (at most ``IDLE_LINKS``) and checked as redis-py
checks a pooled connection before use: a link that shows data or an end of file is
dropped. A link is dropped as well after any error, and in a forked child.

Replies are RESP2 whatever the client's protocol. An error reply is an exception in
the list, of the redis-py class its code maps to (NOSCRIPT: ``NoScriptError``); a
lost connection or a timeout raises redis-py's ``ConnectionError`` or ``TimeoutError``.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import hiredis
import redis
from hiredis import pack_command as pack
from redis.sentinel import SentinelConnectionPool, SentinelManagedConnection

__all__ = ["IDLE_LINKS", "Link", "give_back", "link_capable", "take_link"]

IDLE_LINKS = 4  # idle links kept per client
READ_SIZE = 1 << 18  # bytes per recv
SMALL_SEND = 1 << 16  # a round trip up to this size is written at once, then read
_PLAIN = (redis.Connection, redis.UnixDomainSocketConnection)
# Error reply codes to redis-py's exception classes, as redis-py's own parser maps them
# (the code is cut from the message of a mapped class); any other code: ResponseError.
_ERROR_CLASSES: dict[str, type[redis.RedisError]] = {
    "ERR": redis.ResponseError,
    "OOM": redis.exceptions.OutOfMemoryError,
    "WRONGPASS": redis.AuthenticationError,
    "EXECABORT": redis.exceptions.ExecAbortError,
    "LOADING": redis.exceptions.BusyLoadingError,
    "NOSCRIPT": redis.exceptions.NoScriptError,
    "READONLY": redis.exceptions.ReadOnlyError,
    "NOAUTH": redis.AuthenticationError,
    "NOPERM": redis.exceptions.NoPermissionError,
    "ASK": redis.exceptions.AskError,
    "TRYAGAIN": redis.exceptions.TryAgainError,
    "MOVED": redis.exceptions.MovedError,
    "CLUSTERDOWN": redis.exceptions.ClusterDownError,
    "CROSSSLOT": redis.exceptions.ClusterCrossSlotError,
    "MASTERDOWN": redis.exceptions.MasterDownError,
}
_Idle = tuple[int, list["Link"], threading.Lock]  # pid, idle links, lock
_IDLE: weakref.WeakKeyDictionary[Any, _Idle] = weakref.WeakKeyDictionary()
_IDLE_LOCK = threading.Lock()


def link_capable(client: Any) -> bool:
    """Whether the wire can open links of its own to ``client``'s server."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or client.connection is not None:
        return False
    if pool.connection_class not in _PLAIN and not _sentinel_master(pool):
        return False
    kwargs = pool.connection_kwargs
    return kwargs.get("credential_provider") is None and kwargs.get("redis_connect_func") is None


def _sentinel_master(pool: Any) -> bool:
    """A Sentinel client's pool of the master, over plain TCP."""
    return (
        isinstance(pool, SentinelConnectionPool)
        and pool.is_master
        and pool.connection_class is SentinelManagedConnection
    )


class Link:
    """One socket to Redis; a caller sends packed commands, then reads their replies."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        timeout = kwargs.get("socket_timeout")
        connect_timeout = kwargs.get("socket_connect_timeout") or timeout
        self.where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
        self.address = (kwargs.get("host"), kwargs.get("port"))
        self.demoted = False  # a READONLY reply came: the server is a replica now
        try:
            if kwargs.get("path"):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(connect_timeout)
                sock.connect(kwargs["path"])
            else:
                address = (kwargs.get("host") or "localhost", int(kwargs.get("port") or 6379))
                sock = socket.create_connection(address, connect_timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if kwargs.get("socket_keepalive"):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                    options = kwargs.get("socket_keepalive_options")
                    for k, v in (options if isinstance(options, dict) else {}).items():
                        sock.setsockopt(socket.IPPROTO_TCP, k, v)
        except OSError as exc:
            raise redis.ConnectionError(f"Error connecting to {self.where}: {exc}") from exc
        sock.settimeout(timeout)
        self.sock = sock
        self.pid = os.getpid()
        self.reader = hiredis.Reader(replyError=self._reply_error)
        self.buffer = bytearray(READ_SIZE)
        self._handshake(kwargs)

    def _handshake(self, kwargs: dict[str, Any]) -> None:
        cmds: list[tuple[Any, ...]] = []
        password, username = kwargs.get("password"), kwargs.get("username")
        if password is not None:
            cmds.append(("AUTH", username, password) if username else ("AUTH", password))
        if kwargs.get("client_name"):
            cmds.append(("CLIENT", "SETNAME", kwargs["client_name"]))
        if int(kwargs.get("db") or 0):
            cmds.append(("SELECT", int(kwargs["db"])))
        if not cmds:
            return
        self.send(b"".join([pack(c) for c in cmds]))
        for reply in self.read(len(cmds)):
            if isinstance(reply, Exception):  # WRONGPASS comes as an AuthenticationError
                self.close()
                if isinstance(reply, redis.ConnectionError):
                    raise reply
                raise redis.ConnectionError(f"{self.where}: {reply}")

    @contextmanager
    def _io(self, doing: str) -> Iterator[None]:
        """redis-py's errors for a lost socket or a timeout; the link is closed."""
        try:
            yield
        except TimeoutError as exc:
            self.close()
            raise redis.TimeoutError(f"Timeout {doing} {self.where}") from exc
        except (OSError, hiredis.ProtocolError, redis.ConnectionError) as exc:
            self.close()
            if isinstance(exc, redis.ConnectionError):
                raise
            raise redis.ConnectionError(f"Error {doing} {self.where}: {exc}") from exc

    def send(self, data: bytes) -> None:
        with self._io("writing to"):
            self.sock.sendall(data)

    def exchange(self, data: bytes, n: int) -> list[Any]:
        """Send ``data`` and read its ``n`` replies. While the send is under way (Redis
        reads a large round trip as it runs it), the replies come in are parsed: Redis
        runs the rest of the commands meanwhile, on its own core."""
        if len(data) <= SMALL_SEND:  # the socket takes it at once: nothing to overlap
            self.send(data)
            return self.read(n)
        out: list[Any] = []
        sock, view, sent = self.sock, memoryview(data), 0
        timeout = sock.gettimeout()
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLOUT)
        wait = -1 if timeout is None else int(timeout * 1000)
        gets, feed, buffer = self.reader.gets, self.reader.feed, self.buffer
        with self._io("talking to"):
            sock.setblocking(False)
            try:
                while sent < len(view):
                    ready = poller.poll(wait)
                    if not ready:
                        raise TimeoutError
                    if ready[0][1] & select.POLLOUT:
                        with suppress(BlockingIOError):
                            sent += sock.send(view[sent:])
                    if ready[0][1] & ~select.POLLOUT:  # replies, or an error or hang-up
                        got = sock.recv_into(buffer)
                        if not got:
                            raise redis.ConnectionError("connection closed by server")
                        feed(buffer, 0, got)  # type: ignore[arg-type]  # any buffer will do
                        while len(out) < n and (reply := gets()) is not False:
                            out.append(reply)
            finally:
                if sock.fileno() >= 0:
                    sock.settimeout(timeout)
        return out + self.read(n - len(out)) if len(out) < n else out

    def read(self, n: int) -> list[Any]:
        """The next ``n`` replies (error replies as exception instances)."""
        out: list[Any] = []
        append = out.append
        gets, feed = self.reader.gets, self.reader.feed
        recv, buffer = self.sock.recv_into, self.buffer
        with self._io("reading from"):
            while n:
                reply = gets()
                if reply is False:
                    got = recv(buffer)
                    if not got:
                        raise redis.ConnectionError("connection closed by server")
                    feed(buffer, 0, got)  # type: ignore[arg-type]  # any buffer will do
                    continue
                append(reply)
                n -= 1
        return out

    def _reply_error(self, message: str) -> redis.RedisError:
        error = _reply_error(message)
        if isinstance(error, redis.exceptions.ReadOnlyError):
            self.demoted = True
        return error

    def idle_ok(self) -> bool:
        """Nothing to read and not closed: what redis-py checks of a pooled connection."""
        if self.pid != os.getpid() or self.sock.fileno() < 0 or self.demoted:
            return False
        poller = select.poll()  # one system call, at once: readable means closed or out of step
        poller.register(self.sock, select.POLLIN)
        return not poller.poll(0)

    def close(self) -> None:
        self.sock.close()


def _reply_error(message: str) -> redis.RedisError:
    code = message.split(" ", 1)[0]
    cls = _ERROR_CLASSES.get(code)
    if cls is None:
        return redis.ResponseError(message)
    return cls(message[len(code) + 1 :], status_code=code)


def take_link(client: Any) -> Link:
    """An idle link to ``client``'s server that passes the idle check, or a new one."""
    idle = _idle(client)
    pool = client.connection_pool
    sentinel = isinstance(pool, SentinelConnectionPool)
    master = pool.master_address if sentinel else None
    while True:
        with idle[2]:
            link = idle[1].pop() if idle[1] else None
        if link is None:
            kwargs = dict(pool.connection_kwargs)
            if sentinel:  # where the Sentinels name the master now
                kwargs["host"], kwargs["port"] = pool.get_master_address()
            return Link(kwargs)
        if link.idle_ok() and (not sentinel or link.address == master):
            return link
        link.close()


def give_back(client: Any, link: Link) -> None:
    """Keep a link whose replies were all read (at most ``IDLE_LINKS`` per client)."""
    idle = _idle(client)
    with idle[2]:
        if len(idle[1]) < IDLE_LINKS and link.sock.fileno() >= 0:
            idle[1].append(link)
            return
    link.close()


def _close_all(links: list[Link]) -> None:
    for link in links:
        link.close()


def _idle(client: Any) -> _Idle:
    pid = os.getpid()
    idle = _IDLE.get(client)
    if idle is None or idle[0] != pid:  # a forked child never uses its parent's sockets
        with _IDLE_LOCK:
            idle = _IDLE.get(client)
            if idle is None or idle[0] != pid:
                idle = (pid, [], threading.Lock())
                _IDLE[client] = idle
                weakref.finalize(client, _close_all, idle[1])
    return idle
