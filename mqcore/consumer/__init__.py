"""The consumer: partition leases, one serial worker per owned partition, fenced acks.

How it works, one module per part:

- :mod:`.control` -- :class:`Consumer` and its control thread: heartbeat,
  lease renewal, rebalancing (with N live consumers each takes at most
  ``ceil(P / N)`` partitions and ``max_partitions``; extras are released,
  :mod:`.membership`), and a graceful stop.
- :mod:`.worker` -- one thread per owned partition: reads with XREADGROUP,
  hands entries to the handler in order, acks in batches through the fenced
  ack script pipelined with the next read, and stops before its lease can
  expire; a zombie's late writes are refused by the epoch check.
- :mod:`.reclaim` -- on takeover every entry still pending in the group,
  then idle orphans, claimed with XAUTOCLAIM; ids deleted while pending are
  counted as lost by retention, never handed to the handler.
- :mod:`.handling` -- one message: SUCCESS acks, RETRY or an exception
  schedules a retry until ``maxRetries``, FAIL dead-letters at once.
- :mod:`.entries` -- stream entries decoded into :class:`~mqcore.models.Message`.
- :mod:`.options` -- :class:`ConsumerOptions`, :class:`Outcome`, :class:`ConsumerStats`.
"""

from mqcore.consumer.control import Consumer
from mqcore.consumer.entries import decode_message
from mqcore.consumer.options import ConsumerOptions, ConsumerStats, Handler, Outcome

__all__ = [
    "Consumer",
    "ConsumerOptions",
    "ConsumerStats",
    "Handler",
    "Outcome",
    "decode_message",
]
