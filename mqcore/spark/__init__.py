"""PySpark integration: the ``mqcore`` streaming source and exactly-once sinks.

Importing this package needs ``pyspark`` (the ``spark`` extra); the rest of
mqcore never imports it.
"""

from mqcore.spark.source import SCHEMA, MQDataSource, MQStreamReader, compare_ids, parse_id

__all__ = ["SCHEMA", "MQDataSource", "MQStreamReader", "compare_ids", "parse_id"]
