"""The mqcore streaming source: offsets, admission control, AvailableNow, Arrow reads, errors."""

from __future__ import annotations

import json
import pickle
import time
from typing import Any

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError, UnknownTopicError
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.spark, pytest.mark.redis]


def _setup(config: MQConfig, n: int) -> list[Any]:
    Topics(config).create("orders", 2, groups=())
    return Producer(config).send_many(
        "orders",
        [
            OutgoingMessage(json.dumps({"customer": f"c{i % 3}", "amount": i}), key=f"k{i}")
            for i in range(n)
        ],
    )


def _reader(url: str, **options: str) -> Any:
    from mqcore.spark.source import MQStreamReader

    return MQStreamReader({"redis_url": url, "topic": "orders"} | options)


def test_offsets_admission_control_and_available_now(mq_config: MQConfig, redis_url: str) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from mqcore.spark.read import read_task

    sent = _setup(mq_config, 30)
    reader = pickle.loads(pickle.dumps(_reader(redis_url, maxRecordsPerTrigger="7")))
    assert reader.getDefaultReadLimit() == ReadMaxRows(7)
    start = reader.initialOffset()
    assert start == {"0": "0-0", "1": "0-0"}
    seen: list[tuple[int, str]] = []
    reader.prepareForTriggerAvailableNow()
    Producer(mq_config).send("orders", '{"customer":"late","amount":1}')  # after the target
    while True:
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        if end == start:
            break
        batch = []
        for part in reader.partitions(start, end):
            for rb in read_task(reader.client, reader.config, "orders", part):
                batch += list(
                    zip(
                        rb.column("partition").to_pylist(), rb.column("id").to_pylist(), strict=True
                    )
                )
        assert 0 < len(batch) <= 7
        seen += batch
        start = end
    # start exclusive, end inclusive: every message exactly once, the late one not at all
    assert sorted(seen) == sorted((r.partition, r.id) for r in sent)
    # Without a target every new message is there; ReadAllAvailable ignores the option.
    fresh = _reader(redis_url, maxRecordsPerTrigger="7")
    assert fresh.latestOffset(start, ReadAllAvailable()) != start


def test_the_driver_holds_the_pipeline_groups_leases_until_it_stops(
    mq_config: MQConfig, redis_url: str, r: redis.Redis
) -> None:
    """Java's housekeeper counts only leased groups: the source's driver keeps the lease of
    every partition for the pipeline's group (mqcore.lease_keeper) until Spark stops it."""
    _setup(mq_config, 4)
    reader = _reader(redis_url, group="order_totals.redis")
    leases = [mq_config.keys.lease("orders", "order_totals.redis", p) for p in (0, 1)]
    assert not any(r.exists(k) for k in leases)  # not before the query asks for offsets
    start = reader.initialOffset()
    assert all((r.get(k) or b"").startswith(b"spark-pipeline:order_totals.redis:") for k in leases)
    copy = pickle.loads(pickle.dumps(reader))  # what executors get: no keeper
    assert copy._keeper is None
    reader.latestOffset(start, reader.getDefaultReadLimit())
    reader.stop()
    assert not any(r.exists(k) for k in leases)
    plain = _reader(redis_url)  # no group: no lease
    plain.initialOffset()
    assert not any(r.exists(k) for k in leases)
    plain.stop()


def test_starting_positions_and_clear_errors(mq_config: MQConfig, redis_url: str) -> None:
    sent = _setup(mq_config, 4)
    latest = _reader(redis_url, startingPosition="latest").initialOffset()
    assert latest == {
        str(p): max(
            (r.id for r in sent if r.partition == p), key=lambda i: tuple(map(int, i.split("-")))
        )
        for p in (0, 1)
    }
    given = _reader(redis_url, startingPosition='{"1": "5-0"}').initialOffset()
    assert given == {"0": "0-0", "1": "5-0"}
    with pytest.raises(UnknownTopicError, match="nope"):
        _reader(redis_url, topic="nope")
    for bad in ("yesterday", '{"7": "1-0"}', '{"0": "x-y"}'):
        with pytest.raises(InvalidArgumentError, match="startingPosition"):
            _reader(redis_url, startingPosition=bad)
    with pytest.raises(InvalidArgumentError, match="maxRecordsPerTrigger"):
        _reader(redis_url, maxRecordsPerTrigger="-1")
    with pytest.raises(InvalidArgumentError, match="redis_url"):
        _reader("")
    # the deployment's encoding travels in the options (the 2PC sink's too)
    assert _reader(redis_url, encoding="java-kryo").config.frontier_mode == "kryo"
    assert _reader(redis_url).config.frontier_mode == "plain"
    with pytest.raises(InvalidArgumentError, match="encoding"):
        _reader(redis_url, encoding="kryo5")


def test_spark_query_reads_arrow_batches_bounded_by_max_records(
    spark: Any, mq_config: MQConfig, redis_url: str, tmp_path: Any, r: redis.Redis
) -> None:
    sent = _setup(mq_config, 25)
    batches: list[tuple[int, int]] = []
    rows: list[Any] = []

    lease = mq_config.keys.lease("orders", "reader", 0)
    owners: list[bytes | None] = []

    def collect(df: Any, batch_id: int) -> None:
        owners.append(r.get(lease))  # the driver holds its group's lease while it runs
        got = df.collect()
        batches.append((batch_id, len(got)))
        rows.extend(got)

    query = (
        spark.readStream.format("mqcore")
        .option("redis_url", redis_url)
        .option("topic", "orders")
        .option("group", "reader")
        .option("maxRecordsPerTrigger", "10")
        .load()
        .writeStream.foreachBatch(collect)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )
    query.awaitTermination(90)
    assert [n for _, n in batches] == [10, 10, 5]
    assert all(o is not None and o.startswith(b"spark-pipeline:reader:") for o in owners)
    deadline = time.monotonic() + 20  # released when the source stops (else expired)
    while r.exists(lease) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not r.exists(lease)
    assert sorted((r["partition"], r["id"]) for r in rows) == sorted(
        (s.partition, s.id) for s in sent
    )
    first = rows[0]
    assert first["topic"] == "orders"
    assert json.loads(first["payload"])["customer"].startswith("c")
    assert first["timestamp"] is not None
    assert first["key"].startswith("k")


def _read_all(reader: Any) -> list[dict[str, Any]]:
    from mqcore.spark.read import read_task

    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    rows: list[dict[str, Any]] = []
    for task in reader.partitions(start, end):
        for rb in read_task(reader.client, reader.config, "orders", task):
            rows += rb.to_pylist()
    return rows


def test_java_entries_out_of_line_payloads_and_odd_values(
    mq_config: MQConfig, redis_url: str
) -> None:
    """Entries written the way Java's redis-streaming writes them (ISO timestamps, headers
    as a JSON object, large payloads in a payload key named by ``x-payload-*`` headers)
    read with the payload resolved; odd values never break a batch."""
    from tests.integration.raw_java import create_topic, partition_fields

    r = mq_config.client()
    keys = mq_config.keys
    create_topic(r, keys, "orders", 1, groups=())
    stream = keys.partition("orders", 0)
    big = json.dumps({"customer": "java", "amount": 7, "pad": "x" * 70_000})
    ref = keys.payload("orders", 0, "0f1e2d3c")
    r.set(ref, json.dumps(big))  # Java stores the payload as JSON text: a JSON string here
    java_headers = {
        "x-payload-storage-type": "hash",
        "x-payload-hash-ref": ref,
        "x-payload-original-size": str(len(big)),
    }
    out_of_line = partition_fields("orders", 0, "", key="java-key", headers=java_headers)
    del out_of_line["payload"]
    r.xadd(stream, out_of_line)
    gone = {**java_headers, "x-payload-hash-ref": keys.payload("orders", 0, "gone")}
    r.xadd(stream, {**partition_fields("orders", 0, ""), "headers": json.dumps(gone)})
    forged = {**java_headers, "x-payload-hash-ref": keys.payload("other", 0, "0f1e2d3c")}
    r.xadd(stream, {**partition_fields("orders", 0, ""), "headers": json.dumps(forged)})
    odd = partition_fields("orders", 0, b"\xffbad", headers={"n": "1"})
    odd["timestamp"] = "not a time"
    odd["headers"] = '{"n":1,"drop":null}'
    r.xadd(stream, odd)
    r.xadd(stream, {**partition_fields("orders", 0, "plain"), "headers": "{k=v, k2=v2}"})

    rows = _read_all(_reader(redis_url))
    assert [row["payload"] for row in rows[:3]] == [big, None, None]
    first = rows[0]
    assert first["key"] == "java-key"
    assert first["timestamp"] is not None  # Java's ISO-8601 instant
    assert json.loads(first["headers"])["x-payload-hash-ref"] == ref
    missing = json.loads(rows[1]["headers"])
    assert missing["x-payload-missing"] == "true"
    refused = json.loads(rows[2]["headers"])
    assert "x-payload-ref-refused" in refused
    assert refused["x-payload-missing"] == "true"
    assert rows[3]["payload"] == "\ufffdbad"
    assert rows[3]["timestamp"] is None
    assert json.loads(rows[3]["headers"]) == {"n": "1"}  # the one header rule
    assert json.loads(rows[4]["headers"]) == {"k": "v", "k2": "v2"}
    assert rows[4]["payload"] == "plain"


def test_batches_are_planned_in_redis_fairly_and_dealt_to_read_tasks(
    mq_config: MQConfig, redis_url: str
) -> None:
    """maxRecordsPerTrigger is counted by the stream_seek script (no entries sent to the
    driver), shared fairly across partitions, and the ranges are dealt to readTasks."""
    Topics(mq_config).create("orders", 3, groups=())
    producer = Producer(mq_config)
    for part, n in ((0, 5000), (1, 10), (2, 2500)):
        producer.send_many("orders", [OutgoingMessage("x", partition=part)] * n)
    reader = _reader(redis_url, maxRecordsPerTrigger="4500", readTasks="2")
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    tasks = reader.partitions(start, end)
    assert [sorted(p for p, _s, _e in t.ranges) for t in tasks] == [[0, 2], [1]]
    rows = [row for t in tasks for rb in _task_rows(reader, t) for row in rb]
    per_part = {p: sum(1 for row in rows if row["partition"] == p) for p in (0, 1, 2)}
    assert sum(per_part.values()) == 4500
    assert per_part[1] == 10
    assert abs(per_part[0] - per_part[2]) <= 1
    # The next batch goes on exactly where this one ended; "all" takes everything.
    rest = _reader(redis_url, maxRecordsPerTrigger="all")
    final = rest.latestOffset(end, rest.getDefaultReadLimit())
    seen = sum(len(b) for t in rest.partitions(end, final) for b in _task_rows(rest, t))
    assert seen == 7510 - 4500


def _task_rows(reader: Any, task: Any) -> list[list[dict[str, Any]]]:
    from mqcore.spark.read import read_task

    return [rb.to_pylist() for rb in read_task(reader.client, reader.config, "orders", task)]


def test_pages_of_a_partition_are_joined_into_batches(mq_config: MQConfig, redis_url: str) -> None:
    """Entries are read in XRANGE pages of PAGE_SIZE (each a bounded command) and handed
    over in Arrow batches of BATCH_ROWS per partition, in order, none lost or repeated."""
    from mqcore.spark.read import BATCH_ROWS, PAGE_SIZE, read_task

    Topics(mq_config).create("orders", 2, groups=())
    producer = Producer(mq_config)
    counts = {0: 2 * BATCH_ROWS + PAGE_SIZE // 2, 1: BATCH_ROWS + 1}
    sent = {
        part: [
            s.id for s in producer.send_many("orders", [OutgoingMessage("x", partition=part)] * n)
        ]
        for part, n in counts.items()
    }
    reader = _reader(redis_url, readTasks="1")
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    sizes: dict[int, list[int]] = {0: [], 1: []}
    got: dict[int, list[str]] = {0: [], 1: []}
    for task in reader.partitions(start, end):
        for rb in read_task(reader.client, reader.config, "orders", task):
            part = rb.column("partition")[0].as_py()
            sizes[part].append(rb.num_rows)
            got[part] += rb.column("id").to_pylist()
    assert sizes == {0: [BATCH_ROWS, BATCH_ROWS, PAGE_SIZE // 2], 1: [BATCH_ROWS, 1]}
    assert got == sent
