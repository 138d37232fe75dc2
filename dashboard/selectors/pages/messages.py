"""The message page: one partition entry, live from the MQ Redis, masked when not visible."""

from __future__ import annotations

from typing import Any

from dashboard import clusters
from dashboard.masking import MASK, mask_fields, mask_headers
from dashboard.permissions import payload_visible
from dashboard.selectors.pages.params import NotFoundError, ParamError
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.errors import (
    InvalidArgumentError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.models import Message

__all__ = ["MAX_PREVIEW_BYTES", "PREVIEW_BYTES", "message_get", "payload_preview"]

PREVIEW_BYTES = 64 * 1024  # of a payload shown by default (the page, the API)
MAX_PREVIEW_BYTES = 4 * 1024 * 1024  # the most an API caller may ask for at once


def payload_preview(message: Message, max_bytes: int | None) -> dict[str, Any]:
    """The payload cut to ``max_bytes`` (None: whole): ``text`` (cut on a character
    boundary), ``binary`` (raw bytes, or None), ``size`` in bytes, ``truncated``."""
    binary = message.payload_bytes
    if binary is not None:
        size = len(binary)
        cut = binary if max_bytes is None else binary[:max_bytes]
        return {"text": message.payload, "binary": cut, "size": size, "truncated": len(cut) < size}
    encoded = message.payload.encode("utf-8")
    size = len(encoded)
    if max_bytes is None or size <= max_bytes:
        return {"text": message.payload, "binary": None, "size": size, "truncated": False}
    text = encoded[:max_bytes].decode("utf-8", "ignore")
    return {"text": text, "binary": None, "size": size, "truncated": True}


def message_get(
    cluster: str, topic: str, partition: int, entry_id: str, *, user: Any
) -> tuple[Message, bool]:
    """One partition entry, and whether the user may see its payload.

    When the user may not (sensitive topic, see ``permissions.payload_visible``),
    the payload, payload bytes and header values are replaced by a mask.
    """
    topic_visible_require(user, cluster, topic)
    try:
        message = clusters.admin(cluster).message(topic, partition, entry_id)
    except UnknownTopicError:
        raise NotFoundError(f"unknown topic {topic!r}") from None
    except UnknownPartitionError:
        raise NotFoundError(f"partition {partition} of {topic!r} does not exist") from None
    except UnknownMessageError:
        raise NotFoundError(f"no entry {entry_id} in {topic!r} partition {partition}") from None
    except InvalidArgumentError as exc:  # InvalidIdError included
        raise ParamError(str(exc)) from None
    allowed = payload_visible(user, cluster, topic)
    if not allowed:
        message = Message(
            topic=message.topic,
            partition=message.partition,
            id=message.id,
            payload=MASK,
            payload_bytes=None,
            key=message.key,
            headers=mask_headers(message.headers, visible=False),
            timestamp=message.timestamp,
            retry_count=message.retry_count,
            max_retries=message.max_retries,
            fields=mask_fields(message.fields, visible=False),
        )
    return message, allowed
