"""axe-core (the version pinned in package-lock.json) finds no violation on any page.

axe is injected through Playwright into every page of the tour (real data, Admin view, the
login page and the 404 page); the context bypasses the CSP only so the injected script runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.tour import log_in, seed, visit_all

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.x A and AA, plus axe's best practices (nested-interactive is one of them).
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]


def test_no_axe_violation_on_any_page(
    browser: Any, live_server: Any, settings: Any, r: Any, mq_config: Any, console_r: Any
) -> None:
    if not AXE.exists():
        pytest.fail("node_modules/axe-core is missing: run `make install` (npm ci)")
    paths = seed(settings, r, mq_config)
    context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    found: dict[str, list[str]] = {}

    def check(name: str, pg: Any) -> None:
        if not pg.evaluate("typeof window.axe !== 'undefined'"):
            pg.add_script_tag(path=str(AXE))
        result = pg.evaluate(
            "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", TAGS
        )
        for v in result["violations"]:
            nodes = v["nodes"]
            targets = [" ".join(map(str, n["target"])) for n in nodes][:5]
            found.setdefault(name, []).append(
                f"{v['id']} ({v['impact']}, {len(nodes)} nodes): {v['help']} at {targets}; "
                f"{nodes[0].get('failureSummary', '')}"
            )

    try:
        seen = visit_all(page, live_server.url, log_in(page, live_server.url), paths, check)
    finally:
        context.close()
    assert len(seen) == 28
    assert not found, "\n".join(f"{page}: {v}" for page, vs in found.items() for v in vs)
