"""Drill 4: a poison message retried to the DLQ at a steady rate: the DLQ growth alert.

One poison message a second among 20 good ones; the consumer's handler raises on it, the
retry mover (inside the consumer) brings it back twice, then it is dead-lettered. The
DLQ growth alert opens on the first pass that sees a new letter, and the timeline notes that
the DLQ started growing (a trickle is never a burst). Replaying a letter with the
mqcore CLI, its follow-up shows it dead-lettered again (the handler still fails on it).
Once no new poison comes, the growth window (compressed here to 5 s; 300 s by default)
empties, the alert resolves and the timeline notes that the growth stopped.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mqcore.dlq import DeadLetters
from mqcore.topics import Topics
from tests.drills.harness import ROOT, Drill

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "dlq_growth:orders"


def replay_with_cli(drill: Drill, letter: str) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mqcore",
            "--redis-url",
            drill.redis_url,
            "dlq",
            "replay",
            "orders",
            letter,
            "--by",
            "drill",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=30,
    )


def test_poison_grows_the_dlq(drill: Drill, settings: object) -> None:
    settings.DLQ_GROWTH_WINDOW_S = 5  # type: ignore[attr-defined]
    Topics(drill.config).create("orders", 2)
    drill.producer("orders", rate=20)
    drill.consumer("orders", poison="poison", max_retries=2)
    drill.warm_up()
    assert drill.status("orders") == "OK"
    assert drill.metric("redis_streaming_mq_console_dlq_depth", topic="orders") == 0

    poison = drill.producer("orders", rate=1, name="poison")
    drill.inject()
    passes = drill.until("DLQ growth", lambda: ALERT in drill.opened(), max_passes=8)
    assert passes <= 4  # two retries (the mover runs each second), then a pass sees it
    drill.detected("4 poison message", "DLQ growth alert", passes)
    depth = drill.metric("redis_streaming_mq_console_dlq_depth", topic="orders")
    assert depth is not None
    assert depth >= 1
    assert drill.metric("opsdash_alerts_open", rule="dlq_growth", severity="warning") == 1
    assert "DLQ grew by" in drill.receiver.alert(ALERT)["message"]
    # a steady trickle is no burst (INCIDENT_DLQ_BURST letters in one pass), but the start
    # of the growth is on the timeline
    changes = [e["data"].get("change") for e in drill.timeline(topic="orders", kind="dlq")]
    assert "growth_started" in changes, changes

    dlq = DeadLetters(drill.config)
    letter = dlq.page("orders", limit=1).letters[0]
    assert json.loads(letter.payload)["producer"] == "poison"
    replay_with_cli(drill, letter.id)
    drill.until(
        "the replay dead-lettered again",
        lambda: any(f["failed_again"] for f in dlq.followups("orders", letter.id)),
        max_passes=6,
    )

    poison.stop()
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=10)
    latest = drill.timeline(topic="orders", kind="dlq")[0]  # newest first
    assert latest["data"]["change"] == "growth_stopped"
    assert drill.status("orders") == "OK"
    assert set(drill.seen("orders")) == {"OK"}
    drill.assert_only_alerts(ALERT)


def test_poison_growth_is_on_the_timeline(drill: Drill, settings: object) -> None:
    settings.DLQ_GROWTH_WINDOW_S = 5  # type: ignore[attr-defined]
    Topics(drill.config).create("orders", 1)
    drill.consumer("orders", poison="poison")
    drill.warm_up(2)
    drill.producer("orders", rate=1, name="poison")
    drill.inject()
    drill.until("DLQ growth", lambda: ALERT in drill.opened(), max_passes=6)
    assert drill.timeline(topic="orders", kind="dlq")
