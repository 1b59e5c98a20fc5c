"""Damage Riffle's merged files on disk as a failing disk would, at a chosen place in every block.

The layout mirrors ``MergedBlockFormat.java``: per merged partition a header (magic, reduce id,
n, n x (map index, length, crc32c), header crc32c), then the n sub-blocks. Partition offsets come
from the merged output's ordinary ``.index`` file, which lies in another sub-folder of the same
block-manager folder.
"""

from __future__ import annotations

import struct
from pathlib import Path

FIXED = 12
ENTRY = 16
#: Where a byte is flipped in every merged partition: the magic number, the sub-block table, the
#: header's own checksum, or inside the first, a middle or the last non-empty sub-block.
POSITIONS = ("magic", "table", "checksum", "first", "middle", "last")


def partitions(data: Path) -> list[tuple[int, int]]:
    """(offset, length) of every non-empty merged partition of ``data``."""
    index = data.with_suffix(".index").name  # Spark hashes it into a sibling sub-folder of its own
    raw = next(data.parents[1].rglob(index)).read_bytes()
    offsets = struct.unpack(f">{len(raw) // 8}q", raw)
    return [(a, b - a) for a, b in zip(offsets, offsets[1:]) if b > a]


def sub_blocks(block: bytes) -> tuple[int, list[tuple[int, int, int]]]:
    """(header bytes, [(entry index, payload offset, length) of each non-empty sub-block])."""
    (n,) = struct.unpack_from(">i", block, 8)
    header = FIXED + ENTRY * n + 4
    out, at = [], header
    for i in range(n):
        _, length, _ = struct.unpack_from(">iqi", block, FIXED + ENTRY * i)
        if length:
            out.append((i, at, length))
        at += length
    return header, out


def offset_in_block(block: bytes, position: str) -> int:
    """Offset of the byte to damage for ``position`` inside one merged partition."""
    header, subs = sub_blocks(block)
    if position == "magic":
        return 1
    if position == "table":
        return FIXED + 11  # a length in the first entry
    if position == "checksum":
        return header - 2
    _, start, length = {"first": subs[0], "middle": subs[len(subs) // 2], "last": subs[-1]}[position]
    return start + (length - 1 if position == "last" else length // 2)


def damage(data: Path, position: str) -> int:
    """Flip one byte at ``position`` in every merged partition of ``data``; returns how many."""
    raw = bytearray(data.read_bytes())
    parts = partitions(data)
    for offset, length in parts:
        raw[offset + offset_in_block(bytes(raw[offset:offset + length]), position)] ^= 0xFF
    data.write_bytes(bytes(raw))
    return len(parts)


def truncate(data: Path) -> None:
    """Cut ``data`` short in the middle of its last partition, as a full disk or a crash would."""
    offset, length = partitions(data)[-1]
    with open(data, "r+b") as f:
        f.truncate(offset + length // 2)


def damage_and_reseal(data: Path, fraction: float, crc32c) -> None:
    """Flip a byte at ``fraction`` of the largest sub-block of every partition and fix the checksums.

    The result passes verification but does not deserialize: what a merged copy of a damaged
    original looks like (the merger checksums the bytes it read).
    """
    raw = bytearray(data.read_bytes())
    for offset, length in partitions(data):
        block = raw[offset:offset + length]
        header, subs = sub_blocks(bytes(block))
        entry, start, size = max(subs, key=lambda s: s[2])
        block[start + int(size * fraction)] ^= 0xFF
        struct.pack_into(">I", block, FIXED + ENTRY * entry + 12, crc32c(bytes(block[start:start + size])))
        struct.pack_into(">I", block, header - 4, crc32c(bytes(block[:header - 4])))
        raw[offset:offset + length] = block
    data.write_bytes(bytes(raw))


def largest_sub_block(data: Path) -> int:
    raw = data.read_bytes()
    return max(size for offset, length in partitions(data) for _, _, size in sub_blocks(raw[offset:offset + length])[1])
