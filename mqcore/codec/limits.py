"""How much of a value a reader decodes: the size cap of one value and the budget of a page.

Payloads, headers and Java's Kryo values are data another process wrote. A value longer
than :data:`DEFAULT_MAX_DECODE_BYTES` (``MQConfig.max_decode_bytes``) is never parsed: the
reader looks at its length (the bytes already fetched, or ``STRLEN``/``HSTRLEN``) and keeps
an :class:`Undecoded` marker ("too large, N bytes") in place of its text. A page (a DLQ
page, a retry page, a browser page, a trace) also decodes at most
:data:`DEFAULT_DECODE_BUDGET_BYTES` (``MQConfig.decode_budget_bytes``) of payloads: past
that, the remaining payloads get the marker "not decoded: page budget reached". The raw
bytes stay downloadable; nothing here reads them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

__all__ = [
    "BUDGET",
    "DEFAULT_DECODE_BUDGET_BYTES",
    "DEFAULT_MAX_DECODE_BYTES",
    "TOO_LARGE",
    "DecodeBudget",
    "Undecoded",
]

DEFAULT_MAX_DECODE_BYTES = 1024 * 1024  # one value longer than this is never decoded
DEFAULT_DECODE_BUDGET_BYTES = 8 * 1024 * 1024  # of payloads one page decodes at most
TOO_LARGE = "too_large"
BUDGET = "budget"


@dataclass(frozen=True, slots=True)
class Undecoded:
    """A value kept undecoded: its stored ``size`` in bytes and why (:data:`TOO_LARGE`:
    over the cap; :data:`BUDGET`: the page had decoded its budget)."""

    size: int
    reason: str = TOO_LARGE

    def __str__(self) -> str:
        if self.reason == BUDGET:
            return "not decoded: page budget reached"
        return f"too large, {self.size} bytes"

    def as_dict(self) -> dict[str, object]:
        return {"size": self.size, "reason": self.reason, "text": str(self)}


class DecodeBudget:
    """The decode limits of one page: the cap of one value and the bytes left to decode.

    ``admit(size)`` says whether a payload of ``size`` bytes may be decoded, and spends
    the budget when it may; ``fits(size)`` checks the cap alone (headers, field names).
    """

    __slots__ = ("left", "max_value_bytes")

    def __init__(
        self,
        max_value_bytes: int = DEFAULT_MAX_DECODE_BYTES,
        page_bytes: int = DEFAULT_DECODE_BUDGET_BYTES,
    ) -> None:
        if max_value_bytes < 0 or page_bytes < 0:
            raise ValueError("decode limits are byte counts >= 0")
        self.max_value_bytes, self.left = max_value_bytes, page_bytes

    @classmethod
    def cap_only(cls, max_value_bytes: int = DEFAULT_MAX_DECODE_BYTES) -> DecodeBudget:
        """The cap without a page budget: for readers that keep nothing they decode (filters)."""
        return cls(max_value_bytes, sys.maxsize)

    @classmethod
    def no_payloads(cls, max_value_bytes: int = DEFAULT_MAX_DECODE_BYTES) -> DecodeBudget:
        """The cap, and no payload decoded at all: for readers that look at headers only."""
        return cls(max_value_bytes, 0)

    def fits(self, size: int) -> bool:
        return size <= self.max_value_bytes

    def admit(self, size: int) -> Undecoded | None:
        """None (decode it; the budget is spent) or the marker to keep instead."""
        if size > self.max_value_bytes:
            return Undecoded(size, TOO_LARGE)
        if size > self.left:
            self.left = 0  # the page stops decoding here: later small values are not shown
            return Undecoded(size, BUDGET)
        self.left -= size
        return None
