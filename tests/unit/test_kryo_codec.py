"""The Kryo codec against bytes written by Kryo 5.6.2 as Redisson's Kryo5Codec writes them
(tests/fixtures/kryo: how they were produced)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.codec.kryo import KryoError, decode, encode, looks_kryo

FIXTURES = dict(
    line.split("\t")
    for line in (Path(__file__).parent.parent / "fixtures" / "kryo" / "redisson_kryo5.tsv")
    .read_text()
    .splitlines()
)

EXPECTED = {
    "str:orders": "orders",
    "str:x": "x",
    "str:empty": "",
    "str:json": '{"order":7,"customer":"c-7"}',
    "str:long": "order 7 for customer c-7 with a note that is longer than sixty-four "
    "characters in all",
    "str:utf8": "caf\u00e9 \u20ac \u4e2d\u6587",
    "str:ts": "2026-11-24T01:00:00.123Z",
    "str:id": "1700000000000-0",
    "int:3": 3,
    "int:2": 2,
    "int:0": 0,
    "int:-1": -1,
    "int:300": 300,
    "long:1700000000000": 1700000000000,
    "null": None,
    "map:one": {"key": "c-7"},
    "map:three": {
        "key": "c-7",
        "x-runtime-error-message": "boom: card declined",
        "partitionId": "2",
    },
    "map:empty": {},
}


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_reads_what_kryo_wrote(label: str) -> None:
    assert decode(bytes.fromhex(FIXTURES[label])) == EXPECTED[label]


@pytest.mark.parametrize("label", sorted(k for k in EXPECTED if k != "map:three"))
def test_writes_byte_for_byte_what_kryo_writes(label: str) -> None:
    assert encode(EXPECTED[label]).hex() == FIXTURES[label]


def test_field_names_and_round_trips() -> None:
    for label, hexed in FIXTURES.items():
        if label.startswith("field:"):
            raw = bytes.fromhex(hexed)
            assert looks_kryo(raw)
            assert decode(raw) == label.removeprefix("field:")
    assert not looks_kryo(b"originalTopic")
    three = EXPECTED["map:three"]
    assert decode(encode(three)) == three  # Java's order differs; the content does not
    for text in ("", "a", "é" * 70, "x" * 10_000, "\U0001f600 emoji"):
        assert decode(encode(text)) == text


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x03", b"\x03ab", b"\x02\xff\xff\xff\xff\xff\xff", b"\x01\x00\x03java.lang.Objec\xf4",
     b"\x44", b"\x03ab\xe3extra"],
)  # fmt: skip
def test_refuses_what_it_does_not_read(raw: bytes) -> None:
    with pytest.raises(KryoError):
        decode(raw)
