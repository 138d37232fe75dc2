"""Plotly figures and derived numbers from time series: pure functions, no I/O.

Series are lists of ``(epoch_ms, value)`` sorted by time, as returned by the
collectors' store. Figures are plain dicts (``{"data": [...], "layout": {...}}``)
that ``static/js/charts.js`` hands to ``Plotly.newPlot``; sparklines are SVG
point strings (numbers only, so they are safe in an attribute).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "WINDOWS",
    "Point",
    "line_figure",
    "plotly_text",
    "rate_from_counter",
    "sparkline_points",
    "window_ms",
    "with_events",
    "x_range",
]

Point = tuple[int, float]

# Chart windows offered on the topic page: URL value -> milliseconds.
WINDOWS: dict[str, int] = {
    "1h": 3_600_000,
    "6h": 6 * 3_600_000,
    "24h": 24 * 3_600_000,
    "7d": 7 * 24 * 3_600_000,
}


def window_ms(name: str) -> int:
    """Milliseconds of a chart window name; ValueError for names not in :data:`WINDOWS`."""
    try:
        return WINDOWS[name]
    except KeyError:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}") from None


def rate_from_counter(points: Sequence[Point]) -> list[Point]:
    """Per-second rates from a monotonically increasing counter's samples.

    Each rate is stamped at the later sample. A counter that went down (a
    restart or reset) restarts the count: that interval is skipped, not
    reported as a negative rate. Samples with non-increasing time are ignored.
    """
    rates: list[Point] = []
    for (t0, v0), (t1, v1) in itertools.pairwise(points):
        dt = t1 - t0
        if dt <= 0 or v1 < v0 or not (math.isfinite(v0) and math.isfinite(v1)):
            continue
        rates.append((t1, (v1 - v0) * 1000.0 / dt))
    return rates


def _trace(name: str, points: Sequence[Point], **extra: Any) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": plotly_text(name),  # Plotly renders trace names as limited HTML
        "x": [t for t, _ in points],
        "y": [v for _, v in points],
        "hovertemplate": "%{y}<extra>%{fullData.name}</extra>",
        **extra,
    }


MIN_X_SPAN_MS = 5 * 60_000


def x_range(
    series: Mapping[str, Sequence[Point]],
    since_ms: int,
    until_ms: int,
    *,
    min_span_ms: int = MIN_X_SPAN_MS,
) -> list[int]:
    """The x-axis range of a chart over ``[since_ms, until_ms]``.

    When the data starts later than the window (a topic or collector only minutes
    old), the axis starts at the first sample instead, so the lines are not
    squeezed against the right edge; it never gets narrower than ``min_span_ms``
    (nor wider than the window). Without data the whole window is shown.
    """
    starts = [pts[0][0] for pts in series.values() if pts]
    if not starts:
        return [since_ms, until_ms]
    first = min(starts)
    start = min(first, until_ms - min_span_ms)
    return [max(since_ms, start), until_ms]


def line_figure(
    title: str,
    series: Mapping[str, Sequence[Point]],
    *,
    y_title: str = "",
    since_ms: int | None = None,
    until_ms: int | None = None,
    step: bool = False,
) -> dict[str, Any]:
    """A Plotly line chart with one trace per named series; x is epoch ms shown as dates.

    Names come from topic and group names, which anyone who can create a group
    controls: Plotly renders trace names (legend, hover) as limited HTML, so they go
    through :func:`plotly_text`; ``charts.js`` inserts the figure through
    ``JSON.parse``, never as HTML.
    """
    extra: dict[str, Any] = {"line": {"shape": "hv"}} if step else {}
    data = [_trace(name, pts, **extra) for name, pts in series.items()]
    xaxis: dict[str, Any] = {"type": "date", "title": {"text": ""}}
    if since_ms is not None and until_ms is not None:
        xaxis["range"] = x_range(series, since_ms, until_ms)
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 14}},
            "xaxis": xaxis,
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
            "margin": {"l": 56, "r": 16, "t": 36, "b": 36},
            "height": 260,
            "showlegend": len(data) > 1,
            "legend": {"orientation": "h", "y": -0.3, "yanchor": "top"},  # below the dates
            "uirevision": title,  # a live refresh keeps the user's zoom and hidden traces
        },
        "empty": not any(len(pts) for pts in series.values()),
    }


def plotly_text(text: Any) -> str:
    """``text`` safe for Plotly's hover text and annotations, which render a subset of HTML
    (``<br>``, ``<b>``, ``<a href>``...): ``&``, ``<`` and ``>`` become entities."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_EVENT_COLORS = {"critical": "#b3261e", "warning": "#b35c00", "info": "#3d5a80"}


def with_events(figure: dict[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``figure`` with incident events as dotted vertical lines and hoverable markers on top.

    Events are dicts with ``at_ms``, ``kind``, ``severity`` and ``text`` (newest first
    or not); their texts hold group and consumer names, so they are escaped for Plotly.
    The markers live on a hidden second y axis (0..1), so they never move the data's scale.
    """
    shown = [e for e in events if isinstance(e.get("at_ms"), int)]
    if not shown:
        return figure
    shown.sort(key=lambda e: int(e["at_ms"]))
    layout = dict(figure.get("layout") or {})
    layout["shapes"] = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": e["at_ms"],
            "x1": e["at_ms"],
            "y0": 0,
            "y1": 1,
            "line": {
                "width": 1,
                "dash": "dot",
                "color": _EVENT_COLORS.get(str(e.get("severity")), "#666"),
            },
        }
        for e in shown
    ]
    layout["yaxis2"] = {"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True}
    marker = {
        "type": "scatter",
        "mode": "markers",
        "name": "events",
        "x": [e["at_ms"] for e in shown],
        "y": [0.96] * len(shown),
        "yaxis": "y2",
        "hovertext": [plotly_text(f"{e.get('kind', '')}: {e.get('text', '')}") for e in shown],
        "hoverinfo": "text+x",
        "showlegend": False,
        "marker": {
            "symbol": "triangle-down",
            "size": 10,
            "color": [_EVENT_COLORS.get(str(e.get("severity")), "#666") for e in shown],
        },
    }
    return {**figure, "data": [*figure.get("data", []), marker], "layout": layout}


def sparkline_points(
    points: Sequence[Point], *, width: int = 120, height: int = 24, pad: float = 1.0
) -> str:
    """SVG ``points`` for a polyline of ``points`` scaled into ``width`` x ``height``.

    Returns "" when there is nothing to draw. Only digits, dots, commas and
    spaces: safe inside a quoted attribute.
    """
    clean = [(t, v) for t, v in points if math.isfinite(v)]
    if not clean:
        return ""
    if len(clean) == 1:
        clean = [clean[0], (clean[0][0] + 1, clean[0][1])]
    t_min, t_max = clean[0][0], clean[-1][0]
    v_min = min(v for _, v in clean)
    v_max = max(v for _, v in clean)
    span_t = (t_max - t_min) or 1
    span_v = (v_max - v_min) or 1.0
    inner_h = height - 2 * pad
    inner_w = width - 2 * pad
    out = []
    for t, v in clean:
        x = pad + (t - t_min) / span_t * inner_w
        y = pad + inner_h - ((v - v_min) / span_v * inner_h if v_max != v_min else inner_h / 2)
        out.append(f"{x:.1f},{y:.1f}")
    return " ".join(out)
