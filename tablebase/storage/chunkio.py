"""Gzip-compressed HDF5 datasets written and read chunk by chunk in threads.

h5py compresses and decompresses a dataset's chunks one after the other while holding the
GIL, so writing a solved slice and reading its dependencies were serial tails of a task that
otherwise uses every thread. Here the chunks are compressed (or decompressed) in a thread
pool (both libraries below release the GIL) and passed to HDF5 as they are stored, with
``write_direct_chunk``/``read_direct_chunk``. The bytes on disk are standard HDF5 chunks with
the deflate filter, and the shuffle filter before it for 16-bit data: any HDF5 reader
reads them, and files written by h5py itself read back here.

A dataset's *codec* names the deflate encoder and its level: ``"isal-N"`` (ISA-L's igzip,
levels 0-3, through ``isal``: on the tables' values and WDL codes 5 to 40 times as fast as
zlib, its output between zlib 1's and zlib 6's in size), ``"zlib-N"`` (levels 0-9: the
chunks are byte for byte those h5py writes) or ``"groups-N"`` (one-byte entries with block
checksums, group-coded in groups of N bytes: :mod:`tablebase.storage.groupcode`). All write
standard deflate streams, so a reader neither knows nor cares which one wrote a chunk; every
chunk is inflated by ISA-L, about four times as fast as zlib. ISA-L's streams are not always
byte for byte the same from one process to another: a resumed build once wrote a chunk of
the same values one byte longer than the first build had. Files of equal tables are equal in
content (every dataset and attribute, the checksums included), not necessarily in bytes.

Every chunk is stored whole, the last one padded with zeros (the fill value) as HDF5 does.

**Blocks.** A dataset written with ``block_crc`` has beside it ``<name>_crc32``: one CRC-32
(zlib's polynomial, computed by ISA-L) per chunk, of the chunk's uncompressed element bytes
(little-endian, before the shuffle, the last chunk padded with zeros as stored). The checksum
is of the content, not of the deflated bytes, so files of equal tables still have equal
checksums whatever the encoder wrote. :class:`BlockReader` reads such a dataset one chunk
(a *block*) at a time, straight from the file (the chunks' places are read from HDF5's
chunk index once, then ``pread``): a probe reads and inflates only the block it needs, and
a damaged block is found when it is read. :func:`read_dataset` checks the same checksums
when it reads a whole dataset.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import h5py
import numpy as np
from h5py import h5d, h5z
from isal import isal_zlib

from tablebase.storage import groupcode as gc

_DEFLATE = h5z.FILTER_DEFLATE
_SHUFFLE = h5z.FILTER_SHUFFLE
# isal's stubs declare its error as an Exception instance: it is the class IsalError
_ISAL_ERROR = cast("type[Exception]", isal_zlib.error)
_ENCODERS = {"isal": (isal_zlib.compress, range(4)), "zlib": (zlib.compress, range(10))}
# Every part is written in blocks of BLOCK_BYTES uncompressed bytes (2^14 values of one byte,
# 2^13 of two, 2^16 WDL entries), each with its CRC-32 (``<part>_crc32``): the unit a probe
# reads (tablebase.probe.cache). Chosen by measurement (docs/FORMAT.md): deflate loses
# nothing measurable down to 4 KiB, a block's inflate costs in proportion to its size, and
# smaller blocks cost 16 bytes each of index kept in memory and more chunks in HDF5's index.
BLOCK_BYTES = 1 << 14
CRC_SUFFIX = "_crc32"  # the dataset of per-chunk checksums beside a dataset written with them
GROUPS_CODEC = "groups"  # group-coded deflate (tablebase.storage.groupcode): "groups-<size>"
GROUPS_SUFFIX = "_groups"  # where each group of each chunk begins (group-coded parts)
ZCRC_SUFFIX = "_zcrc32"  # the CRC-32 of each chunk's stored bytes (group-coded parts)
CODE_SUFFIX = "_code"  # the lengths of the literal/length code (group-coded parts)


def block_crc(raw: bytes | np.ndarray) -> int:
    """CRC-32 of a block's uncompressed bytes (zlib's, by ISA-L: about 40 GB/s here)."""
    return isal_zlib.crc32(raw)


def group_size(codec: str) -> int | None:
    """The group size of a group-coded codec name (``"groups-128"``: groups of 128 bytes,
    :mod:`tablebase.storage.groupcode`), None for another codec; ValueError for a group
    size that is not one."""
    lib, _, size = codec.partition("-")
    if lib != GROUPS_CODEC:
        return None
    if not size.isdigit() or not gc.is_group_size(int(size)):
        raise ValueError(f"unknown codec {codec!r}: groups-<a power of two from 16 to 4096>")
    return int(size)


def encoder(codec: str) -> tuple[Callable[[np.ndarray], bytes], int]:
    """``(compress(raw) -> bytes, level)`` of a codec name (see the module docstring);
    ValueError for an unknown one."""
    lib, _, level = codec.partition("-")
    if lib not in _ENCODERS or not level.isdigit() or int(level) not in _ENCODERS[lib][1]:
        raise ValueError(f"unknown codec {codec!r}: isal-0..3 or zlib-0..9")
    fn, n = _ENCODERS[lib][0], int(level)
    return (lambda raw: fn(raw, n)), n


def open_for_reading(path: str | os.PathLike[str]) -> int:
    """A file descriptor of ``path`` for reading without updating its access time where the
    system allows it (``O_NOATIME``: the file's owner), as the file is read otherwise: a
    probe's ``pread`` of a few bytes then skips the access-time check (about 3 % of its
    time in the kernel on a database many times the cache)."""
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, os.O_RDONLY | noatime)
        except PermissionError:  # not the owner: the flag is refused, the file is not
            pass
    return os.open(path, os.O_RDONLY)


def write_dataset(
    group: h5py.Group,
    name: str,
    data: np.ndarray,
    chunk: int,
    codec: str,
    shuffle: bool,
    threads: int,
    block_checksums: bool = False,
) -> h5py.Dataset:
    """Create the 1-D dataset ``name`` holding ``data`` (little-endian or bytes), in chunks of
    ``chunk`` entries deflated by ``codec`` (after the shuffle filter if ``shuffle``) in
    ``threads`` threads; the filter records the codec's level. ``block_checksums``: also
    write ``<name>_crc32``, the CRC-32 of every chunk (see the module docstring)."""
    group_bytes = group_size(codec)
    if group_bytes is not None:
        if data.dtype.itemsize != 1 or not block_checksums:
            raise ValueError(
                f"the {GROUPS_CODEC} codec writes one-byte entries with block checksums"
            )
        return _write_groups(group, name, data, chunk, group_bytes, threads)
    deflate, level = encoder(codec)
    data = np.ascontiguousarray(data)
    n = data.shape[0]
    chunk = min(chunk, max(1, n))
    ds = group.create_dataset(
        name,
        shape=(n,),
        dtype=data.dtype,
        chunks=(chunk,),
        compression="gzip",
        compression_opts=level,
        shuffle=shuffle,
        track_times=False,
    )
    shuffled = shuffle and data.dtype.itemsize > 1
    starts = range(0, n, chunk)
    crcs = np.zeros(len(starts), dtype=np.uint32)

    def compress(start: int) -> bytes:
        part = data[start : start + chunk]
        if part.shape[0] < chunk:  # the edge chunk is stored whole, padded with the fill value
            part = np.concatenate([part, np.zeros(chunk - part.shape[0], dtype=data.dtype)])
        raw = part.view(np.uint8)
        if block_checksums:
            crcs[start // chunk] = block_crc(raw)
        if shuffled:  # byte k of every element together, for k = 0, 1, ...
            raw = raw.reshape(chunk, data.dtype.itemsize).T.copy()
        return deflate(raw)

    with ThreadPoolExecutor(max(1, threads)) as pool:
        # bounded look-ahead: at most a few compressed chunks wait for the (serial) write
        window = max(2, 4 * threads)
        for first in range(0, len(starts), window):
            batch = starts[first : first + window]
            for start, blob in zip(batch, pool.map(compress, batch), strict=True):
                ds.id.write_direct_chunk((start,), blob)
    if block_checksums:
        group.create_dataset(name + CRC_SUFFIX, data=crcs, track_times=False)
    return ds


def _write_groups(
    group: h5py.Group, name: str, data: np.ndarray, chunk: int, group_bytes: int, threads: int
) -> h5py.Dataset:
    """:func:`write_dataset` with the group-coded deflate of :mod:`tablebase.storage.groupcode`
    in groups of ``group_bytes`` (one code for the part, ``<name>_groups``, which records
    the group size, and ``<name>_zcrc32`` beside it)."""
    n = data.shape[0]
    chunk = min(chunk, max(1, n))
    nblocks = -(-n // chunk)
    full = n // chunk
    tail = np.zeros(chunk, dtype=np.uint8)  # the edge block, padded with the fill value
    tail[: n - full * chunk] = np.asarray(data[full * chunk :]).view(np.uint8)
    raw = np.asarray(data[: full * chunk]).view(np.uint8)
    freq = gc.count_symbols(raw, chunk, group_bytes)
    if full < nblocks:
        freq = freq + gc.count_symbols(tail, chunk, group_bytes)
    code = gc.code_of(freq)
    ds = group.create_dataset(
        name, shape=(n,), dtype=np.uint8, chunks=(chunk,), compression="gzip",
        compression_opts=gc.FILTER_LEVEL, track_times=False,
    )  # fmt: skip
    rows = np.zeros((nblocks, gc.row_length(chunk, group_bytes)), dtype=np.uint16)
    crcs = np.zeros(nblocks, dtype=np.uint32)
    zcrcs = np.zeros(nblocks, dtype=np.uint32)
    width = gc.max_chunk_bytes(chunk, code.header_bits)
    window = max(64, 16 * max(1, threads))  # blocks encoded at a time (a few MiB)
    out = np.zeros((window, width), dtype=np.uint8)
    sizes = np.zeros(window, dtype=np.int64)
    for first in range(0, nblocks, window):
        count = min(window, nblocks - first)
        in_full = max(0, min(count, full - first))
        if in_full:
            code.encode(raw, first, in_full, chunk, group_bytes, out, sizes, rows[first:])
        if in_full < count:  # the edge block
            code.encode(
                tail, 0, 1, chunk, group_bytes, out[in_full:], sizes[in_full:],
                rows[first + in_full :],
            )  # fmt: skip
        for j in range(count):
            k = first + j
            blob = out[j, : sizes[j]]
            block = raw[k * chunk : (k + 1) * chunk] if k < full else tail
            crcs[k] = block_crc(block)
            zcrcs[k] = block_crc(blob)
            ds.id.write_direct_chunk((k * chunk,), blob.tobytes())
    group.create_dataset(name + CRC_SUFFIX, data=crcs, track_times=False)
    index = group.create_dataset(name + GROUPS_SUFFIX, data=rows, track_times=False)
    index.attrs[gc.GROUP_ATTR] = np.int64(group_bytes)
    group.create_dataset(name + ZCRC_SUFFIX, data=zcrcs, track_times=False)
    group.create_dataset(name + CODE_SUFFIX, data=code.lengths.astype(np.uint8), track_times=False)
    return ds


def read_dataset(
    ds: h5py.Dataset, out: np.ndarray, threads: int, start: int = 0, groups: bool = False
) -> None:
    """Read the 1-D dataset ``ds`` into ``out`` (at least as wide): its entries ``start``
    to ``start + len(out)`` (the whole dataset by default; ``start`` a multiple of its
    chunk size), decompressing its chunks in ``threads`` threads when its filters are gzip
    and shuffle only; any other layout is read by HDF5 itself. Each chunk is checked
    against its CRC-32 where the dataset has them (``block_checksums``). ``groups``: a
    group-coded dataset's chunks are also checked as :func:`check_groups` checks them
    (their stored bytes' CRC-32, their groups decoded as a probe decodes them), in the same
    pass. Raises ``OSError``/``ValueError`` for a damaged chunk."""
    n = ds.shape[0]
    stop = start + out.shape[0]
    if not 0 <= start <= stop <= n:
        raise ValueError(f"entries {start} to {stop} of a dataset of {n}")
    filters = _filters(ds)
    whole = ds.chunks is not None and ds.id.get_num_chunks() == -(-n // ds.chunks[0])
    if not whole or filters is None or ds.dtype.byteorder == ">":
        # another layout, or chunks never written (read as the fill value): HDF5 reads it
        if out.dtype == ds.dtype:
            ds.read_direct(out, source_sel=np.s_[start:stop])
        else:
            out[:] = ds[start:stop]
        return
    chunk = ds.chunks[0]
    if start % chunk:
        raise ValueError(f"entry {start} does not begin a chunk of {chunk}")
    size = ds.dtype.itemsize
    crcs = chunk_checksums(ds)
    nblocks = -(-n // chunk)
    coded = _groups_of(ds, nblocks, chunk) if groups else None
    rows = None if coded is None else _group_rows(ds)[...]

    def decode(item: tuple[int, int, bytes]) -> None:
        at, mask, blob = item
        if coded is not None and block_crc(blob) != coded.zcrcs[at // chunk]:
            raise ValueError(f"block {at // chunk} of {ds.name}: its groups do not match its chunk")
        raw = blob
        for k, f in reversed(list(enumerate(filters))):
            if mask & (1 << k):
                continue  # the filter was skipped for this chunk
            if f == _DEFLATE:
                try:
                    raw = isal_zlib.decompress(raw)
                except _ISAL_ERROR as e:
                    raise ValueError(f"chunk at {at}: {e}") from None
            elif size > 1:  # unshuffle
                raw = np.frombuffer(raw, np.uint8).reshape(size, -1).T.tobytes()
        if len(raw) != chunk * size:
            raise ValueError(f"chunk at {at} holds {len(raw)} bytes, not {chunk * size}")
        if crcs is not None and block_crc(raw) != crcs[at // chunk]:
            raise ValueError(f"chunk at {at} (block {at // chunk}): checksum mismatch")
        if coded is not None and rows is not None:  # its stored bytes' CRC was checked above
            k = at // chunk
            if not _groups_match(blob, raw, coded, rows[k]):
                raise ValueError(f"block {k} of {ds.name}: its groups do not match its chunk")
        end = min(stop, at + chunk)
        out[at - start : end - start] = np.frombuffer(raw, dtype=ds.dtype, count=end - at)

    with ThreadPoolExecutor(max(1, threads)) as pool:
        window = max(2, 4 * threads)
        starts = range(start, stop, chunk)
        for first in range(0, len(starts), window):
            batch = []
            for at in starts[first : first + window]:
                mask, blob = ds.id.read_direct_chunk((at,))
                batch.append((at, mask, blob))
            for _ in pool.map(decode, batch):
                pass


def _group_rows(ds: h5py.Dataset) -> h5py.Dataset:
    """``<name>_groups`` beside the group-coded dataset ``ds``: a row per block."""
    return ds.parent[ds.name.rsplit("/", 1)[-1] + GROUPS_SUFFIX]


def _groups_match(blob: bytes, raw: bytes, coded: Groups, row: np.ndarray) -> bool:
    """Whether the groups of a group-coded block whose stored bytes are ``blob`` (their
    CRC-32 checked by the caller), decoded from where its ``row`` of ``<name>_groups`` says
    they begin (as a probe decodes them), give ``raw``, the block inflated."""
    chunk = len(raw)
    out = np.empty(chunk, dtype=np.uint8)
    stored = np.frombuffer(blob, dtype=np.uint8)
    ok = gc.decode_groups(stored, row, coded.table, chunk, coded.group_bytes, out)
    return bool(ok) and out.tobytes() == raw


def check_groups(ds: h5py.Dataset, threads: int) -> None:
    """For a dataset written group-coded (nothing for another): every chunk's stored bytes
    against ``<name>_zcrc32``, and its groups, decoded from where ``<name>_groups`` says
    they begin (as a probe decodes them), against the chunk inflated; ``OSError`` or
    ``ValueError`` naming the first block that fails."""
    if ds.chunks is None:
        return
    nblocks = -(-ds.shape[0] // ds.chunks[0])
    groups = _groups_of(ds, nblocks, ds.chunks[0])
    if groups is None:
        return
    rows_ds = _group_rows(ds)
    chunk = ds.chunks[0]
    step = 64  # blocks a round (their stored bytes held at once)

    def check(item: tuple[int, bytes, np.ndarray]) -> int | None:
        k, blob, row = item
        if block_crc(blob) != groups.zcrcs[k]:
            return k
        try:
            raw: bytes | None = isal_zlib.decompress(blob)
        except _ISAL_ERROR:
            raw = None  # stored bytes as written (their CRC matched) that do not inflate
        if raw is None or len(raw) != chunk or not _groups_match(blob, raw, groups, row):
            return k
        return None

    with ThreadPoolExecutor(max(1, threads)) as pool:
        for first in range(0, nblocks, step):
            rows = rows_ds[first : first + step]
            items = [
                (k, ds.id.read_direct_chunk((k * chunk,))[1], rows[k - first])
                for k in range(first, min(nblocks, first + step))
            ]
            for bad in pool.map(check, items):
                if bad is not None:
                    raise ValueError(f"block {bad} of {ds.name}: its groups do not match its chunk")


def chunk_checksums(ds: h5py.Dataset) -> np.ndarray | None:
    """The per-chunk CRC-32s written beside ``ds`` (None if it has none); ``ValueError`` if
    there are not one per chunk."""
    crc = ds.parent.get(ds.name.rsplit("/", 1)[-1] + CRC_SUFFIX)
    if crc is None:
        return None
    crcs = np.asarray(crc[...], dtype=np.uint32)
    if ds.chunks is None or crcs.shape != (-(-ds.shape[0] // ds.chunks[0]),):
        raise ValueError(f"{crc.name} holds {crcs.shape[0]} checksums for the chunks of {ds.name}")
    return crcs


class BlockReader:
    """The chunks (blocks) of one 1-D dataset with per-chunk checksums, read one at a time.

    The places of the chunks in the file are read once from HDF5's chunk index (with their
    checksums: 16 bytes per block, kept); a block is then one ``pread``, one inflate (ISA-L,
    without the GIL) and one CRC-32, with no HDF5 call, so threads read blocks in parallel.
    ``ValueError`` at opening if the dataset is not laid out so (another filter, a chunk
    missing, no checksums), and from :meth:`read` for a damaged block."""

    _fd: int | None = None

    def __init__(self, path: str | os.PathLike[str], name: str) -> None:
        with h5py.File(path, "r") as f:
            ds = f[name]
            if ds.ndim != 1 or ds.chunks is None:
                raise ValueError(f"{name} is not a chunked 1-D dataset")
            self.entries = int(ds.shape[0])
            self.dtype = np.dtype(ds.dtype)
            self.chunk = int(ds.chunks[0])
            filters = _filters(ds)
            crcs = chunk_checksums(ds)
            if filters is None or self.dtype.byteorder == ">" or crcs is None:
                raise ValueError(f"{name} has no per-block checksums or another filter pipeline")
            self.filters = filters
            nblocks = crcs.shape[0]
            self.crcs = crcs
            self.offsets = np.full(nblocks, -1, dtype=np.int64)
            self.sizes = np.zeros(nblocks, dtype=np.int64)
            self.masks = np.zeros(nblocks, dtype=np.uint32)

            def note(info: h5d.StoreInfo) -> None:
                k = info.chunk_offset[0] // self.chunk
                self.offsets[k] = info.byte_offset
                self.sizes[k] = info.size
                self.masks[k] = info.filter_mask

            if nblocks:
                ds.id.chunk_iter(note)
            if (self.offsets < 0).any():
                k = int(np.argmax(self.offsets < 0))
                raise ValueError(f"{name}: block {k} was never written")
            self.groups = _groups_of(ds, nblocks, self.chunk)
        self.name = name
        self.block_bytes = self.chunk * self.dtype.itemsize
        self._fd: int | None = open_for_reading(path)

    @property
    def blocks(self) -> int:
        return int(self.crcs.shape[0])

    def read(self, k: int, out: np.ndarray) -> None:
        """Block ``k`` (its :attr:`block_bytes` bytes, the last one padded with zeros) into
        the ``uint8`` array ``out``; ``ValueError`` naming the block if it is damaged."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.name}: the file is closed")
        size = int(self.sizes[k])
        blob = os.pread(fd, size, int(self.offsets[k]))
        if len(blob) != size:
            raise ValueError(f"block {k} of {self.name}: truncated ({len(blob)} of {size} bytes)")
        raw = blob
        mask = int(self.masks[k])
        itemsize = self.dtype.itemsize
        for i, f in reversed(list(enumerate(self.filters))):
            if mask & (1 << i):
                continue
            if f == _DEFLATE:
                try:
                    raw = isal_zlib.decompress(raw)
                except _ISAL_ERROR as e:
                    raise ValueError(f"block {k} of {self.name}: {e}") from None
            elif itemsize > 1:
                raw = np.frombuffer(raw, np.uint8).reshape(itemsize, -1).T.tobytes()
        if len(raw) != self.block_bytes:
            raise ValueError(
                f"block {k} of {self.name} holds {len(raw)} bytes, not {self.block_bytes}"
            )
        if block_crc(raw) != self.crcs[k]:
            raise ValueError(f"block {k} of {self.name}: checksum mismatch")
        out[: self.block_bytes] = np.frombuffer(raw, dtype=np.uint8)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


class Groups:
    """Where a group-coded part's groups are (:mod:`tablebase.storage.groupcode`): the file
    offset of its rows (``<part>_groups``, contiguous), their length, the group size, the
    CRC-32 of each chunk's stored bytes and the part's decoding table."""

    def __init__(
        self, at: int, row_len: int, group_bytes: int, zcrcs: np.ndarray, table: np.ndarray
    ) -> None:
        self.at = at
        self.row_len = row_len
        self.group_bytes = group_bytes
        self.shift = group_bytes.bit_length() - 1  # a group's number: byte >> shift
        self.zcrcs = zcrcs
        self.table = table


def _groups_of(ds: h5py.Dataset, nblocks: int, chunk: int) -> Groups | None:
    """The :class:`Groups` of dataset ``ds`` if it was written group-coded, else None;
    ``OSError`` naming what is wrong if its datasets are not as written."""
    stem = ds.name.rsplit("/", 1)[-1]
    parts = [ds.parent.get(stem + x) for x in (GROUPS_SUFFIX, ZCRC_SUFFIX, CODE_SUFFIX)]
    if all(p is None for p in parts):
        return None
    rows, zcrc, code = parts
    group_bytes = gc.OLD_GROUP_BYTES
    if rows is not None and gc.GROUP_ATTR in rows.attrs:
        size = rows.attrs[gc.GROUP_ATTR]
        if np.ndim(size) or not np.issubdtype(np.asarray(size).dtype, np.integer):
            raise OSError(f"the group index of {ds.name} is not as written")
        group_bytes = int(size)
    if not gc.is_group_size(group_bytes):
        raise OSError(f"the group index of {ds.name} is not as written")
    row_len = gc.row_length(chunk, group_bytes)
    if (
        rows is None or zcrc is None or code is None
        or rows.shape != (nblocks, row_len) or rows.dtype != np.dtype("<u2")
        or zcrc.shape != (nblocks,) or code.shape != (gc.LITLEN,) or code.dtype != np.uint8
        or rows.chunks is not None
    ):  # fmt: skip
        raise OSError(f"the group index of {ds.name} is not as written")
    lengths = np.asarray(code[...], dtype=np.int32)
    at = rows.id.get_offset()
    if at is None or lengths.max(initial=0) > gc.MAX_BITS or not gc.is_code(lengths):
        raise OSError(f"the group index of {ds.name} is not as written")
    return Groups(
        int(at), row_len, group_bytes, np.asarray(zcrc[...], dtype=np.uint32),
        gc.decode_table(lengths),
    )  # fmt: skip


def _filters(ds: h5py.Dataset) -> list[int] | None:
    """The dataset's filter pipeline if it is only deflate, optionally after shuffle."""
    plist = ds.id.get_create_plist()
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    if filters in ([_DEFLATE], [_SHUFFLE, _DEFLATE]):
        return filters
    return None
