"""A slice file's names: its path in a database folder, its parts, what it records, the
error a bad one raises.

One file per slice, ``<db>/<wmwkbmbk>.h5`` (``docs/FORMAT.md``): the slice's description in
the file's attributes and two parts, each a dataset of its own that can be read (or shipped)
without the other:

- ``wdl``: win/draw/loss, two bits per entry (:mod:`tablebase.storage.wdl`), every position's
  own code (``captures="stored"`` on the dataset, written by default) or, in files written by
  earlier versions, with capture positions left to the prober;
- ``values``: result and distance-to-win, one value per entry
  (:mod:`tablebase.storage.values`), ``uint8`` or, where a distance needs it, ``uint16``. A
  WDL-only copy (``tablebase export --wdl-only``) has no ``values``.

Writing: :mod:`tablebase.storage.writer`; reading and checking a file before reading it:
:mod:`tablebase.storage.reader`; the checks of whole parts and of a folder's files:
:mod:`tablebase.storage.checks`; which files of a folder are slice files:
:mod:`tablebase.storage.listing`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tablebase.material.slices import Slice

DATASET = "values"  # the distances part
WDL_DATASET = "wdl"  # the compact win/draw/loss part
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
    # .data: the array's bytes as a memoryview (numpy's stubs make an array a Buffer only
    # from Python 3.12 on)
    return hashlib.sha256(np.ascontiguousarray(values).view(np.uint8).data).hexdigest()


def slice_path(db: Path | str, s: Slice) -> Path:
    return Path(db) / s.file_name()
