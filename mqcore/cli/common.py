"""What every command shares: the argument parser, the output (table or JSON), the config."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any, NoReturn

import msgspec

from mqcore.config import MQConfig
from mqcore.export_rows import csv_row_lines

__all__ = [
    "AddParser",
    "Out",
    "Parser",
    "UsageError",
    "add_format",
    "add_group",
    "add_who_why",
    "config",
    "csv_out",
    "csv_wanted",
    "human_bytes",
    "human_json",
    "jsonable",
    "outside_check",
    "outside_record",
    "plain",
    "table",
]

# what a terminal could take for a command: C0/C1 controls, DEL, and the bidi overrides
# that reorder what is shown (keys, payloads, slow-log arguments are anyone's data)
_SHOWN = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_UNSAFE = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x200E, 0x200F, 0x2028, 0x2029]
_UNSAFE += [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_PLAIN = {c: _SHOWN.get(c, f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE}
# JSON escapes C0 controls inside strings itself; the rest of _UNSAFE as JSON escapes
_JSON_PLAIN = {c: f"\\u{c:04x}" for c in _UNSAFE if c >= 0x7F}


class UsageError(Exception):
    """Raised for bad command-line input (exit code 2)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


AddParser = Callable[..., Parser]  # ``add_parser`` of a subcommand group


def add_group(add: AddParser, common: Parser, name: str, *, help: str) -> AddParser:
    """A command of subcommands (``mqcore dlq list``): the ``add_parser`` of its subcommands,
    each of which takes the ``common`` options; the one chosen is ``args.<name>_cmd``."""
    group = add(name, help=help)
    sub = group.add_subparsers(dest=f"{name}_cmd", required=True, parser_class=Parser)
    return functools.partial(sub.add_parser, parents=[common])


def config(args: argparse.Namespace) -> MQConfig:
    try:
        return MQConfig.from_url(args.redis_url)
    except ValueError as exc:  # a bad Sentinel URL says what is wrong (never the password)
        raise UsageError(f"--redis-url: {exc}") from None


def add_who_why(p: argparse.ArgumentParser, *, by: bool = True) -> None:
    """``--by`` and ``--reason`` of a command recorded as an action outside the console."""
    if by:
        p.add_argument("--by", help="who acts (recorded; default: your login)")
    p.add_argument("--reason", default="", help="why (recorded with the action)")


def outside_check(args: argparse.Namespace) -> None:
    """Refuse a ``--by`` or ``--reason`` that cannot be recorded, before anything is done."""
    from mqcore.outside_events import default_who, who_and_why

    try:
        who_and_why(args.by or default_who(), args.reason)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def outside_record(
    args: argparse.Namespace,
    action: str,
    *,
    topic: str,
    what: Mapping[str, Any],
    group: str | None = None,
) -> None:
    """Record a done action in the outside-console event stream (mqcore.outside_events).
    The action stands when the record fails: a warning on stderr, not an error (running the
    command again would act twice)."""
    from mqcore.errors import MQError
    from mqcore.outside_events import OutsideEvents, default_who

    try:
        OutsideEvents(config(args)).record(
            action,
            topic=topic,
            group=group,
            who=args.by or default_who(),
            why=args.reason,
            what=dict(what),
            source="mqcore-cli",
        )
    except MQError as exc:
        print(f"warning: done, but not recorded for the console: {exc}", file=sys.stderr)


def jsonable(value: Any) -> Any:
    """Plain JSON data; bytes values become hex strings under ``<name>_hex``."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    elif isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, bytes):
                out[f"{k}_hex"] = v.hex()
                continue
            out[str(k)] = jsonable(v)
        return out
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def plain(value: Any) -> str:
    """``value`` as text a terminal shows as data: control characters (escape sequences,
    newlines) and bidi overrides become visible escapes such as ``\\x1b``, ``\\n``."""
    return str(value).translate(_PLAIN)


def human_json(value: Any) -> str:
    """``value`` as indented JSON a terminal shows as data: still valid JSON, non-ASCII
    text kept, but DEL, C1 controls and bidi overrides written as ``\\uXXXX`` escapes."""
    return json.dumps(value, indent=2, ensure_ascii=False).translate(_JSON_PLAIN)


def human_bytes(n: Any) -> str:
    """A byte count as ``12.3 MiB`` (``-`` for None)."""
    if not isinstance(n, int | float):
        return "-"
    size, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"


def table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain text table: upper-case headings, cells as :func:`plain` text cut at 60
    characters."""

    def cell(v: Any) -> str:
        text = "-" if v is None else plain(v)
        return text if len(text) <= 60 else text[:57] + "..."

    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


class Out:
    """Prints a command's result: one JSON document with ``--json``, else ``human(data)``."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def emit(self, data: Any, human: Callable[[Any], str]) -> None:
        data = jsonable(data)
        if self.as_json:
            print(json.dumps(data, ensure_ascii=False))
        else:
            print(human(data))


EXPORT_MAX_ROWS = 50_000  # --all: rows at most, unless --max-rows says otherwise


def add_format(p: Parser, *, every: str | None = None) -> None:
    """``--format table|csv`` (csv: formula-safe, one row per line) and, with ``every``,
    ``--all`` (every matching row, in bounded reads) and ``--max-rows``."""
    p.add_argument("--format", choices=["table", "csv"], default="table")
    if every:
        p.add_argument("--all", action="store_true", help=every)
        p.add_argument("--max-rows", type=int, default=EXPORT_MAX_ROWS)


def csv_wanted(args: argparse.Namespace) -> bool:
    """Whether ``--format csv`` was asked (with ``--json`` too: a usage error)."""
    wanted = getattr(args, "format", "table") == "csv"
    if wanted and getattr(args, "json", False):
        raise UsageError("--json and --format csv exclude each other")
    if getattr(args, "all", False) and not wanted and not getattr(args, "json", False):
        raise UsageError("--all writes every matching row: add --format csv or --json")
    if getattr(args, "max_rows", 1) < 1:
        raise UsageError("--max-rows must be >= 1")
    return wanted


def csv_out(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Write the header and the rows to stdout as they come; returns the rows written."""
    out = sys.stdout
    lines = csv_row_lines(columns, rows)
    out.write(next(lines))  # the header
    n = 0
    for line in lines:
        out.write(line)
        n += 1
    out.flush()
    return n
