"""The audit log (every role reads it, scoped to the user's topics): the list, its CSV and
JSON exports (streamed, formula-neutralised) and the chain check (cached)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any

import msgspec
from django.http import QueryDict, StreamingHttpResponse

from dashboard.operations.declare import Api, Call, Operation, Page, doc
from dashboard.permissions import Action
from dashboard.selectors import audit as sel
from dashboard.services.audit import audit_verify_cached

__all__ = ["OPERATIONS"]

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


def _page(c: Call[AuditQuery], view: sel.AuditView) -> dict[str, Any]:
    query = c.request.GET.copy()  # the links' query: without the page number
    page = query.pop("page", [None])[-1]
    return view.context(page, query.urlencode())


def _export(ext: str, chunks: Callable[[Any], Iterator[str]], kind: str) -> Page:
    """The page of one export, ``audit/export.<ext>``: the filtered rows as ``audit.<ext>``."""

    def answer(c: Call[AuditQuery], view: sel.AuditView) -> StreamingHttpResponse:
        response = StreamingHttpResponse(chunks(view.events[:EXPORT_MAX]), content_type=kind)
        response["Content-Disposition"] = f'attachment; filename="audit.{ext}"'
        return response

    return Page(f"audit-export-{ext}", f"audit/export.{ext}", form=_filters_only, answer=answer)


def _filters_only(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in read.items() if k not in ("before", "limit")}  # the JSON's paging


OPERATIONS = (
    Operation(
        "Audit log, newest first",
        "audit",
        Action.VIEW,
        AuditQuery,
        lambda c: sel.audit_view(**c.read()),
        page=Page(
            "audit", "audit/", template="dashboard/audit.html", form=_filters_only, context=_page
        ),
        pages=(
            _export("csv", sel.audit_csv, "text/csv"),
            _export("json", sel.audit_json_chunks, "application/json"),
        ),
        api=Api(answer=lambda c, view: view.json(c.input.limit)),
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
        api=Api(answer=lambda c, r: sel.audit_chain_json(*r)),
    ),
)
