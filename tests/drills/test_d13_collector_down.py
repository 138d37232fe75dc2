"""Drill 13: the collector itself stopped: ``collector down`` from ``/metrics`` staleness.

No pass runs, so the console opens no alert of its own (nothing evaluates the rules) and
``/metrics`` keeps serving the last snapshot: ``opsdash_collector_up`` stays 1 (the last
pass succeeded) and ``opsdash_collector_last_success_timestamp_seconds`` stops moving.
Only the Prometheus rule ``OpsdashCollectorDown`` (deploy/prometheus/opsdash-rules.yml) can
tell. The drill scrapes the real ``/metrics`` once a second, while the collector is down and
after it comes back, and feeds those scrapes to ``promtool test rules`` with one second of
the drill as one minute of Prometheus: the rule fires after 5 minutes of staleness (on the
first evaluation past 300 s) and resolves once passes run again; ``OpsdashCollectorFailing``
never fires.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from mqcore.topics import Topics
from tests.drills.harness import Drill
from tests.integration.test_observability_kit import RULES, promtool

pytestmark = [pytest.mark.redis, pytest.mark.drills, pytest.mark.django_db]

DOWN_SCRAPES = 8  # minutes of Prometheus time with no pass
LAST = "opsdash_collector_last_success_timestamp_seconds"


def scrape(drill: Drill) -> tuple[float, float]:
    """(last success, up) from ``/metrics``."""
    last, up = drill.metric(LAST), drill.metric("opsdash_collector_up")
    assert last is not None
    assert up is not None
    return last, up


def test_collector_down_is_seen_through_metrics_staleness(drill: Drill, tmp_path: Path) -> None:
    Topics(drill.config).create("orders", 1)
    drill.producer("orders", rate=10)
    drill.consumer("orders")
    drill.warm_up(3)
    stopped, _ = scrape(drill)

    drill.inject()  # the collector stops: no more passes
    down = []
    for _ in range(DOWN_SCRAPES):
        time.sleep(1)
        down.append(scrape(drill))
    assert {last for last, _ in down} == {stopped}  # stale: the last pass's time
    assert {up for _, up in down} == {1.0}  # and "up": only staleness tells
    assert time.time() - stopped >= DOWN_SCRAPES
    assert drill.receiver.events == []  # no pass, no alert from the console
    back = []
    for _ in range(4):
        drill.collect()
        back.append(scrape(drill))
    assert back[-1][0] > stopped

    minutes = [round((last - stopped) * 60) for last, _ in [*down, *back]]
    ups = [int(up) for _, up in [*down, *back]]
    assert all(m == 0 for m in minutes[:DOWN_SCRAPES])
    end = len(minutes) - 1
    assert end * 60 - minutes[end] < 300  # recovered: the last sample is recent
    fired = 6  # the first evaluation past 300 s of staleness (time() - 0 = 360 s)
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": f'{LAST}{{cluster="default"}}',
                        "values": " ".join(map(str, minutes)),
                    },
                    {
                        "series": 'opsdash_collector_up{cluster="default"}',
                        "values": " ".join(map(str, ups)),
                    },
                ],
                "alert_rule_test": [
                    {"eval_time": "4m", "alertname": "OpsdashCollectorDown", "exp_alerts": []},
                    {
                        "eval_time": f"{fired}m",
                        "alertname": "OpsdashCollectorDown",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "critical", "cluster": "default"},
                                "exp_annotations": {
                                    "summary": "default: no collector pass for 6m 0s",
                                    "description": "No successful pass for 5 minutes: the "
                                    "Celery worker or beat is down. /metrics still serves "
                                    "the last snapshot.",
                                },
                            }
                        ],
                    },
                    {"eval_time": f"{end}m", "alertname": "OpsdashCollectorDown", "exp_alerts": []},
                    {
                        "eval_time": f"{fired}m",
                        "alertname": "OpsdashCollectorFailing",
                        "exp_alerts": [],
                    },
                ],
            }
        ],
    }
    test_file = tmp_path / "collector-down.test.yml"
    test_file.write_text(json.dumps(tests))  # JSON is YAML
    done = subprocess.run(
        [promtool(), "test", "rules", str(test_file)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # 5 minutes of staleness, then the rule's next evaluation (1 m in the test)
    signal = "OpsdashCollectorDown fires (promtool), resolves after passes resume"
    drill.detected("13 collector down", signal, None, default_s=300 + 60)
    drill.assert_only_alerts()
