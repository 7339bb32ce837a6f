"""Replaying one game with the rules engine and the draw rules, up to its first terminal event.

The loop is compiled (:mod:`adjudicator.replaycore`): per ply it generates the legal moves
once, matches the written move, makes it and advances the repetition history and the running
count of the variant's draw rules (:mod:`tablebase.rules.drawrules`). After each ply, in this
order: the side to move has no pieces or no legal move (it has lost: winning takes precedence
over any count expiring on the same ply), then threefold repetition, then the move counts. A
move, multi-capture included, is one ply, so no rule is ever applied in the middle of a
capture. The start position is checked the same way.

Moves the compiled loop cannot match alone come here (:meth:`_Replayer.resolve`), where the
rules stay exact and the spelling is forgiven only where it is unambiguous, each forgiveness
reported in ``warnings`` (or an error with ``strict``):

- paths (``26x37x48``) and from-to-captured forms are read by
  :func:`tablebase.rules.notation.parse_move`;
- a wrong separator (``30-39`` for the capture ``30x39``, ``38x33`` for the quiet ``38-33``)
  is accepted when exactly one legal move has those squares with the other separator;
- a short capture matching several legal captures (``10x26`` for ``10x17x26`` and
  ``10x19x26``) is resolved by the rest of the game: each candidate is played and the
  following moves replayed (to the end, events not stopping them); exactly one candidate
  must let them all replay legally, otherwise the error lists the candidates.

An illegal or ambiguous move stops the replay with a :class:`ReplayError` naming the game,
the move number and side, the move as written and the legal moves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from adjudicator import replaycore as core
from adjudicator.drawrules import THREEFOLD, Count, Counter, RuleOptions
from adjudicator.pdn import PdnGame, PdnMove
from tablebase.rules.movebuffer import new_move_buffer, new_workspace
from tablebase.rules.moves import Move, legal_moves
from tablebase.rules.notation import MoveError, move_text, parse_move, parse_squares
from tablebase.rules.position import NO_RUNS, Position
from tablebase.rules.variants import Variant

NO_PIECES, NO_MOVES = "no-pieces", "no-moves"
LOSSES = frozenset({NO_PIECES, NO_MOVES})
MAX_LOOKAHEAD_DEPTH = 4  # nested short captures resolved inside a lookahead
MAX_SQUARE = 1 << 12  # larger written numbers are not squares of any board


class ReplayError(ValueError):
    """An illegal or ambiguous move: where it is, what was written, what was legal."""

    def __init__(
        self,
        game: int,
        ply: int,
        number: int,
        colour: str,
        text: str,
        error: MoveError,
        note: str = "",
    ) -> None:
        self.game = game
        self.ply = ply
        self.number = number
        self.colour = colour
        self.text = text
        self.reason = error.reason
        self.legal = list(error.candidates)
        self.kind = "ambiguous-move" if error.reason == "ambiguous" else "illegal-move"
        label = "matches" if self.kind == "ambiguous-move" else "legal"
        listed = ", ".join(self.legal) if self.legal else "none"
        extra = f"; {note}" if note else ""
        super().__init__(
            f"game {game}, move {number} ({colour}) {text}: {error.reason} "
            f"({label}: {listed}){extra}"
        )


@dataclass
class GameState:
    """The draw-rule state where a replay stopped: the running count and the positions seen
    since the last irreversible move (with how often)."""

    counter: Counter
    count: Count
    seen: dict[tuple, int]
    threefold: bool

    def seen_twice(self) -> frozenset[tuple]:
        """Keys of positions that a third occurrence would draw."""
        if not self.threefold:
            return frozenset()
        return frozenset(k for k, n in self.seen.items() if n >= 2)


@dataclass
class Replay:
    """What a replay found: the final position, how many plies were played, the event."""

    start: Position
    position: Position
    state: GameState
    ply: int = 0
    event: str | None = None  # "no-pieces", "no-moves", "threefold", "25-move", ...
    error: ReplayError | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def variant(self) -> Variant:
        return self.start.variant

    def white_score(self) -> int | None:
        """2 white won, 1 draw, 0 white lost, None when no event ended the game."""
        if self.event is None:
            return None
        if self.event in LOSSES:
            return 0 if self.position.white_to_move else 2
        return 1


def terminal(pos: Position) -> str | None:
    """``"no-pieces"`` or ``"no-moves"`` when the side to move has lost, else None."""
    own = pos.white_men | pos.white_kings if pos.white_to_move else pos.black_men | pos.black_kings
    if not own:
        return NO_PIECES
    if not legal_moves(pos):
        return NO_MOVES
    return None


def colour_name(pos: Position) -> str:
    return "white" if pos.white_to_move else "black"


def replay(
    moves: PdnGame | Iterable[PdnMove | str],
    start: Position,
    options: RuleOptions | None = None,
    *,
    game: int = 1,
    stop: bool = True,
) -> Replay:
    """Replay ``moves`` from ``start`` with full legality checks and the draw rules.

    With ``stop`` (the default) the replay ends at the first terminal event; without, it goes
    on through the whole move list (an illegal move still stops it) and ``event`` is the first
    one found. Move numbers in errors are the ones written in the PDN, or counted from the
    start for plain move texts.
    """
    if isinstance(moves, PdnGame):
        game, moves = moves.index, moves.moves
    return _Replayer(list(moves), start, options or RuleOptions(), game).run(stop)


class _Buffers(threading.local):
    """Per-thread move buffer and capture workspace (allocated once per thread)."""

    def __init__(self) -> None:
        self.moves = new_move_buffer()
        self.ws = new_workspace()


_BUFFERS = _Buffers()


_EVENT_NAMES = {core.EV_NO_PIECES: NO_PIECES, core.EV_NO_MOVES: NO_MOVES}


class _Replayer:
    def __init__(
        self, moves: list[PdnMove | str], start: Position, options: RuleOptions, game: int
    ) -> None:
        self.moves = moves
        try:
            self.texts = [m.text for m in moves]  # type: ignore[union-attr]
        except AttributeError:
            self.texts = [m.text if isinstance(m, PdnMove) else str(m) for m in moves]
        self.start = start
        self.options = options
        self.game = game
        self.variant = start.variant
        self.counter = options.counter(self.variant)
        self.table = self.counter.table
        self.squares, self.offsets, self.captures = _move_arrays(moves, self.texts, self.variant)
        self.warnings: list[str] = []
        self.buffers = _BUFFERS

    # ---- state arrays

    def _initial(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.start
        boards = np.array([s.white_men, s.white_kings, s.black_men, s.black_kings], dtype=np.uint64)
        state = np.zeros(core.STATE_FIELDS, dtype=np.int64)
        count = self.counter.start(s, self.options.elapsed)
        state[core.S_WHITE] = int(s.white_to_move)
        state[core.S_RULE], state[core.S_LIMIT] = count.index, count.limit
        state[core.S_ELAPSED] = count.elapsed
        if s.king_runs != NO_RUNS:  # zeros (no run) otherwise
            sides = (core.S_RUN_WHITE_SQ, core.S_RUN_BLACK_SQ)
            for at, (sq, n) in zip(sides, s.king_runs, strict=True):
                state[at], state[at + 1] = (sq - 1, n) if n else (-1, 0)
        history = np.zeros((len(self.moves) + 2, 5), dtype=np.uint64)
        history[0, :4] = boards
        history[0, 4] = state[core.S_WHITE]
        state[core.S_NHIST] = 1
        return boards, state, history

    def _position(self, boards: np.ndarray, state: np.ndarray) -> Position:
        runs = NO_RUNS
        if state[core.S_RUN_WHITE_N] or state[core.S_RUN_BLACK_N]:
            runs = tuple(  # type: ignore[assignment]
                (int(state[at]) + 1, int(state[at + 1])) if state[at + 1] else (0, 0)
                for at in (core.S_RUN_WHITE_SQ, core.S_RUN_BLACK_SQ)
            )
        return Position(
            int(boards[0]),
            int(boards[1]),
            int(boards[2]),
            int(boards[3]),
            bool(state[core.S_WHITE]),
            self.variant,
            king_runs=runs,
        )

    def _run(self, boards, state, history, first, stop, forced):
        v = self.variant
        b = self.buffers
        code, ply = core.run(
            v.rules,
            core.Game(self.table, boards, state, history),
            core.MoveText(self.squares, self.offsets, self.captures),
            (first, len(self.moves)),
            stop,
            forced,
            (b.moves, b.ws),
        )
        return int(code), int(ply)

    # ---- the replay

    def run(self, stop: bool) -> Replay:
        boards, state, history = self._initial()
        v, b = self.variant, self.buffers
        core.start_event(v.rules, self.table, boards, state, b.moves, b.ws)
        error = None
        ply = 0
        if not (stop and state[core.S_EVENT] != core.EV_NONE):
            first, forced = 0, _NO_MOVE
            while True:
                code, i = self._run(boards, state, history, first, stop, forced)
                if code != core.NEED:
                    ply = i
                    break
                pos = self._position(boards, state)
                found = self.resolve(pos, i, boards, state, history, 0)
                if isinstance(found, ReplayError):
                    error, ply = found, i + 1
                    break
                first, forced = i, _forced(found)
            if error is not None:
                ply = i  # the plies played before the illegal one
        result = Replay(
            self.start,
            self._position(boards, state),
            self._state(state, history),
            ply,
            warnings=self.warnings,
        )
        if state[core.S_EVENT] != core.EV_NONE:
            result.event = self._event_name(state)
            if stop:
                result.ply = int(state[core.S_EVENT_PLY])
        if error is not None:
            error.ply = ply + 1
            result.error = error
        return result

    def _event_name(self, state: np.ndarray) -> str:
        event = int(state[core.S_EVENT])
        if event == core.EV_THREEFOLD:
            return THREEFOLD
        if event == core.EV_COUNT:
            return self.counter.rules.rule_name(
                int(state[core.S_EVENT_RULE]), self.counter.preset, self.counter.moves
            )
        return _EVENT_NAMES[event]

    def _state(self, state: np.ndarray, history: np.ndarray) -> GameState:
        count = self.counter.make(
            int(state[core.S_RULE]), int(state[core.S_LIMIT]), int(state[core.S_ELAPSED])
        )
        seen: dict[tuple, int] = {}
        for row in history[: state[core.S_NHIST]].tolist():
            key = (row[0], row[1], row[2], row[3], bool(row[4]))
            seen[key] = seen.get(key, 0) + 1
        return GameState(self.counter, count, seen, bool(self.counter.rules.threefold))

    # ---- moves the compiled loop left to us

    def resolve(
        self,
        pos: Position,
        i: int,
        boards: np.ndarray,
        state: np.ndarray,
        history: np.ndarray,
        depth: int,
    ) -> Move | ReplayError:
        """The legal move text ``i`` names in ``pos``, forgiving unambiguous spelling."""
        text = self.texts[i]
        try:
            return parse_move(pos, text)
        except MoveError as error:
            first_error = error
        strict = self.options.strict
        if first_error.reason == "ambiguous":
            candidates = [parse_move(pos, c) for c in first_error.candidates]
            if strict:
                return self._error(pos, i, first_error, "not resolved under --strict")
            if depth >= MAX_LOOKAHEAD_DEPTH:
                return self._error(pos, i, first_error)
            fits = [
                m for m in candidates if self._continues(m, i, boards, state, history, depth + 1)
            ]
            if len(fits) == 1:
                move = fits[0]
                if depth == 0:
                    full = "x".join(str(s) for s in move.path)
                    self._warn(
                        pos,
                        i,
                        f"short capture {text} matches {len(candidates)} captures; "
                        f"read as {full}, the only one the moves that follow allow",
                    )
                return move
            what = "none" if not fits else "more than one"
            return self._error(
                pos, i, first_error, f"{what} of them lets the rest of the game replay"
            )
        flipped = _flip_separator(text, self.variant)
        if flipped is not None:
            try:
                swapped: Move | None = parse_move(pos, flipped)
            except MoveError:
                swapped = None
            if swapped is not None:
                what = "capture" if swapped.is_capture else "quiet move"
                played = move_text(pos, swapped)
                if strict:
                    return self._error(
                        pos, i, first_error, f"the {what} {played} has these squares"
                    )
                if depth == 0:
                    self._warn(pos, i, f"{text} written for the {what} {played}; read as {played}")
                return swapped
        return self._error(pos, i, first_error)

    def _continues(
        self,
        move: Move,
        i: int,
        boards: np.ndarray,
        state: np.ndarray,
        history: np.ndarray,
        depth: int,
    ) -> bool:
        """True if, after ``move`` as move ``i``, every following move replays legally."""
        boards, state, history = boards.copy(), state.copy(), history.copy()
        first, forced = i, _forced(move)
        while True:
            code, j = self._run(boards, state, history, first, False, forced)
            if code != core.NEED:
                return True
            found = self.resolve(self._position(boards, state), j, boards, state, history, depth)
            if isinstance(found, ReplayError):
                return False
            first, forced = j, _forced(found)

    def _number(self, pos: Position, i: int) -> int:
        item = self.moves[i]
        if isinstance(item, PdnMove):
            return item.number
        return move_number(i + 1, self.start.white_to_move == self.variant.white_moves_first)

    def _error(self, pos: Position, i: int, error: MoveError, note: str = "") -> ReplayError:
        if not note:
            note = _barred_note(pos, self.texts[i])
        return ReplayError(
            self.game, i + 1, self._number(pos, i), colour_name(pos), self.texts[i], error, note
        )

    def _warn(self, pos: Position, i: int, message: str) -> None:
        self.warnings.append(f"move {self._number(pos, i)} ({colour_name(pos)}): {message}")


_NO_MOVE = np.zeros(5, dtype=np.uint64)


def _square_text(variant: Variant, square: int) -> str:
    return str(square) if variant.notation == "numeric" else variant.square_name(square)


def _barred_note(pos: Position, text: str) -> str:
    """Why a quiet move of a king is illegal under the king-move limit, or ""."""
    limit = pos.variant.king_move_limit
    if limit == 0:
        return ""
    (wsq, wn), (bsq, bn) = pos.king_runs
    sq, n = (wsq, wn) if pos.white_to_move else (bsq, bn)
    men = pos.white_men if pos.white_to_move else pos.black_men
    try:
        squares, is_capture = parse_squares(text, pos.variant)
    except ValueError:
        return ""
    if n < limit or men == 0 or is_capture or not squares or squares[0] != sq:
        return ""
    return (
        f"the king on {_square_text(pos.variant, sq)} has made {n} quiet moves in a row: "
        f"it may not move again before another piece moves or it captures "
        f"(king-move limit {limit})"
    )


def _forced(move: Move) -> np.ndarray:
    return np.array(
        [1, move.frm - 1, move.to - 1, move.captured_board, int(move.crowns)], dtype=np.uint64
    )


def _flip_separator(text: str, variant: Variant | None = None) -> str | None:
    """``30-39`` -> ``30x39`` and back, for a two-square text; None otherwise."""
    try:
        squares, is_capture = parse_squares(text, variant)
    except ValueError:
        return None
    if len(squares) != 2:
        return None
    return f"{squares[0]}{'-' if is_capture else 'x'}{squares[1]}"


def _move_arrays(
    moves: list[PdnMove | str], texts: list[str], variant: Variant | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The written squares of every move, flat, with offsets and the capture flags.

    Texts as the PDN reader writes them (``32-28``, ``19x28``, ``26x37x48``) are read in one
    compiled pass over the joined text (:func:`adjudicator.replaycore.parse_moves`); when
    some text is anything else, the texts are split one by one.
    """
    if texts:
        try:
            raw = np.frombuffer(" ".join(texts).encode("ascii"), dtype=np.uint8)
        except UnicodeEncodeError:
            raw = None
        if raw is not None:
            ok, squares, offsets, captures = core.parse_moves(raw, len(texts))
            if ok:
                return squares, offsets, captures
    flat: list[int] = []
    offsets = [0]
    caps = []
    for text in texts:
        try:
            found, is_capture = parse_squares(text, variant)
        except ValueError:
            found, is_capture = [], False
        if any(q > MAX_SQUARE for q in found):
            found = []  # left to parse_move, which names the square out of range
        flat.extend(found)
        offsets.append(len(flat))
        caps.append(1 if is_capture else 0)
    return (
        np.array(flat, dtype=np.int64),
        np.array(offsets, dtype=np.int64),
        np.array(caps, dtype=np.uint8),
    )


def move_number(ply: int, first_mover: bool) -> int:
    """Move number of a ply when only move texts were given, counted from 1 as PDN does
    (``1... 17-22 2. 32-28`` when the start position has the second player to move)."""
    return (ply + 1) // 2 if first_mover else ply // 2 + 1


def start_position(variant: Variant, fen: str | None) -> Position:
    """The game's start position: the FEN tag's, or the variant's initial one."""
    if fen is None or not fen.strip():
        return _initial_position(variant)
    return Position.from_fen(fen, variant)


_INITIAL: dict[int, tuple[Variant, Position]] = {}


def _initial_position(variant: Variant) -> Position:
    """The variant's initial position, built once (keyed by identity: hashing the variant's
    whole data on every game would cost more than building it)."""
    hit = _INITIAL.get(id(variant))
    if hit is not None and hit[0] is variant:
        return hit[1]
    pos = Position.start(variant)
    if len(_INITIAL) < 64:
        _INITIAL[id(variant)] = (variant, pos)
    return pos
