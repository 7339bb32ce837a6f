"""Running a match or a tournament: the schedule played (:mod:`~adjudicator.match.concurrency`),
every game saved as it ends (:mod:`~adjudicator.match.state`), the PDN, the tables and the
SPRT kept up to date.

The PDN is written game by game, in the order the games end, to ``OUT.partial``; when the
match ends, ``OUT`` is written with every game in game order (to a temporary name, then
renamed), so a file under the asked name is always complete. A resumed match first writes
``OUT.partial`` again from the saved games, so a game cut off by a crash is not in it.

With an SPRT (two engines), the LLR is computed after every complete pair of games; when it
crosses a bound no other game is started (games already being played finish and count in the
score, not in the decision's pair counts at that moment).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from adjudicator.match.concurrency import Finished, Pools, Workers
from adjudicator.match.engines import Spec
from adjudicator.match.openings import Opening
from adjudicator.match.output import pdn_text
from adjudicator.match.referee import GameRecord, Referee
from adjudicator.match.results import Score
from adjudicator.match.schedule import Pairing, build
from adjudicator.match.sprt import Sprt, pair_elo, pentanomial
from adjudicator.match.state import MatchState, SavedGame
from adjudicator.match.tournament import Crosstable
from tablebase.rules.variants import Variant


@dataclass
class Match:
    specs: tuple[Spec, ...]
    games: int  # per pair of engines
    openings: list[Opening]
    referee: Referee
    variant: Variant
    event: str = "adjudicator match"
    tournament: str = "match"  # "match" (two engines), "roundrobin" or "gauntlet"
    concurrency: int = 1
    sprt: Sprt | None = None
    order: list[int] | None = None  # the openings' order (default: as listed)
    names: list[str] | None = None  # known before the match (name=, a Hub engine's id)


@dataclass
class Outcome:
    """The match so far: its tables, the games this run played, the SPRT's last word."""

    table: Crosstable
    schedule: list[Pairing]
    played: list[GameRecord] = field(default_factory=list)
    first_scores: dict[int, dict[int, int | None]] = field(default_factory=dict)
    sprt_line: str | None = None
    decision: str | None = None

    def score(self) -> Score:
        """The first engine's score against the second."""
        return self.table.pair(0, 1)

    def pairs(self) -> list[int]:
        """The pentanomial counts of the first two engines' complete pairs."""
        done: list[tuple[int, int]] = []
        for games in self.first_scores.values():
            scores = list(games.values())
            if len(scores) == 2 and scores[0] is not None and scores[1] is not None:
                done.append((scores[0], scores[1]))
        return pentanomial(done)

    def pair_summary(self) -> str:
        counts = self.pairs()
        line = f"pairs [LL, LD, DD+WL, WD, WW]: {counts}"
        elo = pair_elo(counts)
        if elo is not None:
            low, high = _elo(elo[1]), _elo(elo[2])
            line += f"; Elo from pairs {_elo(elo[0])}, 95 % interval [{low}, {high}]"
        return line


def _elo(x: float) -> str:
    if x in (float("inf"), float("-inf")):
        return "+inf" if x > 0 else "-inf"
    return f"{x + 0.0:+.1f}"  # + 0.0: no "-0.0"


def shown_names(names: list[str]) -> list[str]:
    """Names as the tables show them: the same name twice gets ``#1``, ``#2``..."""
    return [f"{n} #{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def play_match(
    match: Match,
    pdn_path: str | None = None,
    state: MatchState | None = None,
    on_game: Callable[[GameRecord, Outcome], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> Outcome:
    """Play the games ``state`` does not hold yet; returns the whole match's outcome."""
    state = state if state is not None else MatchState(None)
    if not state.order:
        state.order = list(match.order or range(len(match.openings)))
    schedule = build(len(match.specs), match.tournament, match.games, state.order)
    by_number = {p.number: p for p in schedule}
    names = list(match.names or [s.name or f"engine {i + 1}" for i, s in enumerate(match.specs)])
    outcome = Outcome(Crosstable(shown_names(names)), schedule)
    note = on_note or (lambda _: None)
    for number in sorted(state.games):
        saved = state.games[number]
        pairing = by_number.get(number)
        if pairing is None:
            raise ValueError(f"the saved game {number} is not in this match's schedule")
        _learn(names, match.specs, pairing, saved.white, saved.black)
        _count(outcome, pairing, saved.white_score, match)
    outcome.table.names = shown_names(names)
    if match.sprt is not None:
        outcome.sprt_line = match.sprt.line(outcome.pairs())
        outcome.decision = match.sprt.decision(match.sprt.llr(outcome.pairs()))
    pending = [] if outcome.decision else [p for p in schedule if p.number not in state.games]
    partial = None if pdn_path is None else pdn_path + ".partial"
    out = None
    if partial is not None:
        out = open(partial, "w", encoding="utf-8")  # noqa: SIM115
        if state.games:
            out.write(state.pdn_text())
            out.flush()
    pools = Pools(match.specs, names)
    workers = Workers(pending, match.openings, match.referee, pools, match.concurrency)
    try:
        workers.start()
        for item in workers.finished():
            _handle(item, match, state, outcome, names, out, workers, note)
            if on_game is not None and item.record is not None:
                on_game(item.record, outcome)
    except BaseException:
        workers.stop.set()
        pools.abort()
        raise
    finally:
        pools.close()
        if out is not None:
            out.close()
    if pdn_path is not None:
        tmp = pdn_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(state.pdn_text())
        os.replace(tmp, pdn_path)
        if partial is not None and os.path.exists(partial):
            os.remove(partial)
    return outcome


def _handle(
    item: Finished,
    match: Match,
    state: MatchState,
    outcome: Outcome,
    names: list[str],
    out: TextIO | None,
    workers: Workers,
    note: Callable[[str], None],
) -> None:
    if item.error is not None:
        raise item.error
    pairing, record = item.pairing, item.record
    assert pairing is not None and record is not None
    _learn(names, match.specs, pairing, record.white, record.black)
    outcome.table.names = shown_names(names)
    text = pdn_text(record, match.variant, match.event, match.referee.control.describe())
    state.add(
        SavedGame(
            pairing.number,
            record.white,
            record.black,
            record.white_score,
            record.reason,
            record.plies,
            text,
        )  # fmt: skip
    )
    outcome.played.append(record)
    complete = _count(outcome, pairing, record.white_score, match)
    if match.sprt is not None and complete:
        counts = outcome.pairs()
        value = match.sprt.llr(counts)
        outcome.sprt_line = match.sprt.line(counts)
        note(outcome.sprt_line)
        decision = match.sprt.decision(value)
        if decision is not None and outcome.decision is None:
            outcome.decision = decision
            workers.stop.set()
        state.sprt = {"llr": value, "pairs": counts, "decision": outcome.decision}
    state.save()
    if out is not None:
        if out.tell() > 0:
            out.write("\n")
        out.write(text)
        out.flush()


def _count(outcome: Outcome, pairing: Pairing, white_score: int | None, match: Match) -> bool:
    """Add a game to the tables; True when it completes a pair of the first two engines."""
    outcome.table.add(pairing, white_score)
    if (pairing.first, pairing.second) != (0, 1):
        return False
    first = white_score
    if white_score is not None and pairing.white != 0:
        first = 2 - white_score
    games = outcome.first_scores.setdefault(pairing.encounter, {})
    games[pairing.number] = first
    return len(games) == 2


def _learn(
    names: list[str], specs: tuple[Spec, ...], pairing: Pairing, white: str, black: str
) -> None:
    """The engines' names as their games give them (unless name= fixed them)."""
    for i, name in ((pairing.white, white), (pairing.black, black)):
        if not specs[i].name and name:
            names[i] = name


def run_match(
    match: Match,
    pdn_path: str | None = None,
    on_game: Callable[[GameRecord, Score], None] | None = None,
) -> tuple[list[GameRecord], Score]:
    """Play a two-engine match; returns the games (in game order) and the first engine's
    score."""

    def each(record: GameRecord, outcome: Outcome) -> None:
        if on_game is not None:
            on_game(record, outcome.score())

    outcome = play_match(match, pdn_path, on_game=each)
    records = sorted(outcome.played, key=lambda r: r.game)
    return records, outcome.score()
