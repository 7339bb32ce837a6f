"""Draughts endgame tablebases: rules engine, retrograde generator and prober.

``tablebase.open(path)`` opens a generated database for probing (see :mod:`tablebase.probe`).
"""

from tablebase import jitcache

jitcache.configure()  # before any compiled function is defined: see tablebase.jitcache

from tablebase.rules.position import FenError, Position  # noqa: E402
from tablebase.rules.variants import ENGLISH, INTERNATIONAL, Variant, get_variant  # noqa: E402

__version__ = "0.1.0"

__all__ = ["ENGLISH", "INTERNATIONAL", "FenError", "Position", "Variant", "get_variant", "open"]


def open(path, variant=None, wdl_only=False):  # noqa: A001 - mirrors chess.syzygy.open_tablebase
    """Open the database directory ``path`` for probing (``wdl_only``: through the compact
    win/draw/loss part alone); see :class:`tablebase.probe.Tablebase`."""
    from tablebase.probe import Tablebase

    return Tablebase(path, variant, wdl_only)
