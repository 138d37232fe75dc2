"""What became of one message: its delivery state per group, its retries, its dead letter.

Every lookup is bounded and says whether it saw everything:

- per group (at most :data:`MAX_GROUPS`, from ``XINFO GROUPS`` of the partition):
  ``not_delivered`` (the id is after the group's last-delivered id), ``pending``
  (``XPENDING key group id id 1``: with the consumer holding it, deliveries and idle
  time) or ``acked`` (delivered and no longer pending);
- retries: a failed message goes to the topic's retry set and comes back as a new
  entry carrying ``originalMessageId`` (the entry it came from) and the header
  ``x-original-message-id`` (the first entry of the chain). The *root* is that first
  id; the retry set's first :data:`RETRY_ITEMS` items of its partition (read by the
  retry browser, :mod:`mqcore.retries.browse`) and at
  most :data:`RETRY_SCAN` entries of the partition after the message (``XRANGE``
  pages sized by bytes, :class:`mqcore.range_reader.RangeReader`) are searched;
- dead letters: at most :data:`DLQ_SCAN` letters of the topic's DLQ from the root's
  time on (a letter is always newer than its message), matched by their
  ``originalMessageId`` (an id of the chain) or ``x-original-message-id`` header
  and their partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis

from mqcore.admin.shapes import entry_int
from mqcore.boundary import redis_errors
from mqcore.clock import now_ms
from mqcore.codec import (
    DecodeBudget,
    decode_fields,
    decode_text,
    id_ms,
    id_tuple,
    parse_headers,
    validate_id,
)
from mqcore.dlq.letters import letter_from_entry
from mqcore.errors import InvalidIdError
from mqcore.models import Message
from mqcore.range_reader import RangeReader
from mqcore.retries.browse import RetryFilter
from mqcore.retries.browse import read_page as read_retry_page

if TYPE_CHECKING:
    from mqcore.admin import Admin

__all__ = [
    "DLQ_SCAN",
    "MAX_GROUPS",
    "ORIGINAL_HEADER",
    "RETRY_ITEMS",
    "RETRY_SCAN",
    "MessageTrace",
    "message_trace",
]

MAX_GROUPS = 100
RETRY_ITEMS = 200
RETRY_SCAN = 2_000
DLQ_SCAN = 5_000
ORIGINAL_HEADER = "x-original-message-id"


@dataclass(frozen=True)
class MessageTrace:
    """See the module docstring; every list holds plain JSON-friendly dicts."""

    root_id: str  # the first entry of the message's retry chain (its own id when it is the first)
    previous_id: str | None  # the entry this one was retried from, if it is a retry
    groups: list[dict[str, Any]] = field(default_factory=list)
    groups_complete: bool = True
    retries: list[dict[str, Any]] = field(default_factory=list)  # re-added entries
    retries_scanned: int = 0
    retries_complete: bool = True
    scheduled: list[dict[str, Any]] = field(default_factory=list)  # items in the retry set
    scheduled_scanned: int = 0
    scheduled_complete: bool = True
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    dlq_scanned: int = 0
    dlq_complete: bool = True


def _stream_id(value: str | None) -> str | None:
    """``value`` when it is a stream id (these fields are written by producers: untrusted)."""
    if not value:
        return None
    try:
        return validate_id(value)
    except InvalidIdError:
        return None


def _chain_ids(message: Message) -> tuple[str, str | None]:
    previous = _stream_id(message.fields.get("originalMessageId"))
    root = _stream_id(message.headers.get(ORIGINAL_HEADER)) or previous or message.id
    return root, previous


def _group_states(admin: Admin, key: str, entry_id: str) -> tuple[list[dict[str, Any]], bool]:
    with redis_errors("read the message's groups"):
        try:
            infos = admin.client.xinfo_groups(key)
        except redis.ResponseError:
            infos = []
        infos = sorted(infos, key=lambda g: decode_text(g.get("name")))
        shown = infos[:MAX_GROUPS]
        pipe = admin.client.pipeline(transaction=False)
        for g in shown:
            pipe.xpending_range(key, decode_text(g.get("name")), entry_id, entry_id, 1)
        pending = pipe.execute(raise_on_error=False)
    me = id_tuple(entry_id)
    out: list[dict[str, Any]] = []
    for g, pel in zip(shown, pending, strict=True):
        last = decode_text(g.get("last-delivered-id")) or "0-0"
        row: dict[str, Any] = {"group": decode_text(g.get("name")), "last_delivered_id": last}
        if isinstance(pel, list) and pel:
            p = pel[0]
            row.update(
                state="pending",
                consumer=decode_text(p.get("consumer")),
                deliveries=int(p.get("times_delivered") or 0),
                idle_ms=int(p.get("time_since_delivered") or 0),
            )
        elif id_tuple(last) >= me:
            row["state"] = "acked"
        else:
            row["state"] = "not_delivered"
        out.append(row)
    return out, len(infos) <= MAX_GROUPS


def _readded(admin: Admin, key: str, message: Message, root: str) -> tuple[list[Any], int, bool]:
    found: list[dict[str, Any]] = []
    reader = RangeReader(admin.client, key, "(" + message.id, RETRY_SCAN, "read retries")
    for entries in reader:
        for entry_id, raw in entries:
            fields = decode_fields(raw)
            origin = decode_text(fields.get("originalMessageId"))
            if not origin:
                continue
            headers = parse_headers(fields.get("headers"))
            if root in (origin, headers.get(ORIGINAL_HEADER)):
                found.append(
                    {
                        "id": decode_text(entry_id),
                        "retried_from": origin,
                        "retry_count": entry_int(fields.get("retryCount"), 0),
                    }
                )
    return found, reader.scanned, reader.ended


def _scheduled(
    admin: Admin, message: Message, root: str, ids: set[str]
) -> tuple[list[Any], int, bool]:
    """Items of the retry set for the chain: the first :data:`RETRY_ITEMS` of the message's
    partition by due time, read and decoded by the retry browser (Java's Kryo items too)."""
    page = read_retry_page(
        admin.client,
        admin.keys,
        message.topic,
        flt=RetryFilter(partition=message.partition),
        now_ms=now_ms(),
        limit=RETRY_ITEMS,
        max_scan=RETRY_ITEMS,
        budget=DecodeBudget.no_payloads(admin.config.max_decode_bytes),  # ids and headers only
    )
    found = [
        {
            "item": item.id,
            "retried_from": item.original_id or "",
            "retry_count": item.retry_count or 0,
            "partition": item.partition,
            "due_at_ms": item.due_ms,
        }
        for item in page.items
        if item.original_id in ids or item.headers.get(ORIGINAL_HEADER) == root
    ]
    return found, page.scanned, page.complete


def _dead_letters(
    admin: Admin, topic: str, partition: int, root: str, ids: set[str]
) -> tuple[list[Any], int, bool]:
    found: list[dict[str, Any]] = []
    dlq = admin.keys.dlq(topic)
    reader = RangeReader(admin.client, dlq, f"{id_ms(root)}-0", DLQ_SCAN, "read the DLQ")
    headers_only = DecodeBudget.no_payloads(admin.config.max_decode_bytes)
    for entries in reader:
        for entry_id, raw in entries:
            letter = letter_from_entry(entry_id, raw, headers_only)
            if letter.partition != partition:
                continue
            if letter.original_id in ids or letter.headers.get(ORIGINAL_HEADER) == root:
                found.append(
                    {
                        "id": letter.id,
                        "original_id": letter.original_id,
                        "retry_count": letter.retry_count,
                        "failed_at": letter.failed_at,
                    }
                )
    return found, reader.scanned, reader.ended


def message_trace(admin: Admin, message: Message) -> MessageTrace:
    """The trace of ``message`` (as :meth:`Admin.message` returns it; see the module docstring)."""
    key = admin.keys.partition(message.topic, message.partition)
    root, previous = _chain_ids(message)
    groups, groups_complete = _group_states(admin, key, message.id)
    retries, retries_scanned, retries_complete = _readded(admin, key, message, root)
    ids = {root, message.id, *(r["id"] for r in retries)}
    if previous:
        ids.add(previous)
    scheduled, scheduled_scanned, scheduled_complete = _scheduled(admin, message, root, ids)
    letters, dlq_scanned, dlq_complete = _dead_letters(
        admin, message.topic, message.partition, root, ids
    )
    return MessageTrace(
        root_id=root,
        previous_id=previous,
        groups=groups,
        groups_complete=groups_complete,
        retries=retries,
        retries_scanned=retries_scanned,
        retries_complete=retries_complete,
        scheduled=scheduled,
        scheduled_scanned=scheduled_scanned,
        scheduled_complete=scheduled_complete,
        dead_letters=letters,
        dlq_scanned=dlq_scanned,
        dlq_complete=dlq_complete,
    )
