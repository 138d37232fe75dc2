"""Template filters of the console: times, durations, numbers, statuses, payloads;
``table_card``, the card that holds one data table; and ``live``, a region that polls.

Every filter that returns markup builds it with ``format_html`` (arguments are
escaped); filters that return text leave escaping to the template. Nothing here
marks message data safe.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template
from django.http import QueryDict
from django.template.base import (
    FilterExpression,
    NodeList,
    Parser,
    Token,
    render_value_in_context,
)
from django.utils.html import format_html
from django.utils.safestring import SafeString

from dashboard.status import Status, status_parse
from mqcore.clock import iso_seconds, ms_from_iso

register = template.Library()

STATUS_HELP = {
    Status.OK: "lag is zero or within the allowed lag",
    Status.WARN: "consumers are moving but lag is growing",
    Status.REWIND: "the group's position went back and has not come back yet",
    Status.STALL: "position is not moving while lag > 0",
    Status.STOP: "no consumer activity for longer than the window while lag > 0",
    Status.ERR: "the collector could not read this",
    Status.UNKNOWN: "Redis cannot compute the lag",
}
HEX_BYTES_PER_LINE = 16


def _as_number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@register.filter
def num(value: Any, unknown: str = "unknown") -> str:
    """``12345`` -> ``12,345``; floats keep one decimal; None -> ``unknown`` (or the arg)."""
    n = _as_number(value)
    if n is None:
        return unknown
    if n.is_integer():
        return f"{int(n):,}"
    return f"{n:,.1f}"


@register.filter
def compact(value: Any, unknown: str = "unknown") -> str:
    """Short numbers for dense tables: 950, 12.3k, 4.5M, 1.2G."""
    n = _as_number(value)
    if n is None:
        return unknown
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.1f}{suffix}"
    return f"{int(n)}" if n.is_integer() else f"{n:.1f}"


def format_duration_ms(ms: float) -> str:
    ms = abs(ms)
    if ms < 1000:
        return f"{int(ms)} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{int(s)} s"
    m, s = divmod(int(s), 60)
    if m < 60:
        return f"{m} min {s} s" if s and m < 10 else f"{m} min"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    return f"{d} d {h} h" if h else f"{d} d"


@register.filter
def duration_ms(value: Any, unknown: str = "unknown") -> str:
    """A duration in ms as ``850 ms``, ``4.2 s``, ``3 min 5 s``, ``2 h 10 min``, ``3 d 4 h``."""
    n = _as_number(value)
    if n is None:
        return unknown
    return format_duration_ms(n)


@register.filter
def seconds(value: Any, unknown: str = "unknown") -> str:
    """A duration in seconds, formatted like :func:`duration_ms`."""
    n = _as_number(value)
    return unknown if n is None else format_duration_ms(n * 1000)


INVALID_DATE = "invalid date"


@register.filter
def reltime(value: Any, now_ms: Any = None) -> SafeString | str:
    """``<time datetime=ISO data-relative title=ISO>N ago</time>`` for an epoch-ms instant.

    The text is computed on the server (so it is right without JavaScript and in
    htmx swaps); ``console.js`` keeps it fresh.
    """
    n = _as_number(value)
    if n is None or n <= 0:
        return "never"
    now = _as_number(now_ms)
    if now is None:
        now = datetime.now(tz=UTC).timestamp() * 1000
    iso = iso_seconds(n)
    if iso is None:  # outside the calendar (an id's ms part may be anything up to 2^64)
        return INVALID_DATE
    delta = now - n
    text = format_duration_ms(delta) + (" ago" if delta >= 0 else " from now")
    return format_html('<time datetime="{}" title="{}" data-relative>{}</time>', iso, iso, text)


def _parse_iso_ms(value: Any) -> float | None:
    """Epoch ms of an ISO-8601 instant (``Z``, offsets); naive means UTC; None when the text
    is not one or falls outside the calendar once shifted to UTC."""
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    try:
        return float(ms_from_iso(text))
    except ValueError:
        return None


@register.filter
def isotime(value: Any, now_ms: Any = None) -> SafeString | str:
    """An ISO-8601 string (such as a dead letter's ``failedAt``) as :func:`reltime`.

    Text that is not an ISO instant is returned as is (plain text, escaped by the
    template); empty input gives "".
    """
    ms = _parse_iso_ms(value)
    if ms is None or ms <= 0:  # not an instant, or before 1970: the text as sent
        return "" if value is None else str(value)
    return reltime(ms, now_ms)


@register.filter
def clock_time(value: Any) -> SafeString | str:
    """``HH:MM UTC`` of an epoch-ms instant in a ``<time>`` (the full instant on hover)."""
    n = _as_number(value)
    if n is None or n <= 0:
        return "unknown"
    iso = iso_seconds(n)
    if iso is None:
        return INVALID_DATE
    text = iso[11:16] + " UTC"
    return format_html('<time datetime="{}" title="{}">{}</time>', iso, iso, text)


@register.filter
def id_time(entry_id: Any, now_ms: Any = None) -> SafeString | str:
    """The instant in a stream entry id's millisecond part, as :func:`reltime`."""
    try:
        ms = int(str(entry_id).split("-", 1)[0])
    except ValueError:
        return str(entry_id)
    return reltime(ms, now_ms)


JOB_STATES = {
    # job status -> (badge class, meaning on hover)
    "draft": ("pending", "previewed; nothing replayed until the job is started"),
    "queued": ("pending", "waiting for a worker"),
    "running": ("running", "a worker is replaying letters"),
    "cancelling": ("running", "cancel asked; stops after the current chunk"),
    "cancelled": ("cancelled", "stopped by a user before the end"),
    "completed": ("completed", "every letter of the frozen set has an outcome"),
    "failed": ("failed", "the runner gave up (see the error)"),
}


@register.filter
def job_badge(status: Any, label: Any = "") -> SafeString:
    """A colored badge for a bulk replay job state (pending/running/completed/cancelled/failed)."""
    value = str(status or "")
    kind, meaning = JOB_STATES.get(value, ("pending", "unknown state"))
    return format_html(
        '<span class="status job-state job-{}" data-state="{}" title="{}">{}</span>',
        kind,
        value,
        meaning,
        str(label) if label else value,
    )


@register.filter
def age_time(value: Any, now_ms: Any = None) -> SafeString | str:
    """The instant ``value`` ms ago, as :func:`reltime` (for ages such as idle times)."""
    n = _as_number(value)
    now = _as_number(now_ms)
    if n is None:
        return "unknown"
    if now is None:
        now = datetime.now(tz=UTC).timestamp() * 1000
    return reltime(now - n, now)


@register.filter
def status_badge(status: Any, reason: Any = "") -> SafeString:
    """A colored status label; the rule that fired (or the status meaning) on hover."""
    parsed = status_parse(status)
    title = str(reason) if reason else STATUS_HELP[parsed]
    name = parsed.value
    return format_html('<span class="status status-{}" title="{}">{}</span>', name, title, name)


@register.filter
def pretty_payload(payload: Any) -> str:
    """JSON payloads pretty-printed (2-space indent); anything else returned as is.

    Returns plain text: the template escapes it.
    """
    text = "" if payload is None else str(payload)
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=False)
    except (ValueError, RecursionError):
        return text


@register.filter
def is_json(payload: Any) -> bool:
    text = "" if payload is None else str(payload).lstrip()
    if not text or text[0] not in "{[":
        return False
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


@register.filter
def hexdump(data: Any, limit: int | None = None) -> str:
    """Classic hex + ASCII dump of bytes (plain text, escaped by the template)."""
    if data is None:
        return ""
    raw = data if isinstance(data, bytes | bytearray) else str(data).encode("utf-8", "replace")
    if limit is not None:
        raw = raw[: int(limit)]
    lines = []
    for offset in range(0, len(raw), HEX_BYTES_PER_LINE):
        chunk = raw[offset : offset + HEX_BYTES_PER_LINE]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<{HEX_BYTES_PER_LINE * 3}} {text}")
    return "\n".join(lines)


@register.filter
def truncate_chars(value: Any, limit: int) -> str:
    """At most ``limit`` characters, with an ellipsis when cut (plain text)."""
    text = "" if value is None else str(value)
    limit = int(limit)
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


@register.simple_tag(takes_context=True)
def query(context: Any, **changes: Any) -> str:
    """The current query string with ``changes`` applied (None/"" removes a key).

    For sort links and pagers that keep every other filter in the URL.
    """
    request = context.get("request")
    params = request.GET.copy() if request is not None else QueryDict(mutable=True)
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = params.urlencode()
    return "?" + encoded if encoded else "?"


@register.filter
def entry_age(entry_id: Any, now_ms: Any = None) -> str:
    """Age of a stream entry from the millisecond part of its id (``1700000000000-0``)."""
    try:
        ms = int(str(entry_id).split("-", 1)[0])
    except ValueError:
        return "unknown"
    now = _as_number(now_ms)
    if now is None:
        now = datetime.now(tz=UTC).timestamp() * 1000
    return format_duration_ms(max(0.0, now - ms))


class _TableCard(template.Node):
    def __init__(
        self, title: FilterExpression, table_id: FilterExpression, head: NodeList, rows: NodeList
    ) -> None:
        self.title, self.table_id, self.head, self.rows = title, table_id, head, rows

    def render(self, context: template.Context) -> SafeString:
        return format_html(
            '<section class="card">\n<h2>{}</h2>\n<div class="table-wrap">\n'
            '<table class="data" id="{}">{}<tbody>{}</tbody></table>\n</div>\n</section>',
            self.title.resolve(context),
            self.table_id.resolve(context),
            self.head.render(context),
            self.rows.render(context),
        )


@register.tag
def table_card(parser: Parser, token: Token) -> _TableCard:
    """``{% table_card title table_id %}<thead>…</thead>{% rows %}<tr>…{% endtable_card %}``:
    a card titled ``title`` (text, escaped) holding the data table ``table_id``, its head
    and its body's rows."""
    bits = token.split_contents()
    if len(bits) != 3:
        raise template.TemplateSyntaxError("table_card takes a title and a table id")
    title, table_id = (parser.compile_filter(bit) for bit in bits[1:])
    head = parser.parse(("rows",))
    parser.delete_first_token()
    rows = parser.parse(("endtable_card",))
    parser.delete_first_token()
    return _TableCard(title, table_id, head, rows)


class _Live(template.Node):
    def __init__(
        self,
        region_id: FilterExpression,
        url: FilterExpression,
        every: FilterExpression,
        body: NodeList,
    ) -> None:
        self.region_id, self.url, self.every, self.body = region_id, url, every, body

    def render(self, context: template.Context) -> SafeString:
        def text(value: FilterExpression) -> str:
            # what ``{{ value }}`` renders: escaped, localized
            return render_value_in_context(value.resolve(context), context)

        return format_html(
            '<div id="{}" data-live hx-get="{}" hx-trigger="every {}s" hx-swap="outerHTML">'
            "{}</div>",
            text(self.region_id),
            text(self.url),
            text(self.every),
            self.body.render(context),
        )


@register.tag
def live(parser: Parser, token: Token) -> _Live:
    """``{% live region_id %}…{% endlive %}``: a region that htmx reloads from the page's own
    URL (``request.get_full_path``) every ``poll_seconds``, swapping itself; ``data-live``
    lets the Pause of ``components/live_toggle.html`` hold its polls. The view answers an
    htmx request with the template's partial that holds the region."""
    bits = token.split_contents()
    if len(bits) != 2:
        raise template.TemplateSyntaxError("live takes the region's id")
    body = parser.parse(("endlive",))
    parser.delete_first_token()
    return _Live(
        parser.compile_filter(bits[1]),
        parser.compile_filter("request.get_full_path"),
        parser.compile_filter("poll_seconds"),
        body,
    )
