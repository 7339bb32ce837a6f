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
zlib, its output between zlib 1's and zlib 6's in size) or ``"zlib-N"`` (levels 0-9: the
chunks are byte for byte those h5py writes). Both write standard deflate streams, so a
reader neither knows nor cares which one wrote a chunk; every chunk is inflated by ISA-L,
about four times as fast as zlib. ISA-L's streams are not always byte for byte the same
from one process to another: a resumed build once wrote a chunk of the same values one
byte longer than the first build had. Files of equal tables are equal in content (every
dataset and attribute, the checksums included), not necessarily in bytes.

Every chunk is stored whole, the last one padded with zeros (the fill value) as HDF5 does.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np
from h5py import h5z
from isal import isal_zlib

_DEFLATE = h5z.FILTER_DEFLATE
_SHUFFLE = h5z.FILTER_SHUFFLE
_ENCODERS = {"isal": (isal_zlib.compress, range(4)), "zlib": (zlib.compress, range(10))}


def encoder(codec: str) -> tuple[Callable[[bytes], bytes], int]:
    """``(compress(raw) -> bytes, level)`` of a codec name (see the module docstring);
    ValueError for an unknown one."""
    lib, _, level = codec.partition("-")
    if lib not in _ENCODERS or not level.isdigit() or int(level) not in _ENCODERS[lib][1]:
        raise ValueError(f"unknown codec {codec!r}: isal-0..3 or zlib-0..9")
    fn, n = _ENCODERS[lib][0], int(level)
    return (lambda raw: fn(raw, n)), n


def write_dataset(
    group: h5py.Group,
    name: str,
    data: np.ndarray,
    chunk: int,
    codec: str,
    shuffle: bool,
    threads: int,
) -> h5py.Dataset:
    """Create the 1-D dataset ``name`` holding ``data`` (little-endian or bytes), in chunks of
    ``chunk`` entries deflated by ``codec`` (after the shuffle filter if ``shuffle``) in
    ``threads`` threads; the filter records the codec's level."""
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

    def compress(start: int) -> bytes:
        part = data[start : start + chunk]
        if part.shape[0] < chunk:  # the edge chunk is stored whole, padded with the fill value
            part = np.concatenate([part, np.zeros(chunk - part.shape[0], dtype=data.dtype)])
        raw = part.view(np.uint8)
        if shuffled:  # byte k of every element together, for k = 0, 1, ...
            raw = raw.reshape(chunk, data.dtype.itemsize).T.copy()
        return deflate(raw)

    with ThreadPoolExecutor(max(1, threads)) as pool:
        # bounded look-ahead: at most a few compressed chunks wait for the (serial) write
        starts = range(0, n, chunk)
        window = max(2, 4 * threads)
        for first in range(0, len(starts), window):
            batch = starts[first : first + window]
            for start, blob in zip(batch, pool.map(compress, batch), strict=True):
                ds.id.write_direct_chunk((start,), blob)
    return ds


def read_dataset(ds: h5py.Dataset, out: np.ndarray, threads: int) -> None:
    """Read the whole 1-D dataset ``ds`` into ``out`` (same length, at least as wide),
    decompressing its chunks in ``threads`` threads when its filters are gzip and shuffle
    only; any other layout is read by HDF5 itself. Raises ``OSError``/``ValueError`` for
    a damaged chunk."""
    n = ds.shape[0]
    filters = _filters(ds)
    whole = ds.chunks is not None and ds.id.get_num_chunks() == -(-n // ds.chunks[0])
    if not whole or filters is None or ds.dtype.byteorder == ">":
        # another layout, or chunks never written (read as the fill value): HDF5 reads it
        if out.dtype == ds.dtype:
            ds.read_direct(out)
        else:
            out[:] = ds[...]
        return
    chunk = ds.chunks[0]
    size = ds.dtype.itemsize

    def decode(item: tuple[int, int, bytes]) -> None:
        start, mask, blob = item
        raw = blob
        for k, f in reversed(list(enumerate(filters))):
            if mask & (1 << k):
                continue  # the filter was skipped for this chunk
            if f == _DEFLATE:
                try:
                    raw = isal_zlib.decompress(raw)
                except isal_zlib.error as e:
                    raise ValueError(f"chunk at {start}: {e}") from None
            elif size > 1:  # unshuffle
                raw = np.frombuffer(raw, np.uint8).reshape(size, -1).T.tobytes()
        if len(raw) != chunk * size:
            raise ValueError(f"chunk at {start} holds {len(raw)} bytes, not {chunk * size}")
        stop = min(n, start + chunk)
        out[start:stop] = np.frombuffer(raw, dtype=ds.dtype, count=stop - start)

    with ThreadPoolExecutor(max(1, threads)) as pool:
        window = max(2, 4 * threads)
        starts = range(0, n, chunk)
        for first in range(0, len(starts), window):
            batch = []
            for start in starts[first : first + window]:
                mask, blob = ds.id.read_direct_chunk((start,))
                batch.append((start, mask, blob))
            for _ in pool.map(decode, batch):
                pass


def _filters(ds: h5py.Dataset) -> list[int] | None:
    """The dataset's filter pipeline if it is only deflate, optionally after shuffle."""
    plist = ds.id.get_create_plist()
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    if filters in ([_DEFLATE], [_SHUFFLE, _DEFLATE]):
        return filters
    return None
