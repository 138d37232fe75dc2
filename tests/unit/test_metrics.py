import threading

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from mqcore.metrics import Metrics, register_prometheus


def test_counters_are_thread_safe_and_per_partition() -> None:
    metrics = Metrics()

    def bump() -> None:
        for _ in range(1000):
            metrics.inc_produced("orders", 1)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    metrics.inc_acked("orders", 0, 5)
    assert metrics.get("produced", "orders", 1) == 4000
    assert metrics.get("produced", "orders") == 4000
    assert metrics.get("acked", "orders", 0) == 5
    with pytest.raises(ValueError, match="unknown counter"):
        metrics.inc("bogus", "orders", 0)


def test_prometheus_export_uses_the_java_names() -> None:
    registry = CollectorRegistry()
    metrics = register_prometheus(registry)
    metrics.inc_produced("orders", 2, 3)
    metrics.inc_dead("orders", 0)
    metrics.inc_payload_missing("orders", 0)
    metrics.observe_handle_latency("orders", 2, 7.5)
    text = generate_latest(registry).decode()
    assert 'redis_streaming_mq_produced_total{partition="2",topic="orders"} 3.0' in text
    assert 'redis_streaming_mq_dead_total{partition="0",topic="orders"} 1.0' in text
    assert "redis_streaming_mq_payload_missing_total" in text
    assert (
        'redis_streaming_mq_handle_latency_ms_bucket{le="10.0",partition="2",topic="orders"} 1.0'
        in text
    )
    assert 'redis_streaming_mq_handle_latency_ms_count{partition="2",topic="orders"} 1.0' in text
