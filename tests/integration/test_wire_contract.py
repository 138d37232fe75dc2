"""Contract: the snapshot through the wire path equals the snapshot through a plain pipeline.

The wire (``mqcore.wire``) reads replies as Redis sends them, on a socket of its
own (``mqcore.wire_link``) or on redis-py's connection; the pipeline path reads
redis-py's parsed replies. On the same data all three must give the same
snapshot, field for field, with RESP2 and RESP3 clients, on a first pass and on a
second one (which reuses what the first learnt); on the Cluster fixture the snapshot
is the same with both protocols.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

import mqcore.snapshot.plan
import mqcore.wire
from mqcore.admin import Admin
from mqcore.config import MQConfig
from tests.integration.raw_java import add_messages, create_topic, java_dlq_letter
from tests.integration.retry_items import schedule
from tests.snapshot_parts import builtins

pytestmark = pytest.mark.redis

VOLATILE = ("elapsed_ms", "commands", "redis_run_id")
CLOCKED = {"oldest_pending_ms", "ttl_ms"}  # idle time and time to live move between passes


def _populate(r: Any, cfg: MQConfig) -> None:
    keys = cfg.keys
    create_topic(r, keys, "orders", 3, groups=("billing", "audit"))
    create_topic(r, keys, "empty", 2, groups=("g",))
    for p in range(3):
        add_messages(r, keys, "orders", p, 20 + p)
    r.xreadgroup("billing", "c1", {keys.partition("orders", 0): ">"}, count=7)
    reply = r.xreadgroup("audit", "c2", {keys.partition("orders", 1): ">"}, count=4)
    r.xdel(keys.partition("orders", 1), reply[0][1][-1][0])  # pending + deleted
    ids = add_messages(r, keys, "orders", 2, 5)
    r.xdel(keys.partition("orders", 2), ids[2])  # NULL lag for every group on p2
    r.set(keys.lease("orders", "billing", 0), "c1", px=60_000)
    r.set(keys.lease_epoch("orders", "billing", 0), 3)
    r.hset(keys.consumers("orders", "billing"), "c1", '{"last_seen_ms": 1, "partitions": [0]}')
    now = int(time.time() * 1000)
    schedule(r, keys, "orders", 1, "later", due_ms=now + 60_000)
    schedule(r, keys, "orders", 0, "due", due_ms=now - 1_000)
    java_dlq_letter(r, keys, "orders", 0, "dead")


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two snapshots differ (a readable failure instead of a dict dump)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            x, y = a.get(k), b.get(k)
            if k in CLOCKED:
                x, y = x is None, y is None
            out += _diff(x, y, f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _diff(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


PATHS = ["link", "connection", "pipeline"]


def _take_path(patch: pytest.MonkeyPatch, path: str) -> None:
    """Send the wire down one of its paths: its own socket (the default on a plain
    client), redis-py's connection (TLS, a credential provider), or a pipeline."""
    if path != "link":
        patch.setattr(mqcore.wire, "link_capable", lambda _client: False)
    if path == "pipeline":
        patch.setattr(mqcore.wire, "wire_capable", lambda _client: False)


def _snapshot(cfg: MQConfig, *, path: str, passes: int = 2) -> list[dict[str, Any]]:
    client = cfg.client()
    try:
        with pytest.MonkeyPatch.context() as patch:
            _take_path(patch, path)
            patch.setattr(mqcore.snapshot.plan.time, "time", lambda: 1_900_000_000.0)
            out = []
            for _ in range(passes):
                snap = builtins(Admin(cfg, client).snapshot())
                for name in VOLATILE:
                    snap.pop(name)
                out.append(snap)
            return out
    finally:
        client.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_wire_and_pipeline_give_the_same_snapshot(
    r: redis.Redis, mq_config: MQConfig, protocol: int
) -> None:
    _populate(r, mq_config)
    cfg = mq_config.with_(client_options={"protocol": protocol})
    assert mqcore.wire.wire_capable(cfg.client())
    wire = _snapshot(cfg, path="link")
    assert _diff(wire, _snapshot(cfg, path="connection")) == []
    assert _diff(wire, _snapshot(cfg, path="pipeline")) == []
    assert _diff(wire[0], wire[1]) == []
    orders = next(t for t in wire[0]["topics"] if t["topic"] == "orders")
    assert orders["error"] is None
    assert [g["group"] for g in orders["groups"]] == ["audit", "billing"]
    billing = orders["groups"][1]
    assert billing["pending"] == 7
    assert billing["partitions"][2]["exactness"] == "counted"
    assert orders["leases"][3]["owner"] == "c1"


def test_cluster_snapshot_is_the_same_with_resp2_and_resp3(cluster_config: MQConfig) -> None:
    client = cluster_config.client()
    try:
        _populate(client, cluster_config)
    finally:
        client.close()
    snaps = [
        _snapshot(cluster_config.with_(client_options={"protocol": p}), path="link") for p in (2, 3)
    ]
    assert _diff(snaps[0], snaps[1]) == []
    assert not mqcore.wire.wire_capable(cluster_config.client())
    orders = next(t for t in snaps[0][0]["topics"] if t["topic"] == "orders")
    assert orders["error"] is None
    assert orders["groups"][1]["pending"] == 7


@pytest.mark.parametrize("path", ["link", "connection"])
def test_wire_round_trips_keep_replies_in_order(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Replies over several round trips come back in command order, an error reply in
    place; a round trip of fewer commands than its step too."""
    _take_path(monkeypatch, path)
    r.set("s", "text")
    cmds: list[tuple[Any, ...]] = []
    for i in range(50):
        cmds.append(("INCR", "s") if i == 23 else ("SET", f"k{i}", i))
        cmds.append(("GET", f"k{i}"))
    runner = mqcore.wire.Wire(r, 1000)
    replies = runner.run(cmds, step=7)
    assert isinstance(replies[46], redis.ResponseError)
    assert [replies[2 * i + 1] for i in range(50) if i != 23] == [
        str(i).encode() for i in range(50) if i != 23
    ]
    assert runner.run(cmds[:3]) == [b"OK", b"0", b"OK"]
    assert runner.commands == 103


@pytest.mark.parametrize("path", PATHS)
def test_wire_send_writes_now_and_reads_later(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """``Wire.send`` writes its first round trip at once (Redis runs it before the replies
    are asked for), the rest when they are; the connection goes back to the pool after."""
    _take_path(monkeypatch, path)
    direct = path != "pipeline"
    runner = mqcore.wire.Wire(r, 3)
    cmds: list[tuple[Any, ...]] = [("INCR", "n") for _ in range(7)]
    replies = runner.send(cmds, step=3)
    if direct:
        deadline = time.monotonic() + 5
        while r.get("n") != b"3" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert r.get("n") == b"3"  # written, not yet read
    else:
        assert r.get("n") is None  # a pipeline runs when the replies are asked for
    assert replies() == list(range(1, 8))
    assert runner.commands == 7
    assert r.incr("n") == 8  # the pooled connection has no replies left unread
    assert runner.send([])() == []


@pytest.mark.parametrize("path", PATHS)
def test_wire_raises_a_lost_connection_named(
    redis_server: Any, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """A reply that does not come in time raises ConnectionLostError naming the reader, on
    the direct path (redis-py raises as it reads) and through a pipeline (listed reply)."""
    from mqcore.errors import ConnectionLostError

    _take_path(monkeypatch, path)
    direct = path != "pipeline"
    client = redis.Redis(host=redis_server.host, port=redis_server.port, socket_timeout=0.2)
    try:
        runner = mqcore.wire.Wire(client, 10)
        with pytest.raises(ConnectionLostError, match="snapshot"):
            runner.run([("PING",), ("BLPOP", "wire-test-nothing", 2), ("PING",)])
        assert runner.run([("PING",)]) == [b"PONG" if direct else True]
    finally:
        client.close()
