"""The executor side of the Spark source: entries of partition ranges as Arrow batches.

One Spark task reads several partitions (:class:`ReadTask`): every round trip
asks each open partition for its next XRANGE page at once (mqcore.wire: raw
replies, no per-entry redis-py callbacks), and every :data:`BATCH_ROWS` entries
of a partition (two pages) become one Arrow record batch built column by column.
Arrow validates the UTF-8 of whole columns and parses the timestamps (epoch ms
as mqcore writes them, ISO-8601 as Java does); only a column with odd values is
decoded value by value, the way the rest of mqcore decodes text (invalid bytes
replaced).

Headers go through the one header rule (:func:`mqcore.codec.parse_headers`)
and are handed over as compact JSON. An out-of-line payload (Java's
``x-payload-*`` headers, or mqcore's own large payloads) is read from its key
with the bounds and the own-partition check of :mod:`mqcore.payloads`; a gone
or refused reference leaves the payload null and says why in the headers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import InputPartition

from mqcore.codec import decode_text, parse_headers
from mqcore.config import MQConfig, RedisClient
from mqcore.payloads import PAYLOAD_HASH_REF, fetch_payload, is_out_of_line
from mqcore.wire import Wire

__all__ = ["BATCH_ROWS", "PAGE_SIZE", "ReadTask", "arrow_schema", "read_task", "spark_schema"]

PAGE_SIZE = 500  # XRANGE COUNT per partition and round trip: ~0.45 ms of Redis time (1000: ~0.9)
BATCH_ROWS = 1000  # entries of one Arrow batch (a partition's pages are joined up to this)
_REF_MARK = PAYLOAD_HASH_REF.encode()
_EMPTY_HEADERS = "{}"


class ReadTask(InputPartition):
    """One Spark task: the entries ``(start, end]`` of each of some partitions."""

    def __init__(self, index: int, ranges: Sequence[tuple[int, str, str]]) -> None:
        super().__init__(index)
        self.ranges = [(int(p), str(s), str(e)) for p, s, e in ranges]

    def __repr__(self) -> str:
        return f"ReadTask({self.value}, {self.ranges!r})"


def spark_schema() -> Any:
    """The source's schema as a StructType (built without a SparkContext)."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampType

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


def arrow_schema() -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema(), timezone="UTC")


def read_task(client: RedisClient, config: MQConfig, topic: str, task: ReadTask) -> Iterator[Any]:
    """Arrow record batches of every range of ``task``, one per partition page."""
    schema = arrow_schema()
    wire = Wire(client, batch=len(task.ranges), what="spark source read")
    keys = {p: config.keys.partition(topic, p) for p, _s, _e in task.ranges}
    cursors = {p: start for p, start, _e in task.ranges}
    ends = {p: end for p, _s, end in task.ranges}
    builder = _Columns(client, config, topic)
    held: dict[int, list[Any]] = {}  # pages of a partition not yet in a batch
    while cursors:
        order = list(cursors)
        replies = wire.run(
            [("XRANGE", keys[p], "(" + cursors[p], ends[p], "COUNT", PAGE_SIZE) for p in order]
        )
        for part, rows in zip(order, replies, strict=True):
            if isinstance(rows, Exception):
                raise rows
            if rows:
                held.setdefault(part, []).extend(rows)
                cursors[part] = decode_text(rows[-1][0])
            done = len(rows) < PAGE_SIZE or cursors[part] == ends[part]
            if done:
                del cursors[part]
            if part in held and (done or len(held[part]) >= BATCH_ROWS):
                yield builder.batch(schema, part, held.pop(part))


class _Columns:
    """Builds one Arrow batch from a page of raw XRANGE rows."""

    def __init__(self, client: RedisClient, config: MQConfig, topic: str) -> None:
        self.client = client
        self.config = config
        self.topic = topic
        self._headers: dict[bytes, str] = {}  # raw headers -> handed-over text (most repeat)

    def batch(self, schema: Any, part: int, rows: list[Any]) -> Any:
        import pyarrow as pa

        ids: list[Any] = []
        keys: list[Any] = []
        payloads: list[Any] = []
        headers: list[str] = []
        stamps: list[Any] = []
        refs: list[int] = []
        known = self._headers
        for i, (raw_id, flat) in enumerate(rows):
            if isinstance(flat, dict):  # a pipeline's parsed reply (Redis Cluster)
                fields = flat
            else:
                pairs = iter(flat)
                fields = dict(zip(pairs, pairs, strict=False))
            ids.append(raw_id)
            key = fields.get(b"key")
            keys.append(key or None)
            payload = fields.get(b"payload")
            payloads.append(payload)
            raw_headers = fields.get(b"headers")
            if raw_headers is None:
                headers.append(_EMPTY_HEADERS)
            else:
                text = known.get(raw_headers)
                if text is None:
                    text = self._header_text(raw_headers)
                headers.append(text)
                if _REF_MARK in raw_headers:
                    refs.append(i)
            stamps.append(fields.get(b"timestamp"))
        for i in refs:
            payloads[i], headers[i] = self._out_of_line(part, payloads[i], headers[i])
        n = len(ids)
        return pa.RecordBatch.from_arrays(
            [
                pa.array([self.topic] * n, pa.string()),
                pa.array([part] * n, pa.int32()),
                _text(ids),
                _text(keys),
                _text(payloads),
                pa.array(headers, pa.string()),
                _timestamps(stamps),
            ],
            schema=schema,
        )

    def _header_text(self, raw: bytes) -> str:
        parsed = parse_headers(raw)
        text = json.dumps(parsed, ensure_ascii=False, separators=(",", ":")) if parsed else "{}"
        if len(self._headers) < 10_000:
            self._headers[raw] = text
        return text

    def _out_of_line(self, part: int, payload: Any, header_text: str) -> tuple[Any, str]:
        headers = json.loads(header_text)
        if not is_out_of_line(headers, payload):
            return payload, header_text
        prefix = self.config.keys.payload_prefix(self.topic, part)
        value, headers = fetch_payload(self.client, headers, prefix=prefix)
        text = json.dumps(headers, ensure_ascii=False, separators=(",", ":"))
        if value is None:
            return None, text
        return value, text


def _text(values: list[Any]) -> Any:
    """A string column of bytes/str/None values: Arrow checks UTF-8 for the whole column;
    a column with invalid bytes is decoded value by value (invalid bytes replaced)."""
    import pyarrow as pa

    try:
        return pa.array(values, pa.binary()).cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else decode_text(v) for v in values], pa.string())


def _timestamps(values: list[Any]) -> Any:
    """Entry timestamps: epoch ms (mqcore) or ISO-8601 (Java); None where unreadable."""
    import pyarrow as pa
    import pyarrow.compute as pc

    target = pa.timestamp("us", tz="UTC")
    column = _text(values)
    try:
        millis = pc.cast(column, pa.int64())
        return pc.multiply_checked(millis, 1000).cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:
        return pc.cast(column, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([_timestamp(v) for v in column.to_pylist()], target)


def _timestamp(text: str | None) -> datetime | None:
    if text is None:
        return None
    text = text.strip()
    try:
        if text.isdigit():
            return datetime.fromtimestamp(int(text) / 1000, tz=UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
