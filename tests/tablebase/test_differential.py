"""Differential tests: our full legal move lists against independent engines.

Thousands of positions per variant (random playouts from the start, plus random king-heavy
placements) are compared as sets of (from, to, sorted captures) with every peer that is
installed (the ``peers`` extra). The peers:

* ``dame-rs`` (module ``dame``, Rust): International only.
* ``py-draughts`` (``draughts.boards.standard`` / ``.american`` / ``.russian`` /
  ``.brazilian``). Its American board offers quiet moves beside captures ("captures
  optional"); English makes capturing compulsory, so when it lists a capture we keep only its
  captures.
* ``pydraughts`` (``draughts.core.game.Game``): all four variants, slow, so it sees a sample.

Russian and Brazilian also get positions built around crowning in a capture (a man one jump
from its last row, more pieces around it), where the two rule sets part: the Russian man is
crowned and captures on as a king, the Brazilian one passes the row as a man. For those the
position after each move is compared as well (with pydraughts), so a move that crowns is
told from one that does not.
  It shares the import name ``draughts`` with py-draughts; with both installed the package
  ``__init__`` is whichever was installed last, but each one's own submodules (pydraughts'
  ``draughts.core``, py-draughts' ``draughts.boards``) still import, so both are reached
  through their submodules.

A peer that is not installed is skipped; the colour-flip symmetry test needs no peer.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from placements import random_placements

from tablebase.rules import legal_moves, play
from tablebase.rules.position import Position
from tablebase.rules.variants import BRAZILIAN, ENGLISH, INTERNATIONAL, RUSSIAN, Variant

Key = tuple[int, int, tuple[int, ...]]
PLAYOUT_POSITIONS = 4000
RANDOM_POSITIONS = 2000
CROWNING_POSITIONS = 1000  # Russian and Brazilian only
SLOW_PEER_EVERY = 6  # pydraughts sees every 6th position
VARIANTS = [INTERNATIONAL, ENGLISH, RUSSIAN, BRAZILIAN]
EIGHT_BY_EIGHT_FLYING = [RUSSIAN, BRAZILIAN]


def ours(pos: Position) -> set[Key]:
    return {(m.frm, m.to, m.captures) for m in legal_moves(pos)}


def playout_positions(variant: Variant, count: int, seed: int) -> list[Position]:
    """Positions met in random games from the start (every second ply kept)."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        pos = Position.start(variant)
        for ply in range(rng.randint(20, 200)):
            moves = legal_moves(pos)
            if not moves:
                break
            pos = play(pos, rng.choice(moves))
            if ply % 2 == 0:
                out.append(pos)
    return out[:count]


def crowning_positions(variant: Variant, count: int, seed: int) -> list[Position]:
    """White to move with a man one jump from its last row over a black piece, the landing
    square empty, and 2-10 more random pieces (often pieces to capture on from there)."""
    rng = random.Random(seed)
    out: list[Position] = []
    size = variant.size
    while len(out) < count:
        col = rng.randrange(size)
        frm = variant.square_at(2, col)
        if not frm:
            continue
        dc = rng.choice((-1, 1))
        over, land = variant.square_at(1, col + dc), variant.square_at(0, col + 2 * dc)
        if not (over and land):
            continue
        taken = {frm, over, land}
        boards = {"w": 1 << (frm - 1), "W": 0, "b": 0, "B": 0}
        boards[rng.choice("bB")] |= 1 << (over - 1)
        free = [s for s in range(1, variant.squares + 1) if s not in taken]
        for square in rng.sample(free, rng.randint(2, 10)):
            b = 1 << (square - 1)
            kind = rng.choice("wWbbB")  # black pieces more often: something to capture on
            if kind == "w" and b & variant.white_promotion_row:
                kind = "W"
            if kind == "b" and b & variant.black_promotion_row:
                kind = "B"
            boards[kind] |= b
        pos = Position(boards["w"], boards["W"], boards["b"], boards["B"], True, variant)
        if any(m.is_capture for m in legal_moves(pos)):
            out.append(pos)
    return out


_CACHE: dict[str, list[Position]] = {}


def positions_of(variant: Variant) -> list[Position]:
    if variant.name not in _CACHE:
        _CACHE[variant.name] = playout_positions(
            variant, PLAYOUT_POSITIONS, seed=2024
        ) + random_placements(variant, RANDOM_POSITIONS, seed=7)
        if variant in EIGHT_BY_EIGHT_FLYING:
            _CACHE[variant.name] += crowning_positions(variant, CROWNING_POSITIONS, seed=11)
    return _CACHE[variant.name]


def expected_count(variant: Variant) -> int:
    extra = CROWNING_POSITIONS if variant in EIGHT_BY_EIGHT_FLYING else 0
    return PLAYOUT_POSITIONS + RANDOM_POSITIONS + extra


def compare(variant: Variant, peer: Callable[[Position], set[Key]], every: int = 1) -> int:
    """Compare on every ``every``-th position; fails listing the first differences."""
    bad = []
    checked = 0
    for pos in positions_of(variant)[::every]:
        want, got = peer(pos), ours(pos)
        checked += 1
        if want != got:
            bad.append(f"{pos.fen()}: missing {sorted(want - got)}, extra {sorted(got - want)}")
    assert not bad, f"{len(bad)} of {checked} positions differ:\n" + "\n".join(bad[:10])
    return checked


# --- peers -------------------------------------------------------------------------------


def _dame():
    return pytest.importorskip("dame", reason="dame-rs (peers extra) not installed")


def _py_draughts_board(variant: Variant):
    """py-draughts' board class, imported by module path: with pydraughts installed after
    it, the package ``__init__`` is pydraughts' and does not export the boards."""
    module = {"international": "standard", "english": "american"}.get(variant.name, variant.name)
    mod = pytest.importorskip(
        f"draughts.boards.{module}", reason="py-draughts (peers extra) not installed"
    )
    return mod.Board


def _pydraughts_game():
    mod = pytest.importorskip("draughts.core.game", reason="pydraughts not installed")
    if not hasattr(mod, "Game"):
        pytest.skip("draughts.core.game is not pydraughts")
    return mod.Game


def test_position_counts():
    for variant in VARIANTS:
        positions = positions_of(variant)
        assert len(positions) == expected_count(variant) >= 2000
        assert len({p.fen() for p in positions}) > 0.9 * len(positions)
        assert sum(any(m.is_capture for m in legal_moves(p)) for p in positions) > 300
        assert sum((p.white_kings | p.black_kings) != 0 for p in positions) > RANDOM_POSITIONS


def test_dame_rs_international():
    dame = _dame()

    def peer(pos: Position) -> set[Key]:
        board = dame.Board(pos.fen())
        return {(m.from_square, m.to_square, tuple(sorted(m.captured))) for m in board.legal_moves}

    assert compare(INTERNATIONAL, peer) == expected_count(INTERNATIONAL)


def test_crowning_positions_part_the_two_rule_sets():
    """The crowning positions are the ones where Russian and Brazilian differ."""
    differ = 0
    for rus in positions_of(RUSSIAN)[-CROWNING_POSITIONS:]:
        bra = Position(
            rus.white_men, rus.white_kings, rus.black_men, rus.black_kings, True, BRAZILIAN
        )
        crowned = [m for m in legal_moves(rus) if m.crowns and not (m.to - 1) < RUSSIAN.per_row]
        differ += ours(rus) != ours(bra)
        assert all(play(rus, m).white_kings >> (m.to - 1) & 1 for m in crowned)
    assert differ > CROWNING_POSITIONS // 4


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_py_draughts(variant):
    board_class = _py_draughts_board(variant)

    def peer(pos: Position) -> set[Key]:
        board = board_class.from_fen(pos.fen())
        moves = {
            (
                m.square_list[0] + 1,
                m.square_list[-1] + 1,
                tuple(sorted(c + 1 for c in m.captured_list)),
            )
            for m in board.legal_moves
        }
        if any(caps for _, _, caps in moves):  # American board: captures are optional there
            moves = {m for m in moves if m[2]}
        return moves

    assert compare(variant, peer) == expected_count(variant)


@pytest.mark.slow  # 3-8 s a variant (an independent engine's move lists): CI's slow tier
@pytest.mark.parametrize(
    ("variant", "name"),
    [
        (INTERNATIONAL, "standard"),
        (ENGLISH, "english"),
        (RUSSIAN, "russian"),
        (BRAZILIAN, "brazilian"),
    ],
    ids=["intl", "eng", "rus", "bra"],
)
def test_pydraughts(variant, name):
    game_class = _pydraughts_game()

    def peer(pos: Position) -> set[Key]:
        moves, captures = game_class(variant=name, fen=pos.fen()).legal_moves()
        return {
            (legs[0][0], legs[-1][1], tuple(sorted(c for c in caps if c is not None)))
            for legs, caps in zip(moves, captures, strict=True)
        }

    assert compare(variant, peer, every=SLOW_PEER_EVERY) >= 1000


@pytest.mark.slow  # 6-7 s a variant: CI's slow tier
@pytest.mark.parametrize(
    ("variant", "name"), [(RUSSIAN, "russian"), (BRAZILIAN, "brazilian")], ids=["rus", "bra"]
)
def test_pydraughts_positions_after_crowning_captures(variant, name):
    """Every capture of the crowning positions played by both: the same position follows
    (a man crowned mid-capture is a king where the Russian move ends)."""
    game_class = _pydraughts_game()
    bad = []
    crowned = 0
    for pos in positions_of(variant)[-CROWNING_POSITIONS:]:
        game = game_class(variant=name, fen=pos.fen())
        theirs = {}
        for legs, caps in zip(*game.legal_moves(), strict=True):
            after = game.copy()
            after.push(legs)
            key = (legs[0][0], legs[-1][1], tuple(sorted(c for c in caps if c is not None)))
            theirs[key] = Position.from_fen(after.get_li_fen(), variant)
        mine = {(m.frm, m.to, m.captures): play(pos, m) for m in legal_moves(pos)}
        crowned += sum(m.crowns and m.to > variant.per_row for m in legal_moves(pos))
        if mine != theirs:
            bad.append(pos.fen())
    assert not bad, f"{len(bad)} positions differ, first: {bad[:5]}"
    if variant is RUSSIAN:
        assert crowned > 100  # crowned mid-capture, ending off the last row


# --- no peer needed: colour-flip symmetry -------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_colour_flip_symmetry(variant):
    """Rotating the board and swapping colours maps the move list square by square."""
    n = variant.squares + 1

    def flipped_moves(pos: Position) -> set[Key]:
        return {
            (n - f, n - t, tuple(sorted(n - c for c in caps))) for f, t, caps in ours(pos.flipped())
        }

    assert compare(variant, flipped_moves) == expected_count(variant)
