"""The demo's worker as root: run it as an unprivileged user when that user can, else say
why once in the banner and keep Celery's superuser warning out of the terminal."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from scripts import demo
from scripts.demo_settings import DemoSettings


@pytest.fixture
def settings(tmp_path: Path) -> DemoSettings:
    return DemoSettings(var_dir=tmp_path)


def test_not_root_needs_nothing(settings: DemoSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo.os, "geteuid", lambda: 1000)
    assert demo.worker_identity(settings, {}) == ([], "", {})


def test_root_without_a_usable_user_filters_celerys_warning(
    settings: DemoSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo.os, "geteuid", lambda: 0)
    settings = dataclasses.replace(settings, worker_user="no-such-user-here")
    identity, note, env = demo.worker_identity(settings, {})
    assert identity == []
    assert "worker runs as root" in note
    assert "no-such-user-here" in note
    # the filter really silences Celery's SecurityWarning (and only that message)
    message = "You're running the worker with superuser privileges: x"
    code = (
        "import warnings; from celery.exceptions import SecurityWarning; "
        f"warnings.warn(SecurityWarning({message!r})); "
        "warnings.warn(UserWarning('another warning'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env={**env, "PATH": "/usr/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "superuser" not in done.stderr
    assert "another warning" in done.stderr
    warnings.resetwarnings()
