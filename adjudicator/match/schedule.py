"""The games of a match or a tournament, in order: who plays white, who black, from which
opening.

Engines meet in *encounters* of two games from one opening, the colours swapped (the pair of
the pentanomial statistics). The pairs of engines: the two of a match; every two of a round
robin (``1-2, 1-3, ..., 2-3, ...``); the first engine against each other one in a gauntlet.
Round ``r`` plays opening ``order[r % len(order)]`` in an encounter of every pair, in the
order of the pairs; game ``k`` (from 1) is the ``k``-th of that list, the first engine of
its pair white in the encounter's first game. ``games`` per pair of engines (an odd number
leaves the last encounter one game). For two engines this is the match's old order: game
``k`` from opening ``(k - 1) // 2``, the first engine white when ``k`` is odd.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TOURNAMENTS = ("match", "roundrobin", "gauntlet")


@dataclass(frozen=True)
class Pairing:
    """One scheduled game."""

    number: int  # from 1
    white: int  # engine index
    black: int
    opening: int  # index in the openings list
    encounter: int  # the two games of one opening for one pair of engines share it
    first: int  # the pair's engines, first and second (white in the encounter's first game)
    second: int


def engine_pairs(engines: int, tournament: str) -> list[tuple[int, int]]:
    """The pairs of engines that meet."""
    if tournament not in TOURNAMENTS:
        raise ValueError(f"tournament must be one of {', '.join(TOURNAMENTS)}")
    if engines < 2:
        raise ValueError("a match needs at least two engines")
    if tournament == "match":
        if engines != 2:
            raise ValueError(
                f"a match is of two engines, not {engines}: give --tournament roundrobin "
                "or gauntlet for more"
            )
        return [(0, 1)]
    if tournament == "gauntlet":
        return [(0, j) for j in range(1, engines)]
    return [(i, j) for i in range(engines) for j in range(i + 1, engines)]


def opening_order(count: int, seed: int | None) -> list[int]:
    """The openings' order: as listed, or shuffled by ``seed`` (``random.Random``)."""
    order = list(range(count))
    if seed is not None:
        random.Random(seed).shuffle(order)
    return order


def build(engines: int, tournament: str, games: int, order: list[int]) -> list[Pairing]:
    """Every game, in order; ``games`` per pair of engines."""
    if games < 1:
        raise ValueError("games must be at least 1")
    if not order:
        raise ValueError("no openings")
    pairs = engine_pairs(engines, tournament)
    out: list[Pairing] = []
    encounter = 0
    for rnd in range((games + 1) // 2):
        opening = order[rnd % len(order)]
        for a, b in pairs:
            for colour in (0, 1):
                if 2 * rnd + colour >= games:
                    continue
                white, black = (a, b) if colour == 0 else (b, a)
                out.append(Pairing(len(out) + 1, white, black, opening, encounter, a, b))
            encounter += 1
    return out
