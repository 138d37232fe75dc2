"""The pages an on-call SRE opens on a phone work at 390x844 (issue 34), with odd data too.

At a phone's viewport the page never scrolls sideways (the document is no wider than the
window): wide tables scroll inside their own container, and their first column (the topic,
group, partition or id each row is about) stays in view while they do. Topic, group and key
names are data an attacker may choose (200 characters without a space, long keys): they must
not widen the page either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.browser.tour import C, collect, log_in, seed

pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LONG_TOPIC = "t" + "-very.long_topic" * 12  # 193 characters, no space to wrap at
LONG_GROUP = "g" + "_a.very-long.group" * 10
LONG_KEY = "customer:" + "9" * 300

# What the page's layout looks like at this width: the document's width against the
# window's, and for every table, the scroll container it sits in and its first column.
LAYOUT = """() => {
  const out = {scrollWidth: document.scrollingElement.scrollWidth, innerWidth, tables: [],
               overflowing: []};
  for (const el of document.querySelectorAll("main *")) {
    const box = el.getBoundingClientRect();
    const outside = box.right > document.documentElement.clientWidth + 1;
    if (box.width && outside && !el.closest(".table-wrap, pre, table")) {
      out.overflowing.push(el.tagName + "." + el.className);
    }
  }
  for (const table of document.querySelectorAll("main table")) {
    // its scroll container: a .table-wrap, or the table itself made one
    const wrap = table.closest(".table-wrap") ||
      (getComputedStyle(table).overflowX === "auto" ? table : null);
    // the row's key cell: its row header, else its first cell
    const first = table.querySelector("tbody tr > th[scope=row]") ||
      table.querySelector("tbody tr > :first-child");
    out.tables.push({
      id: table.id || table.className || table.closest("[id]")?.id || "",
      wrapped: !!wrap,
      wrapFits: !!wrap && wrap.getBoundingClientRect().right <= innerWidth + 1,
      firstSticky: !first || getComputedStyle(first).position === "sticky",
      // opaque: the columns scrolled under it do not show through
      firstOpaque: !first || !getComputedStyle(first).backgroundColor.startsWith("rgba"),
    });
  }
  return out;
}"""


def odd_data(r: Any, cfg: Any) -> str:
    """A topic and a group with the longest names allowed, and messages with long keys;
    returns the path of one of those messages."""
    Topics(cfg).create(LONG_TOPIC, 2, groups=[LONG_GROUP])
    producer = Producer(cfg)
    for i in range(4):
        body = json.dumps({"note": "x" * 500, "i": i})
        sent = producer.send(LONG_TOPIC, body, key=f"{LONG_KEY}{i}", headers={LONG_KEY: LONG_KEY})
        producer.send("orders", body, key=f"{LONG_KEY}{i}")
    stream = cfg.keys.partition(LONG_TOPIC, 0)
    r.xreadgroup(LONG_GROUP, "w" * 150, {stream: ">"}, count=1)
    collect()
    return f"{C}/topics/{LONG_TOPIC}/messages/{sent.partition}/{sent.id}/"


def test_phone_pages_have_no_sideways_scroll_and_tables_keep_their_key_column(
    browser: Any,
    live_server: Any,
    settings: Any,
    r: Any,
    mq_config: Any,
    console_r: Any,
    artifacts_dir: Path,
) -> None:
    paths = seed(settings, r, mq_config)
    long_message = odd_data(r, mq_config)
    # in the dark theme: the sticky key cells take its colours
    context = browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, color_scheme="dark"
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url)("tour-admin", "tour-pass-123")
    pages = {
        "overview": f"{C}/",
        "topic": f"{C}/topics/orders/",
        "long-topic": f"{C}/topics/{LONG_TOPIC}/",
        "alerts": "/alerts/",
        "dlq": f"{C}/topics/orders/dlq/",
        "dlq-letter": paths["letter"],
        "messages": f"{C}/topics/orders/messages/",
        "long-messages": f"{C}/topics/{LONG_TOPIC}/messages/",
        "message": paths["message"],
        "long-message": long_message,
        "pending": f"{C}/topics/{LONG_TOPIC}/pending/?group={LONG_GROUP}",
    }
    problems: list[str] = []
    tables = 0
    try:
        for name, path in pages.items():
            response = page.goto(live_server.url + path)
            assert response is not None, (name, path)
            assert response.status == 200, (name, path)
            page.wait_for_load_state("networkidle")
            layout = page.evaluate(LAYOUT)
            page.screenshot(path=str(artifacts_dir / f"phone-{name}.png"), full_page=True)
            # (a phone's browser widens its layout viewport to fit wide content: innerWidth
            # is compared with the device's width too)
            if max(layout["scrollWidth"], layout["innerWidth"]) > PHONE["width"]:
                problems.append(
                    f"{name}: the page scrolls sideways ({layout['scrollWidth']} px wide in "
                    f"{layout['innerWidth']} px; wider than the window: {layout['overflowing']})"
                )
            for t in layout["tables"]:
                tables += 1
                if not (t["wrapped"] and t["wrapFits"]):
                    problems.append(f"{name}: table {t['id']!r} has no scroll container")
                if not t["firstSticky"]:
                    problems.append(f"{name}: table {t['id']!r} lets its first column go")
                if not t["firstOpaque"]:
                    problems.append(f"{name}: table {t['id']!r}: its key column is see-through")
            # The main navigation fits the window (its links wrap or scroll inside it).
            box = page.locator("header nav").bounding_box()
            if box is None or box["x"] < 0 or box["x"] + box["width"] > PHONE["width"]:
                problems.append(f"{name}: the navigation does not fit the window ({box})")
    finally:
        context.close()
    assert tables >= 10  # the check above looked at real tables
    assert not problems, "\n".join(problems)
