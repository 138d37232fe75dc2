"""The master change rules of the collector (dashboard.collectors.failover): what counts as
another master, and what the redelivery count can tell."""

from __future__ import annotations

from dashboard.collectors.failover import master_change_reason, redelivered
from mqcore.models import Replication

OLD = {"role": "master", "run_id": "a" * 40, "replid": "r1", "replid2": "0", "port": 6379}


def _new(**over: object) -> Replication:
    fields = {"role": "master", "run_id": "b" * 40, "replid": "r2", "replid2": "0", "offset": 9}
    fields.update(over)
    return Replication(port=6379, **fields)  # type: ignore[arg-type]


def test_a_promoted_replica_continues_the_old_masters_history() -> None:
    assert master_change_reason(OLD, _new(replid2="r1")) == "promoted"


def test_a_restart_of_the_same_server_is_not_a_master_change() -> None:
    assert master_change_reason(OLD, _new()) is None  # the restart check tells it
    assert master_change_reason(OLD, _new(run_id=OLD["run_id"])) is None
    assert master_change_reason(None, _new()) is None  # the first pass only records


def test_another_server_or_a_replica_read() -> None:
    assert master_change_reason(OLD, Replication("master", "c" * 40, "r3", "0", 0, 7000)) == (
        "replaced"
    )
    # a pass that met a demoted master reading as a replica is no change: the next master is
    assert master_change_reason(OLD, _new(role="slave", replid2="r1")) is None


def test_redelivered_is_exact_only_where_nothing_was_pending_before() -> None:
    asks = [("t", "g", 0, "5-0"), ("t", "g", 1, "9-0"), ("t", "h", 0, "3-0")]
    found = [["1-0", "2-0"], ["4-0", "6-0", "8-0"], None]
    out = redelivered(asks, [0, 1, 0], found, limit=100)
    assert [(r.partition, r.count, r.exact, r.ids) for r in out] == [
        (0, 2, True, ["1-0", "2-0"]),
        (1, 2, False, []),  # one was pending before: at least 3 - 1
    ]
    capped = redelivered(asks[:1], [0], [["1-0", "2-0"]], limit=2)
    assert capped[0].exact is False  # the read hit its COUNT: at least
