"""``mqcore health``: the MQ Redis's health as the console's collectors page shows it
(memory, eviction policy, persistence, clients, load, the newest slow-log entries: command
and key names, never their arguments).

Exit code 1 when the reading can lose messages (:func:`mqcore.admin.probes.health_risks`:
an eviction policy other than ``noeviction`` or keys evicted, memory at or above
``MEMORY_SHARE_RISK`` of maxmemory), as the console's ``redis_eviction`` and
``redis_memory`` alerts; 0 otherwise. ``--json``: the reading and its ``risks``.
"""

from __future__ import annotations

import argparse
from typing import Any

from mqcore.cli.common import AddParser, Out, Parser, config, human_bytes, plain, table

__all__ = ["SLOWLOG_SHOWN", "add_parsers", "cmd_health"]

SLOWLOG_SHOWN = 10  # slow-log entries printed (as the collectors page); --json has all read


def add_parsers(add: AddParser, common: Parser) -> None:
    add(
        "health",
        parents=[common],
        help="the MQ Redis's memory, eviction policy, persistence, clients, slow log "
        "(exit 1 when it can lose messages)",
    )


def cmd_health(args: argparse.Namespace, out: Out) -> int:
    from mqcore.admin.probes import health_risks, redis_health

    client = config(args).client()
    try:
        health = redis_health(client)
    finally:
        client.close()
    risks = health_risks(health)
    out.emit({**health, "risks": risks}, _human)
    return 1 if risks else 0


def _or(value: Any, default: str = "unknown") -> str:
    return default if value is None or value == "" else plain(value)


def _keys(entry: dict[str, Any]) -> str:
    """A slow command's key names (its arguments were never read)."""
    cut = entry.get("cut_keys") or 0
    return " ".join([*entry["keys"], *([f"+{cut} cut short"] if cut else [])])


def _human(h: dict[str, Any]) -> str:
    if h.get("cluster"):
        return "Redis Cluster: each node has its own health; read it node by node"
    from mqcore.admin.probes import MEMORY_SHARE_RISK
    from mqcore.clock import iso_from_ms

    lines = [f"Redis {_or(h['version'])} ({_or(h['role'])}), up {_or(h['uptime_s'], '?')} s"]
    memory = f"{human_bytes(h['used_memory'])} used, peak {human_bytes(h['used_memory_peak'])}"
    if h["maxmemory"]:
        memory += f", {h['memory_share']:.0%} of {human_bytes(h['maxmemory'])} maxmemory"
    else:
        memory += ", no maxmemory"
    lines.append(f"memory:      {memory}; fragmentation {_or(h['fragmentation'])}")
    evicted = h["evicted_keys"] or 0
    lines.append(f"eviction:    {_or(h['maxmemory_policy'])}, {evicted} keys evicted since start")
    if h["evicting_policy"]:
        lines.append(
            f"WARNING: maxmemory-policy is {plain(h['maxmemory_policy'])}: streams are keys "
            "like any other and can be evicted, messages and all. Use noeviction."
        )
    elif evicted:
        lines.append(f"WARNING: {evicted} keys were evicted since Redis started")
    if "memory" in h["risks"]:
        lines.append(
            f"WARNING: Redis uses {h['memory_share']:.0%} of its maxmemory "
            f"(at {MEMORY_SHARE_RISK:.0%} the console alerts)"
        )
    if h["aof_enabled"]:
        aof = f"AOF on, fsync {_or(h['appendfsync'])}"
        aof += "" if h["aof_last_rewrite_ok"] else ", last rewrite FAILED"
    else:
        aof = "AOF off: a restart loses messages"
    rdb = h["rdb_last_save_s"]
    aof += f"; last RDB save {iso_from_ms(int(rdb) * 1000) if rdb else 'never'}"
    aof += "" if h["rdb_last_save_ok"] else " (FAILED)"
    lines.append(f"persistence: {aof}")
    lines.append(
        f"clients:     {_or(h['connected_clients'], '?')} connected, "
        f"{_or(h['blocked_clients'], '?')} blocked; {_or(h['ops_per_s'], '?')} ops/s"
    )
    slow = h["slowlog"]
    if slow:
        lines.append(f"slow log (newest {min(len(slow), SLOWLOG_SHOWN)} of {len(slow)} read):")
        rows = [
            {**e, "at": iso_from_ms(int(e["at_s"]) * 1000), "keys": _keys(e)}
            for e in slow[:SLOWLOG_SHOWN]
        ]
        lines.append(table(rows, ["id", "at", "duration_us", "command", "keys"]))
    else:
        lines.append("slow log: empty")
    return "\n".join(lines)
