"""Produce a test message to a topic (Operator role, audited).

The same validation as ``mqcore produce`` (the CLI producer): :class:`mqcore.producer.Producer`
checks the topic, payload size, key, header names and values and the partition before it
writes anything; headers come as ``NAME=VALUE`` (one per line on the page, as the CLI's
``--header``) or as a JSON object of strings (the API). One message is one ``XADD`` (or
one script call for an out-of-line payload): atomic. The audit intent names the target,
the key and the header names, never the payload or header values (they may be sensitive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.clusters import writer_admin
from dashboard.models import AuditEventType
from dashboard.permissions import Action
from dashboard.services.audit import Actor, audited
from mqcore.producer import OutgoingMessage, Producer, parse_header_assignment

__all__ = ["MAX_HEADERS", "header_lines", "produce_message"]

MAX_HEADERS = 50


def header_lines(text: str) -> dict[str, str]:
    """``NAME=VALUE`` per line (blank lines skipped) -> headers; ValueError on a bad line."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            name, value = parse_header_assignment(line.strip())
            out[name.strip()] = value
    return out


def produce_message(
    actor: Actor,
    *,
    payload: str,
    key: str | None = None,
    headers: Mapping[str, str] | None = None,
    partition: int | None = None,
) -> dict[str, Any]:
    """Send one message to the actor's topic; returns ``{"topic", "partition", "id"}``."""
    actor.require(Action.PRODUCE)
    topic = actor.topic
    if not isinstance(payload, str) or payload == "":
        raise ValueError("payload: write the message to send")
    headers = dict(headers or {})
    if len(headers) > MAX_HEADERS:
        raise ValueError(f"headers: at most {MAX_HEADERS}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ValueError("headers: names and values must be strings")
    key = key or None
    mq = writer_admin(actor.cluster)
    count = mq.partition_count(topic)  # an unknown topic is refused before the audit row
    if partition is not None and not 0 <= partition < count:
        raise ValueError(f"partition: {topic} has partitions 0..{count - 1}")
    producer = Producer(mq.config, mq.client)
    message = OutgoingMessage(payload, key=key, headers=headers or None, partition=partition)
    producer.check(topic, message)
    with audited(
        actor,
        AuditEventType.MESSAGE_PRODUCE,
        detail={
            "partition": partition,
            "key": key,
            "header_names": sorted(headers)[:MAX_HEADERS],
            "payload_bytes": len(payload.encode("utf-8")),
        },
    ) as audit:
        res = producer.send(topic, payload, key=key, headers=headers or None, partition=partition)
        audit.set(
            "produced", counts={"produced": 1}, detail={"partition": res.partition, "id": res.id}
        )
    return {"topic": res.topic, "partition": res.partition, "id": res.id}
