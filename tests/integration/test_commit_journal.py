"""Journaled batch commits against a real Redis: a batch bigger than one script's chunk is
staged, sealed, applied group by group and finished; crashes between the steps lose and
double nothing (mqcore.commit_journal)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from mqcore.checkpoints import CheckpointStore, PlanOutcome, Writer
from mqcore.commit_journal import CommitJournal, StageLostError, write_stage
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

pytestmark = pytest.mark.redis

PIPE = "order_totals.redis"
KEYS_N = 1_000  # distinct keys per batch: 2,000 fields with totals and counts
CHUNK = 300


class Crash(Exception):
    """Stands for the driver dying between two steps of a journaled commit."""


@pytest.fixture
def store(mq_config: MQConfig) -> CheckpointStore:
    Topics(mq_config).create("orders", 2, groups=())
    return CheckpointStore(mq_config)


def _acked(config: MQConfig) -> dict[str, str]:
    sent = Producer(config).send_many(
        "orders", [OutgoingMessage('{"customer":"c","amount":1}', key=f"k{i}") for i in range(8)]
    )
    return {str(s.partition): s.id for s in sent}


def _increments(scale: int = 1) -> list[tuple[int, str, int]]:
    return [(1, f"c{i}", scale * i) for i in range(KEYS_N)] + [
        (2, f"c{i}", scale) for i in range(KEYS_N)
    ]


def _commit(store: CheckpointStore, batch: int, run: str, acked: dict[str, str], **kw: Any) -> bool:
    outputs = [store.keys.sink_output(PIPE, "totals"), store.keys.sink_output(PIPE, "counts")]
    store.record_planned(PIPE, batch, Writer(run_id=run, topic="orders", sink="redis", group=PIPE))
    return store.record_committed(
        PIPE,
        batch,
        Writer(run_id=run, topic="orders", sink="redis", group=PIPE),
        records=8,
        acked_ids=acked,
        outputs=outputs,
        chunk=CHUNK,
        **kw,
    )


def _outputs(store: CheckpointStore) -> tuple[dict[str, int], dict[str, int]]:
    def read(name: str) -> dict[str, int]:
        raw = store.client.hgetall(store.keys.sink_output(PIPE, name))
        return {k.decode(): int(v) for k, v in raw.items()}

    return read("totals"), read("counts")


def _expected(times: int = 1) -> tuple[dict[str, int], dict[str, int]]:
    return {f"c{i}": times * i for i in range(KEYS_N)}, {f"c{i}": times for i in range(KEYS_N)}


def _stage_keys(r: redis.Redis) -> list[bytes]:
    return list(r.scan_iter(match="*:stage:*", count=1000))


def _script_calls(r: redis.Redis) -> tuple[int, int]:
    """Script calls that ran (not the NOSCRIPT ones before a load) and HINCRBYs since a reset."""
    stats = r.info("commandstats")
    evalsha = stats.get("cmdstat_evalsha", {})
    ran = sum(int(evalsha.get(k, 0)) * (1 if k == "calls" else -1) for k in (
        "calls", "failed_calls", "rejected_calls"))  # fmt: skip
    return ran, int(stats.get("cmdstat_hincrby", {}).get("calls", 0))


def test_a_big_batch_commits_in_bounded_steps_exactly_once(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    acked = _acked(mq_config)
    r.config_resetstat()
    assert _commit(store, 0, "a", acked, increments=_increments())
    assert _outputs(store) == _expected()
    calls, hincrby = _script_calls(r)
    # 2,000 fields in 7 chunks of at most 300 (the driver stages them): plan, seal, 7 applies,
    # finish (plan and finish count the record's counters too)
    assert 2 * KEYS_N < hincrby < 2 * KEYS_N + 10
    assert calls == 1 + 1 + 7 + 1
    assert store.get(PIPE, 0)["status"] == "completed"
    assert store.committed_batch(PIPE, "redis") == 0
    assert not r.exists(mq_config.keys.commit_journal(PIPE))
    assert _stage_keys(r) == []
    # a replay of the committed batch writes nothing and leaves no stage behind
    assert not _commit(store, 0, "b", acked, increments=_increments())
    assert _outputs(store) == _expected()
    assert _stage_keys(r) == []


def test_a_small_batch_still_commits_in_one_script(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    acked = _acked(mq_config)
    r.config_resetstat()
    assert _commit(store, 0, "a", acked, increments=[(1, "c1", 5), (2, "c1", 1)])
    calls, hincrby = _script_calls(r)
    assert calls == 2  # plan, commit
    assert 2 < hincrby < 10
    assert _outputs(store) == ({"c1": 5}, {"c1": 1})


@pytest.mark.parametrize("crash_after", [0, 3, 6])
def test_a_crash_mid_apply_is_finished_by_the_replay(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis, crash_after: int
) -> None:
    acked = _acked(mq_config)

    def crash(group: int) -> None:
        if group == crash_after:
            raise Crash

    with pytest.raises(Crash):
        _commit(store, 0, "a", acked, increments=_increments(), on_group=crash)
    journal = mq_config.keys.commit_journal(PIPE)
    assert int(r.hget(journal, "next") or -1) == crash_after + 1
    assert store.committed_batch(PIPE, "redis") is None  # the marker moves with the last step
    totals, counts = _outputs(store)  # the groups applied so far, and only those
    assert len(totals) + len(counts) == min(2 * KEYS_N, CHUNK * (crash_after + 1))
    # the stages the journal holds are not the abort's to delete
    held = [k.decode() for k in _stage_keys(r)]
    CommitJournal(r, mq_config.keys, PIPE).discard(0, held)
    assert sorted(k.decode() for k in _stage_keys(r)) == sorted(held)
    # Spark replays the batch (a new run stages it again): the journal's commit is finished,
    # the replay's own stages discarded; every increment counted once
    assert store.record_planned(
        PIPE, 0, Writer(run_id="b", topic="orders", sink="redis", group=PIPE)
    ) in (
        PlanOutcome.RESTORED,
        PlanOutcome.PLANNED,
    )
    assert _commit(store, 0, "b", acked, increments=_increments())
    assert _outputs(store) == _expected()
    assert store.committed_batch(PIPE, "redis") == 0
    assert not r.exists(journal)
    assert _stage_keys(r) == []


def test_a_replay_under_the_same_run_does_not_apply_a_chunk_twice(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    """Stage names repeat when the run id and attempt do: the chunks the first commit applied
    (and deleted) are staged again by the replay and must not count a second time."""
    acked = _acked(mq_config)

    def crash(group: int) -> None:
        if group == 2:
            raise Crash

    with pytest.raises(Crash):
        _commit(store, 0, "a", acked, increments=_increments(), on_group=crash)
    assert _commit(store, 0, "a", acked, increments=_increments())
    assert _outputs(store) == _expected()
    assert _stage_keys(r) == []


def test_an_open_journal_is_finished_before_the_next_batch(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    acked = _acked(mq_config)

    def crash(group: int) -> None:
        raise Crash

    with pytest.raises(Crash):
        _commit(store, 0, "a", acked, increments=_increments(), on_group=crash)
    # the next batch, small (inline) or big (journaled), finishes batch 0 first
    assert _commit(store, 1, "a", acked, increments=[(1, "c1", 1), (2, "c1", 1)])
    totals, counts = _expected()
    totals["c1"] += 1
    counts["c1"] += 1
    assert _outputs(store) == (totals, counts)
    assert store.get(PIPE, 0)["status"] == "completed"
    assert store.committed_batch(PIPE, "redis") == 1
    with pytest.raises(Crash):
        _commit(store, 2, "a", acked, increments=_increments(), on_group=crash)
    assert _commit(store, 3, "a", acked, increments=_increments())
    assert _outputs(store) == ({k: v + 2 * int(k[1:]) for k, v in totals.items()},
                               {k: v + 2 for k, v in counts.items()})  # fmt: skip
    assert store.committed_batch(PIPE, "redis") == 3


def test_staged_tasks_commit_through_the_journal(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    """Two-phase commit: tasks stage in chunks; the commit applies exactly what they named."""
    acked = _acked(mq_config)
    stages = []
    for task in range(3):
        fields = {f"1|c{i}": i for i in range(task, KEYS_N, 3)}
        fields |= {f"2|c{i}": 1 for i in range(task, KEYS_N, 3)}
        stages += write_stage(
            r, mq_config.keys, pipeline=PIPE, run="a.0", batch=0, task=task, fields=fields,
            chunk=CHUNK,
        )  # fmt: skip
    assert all(n <= CHUNK for _, n in stages)
    assert sum(n for _, n in stages) == 2 * KEYS_N
    assert all(r.ttl(key) > 0 for key, _ in stages)
    assert _commit(store, 0, "a", acked, stages=stages)
    assert _outputs(store) == _expected()
    assert _stage_keys(r) == []


def test_a_lost_stage_writes_nothing(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    acked = _acked(mq_config)
    fields = {f"1|c{i}": i for i in range(KEYS_N)}
    stages = write_stage(
        r, mq_config.keys, pipeline=PIPE, run="a.0", batch=0, task=0, fields=fields, chunk=CHUNK
    )
    r.delete(stages[1][0])  # expired before the commit
    with pytest.raises(StageLostError, match="must run again"):
        _commit(store, 0, "a", acked, stages=stages)
    assert _outputs(store) == ({}, {})
    assert not r.exists(mq_config.keys.commit_journal(PIPE))
    assert store.committed_batch(PIPE, "redis") is None
    assert all(r.ttl(key) > 0 for key, _ in stages if r.exists(key))


def test_a_lost_stage_refuses_the_inline_commit(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    """A batch small enough for one script checks its stages too: an evicted stage would
    drop its increments while the marker, position and record advance."""
    acked = _acked(mq_config)
    stages = write_stage(
        r, mq_config.keys, pipeline=PIPE, run="a.0", batch=0, task=0,
        fields={"1|c1": 5, "2|c1": 1}, chunk=CHUNK,
    )  # fmt: skip
    kept = write_stage(
        r, mq_config.keys, pipeline=PIPE, run="a.0", batch=0, task=1,
        fields={"1|c2": 7, "2|c2": 1}, chunk=CHUNK,
    )  # fmt: skip
    r.delete(stages[0][0])  # evicted (or expired) before the commit
    with pytest.raises(StageLostError, match="must run again"):
        _commit(store, 0, "a", acked, stages=[*stages, *kept])
    assert _outputs(store) == ({}, {})
    assert store.committed_batch(PIPE, "redis") is None
    assert store.get(PIPE, 0)["status"] == "in_progress"  # type: ignore[index]
    for part in acked:
        key = mq_config.keys.partition("orders", int(part))
        assert [g["name"] for g in r.xinfo_groups(key)] == []  # no position was written
        assert not r.exists(mq_config.keys.commit_frontier("orders", int(part)))
    assert all(r.exists(key) and r.ttl(key) > 0 for key, _ in kept)  # the rest kept, with TTL


def test_a_journal_sealed_before_the_frontier_encoding_argument_still_finishes(
    store: CheckpointStore, mq_config: MQConfig, r: redis.Redis
) -> None:
    """A journal left open by the previous version has no encoding in its final call's
    arguments (the end ids follow the journaled flag): it finishes as that version would."""
    acked = _acked(mq_config)

    def crash(group: int) -> None:
        raise Crash

    with pytest.raises(Crash):
        _commit(store, 0, "a", acked, increments=_increments(), on_group=crash)
    journal = mq_config.keys.commit_journal(PIPE)
    final = json.loads(r.hget(journal, "final") or b"{}")
    assert final["args"][13] == "plain"
    del final["args"][13]  # the previous layout
    r.hset(journal, "final", json.dumps(final))
    assert _commit(store, 0, "b", acked, increments=_increments())
    assert _outputs(store) == _expected()
    assert store.committed_batch(PIPE, "redis") == 0
    for part, entry_id in acked.items():
        key = mq_config.keys.partition("orders", int(part))
        assert r.xinfo_groups(key)[0]["last-delivered-id"].decode() == entry_id
        front = mq_config.keys.commit_frontier("orders", int(part))
        assert r.hgetall(front) == {PIPE.encode(): entry_id.encode()}
