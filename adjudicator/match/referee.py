"""Refereeing one game between two engines: every move checked, the draw rules and the tables
applied live, claims checked, faults turned into losses with their reason.

The game is ruled exactly as ``adjudicator rule`` rules its record (the same pieces: the
rules engine's legal moves, :class:`adjudicator.drawrules.DrawState` for the draw rules, and
:func:`adjudicator.tablesearch.rule_position` for the tables). After each ply, in the
replay's order: the side to move has no pieces or no legal move (it has lost; winning takes
precedence over a count expiring on the same ply), then threefold repetition, then the move
counts, then (``adjudicate="tables"``) the tables' count-aware value of the position, which
ends the game when the position is in the tables and the value is decided. So a game the
referee ends by a rule or the tables replays under ``adjudicator rule --db`` to the same
result, reason and ply.

Faults end the game against the engine at fault: an illegal move (``illegal-move``), a
message that is not one (``malformed-message``), a closed connection (``disconnected``), a
process that ended (``engine-crashed``), an answer past the clock (``time``), a game
refused (``refused``). A claim (DXP GAMEEND, a Hub ``done`` without a move as resignation)
is judged by :func:`judge_claim`.

Last, the engines' own scores may end a game by the match's conventions (``--draw``,
``--resign``: :mod:`adjudicator.match.adjudication`), after the rules and the tables have
had their say on that ply. Games run in threads at once share the referee; its tables are
probed under one lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from adjudicator.drawrules import DrawState, RuleOptions
from adjudicator.match.adjudication import DrawAdjudication, ResignAdjudication, ScoreWatch
from adjudicator.match.clock import Clock, TimeControl
from adjudicator.match.engines import Engine, Fault, GameSetup, Reply
from adjudicator.match.openings import Opening
from adjudicator.replay import NO_PIECES, terminal
from adjudicator.tablesearch import Verdict, rule_position
from tablebase.probe.hub import move_text as hub_move_text
from tablebase.rules.moves import Move, legal_moves, play
from tablebase.rules.notation import MoveError, move_text, parse_move
from tablebase.rules.position import Position
from tablebase.rules.variants import Variant

ADJUDICATE = ("tables", "rules", "off")
FALSE_CLAIMS = ("forfeit", "ignore")
RULE_REASONS = frozenset({"no-pieces", "no-moves", "threefold", "tablebase"})
_TABLES = threading.Lock()  # one probe of the shared tables at a time


@dataclass(frozen=True)
class Referee:
    """How games are refereed."""

    control: TimeControl
    options: RuleOptions = field(default_factory=RuleOptions)
    tables: Any = None  # an open tablebase of the match's variant, or None
    adjudicate: str = "rules"
    false_claims: str = "forfeit"
    max_plies: int = 1000
    draw: DrawAdjudication | None = None  # --draw
    resign: ResignAdjudication | None = None  # --resign

    def __post_init__(self) -> None:
        if self.adjudicate not in ADJUDICATE:
            raise ValueError(f"adjudicate must be one of {', '.join(ADJUDICATE)}")
        if self.false_claims not in FALSE_CLAIMS:
            raise ValueError(f"false_claims must be one of {', '.join(FALSE_CLAIMS)}")
        if self.adjudicate == "tables" and self.tables is None:
            raise ValueError("adjudication from the tables needs a database (--db)")

    def covered(self, pos: Position) -> bool:
        tb = self.tables
        if tb is None:
            return False
        if sum(pos.piece_count()) > self.max_pieces():
            return False
        try:
            with _TABLES:
                return bool(tb.covers(pos))
        except (LookupError, ValueError):
            return False

    def max_pieces(self) -> int:
        slices = getattr(self.tables, "slices", None)
        if not callable(slices):
            return 64
        return _max_pieces(self.tables)

    def verdict(self, pos: Position, state: DrawState) -> Verdict:
        with _TABLES:
            return rule_position(
                self.tables,
                pos,
                state.count,
                state.counter,
                state.seen_twice(),
                self.options.search_nodes,
            )


_MAX_PIECES: dict[int, int] = {}


def _max_pieces(tb: Any) -> int:
    hit = _MAX_PIECES.get(id(tb))
    if hit is None:
        with _TABLES:
            hit = max((sum(tuple(s)) for s in tb.slices()), default=0)
        _MAX_PIECES[id(tb)] = hit
    return hit


@dataclass
class GameRecord:
    """One game as played and ruled."""

    game: int
    white: str
    black: str
    opening: Opening
    texts: list[str]  # every move in PDN notation, the opening's included
    white_score: int | None = None  # 2 white won, 1 draw, 0 black won, None unfinished
    reason: str = ""
    detail: str = ""
    wall: float = 0.0
    cpu: float = 0.0

    @property
    def plies(self) -> int:
        return len(self.texts)

    def result(self, variant: Variant) -> str:
        return "*" if self.white_score is None else variant.result_for(self.white_score)


class _Ended(Exception):
    def __init__(self, white_score: int | None, reason: str, detail: str) -> None:
        self.white_score = white_score
        self.reason = reason
        self.detail = detail


def _loss(white: bool, reason: str, detail: str) -> _Ended:
    """The game lost by the side ``white`` names."""
    return _Ended(0 if white else 2, reason, detail)


def play_game(
    number: int,
    white: Engine,
    black: Engine,
    opening: Opening,
    referee: Referee,
    last: bool = False,
) -> GameRecord:
    """Play and referee one game; the engines are left ready for the next one (an engine at
    fault is reset, so that the next game starts it afresh)."""
    wall, cpu = time.monotonic(), time.process_time()
    record = GameRecord(number, white.name, black.name, opening, [])
    game = _Game(record, white, black, opening, referee, last)
    try:
        game.run()
    except _Ended as end:
        record.white_score, record.reason, record.detail = end.white_score, end.reason, end.detail
    record.white, record.black = white.name, black.name
    for engine, is_white in ((white, True), (black, False)):
        if engine in game.faulty:
            engine.reset()
            continue
        if engine not in game.begun:  # the other engine failed before this one started
            continue
        score = record.white_score
        mine = None if score is None else (score if is_white else 2 - score)
        engine.finish(mine)
    record.wall, record.cpu = time.monotonic() - wall, time.process_time() - cpu
    return record


class _Game:
    def __init__(
        self,
        record: GameRecord,
        white: Engine,
        black: Engine,
        opening: Opening,
        referee: Referee,
        last: bool,
    ) -> None:
        self.record = record
        self.engines = {True: white, False: black}
        self.opening = opening
        self.referee = referee
        self.last = last
        self.faulty: list[Engine] = []
        self.begun: list[Engine] = []
        self.state = DrawState(opening.start, referee.options)
        self.fired: str | None = self.state.initial()
        self.history: list[str] = []
        self.pos = opening.start
        for move in opening.moves:
            self._advance(move)
        self.scores = ScoreWatch(referee.draw, referee.resign)

    def run(self) -> None:
        ref = self.referee
        first = self.pos.white_to_move  # the side to move is started last: its clock runs
        for colour in (not first, first):
            engine = self.engines[colour]
            setup = GameSetup(
                self.opening.start,
                self.pos,
                tuple(self.history),
                colour,
                ref.control,
                self.engines[not colour].name,
                self.last,
            )
            self.begun.append(engine)
            try:
                engine.begin(setup)
            except Fault as fault:
                self.faulty.append(engine)
                raise _loss(colour, fault.reason, str(fault)) from None
        clocks = {True: Clock(ref.control), False: Clock(ref.control)}
        self._after_ply(self.fired)  # the start position itself may be over or in the tables
        while True:
            side = self.pos.white_to_move
            engine, other = self.engines[side], self.engines[not side]
            try:
                reply = engine.ask(self.pos, self.history, clocks[side])
            except Fault as fault:
                self.faulty.append(engine)
                raise _loss(side, fault.reason, str(fault)) from None
            if not clocks[side].spend(reply.seconds):
                self.faulty.append(engine)
                raise _loss(side, "time", f"{engine.name}: {reply.seconds:.2f} s, past its clock")
            if reply.claim is not None:
                raise self.judge(side, reply)
            move = self._resolve(side, reply)
            try:
                other.tell(move)
            except Fault as fault:
                self.faulty.append(other)
                self._advance(move)
                raise _loss(not side, fault.reason, str(fault)) from None
            fired = self._advance(move)
            self._after_ply(fired)
            self._by_scores(side, reply.score)
            try:  # a claim the mover sent after its move (DXP), judged after it
                claim = engine.poll()
            except Fault as fault:
                self.faulty.append(engine)
                raise _loss(side, fault.reason, str(fault)) from None
            if claim is not None:
                raise self.judge(side, claim)

    def _resolve(self, side: bool, reply: Reply) -> Move:
        pos = self.pos
        moves = legal_moves(pos)
        if reply.squares is not None:
            frm, to, caps = reply.squares
            found = [
                m
                for m in moves
                if m.frm == frm and m.to == to and sorted(m.captures) == sorted(caps)
            ]
            if len(found) == 1:
                return found[0]
            error = "not legal in this position"
        else:
            try:
                return parse_move(pos, reply.text or "")
            except MoveError as e:
                error = e.reason
        legal = ", ".join(move_text(pos, m, moves) for m in moves) or "none"
        self.faulty.append(self.engines[side])
        raise _loss(
            side,
            "illegal-move",
            f"{self.engines[side].name} played {reply.shown()} in {pos.fen()}: {error} "
            f"(legal: {legal})",
        )

    def _advance(self, move: Move) -> str | None:
        before = self.pos
        after = play(before, move)
        self.record.texts.append(move_text(before, move))
        self.history.append(hub_move_text(move))
        fired = self.state.push(before, move, after)
        self.pos = after
        if fired is not None and self.fired is None:
            self.fired = fired
        return fired

    def _after_ply(self, fired: str | None) -> None:
        """End the game if the position after the last ply (or the start) ends it."""
        ref, pos = self.referee, self.pos
        lost = terminal(pos)
        if lost is not None:
            mover = "white" if pos.white_to_move else "black"
            what = "has no pieces left" if lost == NO_PIECES else "has no legal move"
            raise _loss(pos.white_to_move, lost, f"{mover} to move {what}")
        if fired is not None and ref.adjudicate != "off":
            raise _Ended(1, fired, f"the {fired} rule fires after ply {self.record.plies}")
        if ref.adjudicate == "tables" and ref.covered(pos):
            verdict = ref.verdict(pos, self.state)
            if verdict.white_score is not None:
                raise _Ended(verdict.white_score, "tablebase", verdict.detail)
        if self.record.plies >= ref.max_plies:
            raise _Ended(None, "unfinished", f"{ref.max_plies} plies played (--max-plies)")

    def _by_scores(self, side: bool, score: float | None) -> None:
        """``--draw`` / ``--resign``: the engines' scores, after the rules had their say."""
        if self.referee.draw is None and self.referee.resign is None:
            return
        self.scores.note(side, score)
        ended = self.scores.verdict(self.record.plies)
        if ended is not None:
            reason, loser, detail = ended
            if loser is None:
                raise _Ended(1, reason, detail)
            raise _loss(loser, reason, detail)

    def judge(self, side: bool, reply: Reply) -> _Ended:
        return judge_claim(
            side, reply.claim or "unknown", self.pos, self.state, self.fired, self.referee,
            self.engines[side].name,
        )  # fmt: skip


def judge_claim(
    side: bool,
    claim: str,
    pos: Position,
    state: DrawState,
    fired: str | None,
    referee: Referee,
    name: str,
) -> _Ended:
    """The end a claim by ``side`` (True white) brings: ``"loss"`` is a resignation and always
    stands; ``"draw"`` stands if a draw rule has fired or the tables' count-aware value is a
    draw; ``"win"`` stands if that value is ``side``'s win. Any other claim is false: it
    loses (``false_claims="forfeit"``) or the game ends with the value the rules and tables
    give, ``*`` when they give none (``"ignore"``)."""
    mine = 2 if side else 0
    colour = "white" if side else "black"
    if claim == "loss":
        return _Ended(2 - mine, "resignation", f"{name} ({colour}) resigned")
    verdict: Verdict | None = None
    if referee.tables is not None and referee.covered(pos):
        verdict = referee.verdict(pos, state)
    known = None if verdict is None else verdict.white_score
    if fired is not None:
        known, why = 1, f"the {fired} rule has fired"
    elif verdict is None:
        why = f"{pos.fen()} is not in the tables and no draw rule has fired"
    elif known is None:
        why = f"the tables cannot decide ({verdict.reason}: {verdict.detail})"
    else:
        why = verdict.detail
    wanted = {"draw": 1, "win": mine}.get(claim)
    what = {"draw": "a draw", "win": "a win"}.get(claim, "an end without a reason")
    if wanted is not None and known == wanted:
        return _Ended(known, "claim", f"{name} ({colour}) claimed {what}, upheld: {why}")
    false = f"{name} ({colour}) claimed {what}, not upheld: {why}"
    if referee.false_claims == "forfeit":
        return _Ended(2 - mine, "false-claim", false)
    return _Ended(known, "false-claim", false + " (ignored: the game ends with that value)")
