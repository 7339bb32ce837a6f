"""Engine matches refereed with the draw rules and the tables (``adjudicator match``).

Modules, one concept each: :mod:`~adjudicator.match.dxp` (DXP messages and a connection),
:mod:`~adjudicator.match.hub` (the Hub protocol, an engine process),
:mod:`~adjudicator.match.engines` (engine specs and one adapter per protocol),
:mod:`~adjudicator.match.clock` (time control and the referee's clock),
:mod:`~adjudicator.match.openings` (start positions), :mod:`~adjudicator.match.referee` (one
game: moves checked, draw rules and tables applied live, claims judged, faults ruled),
:mod:`~adjudicator.match.schedule` (the games of a match), :mod:`~adjudicator.match.results`
(score and Elo) and :mod:`~adjudicator.match.output` (PDN and JSON). ``docs/MATCH.md`` is the
user's guide.
"""

from adjudicator.match.clock import TimeControl
from adjudicator.match.engines import Fault, Spec, SpecError, parse_spec
from adjudicator.match.openings import Opening, OpeningError
from adjudicator.match.referee import GameRecord, Referee, play_game
from adjudicator.match.results import Score, tally
from adjudicator.match.schedule import Match, run_match

__all__ = [
    "Fault",
    "GameRecord",
    "Match",
    "Opening",
    "OpeningError",
    "Referee",
    "Score",
    "Spec",
    "SpecError",
    "TimeControl",
    "parse_spec",
    "play_game",
    "run_match",
    "tally",
]
