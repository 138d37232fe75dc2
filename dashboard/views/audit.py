"""Audit log pages: list with filters, CSV/JSON export, chain check.

Everyone with a console role may read the audit log (it holds no payloads);
exports are neutralised against spreadsheet formula injection.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path
from django.views.decorators.http import require_GET

from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.selectors import audit as sel
from dashboard.services.audit import audit_verify_cached
from dashboard.views.errors import page_guard

PER_PAGE = 50
EXPORT_MAX = 100_000  # rows per export; both exports stream, row by row


def _without_page(request: HttpRequest) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


@require_GET
@login_required
@page_guard(Action.VIEW)
def audit_page(request: HttpRequest) -> HttpResponse:
    filters = sel.AuditFilters.from_query(request.GET)
    paginator = Paginator(sel.audit_list(filters=filters, user=request.user), PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/audit.html",
        {
            "events": page,
            "filters": filters,
            "actions": AuditEventType.choices,
            "query": _without_page(request),
        },
    )


@require_GET
@login_required
@page_guard(Action.VIEW)
def audit_export_csv(request: HttpRequest) -> StreamingHttpResponse:
    filters = sel.AuditFilters.from_query(request.GET)
    events = sel.audit_list(filters=filters, user=request.user)[:EXPORT_MAX]
    response = StreamingHttpResponse(sel.audit_csv(events), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="audit.csv"'
    return response


@require_GET
@login_required
@page_guard(Action.VIEW)
def audit_export_json(request: HttpRequest) -> StreamingHttpResponse:
    filters = sel.AuditFilters.from_query(request.GET)
    events = sel.audit_list(filters=filters, user=request.user)[:EXPORT_MAX]
    response = StreamingHttpResponse(sel.audit_json_chunks(events), content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="audit.json"'
    return response


@require_GET
@login_required
@page_guard(Action.VIEW)
def audit_chain(request: HttpRequest) -> HttpResponse:
    """The chain check, recomputed at most once per ``AUDIT_VERIFY_INTERVAL_S`` (cached)."""
    report, checked_at = audit_verify_cached()
    return render(
        request,
        "dashboard/partials/audit_chain.html",
        {"report": report, "checked_at": checked_at},
    )


urlpatterns: list[URLPattern] = [
    path("audit/", audit_page, name="audit"),
    path("audit/export.csv", audit_export_csv, name="audit-export-csv"),
    path("audit/export.json", audit_export_json, name="audit-export-json"),
    path("audit/verify/", audit_chain, name="audit-verify"),
]
