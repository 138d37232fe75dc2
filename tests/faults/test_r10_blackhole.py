"""R10: a network blackhole between a consumer and Redis (in-test TCP proxy).

No call hangs past its socket timeout, the cut-off consumer stops working before
its lease TTL, a peer takes over, and after the heal nothing is lost (requests
the proxy held back reach Redis late and are fenced or reclaimed).
"""

from __future__ import annotations

import selectors
import signal
import socket
import threading
from urllib.parse import urlsplit

import pytest
import redis

from mqcore.config import MQConfig
from tests.faults.checker import (
    Worker,
    check,
    pending_total,
    produce,
    setup_topic,
    sink_records,
    wait_for,
)

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TOPIC, SINK, GROUP, P = "r10", "sink:r10", "default-group", 2


class BlackholeProxy:
    """Loopback TCP proxy; while ``blackhole`` is set it forwards nothing in either direction."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.blackhole = threading.Event()
        self.closing = threading.Event()
        self.peers: dict[socket.socket, socket.socket] = {}
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _drop(self, sock: socket.socket) -> None:
        other = self.peers.pop(sock, None)
        sock.close()
        if other is not None:
            self.peers.pop(other, None)
            other.close()

    def _loop(self) -> None:
        sel = selectors.DefaultSelector()
        while not self.closing.is_set():
            sel = selectors.DefaultSelector()
            sel.register(self.listener, selectors.EVENT_READ)
            if not self.blackhole.is_set():
                for s in self.peers:
                    sel.register(s, selectors.EVENT_READ)
            for key, _ in sel.select(0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    client, _ = self.listener.accept()
                    upstream = socket.create_connection(self.target)
                    self.peers[client], self.peers[upstream] = upstream, client
                    continue
                if sock not in self.peers:
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self._drop(sock)
                    continue
                try:
                    self.peers[sock].sendall(data)
                except OSError:
                    self._drop(sock)
            sel.close()

    def close(self) -> None:
        self.closing.set()
        self.thread.join(5)
        for s in list(self.peers):
            s.close()
        self.listener.close()


def test_blackhole_consumer_stops_before_ttl_and_nothing_is_lost(
    r: redis.Redis, mq_config: MQConfig, redis_url: str
) -> None:
    setup_topic(mq_config, TOPIC, P)
    keys = mq_config.keys
    parts = urlsplit(redis_url)
    proxy = BlackholeProxy(parts.hostname or "127.0.0.1", parts.port or 6379)
    proxied = parts._replace(netloc=f"127.0.0.1:{proxy.port}").geturl()
    common = ("--socket-timeout", "0.5", "--handle-ms", "20", "--ack-batch", "1")
    cut = Worker(proxied, TOPIC, SINK, *common).ready()
    peer = None
    owners = lambda: {r.get(keys.lease(TOPIC, GROUP, p)) for p in range(P)}  # noqa: E731
    try:
        wait_for(lambda: owners() == {cut.name.encode()}, 10, "the proxied consumer's leases")
        produced = produce(mq_config, TOPIC, 40)
        wait_for(lambda: r.llen(SINK) >= 10, 10, "work under way")
        proxy.blackhole.set()
        peer = Worker(redis_url, TOPIC, SINK, *common).ready()
        wait_for(
            lambda: "lease not renewed in time" in cut.stderr(), 10, "the cut consumer to stop"
        )
        wait_for(lambda: owners() == {peer.name.encode()}, 15, "the peer to take over")
        produced += produce(mq_config, TOPIC, 20, start=1000)
        # still cut off: a graceful stop must not hang on dead sockets
        cut.signal(signal.SIGTERM)
        assert cut.wait(20) == 0
        proxy.blackhole.clear()  # held-back requests now reach Redis, late
        wait_for(
            lambda: (
                check(produced, sink_records(r, SINK)).lost == []
                and pending_total(r, mq_config, TOPIC, P) == 0
            ),
            30,
            "the peer to drain everything",
        )
    finally:
        cut.kill()
        if peer is not None:
            peer.kill()
        proxy.close()
    report = check(produced, sink_records(r, SINK))
    assert report.lost == [], report.summary()
    assert report.epoch_regressions == [], report.summary()
