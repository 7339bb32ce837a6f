"""Draw-rule adjudication of draughts games (PDN replay, draw rules, tablebase rulings).

>>> from adjudicator import rule_file, RuleOptions
>>> for ruling in rule_file("games.pdn", db="data/international"):
...     print(ruling.to_dict())

Modules: :mod:`adjudicator.pdn` reads and writes PDN (tolerant of real files' spelling,
each forgiveness a warning), :mod:`adjudicator.replay` replays a game with legality checks
around the compiled loop of :mod:`adjudicator.replaycore`, :mod:`adjudicator.drawrules` holds
the options (the rules themselves are each variant's data, :mod:`tablebase.rules.drawrules`),
:mod:`adjudicator.tablesearch` rules a final position with the tables and the running count
(the search is :mod:`tablebase.rules.countsearch`), :mod:`adjudicator.ruling` puts them
together, :mod:`adjudicator.databases` says where the tables are, :mod:`adjudicator.cli` is the
command line, :mod:`adjudicator.service` the HTTP service and explorer and
:mod:`adjudicator.match` the referee of engine matches; :mod:`adjudicator.warmup` compiles the
replay loop ahead of the first game (``adjudicator compile``).
"""

import tablebase  # noqa: F401 - first: it sets the compiled code's cache folder
from adjudicator.drawrules import RuleOptions
from adjudicator.ruling import Ruling, rule_file, rule_game

__all__ = ["RuleOptions", "Ruling", "rule_file", "rule_game"]
