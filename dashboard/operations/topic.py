"""One topic's read pages and their JSON (``mqcore`` CLI ``--json`` field names where they
overlap): the topic (snapshot, charts), its series and live lag, a group's pending entries,
the leases, and one message (masked without the right to see its payload)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from dashboard.charts import WINDOWS
from dashboard.operations.clusters import without
from dashboard.operations.declare import FORM_TRUE, Api, Call, NoInput, Operation, Page, routes
from dashboard.permissions import Action, has_action
from dashboard.selectors.pages import leases, messages, pending, series
from dashboard.selectors.pages import topic as sel
from dashboard.selectors.pages.params import PAGE_SIZE, NotFoundError, Paged, ParamError
from dashboard.selectors.pages.partitions import partitions_get
from dashboard.selectors.pages.snapshot import now_ms

__all__ = ["OPERATIONS"]

PAGE, API = routes()
MESSAGE = "messages/<int:partition>/<str:entry_id>"
HEX_PREVIEW_BYTES = 4096
PREVIEW, payload_preview = messages.PREVIEW_BYTES, messages.payload_preview
AtLeast = Annotated[int, Meta(ge=0)] | None


class GroupFilter(msgspec.Struct):
    group: Annotated[str, Meta(description="one consumer group")] = ""


class SeriesQuery(GroupFilter):
    metric: Annotated[str, Meta(description=", ".join(series.SERIES_METRICS))] = ""
    window: Annotated[str, Meta(description=", ".join(WINDOWS) + " (default 1h)")] = ""


class Pel(GroupFilter):
    """Filters and order of a group's pending entries (min_*: at least)."""

    consumer: str = ""
    partition: AtLeast = None
    min_idle_s: AtLeast = None
    min_deliveries: AtLeast = None
    sort: Annotated[str, Meta(description="idle (default) or count")] = ""
    order: Annotated[str, Meta(description="desc (default) or asc")] = ""


class PelPage(Pel):
    page: Annotated[int, Meta(ge=1)] = 1


class PelQuery(Pel):
    min_idle_ms: AtLeast = None
    limit: Annotated[int, Meta(ge=1, le=500)] = 50
    offset: Annotated[int, Meta(ge=0)] = 0


class MessageCut(msgspec.Struct):
    max_bytes: Annotated[
        int, Meta(ge=1, le=messages.MAX_PREVIEW_BYTES, description="payload bytes returned")
    ] = PREVIEW


def _json(value: Any) -> Any:
    return msgspec.to_builtins(value, str_keys=True)


def _known(c: Call[Any], group: str, groups: list[str]) -> str:
    if group and group not in groups:
        raise NotFoundError(f"unknown group {group!r} of topic {c.topic!r}")
    return group


def _topic_page(c: Call[NoInput], t: dict[str, Any]) -> dict[str, Any]:
    window, groups = c.request.GET.get("window") or "1h", [g["group"] for g in t["groups"]]
    # the partition panel is not polled (its hot-key sample would vanish): full page only
    polled = getattr(c.request, "htmx", False)
    return {"t": t, "window": window, "windows": list(WINDOWS), "now_ms": now_ms(),
            "figures": sel.topic_charts_get(c.cluster, c.topic, groups=groups, window=window),
            "parts": None if polled else partitions_get(c.cluster, c.topic, user=c.user),
            "can": c.can}  # fmt: skip


def _topic_json(c: Call[NoInput], t: sel.TopicDetail) -> Any:
    data = sel.fill_last_ids(c.cluster, t)
    groups = [without(g, "partitions") | {"partitions": [without(p, "group") for p in ps]}
              for g in data["groups"] for ps in [g["partitions"]]]  # fmt: skip
    row = without(data.get("row") or {}, "topic", "sparkline", "group_names")
    return _json({"cluster": c.cluster, "topic": c.topic, "collected": data["collected"],
                  "taken_at_ms": data.get("taken_at_ms"), **row, "retry": data.get("retry") or {},
                  "error": data.get("error"), "groups": groups, "leases": data.get("leases") or [],
                  "consumers": data.get("consumers") or []})  # fmt: skip


def _pel(c: Call[Any], group: str, **paging: Any) -> Any:
    f = c.input
    return pending.pending_get(c.cluster, c.topic, group, user=c.user, sort=f.sort or "idle",
                               order=f.order or "desc", partition=f.partition,
                               min_deliveries=f.min_deliveries, **paging)  # fmt: skip


def _pending_page(c: Call[PelPage]) -> Any:
    f, groups = c.input, sel.group_list(c.cluster, c.topic)
    group = _known(c, f.group or (groups[0] if groups else ""), groups)
    if not group:
        return groups, group, None
    idle = None if f.min_idle_s is None else f.min_idle_s * 1000
    return groups, group, _pel(c, group, limit=PAGE_SIZE, offset=(f.page - 1) * PAGE_SIZE,
                               consumer=f.consumer.strip() or None, min_idle_ms=idle)  # fmt: skip


def _pending_context(c: Call[PelPage], found: Any) -> dict[str, Any]:
    (groups, group, result), f = found, c.input
    entries, total = (result.entries, result.total) if result else ([], 0)
    filters = {"consumer": f.consumer.strip(), "partition": f.partition,
               "min_idle_s": f.min_idle_s, "min_deliveries": f.min_deliveries}  # fmt: skip
    can = has_action(c.user, Action.CLAIM, cluster=c.cluster, topic=c.topic)
    return {"groups": groups, "group": group, "result": result, "now_ms": now_ms(),
            "paged": Paged(entries, f.page, PAGE_SIZE, total), "can_act": can,
            "sort": f.sort or "idle", "order": f.order or "desc",
            "filters": {k: "" if v is None else v for k, v in filters.items()},
            "poison_at": pending.poison_threshold()}  # fmt: skip


def _pending(c: Call[PelQuery]) -> Any:
    f, idle = c.input, c.input.min_idle_ms
    if not f.group:
        raise ParamError("group is required")
    if idle is None and f.min_idle_s is not None:
        idle = f.min_idle_s * 1000  # the page's unit, so its JSON link works
    return _pel(c, f.group, limit=f.limit, offset=f.offset, consumer=f.consumer or None,
                min_idle_ms=idle)  # fmt: skip


def _pending_json(c: Call[PelQuery], result: Any) -> dict[str, Any]:
    f, order = c.input, c.input.order or "desc"
    return {"topic": c.topic, "group": f.group, "sort": f.sort or "idle", "order": order,
            "limit": f.limit, "offset": f.offset, **_json(result)}  # fmt: skip


def _leases(c: Call[GroupFilter]) -> Any:
    groups = sel.group_list(c.cluster, c.topic)
    group = _known(c, c.input.group, groups) or None
    return groups, group, leases.leases_get(c.cluster, c.topic, user=c.user, group=group)


def _message(c: Call[MessageCut]) -> Any:
    return (*messages.message_get(**c.url, user=c.user),
            messages.message_trace_get(**c.url, user=c.user))  # fmt: skip


def _message_page(c: Call[MessageCut], found: Any) -> dict[str, Any]:
    (m, allowed, trace), query = found, c.request.GET
    full = query.get("full", "") in FORM_TRUE
    preview, binary = payload_preview(m, None if full else PREVIEW), m.payload_bytes
    cut = binary is not None and not full and len(binary) > HEX_PREVIEW_BYTES
    return {"m": m, "payload": preview["text"], "payload_size": preview["size"],
            "truncated": preview["truncated"] and binary is None,
            "binary": binary[:HEX_PREVIEW_BYTES] if cut and binary else binary,
            "binary_len": len(binary or b""), "hex_truncated": cut, "payload_allowed": allowed,
            "undecoded": m.undecoded.as_dict() if m.undecoded else None, "trace": trace,
            "group": query.get("group", ""), "preview_limit": PREVIEW}  # fmt: skip


def _message_json(c: Call[MessageCut], found: Any) -> dict[str, Any]:
    (m, allowed, trace), preview = found, payload_preview(found[0], c.input.max_bytes)
    out: dict[str, Any] = _json(dataclasses.replace(m, payload=preview["text"], payload_bytes=None))
    binary = preview["binary"]
    return out | {"payload_bytes": None if binary is None else binary.hex(),
                  "payload_masked": not allowed, "payload_size": preview["size"],
                  "payload_truncated": preview["truncated"], "trace": trace}  # fmt: skip


OPERATIONS = (
    Operation(
        "One topic: groups (each with partitions and `drain`, the time-to-drain estimate: "
        "seconds, state, rate_per_s, reason, low_s, high_s, ranged), consumers, leases",
        "topics", Action.VIEW, run=lambda c: sel.topic_get(c.cluster, c.topic, user=c.user),
        pages=(Page("topic-detail", PAGE, template="dashboard/topic.html", region="live",
                    context=_topic_page),),
        api=Api("api-topic-detail", API, answer=_topic_json),
    ),
    Operation(
        "Time series of one metric (partition_lag: the most lagging partitions)", "topics",
        Action.VIEW, SeriesQuery, lambda c: series.series_get(**c.read()),
        api=Api("api-topic-series", API + "/series"),
    ),
    Operation(
        "Lag per group and partition (live read)", "topics", Action.VIEW, GroupFilter,
        lambda c: sel.lag_get(c.cluster, c.topic, user=c.user, group=c.input.group or None),
        api=Api("api-lag", API + "/lag",
                answer=lambda c, groups: {"topic": c.topic, "groups": _json(groups)}),
    ),
    Operation(
        "The pending page", "pending", Action.VIEW, PelPage, _pending_page, twin="api-pending",
        pages=(Page("pending", PAGE + "pending/", template="dashboard/pending.html",
                    region="table", context=_pending_context),),
    ),
    Operation(
        "Pending entries of a group (live read; group required)", "pending", Action.VIEW,
        PelQuery, _pending, api=Api("api-pending", API + "/pending", answer=_pending_json),
    ),
    Operation(
        "Partition leases", "topics", Action.VIEW, GroupFilter, _leases,
        pages=(Page("leases", PAGE + "leases/", template="dashboard/leases.html", region="live",
                    context=lambda c, f: {"groups": f[0], "group": f[1] or "", "d": f[2],
                                          "now_ms": now_ms()}),),
        api=Api("api-leases", API + "/leases",
                answer=lambda c, f: {"topic": c.topic, "group": f[1], **_json(f[2])}),
    ),
    Operation(
        "One message (payload masked without the right to see it; cut to max_bytes: "
        "payload_size, payload_truncated) and its trace: delivery per group, retries, DLQ",
        "topics", Action.VIEW, MessageCut, _message,
        pages=(Page("message-detail", PAGE + MESSAGE + "/", template="dashboard/message.html",
                    context=_message_page),),
        api=Api("api-message", API + "/" + MESSAGE, answer=_message_json),
    ),
)  # fmt: skip
