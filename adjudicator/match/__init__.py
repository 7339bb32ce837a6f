"""Engine matches and tournaments refereed with the draw rules and the tables
(``adjudicator match``).

Modules, one concept each: :mod:`~adjudicator.match.enginespec` (how an engine is given:
``--engine``), :mod:`~adjudicator.match.enginecheck` (Hub engines' options checked before a
match), :mod:`~adjudicator.match.dxp` (DXP messages and a connection),
:mod:`~adjudicator.match.hub` (the Hub protocol, an engine process),
:mod:`~adjudicator.match.engines` (one adapter per protocol),
:mod:`~adjudicator.match.clock` (time control and the referee's clock),
:mod:`~adjudicator.match.openings` (start positions), :mod:`~adjudicator.match.referee` (one
game: moves checked, draw rules and tables applied live, claims judged, faults ruled),
:mod:`~adjudicator.match.adjudication` (``--draw``/``--resign`` by the engines' scores),
:mod:`~adjudicator.match.schedule` (the games of a match or a tournament),
:mod:`~adjudicator.match.concurrency` (games at once), :mod:`~adjudicator.match.state`
(the saved state of ``--resume``), :mod:`~adjudicator.match.runner` (a match played),
:mod:`~adjudicator.match.results` (score and Elo), :mod:`~adjudicator.match.sprt` (pairs,
Elo from pairs, the SPRT), :mod:`~adjudicator.match.tournament` (crosstable) and
:mod:`~adjudicator.match.output` (PDN and JSON). ``docs/MATCH.md`` is the user's guide.
"""

from adjudicator.match.clock import TimeControl
from adjudicator.match.engines import Fault
from adjudicator.match.enginespec import Spec, SpecError, parse_spec
from adjudicator.match.openings import Opening, OpeningError
from adjudicator.match.referee import GameRecord, Referee, play_game
from adjudicator.match.results import Score, tally
from adjudicator.match.runner import Match, Outcome, play_match, run_match
from adjudicator.match.sprt import Sprt

__all__ = [
    "Fault",
    "GameRecord",
    "Match",
    "Opening",
    "OpeningError",
    "Outcome",
    "Referee",
    "Score",
    "Spec",
    "SpecError",
    "Sprt",
    "TimeControl",
    "parse_spec",
    "play_game",
    "play_match",
    "run_match",
    "tally",
]
