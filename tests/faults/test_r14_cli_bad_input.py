"""R14 through the CLI: oversized or malformed input is refused before any write.

Exit code 2, one line on stderr, no traceback, and Redis unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.topics import Topics

pytestmark = [pytest.mark.faults, pytest.mark.redis]
ROOT = Path(__file__).resolve().parents[2]


def _state(r: redis.Redis) -> dict[bytes, object]:
    return {k: r.dump(k) for k in sorted(r.keys("*"))}


@pytest.mark.parametrize(
    "args",
    [
        ["produce", "t", "--payload", "x" * (10 * 1024 * 1024)],
        ["produce", "t", "--payload", "x", "--header", "=v"],
        ["produce", "t", "--payload", "x", "--partition", "-1"],
        ["produce", "t", "--payload", "x", "--partition", "two"],
        ["produce", "ghost", "--payload", "x"],
        ["dlq", "replay", "t", "1-0;DEL"],
        ["dlq", "replay", "t", "1-0", "--target-partition", "5"],
        ["dlq", "delete", "t", "--"],
        ["pending", "t", "--group", "g", "--limit", "0"],
        ["topic", "create", "{t}", "--partitions", "2"],
        ["topic", "create", "t2", "--partitions", "0"],
        ["topic", "delete", "t"],
    ],
)
def test_refused_before_any_write(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, mq_config: MQConfig, args: list[str]
) -> None:
    Topics(mq_config, r).create("t", 2, groups=("g",))
    before = _state(r)
    code = main(["--redis-url", mq_config.url, *args])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert _state(r) == before


def test_invalid_utf8_argument_and_markup_in_headers(r: redis.Redis, mq_config: MQConfig) -> None:
    Topics(mq_config, r).create("t", 1, groups=("g",))
    env = {**os.environ, "MQ_REDIS_URL": mq_config.url}
    before = _state(r)
    bad = subprocess.run(
        [sys.executable.encode(), b"-m", b"mqcore", b"produce", b"t", b"--payload", b"\xff\xfe"],
        capture_output=True, env=env, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.count(b"\n") == 1
    assert b"Traceback" not in bad.stderr
    assert _state(r) == before
    ok = subprocess.run(
        [sys.executable, "-m", "mqcore", "--json", "produce", "t", "--payload", "<b>hi</b>",
         "--header", "x-note=<script>alert(1)</script>"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    sent = json.loads(ok.stdout)
    [(_, fields)] = r.xrange(mq_config.keys.partition("t", 0))
    assert json.loads(fields[b"headers"])["x-note"] == "<script>alert(1)</script>"
    assert sent["partition"] == 0
