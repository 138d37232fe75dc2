"""The audit log (every role reads it, scoped to the user's topics): the list, its CSV and
JSON exports (streamed, formula-neutralised) and the chain check (cached)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any

import msgspec
from django.core.paginator import Paginator
from django.http import QueryDict, StreamingHttpResponse

from dashboard.models import AuditEventType
from dashboard.operations.declare import Api, Call, Operation, Page, doc
from dashboard.permissions import Action
from dashboard.selectors import audit as sel
from dashboard.services.audit import audit_verify_cached

__all__ = ["OPERATIONS"]

PER_PAGE = 50
EXPORT_MAX = 100_000  # rows per export; both exports stream, row by row


class AuditQuery(msgspec.Struct):
    """The filters, and a page of the JSON list."""

    actor: str = ""
    action: str = ""
    topic: str = ""
    since: str = ""
    until: str = ""
    before: Annotated[int, doc("id cursor (next_before)", ge=0)] | None = None
    limit: Annotated[int, doc("page size (1..200)", ge=1, le=200)] = 50


def _events(c: Call[AuditQuery]) -> Any:
    filters = sel.AuditFilters.from_query(msgspec.structs.asdict(c.input))
    return filters, sel.audit_list(filters=filters, user=c.user, before=c.input.before)


def _page(c: Call[AuditQuery], found: Any) -> dict[str, Any]:
    query = c.request.GET.copy()
    page = query.pop("page", [None])[-1]
    events = Paginator(found[1], PER_PAGE).get_page(page)
    return {
        "events": events,
        "filters": found[0],
        "actions": AuditEventType.choices,
        "query": query.urlencode(),
    }


def _json(c: Call[AuditQuery], found: Any) -> dict[str, Any]:
    limit = c.input.limit
    events = list(found[1][: limit + 1])
    more, events = len(events) > limit, events[:limit]
    return {
        "events": [sel.audit_event_json(e) for e in events],
        "next_before": events[-1].pk if more and events else None,
    }


def _export(ext: str, chunks: Callable[[Any], Iterator[str]], kind: str) -> Page:
    """The page of one export, ``audit/export.<ext>``: the filtered rows as ``audit.<ext>``."""

    def answer(c: Call[AuditQuery], found: Any) -> StreamingHttpResponse:
        response = StreamingHttpResponse(chunks(found[1][:EXPORT_MAX]), content_type=kind)
        response["Content-Disposition"] = f'attachment; filename="audit.{ext}"'
        return response

    return Page(f"audit-export-{ext}", f"audit/export.{ext}", form=_filters_only, answer=answer)


def _filters_only(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in read.items() if k not in ("before", "limit")}  # the JSON's paging


def _chain(c: Call[Any], checked: Any) -> dict[str, Any]:
    report, at = checked
    keys = ("intact", "checked", "first_broken_id", "problem", "unsigned")
    return {k: getattr(report, k) for k in keys} | {"summary": str(report), "checked_at": at}


OPERATIONS = (
    Operation(
        "Audit log, newest first",
        "audit",
        Action.VIEW,
        AuditQuery,
        _events,
        page=Page(
            "audit", "audit/", template="dashboard/audit.html", form=_filters_only, context=_page
        ),
        pages=(
            _export("csv", sel.audit_csv, "text/csv"),
            _export("json", sel.audit_json_chunks, "application/json"),
        ),
        api=Api(answer=_json),
    ),
    Operation(
        "Audit chain check (recomputed at most once per AUDIT_VERIFY_INTERVAL_S)",
        "audit",
        Action.VIEW,
        run=lambda c: audit_verify_cached(),
        page=Page(
            "audit-verify",
            "audit/verify/",
            template="dashboard/partials/audit_chain.html",
            context=lambda c, r: {"report": r[0], "checked_at": r[1]},
        ),
        api=Api(answer=_chain),
    ),
)
