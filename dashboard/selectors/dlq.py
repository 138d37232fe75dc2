"""Dead-letter reads for pages and the API: pages of letters, one letter, job progress.

Everything returned is view-ready and *untrusted*: templates escape it (no
``|safe`` on message data). Payloads of sensitive topics are replaced by a mask
for users who may not see them, before they leave this module.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from django.conf import settings
from django.http import QueryDict

from dashboard.clusters import dead_letters
from dashboard.masking import MASK, check_text_filter, mask_headers
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.permissions import payload_visible, topic_visible
from mqcore.clock import ms_from_text

__all__ = [
    "DlqFilterError",
    "DlqFilters",
    "LetterFilter",
    "LetterView",
    "dlq_depth_get",
    "dlq_letter_get",
    "dlq_page_get",
    "letter_filter",
    "letter_json",
    "replay_jobs_recent",
]

PREVIEW_CHARS = 120
DETAIL_CHARS = 64 * 1024
HEX_BYTES = 4096
ERROR_HEADER_PREFIXES = ("x-runtime-error", "x-error", "error")


class DlqFilterError(ValueError):
    """Raised when a filter parameter is malformed (the page answers 400 with the message)."""


def _parse_time(name: str, raw: str) -> int | None:
    if not raw.strip():
        return None
    try:
        return ms_from_text(raw)
    except ValueError:
        raise DlqFilterError(f"{name}: use ISO time (2026-01-31T12:00) or epoch ms") from None


@dataclass(frozen=True, slots=True)
class DlqFilters:
    text: str | None = None
    partition: int | None = None
    key: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    raw: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, query: QueryDict | dict[str, str]) -> DlqFilters:
        def get(name: str) -> str:
            return str(query.get(name, "") or "").strip()

        partition: int | None = None
        if get("partition"):
            if not get("partition").isdigit():
                raise DlqFilterError("partition: a number >= 0")
            partition = int(get("partition"))
        text = get("text")[:200] or None
        key = get("key")[:200] or None
        since = _parse_time("since", get("since"))
        until = _parse_time("until", get("until"))
        if since is not None and until is not None and since > until:
            raise DlqFilterError("since must be before until")
        raw = {k: get(k) for k in ("text", "partition", "key", "since", "until") if get(k)}
        return cls(text, partition, key, since, until, raw)

    @property
    def active(self) -> bool:
        return bool(self.raw)

    def kwargs(self) -> dict[str, Any]:
        return letter_filter(self)


LETTER_FILTER_FIELDS = ("partition", "key", "text", "since_ms", "until_ms")


class LetterFilter(Protocol):
    """A filter of dead letters (:class:`DlqFilters`, a bulk replay's selection)."""

    @property
    def partition(self) -> int | None: ...
    @property
    def key(self) -> str | None: ...
    @property
    def text(self) -> str | None: ...
    @property
    def since_ms(self) -> int | None: ...
    @property
    def until_ms(self) -> int | None: ...


def letter_filter(f: LetterFilter) -> dict[str, Any]:
    """``f`` as the keywords of mqcore's letter reads (``DeadLetters.page``, ``ids_matching``),
    which are named as the filter's fields."""
    return {name: getattr(f, name) for name in LETTER_FILTER_FIELDS}


@dataclass(frozen=True, slots=True)
class LetterView:
    """One letter as a page shows it (payload as text preview, pretty JSON or hex)."""

    id: str
    partition: int
    original_id: str
    original_topic: str
    retry_count: int
    max_retries: int
    failed_at: str
    timestamp: str
    key: str | None
    headers: dict[str, str]
    error_headers: dict[str, str]
    preview: str
    payload_text: str
    payload_pretty: str | None
    payload_hex: str | None
    payload_size: int
    truncated: bool
    masked: bool
    binary: bool
    replays: list[dict[str, Any]] = field(default_factory=list)
    # the payload kept undecoded ({"size", "reason", "text"}: too large, page budget);
    # the raw bytes through the payload download for users who may see them
    undecoded: dict[str, Any] | None = None


def _view(letter: Any, *, visible: bool, full: bool) -> LetterView:
    marker = getattr(letter, "undecoded", None)
    raw: bytes = (
        letter.payload_bytes
        if letter.payload_bytes is not None
        else letter.payload.encode("utf-8", "replace")
    )
    binary = letter.payload_bytes is not None
    text = "" if binary else letter.payload
    limit = DETAIL_CHARS if full else PREVIEW_CHARS
    pretty: str | None = None
    hexed: str | None = None
    if visible and full and not binary:
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)[:DETAIL_CHARS]
        except (ValueError, RecursionError):
            pretty = None
    if visible and binary:
        hexed = raw[: HEX_BYTES if full else 32].hex(" ")
    truncated = len(text) > limit or (binary and len(raw) > (HEX_BYTES if full else 32))
    headers = mask_headers(letter.headers, visible=visible)
    errors = {k: v for k, v in headers.items() if k.lower().startswith(ERROR_HEADER_PREFIXES)}
    return LetterView(
        id=letter.id,
        partition=letter.partition,
        original_id=letter.original_id,
        original_topic=letter.original_topic,
        retry_count=letter.retry_count,
        max_retries=letter.max_retries,
        failed_at=letter.failed_at,
        timestamp=letter.timestamp,
        key=letter.key,
        headers=headers,
        error_headers=errors,
        preview=(text[:PREVIEW_CHARS] if visible else MASK) if not binary or not visible else "",
        payload_text=text[:limit] if visible else MASK,
        payload_pretty=pretty,
        payload_hex=hexed,
        payload_size=marker.size if marker is not None else len(raw),
        truncated=truncated and visible,
        masked=not visible,
        binary=binary,
        replays=[asdict(r) for r in getattr(letter, "replays", [])],
        undecoded=marker.as_dict() if marker is not None else None,
    )


@dataclass(frozen=True, slots=True)
class DlqPageView:
    cluster: str
    topic: str
    letters: list[LetterView]
    next_cursor: str | None
    scanned: int
    complete: bool
    depth: int
    masked: bool
    filters: DlqFilters
    before: str | None

    def context(self) -> dict[str, Any]:
        """The page's: this page, its filters and cursor, the topic's recent replay jobs."""
        return {
            "page": self,
            "filters": self.filters,
            "before": self.before,
            "jobs": replay_jobs_recent(self.cluster, self.topic),
        }

    def json(self) -> dict[str, Any]:
        """The API's answer: the depth, the page's letters (:func:`letter_json`), the cursor."""
        return {
            "cluster": self.cluster,
            "topic": self.topic,
            "depth": self.depth,
            "letters": [letter_json(v) for v in self.letters],
            "next_cursor": self.next_cursor,
            "scanned": self.scanned,
            "complete": self.complete,
            "masked": self.masked,
        }


def replay_jobs_recent(cluster: str, topic: str) -> list[ReplayJob]:
    """The topic's five newest replay jobs past the draft."""
    jobs = ReplayJob.objects.filter(cluster=cluster, topic=topic)
    return list(jobs.exclude(status=ReplayJobStatus.DRAFT)[:5])


def dlq_depth_get(*, cluster: str, topic: str) -> int:
    return int(dead_letters(cluster).depth(topic))


def dlq_page_get(
    *,
    user: Any,
    cluster: str,
    topic: str,
    filters: DlqFilters,
    before: str | None = None,
    limit: int = 50,
) -> DlqPageView:
    """One page of letters, newest first, starting before ``before`` (a cursor)."""
    dlq = dead_letters(cluster)
    visible = payload_visible(user, cluster, topic)
    try:
        check_text_filter(filters.text, visible=visible)
    except ValueError as exc:
        raise DlqFilterError(str(exc)) from None
    # A text filter reads payloads: bound the bytes scanned, not only the letters.
    byte_bound = int(settings.DLQ_TEXT_FILTER_MAX_BYTES) if filters.text else None
    page = dlq.page(
        topic,
        before=before or None,
        limit=max(1, min(limit, 200)),
        max_scan_bytes=byte_bound,
        **filters.kwargs(),
    )
    return DlqPageView(
        cluster=cluster,
        topic=topic,
        letters=[_view(letter, visible=visible, full=False) for letter in page.letters],
        next_cursor=page.next_cursor,
        scanned=page.scanned,
        complete=page.complete,
        depth=int(dlq.depth(topic)),
        masked=not visible,
        filters=filters,
        before=before or None,
    )


def dlq_letter_get(*, user: Any, cluster: str, topic: str, dlq_id: str) -> dict[str, Any]:
    """One letter with its replay history and what happened after each replay."""
    dlq = dead_letters(cluster)
    letter = dlq.get(topic, dlq_id)
    visible = payload_visible(user, cluster, topic)
    try:
        followups = list(
            dlq.followups(topic, dlq_id, visible=lambda t: topic_visible(user, cluster, t))
        )
    except Exception as exc:  # followups are a best-effort view, never a page failure
        followups = [{"status": "unknown", "error": type(exc).__name__}]
    return {
        "letter": _view(letter, visible=visible, full=True),
        "followups": followups,
    }


def letter_json(view: LetterView) -> dict[str, Any]:
    """API shape of a letter (the payload as text, hex for binary, masked when needed)."""
    data = asdict(view)
    data.pop("preview")
    data.pop("payload_pretty")
    data["payload"] = data.pop("payload_text")
    return data
