"""One partition entry as a :class:`~mqcore.models.Message`, from its decoded fields (the
lease, consumer and retry views are built where the snapshot builds them:
:mod:`mqcore.snapshot.shapes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqcore.codec import DecodeBudget, Undecoded, decode_text, payload_within
from mqcore.models import Message

__all__ = ["entry_int", "message_of"]


def entry_int(raw: Any, default: int) -> int:
    """An integer entry field (``retryCount``, ``maxRetries``), ``default`` when unreadable."""
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def message_of(
    topic: str,
    partition: int,
    entry_id: str,
    fields: Mapping[str, bytes],
    headers: dict[str, str],
    raw_payload: bytes | None,
    *,
    with_fields: bool = True,
    budget: DecodeBudget | None = None,
    undecoded: Undecoded | None = None,
) -> Message:
    """A partition entry as a :class:`Message` from its decoded ``fields`` and ``headers``
    (``raw_payload``: the stored or resolved payload); ``with_fields`` keeps every raw field
    (one over ``budget``'s cap as its marker). ``budget``: the page's decode limits (a
    payload over them is kept undecoded); ``undecoded``: a payload already known too large."""
    if undecoded is not None:
        text, binary = "", None
    else:
        text, binary, undecoded = payload_within(raw_payload, budget)
    key = fields.get("key")
    return Message(
        topic=topic,
        partition=partition,
        id=entry_id,
        payload=text,
        payload_bytes=binary,
        key=decode_text(key) if key else None,
        headers=headers,
        timestamp=decode_text(fields.get("timestamp")),
        retry_count=entry_int(fields.get("retryCount"), 0),
        max_retries=entry_int(fields.get("maxRetries"), 3),
        fields={k: _field_text(v, budget) for k, v in fields.items()} if with_fields else {},
        undecoded=undecoded,
    )


def _field_text(raw: bytes, budget: DecodeBudget | None) -> str:
    if budget is not None and not budget.fits(len(raw)):
        return f"[{Undecoded(len(raw))}]"
    return decode_text(raw)
