"""The observability kit under deploy/: promtool checks and unit-tests the alerting rules, and
every metric the Grafana dashboard and the rules use is exported by a real /metrics."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dashboard.collectors.passes import collect_cluster
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "opsdash-rules.yml"
RULES_TEST = ROOT / "deploy" / "prometheus" / "opsdash-rules.test.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "opsdash.json"
# one expression per line in the rules file (promtool checks the YAML itself)
RULE_EXPR = re.compile(r"^\s+expr: (.+)$", re.MULTILINE)
RULE_ALERT = re.compile(r"^\s+- alert: (\w+)$", re.MULTILINE)
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                "or", "unless", "offset", "inf", "nan"}  # fmt: skip


def promtool() -> str:
    found = (
        os.environ.get("PROMTOOL")
        or shutil.which("promtool")
        or next((str(p) for p in [ROOT / ".local/prometheus/usr/bin/promtool"] if p.exists()), "")
    )
    if not found:
        pytest.fail("promtool not found: run `make install` (scripts/install-promtool-local.sh)")
    return found


def run_promtool(*args: str) -> str:
    done = subprocess.run(
        [promtool(), *args], cwd=RULES.parent, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_promtool_checks_the_rules() -> None:
    out = run_promtool("check", "rules", RULES.name)
    assert "SUCCESS: 9 rules found" in out


def test_promtool_unit_tests_pass() -> None:
    assert "SUCCESS" in run_promtool("test", "rules", RULES_TEST.name)


def test_rules_cover_stall_stop_rewind_dlq_checkpoint_collector_and_master_change() -> None:
    text = RULES.read_text()
    exprs = " ".join(RULE_EXPR.findall(text))
    assert len(RULE_EXPR.findall(text)) == len(RULE_ALERT.findall(text)) == 9
    for needle in ('status="STALL"', 'status="STOP"', 'status="REWIND"', "dlq_depth",
                   "checkpoint_age_seconds", "opsdash_collector_up",
                   "opsdash_collector_last_success_timestamp_seconds",
                   'opsdash_alerts_open{rule="master_change"}'):  # fmt: skip
        assert needle in exprs
    tested = set(re.findall(r"alertname: (\w+)", RULES_TEST.read_text()))
    assert tested == set(RULE_ALERT.findall(text))  # every rule has a promtool unit test


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (selectors, not functions or labels)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        after = text[match.end() :].lstrip()
        if after.startswith("(") or match[0].lower() in PROMQL_WORDS:
            continue  # a function or an operator keyword
        if match.start() and (text[match.start() - 1].isdigit() or text[match.start() - 1] == "$"):
            continue  # a duration unit (5m) or a Grafana variable
        names.add(match[0])
    return names


def dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        query = (var.get("query") or {}).get("query", "") if var["type"] == "query" else ""
        if match := re.fullmatch(r"label_values\((.*),\s*\w+\)", query):
            exprs.append(match[1])
    return exprs


def test_metric_name_parser() -> None:
    assert metric_names(
        'max by (cluster, topic) (foo_seconds{a=~"$x",b="by"}) > 900 and time() - bar_total[5m]'
    ) == {"foo_seconds", "bar_total"}


def test_dashboard_is_importable_with_cluster_topic_group_variables() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"]
    assert dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert {"datasource", "cluster", "topic", "group"} <= set(variables)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]
    titles = " ".join(p["title"] for p in dashboard["panels"]).lower()
    for needle in ("lag (entries)", "lag in time", "status", "dlq depth", "dlq growth",
                   "oldest pending", "checkpoint age", "collector"):  # fmt: skip
        assert needle in titles


@pytest.mark.redis
@pytest.mark.django_db
def test_every_metric_the_kit_uses_is_exported(
    client: Client, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    Topics(mq_config).create("orders", 2)
    Producer(mq_config).send("orders", "m0", partition=0)
    assert collect_cluster("default").stored
    body = client.get("/metrics").content.decode()
    exported: set[str] = set()
    with_samples: set[str] = set()
    for family in text_string_to_metric_families(body):
        exported.add(family.name + ("_total" if family.type == "counter" else ""))
        with_samples |= {s.name for s in family.samples}
    used: set[str] = set()
    for expr in dashboard_exprs(json.loads(DASHBOARD.read_text())):
        used |= metric_names(expr)
    for expr in RULE_EXPR.findall(RULES.read_text()):
        used |= metric_names(expr)
    assert len(used) >= 12
    assert used - exported == set()
    # a healthy topic without pipelines fills all but these (nothing pending, no alert open)
    empty_here = {"checkpoint_age_seconds", "checkpoints_failed", "oldest_pending_seconds",
                  "opsdash_alerts_open"}  # fmt: skip
    expect = {n for n in used if not any(n.endswith(s) for s in empty_here)}
    assert expect - with_samples == set()
