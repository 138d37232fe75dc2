"""The wire's own sockets (``mqcore.wire_link``) on real redis-servers: the handshake
(password, ACL user, database, Unix socket), error replies, lost and timed-out links,
idle links the server closed, and a forked child."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from mqcore.errors import ConnectionLostError, MQError
from mqcore.wire import Wire
from mqcore.wire_link import link_capable
from scripts.embedded import EmbeddedRedis

pytestmark = pytest.mark.redis


def _linked(client: redis.Redis) -> Wire:
    wire = Wire(client, 100)
    assert wire.linked
    return wire


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    sock = tmp_path / "redis.sock"
    server = EmbeddedRedis(
        tmp_path / "data", extra_args=["--unixsocket", str(sock), "--unixsocketperm", "700"]
    )
    server.start()
    setup = redis.Redis(host=server.host, port=server.port)
    setup.config_set("requirepass", "s3cret")  # after start: its readiness check has no password
    setup.close()
    yield server
    server.stop()


def test_a_link_selects_the_clients_database(redis_url: str) -> None:
    base = redis_url.rsplit("/", 1)[0]
    one = redis.Redis.from_url(f"{base}/1", socket_timeout=5)
    zero = redis.Redis.from_url(f"{base}/0", socket_timeout=5)
    try:
        _linked(one).run([("SET", "where", "db1")])
        assert one.get("where") == b"db1"
        assert zero.get("where") is None
        assert _linked(one).run([("GET", "where"), ("CLIENT", "GETNAME")]) == [b"db1", None]
    finally:
        one.flushdb()
        one.close()
        zero.close()


def test_a_link_authenticates_with_a_password_or_an_acl_user(guarded: EmbeddedRedis) -> None:
    url = f"redis://:s3cret@{guarded.host}:{guarded.port}/0"
    admin = redis.Redis.from_url(url, socket_timeout=5)
    admin.acl_setuser("ops", enabled=True, passwords=["+opspw"], keys=["*"], commands=["+@all"])
    user = redis.Redis.from_url(f"redis://ops:opspw@{guarded.host}:{guarded.port}/0")
    named = redis.Redis.from_url(url, client_name="opsdash-wire")
    wrong = redis.Redis.from_url(f"redis://:nope@{guarded.host}:{guarded.port}/0")
    try:
        assert _linked(admin).run([("SET", "k", "v"), ("GET", "k")]) == [b"OK", b"v"]
        assert _linked(user).run([("ACL", "WHOAMI")]) == [b"ops"]
        assert _linked(named).run([("CLIENT", "GETNAME")]) == [b"opsdash-wire"]
        with pytest.raises(MQError, match="invalid username-password"):
            _linked(wrong).run([("GET", "k")])
    finally:
        for c in (admin, user, named, wrong):
            c.close()


def test_a_link_over_a_unix_socket(guarded: EmbeddedRedis, tmp_path: Path) -> None:
    client = redis.Redis(unix_socket_path=str(tmp_path / "redis.sock"), password="s3cret")
    try:
        assert link_capable(client)
        assert _linked(client).run([("PING",)]) == [b"PONG"]
    finally:
        client.close()


def test_error_replies_keep_redis_pys_classes_and_the_others_stand(r: redis.Redis) -> None:
    r.set("text", "x")
    replies = _linked(r).run([("EVALSHA", "0" * 40, 0), ("XLEN", "text"), ("GET", "text")])
    assert isinstance(replies[0], redis.exceptions.NoScriptError)
    assert type(replies[1]) is redis.ResponseError
    assert str(replies[1]).startswith("WRONGTYPE")
    unknown = _linked(r).run([("NOSUCHCOMMAND",)])[0]
    with r.pipeline(transaction=False) as pipe:  # redis-py's own parse of the same reply
        expected = pipe.execute_command("NOSUCHCOMMAND").execute(raise_on_error=False)[0]
    assert (type(unknown), str(unknown)) == (type(expected), str(expected))
    assert replies[2] == b"x"


def test_an_idle_link_the_server_closed_is_replaced(r: redis.Redis) -> None:
    wire = _linked(r)
    assert wire.run([("CLIENT", "SETNAME", "wire-victim")]) == [b"OK"]
    victims = [c for c in r.client_list() if c["name"] == "wire-victim"]
    assert len(victims) == 1
    r.client_kill_filter(_id=victims[0]["id"])
    assert wire.run([("PING",)] * 3) == [b"PONG"] * 3  # a fresh link, not the dead one
    assert not [c for c in r.client_list() if c["name"] == "wire-victim"]


def test_a_timed_out_link_is_dropped_before_its_late_reply_can_be_read(
    redis_url: str, r: redis.Redis
) -> None:
    client = redis.Redis.from_url(redis_url, socket_timeout=0.2)
    try:
        wire = _linked(client)
        with pytest.raises(ConnectionLostError, match="timed out"):
            wire.run([("DEBUG", "SLEEP", "0.5"), ("SET", "after", "sleep")])
        r.set("probe", "fresh")
        # the late "OK"s of the dropped link never reach this read
        assert wire.run([("GET", "probe")]) == [b"fresh"]
    finally:
        client.close()


def test_a_lost_server_raises_connection_lost(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "gone").start()
    client = redis.Redis.from_url(server.url, socket_timeout=2, socket_connect_timeout=1)
    try:
        assert _linked(client).run([("PING",)]) == [b"PONG"]
        server.stop()
        with pytest.raises(ConnectionLostError, match="unreachable"):
            _linked(client).run([("PING",)])
    finally:
        client.close()


def test_a_forked_child_opens_its_own_link(r: redis.Redis) -> None:
    wire = _linked(r)
    wire.run([("CLIENT", "SETNAME", "parent-link")])
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first read must not go through the parent's socket
        try:
            name = Wire(r, 10).run([("CLIENT", "GETNAME")])[0]
            os.write(write_end, name or b"-")
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    assert os.read(read_end, 100) == b"-"
    os.close(read_end)
    assert wire.run([("CLIENT", "GETNAME")]) == [b"parent-link"]


def test_other_clients_keep_redis_pys_connection(redis_url: str) -> None:
    single = redis.Redis.from_url(redis_url, single_connection_client=True)
    try:
        assert not link_capable(single)
        wire = Wire(single, 10)
        assert wire.direct
        assert not wire.linked
        assert wire.run([("PING",)]) == [b"PONG"]
    finally:
        single.close()


def test_a_round_trip_larger_than_the_socket_buffers_reads_replies_while_it_sends(
    r: redis.Redis,
) -> None:
    """20 MB of commands in one round trip: Redis answers the first ones before the last
    are written, and the link parses those replies while it sends the rest."""
    value = "v" * 1000
    cmds = [("SET", f"big:{i}", value) if i % 2 else ("INCR", "big:n") for i in range(20_000)]
    replies = _linked(r).run(cmds, step=20_000)
    assert replies[0::2] == list(range(1, 10_001))
    assert replies[1::2] == [b"OK"] * 10_000
    assert _linked(r).run([("GET", "big:19999"), ("STRLEN", "big:1")]) == [value.encode(), 1000]
