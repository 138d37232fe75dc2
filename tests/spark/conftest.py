"""One SparkSession for the whole Spark test folder (local[2], quiet, no UI)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from mqcore.spark.sinks import TwoPhaseSinkSource
    from mqcore.spark.source import MQDataSource
    from pipelines import spark_session

    session = spark_session("local[2]", "mqcore-tests")
    session.dataSource.register(MQDataSource)
    session.dataSource.register(TwoPhaseSinkSource)
    yield session
    session.stop()
