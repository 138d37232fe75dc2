"""Audited "export all matching" of a topic's lag, a group's pending entries or its DLQ.

Like every audited action (ARCHITECTURE.md): permission check (Viewer: exports are
reads) -> filters checked (bad input writes nothing) -> audit intent row with the
filters, the format and the row limit -> the rows, streamed -> audit outcome row with
the rows written, entries scanned and whether the limit or the scan bound cut it.
A download the client drops half-way is recorded as "aborted"; a failure as "failed".

Exports are GET links (the pages' download buttons, scripts with API tokens), so a page
on another site could make a logged-in browser start one: a request whose
``Sec-Fetch-Site`` says it came from another origin (``cross-site``, or ``same-site``:
another host of the same site) is refused (403) before anything is read or audited.
Same-origin clicks (``same-origin``), typed or bookmarked URLs (``none``) and clients
that send no such header (scripts) go on.

CSV goes through the one formula-injection-safe writer (:mod:`mqcore.csvsafe`); JSON is
one object whose ``rows`` array streams, followed by the counters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, StreamingHttpResponse
from django.utils.http import content_disposition_header

from dashboard.clusters import cluster_config
from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.selectors.exports import EXPORT_FORMATS, ExportSource, export_source
from dashboard.selectors.pages.params import parse_choice
from dashboard.services.audit import Actor, Audited, audit_filters, audited
from mqcore.export_rows import csv_row_lines

__all__ = [
    "Export",
    "check_same_origin",
    "export_download",
    "export_filename",
    "export_response",
    "export_start",
]

EVENTS = {
    "lag": AuditEventType.LAG_EXPORT,
    "pending": AuditEventType.PENDING_EXPORT,
    "dlq": AuditEventType.DLQ_EXPORT,
}
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
CHUNK_CHARS = 64 * 1024  # rows are sent in pieces of about this many characters
OTHER_ORIGIN = ("cross-site", "same-site")  # Sec-Fetch-Site values of another origin


@dataclass
class Export:
    """A started export: the response's chunks, filename, content type and row limit."""

    chunks: Iterator[str]
    filename: str
    content_type: str
    max_rows: int


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text)[:100] or "_"


def export_filename(kind: str, topic: str, group: str | None, fmt: str, max_rows: int) -> str:
    """``pending-orders-billing-max50000.csv``: the topic's and group's safe characters only,
    and the row limit, so a cut file says so in its name."""
    parts = [kind, _safe(topic)] + ([_safe(group)] if group else [])
    return f"{'-'.join(parts)}-max{max_rows}.{fmt}"


def _json(src: ExportSource, head: Mapping[str, Any]) -> Iterator[str]:
    yield json.dumps(dict(head), ensure_ascii=False, default=str)[:-1] + ', "rows": ['
    first = True
    for row in src.rows:
        yield ("\n" if first else ",\n") + json.dumps(row, ensure_ascii=False, default=str)
        first = False
    tail = {"rows_written": src.stats["rows"]}
    tail.update({k: src.stats[k] for k in ("scanned", "truncated", "complete")})
    yield "\n], " + json.dumps(tail)[1:] + "\n"


def _joined(chunks: Iterator[str], size: int = CHUNK_CHARS) -> Iterator[str]:
    """Rows joined into pieces of about ``size`` characters (fewer, larger writes)."""
    buffer: list[str] = []
    held = 0
    for chunk in chunks:
        buffer.append(chunk)
        held += len(chunk)
        if held >= size:
            yield "".join(buffer)
            buffer, held = [], 0
    if buffer:
        yield "".join(buffer)


def _streamed(chunks: Iterator[str], src: ExportSource, audit: Audited) -> Iterator[str]:
    """``chunks`` as they stream; the audit outcome when they end, fail or are dropped."""
    outcome = "aborted"
    with audit:
        try:
            yield from _joined(chunks)
            outcome = "exported"
        finally:
            audit.set(
                outcome,
                counts={"rows": int(src.stats["rows"]), "scanned": int(src.stats["scanned"])},
                detail={
                    "truncated": bool(src.stats["truncated"]),
                    "complete": bool(src.stats["complete"]),
                },
            )


def export_start(actor: Actor, *, kind: str, query: Mapping[str, Any]) -> Export:
    """Check, audit and start one export of the actor's topic (``query``: the page's
    filters, ``format`` csv or json, optional ``max_rows`` up to ``EXPORT_MAX_ROWS``); the
    chunks stream the rows."""
    actor.require(Action.VIEW)
    cluster, topic = actor.cluster, actor.topic
    fmt = parse_choice(query.get("format"), "format", EXPORT_FORMATS, "csv")
    src = export_source(kind, cluster=cluster, topic=topic, query=query, user=actor.user)
    group = src.filters.get("group") if kind != "dlq" else None
    audit = audited(
        actor,
        EVENTS[kind],
        detail={
            "export": kind,
            "format": fmt,
            "filters": audit_filters(src.filters),
            "max_rows": src.max_rows,
            "masked": src.masked,
        },
    )
    head = {
        "cluster": cluster,
        "topic": topic,
        "export": kind,
        "filters": src.filters,
        "max_rows": src.max_rows,
        "masked": src.masked,
    }
    chunks = csv_row_lines(src.columns, src.rows) if fmt == "csv" else _json(src, head)
    return Export(
        chunks=_streamed(chunks, src, audit),
        filename=export_filename(kind, topic, group, fmt, src.max_rows),
        content_type=CONTENT_TYPES[fmt],
        max_rows=src.max_rows,
    )


def export_response(export: Export) -> StreamingHttpResponse:
    """The download: streamed chunks, an attachment filename, the row limit in a header."""
    response = StreamingHttpResponse(export.chunks, content_type=export.content_type)
    response["Content-Disposition"] = (
        content_disposition_header(True, export.filename) or "attachment"
    )
    response["X-Export-Max-Rows"] = str(export.max_rows)
    response["Cache-Control"] = "no-store"
    return response


def check_same_origin(request: HttpRequest) -> None:
    """PermissionDenied when the browser says ``request`` came from another origin."""
    site = request.headers.get("Sec-Fetch-Site", "").strip().lower()
    if site in OTHER_ORIGIN:
        raise PermissionDenied(
            f"Export refused: the request came from another site (Sec-Fetch-Site: {site}). "
            "Open the page in the console and use its export buttons."
        )


def export_download(request: HttpRequest, actor: Actor, kind: str) -> StreamingHttpResponse:
    """The page's and the API's export by ``actor``: ``request``'s query, one download
    (refused before any read or audit row when it came from another origin)."""
    check_same_origin(request)
    cluster_config(actor.cluster)
    return export_response(export_start(actor, kind=kind, query=request.GET))
