"""A 3-node Redis Cluster on loopback, owned by the test session."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis

from scripts.embedded import EmbeddedRedis, redis_cli_for


class LocalCluster:
    def __init__(self, base_dir: Path, nodes: int = 3) -> None:
        self.nodes = [
            EmbeddedRedis(
                base_dir / f"node{i}",
                extra_args=[
                    *("--cluster-enabled", "yes", "--cluster-node-timeout", "2000"),
                    *("--cluster-config-file", str(base_dir / f"node{i}" / "nodes.conf")),
                ],
                cluster_node=True,
            )
            for i in range(nodes)
        ]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> LocalCluster:
        for node in self.nodes:
            node.start()
        cli = redis_cli_for(self.nodes[0].binary)
        addrs = [f"{n.host}:{n.port}" for n in self.nodes]
        subprocess.run(
            [cli, "--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = [
                redis.Redis(host=n.host, port=n.port).cluster("info").get("cluster_state")
                for n in self.nodes
            ]
            if all(s == "ok" for s in states):
                return self
            time.sleep(0.1)
        raise RuntimeError("the test cluster did not reach cluster_state:ok")

    def flush(self) -> None:
        for n in self.nodes:
            client = redis.Redis(host=n.host, port=n.port)
            client.flushall()
            client.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
