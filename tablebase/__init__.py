"""Draughts endgame tablebases: rules engine, retrograde generator and prober.

``tablebase.open(path)`` opens a generated database for probing and returns a
:class:`Tablebase` (:mod:`tablebase.probe.database`). The errors a probe raises are exported
here: :class:`MissingSliceError` (the position's slice is not in the database),
:class:`DistancesUnavailableError` (a distance asked of a WDL-only copy),
:class:`TableFileError` (a slice file that is damaged or unreadable) and :class:`FenError`
(a malformed position).

Packages: :mod:`tablebase.rules` (the rules engine), :mod:`tablebase.material` (slices and
their index), :mod:`tablebase.solve` (retrograde solving), :mod:`tablebase.storage` (files and
format), :mod:`tablebase.probe` (probing), :mod:`tablebase.build` (tasks, scheduling,
verification) and :mod:`tablebase.cli` (the command line).
"""

from tablebase import jitcache

jitcache.configure()  # before any compiled function is defined: see tablebase.jitcache

from pathlib import Path  # noqa: E402

from tablebase.identity import __version__  # noqa: E402
from tablebase.probe.cache import RESIDENT_PIECES, BlockCache  # noqa: E402
from tablebase.probe.database import (  # noqa: E402
    DistancesUnavailableError,
    MissingSliceError,
    MoveValue,
    Tablebase,
)
from tablebase.rules.position import FenError, Position  # noqa: E402
from tablebase.rules.variants import ENGLISH, INTERNATIONAL, Variant, get_variant  # noqa: E402
from tablebase.storage.slicefile import TableFileError  # noqa: E402

__all__ = [
    "ENGLISH",
    "INTERNATIONAL",
    "BlockCache",
    "DistancesUnavailableError",
    "FenError",
    "MissingSliceError",
    "MoveValue",
    "Position",
    "TableFileError",
    "Tablebase",
    "Variant",
    "__version__",
    "get_variant",
    "open",
]


def open(  # noqa: A001 - mirrors chess.syzygy.open_tablebase
    path: str | Path,
    variant: str | Variant | None = None,
    wdl_only: bool = False,
    cache: int | str | BlockCache | None = None,
    *,
    resident_pieces: int = RESIDENT_PIECES,
) -> Tablebase:
    """Open the database directory ``path`` for probing (``wdl_only``: through the compact
    win/draw/loss part alone) through a block cache of ``cache`` bytes (``"256M"``, ``1 <<
    30``; a :class:`BlockCache` to share one between databases; None: the process's shared
    cache, a quarter of the machine's memory), the blocks of slices of up to
    ``resident_pieces`` pieces kept once read; see :class:`Tablebase`."""
    return Tablebase(path, variant, wdl_only, cache, resident_pieces=resident_pieces)
