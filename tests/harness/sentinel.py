"""A Redis master, one replica and three Sentinels on loopback, owned by the test.

Every process is a real ``redis-server`` on a free port (:class:`EmbeddedRedis`; a
Sentinel is ``redis-server sentinel.conf --sentinel``). :meth:`LocalSentinel.url` is the
``redis+sentinel://`` URL of the service; :meth:`LocalSentinel.failover` forces a failover
(``SENTINEL FAILOVER``) and waits until every Sentinel names the new master.
"""

from __future__ import annotations

import time
from pathlib import Path

import redis

from scripts.embedded import SENTINEL_SERVICE, EmbeddedRedis, SentinelProcess

SERVICE = SENTINEL_SERVICE


class LocalSentinel:
    def __init__(self, base_dir: Path) -> None:
        self.master = EmbeddedRedis(base_dir / "master")
        self.replica: EmbeddedRedis | None = None
        self.sentinels: list[SentinelProcess] = []
        self.base_dir = base_dir

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"{s.host}:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def start(self) -> LocalSentinel:
        self.master.start()
        where = [self.master.host, str(self.master.port)]
        self.replica = EmbeddedRedis(self.base_dir / "replica", extra_args=["--replicaof", *where])
        self.replica.start()
        self.sentinels = [
            SentinelProcess(self.base_dir / f"sentinel{i}", self.master) for i in range(3)
        ]
        for sentinel in self.sentinels:
            sentinel.start()
        self._wait(self._ready, "the replica in sync and known to every Sentinel")
        return self

    def nodes(self) -> list[EmbeddedRedis]:
        assert self.replica is not None
        return [self.master, self.replica]

    def master_port(self) -> int:
        """The master's port as the first Sentinel names it."""
        with self._client(self.sentinels[0]) as client:
            return int(client.sentinel_get_master_addr_by_name(SERVICE)[1])

    def failover(self) -> int:
        """Force a failover; the new master's port once every Sentinel names it."""
        before = self.master_port()
        with self._client(self.sentinels[0]) as client:
            client.execute_command("SENTINEL", "FAILOVER", SERVICE)

        def moved() -> bool:
            ports = set()
            for sentinel in self.sentinels:
                with self._client(sentinel) as client:
                    ports.add(int(client.sentinel_get_master_addr_by_name(SERVICE)[1]))
            return len(ports) == 1 and before not in ports

        self._wait(moved, "every Sentinel naming the new master")
        return self.master_port()

    def stop(self) -> None:
        for process in [*self.sentinels, self.replica, self.master]:
            if process is not None:
                process.stop()

    def _ready(self) -> bool:
        assert self.replica is not None
        with self._client(self.replica) as replica:
            if replica.info("replication").get("master_link_status") != "up":
                return False
        for sentinel in self.sentinels:
            with self._client(sentinel) as client:
                replicas = client.sentinel_slaves(SERVICE)
                if not any(r["port"] == self.replica.port and not r["is_sdown"] for r in replicas):
                    return False
                if client.sentinel_master(SERVICE)["num-other-sentinels"] < 2:
                    return False
        return True

    @staticmethod
    def _client(process: EmbeddedRedis) -> redis.Redis:
        return redis.Redis(host=process.host, port=process.port, socket_timeout=2)

    @staticmethod
    def _wait(predicate: object, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.1)
