"""The message page: one partition entry, live from the MQ Redis, masked when not visible."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from dashboard import clusters
from dashboard.masking import mask_message
from dashboard.permissions import payload_visible
from dashboard.selectors.pages.params import mq_refusals
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.browse import message_trace
from mqcore.browse.rows import payload_preview
from mqcore.models import Message

__all__ = ["MAX_PREVIEW_BYTES", "PREVIEW_BYTES", "MessageView", "message_view_get"]

PREVIEW_BYTES = 64 * 1024  # of a payload shown by default (the page, the API)
HEX_PREVIEW_BYTES = 4096  # of a binary payload the page shows in hex, unless in full
MAX_PREVIEW_BYTES = 4 * 1024 * 1024  # the most an API caller may ask for at once


@dataclasses.dataclass(frozen=True)
class MessageView:
    """One message (masked when ``allowed`` is false) and its trace, for the page or JSON."""

    m: Message
    allowed: bool
    trace: dict[str, Any]

    def page(self, *, full: bool, group: str) -> dict[str, Any]:
        """The page's context: the payload cut to PREVIEW_BYTES (its hex to 4 KiB) unless
        ``full``."""
        m, binary = self.m, self.m.payload_bytes
        preview = payload_preview(m, None if full else PREVIEW_BYTES)
        cut = binary is not None and not full and len(binary) > HEX_PREVIEW_BYTES
        return {
            "m": m,
            "payload": preview["text"],
            "payload_size": preview["size"],
            "truncated": preview["truncated"] and binary is None,
            "binary": binary[:HEX_PREVIEW_BYTES] if cut and binary else binary,
            "binary_len": len(binary or b""),
            "hex_truncated": cut,
            "payload_allowed": self.allowed,
            "trace": self.trace,
            "group": group,
            "undecoded": m.undecoded.as_dict() if m.undecoded else None,
            "preview_limit": PREVIEW_BYTES,
        }

    def json(self, max_bytes: int) -> dict[str, Any]:
        """The API's answer: the payload cut to ``max_bytes`` (binary as hex)."""
        preview = payload_preview(self.m, max_bytes)
        m = dataclasses.replace(self.m, payload=preview["text"], payload_bytes=None)
        out: dict[str, Any] = msgspec.to_builtins(m, str_keys=True)
        binary = preview["binary"]
        return out | {
            "payload_bytes": None if binary is None else binary.hex(),
            "payload_masked": not self.allowed,
            "payload_size": preview["size"],
            "payload_truncated": preview["truncated"],
            "trace": self.trace,
        }


def message_view_get(
    cluster: str, topic: str, partition: int, entry_id: str, *, user: Any
) -> MessageView:
    """One partition entry, masked when the user may not see its payload (sensitive topic,
    see ``permissions.payload_visible``: payload, bytes and header values), and what became
    of it (delivery per group, retries, dead letter; bounded lookups, see
    :mod:`mqcore.browse.trace`; no payload data, so the same for every role)."""
    topic_visible_require(user, cluster, topic)
    mq = clusters.admin(cluster)
    with mq_refusals(topic, partition=partition, entry_id=entry_id):
        message = mq.message(topic, partition, entry_id)
    allowed = payload_visible(user, cluster, topic)
    trace = dataclasses.asdict(message_trace(mq, message))
    return MessageView(mask_message(message, visible=allowed), allowed, trace)
