"""Scan's material id and dense index (``tablebase.scanbb.index``): entries of concrete
positions worked out by hand, sizes counted combinatorially, a plain re-reading of the index
definition square by square, and entry <-> position round trips over whole small ids."""

from __future__ import annotations

import random
from math import comb

import pytest

from tablebase.rules.position import Position
from tablebase.rules.variants import ENGLISH, FRISIAN, INTERNATIONAL
from tablebase.scanbb.index import (
    ScanFormatError,
    ScanId,
    position_of_entry,
    scan_entry_of,
    scan_ids,
    variant_suffix,
)


def plain_entry(pos: Position) -> int:
    """Scan's entry of a position by its definition, square by square (1-based squares,
    counts of squares above or below, no bitboards)."""
    p = pos if pos.white_to_move else pos.flipped()

    def squares(b: int) -> list[int]:
        return [s for s in range(1, 51) if b >> (s - 1) & 1]

    wm, bm, wk, bk = (
        squares(p.white_men),
        squares(p.black_men),
        squares(p.white_kings),
        squares(p.black_kings),
    )
    men = set(wm) | set(bm)

    def colex(xs: list[int]) -> int:
        return sum(comb(x, i + 1) for i, x in enumerate(sorted(xs)))

    r_wm = colex([50 - s for s in wm])
    r_bm = colex([s - 1 for s in bm])
    r_wk = colex([sum(1 for t in range(s + 1, 51) if t not in men) for s in wk])
    r_bk = colex([sum(1 for t in range(1, s) if t not in men and t not in wk) for s in bk])
    f = 50 - len(wm) - len(bm)
    board = ((r_wm * comb(45, len(bm)) + r_bm) * comb(f, len(wk)) + r_wk) * comb(
        f - len(wk), len(bk)
    ) + r_bk
    if not pos.variant.king_move_limit:
        return board
    cw = 1 + 3 * len(wk) if wm else 1
    cb = 1 + 3 * len(bk) if bm else 1
    (wsq, wn), (bsq, bn) = p.king_runs
    code_w = wn + 3 * sum(1 for s in wk if s > wsq) if wn else 0  # kings above the wolf
    code_b = bn + 3 * sum(1 for s in bk if s < bsq) if bn else 0  # kings below
    return (board * cw + code_w) * cb + code_b


@pytest.mark.parametrize(
    ("fen", "name", "entry"),
    [
        ("W:W50:B1", "1100", 0),  # white man x = 50 - 50 = 0, black man x = 1 - 1 = 0
        ("W:W46:B1", "1100", 4 * 45),  # white man x = 4
        ("W:W6:B45", "1100", 44 * 45 + 44),  # the last entry of 45 * 45
        ("B:W46:B5", "1100", 4 * 45 + 4),  # black to move: turned round, W:W46:B5
        ("W:WK50:BK1", "0011", 0),
        ("W:WK1:BK50", "0011", 49 * 49 + 48),  # 49 free squares above 1; 48 below 50 (not 1)
        ("W:W40,K10,K20:B1", "1120", 508_370),  # see test_frisian_runs_by_hand
    ],
)
def test_entries_worked_out_by_hand(fen: str, name: str, entry: int) -> None:
    sid, got = scan_entry_of(Position.from_fen(fen))
    assert (sid.name, got) == (name, entry)
    assert plain_entry(Position.from_fen(fen)) == entry


def test_frisian_runs_by_hand() -> None:
    # W:W40,K10,K20:B1: men x 10 and 0 -> (10 * 45 + 0); kings: 39 and 29 squares without
    # men above 10 and 20 -> C(29, 1) + C(39, 2) = 770; board 450 * C(48, 2) + 770 = 508370.
    # White has 1 + 3 * 2 = 7 run codes, black (no kings) 1.
    base = Position.from_fen("W:W40,K10,K20:B1", FRISIAN)
    assert scan_entry_of(base) == (ScanId(1, 1, 2, 0), 508_370 * 7)
    # the king on 20 made the last two moves: no white king above it, code 2 + 3 * 0
    on20 = base.with_runs(((20, 2), (0, 0)))
    assert scan_entry_of(on20)[1] == 508_370 * 7 + 2
    # the king on 10, one move: king 20 is above it, code 1 + 3 * 1
    on10 = base.with_runs(((10, 1), (0, 0)))
    assert scan_entry_of(on10)[1] == 508_370 * 7 + 4
    for p in (base, on20, on10):
        assert plain_entry(p) == scan_entry_of(p)[1]


def test_black_to_move_reads_the_turned_position_with_its_runs() -> None:
    pos = Position.from_fen("B:W12,K30,K44:B7,K3,K25", FRISIAN).with_runs(((30, 1), (3, 2)))
    assert scan_entry_of(pos) == scan_entry_of(pos.flipped())
    assert scan_entry_of(pos)[1] == plain_entry(pos)


def sizes_by_counting(sid: ScanId, frisian: bool) -> int:
    size = comb(45, sid.wm) * comb(45, sid.bm)
    size *= comb(50 - sid.wm - sid.bm, sid.wk) * comb(50 - sid.wm - sid.bm - sid.wk, sid.bk)
    if frisian:
        size *= (1 + 3 * sid.wk if sid.wm else 1) * (1 + 3 * sid.bk if sid.bm else 1)
    return size


def test_ids_and_their_sizes() -> None:
    ids = scan_ids(5)
    # every split of 2..5 pieces with a piece on each side: the 4-part compositions of n
    # minus those with a side empty
    expected = sum(comb(n + 3, 3) - 2 * (n + 1) for n in range(2, 6))
    assert len(ids) == len(set(ids)) == expected == 85  # 4 + 12 + 25 + 44
    assert all(s.wm + s.wk > 0 and s.bm + s.bk > 0 for s in ids)
    for sid in ids:
        assert sid.size(INTERNATIONAL) == sizes_by_counting(sid, False)
        assert sid.size(FRISIAN) == sizes_by_counting(sid, True)
    assert ScanId(1, 2, 0, 1).slice.name == "1021"  # ours: wm wk bm bk
    assert ScanId.of_slice(ScanId(1, 2, 0, 1).slice) == ScanId(1, 2, 0, 1)
    assert ScanId(4, 1, 0, 0).size(INTERNATIONAL) == comb(45, 4) * 45


@pytest.mark.parametrize(
    "sid", [ScanId(1, 1, 0, 0), ScanId(0, 0, 1, 1), ScanId(1, 0, 0, 1), ScanId(0, 1, 1, 0)]
)
def test_every_entry_round_trips(sid: ScanId) -> None:
    """Each entry is one position (or none where two men share a square), whose entry is
    the same; the positions are as many as counted."""
    size = sid.size(INTERNATIONAL)
    seen = set()
    for entry in range(size):
        pos = position_of_entry(INTERNATIONAL, sid, entry)
        if pos is None:
            continue
        assert scan_entry_of(pos) == (sid, entry)
        assert plain_entry(pos) == entry
        seen.add(pos)
    # a white and a black man can share the 40 squares 6..45: those entries are no position
    assert len(seen) == (size - 40 if sid.wm and sid.bm else size)


@pytest.mark.parametrize("sid", [ScanId(1, 1, 1, 0), ScanId(1, 0, 1, 1), ScanId(2, 1, 2, 0)])
def test_frisian_entries_with_runs_round_trip(sid: ScanId) -> None:
    rng = random.Random(sid.name)
    size = sid.size(FRISIAN)
    runs = 0
    for entry in [0, size - 1, *(rng.randrange(size) for _ in range(1500))]:
        pos = position_of_entry(FRISIAN, sid, entry)
        if pos is None:
            continue
        assert scan_entry_of(pos) == (sid, entry)
        assert plain_entry(pos) == entry
        runs += pos.king_runs != ((0, 0), (0, 0))
    assert runs > 1000  # most entries of these ids have a run


def test_variants_without_scan_bitbases_are_refused() -> None:
    assert variant_suffix(INTERNATIONAL) == "" and variant_suffix(FRISIAN) == "_frisian"
    with pytest.raises(ScanFormatError, match="no bitbases of english"):
        variant_suffix(ENGLISH)
    with pytest.raises(ScanFormatError, match="at most 7"):
        scan_ids(8)
