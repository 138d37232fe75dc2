"""The console and mqcore over TLS: a redis-server with only a TLS port, certificates made
here (tests/harness/tls.py), ``rediss://`` URLs with the CA in their query and redis-py's
certificate and host name checks on (docs/deploy.md, "TLS to Redis")."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from dashboard.clusters import console_keys, console_redis
from dashboard.collectors.passes import collect_cluster
from dashboard.store import ConsoleStore
from mqcore.admin import Admin
from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, Outcome
from mqcore.errors import ConnectionLostError
from mqcore.models import Message
from mqcore.producer import Producer
from mqcore.retry import RetryPolicy
from mqcore.topics import Topics
from scripts.embedded import EmbeddedRedis, TlsFiles
from tests.harness.tls import make_ca, make_tls_files
from tests.integration.acl_support import mq_cluster
from tests.integration.dlq_support import role_user
from tests.snapshot_parts import builtins

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

B = "/clusters/default"
FAST = ConsumerOptions(
    group="workers", lease_ttl_ms=2000, renew_interval_ms=300, rebalance_interval_ms=100,
    block_ms=100, batch_size=20, ack_batch=20,
    retry_policy=RetryPolicy(max_retries=0, base_ms=10, max_ms=20, jitter=0.0),
)  # fmt: skip


@pytest.fixture(scope="module")
def tls_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[EmbeddedRedis, TlsFiles, Path]]:
    base = tmp_path_factory.mktemp("redis-tls")
    files = make_tls_files(base / "certs")
    other_ca, _, _ = make_ca(base / "certs", "other-ca")
    server = EmbeddedRedis(base / "data", tls=files).start()
    yield server, files, other_ca
    server.stop()


def _url(server: EmbeddedRedis, ca: Path, host: str = "127.0.0.1") -> str:
    return f"rediss://{host}:{server.port}/0?ssl_ca_certs={ca}"


def test_tls_verifies_the_server_by_ip_and_by_name(tls_server) -> None:
    server, files, _ = tls_server
    assert server.url.startswith("rediss://")
    for host in ("127.0.0.1", "localhost"):  # both names are in the certificate
        client = MQConfig.from_url(_url(server, files.ca, host)).client()
        assert client.ping() is True
        client.close()


def test_collector_pages_producer_consumer_and_replay_over_tls(tls_server, console_r) -> None:
    server, files, _ = tls_server
    url = _url(server, files.ca)
    cfg = MQConfig.from_url(url)
    cfg.client().flushall()
    Topics(cfg).create("orders", 2, groups=["workers"])
    with Producer(cfg) as producer:
        for i in range(10):
            producer.send("orders", "poison" if i == 3 else f"m{i}", key=f"k{i}")
    seen: list[str] = []
    lock = threading.Lock()

    def handler(message: Message) -> Outcome:
        with lock:
            seen.append(str(message.payload))
        return Outcome.FAIL if message.payload == "poison" else Outcome.SUCCESS

    consumer = Consumer(cfg, "orders", handler, FAST)
    consumer.start()
    try:
        deadline = time.monotonic() + 15
        while consumer.stats.acked + consumer.stats.dead < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        consumer.stop(10)
    assert sorted(seen) == sorted(["poison", *(f"m{i}" for i in range(10) if i != 3)])
    with mq_cluster(url=url):
        result = collect_cluster(
            "default", claim=False, store=ConsoleStore(console_redis(), console_keys())
        )
        assert result.stored
        assert result.error is None
        [topic] = builtins(result.snapshot)["topics"]
        assert topic["length"] == 10
        assert topic["dlq_length"] == 1
        client = Client()
        client.force_login(role_user("operator", "Operator"))
        for page in (f"{B}/", f"{B}/topics/orders/", f"{B}/topics/orders/messages/"):
            assert client.get(page).status_code == 200, page
        dlq_page = client.get(f"{B}/topics/orders/dlq/").content.decode()
        assert "poison" in dlq_page
        [letter] = [entry_id for entry_id, _ in cfg.client().xrange(cfg.keys.dlq("orders"))]
        letter_id = letter.decode()
        replay = client.post(f"{B}/topics/orders/dlq/{letter_id}/replay/", HTTP_HX_REQUEST="true")
        assert 'data-replay-result="replayed"' in replay.content.decode()
    lengths = [cfg.client().xlen(cfg.keys.partition("orders", p)) for p in (0, 1)]
    assert sum(lengths) == 11  # the letter is back on its partition


def test_a_server_signed_by_another_ca_is_refused_clearly(tls_server, capsys) -> None:
    server, _, other_ca = tls_server
    url = _url(server, other_ca)
    with pytest.raises(ConnectionLostError, match="certificate verify failed"):
        Admin(MQConfig.from_url(url)).topics()
    assert main(["--redis-url", url, "topic", "list"]) != 0
    assert "certificate verify failed" in capsys.readouterr().err
    with mq_cluster(url=url):
        result = collect_cluster(
            "default", claim=False, store=ConsoleStore(console_redis(), console_keys())
        )
        assert not result.stored
        assert "certificate verify failed" in (result.error or "")
        client = Client()
        client.force_login(role_user("viewer", "Viewer"))
        page = client.get(f"{B}/topics/orders/dlq/")
        assert page.status_code == 503
        assert "Could not read from cluster default" in page.content.decode()
