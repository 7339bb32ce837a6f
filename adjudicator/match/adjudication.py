"""Ending games by the engines' own scores, as cutechess's ``-draw`` and ``-resign`` do.

These are the match's conventions, not the rules of the game: a game they end keeps the
reason ``draw-adjudication`` or ``resign-adjudication`` in its PDN (``adjudicator rule``
knows nothing of them and rules the final position anew), apart from the draw rules' own
``threefold``, ``25-move``, ... Scores are the engines' ``info score=`` in hundredths of a
man (Scan's score is in men), the last one each engine reported with its move.

- ``--draw movenumber=N movecount=M score=S``: a draw once at least ``N`` full moves have been
  played and both engines' last ``M`` scores were each within ``S`` of zero (``|s| <= S``).
- ``--resign movecount=M score=S [twosided=true]``: an engine whose last ``M`` scores were
  each at most ``-S`` loses; with ``twosided`` also when its opponent's last ``M`` were each
  at least ``S``.

A move without a score breaks the engine's run (DXP engines report none, so these
adjudications never end their games).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DrawAdjudication:
    movecount: int
    score: float
    movenumber: int = 0


@dataclass(frozen=True)
class ResignAdjudication:
    movecount: int
    score: float
    twosided: bool = False


def parse_draw(text: str) -> DrawAdjudication:
    """``movenumber=N movecount=M score=S`` (movenumber optional); ``ValueError`` if bad."""
    fields = _fields("--draw", text, {"movenumber", "movecount", "score"}, {"movecount", "score"})
    return DrawAdjudication(
        _count("--draw", "movecount", fields["movecount"]),
        _score("--draw", fields["score"]),
        _count("--draw", "movenumber", fields.get("movenumber", "0"), low=0),
    )


def parse_resign(text: str) -> ResignAdjudication:
    """``movecount=M score=S [twosided=true|false]``; ``ValueError`` if bad."""
    fields = _fields("--resign", text, {"movecount", "score", "twosided"}, {"movecount", "score"})
    twosided = fields.get("twosided", "false")
    if twosided not in ("true", "false"):
        raise ValueError(f"--resign: twosided must be true or false, not {twosided!r}")
    return ResignAdjudication(
        _count("--resign", "movecount", fields["movecount"]),
        _score("--resign", fields["score"]),
        twosided == "true",
    )


def _fields(option: str, text: str, known: set[str], needed: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep or key not in known:
            raise ValueError(
                f"{option}: {word!r} is not one of {', '.join(sorted(k + '=' for k in known))}"
            )
        out[key] = value
    missing = sorted(needed - set(out))
    if missing:
        raise ValueError(f"{option}: {' and '.join(m + '=' for m in missing)} needed")
    return out


def _count(option: str, key: str, value: str, low: int = 1) -> int:
    if not value.isdigit() or int(value) < low:
        raise ValueError(f"{option}: {key} must be a whole number >= {low}, not {value!r}")
    return int(value)


def _score(option: str, value: str) -> float:
    try:
        score = float(value)
    except ValueError:
        raise ValueError(f"{option}: score must be a number, not {value!r}") from None
    if score < 0:
        raise ValueError(f"{option}: score must not be negative")
    return score


class ScoreWatch:
    """One game's scores, side by side; :meth:`verdict` after each move."""

    def __init__(self, draw: DrawAdjudication | None, resign: ResignAdjudication | None) -> None:
        self.draw = draw
        self.resign = resign
        self.runs: dict[bool, list[float]] = {True: [], False: []}  # per side, since a gap

    def note(self, white: bool, score: float | None) -> None:
        run = self.runs[white]
        if score is None:
            run.clear()
        else:
            run.append(score)

    def verdict(self, plies: int) -> tuple[str, bool | None, str] | None:
        """``(reason, loser, detail)``: ``loser`` True white, False black, None a draw."""
        if self.resign is not None:
            r = self.resign
            for side in (True, False):
                own, other = self.runs[side][-r.movecount :], self.runs[not side][-r.movecount :]
                low = len(own) == r.movecount and all(s <= -r.score for s in own)
                high = r.twosided and len(other) == r.movecount and all(s >= r.score for s in other)
                if low or high:
                    whose = "its" if low else "its opponent's"
                    scores = own if low else other
                    colour = "white" if side else "black"
                    return (
                        "resign-adjudication",
                        side,
                        f"{colour} resigned by adjudication: {whose} last {r.movecount} "
                        f"scores {_shown(scores)} (--resign score={r.score:g})",
                    )
        if self.draw is not None:
            d = self.draw
            if plies // 2 < d.movenumber:
                return None
            both = [self.runs[s][-d.movecount :] for s in (True, False)]
            if all(len(run) == d.movecount and all(abs(s) <= d.score for s in run) for run in both):
                return (
                    "draw-adjudication",
                    None,
                    f"drawn by adjudication: white's last {d.movecount} scores "
                    f"{_shown(both[0])}, black's {_shown(both[1])} (--draw score={d.score:g})",
                )
        return None


def _shown(scores: list[float]) -> str:
    return "[" + ", ".join(f"{s:g}" for s in scores) + "]"
