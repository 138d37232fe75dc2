"""The topic page's partition panel: per-partition rate, length, memory and their skew (the
API), and one partition's hot-key sample (an htmx partial, a plain page without htmx)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dashboard.operations.declare import (
    Api,
    Call,
    Operation,
    Page,
    api_path,
    doc,
    in_cluster,
    route,
)
from dashboard.permissions import Action
from dashboard.selectors.pages.partitions import hot_keys_get, partitions_get

__all__ = ["OPERATIONS"]

PAGE = route("partitions")


class Window(msgspec.Struct):
    window: Annotated[str, doc("rate window: 5m (default), 15m or 1h")] = ""


class Sample(msgspec.Struct):
    count: Annotated[str | None, doc("entries sampled (default 500, at most 2000)")] = None


def _partitions(c: Call[Window]) -> dict[str, Any]:
    return partitions_get(c.cluster, c.topic, user=c.user, window=c.input.window or "5m")


OPERATIONS = (
    Operation(
        "Per partition: produce rate, length, memory, and the skew (max vs mean)",
        "topics",
        Action.VIEW,
        Window,
        _partitions,
        api=Api("api-topic-partitions", api_path(PAGE), answer=in_cluster),
    ),
    Operation(
        "The most frequent message keys of the newest entries of one partition (a sample)",
        "topics",
        Action.VIEW,
        Sample,
        lambda c: hot_keys_get(**c.read()),
        page=Page(
            "hot-keys",
            PAGE + "<int:partition>/hot-keys/",
            template="dashboard/hot_keys.html#sample",
            context=lambda c, sample: {"sample": sample},
        ),
        api=Api(answer=in_cluster),
    ),
)
