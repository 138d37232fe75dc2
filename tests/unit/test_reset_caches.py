"""``clusters.reset_caches`` empties every functools cache of the console: a cached
function added to ``dashboard/clusters.py`` (or any dashboard module) is found by
looking at the modules, not by a list someone must remember to extend."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import dashboard
from dashboard import clusters


def _cached_functions() -> dict[str, Any]:
    """Every ``@cache``/``@lru_cache`` function defined in a dashboard module."""
    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(dashboard.__path__, "dashboard."):
        if ".migrations" in info.name or ".management" in info.name:
            continue
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            if callable(getattr(value, "cache_info", None)) and value.__module__ == info.name:
                found[f"{info.name}.{attr}"] = value
    return found


def test_every_cache_of_dashboard_is_cleared() -> None:
    cached = _cached_functions()
    in_clusters = {n for n in cached if n.startswith("dashboard.clusters.")}
    assert {"dashboard.clusters.cluster_config", "dashboard.clusters.writer_retry_set"} <= (
        in_clusters
    )
    assert "dashboard.client_addr._networks" in cached
    for fn in cached.values():  # fill each cache: any call that succeeds leaves an entry
        for args in ((), ("default",), (("10.0.0.0/8",),)):
            try:
                fn(*args)
            except Exception:
                continue
            break
    filled = {name for name, fn in cached.items() if fn.cache_info().currsize}
    assert in_clusters <= filled  # every cache of clusters.py was filled

    clusters.reset_caches()

    left = {name for name, fn in cached.items() if fn.cache_info().currsize}
    assert left == set()
