"""The Java-compatible partitioner: ``partition = String.hashCode(key) mod P``.

A Python producer must put a key on the same partition as a Java producer, or
per-key ordering breaks in a mixed deployment. Java's ``String.hashCode`` runs
over UTF-16 code units with 32-bit signed wrapping arithmetic; the modulo is
truncated toward zero and made non-negative by adding ``P``.
"""

from __future__ import annotations

__all__ = ["java_string_hash", "partition_for_key"]

_MASK = 0xFFFFFFFF


def java_string_hash(value: str) -> int:
    """Java ``String.hashCode`` of ``value``: a 32-bit signed int over UTF-16 code units."""
    h = 0
    if value.isascii():
        for unit in value.encode("ascii"):
            h = (31 * h + unit) & _MASK
    else:
        data = value.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for_key(key: str, partitions: int) -> int:
    """Partition of ``key`` among ``partitions`` exactly as the Java HashPartitioner picks it."""
    if partitions <= 0:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    h = java_string_hash(key)
    # Java's % truncates toward zero; Python's floors, so use the magnitude.
    rem = abs(h) % partitions
    if h < 0:
        rem = -rem
    return rem + partitions if rem < 0 else rem
