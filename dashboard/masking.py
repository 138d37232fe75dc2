"""The one masking policy for message data of sensitive topics.

A user who may not see a topic's payloads (``permissions.payload_visible`` is
False: the topic is marked sensitive and the role lacks "view payloads") gets,
on every page, partial, API answer and export:

- the payload replaced by :data:`MASK` (no text, no JSON, no hex, no size hint
  beyond the stored size);
- every header *value* replaced by :data:`MASK`; header *names* stay visible,
  since they describe the shape of the message, not its data;
- the raw ``payload`` and ``headers`` fields replaced by :data:`MASK`.

Message *keys* stay visible everywhere (the browser, the message page, DLQ and retry
pages, exports, the hot-keys sample of the partitions view): like header names they
route and describe messages; a filter by key is allowed. Keep secrets out of keys.

Searches must not see more than the user does: a text filter over payloads and
headers is refused for such users (:func:`check_text_filter`), otherwise the
filter's answers would leak a masked payload one probe at a time. The message
browser refuses the same way every filter that reads payloads or header values
(:func:`check_data_filter`: text, ``NAME=VALUE``, an expression over them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mqcore.models import Message

__all__ = [
    "MASK",
    "MaskedSearchError",
    "check_data_filter",
    "check_text_filter",
    "mask_fields",
    "mask_headers",
    "mask_message",
]

MASK = "••• masked (sensitive topic) •••"
_DATA_FIELDS = frozenset({"payload", "headers"})


class MaskedSearchError(ValueError):
    """Raised when a text search would look into data the user may not see (answers 400)."""


def mask_headers(headers: Mapping[str, str], *, visible: bool) -> dict[str, str]:
    """Headers as the user may see them: names always, values only when ``visible``."""
    if visible:
        return dict(headers)
    return dict.fromkeys(headers, MASK)


def mask_fields(fields: Mapping[str, str], *, visible: bool) -> dict[str, str]:
    """Raw entry fields as the user may see them (payload and headers masked)."""
    if visible:
        return dict(fields)
    return {k: (MASK if k in _DATA_FIELDS else v) for k, v in fields.items()}


def check_text_filter(text: str | None, *, visible: bool) -> None:
    """Refuse a payload/header text search on a topic whose data the user may not see."""
    if text and not visible:
        raise MaskedSearchError(
            "text search looks into payloads and headers, which your role may not see on this "
            "sensitive topic; filter by key, partition or time instead"
        )


def check_data_filter(reads_data: bool, *, visible: bool) -> None:
    """Refuse a filter that looks into payloads or header values (a text search, a header
    value, an expression over ``payload`` or ``headers``) on a topic the user may not read."""
    if reads_data and not visible:
        raise MaskedSearchError(
            "this filter looks into payloads or header values, which your role may not see on "
            "this sensitive topic; filter by key, header name, partition or time instead"
        )


def mask_message(message: Message, *, visible: bool) -> Message:
    """A partition entry as the user may see it: payload, its bytes, header values and the raw
    payload and headers fields masked when not ``visible``."""
    if visible:
        return message
    return dataclasses.replace(
        message,
        payload=MASK,
        payload_bytes=None,
        headers=mask_headers(message.headers, visible=False),
        fields=mask_fields(message.fields, visible=False),
    )
