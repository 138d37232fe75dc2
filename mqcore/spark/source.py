"""The ``mqcore`` PySpark streaming data source: a topic's partitions as a stream.

Offsets are ``{"<partition>": "<last id>"}``: the start offset is exclusive
and the end offset inclusive, so a batch reads ``XRANGE p (start end``. A
partition added while a query runs appears with start ``0-0``. The source does
nothing in :meth:`MQStreamReader.commit` on purpose: acks and progress are
recorded by the exactly-once sinks inside their own transaction (Spark calls
``commit`` a batch late and skips it on ``Trigger.AvailableNow``).

Options: ``redis_url`` (required; a ``redis+sentinel://`` URL follows the master, see
:mod:`mqcore.sentinel`), ``topic`` (required), ``group`` (the pipeline's consumer group,
moved by the sinks: where it sits at a batch's start, its lag tells whether the whole
backlog fits the read limit, so the batch is not counted in Redis; while the query runs,
the driver holds the lease of every partition for it,
:class:`~mqcore.lease_keeper.LeaseKeeper`, so Java's housekeeper counts the pipeline as
a live group and trims nothing it has not committed; Java ignores a stopped pipeline's
group, which nothing here can change), ``startingPosition`` (``earliest`` | ``latest`` |
a JSON offsets object), ``maxRecordsPerTrigger`` (admission control via ``ReadMaxRows``;
default :data:`DEFAULT_MAX_RECORDS`: a batch takes what arrived since the last one, up
to that many, so a backlog drains in large batches and a caught-up stream runs in small
ones; ``all`` for no bound), ``readTasks`` (Spark tasks per batch; the partitions'
ranges are dealt among them; default one per partition; the pipelines pass the cluster's
default parallelism), ``control_prefix`` / ``stream_prefix`` / ``cluster`` (``true`` for
Redis Cluster) / ``encoding`` (``MQConfig.encoding``).

Readers are pickled to executors; Redis clients are created lazily where they
are used and never pickled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from mqcore.admin.partitions import last_ids
from mqcore.codec import decode_text
from mqcore.config import MQConfig, RedisClient
from mqcore.errors import InvalidArgumentError, InvalidIdError, UnknownTopicError
from mqcore.keys import validate_name
from mqcore.lease_keeper import LeaseKeeper
from mqcore.scripts import call_script
from mqcore.spark.read import ReadTask, read_task

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "SCHEMA",
    "MQDataSource",
    "MQStreamReader",
    "Offsets",
    "ReadTask",
    "compare_ids",
    "config_from_options",
    "parse_id",
    "positive_option",
]

SOURCE_NAME = "mqcore"
SCHEMA = (
    "topic string, partition int, id string, key string, payload string, "
    "headers string, timestamp timestamp"
)
DEFAULT_MAX_RECORDS = 500_000  # entries per batch at most, unless maxRecordsPerTrigger says
SEEK_PER_CALL = 250  # entries one planning script call steps over (~1.2 ms, six-field entries)
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
    """The MQConfig named by source/sink options (``redis_url``, optional prefixes, and
    ``encoding``: the deployment's, ``java-kryo`` where a Java service shares it, so the
    commit frontier is written as Java's housekeeper reads it)."""
    url = options.get("redis_url")
    if not url:
        raise InvalidArgumentError("option redis_url is required (e.g. redis://host:6379/0)")
    overrides: dict[str, Any] = {}
    for name in ("control_prefix", "stream_prefix", "encoding"):
        if options.get(name):
            overrides[name] = options[name]
    if str(options.get("cluster", "")).lower() == "true":
        overrides["cluster"] = True
    try:
        return MQConfig.from_url(url, **overrides)
    except ValueError as exc:
        raise InvalidArgumentError(f"bad option: {exc}") from None


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


def _open_parts(start: Offsets, ceiling: Offsets) -> list[str]:
    """Partitions with entries after ``start`` up to ``ceiling``, in partition order."""
    return [p for p in sorted(start, key=int) if compare_ids(ceiling[p], start[p]) > 0]


def positive_option(option: str, raw: str) -> int:
    """A data source option that must be a positive integer, or InvalidArgumentError."""
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidArgumentError(f"{option} must be a positive integer, got {raw!r}")
    return value


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
        raw_max = str(options.get("maxRecordsPerTrigger") or DEFAULT_MAX_RECORDS).strip()
        self.max_records = (
            None if raw_max == "all" else positive_option("maxRecordsPerTrigger", raw_max)
        )
        self.group = str(options.get("group") or "")
        raw_tasks = str(options.get("readTasks") or "").strip()
        self.read_tasks = positive_option("readTasks", raw_tasks) if raw_tasks else None
        self.target: Offsets | None = None
        self._client: RedisClient | None = None
        self._keeper: LeaseKeeper | None = None
        # Validate eagerly (clear errors at query start, not in a task).
        parse_starting_position(self.starting_position, self._partitions())

    # --- pickling: never ship a client ------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        state["_keeper"] = None
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

    def _keep_leases(self) -> None:
        """Hold the pipeline group's leases while the query runs (driver only: the offset
        calls run there; :meth:`stop` releases them, a dead driver's expire)."""
        if self.group and self._keeper is None:
            self._keeper = LeaseKeeper(self.config, topic=self.topic, group=self.group)
            self._keeper.start()

    def _last_ids(self) -> Offsets:
        found = last_ids(self.client, self.config.keys, self.topic, range(self._partitions()))
        return {str(p): found[p] for p in found}

    # --- offsets ---------------------------------------------------------------
    def initialOffset(self) -> Offsets:
        self._keep_leases()
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
        self._keep_leases()
        self.target = self._last_ids()

    def reportLatestOffset(self) -> Offsets:
        return self._last_ids()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> Offsets:
        """End offsets of the next batch: everything up to now, bounded by ``limit``."""
        self._keep_leases()
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
        budget = max(int(limit.max_rows), 1)
        waiting = self._lag_bound(current, ceiling)
        if waiting is not None and waiting <= budget:
            return ceiling  # all of it fits: no need to count
        return self._bounded(current, ceiling, budget)

    def _lag_bound(self, start: Offsets, ceiling: Offsets) -> int | None:
        """Entries after ``start`` in all, from the pipeline group's lag where the group sits
        exactly at ``start`` (the sinks move it there at each commit); None when unknown."""
        parts = _open_parts(start, ceiling)
        if not parts:
            return 0
        if not self.group:
            return None
        pipe = self.client.pipeline(transaction=False)
        for part in parts:
            pipe.xinfo_groups(self._key(int(part)))
        total = 0
        for part, groups in zip(parts, pipe.execute(raise_on_error=False), strict=True):
            mine = (
                next((g for g in groups if decode_text(g.get("name")) == self.group), None)
                if isinstance(groups, list)
                else None
            )
            if mine is None or mine.get("lag") is None:
                return None
            if decode_text(mine.get("last-delivered-id")) != start[part]:
                return None
            total += int(mine["lag"])
        return total

    def _bounded(self, start: Offsets, ceiling: Offsets, budget: int) -> Offsets:
        """Advance partitions fairly until ``budget`` entries are covered (counted in Redis)."""
        end = dict(start)
        open_parts = _open_parts(start, ceiling)
        while budget > 0 and open_parts:
            share, left = max(budget // len(open_parts), 1), budget
            wants: dict[str, int] = {}
            for part in open_parts:
                if left <= 0:
                    break
                wants[part] = min(share, left)
                left -= wants[part]
            stepped = self._seek(end, ceiling, wants)
            budget -= sum(stepped.values())
            open_parts = [
                part
                for part in open_parts
                if part not in wants
                or (stepped[part] == wants[part] and compare_ids(end[part], ceiling[part]) < 0)
            ]
        return end

    def _seek(self, end: Offsets, ceiling: Offsets, wants: dict[str, int]) -> dict[str, int]:
        """Move ``end`` of each partition in ``wants`` over that many entries (fewer at its
        ceiling); entries stepped over per partition. Bounded script calls (SEEK_PER_CALL)."""
        stepped = dict.fromkeys(wants, 0)
        todo = dict(wants)
        while todo:
            order = list(todo)
            args: list[Any] = [SEEK_PER_CALL]
            for part in order:
                args += (end[part], ceiling[part], todo[part])
            replies = call_script(
                self.client, "stream_seek", [self._key(int(p)) for p in order], args
            )
            for part, (last, n, asked) in zip(order, replies, strict=True):
                n, asked = int(n), int(asked)
                if last:
                    end[part] = decode_text(last)
                stepped[part] += n
                todo[part] -= n
                if asked and (n < asked or todo[part] <= 0):
                    del todo[part]
        return stepped

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[ReadTask]:
        """The batch's ranges, dealt round-robin into at most ``readTasks`` Spark tasks."""
        ranges = []
        for part in sorted(end, key=int):
            begin = str(start.get(part, ZERO_ID))
            finish = str(end[part])
            if compare_ids(finish, begin) > 0:
                ranges.append((int(part), begin, finish))
        count = min(len(ranges), self.read_tasks or len(ranges))
        return [ReadTask(i, ranges[i::count]) for i in range(count)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, ReadTask)
        yield from read_task(self.client, self.config, self.topic, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing: the sinks ack inside their transaction (see module docstring)."""

    def stop(self) -> None:
        if self._keeper is not None:
            self._keeper.stop()
            self._keeper = None
        if self._client is not None:
            self._client.close()
            self._client = None


class MQDataSource(DataSource):
    """``spark.readStream.format("mqcore")``: see the module docstring for options."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> MQStreamReader:
        return MQStreamReader(self.options)
