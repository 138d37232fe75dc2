"""The Metrics tab's JSON and page: per-consumer counts a real consumer wrote, percentiles,
slowest first, bad input 400, an unknown group 404, names escaped."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.consumer_metrics import Tally
from mqcore.models import Message
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics
from tests.harness.celery_procs import wait_for
from tests.integration.pages_support import collect, make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

API = "/api/v1/clusters/default/topics/orders/metrics"
SLOW = "slow<img src=x onerror=alert(1)>"


def _consume(mq_config: MQConfig) -> Consumer:
    def handler(message: Message) -> Outcome | None:
        if message.payload == "fail":
            return Outcome.FAIL
        if message.payload == "boom":
            raise RuntimeError("boom")
        return None

    with Producer(mq_config) as producer:
        batch = ["ok"] * 10 + ["fail", "boom"]
        producer.send_many("orders", [OutgoingMessage(payload=p, partition=0) for p in batch])
    options = ConsumerOptions(
        group="billing", name="fast-1", block_ms=100, lease_ttl_ms=2000, renew_interval_ms=300,
        rebalance_interval_ms=200, retry_move_interval_ms=50,
    )  # fmt: skip
    consumer = Consumer(mq_config, "orders", handler, options)
    consumer.start()
    try:
        wait_for(lambda: consumer.stats.dead == 2, what="two dead letters")
    finally:
        consumer.stop(10)
    return consumer


@pytest.fixture
def api(client: Client, console_r, mq_config: MQConfig, r: redis.Redis) -> Client:
    Topics(mq_config).create("orders", 1, groups=["billing"])
    _consume(mq_config)
    slow = Tally()  # a second consumer, through the writer the consumers use
    for _ in range(5):
        slow.handled(300.0, failed=False)
    pipe = r.pipeline(transaction=False)
    slow.queue(pipe, mq_config.keys, "orders", "billing", SLOW)
    pipe.execute()
    collect()
    client.force_login(make_user())
    return client


def test_metrics_json(api: Client) -> None:
    body = api.get(f"{API}?group=billing&window=1h").json()
    assert body["cluster"] == "default"
    assert body["group"] == "billing"
    assert body["window"] == "1h"
    names = [c["name"] for c in body["consumers"]]
    assert names == [SLOW, "fast-1"]  # slowest first
    slow, fast = body["consumers"]
    assert slow["processed"] == 5
    assert 250 <= slow["p50_ms"] <= 500
    assert fast["processed"] == 10 + 1 + 4  # "boom" is handled 4 times (maxRetries 3)
    assert fast["failed"] == 5
    assert fast["retried"] == 3
    assert fast["dead"] == 2
    assert fast["error_rate"] == round(5 / 15, 4)
    assert {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "throughput_per_s"} <= set(fast)
    assert sum(p for _, p, _ in body["series"]["fast-1"]) == 15
    for window in ("6h", "24h", "7d"):
        again = api.get(f"{API}?group=billing&window={window}").json()
        assert {c["name"]: c["processed"] for c in again["consumers"]} == {SLOW: 5, "fast-1": 15}
    assert api.get(API).json()["group"] == "billing"  # the first group by default


def test_metrics_bad_input(api: Client) -> None:
    bad = api.get(f"{API}?window=1y")
    assert bad.status_code == 400
    assert "window" in bad.json()["error"]
    assert api.get(f"{API}?group=ghost").status_code == 404
    assert api.get("/api/v1/clusters/default/topics/ghost/metrics").status_code == 404


def test_metrics_page_escapes_names(api: Client) -> None:
    page = api.get("/clusters/default/topics/orders/metrics/?group=billing&window=24h")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="metrics-table"' in html
    assert "fast-1" in html
    assert SLOW not in html
    assert "slow&lt;img" in html
    assert api.get("/clusters/default/topics/orders/metrics/?window=x").status_code == 400
    openapi = api.get("/api/v1/openapi.json").json()
    assert any(path.endswith("/metrics") for path in openapi["paths"])


def test_prometheus_metrics_carry_the_consumers(api: Client) -> None:
    text = api.get("/metrics").content.decode()
    labels = 'cluster="default",consumer="fast-1",group="billing",topic="orders"'
    assert f"redis_streaming_mq_console_consumer_processed_total{{{labels}}} 15.0" in text
    assert f"redis_streaming_mq_console_consumer_dead_total{{{labels}}} 2.0" in text
    assert f"redis_streaming_mq_console_consumer_handler_seconds_count{{{labels}}} 15.0" in text
    slow = 'le="0.5",topic="orders"} 5.0'  # the 300 ms calls, cumulative at 0.5 s
    assert any(line.endswith(slow) and "slow<img" in line for line in text.splitlines())
    assert "opsdash_metrics_consumer_rows_dropped 0.0" in text
