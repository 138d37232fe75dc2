"""Every Redis key name mqcore uses, and nowhere else.

The console's own store has its keys in ``dashboard.store.keys``.

The layout is the one the Java library redis-streaming writes (see
docs/redis-layout.md): a Python producer, a Java consumer and the console share
one deployment. Java builds keys without braces (``stream:topic:orders:p:0``);
on Redis Cluster every multi-key script needs the keys of one topic in one
slot, so :class:`KeySpace` can wrap the topic segment in a ``{...}`` hash tag
(``stream:topic:{orders}:p:0``). Hash tags are off by default (byte-for-byte
Java compatible) and must be on for Redis Cluster; a Java service on a cluster
gets the same keys by naming its topics ``{orders}``.

Keys that the Java library does not have (fencing epochs, replay records,
checkpoints) live under the same control prefix; all topic-scoped ones carry the
topic segment so they hash with the topic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DEFAULT_CONTROL_PREFIX",
    "DEFAULT_STREAM_PREFIX",
    "KeySpace",
    "validate_name",
]

DEFAULT_CONTROL_PREFIX = "streaming:mq"
DEFAULT_STREAM_PREFIX = "stream:topic"

_NAME_RE = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")


def validate_name(kind: str, name: str) -> str:
    """Return ``name`` if it is a safe topic/group/pipeline name, else raise ValueError.

    Names become key segments, so ``:``, braces, spaces and control characters
    are refused (they would make keys ambiguous or break hash tags).
    """
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError(
            f"invalid {kind} name {name!r}: use 1-200 characters from A-Z a-z 0-9 . _ -"
        )
    return name


@dataclass(frozen=True, slots=True)
class KeySpace:
    """Key names for one MQ deployment (prefixes are configurable as in Java)."""

    control_prefix: str = DEFAULT_CONTROL_PREFIX
    stream_prefix: str = DEFAULT_STREAM_PREFIX
    hash_tags: bool = False

    def _t(self, topic: str) -> str:
        return "{" + topic + "}" if self.hash_tags else topic

    # --- Java layout -------------------------------------------------------
    def partition(self, topic: str, partition: int) -> str:
        return f"{self.stream_prefix}:{self._t(topic)}:p:{partition}"

    def dlq(self, topic: str) -> str:
        return f"{self.stream_prefix}:{self._t(topic)}:dlq"

    def registry(self) -> str:
        return f"{self.control_prefix}:topics:registry"

    def meta(self, topic: str) -> str:
        return f"{self.control_prefix}:topic:{self._t(topic)}:meta"

    def partitions_set(self, topic: str) -> str:
        return f"{self.control_prefix}:topic:{self._t(topic)}:partitions"

    def lease(self, topic: str, group: str, partition: int) -> str:
        return f"{self.control_prefix}:lease:{self._t(topic)}:{group}:{partition}"

    def retry_zset(self, topic: str) -> str:
        return f"{self.control_prefix}:retry:{self._t(topic)}"

    def retry_item(self, topic: str, item_id: str) -> str:
        return f"{self.retry_item_prefix(topic)}{item_id}"

    def retry_item_prefix(self, topic: str) -> str:
        """The retry item keys of ``topic`` are this prefix and an item id (a uuid)."""
        return f"{self.control_prefix}:retry:item:{self._t(topic)}:"

    def retry_lock(self, topic: str) -> str:
        return f"{self.control_prefix}:retry:lock:{self._t(topic)}"

    def commit_frontier(self, topic: str, partition: int) -> str:
        return f"{self.control_prefix}:commit:{self._t(topic)}:p:{partition}"

    def payload(self, topic: str, partition: int, ref: str) -> str:
        return f"{self.payload_prefix(topic, partition)}{ref}"

    def payload_prefix(self, topic: str, partition: int) -> str:
        """Prefix of every out-of-line payload key of one partition (a reference an entry
        carries must start with its own partition's prefix)."""
        return f"{self.payload_topic_prefix(topic)}{partition}:"

    def payload_topic_prefix(self, topic: str) -> str:
        """Prefix of every out-of-line payload key of a topic (any partition): the keys a
        retry item or dead letter of the topic may own are this prefix, a partition, ``:``
        and a uuid."""
        return f"{self.control_prefix}:payload:{self._t(topic)}:p:"

    def payload_index(self, topic: str) -> str:
        """Set of a topic's out-of-line payload keys (Java's per-topic index; used by delete)."""
        return f"{self.control_prefix}:payload:idx:{self._t(topic)}"

    # --- mqcore additions (not in Java) -------------------------------------
    def lease_epoch(self, topic: str, group: str, partition: int) -> str:
        """Fencing epoch: INCRed on every lease takeover, checked by write scripts."""
        return f"{self.control_prefix}:lease-epoch:{self._t(topic)}:{group}:{partition}"

    def lease_prefixes(self, topic: str, group: str) -> tuple[str, str]:
        """:meth:`lease` and :meth:`lease_epoch` of ``topic``/``group`` without the partition:
        ``lease(topic, group, p) == prefixes[0] + str(p)`` (many partitions' keys at once)."""
        t = self._t(topic)
        return (
            f"{self.control_prefix}:lease:{t}:{group}:",
            f"{self.control_prefix}:lease-epoch:{t}:{group}:",
        )

    def lease_released(self, topic: str, group: str, partition: int) -> str:
        """The epoch an mqcore holder released cleanly (for one lease TTL): the next owner
        then skips the take-over grace (mqcore only; Java never writes it)."""
        return f"{self.control_prefix}:lease-released:{self._t(topic)}:{group}:{partition}"

    def consumers(self, topic: str, group: str) -> str:
        """Hash consumer name -> JSON heartbeat (last seen ms, partitions held, cap)."""
        return f"{self.control_prefix}:consumers:{self._t(topic)}:{group}"

    def consumer_metrics(self, topic: str, group: str, step: str, slot: int) -> str:
        """Hash of a group's consumer metrics over one minute (``step`` ``m``, ``slot`` = unix
        minute) or one hour (``h``, unix hour): ``<consumer>|<counter>`` -> count
        (:mod:`mqcore.consumer_metrics`); expires on its own."""
        return f"{self.control_prefix}:consumer-metrics:{self._t(topic)}:{group}:{step}:{slot}"

    def dlq_replays(self, topic: str) -> str:
        """Hash dlq id -> JSON replay record (new id, target, when, by whom)."""
        return f"{self.control_prefix}:dlq-replays:{self._t(topic)}"

    def outside_events(self) -> str:
        """Stream of the actions taken outside the console (position moves, trims, replays,
        purges made with the mqcore CLI or library), with who, what and why; bounded
        (``MAXLEN ~``, :mod:`mqcore.outside_events`)."""
        return f"{self.control_prefix}:outside-events"

    def checkpoint_index(self, pipeline: str) -> str:
        """Zset of batch ids of a pipeline's checkpoint records (score = batch id)."""
        return f"{self.control_prefix}:checkpoint:{{{pipeline}}}:index"

    def checkpoint(self, pipeline: str, batch_id: int) -> str:
        return f"{self.control_prefix}:checkpoint:{{{pipeline}}}:batch:{batch_id}"

    def checkpoint_meta(self, pipeline: str) -> str:
        """Hash of a pipeline's counters and latest ids (completed, failed, restored...)."""
        return f"{self.control_prefix}:checkpoint:{{{pipeline}}}:meta"

    def pipelines(self) -> str:
        """Set of pipeline names that wrote checkpoints."""
        return f"{self.control_prefix}:pipelines"

    def sink_marker(self, pipeline: str) -> str:
        """Hash sink -> last committed batch id (exactly-once marker)."""
        return f"{self.control_prefix}:checkpoint:{{{pipeline}}}:committed"

    def sink_stage(
        self, pipeline: str, run_id: str, batch_id: int, task: int | str, chunk: int
    ) -> str:
        """One chunk of the staged (uncommitted) writes of a sink task (a 2PC task's number,
        or ``driver`` for a batch the driver commits through the journal)."""
        return (
            f"{self.control_prefix}:checkpoint:{{{pipeline}}}:stage:{run_id}:{batch_id}:{task}"
            f":{chunk}"
        )

    def commit_journal(self, pipeline: str) -> str:
        """Hash of a pipeline's batch commit under way, applied in chunks (docs/checkpoints.md)."""
        return f"{self.control_prefix}:checkpoint:{{{pipeline}}}:journal"

    def sink_output(self, pipeline: str, name: str) -> str:
        """Output hash of a Redis sink (e.g. per-customer totals)."""
        return f"{self.control_prefix}:sink:{{{pipeline}}}:{name}"

    # --- reading a key back -------------------------------------------------
    def topic_of(self, key: str) -> str | None:
        """The topic whose key ``key`` is (any key of a topic above, with or without a hash
        tag), or None: a key of no topic (registry, pipelines, checkpoints), of another
        layout, cut short, or naming no valid topic."""
        for prefix, shapes in (
            (self.stream_prefix, _STREAM_SHAPES),
            (self.control_prefix, _CONTROL_SHAPES),
        ):
            if key.startswith(prefix + ":"):
                parts = key[len(prefix) + 1 :].split(":")
                for shape in shapes:
                    topic = _match_shape(shape, parts)
                    if topic is not None:
                        return topic
        return None


# the segments after a prefix of every topic key :class:`KeySpace` makes: "T" the topic,
# "*" any one segment (a partition, a group, an id), other text itself
_STREAM_SHAPES = (("T", "p", "*"), ("T", "dlq"))
_CONTROL_SHAPES = (
    ("topic", "T", "meta"), ("topic", "T", "partitions"),
    ("lease", "T", "*", "*"), ("lease-epoch", "T", "*", "*"), ("lease-released", "T", "*", "*"),
    ("retry", "T"), ("retry", "item", "T", "*"), ("retry", "lock", "T"),
    ("commit", "T", "p", "*"),
    ("payload", "T", "p", "*", "*"), ("payload", "idx", "T"),
    ("consumers", "T", "*"), ("dlq-replays", "T"), ("consumer-metrics", "T", "*", "*", "*"),
)  # fmt: skip


def _match_shape(shape: tuple[str, ...], parts: list[str]) -> str | None:
    if len(shape) != len(parts):
        return None
    topic = None
    for want, part in zip(shape, parts, strict=True):
        if want == "T":
            topic = part[1:-1] if part[:1] == "{" and part[-1:] == "}" else part
            if not _NAME_RE.fullmatch(topic):
                return None
        elif want != part and (want != "*" or not part):
            return None
    return topic
