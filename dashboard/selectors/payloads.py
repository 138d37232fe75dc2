"""The raw bytes of one payload, for the "download" link of a value too large to show.

Pages show a payload over the decode cap or past the page's budget as a marker ("too large,
N bytes", :mod:`mqcore.codec.limits`) with this download beside it. Who may download is who
may see the payload (``permissions.payload_visible``: "view payloads" on a sensitive topic,
anyone who sees a topic otherwise); a user who may not see the topic gets 404 as for a
missing topic, a masked viewer 403. The bytes are the value as stored (a Java letter's Kryo
bytes included), bounded by ``settings.PAYLOAD_DOWNLOAD_MAX_BYTES`` and streamed in chunks
as ``application/octet-stream``, an attachment, ``nosniff``: the browser never renders them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header

from dashboard import clusters
from dashboard.permissions import payload_visible
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.raw_payloads import letter_payload, message_payload, retry_item_payload

__all__ = ["CHUNK_BYTES", "RawPayload", "download_response", "raw_payload_get"]

CHUNK_BYTES = 64 * 1024  # of the response per chunk
KINDS = ("dlq", "retry", "message")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class RawPayload:
    filename: str
    data: bytes


def raw_payload_get(
    *, user: Any, cluster: str, topic: str, kind: str, ref: str, partition: int = 0
) -> RawPayload:
    """The stored payload of a dead letter (``kind="dlq"``, ``ref`` its id), a retry item
    (``"retry"``, its item id) or a partition entry (``"message"``, its id in
    ``partition``), for a user who may see it (PermissionDenied for a masked viewer)."""
    topic_visible_require(user, cluster, topic)
    if not payload_visible(user, cluster, topic):
        raise PermissionDenied("your role may not see the payloads of this sensitive topic")
    config = clusters.cluster_config(cluster)
    client, keys = clusters.cluster_client(cluster), config.keys
    bound = int(settings.PAYLOAD_DOWNLOAD_MAX_BYTES)
    if kind == "dlq":
        clusters.dead_letters(cluster).depth(topic)  # an unknown topic: 404
        data = letter_payload(client, keys, topic, ref, max_bytes=bound)
    elif kind == "retry":
        data = retry_item_payload(client, keys, topic, ref, max_bytes=bound)
    elif kind == "message":
        clusters.admin(cluster).partition_count(topic)  # an unknown topic: 404
        data = message_payload(client, keys, topic, partition, ref, max_bytes=bound)
    else:
        raise ValueError(f"kind: one of {', '.join(KINDS)}")
    name = _UNSAFE.sub("_", f"{topic}-{kind}-{ref}")[:120]
    return RawPayload(f"{name}.bin", data)


def _chunks(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(view), CHUNK_BYTES):
        yield bytes(view[start : start + CHUNK_BYTES])


def download_response(payload: RawPayload) -> StreamingHttpResponse:
    """The bytes as an attachment the browser saves and never renders."""
    response = StreamingHttpResponse(_chunks(payload.data), content_type="application/octet-stream")
    disposition = content_disposition_header(True, payload.filename)
    response["Content-Disposition"] = disposition or f'attachment; filename="{payload.filename}"'
    response["Content-Length"] = str(len(payload.data))
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response
