"""The ACL lines of docs/deploy.md (Security, "Least-privilege Redis"), read from the doc, and
a cluster setting of the console pointed at a private server's users."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from dashboard.clusters import reset_caches

ROOT = Path(__file__).resolve().parent.parent.parent
READER, WRITER = "opsdash-reader", "opsdash-writer"


def doc_acl_lines() -> dict[str, list[str]]:
    """user name -> the words of its ``ACL SETUSER`` line, as docs/deploy.md gives them."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("## Security", 1)[1].split("\n## ", 1)[0]
    lines = [
        line.strip()
        for block in re.findall(r"```redis-acl\n(.*?)```", section, flags=re.S)
        for line in block.splitlines()
        if line.strip()
    ]
    out: dict[str, list[str]] = {}
    for line in lines:
        words = shlex.split(line)
        assert words[:2] == ["ACL", "SETUSER"], line
        out[words[2]] = words
    return out


def doc_password(words: list[str]) -> str:
    [password] = [w[1:] for w in words if w.startswith(">")]
    return password


def apply_doc_acls(admin: redis.Redis) -> dict[str, str]:
    """Run the doc's lines as they are (an admin connection); user name -> its URL's userinfo."""
    users: dict[str, str] = {}
    for name, words in doc_acl_lines().items():
        admin.execute_command(*words)
        users[name] = f"{name}:{doc_password(words)}"
    return users


@contextmanager
def mq_cluster(**options: Any) -> Iterator[None]:
    """``MQ_CLUSTERS = {"default": options}`` for the block (cached clients forgotten)."""
    saved = settings.MQ_CLUSTERS
    settings.MQ_CLUSTERS = {"default": options}
    reset_caches()
    try:
        yield
    finally:
        settings.MQ_CLUSTERS = saved
        reset_caches()


def denied(admin: redis.Redis) -> list[tuple[str, str]]:
    """(user, object) of every ACL LOG entry: what Redis refused, even when the caller
    swallowed the error."""
    rows = admin.acl_log()
    return [(str(row.get("username")), str(row.get("object"))) for row in rows]
