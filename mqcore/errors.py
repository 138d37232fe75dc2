"""mqcore's exceptions: one root, one class per thing a caller can act on.

Redis errors are translated at the boundary (``raise X(...) from exc``) so that
callers never need to import redis to handle a failure.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "ConcurrentChangeError",
    "ConnectionLostError",
    "FencedError",
    "InUseError",
    "InvalidArgumentError",
    "InvalidIdError",
    "LeaseLostError",
    "MQError",
    "NoPermissionError",
    "NotReplicatedError",
    "PartialMoveError",
    "PayloadRefRefusedError",
    "PayloadTooLargeError",
    "PipelineGroupError",
    "PositionOutOfRangeError",
    "UnknownGroupError",
    "UnknownMessageError",
    "UnknownPartitionError",
    "UnknownTopicError",
]


class MQError(Exception):
    """Root of every error mqcore raises."""


class InvalidArgumentError(MQError, ValueError):
    """Raised when an argument is malformed (bad name, header, option); nothing was written."""


class InvalidIdError(InvalidArgumentError):
    """Raised when a stream entry id is not of the form ``ms-seq`` (or ``ms``)."""


class PayloadTooLargeError(InvalidArgumentError):
    """Raised when a payload exceeds the configured size limit; nothing was written."""


class PayloadRefRefusedError(MQError):
    """Raised when an entry's out-of-line payload reference is not read: it names a key
    outside the entry's own partition, or a value over the size bound."""


class PositionOutOfRangeError(InvalidArgumentError):
    """Raised when a group position target lies beyond a partition's last-generated id."""


class ConcurrentChangeError(MQError):
    """Raised when a partition kept changing while a write was prepared; nothing was written."""


class PipelineGroupError(MQError):
    """Raised when a position move names a group a pipeline moves (its checkpoint records
    name it) and is not forced; nothing was written."""


class PartialMoveError(MQError):
    """Raised when a position move over more partitions than one script takes stopped
    part-way: ``moved`` lists the partitions moved, ``not_moved`` the rest (nothing written
    there); the cause is chained."""

    def __init__(self, message: str, moved: list[int], not_moved: list[int]) -> None:
        super().__init__(message)
        self.moved = moved
        self.not_moved = not_moved


class InUseError(MQError):
    """Raised when a delete is refused unforced: a group still has unread or pending entries,
    or holds a lease; nothing was written."""


class AlreadyExistsError(MQError):
    """Raised when a topic or a consumer group to create already exists; nothing was written."""


class UnknownTopicError(MQError, LookupError):
    """Raised when a topic is not in the registry."""


class UnknownGroupError(MQError, LookupError):
    """Raised when a consumer group does not exist on a topic."""


class UnknownPartitionError(MQError, LookupError):
    """Raised when a partition index is outside the topic's partition count."""


class UnknownMessageError(MQError, LookupError):
    """Raised when a stream entry (message or dead letter) does not exist."""


class FencedError(MQError):
    """Raised when a write carries a stale lease epoch: another consumer owns the partition."""


class LeaseLostError(MQError):
    """Raised when a consumer finds it no longer holds a partition lease."""


class ConnectionLostError(MQError):
    """Raised when Redis cannot be reached or a call timed out."""


class NotReplicatedError(ConnectionLostError):
    """Raised by a producer that waits for replicas (``Producer(wait_replicas=N)``) when
    fewer than N replicas had its writes within the wait: the master took them, but a
    failover now may lose them (or not). ``entry_ids`` are the writes concerned."""

    def __init__(self, message: str, entry_ids: list[str]) -> None:
        super().__init__(message)
        self.entry_ids = entry_ids


class NoPermissionError(MQError):
    """Raised when Redis refuses a command or key to the connection's ACL user (``NOPERM``,
    or a script's call the user may not make): a read-only credential asked to write."""
