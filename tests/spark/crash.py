"""The crash hook fault tests inject into the sinks: ``kill -9`` of the driver at armed points.

``MQCORE_CRASH_AT=<point>[@<min batch id>][,<point>[@<min batch id>]...]`` arms
points of :data:`mqcore.spark.sinks.CRASH_POINTS`; :func:`kill_at_armed_point`
(the sinks' crash hook) kills the driver's whole process group at the first
armed point reached, also from an executor's Python worker (``$MQCORE_DRIVER_PGID``,
set by :mod:`tests.spark.driver`, names the driver's group). With
``$MQCORE_CRASH_LOG`` set, the point and batch id are appended to that file as
``<point>@<batch id>`` right before the kill. The hook reads the environment
when called, so the executors' Python workers (which inherit it) obey too.
"""

from __future__ import annotations

import os
import signal

from mqcore.errors import InvalidArgumentError
from mqcore.spark.sinks import CRASH_POINTS

CRASH_ENV = "MQCORE_CRASH_AT"
CRASH_LOG_ENV = "MQCORE_CRASH_LOG"  # optional file: each crash appends "<point>@<batch id>"
DRIVER_PGID_ENV = "MQCORE_DRIVER_PGID"  # set by the driver; inherited by Spark workers


def crash_points(value: str) -> dict[str, int]:
    """Parse ``$MQCORE_CRASH_AT``: comma-separated ``<point>[@<min batch id>]`` -> point: min id."""
    armed: dict[str, int] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        point, _, min_batch = item.partition("@")
        if point not in CRASH_POINTS or not (min_batch or "0").isdecimal():
            raise InvalidArgumentError(
                f"bad {CRASH_ENV} item {item!r}: use <point>[@<min batch id>] with a point"
                f" of {', '.join(CRASH_POINTS)}"
            )
        armed[point] = int(min_batch or 0)
    return armed


def kill_at_armed_point(name: str, batch_id: int) -> None:
    """The sinks' crash hook: die like ``kill -9`` of the driver when ``$MQCORE_CRASH_AT`` arms
    this point."""
    wanted = os.environ.get(CRASH_ENV, "")
    if not wanted:
        return
    min_batch = crash_points(wanted).get(name)
    if min_batch is None or batch_id < min_batch:
        return
    log = os.environ.get(CRASH_LOG_ENV)
    if log:  # one small O_APPEND write: survives the kill, never interleaves
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{name}@{batch_id}\n".encode())
        finally:
            os.close(fd)
    # Python workers run in the pyspark daemon's own group: kill the driver's first.
    driver = int(os.environ.get(DRIVER_PGID_ENV) or os.getpgrp())
    os.killpg(driver, signal.SIGKILL)
    os.killpg(os.getpgrp(), signal.SIGKILL)
