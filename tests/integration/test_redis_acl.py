"""Least-privilege Redis: the console through the reader and writer users of docs/deploy.md.

A private redis-server gets the doc's two ``ACL SETUSER`` lines as written. The reader
serves the collector pass, pages, drill-downs and CLI reads without one refused command
(Redis's ACL LOG, which also sees errors a caller swallows); actions go through
``write_url``; without a writer, or on a ``read_only`` cluster, an action answers 403
"this console is read-only for cluster default" and writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import Client

from dashboard.clusters import console_keys, console_redis
from dashboard.collectors.passes import collect_cluster
from dashboard.models import ApiToken
from dashboard.store import ConsoleStore
from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis
from tests.integration import retry_items
from tests.integration.acl_support import (
    READER,
    WRITER,
    apply_doc_acls,
    denied,
    doc_acl_lines,
    mq_cluster,
)
from tests.integration.dlq_support import add_letters, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

B = "/clusters/default"
READ_ONLY = "this console is read-only for cluster default"
# CONFIG GET is left out of the reader on purpose (it reads passwords); the health probe
# asks for appendfsync and shows it unknown
EXPECTED_REFUSALS = {(READER, "config|get")}


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedRedis, dict]]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis-acl")).start()
    admin = redis.Redis(host=server.host, port=server.port)
    users = apply_doc_acls(admin)
    admin.close()
    urls = {name: f"redis://{auth}@{server.host}:{server.port}/0" for name, auth in users.items()}
    yield server, urls
    server.stop()


@pytest.fixture
def seeded(acl_server: tuple[EmbeddedRedis, dict], console_r: redis.Redis) -> Iterator[dict]:
    """Topic orders (2 partitions, group workers: 3 pending on p0, a lease), 3 letters and
    a retry item, written by the admin user; the ACL log cleared."""
    server, urls = acl_server
    admin = redis.Redis(host=server.host, port=server.port)
    admin.flushall()
    cfg = MQConfig.from_url(server.url)
    Topics(cfg).create("orders", 2, groups=["workers"])
    with Producer(cfg) as producer:
        ids = [
            producer.send("orders", f'{{"n": {i}}}', key=f"k{i}", partition=0).id for i in range(5)
        ]
    admin.xreadgroup("workers", "c1", {cfg.keys.partition("orders", 0): ">"}, count=3)
    admin.set(cfg.keys.lease("orders", "workers", 0), "c1", px=60_000)
    letters = add_letters(admin, cfg, "orders", 3)
    now = int(time.time() * 1000)
    item = retry_items.schedule(admin, cfg.keys, "orders", 1, "again", due_ms=now + 600_000)
    admin.acl_log_reset()
    item_id = item.rsplit(":", 1)[1]
    yield {"admin": admin, "cfg": cfg, "ids": ids, "letters": letters, "item": item_id, **urls}
    admin.close()


def _client(role: str) -> Client:
    client = Client()
    client.force_login(role_user(role.lower(), role))
    return client


def _read_pages(c: Client, s: dict[str, Any]) -> dict[str, int]:
    ids, letters = s["ids"], s["letters"]
    urls = [
        "/collectors/", f"{B}/", f"{B}/topics/orders/",
        f"{B}/topics/orders/pending/?group=workers", f"{B}/topics/orders/leases/",
        f"{B}/topics/orders/messages/0/{ids[0]}/", f"{B}/topics/orders/messages/",
        f"{B}/topics/orders/dlq/", f"{B}/topics/orders/dlq/{letters[0]}/",
        f"{B}/retries/", f"{B}/topics/orders/retries/", f"{B}/pipelines/",
        f"{B}/topics/orders/retention/", f"{B}/topics/orders/partitions/0/hot-keys/",
        f"{B}/timeline/", f"{B}/topics/orders/lag/export/",
        f"{B}/topics/orders/pending/export/?group=workers", f"{B}/topics/orders/dlq/export-all/",
        f"{B}/topics/orders/groups/workers/position/",
        f"{B}/topics/orders/groups/workers/position/plan/?kind=latest",
        "/api/v1/clusters/default/topics/orders",
    ]  # fmt: skip
    return {url: c.get(url).status_code for url in urls}


def test_the_doc_reader_may_not_write_by_redis_own_categories(acl_server) -> None:
    server, _ = acl_server
    lines = doc_acl_lines()
    assert set(lines) == {READER, WRITER}
    reader = lines[READER]
    assert [w for w in reader if "~" in w] == ["%R~stream:topic:*", "%R~streaming:mq:*"]
    allowed = {w[1:] for w in reader if w.startswith("+")}
    admin = redis.Redis(host=server.host, port=server.port, decode_responses=True)
    writing = set(admin.acl_cat("write")) | set(admin.acl_cat("dangerous"))
    assert allowed & writing == {"info", "slowlog|get"}  # "dangerous" only as admin reads
    assert not allowed & {"eval", "evalsha"}  # scripts only as EVALSHA_RO: reads
    admin.close()


def test_reader_serves_collector_pages_and_cli_reads(seeded, capsys) -> None:
    with mq_cluster(url=seeded[READER]):
        result = collect_cluster(
            "default", claim=False, store=ConsoleStore(console_redis(), console_keys())
        )
        assert result.stored
        assert result.error is None
        assert [t.topic for t in result.snapshot.topics] == ["orders"]
        statuses = _read_pages(_client("Admin"), seeded)
    assert set(statuses.values()) == {200}, (statuses, denied(seeded["admin"]))
    for args in (
        ["topic", "list"], ["topic", "describe", "orders"], ["lag", "orders"],
        ["pending", "orders", "--group", "workers"], ["leases", "orders"],
        ["dlq", "list", "orders"], ["dlq", "get", "orders", seeded["letters"][0]],
        ["retries", "list", "orders"], ["browse", "orders"], ["health"],
        ["topic", "partitions", "orders"], ["retention", "orders"],
    ):  # fmt: skip
        assert main(["--redis-url", seeded[READER], *args]) == 0, args
    capsys.readouterr()
    assert set(denied(seeded["admin"])) <= EXPECTED_REFUSALS


def test_actions_go_through_the_writer(seeded) -> None:
    admin, cfg, letters = seeded["admin"], seeded["cfg"], seeded["letters"]
    p0 = cfg.keys.partition("orders", 0)
    with mq_cluster(url=seeded[READER], write_url=seeded[WRITER]):
        op, boss = _client("Operator"), _client("Admin")
        replay = op.post(f"{B}/topics/orders/dlq/{letters[1]}/replay/", HTTP_HX_REQUEST="true")
        assert 'data-replay-result="replayed"' in replay.content.decode()
        claim = op.post(
            f"{B}/topics/orders/pending/claim/",
            {"group": "workers", "consumer": "c2", "entry": [f"0:{seeded['ids'][0]}"]},
        )
        assert claim.status_code == 302
        move = boss.post(
            f"{B}/topics/orders/groups/workers/position/move/",
            {"kind": "latest", "confirm": "workers", "reason": "skip the backlog"},
        )
        assert move.status_code == 200, move.content.decode()[:300]
        retry = op.post(f"{B}/topics/orders/retries/retry/", {"ids": seeded["item"]})
        assert retry.status_code in (200, 302), retry.content.decode()[:300]
        produce = op.post(
            f"{B}/topics/orders/messages/produce/", {"payload": "hi", "partition": "1"}
        )
        assert produce.status_code in (200, 302), produce.content.decode()[:300]
        to_dlq = op.post(
            f"{B}/topics/orders/pending/move-to-dlq/",
            {"group": "workers", "entry": [f"0:{seeded['ids'][1]}"], "reason": "poison"},
        )
        assert to_dlq.status_code == 302
        delete = boss.post(f"{B}/topics/orders/dlq/{letters[2]}/delete/", {"reason": "noise"})
        assert delete.status_code in (200, 302), delete.content.decode()[:300]
        assert admin.xlen(cfg.keys.partition("orders", 1)) == 3  # replayed, retried, produced
        trim = boss.post(
            f"{B}/topics/orders/retention/trim/",
            {"maxlen": "1", "confirm": "orders", "reason": "keep one"},
        )
        assert trim.status_code == 200, trim.content.decode()[:300]
    owners = {o["name"]: o["pending"] for o in admin.xpending(p0, "workers")["consumers"]}
    assert owners == {b"c1": 1, b"c2": 1}  # one claimed to c2, one moved to the DLQ
    assert admin.xlen(cfg.keys.dlq("orders")) == 3  # 3, one moved in, one deleted
    groups = {g["name"]: g for g in admin.xinfo_groups(p0)}
    assert groups[b"workers"]["last-delivered-id"].decode() == seeded["ids"][-1]
    assert denied(admin) == []


def _refused(resp: Any) -> None:
    assert resp.status_code == 403, resp.content.decode()[:300]
    assert READ_ONLY in resp.content.decode()


def _unchanged(seeded: dict, before: dict) -> None:
    assert _state(seeded) == before


def _state(seeded: dict) -> dict:
    admin, cfg = seeded["admin"], seeded["cfg"]
    p0 = cfg.keys.partition("orders", 0)
    return {
        "lengths": [admin.xlen(cfg.keys.partition("orders", p)) for p in (0, 1)],
        "pending": [
            (e["message_id"], e["consumer"], e["times_delivered"])
            for e in admin.xpending_range(p0, "workers", "-", "+", 10)
        ],
        "groups": admin.xinfo_groups(p0),
        "replays": admin.hgetall(cfg.keys.dlq_replays("orders")),
        "retries": admin.zcard(cfg.keys.retry_zset("orders")),
    }


@pytest.mark.parametrize("how", ["reader-as-writer", "read_only"])
def test_without_a_writer_actions_are_refused_clearly_and_write_nothing(seeded, how) -> None:
    options = (
        {"url": seeded[READER]}
        if how == "reader-as-writer"
        else {"url": seeded[READER], "read_only": True}
    )
    letters, before = seeded["letters"], _state(seeded)
    with mq_cluster(**options):
        op, boss = _client("Operator"), _client("Admin")
        _refused(op.post(f"{B}/topics/orders/dlq/{letters[1]}/replay/"))
        _refused(op.post(
            f"{B}/topics/orders/pending/claim/",
            {"group": "workers", "consumer": "c2", "entry": [f"0:{seeded['ids'][0]}"]},
        ))  # fmt: skip
        _refused(boss.post(
            f"{B}/topics/orders/groups/workers/position/move/",
            {"kind": "latest", "confirm": "workers", "reason": "skip the backlog"},
        ))  # fmt: skip
        _, token = ApiToken.issue(role_user("api-op", "Operator"), read_only=False)
        api = Client().post(
            f"/api/v1/clusters/default/topics/orders/dlq/{letters[1]}/replay", {},
            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
        )  # fmt: skip
        assert api.status_code == 403
        assert READ_ONLY in api.json()["error"]
        dlq_page = op.get(f"{B}/topics/orders/dlq/").content.decode()
        pending_page = op.get(f"{B}/topics/orders/pending/?group=workers").content.decode()
    _unchanged(seeded, before)
    if how == "read_only":  # declared: the pages offer no action, Redis is never asked
        assert "hx-post" not in dlq_page
        assert 'name="entry"' not in pending_page
        assert denied(seeded["admin"]) == []
    else:  # found out from Redis's NOPERM: the buttons are there, the refusal is clear
        assert "hx-post" in dlq_page
        assert {user for user, _ in denied(seeded["admin"])} == {READER}


def test_cli_write_with_the_reader_says_no_permission(seeded, capsys) -> None:
    code = main(["--redis-url", seeded[READER], "dlq", "replay", "orders", seeded["letters"][0]])
    err = capsys.readouterr().err
    assert code != 0
    assert "NOPERM" in err, err
    assert seeded["admin"].xlen(seeded["cfg"].keys.partition("orders", 0)) == 5
