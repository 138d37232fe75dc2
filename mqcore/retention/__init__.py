"""Stream retention beside Java: mqcore's housekeeper and the view of every rule's effect.

- :mod:`mqcore.retention.floor`: the retention floor every deleting path obeys (the scripts'
  twin is ``mqcore/scripts/lib/floor.lua``);
- :mod:`mqcore.retention.policy`: the rules (ours, and the Java deployment's);
- :mod:`mqcore.retention.trim`: the housekeeper (bounded, never past unread entries);
- :mod:`mqcore.retention.view`: per partition, each group's position, floor and commit
  frontier, and what each rule would delete next, with the unread entries at risk.
"""

from mqcore.retention.policy import JavaRetention, RetentionPolicy
from mqcore.retention.trim import PartitionTrim, housekeep, trim_partition

__all__ = ["JavaRetention", "PartitionTrim", "RetentionPolicy", "housekeep", "trim_partition"]
