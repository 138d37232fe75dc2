"""``audited(...)``: the one way a service writes its intent and outcome rows."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from dashboard.models import ApiToken, AuditEvent, AuditEventType, AuditPhase, ReplayJob
from dashboard.services.api_tokens import issue_token
from dashboard.services.audit import (
    Actor,
    Audited,
    ConfirmationError,
    audit_verify,
    audited,
    require_confirmation,
)
from tests.integration.dlq_support import add_letters, make_topic, role_user
from tests.integration.pages_support import make_user

pytestmark = pytest.mark.django_db

PURGE = AuditEventType.DLQ_PURGE


def _outcomes() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(phase=AuditPhase.OUTCOME).order_by("id"))


def test_the_block_sets_the_outcome_row() -> None:
    with audited(Actor(None, cluster="c", topic="t"), PURGE, reason="r") as audit:
        assert audit.intent.outcome == "unknown"
        assert _outcomes() == []  # the intent is written before the action runs
        audit.set("purged", counts={"deleted": 2}, detail={"note": "x"})
    (row,) = _outcomes()
    assert (row.completes_id, row.outcome, row.counts, row.detail) == (
        audit.intent.pk,
        "purged",
        {"deleted": 2},
        {"note": "x"},
    )
    assert (row.cluster, row.topic, row.actor) == ("c", "t", "system")
    assert audit.intent.final_outcome == "purged"
    assert audit_verify().intact


def test_an_outcome_never_set_is_completed() -> None:
    with audited(Actor(None), PURGE):
        pass
    (row,) = _outcomes()
    assert (row.outcome, row.counts, row.detail) == ("completed", {}, {})


def test_an_error_is_recorded_as_failed_and_raised_again() -> None:
    def extra(exc: Exception) -> dict[str, object]:
        return {"kind": type(exc).__name__, "moved": []}

    def action() -> None:
        with audited(Actor(None), PURGE, failure_detail=extra) as audit:
            audit.set("purged", counts={"deleted": 1})  # set before the failure: not written
            raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        action()
    (row,) = _outcomes()
    assert (row.outcome, row.counts) == ("failed", {})
    assert row.detail == {"error": "KeyError: 'gone'", "kind": "KeyError", "moved": []}
    assert list(row.detail) == ["error", "kind", "moved"]


def test_close_writes_once_and_leave_open_defers_the_outcome() -> None:
    def action() -> None:
        with audited(Actor(None), PURGE) as audit:
            audit.set("failed", detail={"error": "could not enqueue"})
            audit.close()
            audit.set("again")
            audit.close()
            raise RuntimeError("after the close: no second row")

    with pytest.raises(RuntimeError):
        action()
    audit_id = AuditEvent.objects.get(phase=AuditPhase.INTENT).pk
    assert [(r.outcome, r.detail) for r in _outcomes()] == [
        ("failed", {"error": "could not enqueue"})
    ]
    with audited(Actor(None), PURGE) as later:
        later.set("written later")
        later.leave_open()  # a later writer (a job's runner) completes it
    assert len(_outcomes()) == 1
    assert later.intent.final_outcome == "unknown"
    later.close()  # what the block set, written now
    rows = [(r.completes_id, r.outcome) for r in _outcomes()]
    assert rows == [(audit_id, "failed"), (later.intent.pk, "written later")]


def test_a_dropped_stream_ends_with_the_outcome_set_so_far() -> None:
    def stream(audit: Audited) -> Iterator[int]:
        with audit:
            audit.set("aborted", counts={"rows": 1})
            yield 1
            yield 2
            audit.set("exported", counts={"rows": 2})

    rows = stream(audited(Actor(None), AuditEventType.LAG_EXPORT))
    assert next(rows) == 1
    rows.close()  # the client went away (GeneratorExit)
    (row,) = _outcomes()
    assert (row.outcome, row.counts) == ("aborted", {"rows": 1})


def test_a_stopping_process_leaves_the_intent_unknown() -> None:
    audit = audited(Actor(None), PURGE)

    def action() -> None:
        with audit:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        action()
    assert _outcomes() == []
    assert audit.intent.final_outcome == "unknown"


def test_confirmation_is_the_name_typed_exactly_around_blanks() -> None:
    require_confirmation(" orders\n", "orders", "type it")
    for typed in ("", "order", "Orders", "orders x"):
        with pytest.raises(ConfirmationError, match="type it"):
            require_confirmation(typed, "orders", "type it")
    assert AuditEvent.objects.count() == 0


def test_a_token_issue_that_fails_is_audited_as_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    user = make_user("scripter")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("database said no")

    monkeypatch.setattr(ApiToken, "issue", broken)
    with pytest.raises(RuntimeError):
        issue_token(Actor(None), user=user, name="cron", days=30, read_only=True)
    (intent,) = AuditEvent.objects.filter(phase=AuditPhase.INTENT)
    assert intent.event_type == AuditEventType.API_TOKEN_ISSUE
    assert intent.final_outcome == "failed"
    assert intent.completion.detail == {"error": "RuntimeError: database said no"}


@pytest.mark.redis
def test_bulk_start_rows_when_enqueue_fails_and_when_already_started(
    r: object, mq_config: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.services import bulk_replay as svc

    make_topic(mq_config)
    add_letters(r, mq_config, "orders", 3)
    operator = role_user("op", "Operator")
    job = svc.dlq_bulk_preview(
        Actor(operator, cluster="default", topic="orders"), selection=svc.BulkSelection()
    )
    stale = ReplayJob.objects.get(pk=job.pk)  # still a draft in memory

    def refuse(*args: object, **kwargs: object) -> None:
        raise ConnectionError("broker down " + "x" * 400)

    monkeypatch.setattr(svc, "current_app", SimpleNamespace(send_task=refuse))
    with pytest.raises(ConnectionError):
        svc.dlq_bulk_start(Actor(operator), job=job, reason="r")
    svc.dlq_bulk_start(Actor(operator), job=stale, reason="r")
    first, second = AuditEvent.objects.filter(phase=AuditPhase.INTENT).order_by("id")
    assert first.completion.outcome == "failed"
    assert first.completion.detail == {"error": ("broker down " + "x" * 400)[:300]}
    assert ReplayJob.objects.get(pk=job.pk).error.startswith("could not enqueue: broker down")
    assert (second.completion.outcome, second.completion.detail) == ("already-started", {})
