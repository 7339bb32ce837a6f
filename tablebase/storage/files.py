"""HDF5 slice files: writing safely, checking a file before reading it, reading, listing.

One file per slice, ``<db>/<wmwkbmbk>.h5`` (format version 4, ``docs/FORMAT.md``): the slice's
description in the file's attributes and two parts, each a dataset of its own that can be
read (or shipped) without the other:

- ``wdl``: win/draw/loss, two bits per entry (:mod:`tablebase.storage.wdl`), every position's own
  code (``captures="stored"`` on the dataset, written by default) or, in files written by
  earlier versions, with capture positions left to the prober;
- ``values``: result and distance-to-win, one value per entry (:mod:`tablebase.storage.values`),
  ``uint8`` or, where a distance needs it, ``uint16``. A WDL-only copy
  (``tablebase export --wdl-only``) has no ``values``.

Its one-byte parts are group-coded (:mod:`tablebase.storage.groupcode`: standard deflate
chunks whose groups of 256 bytes a probe decodes alone). A version 3 or 4 file begins with
a header in the HDF5 user block holding a digest of all its metadata
(:mod:`tablebase.storage.integrity`), checked before the HDF5 library parses any of it, on
the first open in each process (:func:`open_slice_file`; again in the build's resume check
and in ``verify``); its attributes are fixed-length and it uses the HDF5 1.10 format,
whose metadata carries the library's own checksums. Every error met while reading a file,
whatever the HDF5 library raises, is a :class:`TableFileError` naming it.

Version 1 files (``values`` alone, the description on the dataset) and version 2 files (no
header) still open, their metadata parsed first in a child process with a time limit. A
file is written under a temporary name, re-read and checked, then renamed: a file with the
final name is complete. Files carry no timestamps, so the same database always gives the
same content.

:func:`slice_files` is the one place that says which files of a folder are its slice files.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import h5py
import numba
import numpy as np

from tablebase.identity import build_identity
from tablebase.material.index import INDEX_SCHEME
from tablebase.material.slices import Slice, parse_material
from tablebase.rules.variants import Variant
from tablebase.storage import integrity
from tablebase.storage.chunkio import (
    BLOCK_BYTES,
    GROUPS_CODEC,
    check_groups,
    read_dataset,
    write_dataset,
)
from tablebase.storage.values import dtw_histogram, narrowed, value_bits

FORMAT_VERSION = 5  # the layout written; 1 (values only), 2 (no header), 3, 4 are still read
READABLE_VERSIONS = (1, 2, 3, 4, 5)
HDF5_LIBVER = ("v110", "v110")  # superblock 3, object headers 2: metadata with checksums
DATASET = "values"  # the distances part
WDL_DATASET = "wdl"  # the compact win/draw/loss part
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
# the ``captures`` attribute of the wdl dataset: "stored" where capture positions hold their
# own code; absent (files written before it) or "resolved": the prober resolves them
WDL_CAPTURES = "captures"


class TableFileError(Exception):
    """A slice file that is missing, truncated, altered or for another slice."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")

    def __reduce__(self):  # crosses from worker processes intact
        return (type(self), (self.path, self.reason))


class UnknownFormatError(TableFileError):
    """A slice file of a format version this program does not read (written by a newer
    one): unlike a damaged file, it stops the database opening."""


@dataclass(frozen=True)
class SliceStats:
    """Counts a slice file records about itself."""

    positions: int
    wins: int
    draws: int
    losses: int
    longest_win: int  # plies, -1 if no win
    longest_win_index: int  # -1 if no win


def checksum(values: np.ndarray) -> str:
    """SHA-256 of the raw value bytes."""
    return hashlib.sha256(np.ascontiguousarray(values).view(np.uint8)).hexdigest()


def slice_path(db: Path | str, s: Slice) -> Path:
    return Path(db) / s.file_name()


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
    from tablebase.storage.wdl import encode_wdl, packed_size

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
        check_group_index(tmp)
        if on_disk:
            check_part_in_blocks(tmp, variant, s, WDL_DATASET)
            if values is not None:
                check_part_in_blocks(tmp, variant, s, DATASET)
        else:
            read_wdl(tmp, variant, s)
            if values is not None:
                read_slice(tmp, variant, s)
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


def _image_file(path: Path):
    """The temporary file a slice file is built in on disk, open for writing and reading."""
    return open(path, "w+b")


def _mapped(path: Path) -> memoryview:
    """The bytes of the file at ``path``, memory-mapped read-only."""
    return memoryview(np.memmap(path, dtype=np.uint8, mode="r"))


def _build(target, attrs: dict, wdl: np.ndarray, values, captures: bool, wdl_codec: str) -> None:
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
    from array import array

    offsets, lengths = array("q"), array("q")

    def add(info) -> None:  # type: ignore[no-untyped-def]
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


@dataclass(frozen=True)
class SliceFiles:
    """The ``*.h5`` files of a database folder: its slice files (``slices``, ``(slice,
    path)`` in name order) and the others (``others``, ``(path, why it is not one)``)."""

    slices: list[tuple[Slice, Path]]
    others: list[tuple[Path, str]]


def slice_files(db: Path | str) -> SliceFiles:
    """Which files of the folder ``db`` are slice files: those named ``wmwkbmbk.h5`` after a
    slice a database can hold (each side has a piece, at most the pieces supported); any
    other ``*.h5`` file (``0000.h5``, ``0100.h5``, ``notes.h5``) is not one, and readers
    ignore it (``verify`` lists it). The names alone decide: a damaged slice file is a
    slice file whose reading fails. The one home of this rule (prober, ``verify``,
    ``export``, the build and the service list a folder here)."""
    slices, others = [], []
    for f in sorted(Path(db).glob("*.h5")):
        if not f.is_file():
            others.append((f, "not a regular file"))
            continue
        try:
            slices.append((parse_material(f.stem), f))
        except ValueError as e:
            others.append((f, str(e)))
    return SliceFiles(slices, others)


def first_readable_attrs(db: Path | str) -> dict:
    """The attributes (:func:`read_attrs`) of the first slice file of ``db`` that reads,
    damaged ones passed over (they fail alone, when read); ``{}`` if none reads. What a
    reader takes a database's variant and parts from. A file of a format this program does
    not read stops it (:class:`UnknownFormatError`)."""
    for _, f in slice_files(db).slices:
        try:
            return read_attrs(f)
        except UnknownFormatError:
            raise
        except TableFileError:
            continue
    return {}


def damaged_slice_files(db: Path | str, variant: Variant, legacy: bool = True) -> dict[Path, str]:
    """The slice files of ``db`` whose metadata fails its check (:func:`check_file`) or whose
    attributes describe another slice, with the reason; no data read. ``legacy`` False
    leaves version 1 and 2 files (no digest) to be checked when first read, saving a child
    process each (a service starting on a large older database)."""
    out = {}
    for s, f in slice_files(db).slices:
        try:
            if not legacy and integrity.check_sealed(f) is None:
                continue
            check_header(f, variant, s)
        except TableFileError as e:
            out[f] = e.reason
        except (OSError, integrity.DamagedFile) as e:
            out[f] = str(e)
    return out


def check_header(path: Path | str, variant: Variant, s: Slice) -> dict:
    """The attributes of the file of slice ``s``, checked against its name and the database
    (variant, material, index scheme, entries; no data read); raises
    :class:`TableFileError` if it is missing, damaged or describes another slice."""
    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    attrs = read_attrs(path)
    _check_attrs(path, attrs, variant, s)
    return attrs


def check_file(path: Path | str, recheck: bool = False) -> integrity.Sealed | None:
    """Check a slice file before the HDF5 library parses it: a version 3 file's metadata
    against its digest, a version 1 or 2 file's by the library in a child process with a
    time limit (:mod:`tablebase.storage.integrity`). Done once per file and process
    (``recheck`` does it again); returns the version 3 header, None for an older file;
    raises :class:`TableFileError` naming the file."""
    path = Path(path)
    try:
        return integrity.check_file(path, recheck)
    except FileNotFoundError:
        raise TableFileError(path, "missing") from None
    except integrity.DamagedFile as e:
        raise TableFileError(path, str(e)) from None
    except OSError as e:
        raise TableFileError(path, f"cannot be read ({e.strerror or e})") from None


@contextmanager
def open_slice_file(path: Path | str, recheck: bool = False) -> Iterator[h5py.File]:
    """The slice file opened for reading, after :func:`check_file`; any error raised while
    it is open (the HDF5 library's, or a reader's ``KeyError``, ``ValueError``...) becomes
    a :class:`TableFileError` naming the file. Every reader of a slice file opens it here."""
    path = Path(path)
    sealed = check_file(path, recheck)
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # noqa: BLE001 - whatever the library raises: the file is unreadable
        raise TableFileError(path, f"not a readable slice file ({_describe(e)})") from None
    try:
        if sealed is not None and f.userblock_size != sealed.user_block:
            raise TableFileError(path, "the HDF5 user block does not match the header")
        yield f
    except TableFileError:
        raise
    except Exception as e:  # noqa: BLE001 - see above
        raise TableFileError(path, f"truncated or damaged slice file ({_describe(e)})") from None
    finally:
        try:
            f.close()
        except Exception:  # noqa: BLE001, S110 - closing a damaged file: the error is raised above
            pass


def _describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def read_attrs(path: Path | str, recheck: bool = False) -> dict:
    """The attributes describing a slice file (no data read), whatever its format version,
    with ``format_version``, ``parts``, ``wdl_captures_stored`` (True if a probe may read a
    capture position's WDL code: the part stores it, or a version 1 file, whose WDL codes
    come from the values) and (if it has distances) ``value_bits``; raises
    :class:`TableFileError` for a damaged or unreadable file or a format this program
    cannot read."""
    path = Path(path)
    with open_slice_file(path, recheck) as f:
        return _file_attrs(path, f)


def _file_attrs(path: Path, f: h5py.File) -> dict:
    attrs = {k: _plain(v) for k, v in f.attrs.items()}
    version = attrs.get("format_version")
    if version is None:  # version 1: the description lives on the only dataset
        if DATASET not in f:
            raise TableFileError(path, "not a slice file (no format_version, no values)")
        attrs = {k: _plain(v) for k, v in f[DATASET].attrs.items()}
        attrs.pop("sha256", None)
        return dict(attrs, format_version=1, parts="values", value_bits=8, wdl_captures_stored=True)
    if version not in READABLE_VERSIONS:
        raise UnknownFormatError(
            path,
            f"format version {version!r} is not one this program reads "
            f"({', '.join(map(str, READABLE_VERSIONS))}): upgrade draughts-tablebase "
            "or regenerate the database",
        )
    if version >= 3 and f.userblock_size == 0:
        raise TableFileError(path, f"format version {version} file without its header")
    if DATASET in f:
        attrs["value_bits"] = _plain(f[DATASET].attrs.get("value_bits", 8))
    wdl = f.get(WDL_DATASET)
    attrs["wdl_captures_stored"] = (
        wdl is not None and _plain(wdl.attrs.get(WDL_CAPTURES, "resolved")) == "stored"
    )
    return attrs


def has_values(attrs: dict) -> bool:
    """True if a file (given by :func:`read_attrs`) holds the distances part."""
    return "values" in str(attrs.get("parts", "")).split()


def read_slice(
    path: Path | str,
    variant: Variant,
    s: Slice,
    check: bool = True,
    out: np.ndarray | None = None,
    recheck: bool = False,
) -> np.ndarray:
    """The values (result and distance) of slice ``s``, ``uint8`` or ``uint16`` as stored
    (read into ``out`` when given, which must be at least as wide); raises
    :class:`TableFileError` if the file is not whole, not that slice, or has no distances.
    ``recheck``: check the file's metadata again even if this process has checked it."""
    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    size = s.size(variant)
    with open_slice_file(path, recheck) as f:
        attrs = _file_attrs(path, f)
        _check_attrs(path, attrs, variant, s)
        if DATASET not in f:
            raise TableFileError(
                path,
                "holds win/draw/loss only (a WDL-only copy): distances are not available",
            )
        ds = f[DATASET]
        if ds.dtype not in (np.uint8, np.uint16) or ds.shape != (size,):
            raise TableFileError(path, f"dataset has shape {ds.shape} {ds.dtype}")
        if out is not None and out.dtype.itemsize < ds.dtype.itemsize:
            raise TableFileError(
                path, f"holds {ds.dtype} values, too wide for a {out.dtype} buffer"
            )
        values = np.empty(size, dtype=ds.dtype) if out is None else out
        read_dataset(ds, values[:size], numba.get_num_threads())
        digest = _plain(ds.attrs.get("sha256"))
        stored = ds.dtype
    if check and checksum(values[:size].astype(stored, copy=False)) != digest:
        raise TableFileError(path, "checksum mismatch: the values were altered or damaged")
    return values


CHECK_BLOCK_ENTRIES = 1 << 24  # entries read at a time by check_part_in_blocks


def check_part_in_blocks(path: Path | str, variant: Variant, s: Slice, part: str) -> None:
    """The checks of :func:`read_slice` (``part`` :data:`DATASET`) or :func:`read_wdl`
    (:data:`WDL_DATASET`) of a version 3 file: the file whole, its attributes, the part's
    shape and type, the part against its checksum; with the part read and hashed
    :data:`CHECK_BLOCK_ENTRIES` at a time (each chunk against its CRC-32, in threads, as
    :func:`read_slice` reads), never held whole. Raises
    :class:`TableFileError` as they do."""
    from tablebase.storage.wdl import packed_size

    path = Path(path)
    values = part == DATASET
    size = s.size(variant) if values else packed_size(s.size(variant))
    dtypes = (np.uint8, np.uint16) if values else (np.uint8,)
    what = "values were" if values else "wdl part was"
    with open_slice_file(path) as f:
        _check_attrs(path, _file_attrs(path, f), variant, s)
        if part not in f:
            raise TableFileError(path, f"has no {what.split()[0]} part")
        ds = f[part]
        if ds.dtype not in dtypes or ds.shape != (size,):
            raise TableFileError(path, f"{part} dataset has shape {ds.shape} {ds.dtype}")
        h = hashlib.sha256()
        block = np.empty(min(size, CHECK_BLOCK_ENTRIES), dtype=ds.dtype.newbyteorder("="))
        threads = numba.get_num_threads()
        for a in range(0, size, CHECK_BLOCK_ENTRIES):
            got = block[: min(size, a + CHECK_BLOCK_ENTRIES) - a]
            read_dataset(ds, got, threads, a)  # each chunk against its CRC-32 too
            h.update(got.view(np.uint8))
        digest = _plain(ds.attrs.get("sha256"))
    if h.hexdigest() != digest:
        raise TableFileError(path, f"checksum mismatch: the {what} altered or damaged")


def check_group_index(path: Path | str) -> None:
    """Every group-coded part of a slice file (format 4) decodes group by group, as a probe
    reads it, to exactly its chunks' bytes (:func:`tablebase.storage.chunkio.check_groups`);
    :class:`TableFileError` naming the block that does not."""
    path = Path(path)
    with open_slice_file(path) as f:
        for name in (WDL_DATASET, DATASET):
            if name in f:
                try:
                    check_groups(f[name], numba.get_num_threads())
                except (OSError, ValueError, KeyError) as e:
                    raise TableFileError(path, f"damaged slice file ({e})") from None


def read_wdl(
    path: Path | str, variant: Variant, s: Slice, check: bool = True, recheck: bool = False
) -> np.ndarray:
    """The packed WDL part of slice ``s`` (:mod:`tablebase.storage.wdl`); for a version 1 file it
    is derived from the values, every entry exact. Raises :class:`TableFileError` as
    :func:`read_slice` does."""
    return read_wdl_part(path, variant, s, check, recheck)[0]


def read_wdl_part(
    path: Path | str, variant: Variant, s: Slice, check: bool = True, recheck: bool = False
) -> tuple[np.ndarray, bool]:
    """:func:`read_wdl` and whether a probe may read a capture position's code in it
    (``wdl_captures_stored`` of :func:`read_attrs`)."""
    from tablebase.storage.wdl import exact_wdl, packed_size

    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    with open_slice_file(path, recheck) as f:
        attrs = _file_attrs(path, f)
        _check_attrs(path, attrs, variant, s)
        if attrs["format_version"] == 1:
            return exact_wdl(read_slice(path, variant, s, check)), True
        if WDL_DATASET not in f:
            raise TableFileError(path, "has no wdl part")
        ds = f[WDL_DATASET]
        size = packed_size(s.size(variant))
        if ds.dtype != np.uint8 or ds.shape != (size,):
            raise TableFileError(path, f"wdl dataset has shape {ds.shape} {ds.dtype}")
        packed = np.empty(size, dtype=np.uint8)
        read_dataset(ds, packed, numba.get_num_threads())
        digest = _plain(ds.attrs.get("sha256"))
    if check and checksum(packed) != digest:
        raise TableFileError(path, "checksum mismatch: the wdl part was altered or damaged")
    return packed, bool(attrs["wdl_captures_stored"])


def wdl_disagreements(
    variant: Variant, s: Slice, values: np.ndarray, packed: np.ndarray, captures_stored: bool
) -> np.ndarray:
    """The entries of slice ``s`` whose code in the WDL part ``packed`` differs from the one
    its ``values`` give (the part as the writer encodes it from them, in the form the file
    has: every position's code, or capture positions left to the prober); empty when the
    part agrees with the values. Entries that are not read (not positions, or capture
    positions in the older form) hold the writer's filler, so the comparison is exact."""
    from tablebase.storage.wdl import encode_wdl

    stored = captures_stored or variant.king_move_limit > 0  # runs: the solver kept them all
    expected = encode_wdl(variant, s, values, numba.get_num_threads(), None, stored)
    if expected.shape != packed.shape:
        return np.arange(s.size(variant), dtype=np.int64)
    bytes_off = np.flatnonzero(expected != packed)
    if not bytes_off.shape[0]:
        return bytes_off.astype(np.int64)
    diff = expected[bytes_off] ^ packed[bytes_off]
    out = []
    for k in range(4):  # the entries of each differing byte whose two bits differ
        hit = ((diff >> (2 * k)) & 3) != 0
        out.append(bytes_off[hit].astype(np.int64) * 4 + k)
    entries = np.sort(np.concatenate(out))
    return entries[entries < s.size(variant)]


def check_wdl_part(
    path: Path | str, variant: Variant, s: Slice, values: np.ndarray, recheck: bool = False
) -> None:
    """Raise :class:`TableFileError` unless the WDL part of the file of slice ``s`` agrees
    with ``values`` (its values, read and checked) entry for entry
    (:func:`wdl_disagreements`); a version 1 file's WDL codes are its values'."""
    packed, stored = read_wdl_part(path, variant, s, True, recheck)
    if read_attrs(path)["format_version"] == 1:
        return
    bad = wdl_disagreements(variant, s, values, packed, stored)
    if bad.shape[0]:
        raise TableFileError(
            path,
            f"the wdl part disagrees with the values at {bad.shape[0]} entries "
            f"(first: entry {int(bad[0])}): altered or damaged",
        )


def _check_attrs(path: Path, attrs: dict, variant: Variant, s: Slice) -> None:
    expect = {
        "variant": variant.name,
        "material": s.name,
        "index_scheme": INDEX_SCHEME,
        "entries": s.size(variant),
    }
    for k, v in expect.items():
        if attrs.get(k) != v:
            raise TableFileError(path, f"attribute {k} is {attrs.get(k)!r}, expected {v!r}")


def _plain(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v
