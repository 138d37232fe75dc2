"""R12: 20 concurrent replays of one letter produce exactly one new message and one
"replayed" audit row; the other 19 are audited no-ops."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections

from dashboard.models import AuditEvent, AuditPhase
from dashboard.permissions import actions_for
from dashboard.services.audit import Actor, audit_verify
from dashboard.services.dlq import dlq_replay
from tests.integration.dlq_support import add_letters, make_topic, partition_len, role_user

pytestmark = [pytest.mark.faults, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

CLICKS = 20


def test_twenty_concurrent_replays_of_one_letter(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    (dlq_id,) = add_letters(r, mq_config, "orders", 1)
    operator = role_user("op", "Operator")
    actions_for(operator)  # resolve the role once, as one request would
    barrier = threading.Barrier(CLICKS)

    def click(_: int) -> tuple[bool, str]:
        try:
            barrier.wait(timeout=30)
            result = dlq_replay(Actor(operator, cluster="default", topic="orders"), dlq_id=dlq_id)
            return result.replayed, result.reason
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=CLICKS) as pool:
        results = list(pool.map(click, range(CLICKS)))

    assert sum(replayed for replayed, _ in results) == 1
    assert sorted(reason for _, reason in results) == ["already-replayed"] * 19 + ["replayed"]
    assert partition_len(r, mq_config, "orders") == 1
    assert len(r.hgetall(mq_config.keys.dlq_replays("orders"))) == 1
    outcomes = list(
        AuditEvent.objects.filter(phase=AuditPhase.OUTCOME).values_list("outcome", flat=True)
    )
    assert outcomes.count("replayed") == 1
    assert outcomes.count("already-replayed") == CLICKS - 1
    assert AuditEvent.objects.filter(phase=AuditPhase.INTENT).count() == CLICKS
    assert audit_verify().intact  # concurrent appends never fork the chain
