"""Drill 6: a group moved back (rewind) with the mqcore CLI: REWIND, with a timeline event.

The consumer handles 20 messages a second against 10 produced, so redoing the rewound
backlog (about 80 entries) takes about 4 s: the passes meanwhile see the position back.
REWIND shows on the first pass after the move and the rewind alert opens at once (it has
no hold time); both clear once the consumer is past where it was. The timeline names who
moved it and why: the console merges mqcore's record of the CLI's move, "outside the
console".
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from mqcore.outside_events import OutsideEvents
from mqcore.topics import Topics
from tests.drills.harness import ROOT, Drill

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

ALERT = "rewind:orders/default-group"


def rewind(drill: Drill) -> None:
    """``mqcore group set-position orders --group default-group --to earliest --yes``."""
    move = ["group", "set-position", "orders", "--group", "default-group", "--to", "earliest"]
    who = ["--by", "sre-on-call", "--reason", "drill 6: redo the last hour"]
    subprocess.run(
        [sys.executable, "-m", "mqcore", "--redis-url", drill.redis_url, *move, "--yes", *who],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=30,
    )


def test_cli_rewind_is_rewind(drill: Drill) -> None:
    Topics(drill.config).create("orders", 2)
    drill.producer("orders", rate=10)
    drill.consumer("orders", handle_ms=50, batch=5)
    drill.warm_up(8)
    assert drill.status("orders") == "OK"

    rewind(drill)
    drill.inject()
    passes = drill.until("REWIND", lambda: drill.status("orders") == "REWIND", max_passes=3)
    assert passes == 1
    drill.detected("6 rewind (CLI)", "group REWIND and the rewind alert", passes)
    assert "REWIND" in drill.partition_statuses("orders", "default-group").values()
    assert ALERT in drill.opened()  # at once: the rule has no hold time
    assert "went back" in drill.receiver.alert(ALERT)["message"]
    assert drill.metric("opsdash_alerts_open", rule="rewind", severity="warning") == 1
    texts = [e["text"] for e in drill.timeline(topic="orders", kind="status")]
    assert any(t.startswith("group default-group: status OK → REWIND") for t in texts)
    (moved,) = OutsideEvents(drill.config).recent()  # mqcore's record of the CLI's move
    assert (moved.action, moved.who, moved.why) == (
        "position.set",
        "sre-on-call",
        "drill 6: redo the last hour",
    )
    assert moved.what["direction"] == "rewind"

    drill.until("OK", lambda: drill.status("orders") == "OK", max_passes=12)
    drill.until("resolved", lambda: ALERT in drill.resolved(), max_passes=2)
    assert drill.metric("opsdash_alerts_open", rule="rewind", severity="warning") is None
    drill.assert_only_alerts(ALERT)


def test_cli_rewind_timeline_names_who_moved_it(drill: Drill) -> None:
    Topics(drill.config).create("orders", 1)
    drill.producer("orders", rate=10)
    drill.warm_up(2)
    rewind(drill)
    drill.collect()
    moves = drill.timeline(topic="orders", kind="position")
    assert moves, "no position event for the CLI's move"
    assert "sre-on-call" in str(moves[0])
