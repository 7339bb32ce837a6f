"""Compiling the adjudicator's kernels before its first game: ``adjudicator compile``.

The replay loop (:mod:`adjudicator.replaycore`) and the draw rules it runs are compiled by
numba the first time a game is replayed (about ten seconds on a 2-core machine: the first
``adjudicator rule``, the service's first ruling, the referee's first game) and kept in the
cache of this version of the sources (:mod:`tablebase.jitcache`). :func:`warm_up` replays
instead, for each variant, games of random legal moves from the start position (captures,
crowning and the counts of the draw rules on the way) and one from a kings ending that runs
into its count, so that they are compiled once, at install (``make`` runs it). Probing the
tables is compiled by ``tablebase compile``.
"""

from __future__ import annotations

import random
import time

from adjudicator.ruling import rule_game
from tablebase.rules import legal_moves, play
from tablebase.rules.notation import move_text
from tablebase.rules.position import Position
from tablebase.rules.variants import get_variant

GAMES = 4  # random games a variant
PLIES = 240  # at most this many plies a game


def random_game(variant: str, seed: int, plies: int = PLIES, fen: str | None = None) -> list[str]:
    """The move texts of a game of random legal moves from the variant's start position (or
    ``fen``), until a side cannot move or ``plies`` plies; the same for the same seed."""
    rng = random.Random(seed)
    pos = Position.from_fen(fen, variant) if fen else Position.start(variant)
    texts = []
    for _ in range(plies):
        moves = legal_moves(pos)
        if not moves:
            break
        move = rng.choice(moves)
        texts.append(move_text(pos, move, moves))
        pos = play(pos, move)
    return texts


def warm_up(variants: list[str]) -> float:
    """Replay :data:`GAMES` random games and a kings ending of each of ``variants`` with the
    draw rules (compiling what they need, if this version of the sources has not yet);
    returns the seconds it took."""
    t0 = time.perf_counter()
    for name in variants:
        v = get_variant(name)
        for seed in range(GAMES):
            rule_game(random_game(name, seed), variant=v)
        kings = f"W:WK{v.squares},K{v.squares - 1}:BK1"  # no capture for either side at first
        rule_game(random_game(name, 0, fen=kings), variant=v, fen=kings)
    return time.perf_counter() - t0
