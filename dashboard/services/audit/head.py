"""The audit chain's head, exported out of the database after every committed append.

Whoever can write the database can delete the newest rows and lower the row counter
(``AuditChainHead``), or strip the HMACs: the database alone cannot tell. So after every
append commits, the new head (id, hash, rows in the chain, whether it is signed) goes

- to the ``opsdash.audit.head`` logger, one ``audit-head {json}`` line at INFO, for
  shipping to a log store the database's owners cannot rewrite; and
- when ``AUDIT_HEAD_FILE`` is set, to that file: one JSON line appended and fsync'd.

``manage.py audit_verify --head FILE_OR_LINE`` (default: ``AUDIT_HEAD_FILE``) checks the
database against the newest head it is given: see :func:`compare_head`.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

__all__ = ["ChainHead", "HeadError", "export_head", "head_file", "parse_heads", "read_head"]

log = logging.getLogger("opsdash.audit.head")
LOG_TAG = "audit-head "
TAIL_BYTES = 64 * 1024  # a head file is read from its end: the newest heads are there


class HeadError(ValueError):
    """Raised when an exported head cannot be read (no file, no head line in it)."""


@dataclass(frozen=True, slots=True)
class ChainHead:
    id: int
    hash: str
    count: int  # rows in the chain up to and including ``id``
    signed: bool = False  # the head row carried an HMAC
    at: str = ""

    def line(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, data: Any) -> ChainHead:
        if not isinstance(data, dict):
            raise HeadError("an audit head is a JSON object")
        try:
            head = cls(
                id=int(data["id"]),
                hash=str(data["hash"]),
                count=int(data["count"]),
                signed=bool(data.get("signed", False)),
                at=str(data.get("at", "")),
            )
        except (KeyError, TypeError, ValueError):
            raise HeadError("an audit head needs id, hash and count") from None
        if head.id < 1 or head.count < 1 or len(head.hash) != 64:
            raise HeadError("an audit head needs id >= 1, count >= 1 and a 64-digit hash")
        return head


def head_file() -> str:
    return str(getattr(settings, "AUDIT_HEAD_FILE", "") or "")


def export_head(head: ChainHead) -> None:
    """Log ``head`` and append it to ``AUDIT_HEAD_FILE`` (fsync'd). Runs after the
    append committed, so a failure here is logged, never raised into the action."""
    line = head.line()
    log.info("%s%s", LOG_TAG, line)
    path = head_file()
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, (line + "\n").encode())  # one write: lines of processes never mix
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        log.error("could not append the audit head to AUDIT_HEAD_FILE: %s", exc)


def new_head(row_id: int, row_hash: str, count: int, signed: bool) -> ChainHead:
    return ChainHead(row_id, row_hash, count, signed, timezone.now().isoformat())


def parse_heads(text: str) -> list[ChainHead]:
    """Every head in ``text``: JSON lines, or log lines carrying ``audit-head {json}``.
    Lines that hold no head (another log line, a line cut by the tail read) are skipped."""
    heads: list[ChainHead] = []
    for raw in text.splitlines():
        start = raw.find("{")
        if start < 0:
            continue
        try:
            heads.append(ChainHead.from_json(json.loads(raw[start:])))
        except (ValueError, HeadError):
            continue
    return heads


def read_head(source: str) -> ChainHead:
    """The newest head (the highest count) in ``source``: a head line itself, or a file
    of them (its last 64 KiB are read: heads are appended, the newest at the end)."""
    source = source.strip()
    if source.startswith("{") or LOG_TAG in source:
        heads = parse_heads(source)
    else:
        path = Path(source)
        try:
            with path.open("rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - TAIL_BYTES))
                heads = parse_heads(f.read().decode("utf-8", errors="replace"))
        except OSError as exc:
            raise HeadError(f"cannot read the audit head file {source}: {exc.strerror}") from None
    if not heads:
        raise HeadError(f"no audit head in {source[:200]}")
    return max(heads, key=lambda h: (h.count, h.id))
