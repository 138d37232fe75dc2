"""Export all matching: lag, pending (group-wide PEL) and the DLQ as CSV and JSON, streamed,
bounded, audited and masked, on pages, the API and the CLI (real redis-server)."""

from __future__ import annotations

import csv
import io
import json

import pytest
import redis
from django.test import Client, override_settings

from dashboard.masking import MASK
from dashboard.models import ApiToken, AuditEvent, AuditPhase, SensitiveTopic
from mqcore.admin.export import PendingRows
from mqcore.cli import main
from mqcore.config import MQConfig
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/orders"
API = "/api/v1/clusters/default/topics/orders"
GROUP = "default-group"


def body(resp) -> str:
    assert resp.streaming, "exports stream"
    return b"".join(resp.streaming_content).decode()


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def viewer(name: str = "v") -> Client:
    client = Client()
    client.force_login(role_user(name, "Viewer"))
    return client


def pel(r: redis.Redis, cfg: MQConfig, per_partition: int, partitions: int = 2) -> None:
    """``per_partition`` pending entries on each partition of orders (consumer c1, keys)."""
    for p in range(partitions):
        key = cfg.keys.partition("orders", p)
        pipe = r.pipeline(transaction=False)
        for i in range(per_partition):
            pipe.xadd(key, {"payload": f"m{i}", "key": f"=k{i % 3}"})
        pipe.execute()
        r.xreadgroup(GROUP, "c1", {key: ">"}, count=per_partition)


def exports() -> list[AuditEvent]:
    found = AuditEvent.objects.filter(event_type__endswith=".export", phase=AuditPhase.INTENT)
    return list(found.order_by("id"))


def test_pending_export_streams_every_page_of_every_partition(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 1500)  # more than one XPENDING page per partition
    client = viewer()
    resp = client.get(f"{T}/pending/export/?group={GROUP}&format=csv")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/csv")
    assert 'filename="pending-orders-default-group-max50000.csv"' in resp["Content-Disposition"]
    assert resp["X-Export-Max-Rows"] == "50000"
    got = rows(body(resp))
    assert len(got) == 3000
    assert {g["partition"] for g in got} == {"0", "1"}
    assert list(got[0]) == ["partition", "id", "consumer", "idle_ms", "deliveries"]
    intent, outcome = exports()[0], exports()[0].completion
    assert intent.event_type == "pending.export"
    assert intent.phase == AuditPhase.INTENT
    assert intent.detail["filters"] == {"group": GROUP}
    assert intent.detail["format"] == "csv"
    assert intent.detail["max_rows"] == 50000
    assert outcome.outcome == "exported"
    assert outcome.counts == {"rows": 3000, "scanned": 3000}
    assert outcome.detail == {"truncated": False, "complete": True}


def test_pending_export_filters_limit_and_json(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 10)
    key = mq_config.keys.partition("orders", 1)
    first = r.xpending_range(key, GROUP, "-", "+", 1)[0]["message_id"]
    r.xclaim(key, GROUP, "c2", 0, [first])  # a second delivery, to consumer c2
    client = viewer()
    got = rows(body(client.get(f"{T}/pending/export/?group={GROUP}&min_deliveries=2")))
    assert [(g["partition"], g["consumer"], g["deliveries"]) for g in got] == [("1", "c2", "2")]
    resp = client.get(f"{T}/pending/export/?group={GROUP}&format=json&max_rows=5&partition=0")
    assert "max5.json" in resp["Content-Disposition"]
    data = json.loads(body(resp))
    assert data["max_rows"] == 5
    assert data["filters"]["partition"] == 0
    assert len(data["rows"]) == 5
    assert data["truncated"] is True
    assert data["complete"] is True
    assert data["rows"][0]["partition"] == 0
    assert exports()[-1].completion.detail["truncated"] is True


@pytest.mark.parametrize(
    "query",
    ["", "?group=nope", f"?group={GROUP}&partition=9", f"?group={GROUP}&max_rows=0"],
)
def test_bad_export_input_answers_and_audits_nothing(r, mq_config, query: str) -> None:
    make_topic(mq_config, "orders", 2)
    resp = viewer().get(f"{T}/pending/export/{query}")
    assert resp.status_code in (400, 404)
    assert exports() == []


def test_lag_export_csv_and_json(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 3)
    r.xadd(mq_config.keys.partition("orders", 0), {"payload": "unread"})
    client = viewer()
    got = rows(body(client.get(f"{T}/lag/export/")))
    assert [(g["group"], g["partition"], g["lag"]) for g in got] == [
        (GROUP, "0", "1"),
        (GROUP, "1", "0"),
    ]
    data = json.loads(body(client.get(f"{T}/lag/export/?format=json&group={GROUP}")))
    assert data["export"] == "lag"
    assert data["rows"][0]["exactness"] == "exact"
    assert len(data["rows"]) == 2
    assert data["truncated"] is False
    assert [e.event_type for e in exports()] == ["lag.export", "lag.export"]


def test_dlq_export_all_filters_neutralises_formulas_and_masks(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    add_letters(
        r,
        mq_config,
        "orders",
        450,  # three DLQ pages
        payload=lambda i: f'=HYPERLINK("http://x","{i}")' if i == 449 else f"p{i}",
        key=lambda i: f"k{i % 2}",
    )
    client = viewer()
    got = rows(body(client.get(f"{T}/dlq/export-all/")))
    assert len(got) == 450
    assert got[0]["payload"].startswith("'=HYPERLINK")  # newest first, neutralised
    assert json.loads(got[0]["headers"])["key"] == "k1"
    only = rows(body(client.get(f"{T}/dlq/export-all/?key=k0&partition=0")))
    assert len(only) == 225
    assert {g["key"] for g in only} == {"k0"}
    SensitiveTopic.objects.create(pattern="orders")
    masked = json.loads(body(client.get(f"{T}/dlq/export-all/?format=json&max_rows=3")))
    assert masked["masked"] is True
    assert len(masked["rows"]) == 3
    for row in masked["rows"]:
        assert row["payload"] == MASK
        assert set(row["headers"].values()) == {MASK}
    assert "boom" not in json.dumps(masked)
    assert viewer("v2").get(f"{T}/dlq/export-all/?text=boom").status_code == 400
    assert exports()[-1].detail["masked"] is True
    assert [e.event_type for e in exports()] == ["dlq.export"] * 3


def test_dropped_download_is_audited_as_aborted(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 20)
    resp = viewer().get(f"{T}/pending/export/?group={GROUP}")
    stream = iter(resp.streaming_content)
    next(stream)
    resp.close()
    assert exports()[0].completion.outcome == "aborted"


@override_settings(EXPORT_MAX_ROWS=7)
def test_api_twins_token_and_row_limit(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 5)
    add_letters(r, mq_config, "orders", 4)
    assert Client().get(f"{API}/pending/export?group={GROUP}").status_code == 401
    _, token = ApiToken.issue(role_user("robot", "Viewer"), read_only=True)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    resp = api.get(f"{API}/pending/export?group={GROUP}&format=json")
    assert resp["X-Export-Max-Rows"] == "7"
    data = json.loads(body(resp))
    assert len(data["rows"]) == 7
    assert data["truncated"] is True
    assert len(rows(body(api.get(f"{API}/dlq/export-all")))) == 4
    assert len(rows(body(api.get(f"{API}/lag/export")))) == 2
    bad = api.get(f"{API}/pending/export?group={GROUP}&max_rows=8")
    assert bad.status_code == 400
    assert "max_rows" in bad.json()["error"]
    assert api.get(f"{API}/dlq/export-all?format=xml").status_code == 400


def test_pending_rows_bounds(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 30)
    from mqcore.admin import Admin

    admin = Admin(mq_config)
    scan = PendingRows(
        r, mq_config.keys, "orders", GROUP, [0, 1], admin.groups, page=7, max_scan=40
    )
    assert len(list(scan)) == 40
    assert scan.complete is False
    assert scan.scanned == 40
    from mqcore.errors import UnknownGroupError

    with pytest.raises(UnknownGroupError):
        list(PendingRows(r, mq_config.keys, "orders", "ghost", [0, 1], admin.groups))


def test_cli_format_csv(capsys: pytest.CaptureFixture[str], r, mq_config, redis_url) -> None:
    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 4)
    add_letters(r, mq_config, "orders", 5, payload=lambda i: f"@SUM({i})")

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["--redis-url", redis_url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run("lag", "orders", "--format", "csv")
    assert code == 0
    assert [g["partition"] for g in rows(out)] == ["0", "1"]
    code, out, _ = run("pending", "orders", "--group", GROUP, "--all", "--format", "csv")
    assert code == 0
    assert len(rows(out)) == 8
    code, out, _ = run("pending", "orders", "--group", GROUP, "--format", "csv", "--limit", "3")
    assert code == 0
    assert len(rows(out)) == 3
    code, out, _ = run("--json", "pending", "orders", "--group", GROUP, "--all", "--max-rows", "5")
    assert code == 0
    assert json.loads(out)["truncated"] is True
    code, out, _ = run("dlq", "list", "orders", "--all", "--format", "csv")
    assert code == 0
    assert next(g["payload"] for g in rows(out)) == "'@SUM(4)"
    code, _, err = run("--json", "lag", "orders", "--format", "csv")
    assert code == 2
    assert "exclude" in err
    code, _, err = run("pending", "orders", "--group", GROUP, "--all")
    assert code == 2
    assert "--format csv" in err


def test_dlq_export_of_big_letters_reads_in_byte_bounded_pages(r, mq_config) -> None:
    make_topic(mq_config, "orders", 2)
    add_letters(r, mq_config, "orders", 12, payload=lambda i: f"{i:02d}" + "x" * 300_000)
    data = json.loads(body(viewer().get(f"{T}/dlq/export-all/?format=json")))
    assert [row["payload"][:2] for row in data["rows"]] == [f"{i:02d}" for i in range(11, -1, -1)]
    assert data["scanned"] == 12
    assert data["complete"] is True


def test_pending_export_of_a_group_newer_than_the_snapshot(r, mq_config) -> None:
    """The group is checked live: a group created after the collector's last pass exports
    (it was refused as unknown until the next pass); an unknown one is still a 404."""
    from tests.integration.pages_support import collect

    make_topic(mq_config, "orders", 2)
    pel(r, mq_config, 3)
    collect()  # the snapshot knows default-group only
    for p in range(2):
        key = mq_config.keys.partition("orders", p)
        r.xgroup_create(key, "late", id="0")
        r.xreadgroup("late", "c9", {key: ">"}, count=2)
    client = viewer()
    resp = client.get(f"{T}/pending/export/?group=late&format=csv")
    assert resp.status_code == 200
    assert len(rows(body(resp))) == 4
    assert client.get(f"{T}/pending/export/?group=nope").status_code == 404
