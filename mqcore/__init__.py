"""mqcore: a message queue on Redis Streams, compatible with redis-streaming (Java).

Public names are re-exported here; see README and docs/redis-layout.md.
"""

from mqcore.admin import Admin
from mqcore.checkpoints import CheckpointStore
from mqcore.config import MQConfig
from mqcore.consumer import Consumer, ConsumerOptions, ConsumerStats, Outcome
from mqcore.dlq import DeadLetters
from mqcore.errors import (
    ConnectionLostError,
    FencedError,
    InvalidArgumentError,
    InvalidIdError,
    LeaseLostError,
    MQError,
    PayloadTooLargeError,
    UnknownGroupError,
    UnknownMessageError,
    UnknownPartitionError,
    UnknownTopicError,
)
from mqcore.keys import KeySpace
from mqcore.leases import Lease, LeaseManager
from mqcore.metrics import Metrics
from mqcore.partition import java_string_hash, partition_for_key
from mqcore.producer import OutgoingMessage, Producer, SendResult
from mqcore.retry import RetryMover, RetryPolicy
from mqcore.topics import DEFAULT_GROUP, DLQ_GROUP, Topics

__all__ = [
    "DEFAULT_GROUP",
    "DLQ_GROUP",
    "Admin",
    "CheckpointStore",
    "ConnectionLostError",
    "Consumer",
    "ConsumerOptions",
    "ConsumerStats",
    "DeadLetters",
    "FencedError",
    "InvalidArgumentError",
    "InvalidIdError",
    "KeySpace",
    "Lease",
    "LeaseLostError",
    "LeaseManager",
    "MQConfig",
    "MQError",
    "Metrics",
    "Outcome",
    "OutgoingMessage",
    "PayloadTooLargeError",
    "Producer",
    "RetryMover",
    "RetryPolicy",
    "SendResult",
    "Topics",
    "UnknownGroupError",
    "UnknownMessageError",
    "UnknownPartitionError",
    "UnknownTopicError",
    "java_string_hash",
    "partition_for_key",
]
