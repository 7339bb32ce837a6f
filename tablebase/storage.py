"""HDF5 slice files: writing safely, reading, and checking that a file is whole.

One file per slice, ``<db>/<wmwkbmbk>.h5``, holding the dataset ``values`` (one byte per
index entry, see ``docs/FORMAT.md``) with its description in attributes. A file is written
under a temporary name, re-read and checked, then renamed: a file with the final name is
complete. Files carry no timestamps, so the same database always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from tablebase import __version__
from tablebase.index import INDEX_SCHEME
from tablebase.rules.variants import Variant
from tablebase.slices import Slice

DATASET = "values"
CHUNK = 1 << 18


class TableFileError(Exception):
    """A slice file that is missing, truncated, altered or for another slice."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")

    def __reduce__(self):  # crosses from worker processes intact
        return (type(self), (self.path, self.reason))


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
) -> Path:
    """Write ``values`` of slice ``s`` to ``db`` atomically; returns the final path."""
    final = slice_path(db, s)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    attrs = {
        "variant": variant.name,
        "material": s.name,
        "index_scheme": INDEX_SCHEME,
        "positions": stats.positions,
        "entries": int(values.shape[0]),
        "wins": stats.wins,
        "draws": stats.draws,
        "losses": stats.losses,
        "longest_win": stats.longest_win,
        "longest_win_index": stats.longest_win_index,
        "longest_win_fen": example_fen,
        "sha256": checksum(values),
        "generator_version": __version__,
        "encoding": "uint8: 0 draw, else dtw+1 (odd dtw win, even dtw loss, side to move)",
    }
    chunks = (min(CHUNK, max(1, values.shape[0])),)
    with h5py.File(tmp, "w", track_order=True, libver=("earliest", "v110")) as f:
        ds = f.create_dataset(
            DATASET,
            data=values,
            chunks=chunks,
            compression="gzip",
            compression_opts=1,
            shuffle=False,
            track_times=False,
        )
        for k, v in attrs.items():
            ds.attrs[k] = v
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    read_slice(tmp, variant, s)  # re-read and check before the file gets its final name
    os.replace(tmp, final)
    return final


def remove_stale_temporaries(db: Path | str) -> list[Path]:
    """Delete temporary files left by a killed writer (one build per directory at a time)."""
    removed = []
    for tmp in Path(db).glob("*.h5.*.tmp"):
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def check_header(path: Path | str, variant: Variant, s: Slice) -> dict:
    """The attributes of the file of slice ``s``, checked against its name and the database
    (variant, material, index scheme, entries; no data read); raises
    :class:`TableFileError` if it is missing or describes another slice."""
    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    attrs = read_attrs(path)
    _check_attrs(path, attrs, variant, s)
    return attrs


def read_attrs(path: Path | str) -> dict:
    """The attributes of a slice file (no data read)."""
    try:
        with h5py.File(path, "r") as f:
            return {k: _plain(v) for k, v in f[DATASET].attrs.items()}
    except (OSError, KeyError) as e:
        raise TableFileError(path, f"not a readable slice file ({e})") from None


def read_slice(
    path: Path | str, variant: Variant, s: Slice, check: bool = True, out: np.ndarray | None = None
) -> np.ndarray:
    """The values of slice ``s`` (read into ``out`` when given); raises
    :class:`TableFileError` if the file is not whole or not that slice."""
    path = Path(path)
    if not path.exists():
        raise TableFileError(path, f"missing slice {s.name}")
    size = s.size(variant)
    try:
        with h5py.File(path, "r") as f:
            ds = f[DATASET]
            attrs = {k: _plain(v) for k, v in ds.attrs.items()}
            _check_attrs(path, attrs, variant, s)
            if ds.dtype != np.uint8 or ds.shape != (size,):
                raise TableFileError(path, f"dataset has shape {ds.shape} {ds.dtype}")
            values = np.empty(size, dtype=np.uint8) if out is None else out
            ds.read_direct(values)
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise TableFileError(path, f"truncated or damaged slice file ({e})") from None
    if check and checksum(values) != attrs.get("sha256"):
        raise TableFileError(path, "checksum mismatch: the values were altered or damaged")
    return values


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
