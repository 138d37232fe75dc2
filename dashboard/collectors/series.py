"""The series a collector pass records: their metric names and the partition sample's
cadence (charts read them back by these names). The points themselves are derived with the
rest of a pass, in :mod:`dashboard.collectors.derive`.
"""

from __future__ import annotations

__all__ = [
    "GROUP_METRICS",
    "MEMORY_METRIC",
    "PARTITION_METRIC",
    "PARTITION_PRODUCED_METRIC",
    "PARTITION_SAMPLE_MS",
    "TOPIC_METRICS",
]

TOPIC_METRICS = (
    "lag",
    "lag_ms",
    "pending",
    "oldest_pending_ms",
    "dlq_length",
    "length",
    "retry_count",
    "produced_total",
)
GROUP_METRICS = ("lag", "lag_ms", "pending", "consumed_total")
# per-partition lag, entity "topic/group/partition": sampled once a minute, not every pass
# (one series per partition would otherwise double a big deployment's writes)
PARTITION_METRIC = "partition_lag"
# per-partition produced counter, entity "topic/partition", sampled with partition_lag:
# the partition skew of the topic page is its rate per partition
PARTITION_PRODUCED_METRIC = "partition_produced_total"
# bytes of a topic's partition streams (MEMORY USAGE), entity "topic": a rotating share of
# the topics once a minute (dashboard.collectors.derive.memory_pass)
MEMORY_METRIC = "memory_bytes"
PARTITION_SAMPLE_MS = 60_000
