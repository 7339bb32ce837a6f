"""Random piece placements for the tests: pieces put on squares, a man on its own
promotion row crowned (so every placement is a legal position)."""

from __future__ import annotations

import random

from tablebase.rules.position import Position
from tablebase.rules.variants import Variant


def placement(variant: Variant, squares, kinds, white: bool) -> Position:
    """The position with a piece of kind ``w``/``W``/``b``/``B`` (white man, white king,
    black man, black king) on each PDN square of ``squares``; a man on the row where it
    would be crowned becomes a king."""
    boards = {"w": 0, "W": 0, "b": 0, "B": 0}
    for square, kind in zip(squares, kinds, strict=True):
        b = 1 << (square - 1)
        if kind == "w" and b & variant.white_promotion_row:
            kind = "W"
        if kind == "b" and b & variant.black_promotion_row:
            kind = "B"
        boards[kind] |= b
    return Position(boards["w"], boards["W"], boards["b"], boards["B"], white, variant)


def random_placements(variant: Variant, count: int, seed: int, most: int = 16) -> list[Position]:
    """``count`` random placements of 2..``most`` pieces, half of them kings on average,
    either side to move."""
    rng = random.Random(seed)
    out: list[Position] = []
    for _ in range(count):
        squares = rng.sample(range(1, variant.squares + 1), rng.randint(2, most))
        kinds = [rng.choice("wWbB") for _ in squares]
        out.append(placement(variant, squares, kinds, rng.random() < 0.5))
    return out
