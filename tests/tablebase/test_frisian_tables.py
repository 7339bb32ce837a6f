"""Frisian tables: every sampled position's stored value, king runs included, equals the
best value over its legal moves as the Python rules API generates and plays them
(``legal_moves`` honours the three-move king limit, ``play`` carries the runs), independently
of the solver's own run bookkeeping. Plus positions the rules decide at a glance."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tables_api_check import check, sample

import tablebase
from tablebase.cli import main
from tablebase.material.slices import parse_slice
from tablebase.rules import legal_moves
from tablebase.rules.position import Position
from tablebase.rules.variants import FRISIAN
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import slice_path
from tests.conftest import session_database


@pytest.fixture(scope="module")
def db3(tmp_path_factory) -> Path:
    """The session's 2-3 piece Frisian database (read only)."""
    return session_database(tmp_path_factory, "frisian", 3)


def test_three_pieces_agree_with_the_rules_api(db3):
    positions = sample(FRISIAN, 3, 3000, seed=13, runs=0.8)
    assert sum(1 for p in positions if p.king_runs != ((0, 0), (0, 0))) > 500
    check(db3, positions)


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
