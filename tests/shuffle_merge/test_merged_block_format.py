"""Riffle's merged-block format on its own (no Spark): nothing unverified ever reaches a reader.

The product's Java reader runs in a plain JVM behind a py4j gateway; hypothesis builds merged
blocks of random sub-blocks, damages one byte anywhere (or cuts the stream short) and checks
that what the reader hands out is always an exact prefix of the true sub-blocks, and that the
damage is always reported, before the damaged sub-block is handed out.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.shuffle_merge.conftest import probe_jvm

PROBE = Path(__file__).resolve().parent / "java" / "MergedBlockProbe.java"


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """The Java probe class, compiled against the plugin jar and served by a py4j gateway."""
    with probe_jvm(PROBE, tmp_path_factory.mktemp("probe")) as jvm:
        yield Probe(jvm.dev.sparkrm.riffle.MergedBlockProbe)


def csv(values) -> str:
    return ",".join(str(v) for v in values)


class Probe:
    """The Java probe with Python types (a plain object, so hypothesis can inspect the fixture)."""

    def __init__(self, java_class):
        self._java = java_class

    def encode(self, reduce_id: int, blocks: list[bytes]) -> bytes:
        """A merged block of ``blocks`` (map indexes 0..n-1) for partition ``reduce_id``."""
        return bytes(self._java.encode(reduce_id, csv(range(len(blocks))), csv(len(b) for b in blocks),
                                       b"".join(blocks)))

    def read(self, stream: bytes, inputs: int, reduce_ids: list[int], in_memory: int, spill_dir: Path,
             skip=()):
        """(sub-blocks handed out as ((reduce id, map index), bytes), error message or None); the sub-blocks of
        map indexes in ``skip`` are skipped."""
        out = list(self._java.read(stream, inputs, csv(reduce_ids), in_memory, str(spill_dir), csv(skip)))
        error = out.pop()[len("error: "):] if out and isinstance(out[-1], str) and out[-1].startswith("error") else None
        handed = [(tuple(int(x) for x in out[i].split(":")), bytes(out[i + 1])) for i in range(0, len(out), 2)]
        return handed, error


def truth(partitions: dict[int, list[bytes]]):
    """Every non-empty sub-block in stream order, as the reader should hand them out."""
    return [((r, m), b) for r, blocks in partitions.items() for m, b in enumerate(blocks) if b]


def build(probe, case):
    """The partitions of ``case`` (each padded with empty sub-blocks to one width), the width, the stream."""
    width = max(len(p) for p in case["partitions"])
    partitions = {case["first_reduce_id"] + i: p + [b""] * (width - len(p)) for i, p in enumerate(case["partitions"])}
    return partitions, width, b"".join(probe.encode(r, blocks) for r, blocks in partitions.items())


sub_blocks = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=6).filter(lambda bs: any(bs))
streams = st.fixed_dictionaries({
    "partitions": st.lists(sub_blocks, min_size=1, max_size=3),
    "first_reduce_id": st.integers(0, 1000),
    "in_memory": st.integers(0, 400),  # sub-blocks above it are verified through a spill file
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=streams, damage=st.data())
def test_a_damaged_byte_anywhere_is_caught_before_its_sub_block_is_used(probe, tmp_path, case, damage):
    partitions, width, stream = build(probe, case)
    expected = truth(partitions)

    handed, error = probe.read(stream, width, list(partitions), case["in_memory"], tmp_path)
    assert (handed, error) == (expected, None)

    at = damage.draw(st.integers(0, len(stream) - 1), label="position")
    mask = damage.draw(st.integers(1, 255), label="xor mask")
    damaged = bytearray(stream)
    damaged[at] ^= mask
    handed, error = probe.read(bytes(damaged), width, list(partitions), case["in_memory"], tmp_path)
    assert error is not None, f"a flipped byte at {at} went unnoticed"
    assert handed == expected[:len(handed)]  # only intact sub-blocks, in order, and nothing after the damage
    assert sum(len(b) for _, b in handed) <= at
    assert not list(tmp_path.iterdir())  # spill files are deleted, verified or not


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=streams, cut=st.data())
def test_a_stream_cut_short_hands_out_only_the_sub_blocks_before_the_cut(probe, tmp_path, case, cut):
    partitions, width, stream = build(probe, case)
    keep = cut.draw(st.integers(0, len(stream) - 1), label="bytes kept")
    handed, error = probe.read(stream[:keep], width, list(partitions), case["in_memory"], tmp_path)
    assert error is not None
    assert handed == truth(partitions)[:len(handed)]


def test_a_stream_must_hold_exactly_the_partitions_asked_for(probe, tmp_path):
    blocks = [b"abc", b"", b"defg"]
    stream = probe.encode(7, blocks)
    assert probe.read(stream, 3, [7], 100, tmp_path) == ([((7, 0), b"abc"), ((7, 2), b"defg")], None)
    handed, error = probe.read(stream, 3, [8], 100, tmp_path)
    assert handed == [] and "partition 7 where partition 8 was expected" in error
    handed, error = probe.read(stream, 3, [7, 9], 100, tmp_path)  # a batch whose second block is missing
    assert len(handed) == 2 and "ended before partition 9" in error
    handed, error = probe.read(stream, 2, [7], 100, tmp_path)  # more sub-blocks than the merge has inputs
    assert handed == [] and "3 sub-blocks, this merge has 2" in error


def test_large_sub_blocks_are_verified_through_a_file_and_small_ones_in_memory(probe, tmp_path):
    blocks = [os.urandom(50), os.urandom(5000), os.urandom(10)]
    stream = probe.encode(0, blocks)
    assert probe.read(stream, 3, [0], 100, tmp_path) == ([((0, i), b) for i, b in enumerate(blocks)], None)
    damaged = bytearray(stream)
    damaged[len(stream) - 10 - 2500] ^= 0x10  # inside the spilled one
    handed, error = probe.read(bytes(damaged), 3, [0], 100, tmp_path)
    assert handed == [((0, 0), blocks[0])] and "checksum mismatch in sub-block 1 (map index 1)" in error
    assert not list(tmp_path.iterdir())


def test_a_map_range_reader_skips_the_other_sub_blocks_unread(probe, tmp_path):
    blocks = [b"abc", b"defgh", b"ij"]
    stream = probe.encode(3, blocks) + probe.encode(4, blocks)
    assert probe.read(stream, 3, [3, 4], 100, tmp_path, skip=[1]) == (
        [((3, 0), b"abc"), ((3, 2), b"ij"), ((4, 0), b"abc"), ((4, 2), b"ij")], None)
    # A damaged byte inside a skipped sub-block is never read, so it cannot matter...
    damaged = bytearray(stream)
    damaged[stream.index(b"defgh")] ^= 0xFF
    assert probe.read(bytes(damaged), 3, [3, 4], 100, tmp_path, skip=[1])[1] is None
    # ...while the next partition's header is still checked where the skip lands.
    handed, error = probe.read(stream[:-1], 3, [3, 4], 100, tmp_path, skip=[1])
    assert handed == [((3, 0), b"abc"), ((3, 2), b"ij"), ((4, 0), b"abc")] and "ended" in error
