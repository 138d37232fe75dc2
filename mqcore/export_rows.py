"""The rows of an export, one shape for the console's exports and the command line's
``--format csv``: lag per group and partition, pending entries, dead letters.

Each ``*_COLUMNS`` names the columns in order; each ``*_row`` turns one mqcore value
into a plain dict with exactly those keys (headers stay a mapping: a CSV writes it as
compact JSON, see :func:`csv_cell`). Masking is the console's business, not this one's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from mqcore.csvsafe import csv_lines
from mqcore.models import DlqLetter, GroupLag, PendingEntry

__all__ = [
    "DLQ_COLUMNS",
    "LAG_COLUMNS",
    "PENDING_COLUMNS",
    "csv_cell",
    "csv_row_lines",
    "lag_rows",
    "letter_row",
    "pending_row",
]

LAG_COLUMNS = (
    "group",
    "partition",
    "lag",
    "lag_ms",
    "pending",
    "exactness",
    "lag_reason",
    "oldest_pending_ms",
    "entries_read",
    "length",
    "last_delivered_id",
    "last_id",
)
PENDING_COLUMNS = ("partition", "id", "consumer", "idle_ms", "deliveries")
DLQ_COLUMNS = (
    "id",
    "partition",
    "original_topic",
    "original_id",
    "key",
    "retry_count",
    "max_retries",
    "failed_at",
    "timestamp",
    "headers",
    "payload",
    "payload_hex",
)


def lag_rows(groups: Sequence[GroupLag]) -> Iterator[dict[str, Any]]:
    """One row per group and partition, groups in the order given."""
    for g in groups:
        for p in g.partitions:
            yield {
                "group": g.group,
                "partition": p.partition,
                "lag": p.lag,
                "lag_ms": p.lag_ms,
                "pending": p.pending,
                "exactness": str(p.exactness.value),
                "lag_reason": p.lag_reason,
                "oldest_pending_ms": p.oldest_pending_ms,
                "entries_read": p.entries_read,
                "length": p.length,
                "last_delivered_id": p.last_delivered_id,
                "last_id": p.last_id,
            }


def pending_row(e: PendingEntry) -> dict[str, Any]:
    return {
        "partition": e.partition,
        "id": e.id,
        "consumer": e.consumer,
        "idle_ms": e.idle_ms,
        "deliveries": e.deliveries,
    }


def letter_row(letter: DlqLetter) -> dict[str, Any]:
    """A letter's row: text payloads as ``payload``, binary ones as ``payload_hex``; one kept
    undecoded (too large, the page's budget) as its marker in brackets."""
    binary = letter.payload_bytes is not None
    shown = f"[{letter.undecoded}]" if letter.undecoded is not None else letter.payload
    return {
        "id": letter.id,
        "partition": letter.partition,
        "original_topic": letter.original_topic,
        "original_id": letter.original_id,
        "key": letter.key,
        "retry_count": letter.retry_count,
        "max_retries": letter.max_retries,
        "failed_at": letter.failed_at,
        "timestamp": letter.timestamp,
        "headers": dict(letter.headers),
        "payload": "" if binary else shown,
        "payload_hex": letter.payload_bytes.hex() if letter.payload_bytes is not None else None,
    }


def csv_cell(value: Any) -> Any:
    """A row value as a CSV cell: a mapping (headers) as compact JSON, the rest as is."""
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def csv_row_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The CSV of export rows, line by line (a generator): the header, then each row's
    ``columns`` as :func:`csv_cell` values through the formula-safe writer."""
    return csv_lines(columns, ([csv_cell(row.get(c)) for c in columns] for row in rows))
