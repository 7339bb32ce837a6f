"""Probing a generated database: single positions, batches of positions, best moves.

>>> with tablebase.open("data/international") as tb:
...     tb.probe_wdl("W:WK42:B22")      # +1 win, 0 draw, -1 loss for the side to move
...     tb.probe_dtw("W:WK42:B22")      # plies to win (odd) or to lose (even); None if drawn

Slices are read (and checked) on first use and kept in memory. A position whose slice is
not in the database raises :class:`MissingSliceError` naming the slice.

A database holding distances is probed through its ``values`` part. A WDL-only database
(``tablebase export --wdl-only``), or any database opened with ``wdl_only=True``, is probed
through its compact ``wdl`` part (a quarter of the memory), one read per position where the
slice stores its capture positions' codes (files written now); in slices written before,
the result of a position whose side to move can capture is resolved through its captures
(:mod:`tablebase.storage.wdl`):
``probe_wdl`` and ``probe_batch_wdl`` answer as usual, ``probe`` and ``best_moves`` give
``None`` for every distance, and ``probe_dtw``, ``probe_byte`` and ``probe_batch`` raise
:class:`DistancesUnavailableError`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import get_num_threads, njit, prange

from tablebase.material.index import BINOM, REVERSE16, entry_index, reverse_board
from tablebase.material.slices import UNCODED, Slice, concatenate_tables, material_code
from tablebase.rules import Move, has_capture, legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant, get_variant
from tablebase.storage.files import (
    TableFileError,
    first_readable_attrs,
    has_values,
    read_slice,
    read_wdl_part,
    slice_files,
    slice_path,
)
from tablebase.storage.values import RESULT_NAMES, decode, result_of_code
from tablebase.storage.wdl import (
    NEEDS_CAPTURES,
    NO_TABLE,
    capture_closure,
    new_buffers,
    result_capturing,
    result_quick,
    results_staged,
)


class MissingSliceError(LookupError):
    """The database has no file for the slice a position belongs to."""

    def __init__(self, slice_name: str, db: Path, fen: str = "") -> None:
        self.slice = slice_name
        self.db = db
        where = f" for {fen}" if fen else ""
        super().__init__(f"slice {slice_name} is not in the database {db}{where}")


class DistancesUnavailableError(LookupError):
    """A distance was asked of a database probed through its WDL part only."""

    def __init__(self, db: Path) -> None:
        self.db = db
        super().__init__(
            f"the database {db} is probed for win/draw/loss only (a WDL-only copy, or opened "
            "with wdl_only=True): distances are not available"
        )


@dataclass(frozen=True)
class MoveValue:
    """A legal move with its value from the mover's side (before the move)."""

    move: Move
    text: str
    result: str  # "win" | "draw" | "loss"
    dtw: int | None


RESULTS = RESULT_NAMES  # {1: "win", 0: "draw", -1: "loss"}


def normalise(pos: Position) -> tuple[Slice, tuple[int, int, int, int]]:
    """The slice and white-to-move bitboards of a position (colour-flipped if black moves)."""
    p = pos if pos.white_to_move else pos.flipped()
    boards = (p.white_men, p.white_kings, p.black_men, p.black_kings)
    return Slice(*(b.bit_count() for b in boards)), boards


class Tablebase:
    """A database directory of one variant, opened for probing (a context manager)."""

    def __init__(
        self, path: str | Path, variant: str | Variant | None = None, wdl_only: bool = False
    ) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"database directory {self.path} does not exist")
        attrs = first_readable_attrs(self.path)  # damaged and junk files passed over
        self.variant = get_variant(variant or attrs.get("variant") or self.path.name)
        #: True if probes give distances (the ``values`` part); False: win/draw/loss only.
        self.has_distances = bool(attrs) and has_values(attrs) and not wdl_only
        self._tables: dict[Slice, np.ndarray] = {}
        self._by_code: dict[int, np.ndarray] = {}
        self._flat = np.zeros(0, dtype=np.uint8)
        self._flat_offsets = np.full(4096, -1, dtype=np.int64)
        self._wdl_tables: dict[int, np.ndarray] = {}
        self._captures_stored: dict[int, bool] = {}  # per material code read, as read_wdl_part
        self._wdl_flat = np.zeros(0, dtype=np.uint8)
        self._wdl_offsets = np.full(4096, -1, dtype=np.int64)
        # per material code: the slice's WDL part stores capture positions' codes
        self._wdl_stored = np.zeros(4096, dtype=np.bool_)
        self._local = threading.local()

    def __enter__(self) -> Tablebase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._tables.clear()
        self._by_code.clear()
        self._flat = np.zeros(0, dtype=np.uint8)
        self._flat_offsets = np.full(4096, -1, dtype=np.int64)
        self._wdl_tables.clear()
        self._captures_stored.clear()
        self._wdl_flat = np.zeros(0, dtype=np.uint8)
        self._wdl_offsets = np.full(4096, -1, dtype=np.int64)
        self._wdl_stored = np.zeros(4096, dtype=np.bool_)

    # --- slices -----------------------------------------------------------------------
    def _slice_files(self) -> list[Path]:
        """The slice files (``wmwkbmbk.h5``), in name order; others are left out
        (:func:`tablebase.storage.files.slice_files`)."""
        return [f for _, f in slice_files(self.path).slices]

    def slices(self) -> list[Slice]:
        """Slices present in the directory (files not named as a slice of a database, e.g.
        ``9999.h5`` or ``0000.h5``, are left out: :func:`tablebase.storage.files.slice_files`)."""
        return [s for s, _ in slice_files(self.path).slices]

    def table(self, s: Slice, fen: str = "") -> np.ndarray:
        """The values of slice ``s`` (read and checked on first use)."""
        if not self.has_distances:
            raise DistancesUnavailableError(self.path)
        t = self._tables.get(s)
        if t is None:
            path = slice_path(self.path, s)
            if not path.exists():
                raise MissingSliceError(s.name, self.path, fen)
            t = read_slice(path, self.variant, s)
            self._tables[s] = t
        return t

    def covers(self, pos: Position | str) -> bool:
        """True if the database has the slice of this position (or the game is over)."""
        p = self._position(pos)
        s, _ = normalise(p)
        if s.wm + s.wk == 0:
            return True
        return slice_path(self.path, s).exists()

    # --- probes -----------------------------------------------------------------------
    def _position(self, pos: Position | str) -> Position:
        if isinstance(pos, str):
            return Position.from_fen(pos, self.variant)
        if pos.variant is not self.variant and pos.variant != self.variant:  # == costs 1 us
            raise ValueError(f"position is {pos.variant.name}, database is {self.variant.name}")
        return pos

    def probe_byte(self, pos: Position | str) -> int:
        """The stored value of a position (see ``docs/FORMAT.md``)."""
        if not self.has_distances:
            raise DistancesUnavailableError(self.path)
        p = self._position(pos)
        v = self.variant
        code, idx = _locate(
            v.squares,
            v.per_row,
            p.white_to_move,
            p.white_men,
            p.white_kings,
            p.black_men,
            p.black_kings,
            BINOM,
            REVERSE16,
        )
        if v.king_move_limit > 0 and code >= 0:
            idx = _entry_with_runs(p)
        t = self._by_code.get(code)
        if t is None:
            s = _slice_of_code(code) if code >= 0 else normalise(p)[0]
            if s.wm + s.wk == 0:
                return 1  # the side to move has no pieces: lost
            if s.bm + s.bk == 0:
                raise ValueError(f"{p.fen()}: the side not to move has no pieces; game over")
            t = self._by_code[code] = self.table(s, p.fen())
        return int(t[idx])

    def probe(self, pos: Position | str) -> tuple[int, int | None]:
        """(wdl, dtw) for the side to move; dtw is None for a draw, and for every position
        when the database is probed for win/draw/loss only (``has_distances`` False)."""
        if not self.has_distances:
            return self.probe_wdl(pos), None
        return decode(self.probe_byte(pos))

    def probe_wdl(self, pos: Position | str) -> int:
        """+1 win, 0 draw, -1 loss for the side to move."""
        if self.has_distances:
            return decode(self.probe_byte(pos))[0]
        p = self._position(pos)
        v = self.variant
        if v.king_move_limit > 0 and p.king_runs != ((0, 0), (0, 0)):
            return self._wdl_with_runs(p)
        boards = (p.white_men, p.white_kings, p.black_men, p.black_kings)
        while True:
            tables = (self._wdl_flat, self._wdl_offsets, self._wdl_stored, v.neighbours, v.rules)
            r = result_quick(*tables, p.white_to_move, *boards)
            if r == NEEDS_CAPTURES:
                buffers = getattr(self._local, "buffers", None)
                if buffers is None:
                    buffers = self._local.buffers = new_buffers()
                r = result_capturing(*tables, p.white_to_move, *boards, *buffers)
            if r > NO_TABLE:
                return int(r)
            self._load_wdl([NO_TABLE - int(r)], p)

    def _wdl_with_runs(self, p: Position) -> int:
        """:meth:`probe_wdl` of a position in which a side has a king run going (Frisian):
        its own entry if the side to move cannot capture or its slice stores captures, else
        the best of its captures (each ends the capturer's run; ``play`` carries the other
        side's)."""
        s, _ = normalise(p)
        if s.wm + s.wk == 0:
            return -1  # the side to move has no pieces: lost
        if s.bm + s.bk == 0:
            raise ValueError(f"{p.fen()}: the side not to move has no pieces; game over")
        if s.code >= len(self._wdl_offsets) or self._wdl_offsets[s.code] < 0:
            self._load_wdl([s.code], p)
        if not self._wdl_stored[s.code] and has_capture(p):
            return max(-self.probe_wdl(play(p, m)) for m in legal_moves(p))
        e = int(self._wdl_offsets[s.code]) * 4 + _entry_with_runs(p)
        code = (int(self._wdl_flat[e >> 2]) >> ((e & 3) * 2)) & 3
        return result_of_code(code)

    def probe_dtw(self, pos: Position | str) -> int | None:
        """Plies to the end with best play: odd for a win, even for a loss; None if drawn."""
        return decode(self.probe_byte(pos))[1]

    def best_moves(self, pos: Position | str) -> list[MoveValue]:
        """Every legal move with its value for the mover, best first."""
        p = self._position(pos)
        moves = legal_moves(p)
        out = []
        for m in moves:
            wdl, dtw = self.probe(play(p, m))
            res = -wdl
            out.append(
                MoveValue(m, move_text(p, m, moves), RESULTS[res], None if dtw is None else dtw + 1)
            )
        out.sort(key=_move_rank)
        return out

    def probe_batch(
        self,
        white_men: np.ndarray,
        white_kings: np.ndarray,
        black_men: np.ndarray,
        black_kings: np.ndarray,
        white_to_move: np.ndarray | bool = True,
    ) -> np.ndarray:
        """Stored values of many positions given as uint64 bitboard arrays (``decode`` them
        with :func:`decode`, or read them as in ``docs/FORMAT.md``). In a variant with king
        runs (Frisian) these are the positions in which neither side has a run going."""
        if not self.has_distances:
            raise DistancesUnavailableError(self.path)
        v = self.variant
        wm, wk, bm, bk = (
            np.ascontiguousarray(a, dtype=np.uint64)
            for a in (white_men, white_kings, black_men, black_kings)
        )
        wtm = np.ascontiguousarray(
            np.broadcast_to(np.asarray(white_to_move, dtype=np.bool_), wm.shape)
        )
        codes = _codes_batch(wm, wk, bm, bk, wtm, v.squares, REVERSE16)
        if codes.shape[0] and codes.min() < 0:
            i = int(np.argmin(codes))
            pos = Position(int(wm[i]), int(wk[i]), int(bm[i]), int(bk[i]), bool(wtm[i]), v)
            raise MissingSliceError(normalise(pos)[0].name, self.path, pos.fen())
        present = np.flatnonzero(np.bincount(codes, minlength=4096))
        if (self._flat_offsets[present] < 0).any():
            self._rebuild_flat(present)
        return _gather_batch(
            wm,
            wk,
            bm,
            bk,
            wtm,
            v.squares,
            v.per_row,
            BINOM,
            REVERSE16,
            self._flat,
            self._flat_offsets,
            v.king_move_limit,
        )

    def probe_batch_wdl(
        self,
        white_men: np.ndarray,
        white_kings: np.ndarray,
        black_men: np.ndarray,
        black_kings: np.ndarray,
        white_to_move: np.ndarray | bool = True,
    ) -> np.ndarray:
        """Results (int8: +1 win, 0 draw, -1 loss for the side to move) of many positions
        given as uint64 bitboard arrays."""
        if self.has_distances:
            values = self.probe_batch(white_men, white_kings, black_men, black_kings, white_to_move)
            out = np.where((values.astype(np.int64) - 1) % 2 == 1, 1, -1).astype(np.int8)
            out[values == 0] = 0
            return out
        v = self.variant
        wm, wk, bm, bk = (
            np.ascontiguousarray(a, dtype=np.uint64)
            for a in (white_men, white_kings, black_men, black_kings)
        )
        wtm = np.ascontiguousarray(
            np.broadcast_to(np.asarray(white_to_move, dtype=np.bool_), wm.shape)
        )
        codes = _codes_batch(wm, wk, bm, bk, wtm, v.squares, REVERSE16)
        if codes.shape[0] and codes.min() < 0:
            i = int(np.argmin(codes))
            pos = Position(int(wm[i]), int(wk[i]), int(bm[i]), int(bk[i]), bool(wtm[i]), v)
            raise MissingSliceError(normalise(pos)[0].name, self.path, pos.fen())
        present = np.flatnonzero(np.bincount(codes, minlength=4096))
        if (self._wdl_offsets[present] < 0).any():
            self._load_wdl(present.tolist())
        while True:
            out, need = results_staged(
                self._wdl_flat,
                self._wdl_offsets,
                self._wdl_stored,
                v,
                wtm,
                wm,
                wk,
                bm,
                bk,
                get_num_threads(),
            )
            if need < 0:
                return out
            self._load_wdl([need])

    def _load_wdl(self, codes: list[int], pos: Position | None = None) -> None:
        """Load the WDL parts of slices ``codes`` and, for a slice that leaves captures to
        the prober, of every slice its captures reach (those present), laid end to end in
        one array with ``offsets[code]`` in bytes and ``stored[code]`` set for the slices
        that store their capture positions' codes."""
        fen = pos.fen() if pos is not None else ""
        added = False
        for code in codes:
            if code == UNCODED:
                assert pos is not None
                raise MissingSliceError(normalise(pos)[0].name, self.path, fen)
            s = _slice_of_code(code)
            if s.bm + s.bk == 0:
                where = fen or f"a position of material {s.name}"
                raise ValueError(f"{where}: the side not to move has no pieces; game over")
            if code in self._wdl_tables:
                continue
            self._wdl_tables[code] = self.wdl_table(s, fen)
            added = True
            if self._captures_stored[code]:
                continue  # its capture positions are read, not resolved
            for t in capture_closure(s):
                if t.code not in self._wdl_tables and slice_path(self.path, t).exists():
                    self._wdl_tables[t.code] = self.wdl_table(t, fen)
        if not added:
            return
        self._wdl_flat, self._wdl_offsets = concatenate_tables(
            {c: self._wdl_tables[c] for c in sorted(self._wdl_tables)}
        )
        stored = np.zeros(len(self._wdl_offsets), dtype=np.bool_)
        for c, flag in self._captures_stored.items():
            stored[c] = flag
        self._wdl_stored = stored

    def wdl_table(self, s: Slice, fen: str = "") -> np.ndarray:
        """The packed WDL part of slice ``s`` (read and checked; :mod:`tablebase.storage.wdl`)."""
        path = slice_path(self.path, s)
        if not path.exists():
            raise MissingSliceError(s.name, self.path, fen)
        packed, stored = read_wdl_part(path, self.variant, s)
        self._captures_stored[s.code] = stored
        return packed

    def _rebuild_flat(self, codes: np.ndarray) -> None:
        """Lay the slices batch probes need end to end in one array (kept between calls)."""
        wanted = sorted(set(np.flatnonzero(self._flat_offsets >= 0).tolist()) | set(codes.tolist()))
        tables = {int(c): self._table_of_code(int(c)) for c in wanted}  # loads and checks
        self._flat, self._flat_offsets = concatenate_tables(tables)

    def _table_of_code(self, code: int) -> np.ndarray:
        t = self._by_code.get(code)
        if t is None:
            s = _slice_of_code(code)
            if s.wm + s.wk == 0:
                t = np.ones(1, dtype=np.uint8)  # side to move without pieces: lost (index 0)
            else:
                t = self.table(s)
            self._by_code[code] = t
        return t


def _entry_with_runs(p: Position) -> int:
    """Index of a position of a variant with king runs in its slice: its board and both
    sides' runs (``Position.king_runs``), colour-flipped if black moves."""
    v = p.variant
    (wsq, wn), (bsq, bn) = p.king_runs
    boards = (p.white_men, p.white_kings, p.black_men, p.black_kings)
    runs = (wsq - 1, wn, bsq - 1, bn)
    if not p.white_to_move:
        f = p.flipped()
        boards = (f.white_men, f.white_kings, f.black_men, f.black_kings)
        runs = (v.squares - bsq, bn, v.squares - wsq, wn)  # 1-based s -> 0-based nsq - s
    return int(
        entry_index(
            v.squares,
            v.per_row,
            v.king_move_limit,
            *(np.uint64(b) for b in boards),
            *runs,
            BINOM,
        )
    )


def _move_rank(mv: MoveValue) -> tuple[int, int]:
    if mv.result == "win":
        return (0, mv.dtw or 0)
    if mv.result == "draw":
        return (1, 0)
    return (2, -(mv.dtw or 0))


def _slice_of_code(code: int) -> Slice:
    return Slice(code >> 9 & 7, code >> 6 & 7, code >> 3 & 7, code & 7)


@njit(cache=True, inline="always")
def _white_to_move(nsq, wtm, wm, wk, bm, bk, rev16):
    """The position with white to move (colour-flipped if black moves) and its material
    code; the code is -1 for more pieces of a kind than any slice code can name."""
    if not wtm:
        a = reverse_board(bm, nsq, rev16)
        b = reverse_board(bk, nsq, rev16)
        bm = reverse_board(wm, nsq, rev16)
        bk = reverse_board(wk, nsq, rev16)
        wm, wk = a, b
    code = material_code(wm, wk, bm, bk)
    return wm, wk, bm, bk, (-1 if code == UNCODED else code)


@njit(cache=True, inline="always")
def _locate_one(nsq, width, wtm, wm, wk, bm, bk, binom, rev16, limit):
    """(material code, entry) of a position, with no king run on either side where the
    variant has runs (``limit`` > 0)."""
    wm, wk, bm, bk, code = _white_to_move(nsq, wtm, wm, wk, bm, bk, rev16)
    if code < 0 or (wm | wk) == 0 or (bm | bk) == 0:
        return code, 0
    return code, entry_index(nsq, width, limit, wm, wk, bm, bk, -1, 0, -1, 0, binom)


@njit(cache=True)
def _locate(nsq, width, wtm, wm, wk, bm, bk, binom, rev16):
    """(material code, index) of a position given as Python ints, after the colour flip."""
    return _locate_one(
        nsq, width, wtm, np.uint64(wm), np.uint64(wk), np.uint64(bm), np.uint64(bk), binom, rev16, 0
    )


@njit(cache=True, parallel=True)
def _codes_batch(wm, wk, bm, bk, wtm, nsq, rev16):
    n = wm.shape[0]
    codes = np.empty(n, dtype=np.int64)
    for i in prange(n):
        codes[i] = _white_to_move(nsq, wtm[i], wm[i], wk[i], bm[i], bk[i], rev16)[4]
    return codes


@njit(cache=True, parallel=True)
def _gather_batch(wm, wk, bm, bk, wtm, nsq, width, binom, rev16, flat, offsets, limit):
    n = wm.shape[0]
    out = np.empty(n, dtype=flat.dtype)
    for i in prange(n):
        code, idx = _locate_one(nsq, width, wtm[i], wm[i], wk[i], bm[i], bk[i], binom, rev16, limit)
        out[i] = flat[offsets[code] + idx]
    return out


__all__ = [
    "DistancesUnavailableError",
    "MissingSliceError",
    "MoveValue",
    "Tablebase",
    "TableFileError",
    "decode",
]
