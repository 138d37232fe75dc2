"""The mqcore streaming source: offsets, admission control, AvailableNow, Arrow reads, errors."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

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

    from mqcore.spark.source import read_range

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
            for rb in read_range(reader.client, reader.config, "orders", part):
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


def test_spark_query_reads_arrow_batches_bounded_by_max_records(
    spark: Any, mq_config: MQConfig, redis_url: str, tmp_path: Any
) -> None:
    sent = _setup(mq_config, 25)
    batches: list[tuple[int, int]] = []
    rows: list[Any] = []

    def collect(df: Any, batch_id: int) -> None:
        got = df.collect()
        batches.append((batch_id, len(got)))
        rows.extend(got)

    query = (
        spark.readStream.format("mqcore")
        .option("redis_url", redis_url)
        .option("topic", "orders")
        .option("maxRecordsPerTrigger", "10")
        .load()
        .writeStream.foreachBatch(collect)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )
    query.awaitTermination(90)
    assert [n for _, n in batches] == [10, 10, 5]
    assert sorted((r["partition"], r["id"]) for r in rows) == sorted(
        (s.partition, s.id) for s in sent
    )
    first = rows[0]
    assert first["topic"] == "orders"
    assert json.loads(first["payload"])["customer"].startswith("c")
    assert first["timestamp"] is not None
    assert first["key"].startswith("k")
