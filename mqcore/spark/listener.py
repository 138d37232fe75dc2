"""A StreamingQueryListener that adds Spark's duration breakdown to checkpoint records.

Progress events arrive after a batch finished (the sink has already written
its record), so the listener only enriches existing records and never creates
one. Its Redis client is created on first use, in the driver.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig

__all__ = ["CheckpointListener", "iso_to_ms"]


def iso_to_ms(text: str) -> int:
    """Spark's progress timestamp (``2024-01-01T00:00:00.000Z``) as epoch ms."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


class CheckpointListener(StreamingQueryListener):
    """Records ``durationMs`` (addBatch, latestOffset, walCommit...) per batch."""

    def __init__(self, config: MQConfig) -> None:
        super().__init__()
        self.config = config
        self._store: CheckpointStore | None = None
        self._queries: dict[str, str] = {}  # query name -> pipeline checkpoint name

    def watch(self, query_name: str, pipeline: str) -> None:
        self._queries[query_name] = pipeline

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = CheckpointStore(self.config)
        return self._store

    def onQueryStarted(self, event: Any) -> None:
        """Nothing to record: batches are planned by the sinks."""

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        pipeline = self._queries.get(progress.name or "")
        if pipeline is None or (
            progress.numInputRows == 0 and not progress.durationMs.get("addBatch")
        ):
            return
        durations = {str(k): int(v) for k, v in (progress.durationMs or {}).items()}
        self.store.record_progress(
            pipeline,
            int(progress.batchId),
            durations=durations,
            trigger_at_ms=iso_to_ms(progress.timestamp),
        )

    def onQueryIdle(self, event: Any) -> None:
        """Idle triggers run no batch."""

    def onQueryTerminated(self, event: Any) -> None:
        """Failures are recorded per batch by the sinks."""
