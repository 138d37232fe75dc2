"""The DLQ page's batch decoder gives exactly what letter_from_entry gives (pure)."""

from __future__ import annotations

import json

from mqcore.dlq import letter_from_entry, letters_from_entries
from mqcore.models import DlqLetter

HEADERS = json.dumps({"partitionId": "2", "key": "k", "x-runtime-error-message": "boom"}).encode()


def _entry(i: int, **over: bytes | None) -> list:
    fields: dict[bytes, bytes | None] = {
        b"originalTopic": b"big", b"payload": b'{"order":%d}' % i,
        b"timestamp": b"2024-01-01T00:00:00Z", b"failedAt": b"2024-01-01T00:00:01Z",
        b"retryCount": b"3", b"maxRetries": b"3", b"partitionId": b"0", b"headers": HEADERS,
        b"originalMessageId": b"%d-0" % i,
    }  # fmt: skip
    fields.update({k.encode(): v for k, v in over.items()})
    flat = [x for k, v in fields.items() if v is not None for x in (k, v)]
    return [b"17000000000%02d-0" % i, flat]


def test_batch_decoding_matches_the_careful_path() -> None:
    entries = [_entry(i) for i in range(5)] + [
        _entry(10, headers=b' {"a": 1} '),  # whitespace, a non-string value
        _entry(11, payload=b"\xff\xfe"),  # binary payload
        _entry(12, headers=None, key=b"kk"),
        _entry(13, headers=b"nope"),
        _entry(14, headers=json.dumps({"partitionId": 7, "x": [1]}).encode()),
        _entry(15, retryCount=b"x", partitionId=b"3", headers=b"{}"),
        _entry(16, originalTopic=None, timestamp=None),
        _entry(17, failedAt=b"\xc3\x28"),
        _entry(18, retryCount=b"", maxRetries=b" 5 "),
        _entry(19, maxRetries=None),
        _entry(20),  # the full layout again after ones missing fields
    ]
    batch = letters_from_entries(entries)
    assert batch == [letter_from_entry(e[0], e[1]) for e in entries]
    assert (batch[0].partition, batch[0].key, batch[0].headers["x-runtime-error-message"]) == (
        2,
        "k",
        "boom",
    )
    assert batch[6].payload_bytes == b"\xff\xfe"
    assert batch[9].headers == {"partitionId": "7", "x": "[1]"}
    assert [(x.retry_count, x.max_retries) for x in batch[-3:]] == [(0, 5), (3, 3), (3, 3)]
    assert all(type(x) is DlqLetter for x in batch)


def test_mappings_and_str_ids_take_the_careful_path() -> None:
    as_dict = ("1-0", {"payload": "p", "headers": '{"partitionId": "1"}'})
    [letter] = letters_from_entries([as_dict])
    assert (letter.id, letter.payload, letter.partition) == ("1-0", "p", 1)
