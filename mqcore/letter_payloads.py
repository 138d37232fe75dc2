"""Deleting dead letters with the out-of-line payload key each owns.

A letter names its own copy of an out-of-line payload (``x-payload-hash-ref`` under the
topic's payload prefix, written by ``dead_letter.lua``), so an operator's delete and a purge
unlink those keys with the letters, in ``delete_letters.lua`` (XDEL, then UNLINK of the key,
per letter); the housekeeper's DLQ trim does the same in its own script. Letters are read a
bounded page at a time; references that do not name a payload key of the letter's topic
are not followed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mqcore.boundary import redis_errors
from mqcore.codec import decode_text, kryo, parse_headers
from mqcore.config import RedisClient
from mqcore.keys import KeySpace
from mqcore.payloads import PAYLOAD_HASH_REF
from mqcore.scripts import call_script

__all__ = ["LETTER_PAGE", "delete_all", "delete_ids", "delete_letters", "letter_ref"]

LETTER_PAGE = 500  # letters read and deleted per round trip
_OWNED_REST = re.compile(r"\d+:[A-Za-z0-9_-]{1,100}")


def letter_ref(raw_fields: Mapping[Any, Any], topic_prefix: str) -> str:
    """The payload key a letter owns ('' for none): its ``x-payload-hash-ref`` when it names a
    payload key under ``topic_prefix`` (:meth:`KeySpace.payload_topic_prefix`). Reads letters
    mqcore writes and those written through Redisson's Kryo codec."""
    headers: Mapping[Any, Any] = {}
    for name, value in raw_fields.items():
        if name in (b"headers", "headers"):
            headers = parse_headers(value)
        elif isinstance(name, bytes) and kryo.looks_kryo(name):
            try:
                if kryo.decode(name) == "headers":
                    decoded = kryo.decode(value)
                    headers = decoded if isinstance(decoded, dict) else {}
            except kryo.KryoError:
                continue
    ref = decode_text(headers.get(PAYLOAD_HASH_REF)) if headers.get(PAYLOAD_HASH_REF) else ""
    if ref.startswith(topic_prefix) and _OWNED_REST.fullmatch(ref[len(topic_prefix) :]):
        return ref
    return ""


def delete_letters(
    client: RedisClient,
    keys: KeySpace,
    topic: str,
    entries: Iterable[tuple[Any, Any]],
    *,
    unlink: bool = True,
) -> int:
    """Delete the letters ``entries`` (``(id, raw fields)`` as XRANGE answers) and, with
    ``unlink``, the payload keys they own, in one script call; returns how many were deleted.
    (``unlink=False`` on java-kryo: a Java service's letters share the entry's payload key.)"""
    prefix = keys.payload_topic_prefix(topic)
    args: list[str] = []
    for entry_id, fields in entries:
        args += [decode_text(entry_id), letter_ref(fields or {}, prefix) if unlink else ""]
    if not args:
        return 0
    script_keys = [keys.dlq(topic), keys.payload_index(topic)]
    with redis_errors(f"delete letters of {topic!r}"):
        return int(call_script(client, "delete_letters", script_keys, args))


def delete_ids(
    client: RedisClient, keys: KeySpace, topic: str, ids: Sequence[str], *, unlink: bool = True
) -> int:
    """Delete the letters ``ids`` (validated by the caller) and the payload keys they own."""
    with redis_errors(f"read letters of {topic!r}"):
        pipe = client.pipeline(transaction=False)
        for letter_id in ids:
            pipe.xrange(keys.dlq(topic), letter_id, letter_id, count=1)
        found = [entry for reply in pipe.execute() for entry in reply]
    return delete_letters(client, keys, topic, found, unlink=unlink)


def delete_all(
    client: RedisClient, keys: KeySpace, topic: str, *, unlink: bool = True, rounds: int = 1000
) -> int:
    """Delete the letters of ``topic``, oldest first, a page at a time (at most ``rounds``
    pages), with the payload keys they own; returns how many were deleted."""
    deleted = 0
    for _ in range(rounds):
        with redis_errors(f"read letters of {topic!r}"):
            page = client.xrange(keys.dlq(topic), "-", "+", count=LETTER_PAGE)
        if not page:
            break
        deleted += delete_letters(client, keys, topic, page, unlink=unlink)
        if len(page) < LETTER_PAGE:
            break
    return deleted
