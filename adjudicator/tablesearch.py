"""Ruling an unfinished game's final position with the tables *and* the running count.

The search itself, exact under the count rules, is :mod:`tablebase.rules.countsearch` (its
docstring says why each step is exact); this module adds what a game brings: the positions
the game has already seen twice (a third occurrence draws, so the search treats them as
draws and does not trust the table's line through them), the check of the search's shortcut
against the database's own longest wins (:func:`shortcut_holds_for`), and the ruling's words.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tablebase.rules.countsearch import (
    NoDistances,
    Prober,
    Search,
    SearchLimit,
    TimeLimit,
    failing_slices,
    position_key,
    probe,
    shortcut_holds,
)
from tablebase.rules.drawrules import NO_LIMIT, Count, Counter, DrawRules
from tablebase.rules.position import Position
from tablebase.storage.reader import read_attrs
from tablebase.storage.slicefile import TableFileError

__all__ = [
    "Prober",
    "Search",
    "SearchLimit",
    "Verdict",
    "position_key",
    "premise_for",
    "probe",
    "rule_position",
    "shortcut_for",
    "unreadable_for",
]


@dataclass(frozen=True)
class Verdict:
    """A table ruling: ``white_score`` 2/1/0, or None with ``reason`` saying why not."""

    white_score: int | None
    reason: str  # "tablebase" | "outside-tables" | "search-limit" | "table-error"
    detail: str


def shortcut_holds_for(tb: Any) -> bool:
    """The premise of the search's shortcut, checked against the stored longest wins of the
    database's slices that put an ending count in force (a database without slice files,
    such as a test double, has nothing to contradict it)."""
    path, slices = getattr(tb, "path", None), getattr(tb, "slices", None)
    variant = getattr(tb, "variant", None)
    rules = getattr(variant, "draw_rules", None)
    if path is None or not callable(slices) or rules is None:
        return True
    names = tuple(s.name for s in slices())
    return _shortcut_holds(os.fspath(path), names, rules)


def shortcut_for(tb: Any) -> bool | frozenset[str]:
    """What the search's shortcut may trust for ``tb`` (see
    :class:`tablebase.rules.countsearch.Search`): True for a test double without slice
    files, else the database's slices where its premise fails (empty: it holds
    everywhere). Slices whose files are damaged are left to :func:`unreadable_for`."""
    return premise_for(tb)[0]


def unreadable_for(tb: Any) -> dict[str, TableFileError]:
    """The slices of ``tb`` whose longest win could not be read (damaged files), with the
    error: a search that needs the shortcut's premise where one of them can be reached
    fails with that error (that game's ruling only)."""
    return dict(premise_for(tb)[1])


def premise_for(tb: Any) -> tuple[bool | frozenset[str], tuple[tuple[str, TableFileError], ...]]:
    """:func:`shortcut_for` and :func:`unreadable_for` of ``tb``, read once per database."""
    path, slices = getattr(tb, "path", None), getattr(tb, "slices", None)
    variant = getattr(tb, "variant", None)
    rules = getattr(variant, "draw_rules", None)
    if path is None or not callable(slices) or rules is None:
        return True, ()
    names = tuple(s.name for s in slices())
    return _failing(os.fspath(path), names, rules, _identity(path, names))


def _identity(path: Any, names: tuple[str, ...]) -> tuple:
    """What tells a database's files apart from their earlier versions (a file written
    anew, e.g. a damaged one regenerated, is read anew)."""
    out: list[tuple[int, int, int] | None] = []
    for name in names:
        try:
            st = os.stat(os.path.join(path, f"{name}.h5"))
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


@lru_cache(maxsize=32)
def _failing(
    path: str, names: tuple[str, ...], rules: DrawRules, identity: tuple
) -> tuple[frozenset[str], tuple[tuple[str, TableFileError], ...]]:
    def longest(name: str) -> int:
        return int(read_attrs(os.path.join(path, f"{name}.h5")).get("longest_win", -1))

    unreadable: dict[str, Exception] = {}
    failing = failing_slices(rules, names, longest, unreadable)
    for error in unreadable.values():
        if not isinstance(error, TableFileError):
            raise error
    return failing, tuple(sorted(unreadable.items()))  # type: ignore[arg-type]


@lru_cache(maxsize=32)
def _shortcut_holds(path: str, names: tuple[str, ...], rules: DrawRules) -> bool:
    def longest(name: str) -> int:
        return int(read_attrs(os.path.join(path, f"{name}.h5")).get("longest_win", -1))

    return shortcut_holds(rules, names, longest)


def rule_position(
    tb: Prober,
    pos: Position,
    count: Count,
    counter: Counter,
    banned: frozenset = frozenset(),
    nodes: int = 100_000,
    deadline: float | None = None,
) -> Verdict:
    """The ruling for a game that stopped (no terminal event) in ``pos`` with ``count``."""
    tb_variant = getattr(tb, "variant", None)
    if tb_variant is not None and getattr(tb_variant, "name", tb_variant) != pos.variant.name:
        name = getattr(tb_variant, "name", tb_variant)
        return Verdict(
            None, "outside-tables", f"the database is {name}, the game is {pos.variant.name}"
        )
    try:
        shortcut, unreadable = premise_for(tb)
        search = Search(tb, counter, banned, nodes, shortcut, deadline, dict(unreadable))
        wdl, dtw = search.value(pos)
        if wdl == 0:
            return Verdict(1, "tablebase", f"the tables say draw (final position {pos.fen()})")
        ok = search.forced(pos, count)
    except NoDistances as error:
        return Verdict(
            None,
            "no-distances",
            f"{error}: whether a table win fits the {count.rule} count cannot be decided",
        )
    except LookupError as error:
        return Verdict(None, "outside-tables", _missing(error))
    except TableFileError as error:  # a damaged file: named in this game's ruling only
        return Verdict(None, "table-error", f"cannot use the tables: {error}")
    except SearchLimit as error:
        return Verdict(
            None,
            "time-limit" if isinstance(error, TimeLimit) else "search-limit",
            f"{error} to decide whether the theoretical win "
            f"in {plies(dtw)} can be forced within {count.describe()}",
        )
    mover = "white" if pos.white_to_move else "black"
    winner = mover if wdl > 0 else _other(mover)
    what = f"{winner}'s theoretical win in {plies(dtw)}"
    verb = "remains" if count.remaining == 1 else "remain"
    left = f"{plies(count.remaining)} {verb} on the {count.rule} count"
    if count.limit >= NO_LIMIT:
        left = "no count runs (the rules have no general count)"
    if not ok:
        return Verdict(1, "tablebase", f"{what} but only {left}: draw")
    score = 2 if winner == "white" else 0
    if dtw is not None and dtw <= count.remaining:
        return Verdict(score, "tablebase", f"{what}; {left}: {winner} wins")
    return Verdict(
        score,
        "tablebase",
        f"{what} but only {left}; {winner} forces the win in "
        f"time through a line that restarts the count: {winner} wins",
    )


def plies(n: int | None) -> str:
    """``"1 ply"``, ``"7 plies"``."""
    return f"{n} ply" if n == 1 else f"{n} plies"


def _other(colour: str) -> str:
    return "black" if colour == "white" else "white"


def _missing(error: LookupError) -> str:
    name = getattr(error, "slice", None)
    text = str(error).strip("'\"")
    if name and str(name) not in text:
        return f"slice {name} is not in the database ({text})"
    return text
