"""One pass over a whole deployment: the data behind :meth:`mqcore.admin.Admin.snapshot`.

Every command of a pass is bounded and pipelined; a topic whose commands fail
gets its ``error`` set and the others are unaffected. One module per part:

- :mod:`.plan` -- the pass: the command lists of its phases (per topic, per
  partition, per group x partition), run through :class:`mqcore.wire.Wire`, with
  what the previous pass learned reused; :func:`take_snapshot_dict`, :func:`gc_paused`.
- :mod:`.topic` -- one topic's replies turned into its snapshot dict.
- :mod:`.replies` -- reply shapes, raw RESP2 or parsed by redis-py.
- :mod:`.shapes` -- the dict shapes shared with :class:`mqcore.admin.Admin`
  (:func:`group_dict`, :func:`lease_dict`, :func:`consumer_dicts`) and
  :func:`snapshot_from_dict`, the dataclasses of a snapshot dict.
"""

from mqcore.snapshot.plan import gc_paused, take_snapshot, take_snapshot_dict
from mqcore.snapshot.shapes import consumer_dicts, group_dict, lease_dict, snapshot_from_dict

__all__ = [
    "consumer_dicts",
    "gc_paused",
    "group_dict",
    "lease_dict",
    "snapshot_from_dict",
    "take_snapshot",
    "take_snapshot_dict",
]
