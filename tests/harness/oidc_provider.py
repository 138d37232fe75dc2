"""Start the test OpenID Connect provider (tests/oidc_provider) as a real gunicorn process.

``OIDCProvider(workdir, console_url)`` generates an RSA signing key, migrates and
seeds the provider's SQLite database (users in groups, the console's client),
serves it on a free port of 127.0.0.1 (the console's live server is "localhost",
so the two never share cookies) and reads its discovery document.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from scripts.embedded import find_free_port

ROOT = Path(__file__).resolve().parent.parent.parent
CLIENT_ID = "opsdash-console"
CLIENT_SECRET = "test-client-secret-123"


def rsa_private_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


class OIDCProvider:
    def __init__(self, workdir: Path, console_url: str) -> None:
        self.workdir = workdir
        self.console_url = console_url.rstrip("/")
        self.port = find_free_port("127.0.0.1")
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ)
        self.env.update(
            DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings",
            PROVIDER_DB=str(workdir / "provider.sqlite3"),
            PROVIDER_RSA_KEY=rsa_private_key_pem(),
            OAUTHLIB_INSECURE_TRANSPORT="1",  # plain http on 127.0.0.1, tests only
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.discovery: dict[str, Any] = {}

    def seed(self, **spec: Any) -> None:
        """Run tests/oidc_provider/seed.py (migrate, users, groups, client) in a subprocess."""
        subprocess.run(
            [sys.executable, "-m", "tests.oidc_provider.seed", json.dumps(spec)],
            cwd=ROOT,
            env=self.env,
            check=True,
            timeout=120,
        )

    def set_users(self, users: list[dict[str, Any]]) -> None:
        self.seed(users=users)

    def start(self, users: list[dict[str, Any]]) -> None:
        self.seed(
            users=users,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uri=f"{self.console_url}/oidc/callback/",
            post_logout_redirect_uri=f"{self.console_url}/login/",
        )
        log = (self.workdir / "provider.log").open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "tests.oidc_provider.wsgi:application",
                f"--bind=127.0.0.1:{self.port}",
                "--workers=1",
                "--threads=4",
                "--log-level=warning",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=log,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(
                    f"{self.url}/o/.well-known/openid-configuration", timeout=2
                ) as answer:
                    self.discovery = json.loads(answer.read())
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "the test OIDC provider did not start: "
                        + (self.workdir / "provider.log").read_text()[-2000:]
                    ) from None
                time.sleep(0.2)

    def console_settings(self) -> dict[str, Any]:
        """The console's OIDC settings for this provider (endpoints from its discovery)."""
        d = self.discovery
        return {
            "CONSOLE_SSO_ENABLED": True,
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": d["authorization_endpoint"],
            "OIDC_OP_TOKEN_ENDPOINT": d["token_endpoint"],
            "OIDC_OP_USER_ENDPOINT": d["userinfo_endpoint"],
            "OIDC_OP_JWKS_ENDPOINT": d["jwks_uri"],
            "OIDC_OP_LOGOUT_ENDPOINT": d["end_session_endpoint"],
            # the test provider's sub is a row id; its users are named by their username
            "OIDC_USERNAME_CLAIM": "preferred_username",
        }

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
