"""A private, throwaway OpenLDAP server (Debian's ``slapd``) for the LDAP login tests.

Never the system's slapd: this one reads a ``slapd.conf`` written into a fresh temp dir
(``slapd -f``), keeps its database (mdb) there, and listens on 127.0.0.1 only, on free
ports: plain ``ldap://`` (StartTLS offered) and ``ldaps://``, with a certificate from
:mod:`tests.harness.tls`. Entries are loaded with ``ldapadd``/``ldapmodify`` bound as the
directory's manager. It is stopped with SIGTERM and the dir is deleted.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scripts.embedded import find_free_port, port_in_use
from tests.harness.tls import make_tls_files

__all__ = [
    "BASE_DN",
    "MANAGER_DN",
    "MANAGER_PASSWORD",
    "PrivateSlapd",
    "SlapdUnavailable",
    "running_slapd",
]

BASE_DN = "dc=example,dc=test"
MANAGER_DN = f"cn=manager,{BASE_DN}"
MANAGER_PASSWORD = "manager-secret"
SLAPD = Path("/usr/sbin/slapd")
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIR = Path("/usr/lib/ldap")
_FIX = "install Debian's slapd and ldap-utils (as root: scripts/bootstrap.sh)"


class SlapdUnavailable(RuntimeError):
    """slapd or the ldap-utils are not installed on this machine."""


def _config(base: Path, tls: Any) -> str:
    schemas = "\n".join(
        f"include {SCHEMA_DIR / name}.schema" for name in ("core", "cosine", "inetorgperson", "nis")
    )
    return f"""{schemas}
pidfile {base / "slapd.pid"}
argsfile {base / "slapd.args"}
modulepath {MODULE_DIR}
moduleload back_mdb
TLSCACertificateFile {tls.ca}
TLSCertificateFile {tls.cert}
TLSCertificateKeyFile {tls.key}
access to attrs=userPassword
    by self write
    by anonymous auth
    by * none
access to * by * read

database mdb
maxsize 16777216
suffix "{BASE_DN}"
rootdn "{MANAGER_DN}"
rootpw {MANAGER_PASSWORD}
directory {base / "data"}
"""


class PrivateSlapd:
    """One slapd owned by this object, in its own temp dir."""

    def __init__(self) -> None:
        missing = [p for p in ("ldapadd", "ldapmodify") if shutil.which(p) is None]
        if not SLAPD.is_file() or missing:
            raise SlapdUnavailable(f"no {SLAPD} or {', '.join(missing)}: {_FIX}")
        self.base = Path(tempfile.mkdtemp(prefix="slapd-test-"))
        self.port = 0
        self.tls_port = 0
        self.ca_file = ""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def tls_uri(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def start(self) -> PrivateSlapd:
        tls = make_tls_files(self.base / "tls")
        self.ca_file = str(tls.ca)
        (self.base / "data").mkdir()
        conf = self.base / "slapd.conf"
        conf.write_text(_config(self.base, tls))
        self.port, self.tls_port = find_free_port(), find_free_port()
        urls = f"ldap://127.0.0.1:{self.port}/ ldaps://127.0.0.1:{self.tls_port}/"
        # -d keeps slapd in the foreground, so the process we hold is the server
        with (self.base / "slapd.log").open("wb") as log:
            self.process = subprocess.Popen(
                [str(SLAPD), "-f", str(conf), "-h", urls, "-d", "0"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 15
        while not (port_in_use(self.port) and port_in_use(self.tls_port)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"slapd did not start: {self.log()[-2000:]}")
            time.sleep(0.05)
        self.add(
            f"""dn: {BASE_DN}
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: ou=people,{BASE_DN}
objectClass: organizationalUnit
ou: people

dn: ou=groups,{BASE_DN}
objectClass: organizationalUnit
ou: groups
"""
        )
        return self

    def console_settings(self, role_map: dict[str, Any]) -> dict[str, Any]:
        """The console's settings for LDAP login against this server (plain ldap://)."""
        return {
            "CONSOLE_LDAP_ENABLED": True,
            "LDAP_SERVER_URI": self.uri,
            "LDAP_START_TLS": False,
            "LDAP_CA_FILE": "",
            "LDAP_USER_SEARCH_BASE": f"ou=people,{BASE_DN}",
            "LDAP_GROUP_SEARCH_BASE": f"ou=groups,{BASE_DN}",
            "LDAP_ROLE_MAP": role_map,
            "AUTHENTICATION_BACKENDS": [
                "axes.backends.AxesStandaloneBackend",
                "django.contrib.auth.backends.ModelBackend",
                "dashboard.sso.directory.ConsoleLDAPBackend",
            ],
        }

    def log(self) -> str:
        path = self.base / "slapd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _ldap(self, tool: str, ldif: str) -> None:
        result = subprocess.run(
            [tool, "-x", "-H", self.uri, "-D", MANAGER_DN, "-w", MANAGER_PASSWORD],
            input=ldif,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{tool} failed: {result.stderr.strip()}")

    def add(self, ldif: str) -> None:
        self._ldap("ldapadd", ldif)

    def modify(self, ldif: str) -> None:
        self._ldap("ldapmodify", ldif)

    def add_user(self, uid: str, password: str, *, mail: str = "") -> str:
        dn = f"uid={uid},ou=people,{BASE_DN}"
        self.add(
            f"""dn: {dn}
objectClass: inetOrgPerson
uid: {uid}
cn: {uid.title()} Tester
givenName: {uid.title()}
sn: Tester
mail: {mail or f"{uid}@example.test"}
userPassword: {password}
"""
        )
        return dn

    def add_group(self, cn: str, *member_uids: str) -> None:
        members = (
            "".join(f"member: uid={uid},ou=people,{BASE_DN}\n" for uid in member_uids)
            or f"member: {MANAGER_DN}\n"
        )  # groupOfNames needs one member
        self.add(f"dn: cn={cn},ou=groups,{BASE_DN}\nobjectClass: groupOfNames\ncn: {cn}\n{members}")

    def set_members(self, cn: str, *member_uids: str) -> None:
        members = [f"uid={uid},ou=people,{BASE_DN}" for uid in member_uids] or [MANAGER_DN]
        lines = "".join(f"member: {m}\n" for m in members)
        self.modify(
            f"dn: cn={cn},ou=groups,{BASE_DN}\nchangetype: modify\nreplace: member\n{lines}"
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def running_slapd(
    users: Sequence[str], groups: Mapping[str, Sequence[str]]
) -> Iterator[PrivateSlapd]:
    """A started slapd with ``users`` (password ``<uid>-password``) and ``groups``
    (cn -> member uids), stopped on exit."""
    server = PrivateSlapd().start()
    try:
        for uid in users:
            server.add_user(uid, f"{uid}-password")
        for cn, members in groups.items():
            server.add_group(cn, *members)
        yield server
    finally:
        server.stop()
