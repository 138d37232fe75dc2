"""The retry browser: a topic's retry set listed, filtered and paged; retry now; delete.

The retry set of a topic is a zset (member = retry item key, score = due ms) and one
hash per item (docs/redis-layout.md). Everything here is bounded: a page costs
O(log N + page) commands, never a read of the whole set; writes are Lua scripts over
at most a batch of items, idempotent per item.

One module per part:

- :mod:`.items` -- an item hash decoded (mqcore's, Java's plain one, Redisson Kryo's),
  :class:`RetryItem`, :class:`RetryPage`, item ids.
- :mod:`.browse` -- a page by due time: state (due, scheduled), order, filters, cursor.
- :mod:`.retry_set` -- :class:`RetrySet`, the API: page, get, retry now, delete (named
  items or all matching a filter, in bounded batches).
"""

from mqcore.retries.browse import MAX_LIMIT, ORDERS, STATES, RetryFilter
from mqcore.retries.items import RetryItem, RetryPage, validate_item_id
from mqcore.retries.retry_set import BATCH, MAX_IDS, MAX_MATCHING, RetryOutcome, RetrySet

__all__ = [
    "BATCH",
    "MAX_IDS",
    "MAX_LIMIT",
    "MAX_MATCHING",
    "ORDERS",
    "STATES",
    "RetryFilter",
    "RetryItem",
    "RetryOutcome",
    "RetryPage",
    "RetrySet",
    "validate_item_id",
]
