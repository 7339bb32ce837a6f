"""Checking tables against the Python rules API: random positions, and each stored value
re-derived from the legal moves as ``legal_moves``/``play`` generate and play them
(independently of how the solver applies moves)."""

from __future__ import annotations

import random
from pathlib import Path

from placements import placement

import tablebase
from tablebase.rules import legal_moves, play
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant


def sample(
    variant: Variant, pieces: int, count: int, seed: int, runs: float = 0.0
) -> list[Position]:
    """Random legal placements of 2..``pieces`` pieces, both sides present, either to move;
    with probability ``runs`` a side with men and kings gets a random king run (variants
    with a king-move limit)."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        n = rng.randint(2, pieces)
        squares = rng.sample(range(1, variant.squares + 1), n)
        kinds = ["w", "b"] + [rng.choice("wWbB") for _ in range(n - 2)]
        pos = placement(variant, squares, kinds, rng.random() < 0.5)
        if runs:
            side_runs = []
            sides = ((pos.white_men, pos.white_kings), (pos.black_men, pos.black_kings))
            for men, kings in sides:
                on = [i + 1 for i in range(variant.squares) if kings >> i & 1]
                if men and on and rng.random() < runs:
                    side_runs.append((rng.choice(on), rng.randint(1, variant.king_move_limit)))
                else:
                    side_runs.append((0, 0))
            pos = pos.with_runs((side_runs[0], side_runs[1]))
        out.append(pos)
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
        wdl, dtw = (-1, 0) if not theirs else tb.probe(after)  # nothing left: lost at once
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


def check(db: Path, positions: list[Position]) -> None:
    """Every position's stored value equals the one re-derived from its moves."""
    bad = []
    with tablebase.open(db) as tb:
        for pos in positions:
            got, want = tb.probe(pos), value_from_moves(tb, pos)
            if got != want:
                bad.append(f"{pos.fen()}: stored {got}, from the moves {want}")
    assert not bad, f"{len(bad)} of {len(positions)} differ:\n" + "\n".join(bad[:10])
