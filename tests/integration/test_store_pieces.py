"""Big console-store values (snapshot, collector state) are read in GETRANGE pieces of at
most ``PIECE_BYTES``, never by one GET that copies megabytes, and a write that lands
between the pieces is not mixed into the value read."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from dashboard.clusters import console_keys, console_redis
from dashboard.store import ConsoleStore
from dashboard.store import console as store_console
from dashboard.store.console import read_pieces
from mqcore.models import ClusterSnapshot
from tests.snapshot_parts import snapshot, topic

pytestmark = [pytest.mark.redis]


def _pass(cs: ConsoleStore, now_ms: int, snap: ClusterSnapshot, state: dict[str, Any]) -> None:
    cs.pass_write(
        "big",
        now_ms=now_ms,
        snapshot=snap,
        state=state,
        lease_state={"leases": state.get("blob", "")},
        incidents=[],
        points={},
        health={"ok": True},
        alerts_open={},
        alerts_resolved=[],
        slot=None,
    )


def _commands(client: redis.Redis) -> dict[str, int]:
    return {
        k: int(v["calls"])
        for k, v in client.info("commandstats").items()
        if k.startswith("cmdstat_")
    }


def test_snapshot_and_state_round_trip_in_pieces(
    console_r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_console, "PIECE_BYTES", 1000)
    cs = ConsoleStore(console_redis(), console_keys())
    blob = "x" * 25_000  # 25+ pieces each
    snap = snapshot([topic("t", error=blob)])
    _pass(cs, 1_000, snap, {"blob": blob, "n": 1})
    # as if another worker wrote the state last: this one reads it
    console_r.set(console_keys().collector_state_version("big"), "1000:another")
    before = _commands(console_r)
    assert cs.snapshot_get("big") == snap
    prev = cs.state_get("big")
    after = _commands(console_r)
    assert prev["state"] == {"blob": blob, "n": 1}
    assert prev["lease_state"] == {"leases": blob}
    got = after.get("cmdstat_getrange", 0) - before.get("cmdstat_getrange", 0)
    assert got >= 3 * 25  # snapshot, state and lease state, each in 1,000-byte pieces
    big_gets = after.get("cmdstat_get", 0) - before.get("cmdstat_get", 0)
    assert big_gets == 6  # only the version keys are read whole (2 cache checks + 2 x 2)


def test_the_state_this_worker_wrote_is_not_read_again(console_r: redis.Redis) -> None:
    cs = ConsoleStore(console_redis(), console_keys())
    blob = "x" * 25_000
    _pass(cs, 1_000, ClusterSnapshot(taken_at_ms=1, topics=[]), {"blob": blob, "n": 1})
    before = _commands(console_r)
    prev = cs.state_get("big")
    after = _commands(console_r)
    assert prev["state"] == {"blob": blob, "n": 1}
    assert prev["lease_state"] == {"leases": blob}
    assert after.get("cmdstat_getrange", 0) == before.get("cmdstat_getrange", 0)
    assert after.get("cmdstat_strlen", 0) == before.get("cmdstat_strlen", 0)
    cs.alerts_write("big", {}, [], {"n": 2})  # a failed pass writes the state alone
    assert cs.state_get("big")["state"] == {"n": 2}
    assert cs.state_get("big")["lease_state"] == {"leases": blob}


def test_a_write_between_the_pieces_is_not_mixed_in(
    console_r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_console, "PIECE_BYTES", 100)
    cs = ConsoleStore(console_redis(), console_keys())
    keys = console_keys()
    _pass(cs, 1_000, ClusterSnapshot(taken_at_ms=1, topics=[], cluster="x" * 5000), {})
    real = console_r.pipeline
    writes = iter(range(2))

    class Racing:
        """The first piece read is preceded by a new pass (another worker wrote)."""

        def __init__(self, pipe: Any) -> None:
            self.pipe = pipe

        def __getattr__(self, name: str) -> Any:
            return getattr(self.pipe, name)

        def execute(self) -> Any:
            reads = any(c[0][0] == "GETRANGE" for c in self.pipe.command_stack)
            if reads and next(writes, None) == 0:
                _pass(cs, 2_000, ClusterSnapshot(taken_at_ms=2, topics=[], cluster="y" * 7000), {})
            return self.pipe.execute()

    client = console_redis()
    monkeypatch.setattr(client, "pipeline", lambda transaction=True: Racing(real(transaction)))
    version, (raw,) = read_pieces(client, [keys.snapshot("big")], keys.snapshot_version("big"))
    assert raw is not None
    assert b"y" * 7000 in raw
    assert b"x" not in raw  # (no field name has an x)
    assert version == console_r.get(keys.snapshot_version("big"))
