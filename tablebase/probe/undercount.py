"""``result_under_count`` of a position probed in a database: the count-aware search of
:mod:`tablebase.rules.countsearch` run on a :class:`~.database.Tablebase`, its shortcut's
premise checked against the longest wins the database's slice files store
(:func:`stored_premise`). ``tablebase probe --elapsed`` answers with it."""

from __future__ import annotations

from tablebase.probe.database import Tablebase
from tablebase.rules.countsearch import failing_slices, under_count
from tablebase.rules.drawrules import Count, Counter, DrawRules
from tablebase.rules.moves import Move
from tablebase.rules.position import Position
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import slice_path


def stored_premise(tb: Tablebase) -> tuple[frozenset[str], dict[str, Exception]]:
    """The slices of ``tb`` where the search's shortcut premise fails (their stored longest
    win is longer than the ending count of their material), and the slices whose files
    could not be read, with the error (only a search that needs one of them fails)."""
    unreadable: dict[str, Exception] = {}
    slices = {s.name: s for s in tb.slices()}

    def longest(name: str) -> int:
        return int(read_attrs(slice_path(tb.path, slices[name]))["longest_win"])

    return failing_slices(_rules(tb), slices, longest, unreadable), unreadable


def probe_under_count(
    tb: Tablebase, pos: Position, elapsed: int, moves: list[Move] | None = None
) -> tuple[Count, str, list[str]]:
    """The count running in ``pos`` with ``elapsed`` plies on it, and ``result_under_count``
    of the position and of each of ``moves`` (default: its legal moves), as
    :func:`~tablebase.rules.countsearch.under_count` gives them."""
    failing, unreadable = stored_premise(tb)
    return under_count(
        tb,
        pos,
        Counter(_rules(tb)),
        elapsed,
        moves,
        shortcut=failing,
        unreadable=unreadable,
    )


def _rules(tb: Tablebase) -> DrawRules:
    rules = tb.variant.draw_rules
    assert rules is not None  # every variant has them (Variant checks it)
    return rules
