"""JSON twins of the pages: shapes (CLI field names), paging, 404/400 as JSON."""

import pytest
from django.test import Client

from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import collect, make_user
from tests.snapshot_parts import builtins

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

API = "/api/v1/clusters/default"


@pytest.fixture
def api(client: Client, redis_url: str, console_r, mq_config, r) -> Client:
    Topics(mq_config).create("orders", 2, groups=["billing"])
    Topics(mq_config).create("empty", 1)
    producer = Producer(mq_config)
    for i in range(4):
        producer.send("orders", f'{{"i": {i}}}', partition=0)
    stream = mq_config.keys.partition("orders", 0)
    r.xreadgroup("billing", "c1", {stream: ">"}, count=2)
    collect()
    client.force_login(make_user())
    return client


def test_topics_list_uses_cli_field_names_and_pages(api: Client) -> None:
    body = api.get(f"{API}/topics").json()
    assert body["total"] == 2
    first = body["topics"][0]
    assert {"topic", "partitions", "length", "dlq_length"} <= set(first)
    assert [t["topic"] for t in body["topics"]] == ["empty", "orders"]
    paged = api.get(f"{API}/topics?limit=1&offset=1").json()
    assert [t["topic"] for t in paged["topics"]] == ["orders"]


def test_lag_matches_cli_shape(api: Client) -> None:
    body = api.get(f"{API}/topics/orders/lag?group=billing").json()
    assert body["topic"] == "orders"
    (group,) = body["groups"]
    assert {"group", "lag", "lag_ms", "pending", "lag_exact", "partitions"} <= set(group)
    assert group["lag"] == 2
    assert group["pending"] == 2
    part = group["partitions"][0]
    assert {"partition", "last_delivered_id", "lag", "lag_ms", "pending", "lag_exact"} <= set(part)


def test_pending_matches_cli_shape_and_validates(api: Client) -> None:
    body = api.get(f"{API}/topics/orders/pending?group=billing&sort=count&order=asc&limit=1").json()
    assert body["scanned"] == 2
    assert body["total"] == 2
    (entry,) = body["entries"]
    assert set(entry) == {"partition", "id", "consumer", "idle_ms", "deliveries"}
    for bad in ("limit=x", "limit=100000", "sort=random", "order=up", "limit=0"):
        response = api.get(f"{API}/topics/orders/pending?group=billing&{bad}")
        assert response.status_code == 400, bad
        assert response.json()["error"]
    assert api.get(f"{API}/topics/orders/pending").status_code == 400  # group required
    missing = api.get(f"{API}/topics/orders/pending?group=ghost")
    assert missing.status_code == 404
    assert "ghost" in missing.json()["error"]


def test_leases_topic_overview_message_and_series(api: Client, mq_config) -> None:
    leases = api.get(f"{API}/topics/orders/leases?group=billing").json()
    assert {"group", "partition", "owner", "ttl_ms", "epoch"} <= set(leases["leases"][0])
    assert api.get(f"{API}/topics/orders/leases?group=ghost").status_code == 404
    detail = api.get(f"{API}/topics/orders").json()
    assert detail["groups"][0]["group"] == "billing"
    assert detail["groups"][0]["complete"] == 0.5  # share of partitions with a full window
    assert detail["groups"][0]["partitions"][0]["partition"] == 0
    overview = api.get(f"{API}/overview?problems=0&per_page=1").json()
    assert overview["pages"] == 2
    assert len(overview["topics"]) == 1
    entry_id = api.get(f"{API}/topics/orders/pending?group=billing").json()["entries"][0]["id"]
    msg = api.get(f"{API}/topics/orders/messages/0/{entry_id}").json()
    assert msg["id"] == entry_id
    assert msg["payload"].startswith('{"i"')
    assert msg["payload_masked"] is False
    assert api.get(f"{API}/topics/orders/messages/0/bad-id").status_code == 400
    assert api.get(f"{API}/topics/orders/messages/0/1-1").status_code == 404
    series = api.get(f"{API}/topics/orders/series?metric=lag&window=6h").json()
    assert series["metric"] == "lag"
    assert "billing" in series["series"]
    assert api.get(f"{API}/topics/orders/series?metric=evil").status_code == 400


def test_unknown_cluster_and_topic_are_json_404(api: Client) -> None:
    for url in ("/api/v1/clusters/nope/topics", f"{API}/topics/ghost", f"{API}/topics/ghost/lag",
                f"{API}/topics/ghost/leases", f"{API}/topics/ghost/pending?group=g"):  # fmt: skip
        response = api.get(url)
        assert response.status_code == 404, url
        assert response["Content-Type"] == "application/json"
        assert response.json()["status"] == 404


def test_anonymous_gets_json_401_not_a_redirect(client: Client, redis_url: str) -> None:
    response = client.get(f"{API}/topics")
    assert response.status_code == 401
    assert response.json()["error"].startswith("authentication required")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_api_is_read_only(api: Client) -> None:
    response = api.post(f"{API}/topics")
    assert response.status_code == 405
    assert response.json()["status"] == 405


def test_topic_detail_reads_live_the_last_ids_the_collector_left_out(
    api: Client, mq_config, r
) -> None:
    """The collector reads no last id that a group's position does not tell (billing lags
    by 2 on partition 0): the topic API reads its partitions' last ids live."""
    from dashboard.selectors.pages.snapshot import snapshot_get, snapshot_topic_get

    stored = snapshot_topic_get(snapshot_get("default"), "orders")
    assert stored is not None
    assert stored.partition_last_ids == [None, "0-0"]
    newest = Producer(mq_config).send("orders", "{}", partition=0).id  # after the pass
    detail = api.get(f"{API}/topics/orders").json()
    rows = {p["partition"]: p for p in detail["groups"][0]["partitions"]}
    assert rows[0]["last_id"] == newest
    assert rows[1]["last_id"] == "0-0"
    assert rows[0]["lag"] == 2  # the rest is the snapshot's


def test_an_emptied_partition_keeps_its_last_generated_id_everywhere(
    api: Client, mq_config, r, capsys
) -> None:
    """Ack-delete (XDEL) empties partition 0: the snapshot (full and the collector's), the
    topic API, ``mqcore topic partitions``, ``last_ids`` and ``Admin.lag`` all answer the id
    its data ended at (the last-generated id), not 0-0."""
    import json

    from mqcore.admin import Admin
    from mqcore.admin.partitions import last_ids
    from mqcore.cli import main

    stream = mq_config.keys.partition("orders", 0)
    r.xgroup_create(stream, "spark", "0")  # a pipeline's group, left at 0-0
    r.xreadgroup("billing", "c1", {stream: ">"}, count=10)
    ids = [e[0] for e in r.xrange(stream)]
    r.xack(stream, "billing", *ids)
    r.xdel(stream, *ids)
    last = ids[-1].decode()
    assert r.xlen(stream) == 0
    admin = Admin(mq_config, r)
    assert builtins(admin.snapshot())["topics"][1]["partition_last_ids"] == [last, "0-0"]
    assert last_ids(r, mq_config.keys, "orders", [0, 1]) == {0: last, 1: "0-0"}
    lag = next(g for g in admin.lag("orders") if g.group == "billing")
    assert [p.last_id for p in lag.partitions] == [last, "0-0"]
    assert main(["--redis-url", mq_config.url, "topic", "partitions", "orders", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["partitions"]
    assert [p["last_id"] for p in rows] == [last, "0-0"]
    stored = collect()  # the collector's lean pass reads no last id: left to the API
    orders = next(t for t in stored["topics"] if t["topic"] == "orders")
    assert orders["partition_last_ids"][0] in (None, last)
    detail = api.get(f"{API}/topics/orders").json()
    parts = {p["partition"]: p for p in detail["groups"][0]["partitions"]}
    assert (parts[0]["last_id"], parts[1]["last_id"]) == (last, "0-0")
