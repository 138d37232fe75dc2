"""A private, throwaway PostgreSQL for the test suite (never one on a default port).

Binaries: ``$PG_BIN_DIR``, else the newest ``/usr/lib/postgresql/<version>/bin``
holding ``initdb`` and ``postgres``. The cluster lives in a fresh temp dir: data
directory, a private unix socket dir and the server log. It listens on
127.0.0.1 only, on a free port, with trust auth and fsync off; it is stopped
with an immediate shutdown (SIGQUIT) and the dir is deleted.

PostgreSQL refuses to run as root: as uid 0 the temp dir is chowned to the
``postgres`` system user and ``initdb`` / ``postgres`` run as that user
(``subprocess`` drops privileges before ``exec``, so the process we hold IS the
postmaster and its pid can be checked against ``postmaster.pid`` and the server).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scripts.embedded import find_free_port, port_in_use

__all__ = [
    "PostgresSetupError",
    "PostgresUnavailable",
    "PrivatePostgres",
    "create_database",
    "drop_database",
    "find_pg_bin_dir",
    "scratch_database",
]

PG_SYSTEM_USER = "postgres"
DEBIAN_ROOT = Path("/usr/lib/postgresql")
_FIX = (
    "install PostgreSQL server binaries (as root: `apt-get install postgresql`, or run "
    "scripts/bootstrap.sh), point $PG_BIN_DIR at a directory with initdb and postgres, "
    "or set TEST_POSTGRES_URL to a server the tests may CREATE DATABASE on"
)


class PostgresUnavailable(RuntimeError):
    """This machine cannot run a private PostgreSQL (binaries or the system user missing)."""


class PostgresSetupError(RuntimeError):
    """The private PostgreSQL was found but did not start (or something else answered)."""


def _usable_bin_dir(path: Path) -> bool:
    return (path / "initdb").is_file() and (path / "postgres").is_file()


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.parent.name)) or (0,)


def find_pg_bin_dir() -> Path:
    """``$PG_BIN_DIR`` or the newest ``/usr/lib/postgresql/*/bin``; else PostgresUnavailable."""
    if env := os.environ.get("PG_BIN_DIR"):
        path = Path(env)
        if not _usable_bin_dir(path):
            raise PostgresUnavailable(f"$PG_BIN_DIR={env} has no initdb and postgres; {_FIX}")
        return path
    found = sorted((p for p in DEBIAN_ROOT.glob("*/bin") if _usable_bin_dir(p)), key=_version_key)
    if not found:
        raise PostgresUnavailable(f"no PostgreSQL server binaries in {DEBIAN_ROOT}/*/bin; {_FIX}")
    return found[-1]


def _run_as_user() -> pwd.struct_passwd | None:
    """The account to run PostgreSQL as: ``postgres`` when we are root, else ourselves (None)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root, and PostgreSQL refuses to run as root: it needs the "
            f"'{PG_SYSTEM_USER}' system user, which does not exist on this machine (installing "
            f"Debian's postgresql package creates it; or run the tests as a normal user)"
        ) from None


class PrivatePostgres:
    """One postmaster owned by this object, in its own temp dir; verified to be ours."""

    def __init__(self, bin_dir: Path | None = None, *, host: str = "127.0.0.1") -> None:
        self.bin_dir = bin_dir or find_pg_bin_dir()
        self.user = _run_as_user()
        self.host = host
        self.port = 0
        self.base_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self.started_at: Any = None  # pg_postmaster_start_time() of the verified server

    # --- paths and URLs ----------------------------------------------------

    @property
    def data_dir(self) -> Path:
        assert self.base_dir is not None, "start() first"
        return self.base_dir / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.base_dir is not None, "start() first"
        return self.base_dir / "sock"

    @property
    def log_path(self) -> Path:
        assert self.base_dir is not None, "start() first"
        return self.base_dir / "postgres.log"

    @property
    def url(self) -> str:
        """Superuser URL of the ``postgres`` database (trust auth, TCP on loopback)."""
        return f"postgresql://{PG_SYSTEM_USER}@{self.host}:{self.port}/postgres"

    # --- lifecycle ---------------------------------------------------------

    def _popen_kwargs(self) -> dict[str, Any]:
        env = {**os.environ, "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}
        if self.user is None:
            return {"env": env}
        env.update(HOME=self.user.pw_dir, USER=self.user.pw_name, LOGNAME=self.user.pw_name)
        return {
            "env": env,
            "user": self.user.pw_uid,
            "group": self.user.pw_gid,
            "extra_groups": [],
            "cwd": str(self.base_dir),
        }

    def _make_base_dir(self) -> None:
        self.base_dir = Path(tempfile.mkdtemp(prefix="opsdash-pg-"))
        self.socket_dir.mkdir()
        if self.user is None:
            return
        for parent in self.base_dir.parents:  # the postgres user must reach its own dir
            if not os.stat(parent).st_mode & 0o001:
                raise PostgresSetupError(
                    f"{parent} is not searchable by the '{PG_SYSTEM_USER}' user; "
                    "point TMPDIR at a world-searchable directory (like /tmp)"
                )
        for path in (self.base_dir, self.socket_dir):
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def _initdb(self) -> None:
        cmd = [
            str(self.bin_dir / "initdb"),
            "-D", str(self.data_dir),
            "-U", PG_SYSTEM_USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ]  # fmt: skip
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=120, check=False, **self._popen_kwargs()
        )
        if done.returncode != 0:
            raise PostgresSetupError(
                f"initdb failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}"
            )

    def _command(self) -> list[str]:
        settings = {
            "listen_addresses": self.host,
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "40",
            "shared_buffers": "16MB",
            "max_wal_senders": "0",
            "wal_level": "minimal",
            "autovacuum": "off",
            "logging_collector": "off",
            "log_min_messages": "warning",
        }
        args = [str(self.bin_dir / "postgres"), "-D", str(self.data_dir)]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        return args

    def start(self, timeout: float = 30.0) -> PrivatePostgres:
        self._make_base_dir()
        try:
            self._initdb()
            for attempt in range(5):
                self.port = find_free_port(self.host)
                if port_in_use(self.port, self.host):
                    continue
                self._log = self.log_path.open("ab")
                self.process = subprocess.Popen(
                    self._command(),
                    stdin=subprocess.DEVNULL,
                    stdout=self._log,
                    stderr=subprocess.STDOUT,
                    **self._popen_kwargs(),
                )
                try:
                    self._wait_ready(timeout)
                    return self
                except PostgresSetupError as exc:
                    self._kill()
                    if "already in use" not in str(exc) or attempt == 4:
                        raise
            raise PostgresSetupError("no free port found for the private PostgreSQL")
        except BaseException:
            self.stop()
            raise

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PostgresSetupError(f"postgres exited at start: {self._log_tail()}")
            try:
                with psycopg.connect(self.url, connect_timeout=2, autocommit=True) as conn:
                    row = conn.execute(
                        "SELECT current_setting('data_directory'), pg_postmaster_start_time()"
                    ).fetchone()
            except psycopg.OperationalError:
                time.sleep(0.05)
                continue
            self._verify_ours(row)
            self.started_at = row[1] if row else None
            return
        raise PostgresSetupError(
            f"postgres did not answer on {self.host}:{self.port} in {timeout}s: {self._log_tail()}"
        )

    def _verify_ours(self, row: tuple[Any, ...] | None) -> None:
        """The server on our port runs from our data dir, and our process is its postmaster."""
        assert self.process is not None
        data_dir = str(row[0]) if row else ""
        pid_file = self.data_dir / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            pid = -1
        if Path(data_dir).resolve() != self.data_dir.resolve() or pid != self.process.pid:
            raise PostgresSetupError(
                f"{self.host}:{self.port} answers from data dir {data_dir!r} (postmaster pid "
                f"{pid}), not our server ({self.data_dir}, pid {self.process.pid}): refusing it"
            )

    def _kill(self) -> None:
        """Immediate shutdown (SIGQUIT), SIGKILL if it lingers."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        self._kill()
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    def __enter__(self) -> PrivatePostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- scratch databases on any server the suite may use ------------------------


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def create_database(admin_url: str, prefix: str = "opsdash_test") -> str:
    """CREATE DATABASE <prefix>_<random> and return its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    if not re.fullmatch(r"[a-z0-9_]{1,63}", name):
        raise ValueError(f"bad database name {name!r}: use [a-z0-9_] only")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return _with_database(admin_url, name)


def drop_database(admin_url: str, db_url: str) -> None:
    import psycopg

    name = urlsplit(db_url).path.lstrip("/")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scratch_database(admin_url: str, prefix: str = "opsdash_test") -> Iterator[str]:
    """A fresh database for one module or test, dropped afterwards."""
    url = create_database(admin_url, prefix)
    try:
        yield url
    finally:
        drop_database(admin_url, url)
