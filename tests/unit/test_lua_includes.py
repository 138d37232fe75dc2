"""Lua helpers shared by several scripts live once in mqcore/scripts/lib and are pasted in at
load time: every script loads whole, and no helper is written twice."""

from __future__ import annotations

import re
from importlib import resources

from mqcore.scripts import lua_source

SCRIPTS = resources.files("mqcore.scripts")


def test_every_script_loads_with_its_includes() -> None:
    names = [p.name[:-4] for p in SCRIPTS.iterdir() if p.name.endswith(".lua")]
    assert "ack_entries" in names
    for name in names:
        text = lua_source(name)
        assert "--#include" not in text, name
    assert "local function raise_frontier(" in lua_source("ack_entries")
    assert "local function read_headers(" in lua_source("replay_letters")
    for name in ("ack_entries", "retention_trim"):  # one retention floor, one payload rule
        assert "local function partition_floor(" in lua_source(name)
        assert "local function entry_payload_ref(" in lua_source(name)
    assert "local function deletable(" in lua_source("ack_entries")
    for name in ("ack_entries", "dead_letter", "schedule_retry"):  # one lease fence
        assert "local function stale_fence(" in lua_source(name)


def test_no_helper_is_defined_in_two_files() -> None:
    defined: dict[str, str] = {}
    files = [*SCRIPTS.iterdir(), *SCRIPTS.joinpath("lib").iterdir()]
    for path in files:
        if not path.name.endswith(".lua"):
            continue
        for fn in re.findall(r"^local function (\w+)\(", path.read_text(), re.MULTILINE):
            assert fn not in defined, f"{fn} in {path.name} and {defined.get(fn)}"
            defined[fn] = path.name
