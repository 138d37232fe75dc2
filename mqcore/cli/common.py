"""What every command shares: the argument parser, the output (table or JSON), the config."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any, NoReturn

from mqcore.config import MQConfig

__all__ = ["AddParser", "Out", "Parser", "UsageError", "config", "jsonable", "table"]


class UsageError(Exception):
    """Raised for bad command-line input (exit code 2)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


AddParser = Callable[..., Parser]  # ``add_parser`` of a subcommand group


def config(args: argparse.Namespace) -> MQConfig:
    return MQConfig.from_url(args.redis_url)


def jsonable(value: Any) -> Any:
    """Plain JSON data; bytes values become hex strings under ``<name>_hex``."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
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


def table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain text table: upper-case headings, cells cut at 60 characters."""

    def cell(v: Any) -> str:
        text = "-" if v is None else str(v)
        text = text.replace("\n", "\\n")
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
