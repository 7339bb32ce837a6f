"""Writing a slice file safely: built, sealed, re-read and checked under a temporary name,
then renamed.

A file is written (format version 5, ``docs/FORMAT.md``; the parts:
:mod:`tablebase.storage.slicefile`) under a temporary name, re-read and checked, then
renamed: a file with the final name is complete. Its one-byte parts are group-coded
(:mod:`tablebase.storage.groupcode`: standard deflate chunks whose groups a probe decodes
alone). It begins with a header in the HDF5 user block holding a digest of all its metadata
(:mod:`tablebase.storage.integrity`); its attributes are fixed-length and it uses the HDF5
1.10 format, whose metadata carries the library's own checksums. Files carry no timestamps,
so the same database always gives the same content.
"""

from __future__ import annotations

import io
import os
from array import array
from pathlib import Path
from typing import BinaryIO

import h5py
import numba
import numpy as np
from h5py import h5d

from tablebase.identity import build_identity
from tablebase.material.index import INDEX_SCHEME
from tablebase.material.slices import Slice
from tablebase.rules.variants import Variant
from tablebase.storage import integrity
from tablebase.storage.checks import check_group_index, check_part_in_blocks
from tablebase.storage.chunkio import BLOCK_BYTES, GROUPS_CODEC, write_dataset
from tablebase.storage.reader import read_slice, read_wdl
from tablebase.storage.slicefile import (
    DATASET,
    WDL_CAPTURES,
    WDL_DATASET,
    SliceStats,
    TableFileError,
    checksum,
    slice_path,
)
from tablebase.storage.values import dtw_histogram, narrowed, value_bits
from tablebase.storage.wdl import encode_wdl, packed_size

FORMAT_VERSION = 5  # the layout written; 1 (values only), 2 (no header), 3, 4 are still read
HDF5_LIBVER = ("v110", "v110")  # superblock 3, object headers 2: metadata with checksums
# Deflate encoders (tablebase.storage.chunkio): the generator's files are written fast; the WDL
# part of a distribution copy (tablebase export), written once and downloaded many times,
# small. Readers inflate either.
VALUES_CODEC = f"{GROUPS_CODEC}-128"  # one-byte values (two-byte ones: VALUES_CODEC_16)
VALUES_CODEC_16 = "isal-1"
WDL_CODEC = f"{GROUPS_CODEC}-256"  # four codes a byte, mostly repeats: groups as in format 4
VALUES_ENCODING = "0 draw, else dtw+1 (odd dtw win, even dtw loss, side to move)"
WDL_ENCODING = (
    "2 bits per entry, entry i in bits 2*(i%4) of byte i//4: 0 draw, 1 win, 2 loss (side to "
    "move); entries that are not positions or whose side to move can capture hold any code"
)
WDL_ENCODING_STORED = (
    "2 bits per entry, entry i in bits 2*(i%4) of byte i//4: 0 draw, 1 win, 2 loss (side to "
    "move); every position holds its code, capture positions included; entries that are "
    "not positions hold any code"
)


def write_slice(
    db: Path | str,
    variant: Variant,
    s: Slice,
    values: np.ndarray,
    stats: SliceStats,
    example_fen: str,
    dont_care: np.ndarray | None = None,
    captures: bool = True,
    scratch: Path | None = None,
) -> Path:
    """Write both parts of slice ``s`` (its WDL part derived from ``values``) to ``db``
    atomically; returns the final path. ``values`` is ``uint8`` or ``uint16``, stored in
    the narrowest of the two that holds them (:func:`tablebase.storage.values.narrowed`).

    ``scratch``: a folder for a slice larger than the task's memory (its values
    memory-mapped): nothing of the size of the slice is then held in memory. The bits of
    the entries that are not positions and the packed WDL part are memory-mapped files
    there (removed after), the file is built on disk (:func:`write_parts`), and both
    parts are checked a block at a time (:func:`check_part_in_blocks`), not read back
    whole.

    The WDL part stores every position's code, capture positions included (``captures``
    True, the default; the entries that are not positions are found here). ``captures``
    False writes the older form, capture positions left to the prober; then ``dont_care``
    (optional, bool per entry or a bit per entry, bit ``i & 7`` of byte ``i >> 3``) marks
    the entries whose WDL code is never read, those that are not positions and the capture
    positions, exactly: a solver that knows them passes them to save a pass over the slice.
    With captures stored ``dont_care`` is not read."""

    value_bits(values)  # TypeError for another type
    values = narrowed(values)
    threads = numba.get_num_threads()
    attrs = slice_attrs(variant, s, stats, example_fen, dtw_histogram(values))
    if scratch is None or not captures:
        packed = encode_wdl(variant, s, values, threads, dont_care, captures)
        return write_parts(db, variant, s, attrs, packed, values, captures)
    n = s.size(variant)
    bits_path, packed_path = Path(scratch) / f"{s.name}.np.bits", Path(scratch) / f"{s.name}.wdl"
    try:
        work = (_zeros_file(bits_path, (n + 7) // 8), _zeros_file(packed_path, packed_size(n)))
        packed = encode_wdl(variant, s, values, threads, captures=True, work=work)
        del work
        bits_path.unlink()
        return write_parts(db, variant, s, attrs, packed, values, True, on_disk=True)
    finally:
        bits_path.unlink(missing_ok=True)
        packed_path.unlink(missing_ok=True)


def _zeros_file(path: Path, n: int) -> np.memmap:
    """``n`` zero bytes in a new file at ``path``, memory-mapped for writing."""
    with open(path, "wb") as f:
        f.truncate(max(1, n))
    return np.memmap(path, dtype=np.uint8, mode="r+", shape=(n,))


def slice_attrs(
    variant: Variant, s: Slice, stats: SliceStats, example_fen: str, histogram: np.ndarray
) -> dict:
    """The file attributes describing slice ``s`` (format version 2)."""
    hist = np.asarray(histogram, dtype=np.int64).copy()
    hist[0] = stats.draws  # entries that are not positions hold 0 too: count positions only
    return {
        "format_version": FORMAT_VERSION,
        "variant": variant.name,
        "material": s.name,
        "index_scheme": INDEX_SCHEME,
        "entries": s.size(variant),
        "positions": stats.positions,
        "wins": stats.wins,
        "draws": stats.draws,
        "losses": stats.losses,
        "longest_win": stats.longest_win,
        "longest_win_index": stats.longest_win_index,
        "longest_win_fen": example_fen,
        "value_histogram": hist,
        "generator_version": build_identity(),
    }


def write_parts(
    db: Path | str,
    variant: Variant,
    s: Slice,
    attrs: dict,
    wdl: np.ndarray,
    values: np.ndarray | None = None,
    captures: bool = True,
    wdl_codec: str = WDL_CODEC,
    on_disk: bool = False,
) -> Path:
    """Write a slice file from its attributes and parts (``values`` None: a WDL-only file;
    ``captures``: the WDL part stores capture positions' codes, flagged on the dataset;
    ``wdl_codec``: its deflate encoder, see :mod:`tablebase.storage.chunkio`) under a temporary
    name, re-read and check it, then rename it; returns the final path.

    The file is built in memory and then written, or, ``on_disk``, built in the temporary
    file itself (for parts larger than memory, memory-mapped) and checked a block at a
    time; the layout is the same (HDF5's driver for file objects either way). Either way
    a full disk is a plain ``OSError`` (HDF5 hands on the file object's own) and leaves no
    file behind."""
    final = slice_path(db, s)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    attrs = dict(
        attrs,
        format_version=FORMAT_VERSION,
        parts="wdl values" if values is not None else "wdl",
    )
    try:
        if on_disk:
            with _image_file(tmp) as fh:  # through a file object, as the image in memory:
                _build(fh, attrs, wdl, values, captures, wdl_codec)  # the same layout
            head, table = integrity.seal(_mapped(tmp), _chunk_extents(tmp))
            with open(tmp, "r+b") as fh:
                fh.write(head)  # over the user block's zeros
                fh.seek(0, os.SEEK_END)
                fh.write(table)
                fh.flush()
                os.fsync(fh.fileno())
        else:
            image = io.BytesIO()  # then written whole: a full disk is a plain OSError
            _build(image, attrs, wdl, values, captures, wdl_codec)
            head, table = integrity.seal(image.getbuffer(), _chunk_extents(image))
            with open(tmp, "wb") as fh:
                fh.write(head)
                fh.write(image.getbuffer()[len(head) :])
                fh.write(table)
                fh.flush()
                os.fsync(fh.fileno())
            del image
    except BaseException as e:  # a full disk (OSError), an interrupt: no temporary file left
        tmp.unlink(missing_ok=True)
        cause = _os_cause(e) if isinstance(e, OSError | RuntimeError) else e
        if cause is not e:  # HDF5's "file close failed" after the disk's own error
            raise cause from None
        raise
    try:  # re-read and check before the file gets its final name
        if on_disk:
            check_group_index(tmp)
            check_part_in_blocks(tmp, variant, s, WDL_DATASET)
            if values is not None:
                check_part_in_blocks(tmp, variant, s, DATASET)
        else:  # each part read once: its digest, its chunks' checksums and its groups
            read_wdl(tmp, variant, s, groups=True)
            if values is not None:
                read_slice(tmp, variant, s, groups=True)
    except TableFileError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, final)
    return final


def _os_cause(exc: BaseException) -> BaseException:
    """The first ``OSError`` with an errno in the chain of ``exc`` (a write the disk
    refused, before HDF5's own error on closing the file), else ``exc``."""
    e: BaseException | None = exc
    while e is not None:
        if isinstance(e, OSError) and e.errno is not None:
            return e
        e = e.__context__
    return exc


def _image_file(path: Path) -> io.BufferedRandom:
    """The temporary file a slice file is built in on disk, open for writing and reading."""
    return open(path, "w+b")


def _mapped(path: Path) -> memoryview:
    """The bytes of the file at ``path``, memory-mapped read-only."""
    return np.memmap(path, dtype=np.uint8, mode="r").data


def _build(
    target: Path | BinaryIO,
    attrs: dict,
    wdl: np.ndarray,
    values: np.ndarray | None,
    captures: bool,
    wdl_codec: str,
) -> None:
    """The HDF5 part of a slice file (the user block left zero) into ``target``: a path or
    a file object."""
    with h5py.File(
        target, "w", track_order=True, libver=HDF5_LIBVER, userblock_size=integrity.USER_BLOCK
    ) as f:
        for k, v in attrs.items():
            f.attrs[k] = _fixed(v)
        threads = numba.get_num_threads()
        ds = write_dataset(f, WDL_DATASET, wdl, BLOCK_BYTES, wdl_codec, False, threads, True)
        ds.attrs["sha256"] = _fixed(checksum(wdl))
        ds.attrs["encoding"] = _fixed(WDL_ENCODING_STORED if captures else WDL_ENCODING)
        if captures:
            ds.attrs[WDL_CAPTURES] = _fixed("stored")
        if values is not None:
            bits = value_bits(values)
            little = values.astype(values.dtype.newbyteorder("<"), copy=False)
            per = BLOCK_BYTES // little.dtype.itemsize
            codec = VALUES_CODEC if bits == 8 else VALUES_CODEC_16
            ds = write_dataset(f, DATASET, little, per, codec, bits > 8, threads, True)
            ds.attrs["sha256"] = _fixed(checksum(values))
            ds.attrs["value_bits"] = bits
            ds.attrs["encoding"] = _fixed(f"uint{bits}: {VALUES_ENCODING}")


def _fixed(v):
    """An attribute value as stored: a string as fixed-length bytes (UTF-8), so no attribute
    is read from HDF5's global heap (where a damaged length once made the library spin)."""
    return np.bytes_(v.encode()) if isinstance(v, str) else v


def _chunk_extents(image: io.BytesIO | Path) -> np.ndarray:
    """``(offset, length)`` in the file of every stored chunk of its parts, one row each
    (16 bytes a chunk: a 47 G-entry slice has millions of chunks)."""
    offsets, lengths = array("q"), array("q")

    def add(info: h5d.StoreInfo) -> None:
        offsets.append(int(info.byte_offset))
        lengths.append(int(info.size))

    with h5py.File(image, "r") as f:
        for name in (WDL_DATASET, DATASET):
            if name in f:
                # chunk_iter: one pass over the chunk index (get_chunk_info(i) walks it
                # from the start for each i: quadratic in the 16 KiB blocks of a part)
                f[name].id.chunk_iter(add)
    out = np.empty((len(offsets), 2), dtype=np.int64)
    out[:, 0] = np.frombuffer(offsets, dtype=np.int64) if offsets else []
    out[:, 1] = np.frombuffer(lengths, dtype=np.int64) if lengths else []
    return out


def remove_stale_temporaries(db: Path | str) -> list[Path]:
    """Delete temporary files left by a killed writer (one build per directory at a time)."""
    removed = []
    for tmp in Path(db).glob("*.h5.*.tmp"):
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed
