"""One message: decode it, call the handler, act on the outcome.

SUCCESS (or ``None``) acks. RETRY or an exception schedules the next attempt
(ack + retry item in one script) until ``retryCount >= maxRetries``, then
dead-letters; FAIL dead-letters at once (ack + DLQ in one script). So a message
with ``maxRetries=N`` is handled N+1 times, as in the Java library. Every write
carries the lease epoch: a :class:`FencedError` from the handler or a script
propagates to the worker, which drops its in-flight work.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from mqcore.acks import PendingEntry, dead_letter, schedule_retry
from mqcore.clock import now_ms
from mqcore.consumer.entries import decode_message, stored_fields
from mqcore.consumer.host import WorkerHost, report_count, report_latency
from mqcore.consumer.options import Outcome
from mqcore.consumer_metrics import Tally
from mqcore.errors import FencedError, UnknownMessageError
from mqcore.models import Message
from mqcore.payloads import (
    PAYLOAD_HASH_REF,
    PAYLOAD_MISSING,
    PAYLOAD_REF_REFUSED,
    fetch_payload,
    is_out_of_line,
)

__all__ = ["DIRECT_RETRY_MS", "handle_entry"]

log = logging.getLogger("mqcore.consumer")

DIRECT_RETRY_MS = 50  # Java: delays this short are re-added to the partition at once
# the members as module constants: an enum class attribute costs ~170 ns a lookup on 3.11,
# paid per message
_SUCCESS, _RETRY = Outcome.SUCCESS, Outcome.RETRY


def handle_entry(
    host: WorkerHost,
    partition: int,
    epoch: int,
    entry_id: str,
    raw_fields: Mapping[Any, Any] | None,
    tally: Tally | None = None,
) -> bool:
    """Handle one entry; True when it is to be acked with the worker's next flush.

    A retried or dead-lettered entry is acked by its own script, so it returns False.
    ``tally`` (the worker's, when it publishes metrics) counts the handler call, its time
    and outcome, and the retry or dead letter written.
    """
    if not raw_fields:
        # read back from our own PEL after a trim: never hand an empty message over
        host.stats.add(lost_by_retention=1)
        log.warning("p%d: entry %s vanished while pending", partition, entry_id)
        return True
    message = decode_message(
        host.topic,
        partition,
        entry_id,
        raw_fields,
        default_max_retries=host.options.retry_policy.max_retries,
    )
    if PAYLOAD_HASH_REF in message.headers:
        message, missing = _resolve_payload(host, message, raw_fields)
        if missing is not None:  # never handed over empty: dead-lettered, as Java does
            _dead_letter(host, epoch, message, None, Outcome.FAIL, tally, reason=missing)
            return False
    error: BaseException | None = None
    metrics = host.metrics  # no clock reads without metrics or a tally
    timed = metrics is not None or tally is not None
    started = time.perf_counter() if timed else 0.0
    try:
        outcome = host.handler(message)
    except FencedError:
        raise
    except Exception as exc:
        outcome, error = _RETRY, exc
    if timed:
        elapsed_ms = (time.perf_counter() - started) * 1000
        if metrics is not None:
            report_latency(host, partition, elapsed_ms)
        if tally is not None:
            tally.handled(elapsed_ms, bool(outcome) and outcome is not _SUCCESS)
    if not outcome or outcome is _SUCCESS:  # None (or anything falsy) means SUCCESS
        return True
    if outcome == _RETRY and message.retry_count < message.max_retries:
        _retry(host, epoch, message, error, tally)
    else:
        _dead_letter(host, epoch, message, error, outcome, tally)
    return False


def _resolve_payload(
    host: WorkerHost, message: Message, raw_fields: Mapping[Any, Any]
) -> tuple[Message, str | None]:
    """The message with its out-of-line payload loaded, and None; or, when the payload key
    is gone or its reference refused, the message as it is and why (counted in
    ``payload_missing``)."""
    payload_field = raw_fields.get(b"payload", raw_fields.get("payload"))
    if not is_out_of_line(message.headers, payload_field):
        return message, None
    value, headers = fetch_payload(
        host.client,
        message.headers,
        prefix=host.keys.payload_prefix(message.topic, message.partition),
    )
    if value is None:
        report_count(host, "payload_missing", message.partition)
        refused = headers.get(PAYLOAD_REF_REFUSED)
        ref = headers.get(PAYLOAD_HASH_REF, "")
        why = refused or f"out-of-line payload missing: {PAYLOAD_MISSING} (key {ref} is gone)"
        return message, why[:1000]
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
        return replace(message, payload=text, payload_bytes=value, headers=headers), None
    return replace(message, payload=value, payload_bytes=None, headers=headers), None


def _error_text(error: BaseException | None, outcome: Outcome) -> tuple[str, str]:
    if error is None:
        return f"handler returned {outcome.value}", ""
    return (str(error) or type(error).__name__)[:1000], type(error).__name__


def _retry(
    host: WorkerHost,
    epoch: int,
    message: Message,
    error: BaseException | None,
    tally: Tally | None,
) -> None:
    attempt = message.retry_count + 1
    delay = int(host.options.retry_policy.delay_ms(attempt))
    fields = stored_fields(message)
    if error is not None:
        reason, kind = _error_text(error, Outcome.RETRY)
        headers = dict(message.headers)
        headers["x-runtime-error-message"] = reason
        headers["x-runtime-error-type"] = kind
        fields["headers"] = json.dumps(headers, separators=(",", ":"), ensure_ascii=False)
    _settle(
        host,
        (message, epoch, tally),
        "retried",
        schedule_retry,
        fields=fields,
        due_ms=now_ms() + delay,
        direct=delay <= DIRECT_RETRY_MS,
        default_max_retries=message.max_retries,
    )


def _dead_letter(
    host: WorkerHost,
    epoch: int,
    message: Message,
    error: BaseException | None,
    outcome: Outcome,
    tally: Tally | None,
    *,
    reason: str | None = None,
) -> None:
    """Dead-letter ``message``: why from ``error`` or ``outcome``, or ``reason`` when given."""
    if reason is None:
        reason, kind = _error_text(error, outcome)
    else:
        kind = "PayloadMissing"
    _settle(
        host,
        (message, epoch, tally),
        "dead",
        dead_letter,
        reason=reason,
        error_type=kind,
        fields=stored_fields(message),
    )


def _settle(
    host: WorkerHost,
    work: tuple[Message, int, Tally | None],
    what: str,
    script: Callable[..., object],
    **args: Any,
) -> None:
    """Run ``script`` (:func:`schedule_retry` or :func:`dead_letter`: ack and write in one
    script) on ``work``'s message as this worker (its lease at ``work``'s epoch, ack policy,
    encoding), then count it as ``what`` (and in ``work``'s tally, sent with the next acks);
    a message no longer pending is skipped (logged, not counted)."""
    message, epoch, tally = work
    try:
        entry = PendingEntry(
            host.topic, host.group, message.partition, message.id, epoch, host.name
        )
        script(
            host.client,
            host.keys,
            entry,
            policy=host.options.ack_policy,
            encoding=host.encoding,
            **args,
        )
    except UnknownMessageError:
        name = getattr(script, "__name__", "write")
        log.warning("p%d: %s no longer pending, %s skipped", message.partition, message.id, name)
        return
    host.stats.add(**{what: 1})
    report_count(host, what, message.partition)
    if tally is not None:
        tally.settled("r" if what == "retried" else "d")
