"""Per-customer order totals from the demo ``orders`` topic.

Payloads are ``{"customer": str, "amount": int}``; anything else (bad JSON, a
missing field) adds nothing but still counts as consumed, so the pipeline
never stalls on a poison message.
"""

from __future__ import annotations

from typing import Any

NAME = "order_totals"
TOPIC = "orders"
DESCRIPTION = "per-customer order totals (sum of amount) from the orders topic"


def transform(df: Any) -> Any:
    """Source rows -> ``(partition, id, key, amount)``: key = customer, amount = order amount."""
    from pyspark.sql import functions as F

    order = F.from_json(F.col("payload"), "customer string, amount long")
    valid = order["customer"].isNotNull() & order["amount"].isNotNull()
    return df.select(
        "partition",
        "id",
        F.when(valid, order["customer"]).alias("key"),
        F.when(valid, order["amount"]).otherwise(F.lit(0)).cast("long").alias("amount"),
    )
