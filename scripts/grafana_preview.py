"""The Grafana dashboard's panels, drawn from a real Prometheus scraping a real console.

Grafana itself is not packaged for this machine (no Debian package, no PyPI or npm
one), so this draws what the shipped dashboard would show: it starts Debian's
``prometheus`` server (extracted like promtool into ``.local/prometheus``, nothing
installed system-wide), lets it scrape a console's ``/metrics`` for a while, runs
every panel's PromQL of ``deploy/grafana/opsdash.json`` through Prometheus' HTTP API
(``$cluster``, ``$topic``, ``$group`` = all), lays the panels out on Grafana's
24-column grid (stat, table, time series) and screenshots the page with Debian's
Chromium::

    make demo                                   # in another terminal, or any console
    .venv/bin/python -m scripts.grafana_preview --metrics-url http://127.0.0.1:8000/metrics \\
        --minutes 5 --out docs/img/grafana-dashboard.png

Label values (topic and group names) are data: they reach the page as JSON and are
set as text, never as markup.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / ".local" / "prometheus"
PROMETHEUS = LOCAL / "usr" / "bin" / "prometheus"
DASHBOARD = ROOT / "deploy" / "grafana" / "opsdash.json"
PLOTLY = ROOT / "node_modules" / "plotly.js-basic-dist-min" / "plotly-basic.min.js"
VARIABLES = {"$cluster": ".*", "$topic": ".*", "$group": ".*"}


def prometheus_binary() -> Path:
    """Debian's prometheus server binary, extracted from the package on first use."""
    if PROMETHEUS.exists():
        return PROMETHEUS
    debs = LOCAL / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", "prometheus"], cwd=debs, check=True)
    deb = next(debs.glob("prometheus_*.deb"))
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as p:
        subprocess.run(["tar", "-x", "-C", str(LOCAL), "./usr/bin/prometheus"], stdin=p.stdout,
                       check=True)  # fmt: skip
    deb.unlink()
    return PROMETHEUS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_prometheus(
    metrics_url: str, token: str, work: Path
) -> tuple[subprocess.Popen[bytes], str]:
    target = urllib.parse.urlsplit(metrics_url)
    job: dict[str, Any] = {
        "job_name": "opsdash",
        "scrape_interval": "5s",
        "metrics_path": target.path or "/metrics",
        "scheme": target.scheme or "http",
        "static_configs": [{"targets": [target.netloc]}],
    }
    if token:
        job["authorization"] = {"type": "Bearer", "credentials": token}
    config = work / "prometheus.yml"
    config.write_text(json.dumps({"global": {"scrape_interval": "5s"}, "scrape_configs": [job]}))
    port = free_port()
    argv = [
        str(prometheus_binary()),
        f"--config.file={config}",
        f"--storage.tsdb.path={work / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def query_range(api: str, expr: str, start: float, end: float) -> list[dict[str, Any]]:
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": 5})
    with urllib.request.urlopen(f"{api}/api/v1/query_range?{query}", timeout=30) as resp:
        body = json.load(resp)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body.get('error')}")
    return list(body["data"]["result"])


def panels_data(api: str, start: float, end: float) -> list[dict[str, Any]]:
    board = json.loads(DASHBOARD.read_text())
    out = []
    for panel in board["panels"]:
        series = []
        for target in panel.get("targets") or []:
            for s in query_range(api, target["expr"], start, end):
                series.append({"labels": s["metric"], "values": s["values"]})
        out.append({"title": panel.get("title", ""), "type": panel.get("type", "timeseries"),
                    "grid": panel.get("gridPos") or {"x": 0, "y": 0, "w": 12, "h": 8},
                    "series": series})  # fmt: skip
    return out


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>opsdash dashboard</title>
<style>
body{margin:0;background:#111217;color:#ccccdc;font:13px sans-serif}
h1{font-size:16px;margin:8px 12px} .sub{color:#8e8e9e;margin:0 12px 8px;font-size:12px}
#grid{display:grid;grid-template-columns:repeat(24,1fr);grid-auto-rows:30px;gap:6px;padding:6px}
.panel{background:#181b1f;border:1px solid #2a2d33;border-radius:3px;overflow:hidden;
display:flex;flex-direction:column} .panel h2{font-size:12px;margin:4px 8px;font-weight:500}
.body{flex:1;min-height:0;overflow:hidden;padding:0 6px} .stat{font-size:28px;padding:8px}
table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #2a2d33;padding:2px 4px;
text-align:left;font-size:11px}
</style><script src="plotly.js"></script></head><body>
<h1>opsdash: queues on Redis Streams</h1><p class="sub" id="sub"></p><div id="grid"></div>
<script type="application/json" id="data">__DATA__</script><script>__SCRIPT__</script>
</body></html>"""

SCRIPT = """
const data = JSON.parse(document.getElementById("data").textContent);
document.getElementById("sub").textContent = data.note;
const grid = document.getElementById("grid");
const label = (l) => Object.entries(l).filter(([k]) => !["__name__","job","instance"].includes(k))
  .map(([k, v]) => k + "=" + v).join(", ") || "value";
for (const p of data.panels) {
  const el = document.createElement("section"); el.className = "panel";
  el.style.gridColumn = (p.grid.x + 1) + " / span " + p.grid.w;
  el.style.gridRow = (p.grid.y + 1) + " / span " + p.grid.h;
  const h = document.createElement("h2"); h.textContent = p.title; el.appendChild(h);
  const body = document.createElement("div"); body.className = "body"; el.appendChild(body);
  grid.appendChild(el);
  const last = (s) => s.values.length ? s.values[s.values.length - 1][1] : "";
  if (p.type === "stat") {
    body.className = "body stat";
    body.textContent = p.series.length ? p.series.map((s) => label(s.labels) + ": "
      + Number(last(s)).toFixed(0)).join("  ") : "0";
  } else if (p.type === "table") {
    const t = document.createElement("table");
    for (const s of p.series.slice(0, 12)) {
      const tr = t.insertRow(); tr.insertCell().textContent = label(s.labels);
      tr.insertCell().textContent = last(s);
    }
    if (!p.series.length) { t.insertRow().insertCell().textContent = "all OK"; }
    body.appendChild(t);
  } else {
    const traces = p.series.slice(0, 12).map((s) => ({
      x: s.values.map((v) => new Date(v[0] * 1000)), y: s.values.map((v) => Number(v[1])),
      name: label(s.labels), type: "scatter", mode: "lines", hoverinfo: "skip"}));
    Plotly.newPlot(body, traces, {paper_bgcolor: "#181b1f", plot_bgcolor: "#181b1f",
      font: {color: "#ccccdc", size: 10}, margin: {l: 40, r: 8, t: 4, b: 24},
      showlegend: traces.length <= 6, legend: {orientation: "h", font: {size: 9}},
      xaxis: {gridcolor: "#2a2d33"}, yaxis: {gridcolor: "#2a2d33"}},
      {staticPlot: true});
  }
}
document.body.dataset.rendered = "1";
"""


def write_page(panels: list[dict[str, Any]], note: str, work: Path) -> Path:
    """``work/index.html`` (and the plotly bundle beside it) drawing ``panels``."""
    shutil.copy(PLOTLY, work / "plotly.js")
    data = json.dumps({"panels": panels, "note": note}).replace("</", "<\\/")
    html = PAGE.replace("__SCRIPT__", SCRIPT).replace("__DATA__", data)
    (work / "index.html").write_text(html)
    return work / "index.html"


def render(panels: list[dict[str, Any]], note: str, out: Path, work: Path) -> None:
    from playwright.sync_api import sync_playwright

    index = write_page(panels, note, work)
    rows = max(p["grid"]["y"] + p["grid"]["h"] for p in panels)
    with sync_playwright() as pw:
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 80 + rows * 36})
        page.goto(index.as_uri())
        page.wait_for_selector("body[data-rendered='1']")
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=True)
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics-url", required=True, help="a console's /metrics URL")
    parser.add_argument("--token", default="", help="METRICS_BEARER_TOKEN, if it has one")
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to scrape")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "grafana-dashboard.png")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="grafana-preview-") as tmp:
        work = Path(tmp)
        proc, api = start_prometheus(args.metrics_url, args.token, work)
        try:
            start = time.time()
            time.sleep(args.minutes * 60)
            end = time.time()
            panels = panels_data(api, start, end)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        note = (f"{len(panels)} panels of deploy/grafana/opsdash.json, PromQL evaluated by "
                f"Prometheus over {args.minutes:g} min of {args.metrics_url}")  # fmt: skip
        render(panels, note, args.out, work)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
