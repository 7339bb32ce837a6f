"""Group-coded deflate (tablebase.storage.groupcode): standard streams, groups decodable alone."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from isal import isal_zlib

from tablebase.storage import groupcode as gc

BLOCK = 1 << 14
GROUPS = (128, 256)  # the sizes format 5 writes (values, WDL codes); format 4 wrote 256


def encode(raw: np.ndarray, block: int = BLOCK, group: int = 128):
    """Every block of ``raw`` (whole blocks) coded with the part's code, in groups of
    ``group`` bytes."""
    code = gc.part_code(raw, block, group)
    n = raw.shape[0] // block
    out = np.zeros((n, gc.max_chunk_bytes(block, code.header_bits)), dtype=np.uint8)
    sizes = np.zeros(n, dtype=np.int64)
    rows = np.zeros((n, gc.row_length(block, group)), dtype=np.uint16)
    code.encode(raw, 0, n, block, group, out, sizes, rows)
    return code, [out[k, : sizes[k]].copy() for k in range(n)], rows


def shift(group: int) -> int:
    return group.bit_length() - 1


def parts() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    runs = np.repeat(rng.integers(0, 5, 3000), rng.integers(1, 40, 3000))[: 4 * BLOCK]
    skewed = np.where(rng.random(4 * BLOCK) < 0.999, 0, rng.integers(0, 256, 4 * BLOCK))
    return {
        "zeros": np.zeros(2 * BLOCK, dtype=np.uint8),
        "random bytes": rng.integers(0, 256, 2 * BLOCK, dtype=np.uint8),  # every literal
        "runs across groups": np.resize(runs, 4 * BLOCK).astype(np.uint8),
        "one rare symbol a thousand": skewed.astype(np.uint8),  # codes cut to 12 bits
        "distances": np.minimum(rng.geometric(0.08, 4 * BLOCK), 255).astype(np.uint8),
    }


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("name", list(parts()))
def test_blocks_are_standard_zlib_streams_of_their_bytes(name: str, group: int) -> None:
    raw = parts()[name]
    code, chunks, _ = encode(raw, group=group)
    assert code.lengths.max() <= gc.MAX_BITS and gc.is_code(code.lengths)
    for k, chunk in enumerate(chunks):
        want = raw[k * BLOCK : (k + 1) * BLOCK].tobytes()
        assert zlib.decompress(chunk.tobytes()) == want
        assert isal_zlib.decompress(chunk.tobytes()) == want


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("name", list(parts()))
def test_every_byte_decodes_from_its_group_alone(name: str, group: int) -> None:
    raw = parts()[name]
    code, chunks, rows = encode(raw, group=group)
    assert rows.shape[1] == 1 + BLOCK // group
    for k, chunk in enumerate(chunks):
        block = raw[k * BLOCK : (k + 1) * BLOCK]
        got = np.array(
            [gc.group_byte(chunk, rows[k], code.table, i, shift(group)) for i in range(BLOCK)]
        )
        assert np.array_equal(got, block)
        whole = np.empty(BLOCK, dtype=np.uint8)
        assert gc.decode_groups(chunk, rows[k], code.table, BLOCK, group, whole)
        assert np.array_equal(whole, block)


def test_groups_of_another_size_are_not_read_as_the_block() -> None:
    """Rows of 256-byte groups read as if the groups were 128 bytes (or the other way)
    give other bytes: the group size is part of the format (docs/FORMAT.md)."""
    raw = parts()["distances"]
    for written, read in ((256, 128), (128, 256)):
        code, chunks, rows = encode(raw, group=written)
        want = raw[:BLOCK]
        got = np.array(
            [gc.group_byte(chunks[0], rows[0], code.table, i, shift(read)) for i in range(BLOCK)]
        )
        assert not np.array_equal(got, want)
        out = np.empty(BLOCK, dtype=np.uint8)
        ok = gc.decode_groups(chunks[0], rows[0], code.table, BLOCK, read, out)
        assert not ok or not np.array_equal(out, want)


@pytest.mark.parametrize("group", GROUPS)
def test_a_block_shorter_than_a_group_and_not_a_multiple_of_it(group: int) -> None:
    for block in (1, 100, 300, 1000):
        raw = (np.arange(3 * block) // 7 % 3).astype(np.uint8)
        code, chunks, rows = encode(raw, block, group)
        assert rows.shape[1] == 1 + -(-block // group)
        for k, chunk in enumerate(chunks):
            want = raw[k * block : (k + 1) * block]
            assert zlib.decompress(chunk.tobytes()) == want.tobytes()
            got = [gc.group_byte(chunk, rows[k], code.table, i, shift(group)) for i in range(block)]
            assert got == want.tolist()


def test_group_sizes() -> None:
    """Powers of two from 16 to 4096 bytes: a group's length in bits (at most 12 a byte)
    fits a row's uint16."""
    assert [g for g in range(1, 10000) if gc.is_group_size(g)] == [2**k for k in range(4, 13)]
    assert gc.MAX_GROUP * gc.MAX_BITS < 1 << 16


def test_a_look_up_skips_the_literals_its_bits_hold_whole() -> None:
    """Literals 0, 1, 2 and the end of block, two bits each (codes 00, 01, 10, 11 read
    first bit first): twelve bits hold six literals whole, or fewer before a symbol that
    is not a literal; a group of such literals decodes byte by byte all the same."""
    lengths = np.zeros(gc.LITLEN, dtype=np.int32)
    lengths[[0, 1, 2, 256]] = 2
    table = gc.decode_table(lengths)
    skip = table[gc.WINDOW :]
    assert skip[0] == (0 << 12) | (6 << 4) | 12  # six 0s
    # 0, 1 (code 01, written first bit lowest: 0b10), then the end of block: two literals
    w = 0b11_10_00 | (0b10_00 << 6)
    assert skip[w] == (1 << 12) | (2 << 4) | 4
    assert skip[0b11] == 0  # the end of block first: nothing to skip
    # a stream of those codes, as a group: bytes 0,1,2 repeated, read at every offset
    data = np.tile(np.array([0, 1, 2], dtype=np.uint8), 20)
    bits = 0
    for k, b in enumerate(data):
        bits |= int(gc._canonical(lengths)[b]) << (2 * k)
    chunk = np.frombuffer(bits.to_bytes(16, "little"), dtype=np.uint8)
    got = [gc.byte_in_group(chunk, 0, table, i) for i in range(data.shape[0])]
    assert got == data.tolist()


def test_a_damaged_stream_or_row_is_not_decoded_as_the_block() -> None:
    raw = parts()["distances"]
    code, chunks, rows = encode(raw)
    chunk, row = chunks[0].copy(), rows[0].copy()
    want = raw[:BLOCK]
    out = np.empty(BLOCK, dtype=np.uint8)
    row[3] += 1  # group 3 said to begin a bit later
    ok = gc.decode_groups(chunk, row, code.table, BLOCK, 128, out)
    assert not ok or not np.array_equal(out, want)
    chunk[chunk.shape[0] // 2] ^= 0x10
    ok = gc.decode_groups(chunk, rows[0], code.table, BLOCK, 128, out)
    assert not ok or not np.array_equal(out, want)


def test_adler32_is_zlibs() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 5551, 5552, 5553, BLOCK, (1 << 20) + 17):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        data[: n // 3] = 255  # the largest sums
        assert int(gc._adler32(data, 0, n)) == zlib.adler32(data.tobytes())


def test_what_a_block_costs() -> None:
    """A block of one value costs its header and a few bits a group; a part of two equally
    frequent bytes in random order under 1.5 bits a byte (a byte's code, or a repeat's)."""
    for group in GROUPS:
        code, chunks, _ = encode(np.zeros(BLOCK, dtype=np.uint8), group=group)
        per_group = (len(chunks[0]) * 8 - code.header_bits) / (BLOCK // group)
        assert per_group < 24
    rng = np.random.default_rng(1)
    code, chunks, _ = encode(rng.integers(0, 2, BLOCK).astype(np.uint8) * 5)
    assert len(chunks[0]) * 8 < BLOCK * 1.5 + code.header_bits + 64
