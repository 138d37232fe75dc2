"""Big string values of the console store, read in bounded pieces.

A snapshot of 50,000 partitions is tens of megabytes of JSON, and the collector
state several: one ``GET`` of such a value holds Redis for more than 5 ms while it
copies the value into the reply. Writers still ``SET`` the whole value (Redis
keeps a big argument without copying it) together with a version key in one
MULTI/EXEC. Readers take the version, the lengths, then ``GETRANGE`` pieces of
at most :data:`PIECE_BYTES`, and the version again: a write that came between
changes it, and the read is tried again (after a few tries, one MULTI/EXEC of plain
``GET``s settles it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mqcore.boundary import redis_errors

__all__ = ["PIECE_BYTES", "read_pieces"]

PIECE_BYTES = 1 << 20  # bytes per GETRANGE: well under a millisecond of Redis time
_ATTEMPTS = 8


def read_pieces(
    client: Any, keys: Sequence[str], version_key: str
) -> tuple[bytes | None, list[bytes | None]]:
    """(version, values of ``keys``) as of one write; a missing key reads as None."""
    for _ in range(_ATTEMPTS):
        with redis_errors("console store"):
            pipe = client.pipeline(transaction=False)
            pipe.get(version_key)
            for key in keys:
                pipe.strlen(key)
            version, *sizes = pipe.execute()
            pipe = client.pipeline(transaction=False)
            for key, size in zip(keys, sizes, strict=True):
                for start in range(0, int(size), PIECE_BYTES):
                    pipe.getrange(key, start, start + PIECE_BYTES - 1)
            pipe.get(version_key)
            *pieces, after = pipe.execute()
        if after != version:
            continue  # a write came between: read again
        out: list[bytes | None] = []
        at = 0
        for size in sizes:
            n = -(-int(size) // PIECE_BYTES)
            out.append(b"".join(pieces[at : at + n]) if size else None)
            at += n
        if all(v is None or len(v) == int(s) for v, s in zip(out, sizes, strict=True)):
            return version, out
    with redis_errors("console store"):
        pipe = client.pipeline(transaction=True)
        pipe.get(version_key)
        for key in keys:
            pipe.get(key)
        version, *whole = pipe.execute()
    return version, [v or None for v in whole]
