"""Draw-rule adjudication of draughts games (PDN replay, draw rules, tablebase rulings).

>>> from adjudicator import rule_file, RuleOptions
>>> for ruling in rule_file("games.pdn", db="data/international"):
...     print(ruling.to_dict())

Modules: :mod:`adjudicator.pdn` reads and writes PDN, :mod:`adjudicator.drawrules` is the
draw-rule state machine, :mod:`adjudicator.replay` replays a game with legality checks,
:mod:`adjudicator.tablesearch` rules a final position with the tables and the running count,
:mod:`adjudicator.ruling` puts them together, :mod:`adjudicator.cli` is the command line.
"""

from adjudicator.drawrules import RuleOptions
from adjudicator.ruling import Ruling, rule_file, rule_game

__all__ = ["RuleOptions", "Ruling", "rule_file", "rule_game"]
