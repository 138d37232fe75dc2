"""Operator actions on pending entries: claim to a consumer, move to the DLQ.

Both are POST + CSRF forms of the pending page, over the rows checked there;
writes go through :mod:`dashboard.services.pending` (permission -> audit ->
mqcore), which refuses a role without the action (403). Both redirect back to
the pending page of the same group.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from dashboard.services import pending as pending_svc
from dashboard.services.audit import origin_from_request
from dashboard.views.errors import page_guard


def _pending_targets(request: HttpRequest) -> dict[int, list[str]]:
    """Checked rows ``partition:id`` grouped by partition."""
    grouped: dict[int, list[str]] = {}
    for raw in request.POST.getlist("entry"):
        part, _, entry_id = raw.partition(":")
        if not part.isdigit() or not entry_id:
            raise ValueError(f"bad entry reference {raw[:40]!r}")
        grouped.setdefault(int(part), []).append(entry_id)
    if not grouped:
        raise ValueError("select at least one pending entry")
    return grouped


def _back_to_pending(cluster: str, topic: str, group: str) -> HttpResponse:
    url = reverse("dashboard:pending", kwargs={"cluster": cluster, "topic": topic})
    return redirect(f"{url}?group={group}" if group else url)


def _per_partition(
    request: HttpRequest, cluster: str, topic: str, action: Callable[..., list[str]], **extra: str
) -> tuple[str, int]:
    """Run a pending service once per partition of the checked rows: (group, entries done)."""
    group = request.POST.get("group", "").strip()
    total = 0
    for partition, ids in _pending_targets(request).items():
        total += len(
            action(
                acting_user=request.user,
                cluster=cluster,
                topic=topic,
                group=group,
                partition=partition,
                ids=ids,
                reason=request.POST.get("reason", ""),
                origin=origin_from_request(request),
                **extra,
            )
        )
    return group, total


@require_POST
@login_required
@page_guard()
def pending_claim(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    consumer = request.POST.get("consumer", "")
    group, total = _per_partition(
        request, cluster, topic, pending_svc.pending_claim, consumer=consumer
    )
    messages.success(request, f"Claimed {total} entries to {consumer}.")
    return _back_to_pending(cluster, topic, group)


@require_POST
@login_required
@page_guard()
def pending_move_to_dlq(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    group, total = _per_partition(request, cluster, topic, pending_svc.pending_move_to_dlq)
    messages.success(request, f"Moved {total} entries to the DLQ.")
    return _back_to_pending(cluster, topic, group)


urlpatterns: list[URLPattern] = [
    path(
        "clusters/<str:cluster>/topics/<str:topic>/pending/claim/",
        pending_claim,
        name="pending-claim",
    ),
    path(
        "clusters/<str:cluster>/topics/<str:topic>/pending/move-to-dlq/",
        pending_move_to_dlq,
        name="pending-move-to-dlq",
    ),
]
