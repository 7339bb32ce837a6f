"""Frisian tables: every sampled position's stored value, king runs included, equals the
best value over its legal moves as the Python rules API generates and plays them
(``legal_moves`` honours the three-move king limit, ``play`` carries the runs), independently
of the solver's own run bookkeeping. Plus positions the rules decide at a glance."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner

import tablebase
from tablebase.cli import main
from tablebase.generator import run_pair_task
from tablebase.rules import legal_moves, play
from tablebase.rules.position import Position
from tablebase.rules.variants import FRISIAN
from tablebase.slices import build_pairs, parse_slice
from tablebase.storage import read_attrs, slice_path


@pytest.fixture(scope="module")
def db3(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("frisian") / "frisian"
    d.mkdir()
    for pair in build_pairs(3):
        run_pair_task("frisian", tuple(s.name for s in pair), str(d), threads=2)
    return d


def sample(pieces: int, count: int, seed: int) -> list[Position]:
    """Random placements of 2..``pieces`` pieces, either to move, with random king runs
    for a side that has men and kings."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        n = rng.randint(2, pieces)
        squares = rng.sample(range(1, FRISIAN.squares + 1), n)
        boards = {"w": 0, "W": 0, "b": 0, "B": 0}
        kinds = ["w", "b"] + [rng.choice("wWbB") for _ in range(n - 2)]
        for square, kind in zip(squares, kinds, strict=True):
            b = 1 << (square - 1)
            if kind == "w" and b & FRISIAN.white_promotion_row:
                kind = "W"
            if kind == "b" and b & FRISIAN.black_promotion_row:
                kind = "B"
            boards[kind] |= b
        runs = []
        for men, kings in ((boards["w"], boards["W"]), (boards["b"], boards["B"])):
            squares_k = [i + 1 for i in range(FRISIAN.squares) if kings >> i & 1]
            if men and squares_k and rng.random() < 0.8:
                runs.append((rng.choice(squares_k), rng.randint(1, 3)))
            else:
                runs.append((0, 0))
        pos = Position(
            boards["w"], boards["W"], boards["b"], boards["B"], rng.random() < 0.5, FRISIAN
        )
        out.append(pos.with_runs((runs[0], runs[1])))
    return out


def value_from_moves(tb, pos: Position) -> tuple[int, int | None]:
    """(wdl, plies) for the side to move from its successors' stored values."""
    wins, draws, losses = [], False, []
    for m in legal_moves(pos):
        after = play(pos, m)
        theirs = (
            after.white_men | after.white_kings
            if after.white_to_move
            else after.black_men | after.black_kings
        )
        wdl, dtw = (-1, 0) if not theirs else tb.probe(after)
        if wdl == -1:
            wins.append(dtw + 1)
        elif wdl == 0:
            draws = True
        else:
            losses.append(dtw + 1)
    if wins:
        return 1, min(wins)
    if draws:
        return 0, None
    return -1, max(losses) if losses else 0


def test_three_pieces_agree_with_the_rules_api(db3):
    bad = []
    positions = sample(3, 3000, seed=13)
    assert sum(1 for p in positions if p.king_runs != ((0, 0), (0, 0))) > 500
    with tablebase.open(db3) as tb:
        assert tb.variant is FRISIAN
        for pos in positions:
            got, want = tb.probe(pos), value_from_moves(tb, pos)
            if got != want:
                bad.append(f"{pos.fen()}: stored {got}, from the moves {want}")
    assert not bad, f"{len(bad)} of {len(positions)} differ:\n" + "\n".join(bad[:10])


def test_a_barred_king_can_leave_no_move(db3):
    """White's man on 6 is blocked by the black king on 1 (no capture: the jump would leave
    the board, and nothing stands on its row or column to take straight). White's king on
    50 has made three quiet moves in a row: it may not move again, so white has no legal
    move and has lost. With a shorter run the king moves and the position is not lost."""
    base = Position.from_fen("W:W6,K50:BK1", FRISIAN)
    barred = base.with_runs(((50, 3), (0, 0)))
    assert legal_moves(barred) == []
    with tablebase.open(db3) as tb:
        assert tb.probe(barred) == (-1, 0)
        for n in (0, 1, 2):
            free = base.with_runs(((50, n) if n else (0, 0), (0, 0)))
            assert legal_moves(free)
            assert tb.probe(free) != (-1, 0), n
        # the colour-flipped twin, black to move with its king's run of three: lost too
        twin = Position.from_fen("B:WK50:B45,K1", FRISIAN).with_runs(((0, 0), (1, 3)))
        assert legal_moves(twin) == []
        assert tb.probe(twin) == (-1, 0)


def test_slice_files_count_the_run_states(db3):
    s = parse_slice("1101")
    a = read_attrs(slice_path(db3, s))
    assert a["entries"] == s.size(FRISIAN) == s.boards(FRISIAN) * 4
    assert s.run_states(FRISIAN) == (4, 1)


def test_verify_and_stats_on_frisian(db3):
    r = CliRunner().invoke(main, ["verify", "--variant", "frisian", "--db", str(db3)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["stats", "--variant", "frisian", "--db", str(db3)])
    assert r.exit_code == 0, r.output
    assert "1101" in r.output
