"""Probing a generated database: single positions, batches of positions, best moves.

>>> with tablebase.open("data/international", cache="1G") as tb:
...     tb.probe_wdl("W:WK42:B22")      # +1 win, 0 draw, -1 loss for the side to move
...     tb.probe_dtw("W:WK42:B22")      # plies to win (odd) or to lose (even); None if drawn

Nothing is loaded whole. A probe reads the block of the slice file that holds its entry
(16 KiB of values or of WDL codes, ``docs/FORMAT.md``) through a bounded cache
(:mod:`tablebase.probe.cache`): ``cache`` is its size (``"256M"``, ``1 << 30``), or a
:class:`~tablebase.probe.cache.BlockCache` to share between databases, or None for the
process's shared default (a quarter of the machine's memory, taken only as blocks are
read). The least recently used blocks are evicted; the slices of up to four pieces stay.
A slice file is opened (its header checked, its block index read) on first use; a damaged
block raises :class:`TableFileError` naming the file when it is read. A position whose slice
is not in the database raises :class:`MissingSliceError` naming the slice. Every method may
be called from several threads at once.

A batch (``probe_batch``, ``probe_batch_wdl``) is answered through the same cache: the
positions whose blocks are cached at once, then the missing blocks, grouped, each read once
per batch while the batch's blocks fit in the cache. ``probe_many`` answers a list of
positions as ``probe`` would (the moves of a position, a level of a search): each entry
whose block is cached in one compiled read, the others in one batch.

A database holding distances is probed through its ``values`` part. A WDL-only database
(``tablebase export --wdl-only``), or any database opened with ``wdl_only=True``, is probed
through its compact ``wdl`` part (a quarter of the size), one read per position where the
slice stores its capture positions' codes (files written now); in slices written before,
the result of a position whose side to move can capture is resolved through its captures
(:mod:`tablebase.storage.wdl`):
``probe_wdl`` and ``probe_batch_wdl`` answer as usual, ``probe`` and ``best_moves`` give
``None`` for every distance, and ``probe_dtw``, ``probe_byte`` and ``probe_batch`` raise
:class:`DistancesUnavailableError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tablebase.material.index import BINOM, entry_index
from tablebase.material.slices import UNCODED, Slice, slice_of_code
from tablebase.probe.blocks import open_part
from tablebase.probe.cache import RESIDENT_PIECES, BlockCache, default_cache
from tablebase.probe.captures import expand_captures, fold_results
from tablebase.probe.locate import NO_CODE, Batch, codes_batch, locate
from tablebase.probe.lookup import (
    code_at_entry,
    gather_results,
    gather_values,
    probe_value,
    result_of_byte,
    result_quick,
    results_again,
    results_of_bytes,
    value_at_entry,
    values_again,
)
from tablebase.probe.pagedpart import PagedPart
from tablebase.probe.pagetable import PAGE_SHIFT
from tablebase.probe.status import BLOCK_MISSING, CAPTURES, FOUND, MUST_CAPTURE, NOT_OPEN
from tablebase.rules import Move, has_capture, legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.outcome import RESULT_NAMES, move_rank
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant, get_variant
from tablebase.storage.listing import first_readable_attrs, slice_files
from tablebase.storage.reader import has_values, read_slice
from tablebase.storage.slicefile import DATASET, WDL_DATASET, TableFileError, slice_path
from tablebase.storage.values import decode, result_of_code

Answer = tuple[int, int]  # a compiled look-up's (status, x): tablebase.probe.status
Read = Callable[[], Answer]  # a single probe's read, tried again once its block is cached


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


def normalise(pos: Position) -> tuple[Slice, tuple[int, int, int, int]]:
    """The slice and white-to-move bitboards of a position (colour-flipped if black moves)."""
    p = pos if pos.white_to_move else pos.flipped()
    boards = (p.white_men, p.white_kings, p.black_men, p.black_kings)
    return Slice(*(b.bit_count() for b in boards)), boards


class Tablebase:
    """A database directory of one variant, opened for probing (a context manager).

    ``cache``: the block cache's size in bytes or as text (``"256M"``), a
    :class:`BlockCache` shared with other databases, or None for the process's default
    (see the module docstring). ``resident_pieces``: the blocks of slices of up to this many
    pieces stay cached once read (default :data:`~tablebase.probe.cache.RESIDENT_PIECES`;
    0: none, every block is read as probes need it)."""

    def __init__(
        self,
        path: str | Path,
        variant: str | Variant | None = None,
        wdl_only: bool = False,
        cache: int | str | BlockCache | None = None,
        name: str | None = None,
        *,
        resident_pieces: int = RESIDENT_PIECES,
    ) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"database directory {self.path} does not exist")
        #: how error messages name the database: ``name`` if given (the service gives the
        #: variant's name, so that no server path reaches a client), else its directory
        self.name = Path(name) if name is not None else self.path
        attrs = first_readable_attrs(self.path)  # damaged and junk files passed over
        self.variant = get_variant(variant or attrs.get("variant") or self.path.name)
        #: True if probes give distances (the ``values`` part); False: win/draw/loss only.
        self.has_distances = bool(attrs) and has_values(attrs) and not wdl_only
        if isinstance(cache, BlockCache):
            self.cache = cache
        else:
            self.cache = default_cache() if cache is None else BlockCache(cache)
        self._values = PagedPart(self.cache, DATASET)
        self._wdl = PagedPart(self.cache, WDL_DATASET)
        self._opening = threading.Lock()
        self.resident_pieces = resident_pieces

    def __enter__(self) -> Tablebase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop this database's blocks from the cache and close its files (a later probe
        opens them again)."""
        self._values.close()
        self._wdl.close()

    @property
    def opened(self) -> int:
        """Number of slices whose files are open (their blocks read as probes need them)."""
        return len(set(self._values.sources) | set(self._wdl.sources))

    # --- slices -----------------------------------------------------------------------
    def _slice_files(self) -> list[Path]:
        """The slice files (``wmwkbmbk.h5``), in name order; others are left out
        (:func:`tablebase.storage.listing.slice_files`)."""
        return [f for _, f in slice_files(self.path).slices]

    def slices(self) -> list[Slice]:
        """Slices present in the directory (files not named as a slice of a database, e.g.
        ``9999.h5`` or ``0000.h5``, are left out: :func:`tablebase.storage.listing.slice_files`)."""
        return [s for s, _ in slice_files(self.path).slices]

    def table(self, s: Slice, fen: str = "") -> np.ndarray:
        """The values of slice ``s``, read whole and checked (outside the cache: an array
        of the slice's size; probes never call this)."""
        if not self.has_distances:
            raise DistancesUnavailableError(self.name)
        path = slice_path(self.path, s)
        if not path.exists():
            raise MissingSliceError(s.name, self.name, fen)
        return read_slice(path, self.variant, s)

    def covers(self, pos: Position | str) -> bool:
        """True if the database has the slice of this position (or the game is over)."""
        p = self._position(pos)
        s, _ = normalise(p)
        if s.wm + s.wk == 0:
            return True
        return slice_path(self.path, s).exists()

    def _open(self, part: PagedPart, s: Slice, fen: str = "") -> None:
        """Open part ``part`` of slice ``s`` (header checked, block index read); raises
        :class:`MissingSliceError` if the database lacks it, ``ValueError`` for a material
        where the side not to move has no pieces, :class:`TableFileError` for a bad file."""
        if s.bm + s.bk == 0:
            where = fen or f"a position of material {s.name}"
            raise ValueError(f"{where}: the side not to move has no pieces; game over")
        with self._opening:
            if part.is_open(s.code):
                return
            path = slice_path(self.path, s)
            if not path.exists():
                raise MissingSliceError(s.name, self.name, fen)
            source = open_part(path, self.variant, s, part.name)
            part.add(s.code, source, resident=s.pieces <= self.resident_pieces)

    def _open_codes(self, part: PagedPart, codes: np.ndarray, describe: Callable[[], str]) -> None:
        """Open ``part`` of every slice of the material codes given (those where the side
        to move has pieces)."""
        for code in np.flatnonzero(np.bincount(codes, minlength=4096)).tolist():
            if not part.is_open(code) and code >> 6:  # code >> 6: white has pieces
                self._open(part, slice_of_code(code), describe())

    def _read_one(
        self, part: PagedPart, p: Position, code: int, answer: Answer, again: Read, lost: int
    ) -> int:
        """Finish a single probe whose first try answered ``answer`` (a pair of
        :mod:`tablebase.probe.status`, as :func:`~tablebase.probe.pagetable.read_entry`
        answers): open the slice (``NOT_OPEN``), or read the missing block (``BLOCK_MISSING``,
        its page) and probe ``again``; ``lost`` if the side to move has no pieces."""
        status, x = answer
        while status != FOUND:
            if status == NOT_OPEN:
                s = slice_of_code(code) if code != NO_CODE else normalise(p)[0]
                if s.wm + s.wk == 0:
                    return lost
                self._open(part, s, p.fen())
                status, x = again()
            else:
                status, x = part.one(x, again)
        return int(x)

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
            raise DistancesUnavailableError(self.name)
        p = self._position(pos)
        v = self.variant
        key = (p.white_to_move, p.white_men, p.white_kings, p.black_men, p.black_kings)
        if v.king_move_limit == 0:  # the common case first: one compiled call when cached
            c = self.cache
            table = self._values.table
            code, idx, status, x = probe_value(table, c.arena, c.stamps, v.squares, v.per_row, key)
            if status == FOUND:
                return x
        else:
            code, idx = locate(v.squares, v.per_row, key)
            status, x = NOT_OPEN, code
        return self._value_missing(p, code, idx, (status, x))

    def _value_missing(self, p: Position, code: int, idx: int, answer: Answer) -> int:
        """Finish :meth:`probe_byte` of a position of slice ``code`` at entry ``idx`` (the
        entry without king runs; found again here where the variant has them) whose first
        read answered ``answer`` (:mod:`tablebase.probe.status`): open its slice, read its
        block."""
        part, c = self._values, self.cache
        if code == NO_CODE:  # more pieces of a kind than any slice holds
            s = normalise(p)[0]
            if s.wm + s.wk == 0:
                return 1
            raise MissingSliceError(s.name, self.name, p.fen())
        if self.variant.king_move_limit > 0:
            idx = _entry_with_runs(p)

        def again() -> Answer:
            return value_at_entry(part.table, c.arena, c.stamps, code, idx)

        status, x = answer
        if status == NOT_OPEN and part.is_open(code):
            status, x = again()
        if status == BLOCK_MISSING:  # its byte read directly, if the block is group-coded
            b = part.read_byte(x, int(part.table[code]) + idx)
            if b is not None:
                return b
        return self._read_one(part, p, code, (status, x), again, 1)

    def probe(self, pos: Position | str) -> tuple[int, int | None]:
        """(wdl, dtw) for the side to move; dtw is None for a draw, and for every position
        when the database is probed for win/draw/loss only (``has_distances`` False)."""
        if not self.has_distances:
            return self.probe_wdl(pos), None
        return decode(self.probe_byte(pos))

    def probe_many(self, positions: Sequence[Position]) -> list[tuple[int, int | None] | None]:
        """:meth:`probe` of each position, or None where it cannot be answered here (its
        slice missing, its file damaged: :meth:`probe` of that position alone raises the
        error). Each entry whose block is cached is read in one compiled call; the others
        are read together through :meth:`probe_batch` (their blocks grouped, each read once),
        or, where a variant has king runs or the database no distances, one at a time."""
        out: list[tuple[int, int | None] | None] = [None] * len(positions)
        v = self.variant
        rest = []
        if self.has_distances and v.king_move_limit == 0:
            c = self.cache
            table = self._values.table
            for i, p in enumerate(positions):
                if p.variant is not v and p.variant != v:
                    raise ValueError(f"position is {p.variant.name}, database is {v.name}")
                key = (p.white_to_move, p.white_men, p.white_kings, p.black_men, p.black_kings)
                status, x = probe_value(table, c.arena, c.stamps, v.squares, v.per_row, key)[2:]
                if status == FOUND:
                    out[i] = decode(x)
                else:
                    rest.append(i)
            if len(rest) > 1:
                try:
                    wm, wk, bm, bk = (
                        np.array([getattr(positions[i], b) for i in rest], dtype=np.uint64)
                        for b in ("white_men", "white_kings", "black_men", "black_kings")
                    )
                    stm = np.array([positions[i].white_to_move for i in rest], dtype=np.bool_)
                    raw = self.probe_batch(wm, wk, bm, bk, stm)
                except (LookupError, ValueError, TableFileError):
                    pass  # one of them cannot be answered: each alone below
                else:
                    for i, b in zip(rest, raw.tolist(), strict=True):
                        out[i] = decode(b)
                    return out
        else:
            rest = list(range(len(positions)))
        for i in rest:
            try:
                out[i] = self.probe(positions[i])
            except (LookupError, ValueError, TableFileError):
                pass
        return out

    def probe_wdl(self, pos: Position | str) -> int:
        """+1 win, 0 draw, -1 loss for the side to move."""
        if self.has_distances:
            return decode(self.probe_byte(pos))[0]
        p = self._position(pos)
        v = self.variant
        if v.king_move_limit > 0 and p.king_runs != ((0, 0), (0, 0)):
            return self._wdl_with_runs(p)
        c = self.cache
        key = (p.white_to_move, p.white_men, p.white_kings, p.black_men, p.black_kings)
        status, x = result_quick(
            self._wdl.table, c.arena, c.stamps, v.neighbours, v.rule_fields, key
        )
        return x if status == FOUND else self._wdl_missing(p, (status, x))

    def _wdl_missing(self, p: Position, answer: Answer) -> int:
        """Finish :meth:`probe_wdl` of a position whose first read answered ``answer``
        (:func:`~tablebase.probe.lookup.result_quick`): open its slice, read its block, or
        resolve its captures."""
        v = self.variant
        part, c = self._wdl, self.cache
        wtm = p.white_to_move
        boards = (p.white_men, p.white_kings, p.black_men, p.black_kings)
        pos = (wtm, *boards)

        def quick() -> Answer:
            return result_quick(part.table, c.arena, c.stamps, v.neighbours, v.rule_fields, pos)

        status, x = answer
        while status != FOUND:
            if status == CAPTURES:  # a capture position in a slice leaving captures
                one = [np.array([b], dtype=np.uint64) for b in boards]
                return int(self._wdl_captures(np.array([wtm]), *one)[0])
            if status == BLOCK_MISSING:  # x: the entry's address, counted in two-bit codes
                page = x >> (PAGE_SHIFT + 2)
                b = part.read_byte(page, x >> 2)  # read directly if group-coded
                if b is not None:
                    return result_of_byte(b, x)
                status, x = part.one(page, quick)
                continue
            if x == UNCODED:  # NOT_OPEN, and no slice can hold it
                raise MissingSliceError(normalise(p)[0].name, self.name, p.fen())
            self._open(part, slice_of_code(x), p.fen())
            status, x = quick()
        return int(x)

    def _wdl_with_runs(self, p: Position) -> int:
        """:meth:`probe_wdl` of a position in which a side has a king run going (Frisian):
        its own entry if the side to move cannot capture or its slice stores captures, else
        the best of its captures (each ends the capturer's run; ``play`` carries the other
        side's)."""
        s, _ = normalise(p)
        if s.wm + s.wk == 0:
            return -1  # the side to move has no pieces: lost
        part, c = self._wdl, self.cache
        if not part.is_open(s.code):
            self._open(part, s, p.fen())
        if not part.stores_captures(s.code) and has_capture(p):
            return max(-self.probe_wdl(play(p, m)) for m in legal_moves(p))
        e = _entry_with_runs(p)

        def again() -> Answer:
            return code_at_entry(part.table, c.arena, c.stamps, s.code, e)

        status, x = again()
        if status == BLOCK_MISSING:  # its byte read directly, if the block is group-coded
            at = int(part.table[s.code]) * 4 + e  # counted in two-bit codes
            b = part.read_byte(x, at >> 2)
            if b is not None:
                return result_of_byte(b, at)
        return result_of_code(self._read_one(part, p, s.code, (status, x), again, -1))

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
                MoveValue(
                    m, move_text(p, m, moves), RESULT_NAMES[res], None if dtw is None else dtw + 1
                )
            )
        out.sort(key=lambda mv: move_rank(mv.result, mv.dtw))
        return out

    def _batch(
        self, arrays: tuple[np.ndarray, ...], white_to_move: np.ndarray | bool
    ) -> tuple[np.ndarray, ...]:
        """The bitboards as contiguous uint64 arrays and the side to move as a bool array."""
        wm, wk, bm, bk = (np.ascontiguousarray(a, dtype=np.uint64) for a in arrays)
        wtm = np.ascontiguousarray(
            np.broadcast_to(np.asarray(white_to_move, dtype=np.bool_), wm.shape)
        )
        return wm, wk, bm, bk, wtm

    def _open_batch(
        self,
        part: PagedPart,
        wm: np.ndarray,
        wk: np.ndarray,
        bm: np.ndarray,
        bk: np.ndarray,
        wtm: np.ndarray,
    ) -> None:
        """Open ``part`` of every slice a batch reaches (done when a first read of the batch
        found a slice not open: a batch whose slices are open skips it);
        :class:`MissingSliceError` for a position no slice can hold."""
        codes = codes_batch(Batch(wtm, wm, wk, bm, bk), self.variant.squares)
        if codes.shape[0] and codes.min() < 0:
            i = int(np.argmin(codes))
            raise MissingSliceError(*self._missing(wm, wk, bm, bk, wtm, i))
        self._open_codes(part, codes, lambda: "")

    def _missing(
        self,
        wm: np.ndarray,
        wk: np.ndarray,
        bm: np.ndarray,
        bk: np.ndarray,
        wtm: np.ndarray,
        i: int,
    ) -> tuple[str, Path, str]:
        v = self.variant
        pos = Position(int(wm[i]), int(wk[i]), int(bm[i]), int(bk[i]), bool(wtm[i]), v)
        return normalise(pos)[0].name, self.name, pos.fen()

    def probe_batch(
        self,
        white_men: np.ndarray,
        white_kings: np.ndarray,
        black_men: np.ndarray,
        black_kings: np.ndarray,
        white_to_move: np.ndarray | bool = True,
    ) -> np.ndarray:
        """Stored values of many positions given as uint64 bitboard arrays (``decode`` them
        with :func:`decode`, or read them as in ``docs/FORMAT.md``): ``uint8``, or
        ``uint16`` if a slice the batch reaches stores 16-bit values. In a variant with king
        runs (Frisian) these are the positions in which neither side has a run going."""
        if not self.has_distances:
            raise DistancesUnavailableError(self.name)
        v = self.variant
        wm, wk, bm, bk, wtm = self._batch(
            (white_men, white_kings, black_men, black_kings), white_to_move
        )
        part = self._values
        out = np.empty(wm.shape[0], dtype=np.uint16)

        batch = Batch(wtm, wm, wk, bm, bk)

        def run() -> tuple[np.ndarray, int, int, int]:
            return gather_values(part.view(), batch, v.squares, v.per_row, v.king_move_limit, out)

        def again(sel: np.ndarray, addr: np.ndarray) -> np.ndarray:
            return values_again(part.view(), sel, addr, out)

        def put(sel: np.ndarray, addr: np.ndarray, raw: np.ndarray) -> None:
            out[sel] = raw  # one-byte values: two-byte ones are not group-coded

        need, missed, closed, wide = run()
        while closed:
            self._open_batch(part, wm, wk, bm, bk, wtm)
            need, missed, closed, wide = run()
        part.fill(need, missed, again, PAGE_SHIFT + 1, put)
        return out if wide else out.astype(np.uint8)

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
        wm, wk, bm, bk, wtm = self._batch(
            (white_men, white_kings, black_men, black_kings), white_to_move
        )
        out = self._wdl_direct(wtm, wm, wk, bm, bk)
        cap = np.flatnonzero(out == MUST_CAPTURE)
        if cap.shape[0]:
            out[cap] = self._wdl_captures(wtm[cap], wm[cap], wk[cap], bm[cap], bk[cap])
        return out

    def _wdl_direct(
        self, wtm: np.ndarray, wm: np.ndarray, wk: np.ndarray, bm: np.ndarray, bk: np.ndarray
    ) -> np.ndarray:
        """Results read from the WDL part (int8), :data:`~tablebase.probe.status.MUST_CAPTURE`
        for the positions that must be resolved through their captures."""
        v = self.variant
        part = self._wdl
        out = np.empty(wm.shape[0], dtype=np.int8)
        batch = Batch(wtm, wm, wk, bm, bk)

        def run() -> tuple[np.ndarray, int, int]:
            return gather_results(part.view(), v.rules, batch, out)

        def again(sel: np.ndarray, addr: np.ndarray) -> np.ndarray:
            return results_again(part.view(), sel, addr, out)

        def put(sel: np.ndarray, addr: np.ndarray, raw: np.ndarray) -> None:
            out[sel] = results_of_bytes(raw, addr)

        need, missed, closed = run()
        while closed:
            self._open_batch(part, wm, wk, bm, bk, wtm)
            need, missed, closed = run()
        part.fill(need, missed, again, PAGE_SHIFT + 2, put)
        return out

    def _wdl_captures(
        self, wtm: np.ndarray, wm: np.ndarray, wk: np.ndarray, bm: np.ndarray, bk: np.ndarray
    ) -> np.ndarray:
        """Results (int8) of positions that must capture, in slices leaving captures to the
        prober: the best, for the mover, of the negated results of the positions after its
        captures, which are read in turn (one level of the capture tree a call; a level's
        capture positions are resolved only under a position not already won)."""
        v = self.variant
        kwm, kwk, kbm, kbk, owner, best = expand_captures(v.rules, wtm, wm, wk, bm, bk)
        white = np.ones(kwm.shape[0], dtype=np.bool_)
        kids = self._wdl_direct(white, kwm, kwk, kbm, kbk)
        fold_results(best, owner, kids)
        pend = np.flatnonzero((kids == MUST_CAPTURE) & (best[owner] < 1))
        if pend.shape[0]:
            sub = self._wdl_captures(white[pend], kwm[pend], kwk[pend], kbm[pend], kbk[pend])
            fold_results(best, owner[pend], sub)
        return best


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
            tuple(np.uint64(b) for b in boards),
            runs,
            BINOM,
        )
    )


__all__ = [
    "BlockCache",
    "DistancesUnavailableError",
    "MissingSliceError",
    "MoveValue",
    "Tablebase",
    "TableFileError",
    "decode",
]
