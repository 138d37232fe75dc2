"""CSV a spreadsheet will not run: the one formula-injection-safe writer.

Every cell that starts like a formula (``=``, ``+``, ``-``, ``@``, tab, carriage
return) is prefixed with a quote (OWASP "CSV injection"). The audit export, the
console's lag, pending and DLQ exports and the command line's ``--format csv`` all
write through :func:`csv_lines`, one line at a time, so a long export streams.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = ["FORMULA_PREFIXES", "csv_line", "csv_lines", "csv_safe"]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> str:
    """A cell a spreadsheet will not run as a formula (OWASP: prefix with a quote)."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def csv_line(cells: Sequence[Any]) -> str:
    """One CSV line (with its line end) of neutralised cells."""
    buffer = io.StringIO()
    csv.writer(buffer).writerow([csv_safe(v) for v in cells])
    return buffer.getvalue()


def csv_lines(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The header line, then one line per row, each cell neutralised (a generator)."""
    yield csv_line(columns)
    for row in rows:
        yield csv_line(row)
