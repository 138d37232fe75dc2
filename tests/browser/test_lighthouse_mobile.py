"""Lighthouse's mobile preset scores the overview and topic pages at least 0.9 (issue 34).

Lighthouse (the version pinned in package-lock.json, run by Node.js) drives Debian's
Chromium against the test's live server as a logged-in Admin (the session cookie is passed
as an extra header), with its default settings: a phone's viewport, a slow 4G network and a
4x slower CPU, simulated. Performance, accessibility and best practices each score at least
0.9. The pages run one after the other (two Chromiums at once on a busy machine skew the
simulated timings and sometimes lose the page load's trace), and a run that stops on
Lighthouse's own runtime error (``NO_NAVSTART``: no trace recorded) is run once more.
Lighthouse's performance score varies from run to run with the machine's load (its
simulation starts from the timings it observes; the suite's other worker may be running
Spark meanwhile), so a page whose first run scores below 0.9 is run twice more and judged
by the median of its three runs, as Lighthouse's own guidance on variability advises. The
JSON reports land in ``test-artifacts/lighthouse-<page>-<run>.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.browser.conftest import chromium_path
from tests.browser.tour import C, seed

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

LIGHTHOUSE = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "lighthouse"
CATEGORIES = ("performance", "accessibility", "best-practices")
PAGES = {"overview": f"{C}/", "topic": f"{C}/topics/orders/"}
MIN_SCORE = 0.9
RUNS = 3  # a page below MIN_SCORE on its first run is judged by the median of this many


def run_lighthouse(url: str, cookie: str, out: Path) -> dict[str, Any]:
    """Lighthouse (mobile, its default) on ``url``: its JSON report (also written to
    ``out``), after one more run when the first stops on a runtime error."""
    command = [
        str(LIGHTHOUSE),
        url,
        "--quiet",
        f"--only-categories={','.join(CATEGORIES)}",
        "--output=json",
        f"--output-path={out}",
        "--extra-headers=" + json.dumps({"Cookie": f"sessionid={cookie}"}),
        "--chrome-flags=--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage",
    ]
    env = {**os.environ, "CHROME_PATH": chromium_path()}
    for attempt in (1, 2):
        done = subprocess.run(command, env=env, capture_output=True, timeout=120, check=False)
        err = done.stderr.decode(errors="replace")
        if done.returncode == 0 or attempt == 2 or "Runtime error" not in err:
            break
    assert done.returncode == 0, err[-2000:]
    return dict(json.loads(out.read_text()))


def page_scores(url: str, cookie: str, out: Path) -> dict[str, float]:
    """Each category's score of ``url``: its first run's, or when one is below
    ``MIN_SCORE`` the median of ``RUNS`` runs."""
    runs: list[dict[str, float]] = []
    for run in range(RUNS):
        report = run_lighthouse(url, cookie, out.with_name(f"lighthouse-{out.name}-{run}.json"))
        assert report["finalDisplayedUrl"] == url, report["finalDisplayedUrl"]
        runs.append({c: report["categories"][c]["score"] for c in CATEGORIES})
        if min(runs[0].values()) >= MIN_SCORE:
            break
    return {c: statistics.median(run[c] for run in runs) for c in CATEGORIES}


def test_overview_and_topic_score_at_least_0_9_on_mobile(
    live_server: Any, settings: Any, r: Any, mq_config: Any, console_r: Any, artifacts_dir: Path
) -> None:
    if not LIGHTHOUSE.exists() or not shutil.which("node"):
        pytest.fail("node_modules/.bin/lighthouse is missing: run `make install` (npm ci)")
    seed(settings, r, mq_config)
    client = Client()
    client.force_login(User.objects.get(username="tour-admin"))
    cookie = client.cookies["sessionid"].value
    scores = {
        name: page_scores(live_server.url + path, cookie, artifacts_dir / name)
        for name, path in PAGES.items()
    }
    (artifacts_dir / "lighthouse-mobile.json").write_text(json.dumps(scores, indent=2))
    low = {f"{name} {c}": s for name, by in scores.items() for c, s in by.items() if s < MIN_SCORE}
    assert not low, (low, scores)
