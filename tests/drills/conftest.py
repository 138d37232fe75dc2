"""The ``drill`` fixture (tests/drills/harness.py) and the detection table in the run's summary.

Each drill records its detection times as the test's ``user_properties`` (they travel from
pytest-xdist's workers), and :func:`pytest_terminal_summary` prints them as one table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.celery import app as celery_app
from mqcore.config import MQConfig
from tests.drills.harness import DRILL_SETTINGS, Drill, WebhookReceiver


@pytest.fixture
def drill(
    request: pytest.FixtureRequest,
    settings: Any,
    mq_config: MQConfig,
    redis_url: str,
    console_r: object,
    tmp_path: Path,
) -> Iterator[Drill]:
    """A drill on the private Redis (flushed), with compressed thresholds and a webhook."""
    receiver = WebhookReceiver()
    for name, value in DRILL_SETTINGS.items():
        setattr(settings, name, value)
    settings.ALERT_WEBHOOK_URL = receiver.url
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True  # the pass's alert_notify_task runs at once
    run = Drill(mq_config, redis_url, receiver, tmp_path)
    try:
        yield run
    finally:
        run.close()
        receiver.close()
        celery_app.conf.task_always_eager = eager
        for found in run.detections:
            request.node.user_properties.append(("drill", found.line()))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "teardown"
        for key, value in getattr(report, "user_properties", ())
        if key == "drill"
    ]
    if lines:
        terminalreporter.write_sep("-", "incident drills: detection times")
        for line in sorted(lines):
            terminalreporter.write_line(line)
