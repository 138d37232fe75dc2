"""Who may do what, and what was done. Access administration, for an unscoped Admin only
(the selectors and services decide; a page's write comes back to its section of the
overview), and the audit log, which every role reads scoped to its topics: the list, its
CSV and JSON exports (streamed, formula-neutralised) and the chain check (cached)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any

import msgspec
from django.http import QueryDict, StreamingHttpResponse
from django.shortcuts import redirect

from dashboard.operations.declare import Api, Call, Operation, Page, Reason, doc
from dashboard.permissions import Action
from dashboard.selectors import audit as audit_sel
from dashboard.selectors.access import access_overview, user_access
from dashboard.services import access as svc
from dashboard.services.audit import audit_verify_cached

__all__ = ["OPERATIONS"]

User = Annotated[str, doc("user")]
EXPORT_MAX = 100_000  # rows per export; both exports stream, row by row


class RoleSet(Reason):
    username: User = ""
    role: Annotated[str, doc("Viewer, Operator, Admin or none")] = ""


class GroupPut(Reason):
    name: Annotated[str, doc("group name (stored as scope:<name>)")] = ""
    role: Annotated[str, doc("the role the group gives")] = ""
    scopes: Annotated[list[str], doc("cluster/pattern or pattern (every cluster)")] = []


class GroupName(Reason):
    name: Annotated[str, doc("group name")] = ""


class Membership(Reason):
    group: Annotated[str, doc("scoped group")] = ""
    username: User = ""
    member: Annotated[bool, doc("true: add, false: remove")] = False


class SensitiveMark(Reason):
    cluster: Annotated[str, doc("cluster, or * for every cluster")] = ""
    pattern: Annotated[str, doc("topic name pattern (fnmatch)")] = ""
    note: Annotated[str, doc("why")] = ""
    remove: Annotated[bool, doc("true: unmark")] = False


def _sensitive(remove: bool, note: str, **kw: Any) -> dict[str, Any]:
    return svc.sensitive_remove(**kw) if remove else svc.sensitive_add(note=note, **kw)


def _scopes(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    """The form's scopes: one a line, or comma-separated."""
    return read | {"scopes": data.get("scopes", "").replace(",", "\n").splitlines()}


def _to(anchor: str) -> Any:
    return lambda c, _: redirect(f"/access/#{anchor}")


def _write(
    summary: str, name: str, kind: type[Reason], service: Any, anchor: str, form: Any = None
) -> Operation:
    """A write (``service`` given the input) at ``access/<name>/`` (``group-``: ``groups/``),
    its page posting the form and coming back to ``anchor`` of the overview."""
    route = name.replace("group-", "groups/")
    return Operation(
        summary,
        "access",
        Action.MANAGE_ACCESS,
        kind,
        lambda c: service(**c.write()),
        page=Page(f"access-{name}", f"access/{route}/", "POST", form=form, answer=_to(anchor)),
        early=False,
    )


class AuditQuery(msgspec.Struct):
    """The filters, and a page of the JSON list."""

    actor: str = ""
    action: str = ""
    topic: str = ""
    since: str = ""
    until: str = ""
    before: Annotated[int, doc("id cursor (next_before)", ge=0)] | None = None
    limit: Annotated[int, doc("page size (1..200)", ge=1, le=200)] = 50


def _audit_page(c: Call[AuditQuery], view: audit_sel.AuditView) -> dict[str, Any]:
    query = c.request.GET.copy()  # the links' query: without the page number
    page = query.pop("page", [None])[-1]
    return view.context(page, query.urlencode())


def _export(ext: str, chunks: Callable[[Any], Iterator[str]], kind: str) -> Page:
    """The page of one export, ``audit/export.<ext>``: the filtered rows as ``audit.<ext>``."""

    def answer(c: Call[AuditQuery], view: audit_sel.AuditView) -> StreamingHttpResponse:
        response = StreamingHttpResponse(chunks(view.events[:EXPORT_MAX]), content_type=kind)
        response["Content-Disposition"] = f'attachment; filename="audit.{ext}"'
        return response

    return Page(f"audit-export-{ext}", f"audit/export.{ext}", answer=answer)


OPERATIONS = (
    Operation(
        "Users, groups, topic scopes, sensitive topics",
        "access",
        Action.MANAGE_ACCESS,
        run=lambda c: access_overview(**c.read()),
        page=Page("access", "access/", template="dashboard/access.html", shown="d"),
        early=False,
    ),
    Operation(
        "Who can see what: one user's topics, masked topics and actions per cluster",
        "access",
        Action.MANAGE_ACCESS,
        run=lambda c: user_access(**c.read()),
        page=Page(
            "access-user",
            "access/users/<str:username>/",
            template="dashboard/access_user.html",
            shown="d",
        ),
        early=False,
    ),
    _write(
        "Set a user's role (Viewer, Operator, Admin or none)",
        "role",
        RoleSet,
        svc.role_set,
        "users",
    ),
    _write(
        "Create or update a topic-scoped group",
        "groups",
        GroupPut,
        svc.group_put,
        "groups",
        _scopes,
    ),
    _write("Delete a topic-scoped group", "group-delete", GroupName, svc.group_delete, "groups"),
    _write(
        "Add a user to a scoped group or remove it", "members", Membership, svc.member_set, "groups"
    ),
    _write(
        "Mark topics sensitive (payloads and header values masked) or unmark them",
        "sensitive",
        SensitiveMark,
        _sensitive,
        "sensitive",
    ),
    Operation(
        "Audit log, newest first",
        "audit",
        Action.VIEW,
        AuditQuery,
        lambda c: audit_sel.audit_view(**c.read()),
        page=Page(
            "audit",
            "audit/",
            template="dashboard/audit.html",
            context=_audit_page,
        ),
        pages=(
            _export("csv", audit_sel.audit_csv, "text/csv"),
            _export("json", audit_sel.audit_json_chunks, "application/json"),
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
        api=Api(answer=lambda c, r: audit_sel.audit_chain_json(*r)),
    ),
)
