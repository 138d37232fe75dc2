"""Lua scripts shipped with mqcore, loaded from ``*.lua`` once per process.

Each script opens with a ``KEYS[n] = ... / ARGV[n] = ...`` header, receives
every key it touches through KEYS (Redis Cluster) and is called only through a
typed wrapper in the module that owns it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from redis.commands.core import Script

__all__ = ["ScriptRegistry", "lua_source"]


@cache
def lua_source(name: str) -> str:
    """Source of ``mqcore/scripts/<name>.lua``."""
    return resources.files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")


class ScriptRegistry:
    """Per-client cache of registered scripts (EVALSHA with automatic reload).

    The returned ``Script`` also works with ``client=pipeline``.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._scripts: dict[str, Script] = {}

    def get(self, name: str) -> Script:
        script = self._scripts.get(name)
        if script is None:
            script = self._client.register_script(lua_source(name))
            self._scripts[name] = script
        return script
