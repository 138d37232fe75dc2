"""The web process never imports pyspark (an optional extra): not at startup, not for any page.

A fresh interpreter sets Django up, imports the URL configuration and every
view, API, operation and selector module, reads an SQL sink's totals the way the console
does, then checks ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, json, pkgutil, sys
import django
django.setup()
import config.urls
imported = ["config.urls"]
for package in ("dashboard.views", "dashboard.api", "dashboard.operations", "dashboard.selectors"):
    module = importlib.import_module(package)
    imported.append(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)
        imported.append(info.name)
for name in ("dashboard.management.commands.pipeline_output", "mqcore.sinkstate", "pipelines"):
    importlib.import_module(name)
    imported.append(name)
from dashboard.selectors.pipelines import pipeline_output_get
url = "sqlite:///" + sys.argv[1]
totals = pipeline_output_get(cluster="default", name="order_totals", sink="sql", database_url=url)
print(json.dumps({"imported": imported, "totals": totals, "pyspark": "pyspark" in sys.modules}))
"""


def test_django_views_api_and_selectors_import_without_pyspark(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "sink.sqlite3")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "dashboard.selectors.pipelines" in result["imported"]
    assert "dashboard.operations.monitoring" in result["imported"]
    assert result["totals"] == {}
    assert result["pyspark"] is False
