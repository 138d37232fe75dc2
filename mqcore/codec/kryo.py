"""Values written by Redisson's default codec (``Kryo5Codec``), as Java's redis-streaming
writes them into dead letters, commit frontiers and the like.

Redisson encodes each field name and value with ``Kryo.writeClassAndObject`` (Kryo 5,
no registration required, no references). What Java's library puts there is limited
to strings, integers, longs, booleans and ``HashMap<String, String>``; those are read
and written here byte for byte as Kryo 5.6.2 does. Anything else is refused with
:class:`KryoError` (the caller shows it as undecodable, never guesses).

Wire format: a class id as an unsigned varint (0 null, 1 "class by name", else the
registered id + 2: int 0, String 1, boolean 3, long 7), then the value. A string of
2..63 ASCII characters is its bytes with the last one's high bit set; any other is
its length + 1 (Kryo's UTF-8 length prefix) and its UTF-16 units as 1-3 bytes each.
An int or long is a zig-zag varint. A ``HashMap`` is class 1, name id 0, its class
name, then size + 1 and each key and value written the same way.
"""

from __future__ import annotations

import codecs
from typing import Any

__all__ = ["KryoError", "decode", "encode", "looks_kryo"]

_NULL, _NAME = 0, 1
_INT, _STRING, _BOOLEAN, _LONG = 2, 3, 5, 9  # registered id + 2
_MAPS = frozenset({"java.util.HashMap", "java.util.LinkedHashMap", "java.util.TreeMap"})
_HASHMAP = b"\x01\x00" + b"java.util.HashMa\xf0"
_MAX_DEPTH = 4
_CONTINUATION_BYTES = [bytes([b]) for b in range(0x80, 0xC0)]


def _continuations(data: bytes, start: int, end: int) -> int:
    """How many UTF-8 continuation bytes (0x80-0xBF) ``data[start:end]`` holds (counted in C,
    without a copy)."""
    return sum(data.count(b, start, end) for b in _CONTINUATION_BYTES)


class KryoError(ValueError):
    """Raised for bytes that are not a Kryo value of the supported kinds."""


def looks_kryo(raw: bytes) -> bool:
    """Whether ``raw`` reads as a Kryo-encoded short string (how Redisson writes a field
    name: ``0x03``, ASCII, the last byte's high bit set)."""
    return len(raw) >= 3 and raw[0] == _STRING and raw[-1] >= 0x80 and raw[1] < 0x80


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise KryoError("Kryo value ends early")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self, limit: int = 10) -> int:
        result = shift = 0
        for _ in range(limit):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise KryoError("Kryo varint too long")

    def zigzag(self, limit: int) -> int:
        n = self.varint(limit)
        return (n >> 1) ^ -(n & 1)

    def string(self) -> str | None:
        b = self.byte()
        if not b & 0x80:  # ASCII: until a byte with the high bit set
            start = self.pos - 1
            while not b & 0x80:
                b = self.byte()
            body = bytearray(self.data[start : self.pos])
            body[-1] &= 0x7F
            return body.decode("ascii")
        length = b & 0x3F
        if b & 0x40:
            for shift in (6, 13, 20, 27):
                b = self.byte()
                length |= (b & 0x7F) << shift
                if not b & 0x80:
                    break
        if length == 0:
            return None
        return self.utf16_units(length - 1)

    def utf16_units(self, n: int) -> str:
        """``n`` UTF-16 units written as 1-3 bytes each, decoded from one slice of the input
        (a string of N bytes costs a few N bytes, not a Python object per character)."""
        data, start = self.data, self.pos
        if n > len(data) - start:
            raise KryoError("Kryo value ends early")
        end = start + n
        view = memoryview(data)  # decoded in place: no copy of the slice
        try:  # one byte per unit: the usual text
            text = codecs.ascii_decode(view[start:end])[0]
        except UnicodeDecodeError:
            pass
        else:
            self.pos = end
            return text
        # multi-byte units: widen the slice until it holds n lead bytes (each widening
        # counts only the bytes it adds), then take the last unit's continuation bytes
        have = n - _continuations(data, start, end)
        while have < n and end < len(data):
            added = min(len(data), end + n - have)
            have += (added - end) - _continuations(data, end, added)
            end = added
        while end < len(data) and 0x80 <= data[end] < 0xC0:
            end += 1
        try:
            text = codecs.utf_8_decode(view[start:end], "surrogatepass", True)[0]
        except UnicodeDecodeError:
            text = ""
        if len(text) != n:  # not what Kryo's writer emits: read unit by unit, as Kryo does
            return self._units_slowly(n)
        self.pos = end
        if data.find(b"\xed", start, end) >= 0:  # UTF-16 surrogates: pairs joined, lone replaced
            return (
                text.encode("utf-16-le", "surrogatepass")
                .decode("utf-16-le", "surrogatepass")
                .encode("utf-8", "replace")
                .decode()
            )
        return text

    def _units_slowly(self, n: int) -> str:
        units = bytearray()  # UTF-16-LE, two bytes a unit
        for _ in range(n):
            c = self.byte()
            if c >> 4 in (12, 13):
                c = (c & 0x1F) << 6 | (self.byte() & 0x3F)
            elif c >> 4 == 14:
                c = (c & 0x0F) << 12 | (self.byte() & 0x3F) << 6 | (self.byte() & 0x3F)
            elif c > 0x7F:
                raise KryoError("bad Kryo UTF-8")
            units += c.to_bytes(2, "little")
        text = units.decode("utf-16-le", "surrogatepass")
        return text.encode("utf-8", "replace").decode()

    def value(self, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise KryoError("Kryo value nested too deep")
        cls = self.varint(5)
        if cls == _NULL:
            return None
        if cls == _STRING:
            return self.string()
        if cls == _INT:
            return self.zigzag(5)
        if cls == _LONG:
            return self.zigzag(10)
        if cls == _BOOLEAN:
            return self.byte() == 1
        if cls == _NAME:
            self.varint(5)  # name id: always new in a value of its own
            name = self.string() or ""
            if name not in _MAPS:
                raise KryoError(f"Kryo class {name[:80]} is not read here")
            size = self.varint(5)
            out: dict[str, Any] = {}
            for _ in range(max(0, size - 1)):
                key = self.value(depth + 1)
                out[str(key)] = self.value(depth + 1)
            return out
        raise KryoError(f"Kryo class id {cls - 2} is not read here")


def decode(raw: bytes) -> Any:
    """The value of one Kryo-encoded field name or value (KryoError otherwise)."""
    reader = _Reader(bytes(raw))
    value = reader.value()
    if reader.pos != len(reader.data):
        raise KryoError("bytes left after the Kryo value")
    return value


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _string(text: str) -> bytes:
    if not text:
        return b"\x81"
    if 1 < len(text) < 64 and text.isascii():
        body = bytearray(text.encode("ascii"))
        body[-1] |= 0x80
        return bytes(body)
    data = text.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    n = len(units) + 1
    head = bytearray([n | 0x80] if n >> 6 == 0 else [(n & 0x3F) | 0x40 | 0x80])
    n = 0 if n >> 6 == 0 else n >> 6
    while n:
        more = n >> 7
        head.append((n & 0x7F) | (0x80 if more else 0))
        n = more
    body = bytearray()
    for c in units:
        if c <= 0x7F:
            body.append(c)
        elif c <= 0x7FF:
            body += bytes([0xC0 | c >> 6 & 0x1F, 0x80 | c & 0x3F])
        else:
            body += bytes([0xE0 | c >> 12 & 0x0F, 0x80 | c >> 6 & 0x3F, 0x80 | c & 0x3F])
    return bytes(head + body)


def encode(value: Any) -> bytes:
    """``value`` (str, int, bool, None, or a dict of str to str) as Redisson writes it."""
    if value is None:
        return b"\x00"
    if isinstance(value, bool):
        return bytes([_BOOLEAN, 1 if value else 0])
    if isinstance(value, int):
        small = -(2**31) <= value < 2**31
        zig = (value << 1) ^ (value >> 63)
        return bytes([_INT if small else _LONG]) + _varint(zig & (2**64 - 1))
    if isinstance(value, str):
        return bytes([_STRING]) + _string(value)
    if isinstance(value, dict):
        parts = [_HASHMAP, _varint(len(value) + 1)]
        for k, v in value.items():
            parts += [encode(str(k)), encode(str(v))]
        return b"".join(parts)
    raise KryoError(f"{type(value).__name__} values are not written here")
