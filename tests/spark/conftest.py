"""One SparkSession for the whole Spark test folder (local[2], quiet, no UI).

Every JVM the Spark tests start (this session's, the crash tests' drivers, spark-submit and
local-cluster's executors, which inherit the environment) runs with :data:`JVM_OPTIONS`:
the tests' JVMs live for seconds to a minute, where HotSpot's C2 compiler threads cost more
CPU than they give back (the crash test's ten driver starts: about 30% less CPU).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# C1 only (no C2 compiles of code a short run never makes hot), the serial collector (no
# parallel GC threads on the suite's two cores). Test JVMs only: nothing here is production's.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="session", autouse=True)
def _short_lived_jvms() -> Iterator[None]:
    """``JDK_JAVA_OPTIONS`` (read by the ``java`` launcher) for every JVM of the Spark tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JDK_JAVA_OPTIONS", JVM_OPTIONS)
        yield


@pytest.fixture(scope="session")
def spark(_short_lived_jvms: None) -> Iterator[Any]:
    from mqcore.spark.sinks import TwoPhaseSinkSource
    from mqcore.spark.source import MQDataSource
    from pipelines import spark_session

    session = spark_session("local[2]", "mqcore-tests")
    session.dataSource.register(MQDataSource)
    session.dataSource.register(TwoPhaseSinkSource)
    yield session
    session.stop()
