"""The rules engine: variants, positions and FEN, compiled move generation, notation.

One module per concept, the generator and the prober sit on top of this package and it
imports nothing from them:

- :mod:`tablebase.rules.variants` - rule sets as data (:class:`Variant`, :data:`VARIANTS`);
- :mod:`tablebase.rules.drawrules` - each variant's draw rules as data, and their counters;
- :mod:`tablebase.rules.bits` - compiled bitboard primitives;
- :mod:`tablebase.rules.kernel` - how the hot compiled functions are compiled (no reference
  counting);
- :mod:`tablebase.rules.board` - square numbering and neighbour tables of a board size;
- :mod:`tablebase.rules.position` - :class:`Position`, FEN reading and writing;
- :mod:`tablebase.rules.geometry` - board geometry on bitboards (steps, rays, promotion rows);
- :mod:`tablebase.rules.movebuffer` - the move buffer's layout, its compiled accessors, and the
  searches' scratch space;
- :mod:`tablebase.rules.captures` - whether a capture is due, and the one capture search
  (moves with routes, or the positions after them);
- :mod:`tablebase.rules.quiet` - quiet moves;
- :mod:`tablebase.rules.movegen` - the legal moves (captures, else quiet moves);
- :mod:`tablebase.rules.makemove` - the position after a move;
- :mod:`tablebase.rules.kingruns` - Frisian's king-move limit (king runs);
- :mod:`tablebase.rules.unmoves` - quiet un-moves;
- :mod:`tablebase.rules.perftcount` - perft, compiled;
- :mod:`tablebase.rules.moves` - the same for Python callers (:class:`Move`, :func:`legal_moves`,
  :func:`play`, :func:`quiet_unmoves`, :func:`perft`);
- :mod:`tablebase.rules.notation` - PDN move text, numeric and alphanumeric squares;
- :mod:`tablebase.rules.outcome` - win/draw/loss names and the order of moves by outcome;
- :mod:`tablebase.rules.countsearch` - values under the count (a table win forced before the
  count runs out).

The names below are the package's public face; each lives in the module named above.
"""

from tablebase.rules.moves import (
    Move,
    MoveList,
    has_capture,
    legal_moves,
    perft,
    play,
    quiet_unmoves,
)
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import VARIANTS, Variant, get_variant

__all__ = [
    "VARIANTS",
    "FenError",
    "Move",
    "MoveList",
    "Position",
    "Variant",
    "get_variant",
    "has_capture",
    "legal_moves",
    "perft",
    "play",
    "quiet_unmoves",
]
