"""/metrics: Prometheus text from the stored snapshot, optional bearer token."""

from __future__ import annotations

import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dashboard.collectors.passes import collect_cluster
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def _samples(body: bytes) -> dict[tuple[str, frozenset], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_metrics_from_snapshot(client: Client, mq_config: MQConfig, console_r: redis.Redis) -> None:
    Topics(mq_config).create("orders", 2)
    producer = Producer(mq_config)
    for i in range(3):
        producer.send("orders", f"m{i}", partition=0)
    collect_cluster("default")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = _samples(response.content)
    p0 = {("cluster", "default"), ("topic", "orders"), ("group", "default-group"),
          ("partition", "0")}  # fmt: skip
    assert samples[("redis_streaming_mq_console_lag", frozenset(p0))] == 3.0
    assert samples[("redis_streaming_mq_console_pending", frozenset(p0))] == 0.0
    topic = frozenset({("cluster", "default"), ("topic", "orders")})
    assert samples[("redis_streaming_mq_console_dlq_depth", topic)] == 0.0
    assert samples[("redis_streaming_mq_console_retry_backlog", topic)] == 0.0
    assert samples[("redis_streaming_mq_console_topic_memory_bytes", topic)] > 0
    ok = frozenset({*topic, ("status", "OK")})
    assert samples[("redis_streaming_mq_console_topic_status", ok)] == 1.0
    assert samples[("opsdash_collector_up", frozenset({("cluster", "default")}))] == 1.0
    assert samples[("opsdash_collector_errors_total", frozenset({("cluster", "default")}))] == 0
    assert ("opsdash_collector_duration_seconds", frozenset({("cluster", "default")})) in samples
    assert b"redis://" not in response.content  # no URLs, so no credentials


def test_metrics_bearer_token(client: Client, settings, console_r: redis.Redis) -> None:
    settings.METRICS_BEARER_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    ok = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert ok.status_code == 200
    assert client.post("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").status_code == 405
