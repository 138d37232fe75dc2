"""One topic's pages and their JSON (``mqcore`` CLI ``--json`` field names where they
overlap): the topic (snapshot, charts), its series and live lag, the partition panel
(per-partition rate, length, memory and their skew; one partition's hot-key sample, an
htmx partial), the leases, the message browser with "produce a test message" and its live
tail (polled by htmx with the tail's cursor), and one message (masked without the right to
see its payload). A bad browser filter or produce form shows the browser's form again with
the error (400); the form's headers are ``NAME=VALUE`` lines."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from dashboard.charts import WINDOWS
from dashboard.operations.declare import (
    FORM_TRUE,
    Api,
    Call,
    NoInput,
    Operation,
    Page,
    api_path,
    doc,
    in_cluster,
    read_query,
    route,
)
from dashboard.permissions import Action
from dashboard.ratelimits import BROWSE_FILTERS, count_request, rate_limited
from dashboard.selectors.pages import consumer_metrics, leases, messages, series
from dashboard.selectors.pages import topic as sel
from dashboard.selectors.pages.browse import Browse, Tail, browse_get, tail_get
from dashboard.selectors.pages.params import parse_int
from dashboard.selectors.pages.partitions import (
    HOT_KEYS_DEFAULT,
    HOT_KEYS_MAX,
    RateWindow,
    hot_keys_get,
    partitions_get,
)
from dashboard.selectors.pages.snapshot import now_ms
from dashboard.services import produce as svc

__all__ = ["OPERATIONS"]

PAGE = route()
API = api_path(PAGE)
MESSAGES = route("messages")
MESSAGE = PAGE + "messages/<int:partition>/<str:entry_id>/"
PARTITIONS = route("partitions")
BROWSE = "dashboard/browse.html"
TAIL = "dashboard/tail.html"
ROW_PAYLOAD_CHARS = 300
BROWSE_FORM = tuple(f.name for f in msgspec.structs.fields(Browse))
TAIL_FORM = tuple(
    f.name for f in msgspec.structs.fields(Tail) if f.name not in ("cursor", "paused")
)


class GroupFilter(msgspec.Struct):
    group: Annotated[str, doc("one consumer group")] = ""


class SeriesQuery(GroupFilter):
    metric: Annotated[str, doc(", ".join(series.SERIES_METRICS))] = ""
    window: Annotated[str, doc(", ".join(WINDOWS) + " (default 1h)")] = ""


class MessageCut(msgspec.Struct):
    max_bytes: Annotated[
        int, doc("payload bytes returned", ge=1, le=messages.MAX_PREVIEW_BYTES)
    ] = messages.PREVIEW_BYTES


def _topic_page(c: Call[Any], t: Any) -> dict[str, Any]:
    window = c.request.GET.get("window") or "1h"
    polled = getattr(c.request, "htmx", False)
    return sel.topic_page(c.cluster, t, user=c.user, window=window, polled=polled) | {"can": c.can}


def _leases_page(c: Call[GroupFilter], d: dict[str, Any]) -> dict[str, Any]:
    groups = sel.group_list(c.cluster, c.topic)
    return {"groups": groups, "d": d, "group": d["group"] or "", "now_ms": now_ms()}


def _message_page(c: Call[MessageCut], v: messages.MessageView) -> dict[str, Any]:
    query = c.request.GET
    return v.page(full=query.get("full", "") in FORM_TRUE, group=query.get("group", ""))


class Window(msgspec.Struct):
    window: Annotated[RateWindow, doc("rate window: 5m (default), 15m or 1h")] = "5m"


class Sample(msgspec.Struct):
    count: Annotated[
        int, doc(f"entries sampled (default {HOT_KEYS_DEFAULT})", ge=1, le=HOT_KEYS_MAX)
    ] = HOT_KEYS_DEFAULT


def _partitions(c: Call[Window]) -> dict[str, Any]:
    return partitions_get(c.cluster, c.topic, user=c.user, window=c.input.window)


class ProduceForm(msgspec.Struct):
    payload: str = ""
    key: str = ""
    headers: str = ""  # NAME=VALUE lines
    partition: str = ""


class Produce(msgspec.Struct):
    payload: Annotated[str, doc("the message")] = ""
    key: Annotated[str, doc("optional message key (chooses the partition)")] = ""
    headers: Annotated[dict[str, str] | None, doc("optional headers, name -> string value")] = None
    partition: Annotated[int | None, doc("optional partition")] = None


def _browse(c: Call[Any], q: Browse) -> dict[str, Any]:
    return browse_get(c.cluster, c.topic, q, user=c.user)


def _browse_page(c: Call[Any], produce: dict[str, str] | None = None) -> HttpResponse:
    """The browser, its form shown again (with the produce form's error, if any)."""
    query = c.request.GET
    form = {name: (query.get(name) or "").strip() for name in BROWSE_FORM}
    context: dict[str, Any] = {
        **c.url,
        "form": form,
        "produce": produce or {},
        "produce_open": query.get("produce") == "1",
        "can": c.can,
        "payload_chars": ROW_PAYLOAD_CHARS,
        "filtered": any(form[k] for k in BROWSE_FILTERS),
    }
    try:
        d = _browse(c, read_query(query, Browse))
    except ValueError as exc:  # a bad filter or parameter
        context["error"] = str(exc)
    else:
        following = query.copy()  # the next page: this query at the next cursor
        following["cursor"] = d["next_cursor"] or ""
        next_query = following.urlencode() if d["next_cursor"] else ""
        context |= {"d": d, "next_query": next_query, "paged": bool(form["cursor"])}
    context["tail_query"] = _query_of({k: form[k] for k in TAIL_FORM if k in form})
    status = 400 if produce or "error" in context else 200
    return render(c.request, BROWSE, context, status=status)


def _query_of(values: dict[str, str]) -> str:
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in values.items() if v})
    return query.urlencode()


def _tail(c: Call[Any], q: Tail) -> dict[str, Any]:
    return tail_get(c.cluster, c.topic, q, user=c.user)


def _tail_page(c: Call[Any], _: None) -> HttpResponse:
    """The tail: the whole page (opened at now), or for htmx one poll's rows and the poller
    with the next cursor (an error stops the poller and says why)."""
    form = {name: (c.request.GET.get(name) or "").strip() for name in TAIL_FORM}
    context: dict[str, Any] = {**c.url, "form": form, "payload_chars": ROW_PAYLOAD_CHARS}
    context["browse_query"] = _query_of(form | {"rate": "", "max_bytes": ""})
    try:
        d = _tail(c, read_query(c.request.GET, Tail))
    except ValueError as exc:  # a bad filter, parameter or cursor
        context["error"] = str(exc)
    else:
        context |= {"d": d, "poll_query": _query_of(form | {"cursor": d["cursor"]})}
    polled = getattr(c.request, "htmx", False)
    status = 400 if "error" in context and not polled else 200  # htmx swaps a 200 only
    return render(c.request, TAIL + "#poll" if polled else TAIL, context, status=status)


def _produced(c: Call[ProduceForm], _: None) -> HttpResponse:
    form = msgspec.structs.asdict(c.input)
    try:
        sent = svc.produce_message(
            **c.write()
            | {
                "key": c.input.key.strip() or None,
                "headers": svc.header_lines(c.input.headers),
                "partition": parse_int(c.input.partition.strip(), "partition", default=None),
            }
        )
    except ValueError as exc:
        count_request(c.request, "browse", BROWSE_FILTERS)  # the browser reads again
        return _browse_page(c, {**form, "error": str(exc)})
    return c.back(
        f"Produced {sent['id']} to partition {sent['partition']}.",
        "message-detail",
        partition=sent["partition"],
        entry_id=sent["id"],
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "One topic: groups (each with partitions and `drain`, the time-to-drain estimate: "
        "seconds, state, rate_per_s, reason, low_s, high_s, ranged), consumers, leases",
        "topics",
        Action.VIEW,
        run=lambda c: sel.topic_get(c.cluster, c.topic, user=c.user),
        page=Page(
            "topic-detail",
            PAGE,
            template="dashboard/topic.html#live",
            context=_topic_page,
        ),
        api=Api(answer=lambda c, t: sel.topic_json(c.cluster, t)),
    ),
    Operation(
        "Time series of one metric (partition_lag: the most lagging partitions)",
        "topics",
        Action.VIEW,
        SeriesQuery,
        lambda c: series.series_get(**c.read()),
        api=Api("api-topic-series", API + "/series"),
    ),
    Operation(
        "Lag per group and partition (live read)",
        "topics",
        Action.VIEW,
        GroupFilter,
        lambda c: sel.lag_get(**c.read()),
        api=Api("api-lag", API + "/lag"),
    ),
    Operation(
        "Partition leases",
        "topics",
        Action.VIEW,
        GroupFilter,
        lambda c: leases.leases_get(**c.read()),
        page=Page(
            "leases",
            PAGE + "leases/",
            template="dashboard/leases.html#live",
            context=_leases_page,
        ),
    ),
    Operation(
        "One message (payload masked without the right to see it; cut to max_bytes: "
        "payload_size, payload_truncated) and its trace: delivery per group, retries, DLQ",
        "topics",
        Action.VIEW,
        MessageCut,
        lambda c: messages.message_view_get(**c.url, user=c.user),
        page=Page(
            "message-detail", MESSAGE, template="dashboard/message.html", context=_message_page
        ),
        api=Api("api-message", answer=lambda c, v: v.json(c.input.max_bytes)),
    ),
    Operation(
        "Per partition: produce rate, length, memory, and the skew (max vs mean)",
        "topics",
        Action.VIEW,
        Window,
        _partitions,
        api=Api("api-topic-partitions", api_path(PARTITIONS), answer=in_cluster),
    ),
    Operation(
        "The most frequent message keys of the newest entries of one partition (a sample)",
        "topics",
        Action.VIEW,
        Sample,
        lambda c: hot_keys_get(**c.read()),
        page=Page(
            "hot-keys",
            PARTITIONS + "<int:partition>/hot-keys/",
            template="dashboard/hot_keys.html#sample",
            context=lambda c, sample: {"sample": sample},
        ),
        api=Api(answer=in_cluster),
    ),
    Operation(
        "Browse messages: partitions merged by id, filters, cursor paging, a bounded scan "
        "(scanned, stopped_at_bound; payloads masked without the right to see them)",
        "topics",
        Action.VIEW,
        Browse,
        # the page reads its query itself: a bad one shows the form again with the error
        page=Page("topic-browse", MESSAGES, input=NoInput, answer=lambda c, _: _browse_page(c)),
        api=Api(answer=lambda c, _: in_cluster(c, _browse(c, c.input)), loose=True),
        decorators=(rate_limited("browse", filters=BROWSE_FILTERS),),
    ),
    Operation(
        "Live tail: the messages that arrived since `cursor` (none: the tail opens at the "
        "newest entries), newest first, filtered and masked as the browser's; at most `rate` "
        "a second are shown, the others passed over and counted (skipped, skipped_total)",
        "topics",
        Action.VIEW,
        Tail,
        page=Page("topic-tail", route("tail"), input=NoInput, answer=_tail_page),
        api=Api(answer=lambda c, _: in_cluster(c, _tail(c, c.input)), loose=True),
        decorators=(rate_limited("tail"),),
    ),
    Operation(
        "The produce form",
        "topics",
        Action.VIEW,
        ProduceForm,
        page=Page("topic-produce", MESSAGES + "produce/", "POST", answer=_produced),
        twin="api-topic-produce",
    ),
    Operation(
        "Produce a test message (validated as mqcore produce; audited)",
        "topics",
        Action.PRODUCE,
        Produce,
        lambda c: svc.produce_message(**c.write() | {"key": c.input.key or None}),
        api=Api("api-topic-produce", api_path(MESSAGES + "produce/"), "POST", status=201),
        early=False,
    ),
)


# --- consumer metrics (the Metrics tab) --------------------------------------------------
# Kept apart from the declarations above: the metrics mqcore consumers write with their
# acks (mqcore.consumer_metrics), read back per group and window.


class MetricsQuery(GroupFilter):
    window: Annotated[str, doc("1h (default), 6h, 24h or 7d")] = ""


def _metrics_page(c: Call[MetricsQuery], d: dict[str, Any]) -> dict[str, Any]:
    return {"d": d, "figures": consumer_metrics.metrics_figures(d), "windows": list(WINDOWS)}


OPERATIONS += (
    Operation(
        "Consumer metrics of one group (default: the first) over a window: per consumer "
        "processed, failed, retried, dead, throughput_per_s, error_rate and handler time "
        "(mean_ms, p50_ms, p95_ms, p99_ms from a histogram), slowest first; series per step",
        "topics",
        Action.VIEW,
        MetricsQuery,
        lambda c: consumer_metrics.consumer_metrics_get(**c.read()),
        page=Page(
            "topic-metrics",
            route("metrics"),
            template="dashboard/consumer_metrics.html#live",
            context=_metrics_page,
        ),
        api=Api(answer=in_cluster),
    ),
)
