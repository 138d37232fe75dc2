"""Operator actions on the retry set: retry items now, delete them (audited).

One item, the selected ones (at most :data:`mqcore.retries.MAX_IDS`), or all matching
the list's filter (at most :data:`mqcore.retries.MAX_MATCHING` per call; the answer
says whether more match and where to continue). The order is the console's: Operator
permission (``retry``) -> the topic visible -> input checked (ids, filter, reason) ->
audit intent row -> mqcore (``move_retries.lua`` / ``delete_retries.lua``, atomic per
batch, idempotent per item) -> audit outcome with the counts. Bad input is refused
before the intent row, so it writes nothing anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from dashboard import clusters
from dashboard.masking import check_text_filter
from dashboard.models import AuditEventType
from dashboard.permissions import Action, payload_visible
from dashboard.selectors.pages.snapshot import topic_visible_require
from dashboard.selectors.retries import RetryPage
from dashboard.services.audit import (
    Actor,
    ConfirmationError,
    audit_filters,
    audited,
    require_confirmation,
    require_reason,
)
from mqcore.retries import MAX_IDS, RetryOutcome, validate_item_id
from mqcore.retries.browse import decode_cursor

__all__ = ["ACTIONS", "ConfirmationError", "retries_act"]

ACTIONS = ("retry", "delete")
COUNTS = ("requested", "retried", "dropped", "deleted", "skipped", "missing")


def _ids(ids: list[str]) -> list[str]:
    cleaned = list(dict.fromkeys(str(i).strip() for i in ids if str(i).strip()))
    if not cleaned:
        raise ValueError("select at least one retry item, or act on all matching")
    if len(cleaned) > MAX_IDS:
        raise ValueError(f"at most {MAX_IDS} retry items per action")
    for item_id in cleaned:
        validate_item_id(item_id)
    return cleaned


def retries_act(
    actor: Actor,
    *,
    action: str,
    ids: list[str] | None = None,
    all_matching: bool = False,
    filters: Mapping[str, Any] | None = None,
    cursor: str | None = None,
    reason: str = "",
    confirm: str = "",
) -> dict[str, Any]:
    """Retry (``action="retry"``) or delete the named items, or all matching ``filters``.

    A reason is required to delete and to act on more than one item; deleting all
    matching items also needs the topic name typed as ``confirm``.
    """
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
    actor.require(Action.RETRY)
    cluster, topic = actor.cluster, actor.topic
    topic_visible_require(actor.user, cluster, topic)
    rs = clusters.writer_retry_set(cluster)
    detail: dict[str, Any] = {"action": action, "all_matching": all_matching}
    if all_matching:
        if ids:
            raise ValueError("name items or act on all matching, not both")
        flt = RetryPage.read_filter(filters or {})
        check_text_filter(flt.text, visible=payload_visible(actor.user, cluster, topic))
        detail["filter"] = audit_filters(asdict(flt))
        if cursor:
            decode_cursor(cursor)  # a bad cursor is bad input: refused before the audit row
        named: list[str] = []
    else:
        named = _ids(list(ids or []))
    if action == "delete" or all_matching or len(named) > 1:
        reason = require_reason(reason)
    if action == "delete" and all_matching:
        require_confirmation(
            confirm, topic, "type the topic name exactly to delete every matching item"
        )
    rs.admin.partition_count(topic)  # unknown topic: nothing audited, nothing written
    event = AuditEventType.RETRY_DELETE if action == "delete" else AuditEventType.RETRY_NOW
    with audited(actor, event, letter_ids=named, reason=reason, detail=detail) as audit:
        out: RetryOutcome
        if all_matching:
            act = rs.delete_matching if action == "delete" else rs.retry_matching
            out = act(topic, flt, cursor=cursor or None)
        else:
            out = (rs.delete if action == "delete" else rs.retry_now)(topic, named)
        counts = {k: getattr(out, k) for k in COUNTS}
        audit.set(
            "deleted" if action == "delete" else "retried",
            counts=counts,
            detail={"ids": out.ids[:MAX_IDS], "more": out.more} if all_matching else None,
        )
    return {
        "topic": topic,
        "action": action,
        **counts,
        "more": out.more,
        "next_cursor": out.next_cursor,
    }
