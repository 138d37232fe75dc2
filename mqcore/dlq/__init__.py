"""Dead letters: browse, filter, get, replay (idempotent), delete, purge.

Letters are read the way Java writes them (docs/redis-layout.md, DLQ entries): the real
partition is ``headers.partitionId``; the top-level ``partitionId`` (always 0 in
Java) is only a fallback. Browsing is newest first with an exclusive cursor and a
bounded scan that reports how much it read.

Replay routing (``replay_letters.lua``, atomic per letter), in order:

1. ``target_partition`` when given (on ``target_topic`` when given);
2. the letter's original partition (``headers.partitionId``, else the top-level
   field) when it is below the target's current partition count;
3. else Java ``String.hashCode(key) mod P`` of the letter's key, computed in Python by
   :func:`mqcore.partition.partition_for_key` (so after a grow
   from 4 to 8 partitions a letter keeps its original partition, and a letter
   whose partition is gone lands where its key lives now);
4. else partition 0.

The new entry has ``retryCount=0``, ``timestamp=now``, the letter's payload,
key, ``maxRetries`` and headers, plus ``x-replayed-from-dlq`` (the letter's id)
and ``x-original-message-id`` (kept, or set from ``originalMessageId``). The
replay record (dlq id -> new id, topic, partition, when, by whom) is written in
the same script, so a letter already replayed is skipped unless ``force``. The
letter itself is kept, as Java does.

One module per part:

- :mod:`.dead_letters` -- :class:`DeadLetters`, the API.
- :mod:`.letters` -- DLQ entries decoded into :class:`~mqcore.models.DlqLetter`
  (a page's hot loop), replay records parsed.
- :mod:`.browse` -- a page newest first, the ids matching filters, replay follow-ups.
- :mod:`.replay` -- :class:`~mqcore.dlq.replay.Replayer`, DeadLetters' own: replay batches through
  the script, the target's partition count.
"""

from mqcore.dlq.dead_letters import DeadLetters
from mqcore.dlq.letters import (
    REPLAYED_HEADER,
    letter_from_entry,
    letters_from_entries,
    parse_records,
)
from mqcore.dlq.replay import REPLAY_BATCH

__all__ = [
    "REPLAYED_HEADER",
    "REPLAY_BATCH",
    "DeadLetters",
    "letter_from_entry",
    "letters_from_entries",
    "parse_records",
]
