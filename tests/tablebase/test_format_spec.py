"""``docs/FORMAT.md`` as a specification: a reader written from it alone, without the package's
readers (the header's digest over the bytes outside the listed chunks; a group decoded bit
by bit with the canonical deflate code of ``<part>_code`` from the bit its row gives), reads
the files the generator writes: the digest matches, and every sampled byte equals the one
HDF5 inflates. It fails if the files and the document part ways."""

from __future__ import annotations

import hashlib
import random
import struct
import zlib
from pathlib import Path

import h5py
import numpy as np

LEN_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99,
            115, 131, 163, 195, 227, 258]  # fmt: skip
LEN_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
BLOCK = 16384


def header_digest_matches(path: Path) -> bool:
    """The header as the document lays it out, and its SHA-256 of every byte outside the
    extents (the digest field read as zeros)."""
    data = bytearray(path.read_bytes())
    magic, version, user, length, end, n, digest = struct.unpack_from("<8sIIQQQ32s", data, 0)
    assert (magic, version, user) == (b"DTBSLICE", 3, 512)
    assert length == len(data) == end + 16 * n
    extents = sorted(struct.iter_unpack("<QQ", bytes(data[end:])))
    data[40:72] = bytes(32)
    h = hashlib.sha256()
    at = 0
    for offset, size in extents:
        assert max(at, user) <= offset and offset + size <= end, "disjoint, within [U, T)"
        h.update(data[at:offset])
        at = offset + size
    h.update(data[at:])
    return h.digest() == digest


def canonical_code(lengths: list[int]) -> dict[tuple[int, int], int]:
    """``(length, code) -> symbol`` of the canonical code of ``lengths`` (RFC 1951 3.2.2)."""
    count = [0] * (max(lengths) + 1)
    for n in lengths:
        if n:
            count[n] += 1
    code, first = 0, [0] * (len(count) + 1)
    for bits in range(1, len(count)):
        code = (code + count[bits - 1]) << 1
        first[bits] = code
    table = {}
    for symbol, n in enumerate(lengths):
        if n:
            table[(n, first[n])] = symbol
            first[n] += 1
    return table


class BitReader:
    """Bits of ``data`` from bit ``at``, the lowest bit of each byte first (deflate's order)."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at = data, at

    def bit(self) -> int:
        b = (self.data[self.at >> 3] >> (self.at & 7)) & 1
        self.at += 1
        return b

    def number(self, n: int) -> int:
        return sum(self.bit() << i for i in range(n))

    def symbol(self, code: dict[tuple[int, int], int]) -> int:
        c = n = 0
        while (n, c) not in code:
            c, n = (c << 1) | self.bit(), n + 1
            assert n <= 12, "no code longer than 12 bits"
        return code[(n, c)]


class GroupCodedPart:
    """A group-coded part of an open file, read as the document says."""

    def __init__(self, f: h5py.File, part: str) -> None:
        self.ds = f[part]
        groups = f[part + "_groups"]
        self.group_bytes = int(groups.attrs["group_bytes"])
        self.rows = groups[...].astype(np.int64)
        self.zcrcs = f[part + "_zcrc32"][...]
        self.code = canonical_code([int(x) for x in f[part + "_code"][...]])

    def byte(self, b: int) -> int:
        """Byte ``b`` of the part, decoded from its group alone."""
        k, o = divmod(b, BLOCK)
        g, want = divmod(o, self.group_bytes)
        _, chunk = self.ds.id.read_direct_chunk((k * self.ds.chunks[0],))
        assert zlib.crc32(chunk) == int(self.zcrcs[k])
        assert chunk[:2] == b"\x78\x01"
        r = BitReader(chunk, int(self.rows[k, : g + 1].sum()))
        have, previous = 0, None
        while True:
            s = r.symbol(self.code)
            if s < 256:
                if have == want:
                    return s
                have, previous = have + 1, s
                continue
            assert s > 256 and previous is not None, "a group begins with a literal, ends with none"
            repeat = LEN_BASE[s - 257] + r.number(LEN_EXTRA[s - 257])
            assert r.bit() == 0, "the one distance code: 0, distance 1"
            if want < have + repeat:
                return previous
            have += repeat


def test_a_reader_written_from_the_document_reads_international_files(db3_international):
    read_by_the_document(db3_international)


def test_a_reader_written_from_the_document_reads_english_files(db3_english):
    read_by_the_document(db3_english)


def read_by_the_document(db: Path) -> None:
    rng = random.Random(5)
    files = sorted(Path(db).glob("*.h5"))
    assert files
    for path in files:
        assert header_digest_matches(path), path.name
        with h5py.File(path, "r") as f:
            assert f.attrs["format_version"] == 5
            assert int(f["values_groups"].attrs["group_bytes"]) == 128
            assert int(f["wdl_groups"].attrs["group_bytes"]) == 256
            for name in ("values", "wdl"):
                data = f[name][...]
                part = GroupCodedPart(f, name)
                n = data.shape[0]
                for b in {0, n - 1, *(rng.randrange(n) for _ in range(30))}:
                    assert part.byte(b) == data[b], (path.name, name, b)


def test_a_flipped_metadata_byte_fails_the_digest(db3_international, tmp_path):
    path = sorted(Path(db3_international).glob("*.h5"))[0]
    data = bytearray(path.read_bytes())
    end, n = struct.unpack_from("<QQ", data, 24)
    extents = list(struct.iter_unpack("<QQ", bytes(data[end:])))
    assert not any(o <= 600 < o + size for o, size in extents)
    data[600] ^= 1  # HDF5 metadata, just past the header
    damaged = tmp_path / path.name
    damaged.write_bytes(bytes(data))
    assert not header_digest_matches(damaged)
