"""Every page's weight in bytes, and no failed resource on any page (sizes, never timings).

The tour loads each page with the browser cache off and sums the Resource Timing entries of
the document and what it loaded (htmx polls excluded). Budgets are on decoded bytes, what the
browser parses and runs, an upper bound of what the production server's compression sends.
The numbers land in ``test-artifacts/page-weight.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.tour import log_in, seed, visit_all

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

# The topic page ships the partial plotly.js bundle: at most 1.5 MB of JavaScript.
TOPIC_JS_BUDGET = 1_500_000
TOPIC_TOTAL_BUDGET = 1_700_000
# Every other page: HTML, CSS, htmx and the console's own scripts.
PAGE_JS_BUDGET = 120_000
PAGE_TOTAL_BUDGET = 350_000

WEIGHTS = """() => {
  const entries = [performance.getEntriesByType("navigation")[0],
                   ...performance.getEntriesByType("resource")]
    .filter(e => e.initiatorType !== "fetch" && e.initiatorType !== "xmlhttprequest");
  const out = {total: 0, transferred: 0, js: 0, requests: entries.length, files: {}};
  for (const e of entries) {
    const path = new URL(e.name).pathname;
    out.total += e.decodedBodySize;
    out.transferred += e.transferSize;
    if (path.endsWith(".js")) out.js += e.decodedBodySize;
    out.files[path] = e.decodedBodySize;
  }
  return out;
}"""


def test_page_weights_within_budget_and_no_failed_resource(
    browser: Any,
    live_server: Any,
    settings: Any,
    r: Any,
    mq_config: Any,
    console_r: Any,
    artifacts_dir: Path,
) -> None:
    paths = seed(settings, r, mq_config)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    failed: list[str] = []
    page.on("requestfailed", lambda q: failed.append(f"{q.url}: {q.failure}"))
    page.on(
        "response",
        lambda a: (
            failed.append(f"{a.url}: HTTP {a.status}")
            if a.status >= 400 and not a.url.endswith("/no-such-page/")
            else None
        ),
    )
    page.on("console", lambda m: failed.append(f"console: {m.text}") if m.type == "error" else None)
    weights: dict[str, dict[str, Any]] = {}

    def check(name: str, pg: Any) -> None:
        weights[name] = pg.evaluate(WEIGHTS)

    try:
        visit_all(page, live_server.url, log_in(page, live_server.url), paths, check)
    finally:
        context.close()
    (artifacts_dir / "page-weight.json").write_text(json.dumps(weights, indent=2))
    # The 404 page's own status is logged as a console error too (without its URL); any
    # other failed resource shows up by URL through the response and requestfailed events.
    assert not [f for f in failed if not f.endswith(" 404 (Not Found)")], failed

    over = []
    for name, w in weights.items():
        js_budget, total_budget = (
            (TOPIC_JS_BUDGET, TOPIC_TOTAL_BUDGET)
            if name == "topic"
            else (PAGE_JS_BUDGET, PAGE_TOTAL_BUDGET)
        )
        if w["js"] > js_budget or w["total"] > total_budget:
            over.append(f"{name}: {w['js']} B of JS (budget {js_budget}), {w['total']} B in all")
    assert not over, over
    assert weights["topic"]["files"].get("/static/plotly/plotly-basic.min.js", 0) > 0
