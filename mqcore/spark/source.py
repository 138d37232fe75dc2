"""The ``mqcore`` PySpark streaming data source: a topic's partitions as a stream.

Offsets are ``{"<partition>": "<last id>"}``: the start offset is exclusive
and the end offset inclusive, so a batch reads ``XRANGE p (start end``. A
partition added while a query runs appears with start ``0-0``. The source does
nothing in :meth:`MQStreamReader.commit` on purpose: acks and progress are
recorded by the exactly-once sinks inside their own transaction (Spark calls
``commit`` a batch late and skips it on ``Trigger.AvailableNow``).

Options: ``redis_url`` (required), ``topic`` (required), ``group`` (the
pipeline's consumer group, moved by the sinks; informational here),
``startingPosition`` (``earliest`` | ``latest`` | a JSON offsets object),
``maxRecordsPerTrigger`` (admission control via ``ReadMaxRows``),
``control_prefix`` / ``stream_prefix`` / ``cluster`` (``true`` for Redis Cluster).

Readers are pickled to executors; Redis clients are created lazily where they
are used and never pickled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from mqcore.codec import decode_text
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import InvalidArgumentError, InvalidIdError, UnknownTopicError
from mqcore.keys import validate_name

__all__ = [
    "PAGE_SIZE",
    "SCHEMA",
    "MQDataSource",
    "MQStreamReader",
    "Offsets",
    "PartitionRange",
    "compare_ids",
    "config_from_options",
    "parse_id",
]

SOURCE_NAME = "mqcore"
SCHEMA = (
    "topic string, partition int, id string, key string, payload string, "
    "headers string, timestamp timestamp"
)
PAGE_SIZE = 5000  # XRANGE COUNT per round trip (bounded Redis time per command)
ZERO_ID = "0-0"

Offsets = dict[str, str]


def parse_id(entry_id: str) -> tuple[int, int]:
    """``"ms-seq"`` (or ``"ms"``) as a comparable tuple; InvalidIdError otherwise."""
    ms, _, seq = str(entry_id).partition("-")
    try:
        result = (int(ms), int(seq) if seq else 0)
    except ValueError:
        raise InvalidIdError(f"invalid stream id {entry_id!r}: expected ms-seq") from None
    if result[0] < 0 or result[1] < 0:
        raise InvalidIdError(f"invalid stream id {entry_id!r}: expected ms-seq")
    return result


def compare_ids(a: str, b: str) -> int:
    """-1, 0 or 1 as stream id ``a`` sorts before, equal to or after ``b``."""
    pa, pb = parse_id(a), parse_id(b)
    return (pa > pb) - (pa < pb)


def max_id(a: str, b: str) -> str:
    return a if compare_ids(a, b) >= 0 else b


def config_from_options(options: Mapping[str, str]) -> MQConfig:
    """The MQConfig named by source/sink options (``redis_url`` and optional prefixes)."""
    url = options.get("redis_url")
    if not url:
        raise InvalidArgumentError("option redis_url is required (e.g. redis://host:6379/0)")
    overrides: dict[str, Any] = {}
    for name in ("control_prefix", "stream_prefix"):
        if options.get(name):
            overrides[name] = options[name]
    if str(options.get("cluster", "")).lower() == "true":
        overrides["cluster"] = True
    return MQConfig.from_url(url, **overrides)


def partition_count(client: RedisClient, config: MQConfig, topic: str) -> int:
    """Partitions of a registered topic; UnknownTopicError when it is not registered."""
    keys = config.keys
    if not client.sismember(keys.registry(), topic):
        raise UnknownTopicError(f"unknown topic {topic!r}: it is not in the topic registry")
    raw = client.hget(keys.meta(topic), "partitionCount")
    try:
        count = int(raw) if raw is not None else 1
    except ValueError:
        count = 1
    return max(count, 1)


def last_id(client: RedisClient, key: str) -> str:
    """The last entry id of a stream, ``0-0`` when it is empty or missing."""
    rows = client.xrevrange(key, "+", "-", count=1)
    return decode_text(rows[0][0]) if rows else ZERO_ID


def parse_starting_position(value: str, partitions: int) -> Offsets | str:
    """``earliest`` / ``latest`` or validated JSON offsets; InvalidArgumentError otherwise."""
    text = (value or "earliest").strip()
    if text in ("earliest", "latest"):
        return text
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict):
        raise InvalidArgumentError(
            f"bad startingPosition {value!r}: use earliest, latest or a JSON object "
            '{"<partition>": "<last id>"}'
        )
    offsets: Offsets = {}
    for part, entry_id in raw.items():
        try:
            index = int(part)
        except (TypeError, ValueError):
            index = -1
        if not 0 <= index < partitions:
            raise InvalidArgumentError(
                f"bad startingPosition: partition {part!r} is not in 0..{partitions - 1}"
            )
        try:
            parse_id(str(entry_id))
        except InvalidIdError as exc:
            raise InvalidArgumentError(f"bad startingPosition: {exc}") from None
        offsets[str(index)] = str(entry_id)
    for index in range(partitions):
        offsets.setdefault(str(index), ZERO_ID)
    return offsets


class PartitionRange(InputPartition):
    """One Spark task: entries of one stream partition in ``(start, end]``."""

    def __init__(self, partition: int, start: str, end: str) -> None:
        super().__init__(partition)
        self.partition = partition
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"PartitionRange({self.partition}, {self.start!r}, {self.end!r})"


class MQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans and reads batches of a topic; picklable (its client is not)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.config = config_from_options(options)
        topic = options.get("topic") or ""
        try:
            self.topic = validate_name("topic", topic)
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        self.starting_position = options.get("startingPosition", "earliest") or "earliest"
        raw_max = options.get("maxRecordsPerTrigger")
        self.max_records: int | None = None
        if raw_max not in (None, ""):
            try:
                self.max_records = int(str(raw_max))
            except ValueError:
                self.max_records = 0
            if self.max_records <= 0:
                raise InvalidArgumentError(
                    f"maxRecordsPerTrigger must be a positive integer, got {raw_max!r}"
                )
        self.target: Offsets | None = None
        self._client: RedisClient | None = None
        # Validate eagerly (clear errors at query start, not in a task).
        parse_starting_position(self.starting_position, self._partitions())

    # --- pickling: never ship a client ------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def client(self) -> RedisClient:
        if self._client is None:
            self._client = self.config.client()
        return self._client

    def _partitions(self) -> int:
        return partition_count(self.client, self.config, self.topic)

    def _key(self, partition: int) -> str:
        return self.config.keys.partition(self.topic, partition)

    def _last_ids(self) -> Offsets:
        count = self._partitions()
        pipe = self.client.pipeline(transaction=False)
        for index in range(count):
            pipe.xrevrange(self._key(index), "+", "-", count=1)
        replies = pipe.execute()
        return {
            str(i): (decode_text(rows[0][0]) if rows else ZERO_ID) for i, rows in enumerate(replies)
        }

    # --- offsets ---------------------------------------------------------------
    def initialOffset(self) -> Offsets:
        position = parse_starting_position(self.starting_position, self._partitions())
        if position == "earliest":
            return {str(i): ZERO_ID for i in range(self._partitions())}
        if position == "latest":
            return self._last_ids()
        assert isinstance(position, dict)
        return position

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_records is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._last_ids()

    def reportLatestOffset(self) -> Offsets:
        return self._last_ids()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> Offsets:
        """End offsets of the next batch: everything up to now, bounded by ``limit``."""
        current = {str(k): str(v) for k, v in start.items()}
        latest = self._last_ids() if self.target is None else dict(self.target)
        for part in latest:
            current.setdefault(part, ZERO_ID)
        # A partition ends where data ends, never before its start.
        ceiling = {
            part: (latest[part] if compare_ids(latest.get(part, ZERO_ID), begin) > 0 else begin)
            for part, begin in current.items()
        }
        if not isinstance(limit, ReadMaxRows):
            return ceiling
        return self._bounded(current, ceiling, max(int(limit.max_rows), 1))

    def _bounded(self, start: Offsets, ceiling: Offsets, budget: int) -> Offsets:
        """Advance partitions fairly until ``budget`` entries are covered."""
        end = dict(start)
        open_parts = [p for p in sorted(start, key=int) if compare_ids(ceiling[p], start[p]) > 0]
        while budget > 0 and open_parts:
            share = max(budget // len(open_parts), 1)
            still_open = []
            for part in open_parts:
                if budget <= 0:
                    break
                want = min(share, budget, PAGE_SIZE)
                rows = self.client.xrange(
                    self._key(int(part)), "(" + end[part], ceiling[part], count=want
                )
                if rows:
                    end[part] = decode_text(rows[-1][0])
                    budget -= len(rows)
                if len(rows) == want and compare_ids(end[part], ceiling[part]) < 0:
                    still_open.append(part)
            open_parts = still_open
        return end

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[PartitionRange]:
        ranges = []
        for part in sorted(end, key=int):
            begin = str(start.get(part, ZERO_ID))
            finish = str(end[part])
            if compare_ids(finish, begin) > 0:
                ranges.append(PartitionRange(int(part), begin, finish))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, PartitionRange)
        yield from read_range(self.client, self.config, self.topic, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing: the sinks ack inside their transaction (see module docstring)."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _timestamp(raw: Any) -> datetime | None:
    if raw is None:
        return None
    text = decode_text(raw).strip()
    try:
        if text.isdigit():
            return datetime.fromtimestamp(int(text) / 1000, tz=UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def spark_schema() -> StructType:
    """The source's schema as a StructType (built without a SparkContext)."""
    from pyspark.sql.types import IntegerType, StringType, StructField, TimestampType

    return StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("id", StringType()),
            StructField("key", StringType()),
            StructField("payload", StringType()),
            StructField("headers", StringType()),
            StructField("timestamp", TimestampType()),
        ]
    )


def _arrow_schema() -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema(), timezone="UTC")


def read_range(
    client: RedisClient, config: MQConfig, topic: str, part: PartitionRange
) -> Iterator[Any]:
    """Arrow record batches of ``(start, end]`` of one partition, one per XRANGE page."""
    import pyarrow as pa

    schema = _arrow_schema()
    key = config.keys.partition(topic, part.partition)
    cursor = part.start
    while compare_ids(cursor, part.end) < 0:
        rows = client.xrange(key, "(" + cursor, part.end, count=PAGE_SIZE)
        if not rows:
            return
        cols: dict[str, list[Any]] = {name: [] for name in schema.names}
        for raw_id, fields in rows:
            cols["topic"].append(topic)
            cols["partition"].append(part.partition)
            cols["id"].append(decode_text(raw_id))
            key_value = fields.get(b"key")
            cols["key"].append(decode_text(key_value) if key_value not in (None, b"") else None)
            payload = fields.get(b"payload")
            cols["payload"].append(decode_text(payload) if payload is not None else None)
            headers = fields.get(b"headers")
            cols["headers"].append(decode_text(headers) if headers is not None else "{}")
            cols["timestamp"].append(_timestamp(fields.get(b"timestamp")))
        yield pa.RecordBatch.from_pydict(cols, schema=schema)
        cursor = decode_text(rows[-1][0])
        if len(rows) < PAGE_SIZE:
            return


class MQDataSource(DataSource):
    """``spark.readStream.format("mqcore")``: see the module docstring for options."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> MQStreamReader:
        return MQStreamReader(self.options)
