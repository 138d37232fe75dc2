"""Start a private ``redis-server`` (tests, demo, benchmarks): never someone else's.

Binary discovery: ``$REDIS_SERVER_BIN``, then ``PATH``, then the project-local
``.local/redis`` tree (see ``scripts/install-redis-local.sh``). Versions below
7.0 are refused with a message that says how to fix it. ``tls=TlsFiles(...)`` serves TLS
only (``--tls-port``, the plain port off); the certificates are the caller's.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SENTINEL_SERVICE",
    "EmbeddedRedis",
    "RedisSetupError",
    "SentinelProcess",
    "TlsFiles",
    "find_free_port",
    "find_redis_server",
    "probe_ready",
]

MIN_VERSION = (7, 0)
PROJECT_ROOT = Path(__file__).resolve().parent.parent
_FIX = (
    "install Redis >= 7.0 (as root: `apt-get install redis-server`; without root: "
    "`bash scripts/install-redis-local.sh`), or point $REDIS_SERVER_BIN at a redis-server binary"
)


class RedisSetupError(RuntimeError):
    """Raised when no usable redis-server can be found or started."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a TLS server: its certificate and key, and the CA that signed it."""

    cert: Path
    key: Path
    ca: Path

    def server_args(self, port: int) -> list[str]:
        return [
            "--port", "0",
            "--tls-port", str(port),
            "--tls-cert-file", str(self.cert),
            "--tls-key-file", str(self.key),
            "--tls-ca-cert-file", str(self.ca),
            "--tls-auth-clients", "no",
        ]  # fmt: skip

    def client_options(self) -> dict[str, Any]:
        """redis-py options of a client that checks the server against the CA."""
        return {"ssl": True, "ssl_ca_certs": str(self.ca), "ssl_cert_reqs": "required"}


def _version(binary: str) -> tuple[int, int, int]:
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise RedisSetupError(f"cannot run {binary}: {exc}; {_FIX}") from exc
    match = re.search(r"v=(\d+)\.(\d+)\.(\d+)", out)
    if not match:
        raise RedisSetupError(f"cannot read the version of {binary} ({out.strip()!r}); {_FIX}")
    return int(match[1]), int(match[2]), int(match[3])


def find_redis_server() -> str:
    """Path of a redis-server >= 7.0, or RedisSetupError saying how to get one."""
    candidates: list[str] = []
    if env := os.environ.get("REDIS_SERVER_BIN"):
        candidates.append(env)
    elif found := shutil.which("redis-server"):
        candidates.append(found)
    local = PROJECT_ROOT / ".local" / "redis" / "usr" / "bin" / "redis-server"
    if local.exists():
        candidates.append(str(local))
    if not candidates:
        raise RedisSetupError(f"no redis-server found; {_FIX}")
    problems = []
    for binary in candidates:
        version = _version(binary)
        if version[:2] >= MIN_VERSION:
            return binary
        problems.append(f"{binary} is {'.'.join(map(str, version))}")
    raise RedisSetupError(f"Redis >= 7.0 is required ({'; '.join(problems)}); {_FIX}")


def redis_cli_for(server_bin: str) -> str:
    sibling = Path(server_bin).with_name("redis-cli")
    if sibling.exists():
        return str(sibling)
    found = shutil.which("redis-cli")
    if not found:
        raise RedisSetupError(f"redis-cli not found next to {server_bin} or on PATH; {_FIX}")
    return found


def find_free_port(host: str = "127.0.0.1", *, below: int | None = None) -> int:
    """A port nobody listens on; ``below`` bounds it (cluster nodes need port + 10000 free)."""
    for _ in range(200):
        with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            port = random.randint(20000, below - 1) if below else 0
            try:
                sock.bind((host, port))
            except OSError:
                continue
            found = int(sock.getsockname()[1])
        if below is None or not port_in_use(found + 10000, host):
            return found
    raise RedisSetupError("no free port found")


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def probe_ready(host: str, port: int, pid: int, tls: TlsFiles | None = None) -> bool:
    """True once the redis-server on ``host:port`` is process ``pid`` and has loaded its data.

    False while it does not answer yet or still replays its AOF (INFO answers during
    loading, other commands get LOADING). RedisSetupError when another process answers.
    """
    import redis

    options = tls.client_options() if tls else {}
    client = redis.Redis(host=host, port=port, socket_timeout=1, **options)
    try:
        info = client.info()  # server + persistence sections
    except redis.RedisError:
        return False
    finally:
        client.close()
    answering = int(info["process_id"])
    if answering != pid:
        raise RedisSetupError(
            f"port {port} answers as pid {answering}, not our redis-server (pid {pid}): "
            "refusing to use it"
        )
    return not int(info.get("loading", 0))


class EmbeddedRedis:
    """One redis-server process owned by this object (pid checked against INFO)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        persistence: bool = False,
        extra_args: Sequence[str] = (),
        cluster_node: bool = False,
        tls: TlsFiles | None = None,
    ) -> None:
        self.binary = find_redis_server()
        self.host = host
        self._below = 55000 if cluster_node else None
        self._auto_port = port is None  # a port we picked may be raced for: re-pick on conflict
        self.port = port or find_free_port(host, below=self._below)
        self.data_dir = Path(data_dir)
        self.persistence = persistence
        self.extra_args = list(extra_args)
        self.tls = tls
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://{self.host}:{self.port}/0"

    def command(self) -> list[str]:
        persist = (
            ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]
            if self.persistence
            else ["--appendonly", "no", "--save", ""]
        )
        ports = self.tls.server_args(self.port) if self.tls else ["--port", str(self.port)]
        return [
            self.binary,
            "--bind", self.host,
            *ports,
            "--dir", str(self.data_dir),
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str(self.data_dir / "redis.log"),
            "--enable-debug-command", "local",
            *persist,
            *self.extra_args,
        ]  # fmt: skip

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        if port_in_use(self.port, self.host):
            raise RedisSetupError(
                f"port {self.port} on {self.host} is already taken; pick a free one "
                "(REDIS_PORT=... for the demo) or stop what listens there"
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(5):
            self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL)
            try:
                self._wait_ready(timeout)
                return self
            except RedisSetupError as exc:
                if not (self._auto_port and "already in use" in str(exc)) or attempt == 4:
                    raise
                self.port = find_free_port(self.host, below=self._below)
        raise AssertionError("unreachable")

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.data_dir / "redis.log"
                tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
                raise RedisSetupError(f"redis-server exited at start: {tail}")
            if probe_ready(self.host, self.port, self.process.pid, self.tls):
                return
            time.sleep(0.05)
        raise RedisSetupError(f"redis-server did not answer on port {self.port} in {timeout}s")

    def stop(self, sig_kill: bool = False) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if sig_kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


SENTINEL_SERVICE = "mymaster"


class SentinelProcess(EmbeddedRedis):
    """``redis-server <conf> --sentinel`` watching ``master`` as :data:`SENTINEL_SERVICE`:
    the config file comes first, Sentinel rewrites it."""

    def __init__(self, data_dir: Path, master: EmbeddedRedis) -> None:
        super().__init__(data_dir)
        self.master = master

    def command(self) -> list[str]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir / "sentinel.conf"
        where = f"{self.master.host} {self.master.port}"
        service = SENTINEL_SERVICE
        conf.write_text(
            f"sentinel monitor {service} {where} 2\n"
            f"sentinel down-after-milliseconds {service} 1000\n"
            f"sentinel failover-timeout {service} 5000\n"
            f"sentinel parallel-syncs {service} 1\n"
        )
        binary, *options = super().command()
        return [binary, str(conf), "--sentinel", *options]
