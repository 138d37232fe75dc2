"""A big batch's commit killed (kill -9) between its steps loses and doubles nothing: the
journal stays open, a later process's replay of the batch finishes it and discards its own
stages, and a replay after that is skipped. Stages written but never sealed (the committing
process died first) are never applied and expire by their TTL."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import redis

from mqcore.config import MQConfig
from tests.faults import journal_helper as helper
from tests.faults.checker import ROOT

pytestmark = [pytest.mark.faults, pytest.mark.redis]


def _commit(url: str, mode: str, run: str, die_at: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.faults.journal_helper", url, mode, run, die_at],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _outputs(r: redis.Redis, config: MQConfig) -> list[dict[str, int]]:
    return [
        {k.decode(): int(v) for k, v in r.hgetall(key).items()} for key in helper.outputs(config)
    ]


def _stages(r: redis.Redis) -> list[bytes]:
    return list(r.scan_iter(match="*:stage:*", count=1000))


@pytest.mark.parametrize(
    ("mode", "die_at"),
    [
        ("driver", "group0"),
        ("driver", "group17"),
        ("driver", "group39"),  # the last apply step: only the finish is left
        ("tasks", "staged"),
        ("tasks", "group5"),
        ("tasks", "group41"),
    ],
)
def test_a_commit_killed_between_steps_ends_exact_after_a_replay(
    redis_url: str, r: redis.Redis, mq_config: MQConfig, mode: str, die_at: str
) -> None:
    journal = mq_config.keys.commit_journal(helper.PIPE)
    marker = mq_config.keys.sink_marker(helper.PIPE)
    killed = _commit(redis_url, mode, "a", die_at)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert r.hget(marker, "redis") is None  # the marker moves only with the last step
    applied = sum(len(x) for x in _outputs(r, mq_config))
    if die_at == "staged":
        assert not r.exists(journal)
        assert applied == 0
        left = _stages(r)
        assert left
        assert all(r.ttl(key) > 0 for key in left)  # never sealed: they expire
    else:
        step = int(die_at.removeprefix("group"))
        assert int(r.hget(journal, "next") or -1) == step + 1
        assert int(r.hget(journal, "groups") or 0) == (40 if mode == "driver" else 42)
        assert 0 < applied < 2 * helper.KEYS_N or step in (39, 41)
        assert all(r.ttl(key) == -1 for key in _stages(r))  # the journal's: no TTL
    replay = _commit(redis_url, mode, "b", "never")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replay.stdout.strip() == "committed"
    totals = {f"c{i}": i for i in range(helper.KEYS_N)}
    counts = dict.fromkeys(totals, 1)
    assert _outputs(r, mq_config) == [totals, counts]
    assert int(r.hget(marker, "redis") or -1) == 0
    assert not r.exists(journal)
    assert all(r.ttl(key) > 0 for key in _stages(r))  # only the killed run's unsealed ones
    again = _commit(redis_url, mode, "c", "never")
    assert again.stdout.strip() == "skipped", again.stdout + again.stderr
    assert _outputs(r, mq_config) == [totals, counts]
