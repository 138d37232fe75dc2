"""One pass over a whole deployment: the data behind :meth:`mqcore.admin.Admin.snapshot`.

Every command of a pass is bounded and pipelined; a topic whose commands fail
gets its ``error`` set and the others are unaffected. The pass builds the snapshot's
structs (:class:`mqcore.models.ClusterSnapshot`) directly. One module per part:

- :mod:`.plan` -- the pass: the command lists of its phases (per topic, per
  partition, per group x partition), run through :class:`mqcore.wire.Wire`, with
  what the previous pass learned reused; :func:`take_snapshot`, :func:`gc_paused`.
- :mod:`.topic` -- one topic's replies turned into its :class:`~mqcore.models.TopicSnapshot`.
- :mod:`.replies` -- reply shapes, raw RESP2 or parsed by redis-py.
- :mod:`.shapes` -- the parts :class:`mqcore.admin.Admin`'s live reads build the same way
  (:func:`lease_of`, :func:`consumers_of`, :func:`retry_backlog_of`).
"""

from mqcore.snapshot.plan import gc_paused, server_facts, take_snapshot
from mqcore.snapshot.shapes import consumers_of, lease_of, retry_backlog_of

__all__ = [
    "consumers_of",
    "gc_paused",
    "lease_of",
    "retry_backlog_of",
    "server_facts",
    "take_snapshot",
]
