"""Checks of a caller's arguments that several concepts share; each refuses bad input with
:class:`~mqcore.errors.InvalidArgumentError` before anything is read or written.

The name rule itself is :func:`mqcore.keys.validate_name` (names are key segments); here it
is the caller's error. Stream ids are checked by :func:`mqcore.codec.validate_id`.
"""

from __future__ import annotations

from mqcore.errors import InvalidArgumentError
from mqcore.keys import validate_name

__all__ = ["checked_name", "validate_topic"]


def checked_name(kind: str, name: str) -> str:
    """``name`` if it is a safe ``kind`` name (topic, group, pipeline), else
    InvalidArgumentError."""
    try:
        return validate_name(kind, name)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None


def validate_topic(topic: str) -> str:
    """``topic`` if it is a safe topic name, else InvalidArgumentError."""
    return checked_name("topic", topic)
