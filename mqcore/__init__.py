"""mqcore: a message queue on Redis Streams, compatible with redis-streaming (Java).

Public names are re-exported here; see README and docs/redis-layout.md.
"""

from mqcore.config import MQConfig
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

__all__ = [
    "ConnectionLostError",
    "FencedError",
    "InvalidArgumentError",
    "InvalidIdError",
    "KeySpace",
    "LeaseLostError",
    "MQConfig",
    "MQError",
    "PayloadTooLargeError",
    "UnknownGroupError",
    "UnknownMessageError",
    "UnknownPartitionError",
    "UnknownTopicError",
]
