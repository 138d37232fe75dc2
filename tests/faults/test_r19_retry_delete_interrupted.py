"""R19: a retry browser "delete all matching" killed mid-run loses nothing it should keep.

``mqcore retries delete --all-matching`` (a real process) deletes tens of thousands of
retry items by a key filter while items of another key must stay; it is killed with
SIGKILL at several points of a run. After each kill no item is half deleted (a zset
member without its hash, or a hash without its member), nothing that did not match was
touched, and re-runs (following ``next_cursor`` while ``more``) finish the deletion
with the final state exact and the reported counts adding up. Then the same delete
races the retry mover (``mqcore retry-mover``, another process): every matching item
is either moved to its partition once or deleted, never both, never neither. The
console's path (``retries_act``, audited) killed mid-run leaves its audit intent at
"unknown" with no outcome row; its re-runs' outcome rows count exactly what they did.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from mqcore.config import MQConfig
from mqcore.retries import MAX_MATCHING
from mqcore.topics import Topics
from tests.faults.checker import ROOT, wait_for
from tests.integration.retry_items import schedule

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TOPIC = "orders"
MATCHING = 30_000  # key "del": deleted
KEPT = 6_000  # key "keep": must stay, byte for byte


def populate(r: redis.Redis, cfg: MQConfig, *, kept_due_ms: int | None) -> dict[str, str]:
    """MATCHING items keyed "del" (due, in one interleaved run with the kept ones) and
    KEPT items keyed "keep"; returns member -> payload."""
    Topics(cfg, r).create(TOPIC, 2)
    now = int(time.time() * 1000)
    payloads: dict[str, str] = {}
    pipe = r.pipeline(transaction=False)
    for i in range(MATCHING + KEPT):
        kept = i % 6 == 5
        payload = f"k{i}" if kept else f"d{i}"
        due = now - 600_000 + i
        if kept and kept_due_ms is not None:
            due = kept_due_ms + i
        member = schedule(pipe, cfg.keys, TOPIC, i % 2, payload, due_ms=due,
                          key="keep" if kept else "del")  # fmt: skip
        payloads[member] = payload
        if len(pipe) >= 2000:
            pipe.execute()
    pipe.execute()
    return payloads


def snapshot(r: redis.Redis, cfg: MQConfig) -> tuple[dict[str, float], set[str]]:
    """The retry zset (member -> score) and every retry item hash key of the topic."""
    zset = {m.decode(): s for m, s in r.zrange(cfg.keys.retry_zset(TOPIC), 0, -1, withscores=True)}
    hashes = {
        k.decode() for k in r.scan_iter(match=cfg.keys.retry_item_prefix(TOPIC) + "*", count=5000)
    }
    return zset, hashes


def dumps(r: redis.Redis, keys: list[str]) -> dict[str, Any]:
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.dump(k)
    return dict(zip(keys, pipe.execute(), strict=True))


def others(r: redis.Redis, cfg: MQConfig) -> dict[str, Any]:
    """Every key that is not a retry item hash nor the retry zset, dumped."""
    prefix = cfg.keys.retry_item_prefix(TOPIC)
    keys = sorted(
        k.decode()
        for k in r.scan_iter(count=5000)
        if not k.decode().startswith(prefix) and k.decode() != cfg.keys.retry_zset(TOPIC)
    )
    return dumps(r, keys)


def delete_cmd(cfg: MQConfig, cursor: str | None = None) -> list[str]:
    return [sys.executable, "-m", "mqcore", "--json", "--redis-url", cfg.url, "retries",
            "delete", TOPIC, "--all-matching", "--key", "del", "--yes",
            *(["--cursor", cursor] if cursor else [])]  # fmt: skip


def run_delete(cfg: MQConfig, cursor: str | None = None) -> dict[str, Any]:
    done = subprocess.run(delete_cmd(cfg, cursor), cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    return delete_report(done)


def delete_report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """A delete run's JSON report, checked to add up."""
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, Any] = json.loads(done.stdout)
    assert out["requested"] == out["deleted"] + out["missing"] + out["skipped"]
    assert out["requested"] <= MAX_MATCHING
    assert out["more"] == (out["next_cursor"] is not None)
    return out


@contextmanager
def spawned(cmd: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """``cmd`` running in the project's root (stderr kept for the assertions); killed, if
    still running, and its pipe closed when the block ends."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def kill_mid_run(
    cmd: list[str],
    r: redis.Redis,
    zset: str,
    target: int,
    pause_s: float,
    env: dict[str, str] | None = None,
) -> None:
    """Run ``cmd`` (our own process) until the retry set is down to ``target`` items, wait
    ``pause_s`` (so the kill lands anywhere in a batch cycle), then SIGKILL it."""
    with spawned(cmd, env) as proc:
        wait_for(lambda: r.zcard(zset) <= target or proc.poll() is not None, 60,
                 f"{target} items left", step=0.002)  # fmt: skip
        time.sleep(pause_s)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""


def check_no_half_delete(
    r: redis.Redis, cfg: MQConfig, start: dict[str, float], kept: dict[str, Any]
) -> int:
    """Invariants after a kill; returns how many matching items are left."""
    zset, hashes = snapshot(r, cfg)
    assert set(zset) == hashes, (
        f"members without hash: {sorted(set(zset) - hashes)[:5]}, "
        f"hashes without member: {sorted(hashes - set(zset))[:5]}"
    )
    assert all(start[m] == s for m, s in zset.items())  # no score rewritten, nothing added
    assert set(kept) <= set(zset)  # nothing that did not match was removed ...
    assert dumps(r, list(kept)) == kept  # ... nor changed
    return len(zset) - len(kept)


def test_delete_all_matching_killed_mid_run_then_rerun_is_exact(
    r: redis.Redis, mq_config: MQConfig
) -> None:
    payloads = populate(r, mq_config, kept_due_ms=None)
    start, _ = snapshot(r, mq_config)
    kept = dumps(r, [m for m, p in payloads.items() if p.startswith("k")])
    assert len(kept) == KEPT
    untouched = others(r, mq_config)
    zset = mq_config.keys.retry_zset(TOPIC)
    left = MATCHING
    # deletions into a run (of at most 10,000), then a pause so the kill lands anywhere
    # in a batch cycle, not only right after a script call
    for kill_after, pause_s in ((300, 0.0), (1500, 0.0013), (2500, 0.0041), (4000, 0.0027),
                                (6000, 0.0009)):  # fmt: skip
        kill_mid_run(delete_cmd(mq_config), r, zset, KEPT + left - kill_after, pause_s)
        now_left = check_no_half_delete(r, mq_config, start, kept)
        assert 0 < left - now_left < MAX_MATCHING  # killed mid-run: a part was deleted
        left = now_left
    # Re-runs (the killed ones reported nothing) finish; each report matches what it did.
    runs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        before = r.zcard(zset)
        out = run_delete(mq_config, cursor)
        assert out["deleted"] == before - r.zcard(zset)
        assert out["missing"] == out["skipped"] == 0  # nothing else deletes meanwhile
        runs.append(out)
        cursor = out["next_cursor"]
        if not out["more"]:
            break
        assert out["requested"] == MAX_MATCHING  # a partial run stops only at its cap
        assert len(runs) < 5
    assert sum(o["deleted"] for o in runs) == left
    assert len(runs) == -(-left // MAX_MATCHING) or runs[-1]["deleted"] == 0
    final, hashes = snapshot(r, mq_config)
    assert final == {m: start[m] for m in kept}
    assert hashes == set(kept)
    assert dumps(r, list(kept)) == kept
    assert others(r, mq_config) == untouched
    again = run_delete(mq_config)
    assert (again["requested"], again["deleted"], again["more"]) == (0, 0, False)


def stream_payloads(r: redis.Redis, cfg: MQConfig) -> Counter[str]:
    seen: Counter[str] = Counter()
    for p in range(2):
        for _, fields in r.xrange(cfg.keys.partition(TOPIC, p)):
            seen[fields[b"payload"].decode()] += 1
    return seen


def due_deleted(r: redis.Redis, cfg: MQConfig, due: int, future: int) -> int:
    """How many due items the delete took: those gone from the retry set (scored before
    ``future``) less those the mover moved (one stream entry each, in the same script as
    its ZREM), read in one MULTI so that the two agree."""
    pipe = r.pipeline(transaction=True)
    pipe.zcount(cfg.keys.retry_zset(TOPIC), "-inf", f"({future}")
    for p in range(2):
        pipe.xlen(cfg.keys.partition(TOPIC, p))
    left, *moved = pipe.execute()
    return int(due - left - sum(moved))


def test_delete_all_matching_races_the_retry_mover(r: redis.Redis, mq_config: MQConfig) -> None:
    """Each matching item is moved once or deleted, never both, never neither; the matching
    items the mover cannot take (not due) are all deleted by the walk, though members
    around its cursor vanish under it.

    Both must work on the due items: the mover, started first, is stopped (SIGSTOP) once it
    moved some, until the delete took some too, then both run on. Without that, a loaded
    machine starts the delete's process after the mover took every due item."""
    future = int(time.time() * 1000) + 3_600_000  # the kept items are not due: never moved
    payloads = populate(r, mq_config, kept_due_ms=future)
    kept = dumps(r, [m for m, p in payloads.items() if p.startswith("k")])
    zset = mq_config.keys.retry_zset(TOPIC)
    late = {m: future + int(p[1:]) for m, p in payloads.items() if p.startswith("d")}
    late = {m: s for m, s in late.items() if s % 3 == 0}  # among the kept ones, not due
    r.zadd(zset, late, xx=True)
    mover_cmd = [sys.executable, "-m", "mqcore", "--redis-url", mq_config.url, "retry-mover",
                 "--interval-s", "0.01"]  # fmt: skip
    runs: list[dict[str, Any]] = []
    due = MATCHING - len(late)
    with spawned(mover_cmd) as mover:
        wait_for(lambda: r.zcard(zset) < MATCHING + KEPT, 30, "the mover to start", step=0.01)
        mover.send_signal(signal.SIGSTOP)
        with subprocess.Popen(
            delete_cmd(mq_config),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as first:
            try:
                wait_for(
                    lambda: due_deleted(r, mq_config, due, future) > 0 or first.poll() is not None,
                    60,
                    "the delete to take due items",
                    step=0.002,
                )
            finally:
                mover.send_signal(signal.SIGCONT)  # both on the due items now
            stdout, stderr = first.communicate(timeout=120)
        done = subprocess.CompletedProcess(first.args, first.returncode, stdout, stderr)
        out = delete_report(done)
        runs.append(out)
        cursor = out["next_cursor"]
        while out["more"]:  # the delete runs on while the mover moves the same due items
            out = run_delete(mq_config, cursor)
            runs.append(out)
            cursor = out["next_cursor"]
        pipe = r.pipeline(transaction=False)
        for m in late:
            pipe.zscore(zset, m)
        assert pipe.execute() == [None] * len(late)  # the walk skipped none of them
        wait_for(lambda: r.zcard(zset) == KEPT, 30, "the mover to finish", step=0.05)
        mover.send_signal(signal.SIGTERM)
        assert mover.wait(20) == 0, mover.stderr.read() if mover.stderr else ""
    moved = stream_payloads(r, mq_config)
    deleted = sum(o["deleted"] for o in runs)
    assert max(moved.values()) == 1  # none moved twice
    assert all(p.startswith("d") for p in moved)  # the kept items stayed put
    assert deleted > len(late)  # both really ran on the same items (the due ones)
    assert moved
    assert deleted + len(moved) == MATCHING  # none both moved and deleted, none neither
    final, hashes = snapshot(r, mq_config)
    assert set(final) == hashes == set(kept)
    assert dumps(r, list(kept)) == kept


def audit_rows(db: Path) -> list[tuple[int, str, str, dict[str, int], int | None]]:
    """(id, phase, outcome, counts, completes_id) of the retry delete audit rows, in order."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT id, phase, outcome, counts, completes_id FROM dashboard_auditevent"
            " WHERE event_type = 'retry.delete' ORDER BY id"
        ).fetchall()
    return [(i, phase, out, json.loads(counts), done) for i, phase, out, counts, done in rows]


def console_cmd(cursor: str | None = None) -> list[str]:
    return [sys.executable, "-m", "tests.faults.r19_helper", *([cursor] if cursor else [])]


def test_console_delete_killed_leaves_its_intent_open_and_reruns_are_audited_exactly(
    r: redis.Redis, mq_config: MQConfig, env: dict[str, str], console_db: Path
) -> None:
    payloads = populate(r, mq_config, kept_due_ms=None)
    start, _ = snapshot(r, mq_config)
    kept = dumps(r, [m for m, p in payloads.items() if p.startswith("k")])
    zset = mq_config.keys.retry_zset(TOPIC)
    kill_mid_run(console_cmd(), r, zset, KEPT + MATCHING - 2000, 0.0017, env=env)
    left = check_no_half_delete(r, mq_config, start, kept)
    assert 0 < MATCHING - left < MAX_MATCHING
    [killed] = audit_rows(console_db)
    assert killed[1:] == ("intent", "unknown", {}, None)  # no outcome row: unknown
    runs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        before = r.zcard(zset)
        done = subprocess.run(console_cmd(cursor), cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        out = json.loads(done.stdout.splitlines()[-1])
        assert out["deleted"] == before - r.zcard(zset)
        assert out["requested"] == out["deleted"]
        runs.append(out)
        cursor = out["next_cursor"]
        if not out["more"]:
            break
        assert len(runs) < 5
    assert sum(o["deleted"] for o in runs) == left
    rows = audit_rows(console_db)
    assert len(rows) == 1 + 2 * len(runs)
    assert rows[0] == killed  # the killed run's intent stays open
    intents = [row[0] for row in rows[1:] if row[1] == "intent"]
    outcomes = [row for row in rows if row[1] == "outcome"]
    assert [row[4] for row in outcomes] == intents  # each re-run completes its own intent
    assert [row[3]["deleted"] for row in outcomes] == [o["deleted"] for o in runs]
    assert {row[2] for row in outcomes} == {"deleted"}
    final, hashes = snapshot(r, mq_config)
    assert final == {m: start[m] for m in kept}
    assert hashes == set(kept)
    assert dumps(r, list(kept)) == kept
