"""A folder of Scan bitbase files: where each file lives, writing one, reading and probing.

Scan reads ``data/bb<suffix>/<pieces>/<name>`` from its working folder (``<suffix>`` empty
for International, ``_frisian`` for Frisian; ``<name>`` the id's four digits,
:class:`tablebase.scanbb.index.ScanId`), one file for every id of at most ``bb-size`` pieces
(``scan.ini``), and stops at start-up when one is missing or decodes to another length. Here
a *root* is the folder that plays Scan's ``data``: it holds ``bb<suffix>/``. Readers also
accept Scan's own folder (the root is then its ``data``) or the ``bb<suffix>`` folder itself
(:func:`locate_root`).

A file is written under a temporary name, its decoded length checked against the id's size,
then renamed (:func:`write_bitbase`): a file with its final name is complete.

:class:`ScanBitbases` probes a position as Scan does: a position whose side to move can
capture is not stored; its value is the best of its captures' (recursively), and a side to
move without pieces has lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tablebase.rules import has_capture, legal_moves, play
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant
from tablebase.scanbb.codec import BYTE_LENGTHS, block_starts, value_at
from tablebase.scanbb.index import ScanFormatError, ScanId, scan_entry_of, variant_suffix

# a Scan value byte's value (draw, loss, win for the side to move) as a result (+1 win)
RESULT_OF_SCAN = (0, -1, 1)


class ScanFileError(Exception):
    """A bitbase file that is missing, unreadable or of the wrong decoded length; names it."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def bb_folder(variant: Variant) -> str:
    """The name of the variant's bitbase folder under Scan's ``data``: ``bb`` + suffix."""
    return "bb" + variant_suffix(variant)


def id_path(root: Path | str, variant: Variant, sid: ScanId) -> Path:
    """Where Scan reads the file of ``sid`` under the root (its ``data`` folder)."""
    return Path(root) / bb_folder(variant) / str(sid.pieces) / sid.name


def locate_root(path: Path | str, variant: Variant) -> Path:
    """The root (Scan's ``data``) of the bitbases of ``variant`` at ``path``: ``path``
    itself if it holds ``bb<suffix>/``, its ``data`` if it is Scan's folder, its parent if
    it is the ``bb<suffix>`` folder. Raises :class:`ScanFileError` naming what is missing."""
    path = Path(path)
    folder = bb_folder(variant)
    for root in (path, path / "data"):
        if (root / folder).is_dir():
            return root
    if path.name == folder and path.is_dir():
        return path.parent
    raise ScanFileError(path, f"no {folder}/ folder of Scan bitbases here (nor in data/)")


def write_bitbase(path: Path, chunks: Iterable[np.ndarray], entries: int) -> int:
    """Write the bytes of ``chunks`` to ``path`` through a temporary name, check that they
    decode to ``entries`` entries, rename; returns the file's size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    total = 0
    size = 0
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                total += int(BYTE_LENGTHS[chunk].sum())
                size += chunk.shape[0]
                f.write(chunk.tobytes())
            f.flush()
            os.fsync(f.fileno())
        if total != entries:
            raise ScanFileError(tmp, f"decodes to {total} entries, expected {entries}")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size


def read_bitbase(path: Path, entries: int) -> np.ndarray:
    """The bytes of a bitbase file, checked to decode to ``entries`` entries as Scan checks
    them at start-up; raises :class:`ScanFileError`."""
    try:
        data = np.fromfile(path, dtype=np.uint8)
    except FileNotFoundError:
        raise ScanFileError(path, "missing bitbase file") from None
    except OSError as e:
        raise ScanFileError(path, f"cannot read ({e.strerror or e})") from None
    total = int(BYTE_LENGTHS[data].sum())
    if total != entries:
        raise ScanFileError(path, f"decodes to {total} entries, Scan expects {entries}")
    return data


class ScanBitbases:
    """The Scan bitbases of ``variant`` under ``path`` (:func:`locate_root`), for probing one
    position at a time. Files are read when first needed and kept."""

    def __init__(self, path: Path | str, variant: Variant) -> None:
        self.variant = variant
        self.root = locate_root(path, variant)
        self._files: dict[ScanId, tuple[np.ndarray, np.ndarray]] = {}

    def path_of(self, sid: ScanId) -> Path:
        return id_path(self.root, self.variant, sid)

    def _file(self, sid: ScanId) -> tuple[np.ndarray, np.ndarray]:
        if sid not in self._files:
            data = read_bitbase(self.path_of(sid), sid.size(self.variant))
            self._files[sid] = (data, block_starts(data))
        return self._files[sid]

    def stored(self, pos: Position) -> int:
        """The value stored at the position's entry, as a result for the side to move (+1
        win, 0 draw, -1 loss), whether or not Scan would read it there."""
        sid, entry = scan_entry_of(pos)
        data, starts = self._file(sid)
        return RESULT_OF_SCAN[value_at(data, starts, entry)]

    def probe(self, pos: Position) -> int:
        """The position's result for the side to move as Scan's bitbases give it: the stored
        value of a position without a capture, the best of the captures' otherwise."""
        if pos.variant != self.variant:
            raise ScanFormatError(f"a {pos.variant.name} position in {self.variant.name} bitbases")
        own = (
            (pos.white_men | pos.white_kings)
            if pos.white_to_move
            else (pos.black_men | pos.black_kings)
        )
        if not own:
            return -1
        if not has_capture(pos):
            return self.stored(pos)
        best = -1
        for move in legal_moves(pos):
            best = max(best, -self.probe(play(pos, move)))
            if best == 1:
                break
        return best
