"""Exactly-once sinks for pipelines that keep keyed sums (docs/checkpoints.md).

1. :class:`RedisAtomicSink` (``foreachBatch``, :mod:`.atomic`): the batch's
   increments, the committed-batch marker, the pipeline group's position and
   the checkpoint record in ONE Lua script; a replayed batch id is skipped.
2. :class:`TwoPhaseSinkSource` (``format("mqcore_2pc")``, :mod:`.two_phase`):
   tasks stage their increments under keys with the run id (TTL); ``commit``
   applies the staged hashes atomically with the marker; ``abort`` deletes them.
3. :class:`SqlSink` (``foreachBatch``, :mod:`.sql`): upsert keyed by (partition,
   message id) plus the batch marker row in one database transaction (SQLite or
   PostgreSQL); the Redis checkpoint and group position follow idempotently.

What they share (plan, summary, commit with the marker, the named
:data:`CRASH_POINTS` and the optional :data:`CrashHook` called there) is in
:mod:`.protocol`. Reading what the sinks stored needs no Spark:
:mod:`mqcore.sinkstate` (re-exported here: :class:`SqlDatabase`, :func:`sql_totals`).
"""

from mqcore.commit_journal import DEFAULT_STAGE_TTL_S
from mqcore.sinkstate import SqlDatabase, sql_totals
from mqcore.spark.sinks.atomic import AtLeastOnceRedisSink, RedisAtomicSink
from mqcore.spark.sinks.protocol import (
    CRASH_POINTS,
    BatchSummary,
    CrashHook,
    SinkContext,
    no_crash,
)
from mqcore.spark.sinks.sql import SqlSink
from mqcore.spark.sinks.two_phase import TwoPhaseSinkSource

__all__ = [
    "CRASH_POINTS",
    "DEFAULT_STAGE_TTL_S",
    "AtLeastOnceRedisSink",
    "BatchSummary",
    "CrashHook",
    "RedisAtomicSink",
    "SinkContext",
    "SqlDatabase",
    "SqlSink",
    "TwoPhaseSinkSource",
    "no_crash",
    "sql_totals",
]
