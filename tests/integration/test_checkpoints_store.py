"""CheckpointStore against a real Redis: plan, commit, replay, restore, fail, lag, retention."""

from __future__ import annotations

import pytest

from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore, PlanOutcome, Writer
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

pytestmark = pytest.mark.redis

PIPE = "order_totals.redis"
GROUP = "order_totals.redis"


@pytest.fixture
def store(mq_config: MQConfig) -> CheckpointStore:
    Topics(mq_config).create("orders", 2, groups=())
    return CheckpointStore(mq_config)


def _produce(config: MQConfig, n: int) -> list[tuple[int, str]]:
    results = Producer(config).send_many(
        "orders",
        [OutgoingMessage(f'{{"customer":"c{i}","amount":1}}', key=f"k{i}") for i in range(n)],
    )
    return [(r.partition, r.id) for r in results]


def _commit(
    store: CheckpointStore, batch: int, run: str, acked: dict[str, str], **kw: object
) -> bool:
    return store.record_committed(
        PIPE,
        batch,
        Writer(run_id=run, topic="orders", sink="redis", group=GROUP),
        records=kw.pop("records", 3),
        acked_ids=acked,
        **kw,  # type: ignore[arg-type]
    )


def test_commit_is_atomic_and_a_replay_is_skipped(
    store: CheckpointStore, mq_config: MQConfig, r
) -> None:
    sent = _produce(mq_config, 6)
    last = {str(p): i for p, i in sent}
    out = mq_config.keys.sink_output(PIPE, "totals")
    assert (
        store.record_planned(PIPE, 0, Writer(run_id="a", topic="orders", sink="redis", group=GROUP))
        == PlanOutcome.PLANNED
    )
    assert _commit(store, 0, "a", last, records=6, outputs=[out], increments=[(1, "c1", 5)])
    assert r.hget(out, "c1") == b"5"
    # The same batch again (Spark replays it after a crash before its commit log): no effect.
    assert (
        store.record_planned(PIPE, 0, Writer(run_id="b", topic="orders", sink="redis", group=GROUP))
        == PlanOutcome.COMMITTED
    )
    assert not _commit(store, 0, "b", last, outputs=[out], increments=[(1, "c1", 5)])
    assert r.hget(out, "c1") == b"5"
    summary = store.summary(PIPE)
    assert summary is not None
    assert (summary["completed"], summary["restored"], summary["in_progress"]) == (1, 1, 0)
    assert summary["end_offsets"] == last
    # The console's lag for the pipeline group is exact (XGROUP SETID ... ENTRIESREAD).
    lag = Admin(mq_config).lag("orders", GROUP)[0]
    assert lag.lag == 0
    assert lag.lag_exact
    _produce(mq_config, 4)
    assert Admin(mq_config).lag("orders", GROUP)[0].lag == 4


def test_uncommitted_batch_replayed_by_a_new_run_is_a_restore(
    store: CheckpointStore, mq_config: MQConfig
) -> None:
    sent = _produce(mq_config, 2)
    store.record_planned(PIPE, 0, Writer(run_id="a", topic="orders", sink="redis", group=GROUP))
    assert (
        store.record_planned(PIPE, 0, Writer(run_id="a", topic="orders", sink="redis"))
        == PlanOutcome.PLANNED
    )
    assert (
        store.record_planned(PIPE, 0, Writer(run_id="b", topic="orders", sink="redis"))
        == PlanOutcome.RESTORED
    )
    assert store.history(PIPE)[0]["status"] == "restored"
    assert _commit(store, 0, "b", {str(p): i for p, i in sent})
    record = store.history(PIPE)[0]
    assert record["status"] == "completed"
    assert record["restored"] is True
    assert record["restored_from_run"] == "a"
    summary = store.summary(PIPE)
    assert summary is not None
    assert (
        summary["triggered"],
        summary["completed"],
        summary["restored"],
        summary["in_progress"],
    ) == (1, 1, 1, 0)
    assert summary["last_restore_id"] == 0


def test_failure_is_recorded_with_reason_then_retried(store: CheckpointStore) -> None:
    store.record_planned(PIPE, 3, Writer(run_id="a", topic="orders", sink="redis", group=GROUP))
    assert store.record_failed(PIPE, 3, run_id="a", reason="boom\n in sink")
    summary = store.summary(PIPE)
    assert summary is not None
    assert (summary["failed"], summary["in_progress"], summary["last_failure_reason"]) == (
        1,
        0,
        "boom in sink",
    )
    assert (
        store.record_planned(PIPE, 3, Writer(run_id="b", topic="orders", sink="redis"))
        == PlanOutcome.RESTORED
    )
    assert store.summary(PIPE)["in_progress"] == 1  # type: ignore[index]


def test_history_pages_newest_first_and_retention_is_capped(mq_config: MQConfig) -> None:
    Topics(mq_config).create("orders", 1, groups=())
    store = CheckpointStore(mq_config, retained=5)
    for batch in range(8):
        store.record_planned(
            PIPE, batch, Writer(run_id="a", topic="orders", sink="redis", group=GROUP)
        )
        _commit(store, batch, "a", {}, records=batch)
    assert [r["batch_id"] for r in store.history(PIPE, limit=3)] == [7, 6, 5]
    assert [r["batch_id"] for r in store.history(PIPE, limit=3, before=5)] == [4, 3]
    assert store.get(PIPE, 2) is None
    assert [s["pipeline"] for s in store.summaries()] == [PIPE]
    assert store.summaries()[0]["completed"] == 8


def test_bad_arguments_write_nothing(store: CheckpointStore, r) -> None:
    with pytest.raises(InvalidArgumentError):
        store.record_committed(
            PIPE,
            0,
            Writer(run_id="a", topic="orders", sink="redis", group=""),
            records=0,
            acked_ids={},
        )
    with pytest.raises(ValueError, match="invalid pipeline"):
        store.record_planned("bad name", 0, Writer(run_id="a", topic="orders", sink="redis"))
    assert store.pipelines() == []


def test_spark_checkpoint_folder_identity_is_checked(mq_config: MQConfig, tmp_path) -> None:
    from pipelines import CheckpointDirError, check_identity

    folder = tmp_path / "order_totals.redis"
    check_identity(folder, mq_config, "orders", None)
    check_identity(folder, mq_config, "orders", None)  # same deployment and topic: fine
    with pytest.raises(CheckpointDirError, match="belongs to"):
        check_identity(folder, mq_config, "payments", None)
    with pytest.raises(CheckpointDirError, match="belongs to"):
        check_identity(folder, MQConfig.from_url("redis://elsewhere:6380/0"), "orders", None)
    with pytest.raises(CheckpointDirError, match="would skip data"):
        check_identity(tmp_path / "fresh", mq_config, "orders", 12)


def test_commit_counts_entries_to_the_end_within_bounds(mq_config: MQConfig, r) -> None:
    """ENTRIESREAD (an exact lag) costs a count of the entries after the new position: at
    most 250 per commit, shared by the partitions in turn; past it the lag is counted by
    the console instead, and is still right."""
    Topics(mq_config).create("wide", 12, groups=())
    keys = mq_config.keys
    ids = {p: [r.xadd(keys.partition("wide", p), {"payload": str(i)}) for i in range(300)]
           for p in range(12)}  # fmt: skip
    store = CheckpointStore(mq_config)
    store.record_planned(PIPE, 0, Writer(run_id="a", topic="wide", sink="redis", group=GROUP))
    # each partition is 61 behind its end: p0..p3 fit the 250 (244), p4 is counted to
    # the 6 left (too few), p5..p11 not at all
    acked = {str(p): ids[p][238].decode() for p in range(12)}
    r.config_resetstat()
    assert store.record_committed(
        PIPE,
        0,
        Writer(run_id="a", topic="wide", sink="redis", group=GROUP),
        records=1,
        acked_ids=acked,
    )
    assert int(r.info("commandstats")["cmdstat_xrange"]["calls"]) == 5
    parts = {x.partition: x for x in Admin(mq_config).lag("wide", GROUP)[0].partitions}
    exact = sorted(p for p, x in parts.items() if x.exactness.value == "exact")
    assert exact == [0, 1, 2, 3]
    assert {x.lag for x in parts.values()} == {61}
