"""Rulings: what the draw rules (and, for unfinished games, the tables) say about a game.

:func:`rule_game` rules one game, :func:`rule_file` every game of a PDN file. A
:class:`Ruling` serialises to the JSON object of the adjudicator's interface::

    {"game": 1, "white": "...", "black": "...", "result": "1-1", "reason": "threefold",
     "ply": 8, "recorded_result": "1/2-1/2", "agrees": true, "detail": "..."}

``result`` is a PDN result token of the game's variant (English from black's, the first
mover's, side) or ``"unknown"``. ``ply`` counts plies from the game's start position (its FEN
tag, or the initial position) to where the ruling applies: the ply completing a repetition or
a count, the ply after which the side to move is lost, the game's length for a game ruled from
its final position, the illegal ply itself for an illegal move.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from adjudicator.databases import open_tables
from adjudicator.drawrules import THREEFOLD, RuleOptions
from adjudicator.pdn import PdnGame, PdnMove, Side, read_games
from adjudicator.replay import LOSSES, NO_PIECES, Replay, move_number, replay, start_position
from adjudicator.tablesearch import plies, rule_position
from tablebase.rules.position import FenError
from tablebase.rules.variants import (
    ENGLISH,
    INTERNATIONAL,
    VARIANTS,
    Variant,
    get_variant,
    variant_for_game_type,
)

ERROR_REASONS = frozenset({"illegal-move", "ambiguous-move", "pdn-error", "bad-tag"})
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Ruling:
    """The ruling on one game (field order is the JSON object's; ``file`` is left out of it
    when None, that is when a single file is ruled)."""

    game: int
    white: str | None
    black: str | None
    result: str
    reason: str
    ply: int
    recorded_result: str | None
    agrees: bool
    detail: str
    variant: str | None = None
    warnings: list[str] = field(default_factory=list)
    file: str | None = None

    @property
    def is_error(self) -> bool:
        """True when the game could not be ruled because its text is wrong."""
        return self.reason in ERROR_REASONS

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, exactly the documented keys."""
        out = asdict(self)
        if self.file is None:
            del out["file"]
        else:  # the file right after the game number
            out = {"game": out.pop("game"), "file": out.pop("file"), **out}
        return out


class BadTag(ValueError):
    """A tag that makes the game unplayable (unknown GameType, malformed FEN)."""


def game_variant(game: PdnGame, override: Variant | str | None = None) -> Variant | None:
    """The variant ``game`` names: the override, else its GameType tag (20 international,
    21 english); None when neither says (the moves decide, see :func:`game_variants`)."""
    if override is not None:
        return get_variant(override)
    value = game.tags.get("GameType")
    if value is None:
        return None
    number = game.game_type
    variant = variant_for_game_type(number) if number is not None else None
    if variant is None:
        supported = ", ".join(f"{v.game_type} {v.name}" for v in VARIANTS.values())
        raise BadTag(
            f"unsupported GameType {_short(value)!r} (supported: {supported}; "
            f"or choose the variant explicitly)"
        )
    return variant


def game_variants(game: PdnGame, override: Variant | str | None = None) -> list[Variant]:
    """The variants to try, in order: the named one, or every known variant."""
    named = game_variant(game, override)
    return [named] if named is not None else list(VARIANTS.values())


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def white_score_of(token: str | None, variant: Variant) -> int | None:
    """White's score (2 win, 1 draw, 0 loss) that a PDN result token records, or None.

    Tokens give the first mover's score first (white in International, black in English);
    ``1-0``/``0-1``/``1/2-1/2`` are read under either variant, as real files mix them.
    """
    first = {"2-0": 2, "1-0": 2, "1-1": 1, "1/2-1/2": 1, "0-2": 0, "0-1": 0}.get(token or "")
    if first is None:
        return None
    return first if variant.white_moves_first else 2 - first


def rule_game(
    game_or_moves: PdnGame | Sequence[str | PdnMove],
    *,
    variant: Variant | str | None = None,
    tablebase: Any = None,
    options: RuleOptions | None = None,
    fen: str | None = None,
) -> Ruling:
    """Rule one game: a :class:`PdnGame`, or a list of move texts (from ``fen``, or the
    variant's initial position, as game 1).

    Replays it with full legality checks and the draw rules; a game that ends without a
    terminal event is ruled from its final position with ``tablebase`` (an object with the
    :mod:`tablebase.probe.database` methods, or a mapping from variant names to such objects) when
    it covers the game's variant, else ``"unknown"``/``"unfinished"``. Without ``variant``
    and a GameType tag, the variant is the first whose rules replay the game legally.
    """
    options = options or RuleOptions()
    if isinstance(game_or_moves, PdnGame):
        game = game_or_moves
    else:
        game = _as_game(game_or_moves, fen, get_variant(variant or INTERNATIONAL))
    recorded = game.tags.get("Result") or game.result_token
    ruler = _Ruler(game, recorded, list(game.warnings))
    if game.error is not None:
        return ruler.unknown("pdn-error", len(game.moves), str(game.error))
    tag, token = game.tags.get("Result"), game.result_token
    if tag and token and token != "*" and tag != token:
        ruler.warnings.append(
            f"the Result tag {_short(tag)!r} differs from the result {token!r} "
            "at the end of the moves (the tag is taken as recorded)"
        )
    fen = fen if fen is not None else game.fen
    try:
        candidates = game_variants(game, variant)
        if fen is not None:
            check_fen_text(fen)
    except BadTag as error:
        return ruler.unknown("bad-tag", 0, f"game {game.index}: {error}")
    played, failures = _replay_first_legal(game, candidates, fen, options)
    if played is None:
        v, failure = max(failures, key=lambda f: getattr(f[1], "ply", 0))
        ruler.variant = v
        if len(candidates) > 1:
            tried = ", ".join(c.name for c in candidates)
            note = f" (no GameType tag, and no variant replays the game: tried {tried})"
        else:
            note = ""
        if isinstance(failure, FenError):
            return ruler.unknown("bad-tag", 0, f"game {game.index}: {failure}{note}")
        return ruler.unknown(failure.kind, failure.ply, f"{failure}{note}")
    ruler.variant = played.variant
    if len(candidates) > 1:
        ruler.warnings.append(
            f"no GameType tag: variant {played.variant.name} inferred "
            "(the first whose rules replay the moves legally)"
        )
    ruler.warnings.extend(played.warnings)
    if played.event is not None:
        return ruler.event(played, options)
    if isinstance(tablebase, Mapping):
        tablebase = tablebase.get(played.variant.name)
    return ruler.final(played, tablebase, options)


def check_fen_text(fen: str) -> None:
    """Refuse a FEN tag the rules engine would misread: digits other than ASCII 0-9, or a
    number too long to be a square."""
    for ch in fen:
        if ch.isdigit() and not ("0" <= ch <= "9"):
            raise BadTag(f"FEN {_short(fen)!r}: {ch!r} is not an ASCII digit")
    for run in re.findall(r"[0-9]+", fen):
        if len(run) > 4:
            raise BadTag(f"FEN {_short(fen)!r}: number {_short(run, 12)} is not a square")


def _replay_first_legal(
    game: PdnGame, candidates: list[Variant], fen: str | None, options: RuleOptions
) -> tuple[Replay | None, list[tuple[Variant, Any]]]:
    """The replay under the first candidate variant that plays the game legally, or None
    with each candidate's error."""
    failures: list[tuple[Variant, Any]] = []
    for v in candidates:
        try:
            start = start_position(v, fen)
        except FenError as error:
            failures.append((v, error))
            continue
        played = replay(game, start, options)
        if played.error is None:
            return played, failures
        failures.append((v, played.error))
    return None, failures


def not_ruled(game: PdnGame, reason: str, detail: str) -> Ruling:
    """The ``"unknown"`` ruling of a game left unplayed (``reason`` says why, e.g. the
    service's ``"time-limit"``)."""
    recorded = game.tags.get("Result") or game.result_token
    return _Ruler(game, recorded, list(game.warnings)).unknown(reason, 0, detail)


def _as_game(moves: Sequence[str | PdnMove], fen: str | None, variant: Variant) -> PdnGame:
    """Move texts as game 1, numbered as PDN would number them from the start position."""
    if isinstance(moves, str):
        raise TypeError("rule_game takes a PdnGame or a list of move texts, not a string")
    first = "W" if variant.white_moves_first else "B"
    first_mover = not fen or fen.strip()[:1].upper() == first
    out = []
    for ply, m in enumerate(moves, 1):
        if isinstance(m, PdnMove):
            out.append(m)
            continue
        number = move_number(ply, first_mover)
        side: Side = "first" if (ply % 2 == 1) == first_mover else "second"
        out.append(PdnMove(number, side, str(m), ply=ply - 1))
    tags = {"FEN": fen} if fen else {}
    return PdnGame(index=1, tags=tags, moves=out)


class _Ruler:
    """Builds the rulings of one game."""

    def __init__(self, game: PdnGame, recorded: str | None, warnings: list[str]) -> None:
        self.game = game
        self.recorded = recorded
        self.variant = INTERNATIONAL
        self.warnings = warnings

    def make(self, score: int | None, reason: str, ply: int, detail: str) -> Ruling:
        result = UNKNOWN if score is None else self.variant.result_for(score)
        agrees = score is not None and white_score_of(self.recorded, self.variant) == score
        tags = self.game.tags
        return Ruling(
            self.game.index,
            tags.get("White"),
            tags.get("Black"),
            result,
            reason,
            ply,
            self.recorded,
            agrees,
            detail,
            self.variant.name,
            list(self.warnings),
        )

    def unknown(self, reason: str, ply: int, detail: str) -> Ruling:
        return self.make(None, reason, ply, detail)

    def event(self, played: Replay, options: RuleOptions) -> Ruling:
        pos, ply, event = played.position, played.ply, played.event
        assert event is not None
        mover = "white" if pos.white_to_move else "black"
        if event in LOSSES:
            what = "has no pieces left" if event == NO_PIECES else "has no legal move"
            detail = f"{mover} to move {what}: {_other(mover)} wins"
        elif event == THREEFOLD:
            detail = f"third occurrence of {pos.fen()} ({mover} to move)"
        else:
            detail = _count_detail(played.state.count.rule, played.state.count.limit, options)
        if ply:
            detail += f" (after ply {ply}, {self.game.moves[ply - 1].text})"
        rest = len(self.game.moves) - ply
        if rest > 0:
            detail += f"; the record goes on for {plies(rest)} more"
        return self.make(played.white_score(), event, ply, detail)

    def final(self, played: Replay, tb: Any, options: RuleOptions) -> Ruling:
        pos, ply, state = played.position, played.ply, played.state
        if tb is None:
            return self.unknown(
                "unfinished",
                ply,
                f"no terminal event in {ply} plies and no "
                f"tablebase to rule the final position {pos.fen()}",
            )
        verdict = rule_position(
            tb,
            pos,
            state.count,
            state.counter,
            state.seen_twice(),
            options.search_nodes,
            options.deadline,
        )
        return self.make(verdict.white_score, verdict.reason, ply, verdict.detail)


def _count_detail(rule: str, limit: int, options: RuleOptions) -> str:
    """What a count rule that fired means, in words."""
    if rule == "25-move":
        return f"25-move rule: {limit} plies of king moves without a capture"
    if rule in ("16-move", "5-move"):
        reading = "" if options.disputed == "restart" else ", cumulative reading"
        return f"{rule} rule: {limit} plies since the ending's material arose{reading}"
    if rule == "7-move":
        return f"7-move rule: two kings against one king, {limit} plies since the material arose"
    if rule == "king-against-king":
        return "king against king: drawn at once, no capture forced now or next move"
    if options.english_preset == "casual":
        return f"{rule} rule (casual): {limit} plies without a capture"
    return f"{rule} rule: {limit} plies without a man move or a capture"


def _other(colour: str) -> str:
    return "black" if colour == "white" else "white"


def rule_games(
    games: Iterable[PdnGame],
    *,
    variant: Variant | str | None = None,
    tablebase: Any = None,
    options: RuleOptions | None = None,
    instead: Callable[[PdnGame], Ruling | None] | None = None,
) -> Iterator[tuple[PdnGame, Ruling]]:
    """(game, ruling) for each game, in the file's order.

    A game without moves and without a GameType tag (a composed problem: a FEN and a result)
    is legal in several variants. Without ``variant``, it takes the variant the file's other
    games settle (the nearest game before it with a GameType tag or with moves that replay
    legally, else the first such game after it); when no game settles one, the board does:
    a file whose positions all lie on squares 1-32 is 8x8, and English is the first 8x8
    variant (a file of English problems is English), else International. The ruling's
    ``warnings`` say which. Such games are held back only until the variant is settled, so
    the rulings still stream. ``instead``, called before each game is ruled, may return
    the ruling to give instead (the service's time budget).
    """
    held: list[PdnGame] = []  # problems waiting for the file's variant
    settled: Variant | None = None
    settled_by = 0
    board = 0  # the smallest board size the problems' positions fit

    def rule(game: PdnGame, v: Variant | str | None, note: str | None) -> Ruling:
        ruling = instead(game) if instead is not None else None
        if ruling is None:
            ruling = rule_game(game, variant=v, tablebase=tablebase, options=options)
            if note is not None:
                ruling.warnings.append(note)
        return ruling

    def release(v: Variant, source: str) -> Iterator[tuple[PdnGame, Ruling]]:
        for problem in held:
            yield problem, rule(problem, v, _problem_note(v, source))
        held.clear()

    for game in games:
        if variant is None and _is_problem(game):
            board = max(board, _board_needed(game.fen or ""))
            if settled is None:
                held.append(game)
                continue
            yield game, rule(game, settled, _problem_note(settled, str(settled_by)))
            continue
        ruling = rule(game, variant, None)
        if variant is None and not ruling.is_error and ruling.variant is not None:
            settled, settled_by = get_variant(ruling.variant), game.index
            yield from release(settled, str(settled_by))
        yield game, ruling
    if held:
        fallback = ENGLISH if board <= ENGLISH.size else INTERNATIONAL
        yield from release(fallback, "")


def _problem_note(v: Variant, source: str) -> str:
    """The warning of a problem ruled under ``v``, settled by game ``source`` of the file
    (empty: by the board its positions fit)."""
    why = (
        f"taken from game {source} of the file"
        if source
        else f"(no game of the file settles it; its positions fit the {v.size}x{v.size} board)"
    )
    return f"no GameType tag and no moves: variant {v.name} {why}"


def _is_problem(game: PdnGame) -> bool:
    """A game without moves and without a GameType tag (nothing in it names a variant)."""
    return game.error is None and not game.moves and "GameType" not in game.tags


def _board_needed(fen: str) -> int:
    """The smallest board size (squares per side) on which every square of a FEN's piece
    fields lies: PDN numbers (``32`` fits 8x8, ``33`` needs 10x10) or alphanumeric names
    (``h8`` fits 8x8, ``j10`` needs 10x10). Other fields (Frisian's king runs) are ignored."""
    size = 0
    for fld in fen.split(":")[1:]:
        if fld[:1] not in ("W", "B"):
            continue
        for token in re.split(r"[,-]", fld[1:]):
            name = token.strip().removeprefix("K")
            if re.fullmatch(r"[0-9]{1,4}", name):
                n = int(name)
                size = max(size, next((s for s in (8, 10, 12) if n <= s * s // 2), 99))
            elif re.fullmatch(r"[a-pA-P][0-9]{1,2}", name):
                size = max(size, ord(name[0].lower()) - ord("a") + 1, int(name[1:]))
    return size


def rule_file(
    path_or_file: str | os.PathLike[str] | TextIO,
    *,
    variant: Variant | str | None = None,
    db: Any = None,
    options: RuleOptions | None = None,
) -> Iterator[Ruling]:
    """Rule every game of a PDN file (a path, or an open text file such as stdin).

    ``db`` is a database directory (one variant's, or one with a subdirectory per variant,
    see :mod:`adjudicator.databases`) or an already open tablebase (or a mapping from
    variant names to them). A malformed game is ruled ``"pdn-error"`` and the games after
    it are still read. A missing file raises ``OSError``.
    """
    with _opened(db) as tb:
        strict = options is not None and options.strict
        games = read_games(path_or_file, errors="collect", strict=strict)
        for _, ruling in rule_games(games, variant=variant, tablebase=tb, options=options):
            yield ruling


@contextlib.contextmanager
def _opened(db: Any) -> Iterator[Any]:
    if db is None or not isinstance(db, (str, os.PathLike)):
        yield db
        return
    with open_tables(db) as tables:
        yield tables
