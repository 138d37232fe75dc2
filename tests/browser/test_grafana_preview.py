"""The Grafana preview page draws every panel kind from Prometheus answers, and label
values (topic, group names: data) stay text."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.grafana_preview import write_page

pytestmark = [pytest.mark.browser]

EVIL = "<img src=x onerror=\"document.title='pwned'\"></script>"


def test_panels_render_and_labels_stay_text(page, tmp_path: Path) -> None:
    series = [{"labels": {"topic": EVIL, "group": "g"}, "values": [[1700000000, "3"],
                                                                   [1700000005, "5"]]}]  # fmt: skip
    panels = [
        {"title": "Groups not OK", "type": "stat", "grid": {"x": 0, "y": 0, "w": 8, "h": 4},
         "series": series},
        {"title": EVIL, "type": "table", "grid": {"x": 8, "y": 0, "w": 16, "h": 4},
         "series": series},
        {"title": "Lag", "type": "timeseries", "grid": {"x": 0, "y": 4, "w": 24, "h": 8},
         "series": series},
    ]  # fmt: skip
    index = write_page(panels, "test data", tmp_path)
    page.goto(index.as_uri())
    page.wait_for_selector("body[data-rendered='1']")
    assert page.locator(".panel").count() == 3
    assert page.locator(".panel svg").count() >= 1  # the time series drew
    assert page.locator("img").count() == 0
    assert page.title() != "pwned"
    assert EVIL in page.locator(".panel table").inner_text()
