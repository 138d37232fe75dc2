"""Checking the audit log: the hash chain, its HMACs from ``AUDIT_SIGNED_FROM`` on, and
the newest chain head exported out of the database (:mod:`.head`).

The database alone cannot prove it was not cut short or stripped of its HMACs: its
owner can delete the newest rows and lower the counter, or blank every ``mac`` and
rebuild the hashes. Two things kept outside it can:

- ``AUDIT_SIGNED_FROM``, the id of the first row written with ``AUDIT_HMAC_KEY``: every
  row from it on must carry the right HMAC; an unsigned one is a broken chain. Unset
  with a key configured, HMACs are checked from the first row that carries one (a
  stripped chain goes unnoticed) and the report says which value to set.
- the newest exported head: its row must be in the chain with its hash, as the same
  row of the chain (its count), with its HMAC when it had one; the counter must not be
  lower.

Ids are hashed by neither: a row's id below 1 (never handed out) says rows were moved,
e.g. the signed ones below ``AUDIT_SIGNED_FROM`` to strip their HMACs unnoticed.
"""

from __future__ import annotations

import hmac
import threading
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from dashboard.models import AuditChainHead, AuditEvent
from dashboard.models.audit import GENESIS_HASH
from dashboard.services.audit.head import ChainHead, HeadError, head_file, read_head
from dashboard.services.audit.write import hmac_key

__all__ = [
    "VERIFY_CACHE_KEY",
    "ChainReport",
    "audit_verify",
    "audit_verify_cached",
    "signed_from",
]

_verify_lock = threading.Lock()
FIRST_ID = 1  # SQLite and PostgreSQL number the rows from 1
VERIFY_CACHE_KEY = "dashboard:audit-verify"


@dataclass(frozen=True, slots=True)
class ChainReport:
    intact: bool
    checked: int
    first_broken_id: int | None = None
    problem: str = ""
    unsigned: int = 0  # rows written before the HMAC key was configured
    notes: tuple[str, ...] = ()  # what the check could not cover, and what to configure
    pin: int | None = None  # the AUDIT_SIGNED_FROM value to set, when it is not set
    head: ChainHead | None = None  # the exported head the database was checked against

    def __str__(self) -> str:
        if self.intact:
            note = f", {self.unsigned} written before the HMAC key" if self.unsigned else ""
            return f"intact ({self.checked} rows{note})"
        return f"broken at row {self.first_broken_id}: {self.problem} ({self.checked} rows checked)"


def signed_from() -> int | None:
    """``AUDIT_SIGNED_FROM`` as an id, or None when unset (a bad value is a startup error:
    ``config.settings`` reads it as a number)."""
    raw = getattr(settings, "AUDIT_SIGNED_FROM", None)
    return int(raw) if raw else None


def _mac_ok(row: AuditEvent, key: bytes) -> bool:
    return hmac.compare_digest(row.mac.encode(), row.compute_mac(key).encode())


def _default_head(notes: list[str]) -> ChainHead | None:
    path = head_file()
    if not path:
        notes.append("no exported chain head to compare with (set AUDIT_HEAD_FILE, or pass --head)")
        return None
    try:
        return read_head(path)
    except HeadError as exc:
        notes.append(f"truncation not checked: {exc}")
        return None


def audit_verify(*, chunk_size: int = 2000, head: ChainHead | None = None) -> ChainReport:
    """Recompute the chain in id order; the first row whose links do not hold is reported.

    With ``AUDIT_HMAC_KEY`` set, every row from ``AUDIT_SIGNED_FROM`` on (unset: from the
    first one that carries an HMAC) must carry the right one. ``head`` (default: the newest
    in ``AUDIT_HEAD_FILE``) is the chain head exported when it was written.
    """
    notes: list[str] = []
    head = head if head is not None else _default_head(notes)
    prev = GENESIS_HASH
    checked = unsigned = 0
    key = hmac_key()
    pinned = signed_from()
    first_signed: int | None = None
    head_row: AuditEvent | None = None
    head_position = 0
    last_id = 0
    for row in AuditEvent.objects.order_by("id").iterator(chunk_size=chunk_size):
        checked += 1
        last_id = row.pk
        if row.pk < FIRST_ID:  # the id is not hashed: rows moved below AUDIT_SIGNED_FROM
            problem = "an id below 1, which the database never hands out: rows were renumbered"
            return ChainReport(False, checked, row.pk, problem)
        if row.prev_hash != prev:
            return ChainReport(False, checked, row.pk, "prev_hash does not match the row before")
        if row.compute_hash(prev) != row.hash:
            return ChainReport(False, checked, row.pk, "content does not match its hash")
        must_sign = pinned is not None and row.pk >= pinned
        if key and (row.mac or must_sign or (pinned is None and first_signed is not None)):
            if not row.mac and must_sign:
                problem = (
                    f"no HMAC, although every row from {pinned} on is signed"
                    " (AUDIT_SIGNED_FROM): HMACs stripped"
                )
                return ChainReport(False, checked, row.pk, problem)
            if not _mac_ok(row, key):
                problem = "HMAC does not match (wrong AUDIT_HMAC_KEY, or a rewritten chain)"
                return ChainReport(False, checked, row.pk, problem)
            first_signed = first_signed or row.pk
        elif key:
            unsigned += 1
        if head is not None and row.pk == head.id:
            head_row, head_position = row, checked
        prev = row.hash
    appended = AuditChainHead.objects.filter(pk=1).values_list("appended", flat=True).first()
    if appended is not None and appended > checked:
        missing = appended - checked
        return ChainReport(False, checked, last_id, f"{missing} row(s) missing after this one")
    if head is not None:
        problem = _head_problem(head, head_row, head_position, appended or 0, checked)
        if problem:
            return ChainReport(False, checked, last_id or None, problem, head=head)
    pin: int | None = None
    if key and pinned is None:
        pin = first_signed or last_id + 1
        notes.append(
            "HMAC downgrade check not configured: set AUDIT_SIGNED_FROM="
            f"{pin} (the first row signed with AUDIT_HMAC_KEY)"
        )
    elif pinned is not None and not key:
        notes.append("AUDIT_SIGNED_FROM is set but AUDIT_HMAC_KEY is not: HMACs not checked")
    return ChainReport(True, checked, unsigned=unsigned, notes=tuple(notes), pin=pin, head=head)


def _head_problem(
    head: ChainHead, row: AuditEvent | None, position: int, appended: int, checked: int
) -> str:
    """Why the database does not hold the exported ``head``, or "" when it does."""
    if row is None:
        return (
            f"the exported chain head (row {head.id}, {head.count} rows) is not in the "
            "database: rows were deleted (truncated)"
        )
    if row.hash != head.hash:
        return f"the exported chain head's hash is not in the chain (row {head.id} rewritten)"
    if position != head.count:
        return (
            f"the chain holds {position} rows up to row {head.id}, the exported head "
            f"{head.count}: rows were deleted"
        )
    if appended < head.count or checked < head.count:
        return f"fewer rows ({checked}) than the exported head counted ({head.count}): truncated"
    if head.signed and not row.mac:
        return f"row {head.id} was exported signed and has no HMAC now: HMACs stripped"
    return ""


def audit_verify_cached() -> tuple[ChainReport, datetime]:
    """:func:`audit_verify`, re-run at most once per ``AUDIT_VERIFY_INTERVAL_S`` per cache
    (the pages' check: one full re-hash a minute, however often it is asked);
    returns the report and when it was computed. ``manage.py audit_verify`` always re-runs.
    """
    cached = cache.get(VERIFY_CACHE_KEY)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    with _verify_lock:
        cached = cache.get(VERIFY_CACHE_KEY)
        if cached is None:
            cached = (audit_verify(), timezone.now())
            cache.set(VERIFY_CACHE_KEY, cached, int(settings.AUDIT_VERIFY_INTERVAL_S))
    return cached  # type: ignore[no-any-return]
