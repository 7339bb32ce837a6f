"""Reading a slice file: its metadata checked before the HDF5 library parses it, its
attributes, its parts read whole and checked against their digests.

A version 3 to 5 file begins with a header in the HDF5 user block holding a digest of all
its metadata (:mod:`tablebase.storage.integrity`), checked before the HDF5 library parses
any of it, on the first open in each process (:func:`open_slice_file`; again in the build's
resume check and in ``verify``). Every error met while reading a file, whatever the HDF5
library raises, is a :class:`~tablebase.storage.slicefile.TableFileError` naming it.
Version 1 files (``values`` alone, the description on the dataset) and version 2 files (no
header) still open, their metadata parsed first in a child process with a time limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import h5py
import numba
import numpy as np

from tablebase.material.index import INDEX_SCHEME
from tablebase.material.slices import Slice
from tablebase.rules.variants import Variant
from tablebase.storage import integrity
from tablebase.storage.chunkio import read_dataset
from tablebase.storage.slicefile import (
    DATASET,
    WDL_CAPTURES,
    WDL_DATASET,
    TableFileError,
    UnknownFormatError,
    checksum,
)
from tablebase.storage.wdl import exact_wdl, packed_size

READABLE_VERSIONS = (1, 2, 3, 4, 5)


def check_header(path: Path | str, variant: Variant, s: Slice) -> dict:
    """The attributes of the file of slice ``s``, checked against its name and the database
    (variant, material, index scheme, entries; no data read); raises
    :class:`TableFileError` if it is missing, damaged or describes another slice."""
    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    attrs = read_attrs(path)
    check_attrs(path, attrs, variant, s)
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
        return file_attrs(path, f)


def file_attrs(path: Path, f: h5py.File) -> dict:
    attrs = {k: attr_value(v) for k, v in f.attrs.items()}
    version = attrs.get("format_version")
    if version is None:  # version 1: the description lives on the only dataset
        if DATASET not in f:
            raise TableFileError(path, "not a slice file (no format_version, no values)")
        attrs = {k: attr_value(v) for k, v in f[DATASET].attrs.items()}
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
        attrs["value_bits"] = attr_value(f[DATASET].attrs.get("value_bits", 8))
    wdl = f.get(WDL_DATASET)
    attrs["wdl_captures_stored"] = (
        wdl is not None and attr_value(wdl.attrs.get(WDL_CAPTURES, "resolved")) == "stored"
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
    groups: bool = False,
) -> np.ndarray:
    """The values (result and distance) of slice ``s``, ``uint8`` or ``uint16`` as stored
    (read into ``out`` when given, which must be at least as wide); raises
    :class:`TableFileError` if the file is not whole, not that slice, or has no distances.
    ``recheck``: check the file's metadata again even if this process has checked it.
    ``groups``: check a group-coded part's groups too, in the same pass
    (:func:`tablebase.storage.chunkio.read_dataset`)."""
    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    size = s.size(variant)
    with open_slice_file(path, recheck) as f:
        attrs = file_attrs(path, f)
        check_attrs(path, attrs, variant, s)
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
        read_dataset(ds, values[:size], numba.get_num_threads(), groups=groups)
        digest = attr_value(ds.attrs.get("sha256"))
        stored = ds.dtype
    if check and checksum(values[:size].astype(stored, copy=False)) != digest:
        raise TableFileError(path, "checksum mismatch: the values were altered or damaged")
    return values


def read_wdl(
    path: Path | str,
    variant: Variant,
    s: Slice,
    check: bool = True,
    recheck: bool = False,
    groups: bool = False,
) -> np.ndarray:
    """The packed WDL part of slice ``s`` (:mod:`tablebase.storage.wdl`); for a version 1 file it
    is derived from the values, every entry exact. Raises :class:`TableFileError` as
    :func:`read_slice` does (``groups`` as there)."""
    return read_wdl_part(path, variant, s, check, recheck, groups)[0]


def read_wdl_part(
    path: Path | str,
    variant: Variant,
    s: Slice,
    check: bool = True,
    recheck: bool = False,
    groups: bool = False,
) -> tuple[np.ndarray, bool]:
    """:func:`read_wdl` and whether a probe may read a capture position's code in it
    (``wdl_captures_stored`` of :func:`read_attrs`)."""

    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    with open_slice_file(path, recheck) as f:
        attrs = file_attrs(path, f)
        check_attrs(path, attrs, variant, s)
        if attrs["format_version"] == 1:
            return exact_wdl(read_slice(path, variant, s, check)), True
        if WDL_DATASET not in f:
            raise TableFileError(path, "has no wdl part")
        ds = f[WDL_DATASET]
        size = packed_size(s.size(variant))
        if ds.dtype != np.uint8 or ds.shape != (size,):
            raise TableFileError(path, f"wdl dataset has shape {ds.shape} {ds.dtype}")
        packed = np.empty(size, dtype=np.uint8)
        read_dataset(ds, packed, numba.get_num_threads(), groups=groups)
        digest = attr_value(ds.attrs.get("sha256"))
    if check and checksum(packed) != digest:
        raise TableFileError(path, "checksum mismatch: the wdl part was altered or damaged")
    return packed, bool(attrs["wdl_captures_stored"])


def check_attrs(path: Path, attrs: dict, variant: Variant, s: Slice) -> None:
    expect = {
        "variant": variant.name,
        "material": s.name,
        "index_scheme": INDEX_SCHEME,
        "entries": s.size(variant),
    }
    for k, v in expect.items():
        if attrs.get(k) != v:
            raise TableFileError(path, f"attribute {k} is {attrs.get(k)!r}, expected {v!r}")


def attr_value(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v
