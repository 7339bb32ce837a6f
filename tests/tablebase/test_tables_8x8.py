"""Russian and Brazilian tables: every sampled position's stored value equals the best value
over its legal moves, the moves generated and played by the Python rules API
(``legal_moves``/``play``, which honour a Russian man crowned mid-capture), independently of
how the solver applies moves. Plus positions whose value the rules decide at a glance."""

from __future__ import annotations

from pathlib import Path

import pytest
from tables_api_check import check, sample

import tablebase
from tablebase.rules.position import Position
from tablebase.rules.variants import BRAZILIAN, RUSSIAN
from tests.conftest import session_database


@pytest.fixture(scope="module")
def db3(tmp_path_factory) -> dict[str, Path]:
    return {v.name: session_database(tmp_path_factory, v.name, 3) for v in (RUSSIAN, BRAZILIAN)}


@pytest.mark.parametrize("variant", [RUSSIAN, BRAZILIAN], ids=lambda v: v.name)
def test_three_pieces_agree_with_the_rules_api(db3, variant):
    check(db3[variant.name], sample(variant, 3, 3000, seed=5))


def test_positions_decided_by_the_rules(db3):
    with tablebase.open(db3["russian"]) as tb:
        assert tb.variant is RUSSIAN
        assert tb.probe("W:WK32:BK1") == (0, None)  # a king each, off the main road: drawn
        # a1 has one diagonal, the one h8 holds: the white king must step onto it and is taken
        assert tb.probe("W:WK29:BK4") == (-1, 2)
        # a man about to be taken with nothing left: d4 takes c5 at once (black is bare)
        assert tb.probe("W:W18:B14") == (1, 1)
        # the man on d6 takes e7 and is crowned on f8; as a king it can take g7 too: the only
        # move takes both and black is bare
        assert tb.probe("W:W10:B7,8") == (1, 1)
    with tablebase.open(db3["brazilian"]) as tb:
        assert tb.variant is BRAZILIAN
        assert tb.probe("W:W10:B7,8") == (1, 1)  # the man passes f8, takes g7, black is bare
        assert tb.probe("W:WK32:BK1") == (0, None)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [RUSSIAN, BRAZILIAN], ids=lambda v: v.name)
def test_four_pieces_agree_with_the_rules_api(tmp_path_factory, variant):
    """At four pieces a Russian man crowned mid-capture can end the capture off the last row
    with a piece left to play against, so a solver that ignores the crowning shows here."""
    db = session_database(tmp_path_factory, variant.name, 4)
    # positions whose only move crowns a man on f8 mid-capture and ends on a3 or a5 with a
    # black piece left: the value after it differs for a king and for a man there
    crowning = ["W:W12:B8,15,K17", "W:W12:B2,8,17", "W:W11:B7,9,28", "W:W12:B8,17,27"]
    check(db, sample(variant, 4, 4000, seed=9) + [Position.from_fen(f, variant) for f in crowning])
