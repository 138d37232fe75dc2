"""Read and operator views of an MQ deployment: lag, pending, leases, consumers, retry, snapshot.

Everything here is bounded: no command it sends blocks Redis for long on big data
(a few ms at most). Pending entries are scanned with paged ``XPENDING`` (never the
``IDLE`` option); lag falls back to a bounded ``XRANGE`` count when Redis reports
NULL, and says whether the answer is exact. :meth:`Admin.snapshot` gathers all of
it for every registered topic in pipelined batches (the collectors' workhorse).

One module per part:

- :mod:`.core` -- :class:`Admin`: topics, groups, leases, consumers, retry
  backlog, one message, the operator actions (claim, dead-letter) and the
  snapshot (:mod:`mqcore.snapshot`).
- :mod:`.lag` -- lag per group and partition, NULL lag counted in bounded pages.
- :mod:`.pending` -- the paged ``XPENDING`` scan into a bounded heap; :data:`PENDING_PAGE`.
- :mod:`.position` -- group position moves (dry run and move, exact entries-read);
  :mod:`.position_target` -- their targets and plans.
- :mod:`.export` -- :class:`~.export.PendingRows`: every matching pending entry of a group,
  partition by partition, in bounded ``XPENDING`` pages (exports).
- :mod:`.partitions` -- the hot-key sample of a partition, its rows and their skew.
- :mod:`.probes` -- the once-a-minute probes of a deployment's Redis: Java's data, Redis's
  health and slow log, ``MEMORY USAGE`` of the topics' streams.
- :mod:`.calls` -- pipelined reads where a missing stream or group answers None.
- :mod:`.shapes` -- the lease, consumer and retry dataclasses from their snapshot shapes.
"""

from mqcore.admin.core import Admin
from mqcore.admin.pending import PENDING_PAGE
from mqcore.admin.position_target import PositionMove, PositionPlan, PositionTarget

__all__ = [
    "PENDING_PAGE",
    "Admin",
    "PositionMove",
    "PositionPlan",
    "PositionTarget",
]
