"""Datasets compressed and decompressed chunk by chunk in threads
(:mod:`tablebase.storage.chunkio`): with zlib they are the files h5py itself writes, byte for
byte; with ISA-L, files HDF5's own filters read; either way the same bytes for any thread
count, and they read back what h5py wrote; a damaged chunk is an error, not wrong values."""

from __future__ import annotations

import fcntl
import io
import os

import h5py
import numpy as np
import pytest

from tablebase.storage.chunkio import (
    GROUPS_CODEC,
    GROUPS_SUFFIX,
    check_groups,
    encoder,
    read_dataset,
    write_dataset,
)

CASES = [  # dtype, shuffle, codec, entries (edge chunks included), chunk
    (np.uint8, False, "zlib-6", 1_000_003, 1 << 18),
    (np.uint16, True, "zlib-1", 700_001, 1 << 18),
    (np.uint16, True, "zlib-1", 3 << 18, 1 << 18),
    (np.uint8, False, "zlib-1", 5, 1 << 18),
    (np.uint8, False, "zlib-1", 1000, 64),
    (np.uint8, False, "isal-1", 1_000_003, 1 << 18),
    (np.uint16, True, "isal-1", 700_001, 1 << 18),
    (np.uint8, False, "isal-3", 1000, 64),
]


def _data(dtype, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    return (rng.integers(0, 300, n) * (rng.random(n) < 0.3)).astype(dtype)


def _image(data, chunk, codec, shuffle, ours: bool, threads: int = 2) -> bytes:
    b = io.BytesIO()
    level = encoder(codec)[1]
    with h5py.File(b, "w", track_order=True, libver=("earliest", "v110")) as f:
        if ours:
            write_dataset(f, "x", data, chunk, codec, shuffle, threads)
        else:
            f.create_dataset(
                "x",
                data=data,
                chunks=(min(chunk, data.shape[0]),),
                compression="gzip",
                compression_opts=level,
                shuffle=shuffle,
                track_times=False,
            )
    return b.getvalue()


@pytest.mark.parametrize("dtype, shuffle, codec, n, chunk", CASES)
def test_same_bytes_as_h5py_and_both_read_back(dtype, shuffle, codec, n, chunk) -> None:
    data = _data(dtype, n)
    ours = _image(data, chunk, codec, shuffle, True)
    assert ours == _image(data, chunk, codec, shuffle, True, threads=1)
    h5 = _image(data, chunk, codec, shuffle, False)
    if codec.startswith("zlib"):
        assert ours == h5
    else:  # another encoder of the same format: other bytes, the same layout around them
        assert ours != h5 and len(ours) < 1.2 * len(h5)
    with h5py.File(io.BytesIO(ours), "r") as f:
        assert np.array_equal(f["x"][...], data)  # HDF5's own filters read it
        for threads in (1, 3):
            out = np.full(n, 7, dtype=dtype)
            read_dataset(f["x"], out, threads)
            assert np.array_equal(out, data)
        wide = np.zeros(n, dtype=np.uint16)
        read_dataset(f["x"], wide, 2)  # into a wider buffer
        assert np.array_equal(wide, data)


def test_other_layouts_are_read_by_hdf5() -> None:
    data = _data(np.uint16, 10_000)
    b = io.BytesIO()
    with h5py.File(b, "w") as f:
        f.create_dataset("plain", data=data)
        f.create_dataset("fletcher", data=data, chunks=(1000,), fletcher32=True)
        f.create_dataset(
            "sparse", shape=(10_000,), dtype=np.uint16, chunks=(1000,), compression="gzip"
        )
        f["sparse"][2000:3000] = data[2000:3000]  # one chunk written, the rest fill value
    with h5py.File(b, "r") as f:
        for name, want in (("plain", data), ("fletcher", data)):
            out = np.empty_like(data)
            read_dataset(f[name], out, 2)
            assert np.array_equal(out, want), name
        out = np.full_like(data, 9)
        read_dataset(f["sparse"], out, 2)
        assert not out[:2000].any() and np.array_equal(out[2000:3000], data[2000:3000])


def test_a_range_of_chunks_is_read_from_its_first_chunk() -> None:
    """``start`` (a chunk's first entry) and the length of ``out`` choose the entries read,
    the last chunk cut short at the end of ``out`` or of the dataset; a start inside a
    chunk or a range past the end is refused; other layouts read the range through HDF5."""
    data = _data(np.uint16, 100_000)
    chunk = 1 << 12
    with h5py.File(io.BytesIO(_image(data, chunk, "isal-1", True, True)), "r") as f:
        for start, length in ((0, 5000), (3 * chunk, 2 * chunk + 17), (24 * chunk, 1696)):
            out = np.full(length, 7, dtype=np.uint16)
            read_dataset(f["x"], out, 2, start)
            assert np.array_equal(out, data[start : start + length]), (start, length)
        with pytest.raises(ValueError, match="does not begin a chunk"):
            read_dataset(f["x"], np.empty(10, dtype=np.uint16), 2, chunk + 1)
        with pytest.raises(ValueError, match="of a dataset of 100000"):
            read_dataset(f["x"], np.empty(10, dtype=np.uint16), 2, 24 * chunk + 1690)
    b = io.BytesIO()
    with h5py.File(b, "w") as f:
        f.create_dataset("plain", data=data)
    with h5py.File(b, "r") as f:
        out = np.empty(333, dtype=np.uint16)
        read_dataset(f["plain"], out, 2, 1001)
        assert np.array_equal(out, data[1001:1334])


def test_a_damaged_chunk_is_an_error() -> None:
    data = _data(np.uint8, 100_000)
    image = bytearray(_image(data, 1 << 12, "isal-1", False, True))
    with h5py.File(io.BytesIO(bytes(image)), "r") as f:
        offset = f["x"].id.get_chunk_info(5).byte_offset
    image[offset + 10 : offset + 30] = bytes(20)
    with h5py.File(io.BytesIO(bytes(image)), "r") as f:
        out = np.empty_like(data)
        with pytest.raises(ValueError, match="chunk at 20480"):
            read_dataset(f["x"], out, 2)


def test_an_unknown_codec_is_refused() -> None:
    for codec in ("isal-4", "zlib-10", "lz4-1", "zlib", "isal-x"):
        with pytest.raises(ValueError, match="unknown codec"):
            encoder(codec)


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="no O_NOATIME on this system")
def test_files_are_read_without_access_times_where_allowed(tmp_path, monkeypatch) -> None:
    """The owner's descriptor carries ``O_NOATIME``; where the system refuses the flag
    (another user's file) the file is opened without it, not refused."""
    from tablebase.storage import chunkio

    path = tmp_path / "f"
    path.write_bytes(b"abc")
    fd = chunkio.open_for_reading(path)
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NOATIME
        assert os.pread(fd, 3, 0) == b"abc"
    finally:
        os.close(fd)
    real = os.open

    def refusing(p, flags, *a):  # type: ignore[no-untyped-def]
        if flags & os.O_NOATIME:
            raise PermissionError(1, "Operation not permitted", str(p))
        return real(p, flags, *a)

    monkeypatch.setattr(chunkio.os, "open", refusing)
    fd = chunkio.open_for_reading(path)
    try:
        assert not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NOATIME
        assert os.pread(fd, 3, 0) == b"abc"
    finally:
        os.close(fd)


def test_a_group_row_that_misplaces_a_group_is_found_in_the_same_pass_as_the_read() -> None:
    """A group-coded part whose chunk inflates to the right bytes but whose group index
    points one group elsewhere (a probe would decode wrong values from it): the read alone
    does not see it, ``check_groups`` and the read with ``groups=True`` do, naming the
    block; on the undamaged part both pass and read the data."""
    block = 1 << 14
    data = _data(np.uint8, 3 * block + 100)
    b = io.BytesIO()
    with h5py.File(b, "w", libver=("v110", "v110")) as f:
        write_dataset(f, "x", data, block, f"{GROUPS_CODEC}-128", False, 2, True)
    with h5py.File(b, "r") as f:
        out = np.empty_like(data)
        read_dataset(f["x"], out, 2, groups=True)
        assert np.array_equal(out, data)
        check_groups(f["x"], 2)
    with h5py.File(b, "r+") as f:
        rows = f["x" + GROUPS_SUFFIX]
        row = rows[1]
        k = next(k for k in range(1, row.shape[0] - 1) if row[k] != row[k + 1])
        row[k], row[k + 1] = row[k + 1], row[k]  # two groups of block 1 swap their lengths
        rows[1] = row
    with h5py.File(b, "r") as f:
        out = np.empty_like(data)
        read_dataset(f["x"], out, 2)  # the chunks themselves are whole
        assert np.array_equal(out, data)
        with pytest.raises(ValueError, match="block 1 of /x: its groups do not match"):
            read_dataset(f["x"], out, 2, groups=True)
        with pytest.raises(ValueError, match="block 1 of /x: its groups do not match"):
            check_groups(f["x"], 2)
