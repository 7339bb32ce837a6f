"""Helpers for the adjudicator tests: building legal games move by move, PDN text, a fake
tablebase backed by a dict."""

from __future__ import annotations

from collections.abc import Callable

from adjudicator.drawrules import moved_man, position_key
from tablebase.rules import Move, has_capture, legal_moves, play
from tablebase.rules.notation import move_text, parse_move
from tablebase.rules.position import Position
from tablebase.rules.variants import get_variant


def position(fen: str, variant: str = "international") -> Position:
    return Position.from_fen(fen, get_variant(variant))


def apply(pos: Position, texts: list[str]) -> Position:
    for t in texts:
        pos = play(pos, parse_move(pos, t))
    return pos


def walk(
    pos: Position,
    plies: int,
    *,
    allow: Callable[[Position, Move], bool] | None = None,
    seen: dict | None = None,
) -> list[str]:
    """``plies`` quiet king moves from ``pos`` that never offer a capture and never repeat a
    position (depth-first with backtracking); raises if no such walk exists."""
    seen = {} if seen is None else seen
    seen[position_key(pos)] = seen.get(position_key(pos), 0) + 1
    out: list[str] = []

    def go(p: Position, left: int) -> bool:
        if left == 0:
            return True
        moves = legal_moves(p)
        for m in moves:
            if m.is_capture or moved_man(p, m) or (allow and not allow(p, m)):
                continue
            q = play(p, m)
            k = position_key(q)
            if seen.get(k) or has_capture(q) or not legal_moves(q):
                continue
            seen[k] = 1
            out.append(move_text(p, m, moves))
            if go(q, left - 1):
                return True
            out.pop()
            del seen[k]
        return False

    if not go(pos, plies):
        raise AssertionError(f"no {plies}-ply quiet king walk from {pos.fen()}")
    return out


def pdn(moves: list[str], fen: str | None = None, result: str = "*", **tags: str) -> str:
    """A PDN game text with the given moves (numbered from the FEN's side to move)."""
    head = dict(tags)
    if fen:
        head["FEN"] = fen
    lines = [f'[{k} "{v}"]' for k, v in head.items()]
    body = " ".join(moves) + f" {result}"
    return "\n".join(lines) + "\n\n" + body + "\n"


class MissingSlice(LookupError):
    def __init__(self, name: str) -> None:
        self.slice = name
        super().__init__(f"slice {name} is not in the database")


class FakeTablebase:
    """The prober's interface over a dict ``fen -> (wdl, dtw)``; other positions get
    ``default`` or raise :class:`MissingSlice`."""

    def __init__(
        self,
        entries: dict[str, tuple[int, int | None]],
        variant="international",
        default: tuple[int, int | None] | None = (0, None),
        missing: str = "",
    ) -> None:
        self.variant = get_variant(variant)
        self.entries = {self._key(f): v for f, v in entries.items()}
        self.default = default
        self.missing = missing
        self.probes = 0

    def _key(self, fen: str):
        return position_key(Position.from_fen(fen, self.variant))

    def _get(self, pos: Position) -> tuple[int, int | None]:
        self.probes += 1
        v = self.entries.get(position_key(pos))
        if v is not None:
            return v
        if self.default is None:
            raise MissingSlice(self.missing or "unknown")
        return self.default

    def covers(self, pos: Position) -> bool:
        return position_key(pos) in self.entries or self.default is not None

    def probe_wdl(self, pos: Position) -> int:
        return self._get(pos)[0]

    def probe_dtw(self, pos: Position) -> int | None:
        return self._get(pos)[1]

    def best_moves(self, pos: Position) -> list:
        return []
