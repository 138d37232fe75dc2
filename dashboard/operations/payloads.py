"""The raw bytes of one payload (a value too large to show, or past a page's decode budget)
of a dead letter, a retry item or an entry: for who may see the topic's payloads (a masked
viewer 403), bounded, an ``application/octet-stream`` attachment with ``nosniff``
(:mod:`dashboard.selectors.payloads`); rate-limited as exports."""

from __future__ import annotations

from typing import Any

from dashboard.operations.declare import Call, Operation, Page, route
from dashboard.operations.dlq import LETTER
from dashboard.operations.topic import MESSAGE
from dashboard.permissions import Action
from dashboard.ratelimits import rate_limited
from dashboard.selectors.payloads import download_response, raw_payload_get

__all__ = ["OPERATIONS"]

REFS = {"dlq": "dlq_id", "retry": "item_id", "message": "entry_id"}  # the URL's value of each


def _payload(name: str, tag: str, kind: str, of: str, summary: str) -> Operation:
    """At ``payload/`` under the route ``of`` the letter, item or entry (a regex: ``^...``)."""

    def run(c: Call[Any]) -> Any:
        where = {"partition": c.url.get("partition", 0), "cluster": c.cluster, "topic": c.topic}
        return download_response(
            raw_payload_get(user=c.user, kind=kind, ref=c.url[REFS[kind]], **where)
        )

    return Operation(
        summary + "; on a sensitive topic, needs view payloads",
        tag,
        Action.VIEW,
        run=run,
        page=Page(name, of + "payload/" + ("$" if of.startswith("^") else "")),
        decorators=(rate_limited("export"),),
    )


OPERATIONS = (
    _payload(
        "dlq-letter-payload",
        "dlq",
        "dlq",
        LETTER,
        "A dead letter's payload as stored (bytes, an attachment; for one too large to show)",
    ),
    _payload(
        "retry-item-payload",
        "retries",
        "retry",
        route("retries/<str:item_id>"),
        "A retry item's payload as stored (bytes, an attachment; for one too large to show)",
    ),
    _payload(
        "message-payload",
        "topics",
        "message",
        MESSAGE,
        "An entry's payload as stored, out-of-line ones included (bytes, an attachment)",
    ),
)
