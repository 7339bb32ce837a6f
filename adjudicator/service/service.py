"""The work behind the service's endpoints (:class:`Service`): the open databases, the
probe of a position with its moves, the rulings of PDN and JSON games, and the errors
answered as ``{"error": ...}`` (:class:`ApiError`). The HTTP side is :mod:`.app`.

Safety: a database is named in messages by its variant, never by its server path
(:class:`~tablebase.probe.database.Tablebase`'s ``name``); the number of games and moves
and the search are bounded by the :class:`~.settings.ServiceSettings`.

Speed (issue 54): a probe plays each move once and reads the values of every position after
a move in one batched look-up (:meth:`~tablebase.probe.database.Tablebase.probe_many`),
which the count-aware search starts from; the premise of the search's shortcut is read
once per database (its slices' longest wins), not per request; the compiled probes run on
one thread each (the service's processes and threads are its parallelism).
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import numba
from pydantic import ValidationError

from adjudicator.databases import open_each
from adjudicator.drawrules import RuleOptions
from adjudicator.pdn import PdnGame, read_games
from adjudicator.ruling import BadTag, Ruling, check_fen_text, not_ruled, rule_game, rule_games
from adjudicator.service.models import GameModel, OptionsModel
from adjudicator.service.settings import ServiceSettings
from adjudicator.tablesearch import premise_for
from tablebase.probe.cache import BlockCache
from tablebase.probe.database import MissingSliceError, Tablebase, normalise
from tablebase.rules import Move, legal_moves, play
from tablebase.rules.countsearch import Value, under_count
from tablebase.rules.notation import move_text
from tablebase.rules.outcome import RESULT_NAMES, move_rank, pieces
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import VARIANTS, Variant, get_variant
from tablebase.storage.checks import damaged_slice_files
from tablebase.storage.slicefile import TableFileError

T = TypeVar("T")
Premise = tuple[bool | frozenset[str], tuple[tuple[str, TableFileError], ...]]

_threads = threading.local()  # per thread: True once its compiled probes run on one thread


def _one_compiled_thread() -> None:
    """Run this thread's parallel kernels (a batch's look-ups) on one thread: a probe's
    batch is a few positions, and the service's parallelism is its threads and processes
    (numba's count is per thread)."""
    if not getattr(_threads, "one", False):
        numba.set_num_threads(1)
        _threads.one = True


class ApiError(Exception):
    """An error answered as ``{"error": message, **extra}`` with ``status``."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


def _open_named(path: Path, variant: Variant, cache: BlockCache | None) -> Tablebase:
    """A variant's tables, named in messages by the variant, never by a server path."""
    return Tablebase(path, variant, cache=cache, name=variant.name)


class Service:
    """The state behind the endpoints: the open databases and the settings."""

    def __init__(
        self,
        dirs: Mapping[str, Path],
        settings: ServiceSettings,
        cache: BlockCache | None = None,
    ) -> None:
        """Open each variant's database in ``dirs`` (:func:`adjudicator.databases.open_each`),
        their blocks read through ``cache`` (None: the process's default)."""
        self.settings = settings
        self.cache = cache
        #: the open tables of each variant, named in messages by the variant, never by a
        #: server path
        self.tables: dict[str, Tablebase] = open_each(dirs, cache, _open_named)
        #: the slices present in each variant's database, by name
        self.available = {name: [s.name for s in tb.slices()] for name, tb in self.tables.items()}
        #: each variant's damaged slice files (name -> reason): found at start (each file's
        #: metadata checked) or when read; only the answers that need them fail (503 naming
        #: the file)
        self.damaged: dict[str, dict[str, str]] = {
            name: {
                f.name: why for f, why in damaged_slice_files(tb.path, tb.variant, False).items()
            }
            for name, tb in self.tables.items()
        }
        #: per variant, what the count search's shortcut may trust, and the slices whose
        #: longest win could not be read (:func:`adjudicator.tablesearch.premise_for`):
        #: read once, on first use (the service reads its files as they were when opened)
        self.premises: dict[str, Premise] = {}
        self.limiter: anyio.CapacityLimiter | None = None
        self.probe_limiter: anyio.CapacityLimiter | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ruling work on the bounded worker threads."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    async def run_probe(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a probe on its own threads, so that it never waits for a ruling's slot."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.probe_limiter)

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) what the endpoints run, before serving."""
        for name in VARIANTS:
            variant = get_variant(name)
            start = Position.start(variant)
            for move in legal_moves(start):
                play(start, move)
            tb = self.tables.get(name)
            if tb is not None and self.available[name]:
                try:
                    corner = variant.squares - variant.per_row + 1  # two kings in the corners
                    tb.probe(Position.from_fen(f"W:WK{corner}:BK{variant.per_row}", variant))
                except (LookupError, ValueError):
                    pass
                except TableFileError as error:  # the service starts; /health names it
                    self.note_damaged(error)
            rule_game([], variant=variant, options=RuleOptions())

    def note_damaged(self, error: TableFileError) -> str:
        """Record a damaged slice file under its database's variant (for ``/health``); the
        message naming it by variant and file name, never by its server path."""
        for name, tb in self.tables.items():
            if Path(error.path).parent == tb.path:
                self.damaged[name][Path(error.path).name] = error.reason
                return f"the {name} slice file {Path(error.path).name} is damaged: {error.reason}"
        return f"a slice file ({Path(error.path).name}) is damaged: {error.reason}"

    def close(self) -> None:
        """Close every database's files and drop its blocks from the cache (a later probe
        opens them again)."""
        for tb in self.tables.values():
            tb.close()

    # --- /health --------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        variants = {}
        damaged = False
        for name in sorted(VARIANTS):
            tb = self.tables.get(name)
            slices = self.available.get(name, [])
            bad = dict(sorted(self.damaged.get(name, {}).items()))
            damaged = damaged or bool(bad)
            variants[name] = {
                "tables": tb is not None,
                "slices": slices,
                "slice_count": len(slices),
                "loaded": tb.opened if tb else 0,  # slices whose files are open
                "max_pieces": max((sum(int(c) for c in s) for s in slices), default=0),
                "damaged": [{"file": f, "error": reason} for f, reason in bad.items()],
            }
        s = self.settings
        limits = {
            "max_body_bytes": s.max_body_bytes,
            "max_games": s.max_games,
            "max_plies": s.max_plies,
            "search_nodes": s.search_nodes,
        }
        status = "degraded" if damaged else "ok"  # damaged files: their answers fail
        cache = self.cache
        blocks = {"bytes": cache.capacity, "used": cache.used} if cache is not None else None
        return {"status": status, "variants": variants, "limits": limits, "cache": blocks}

    # --- /probe ---------------------------------------------------------------------------
    def probe(self, variant_name: str, fen: str, elapsed: int = 0) -> dict[str, Any]:
        variant = get_variant(variant_name)
        try:
            check_fen_text(fen)
        except BadTag as error:
            raise ApiError(400, str(error)) from None
        try:
            pos = Position.from_fen(fen, variant)
        except FenError as error:
            raise ApiError(400, str(error)) from None
        _one_compiled_thread()
        tb = self.tables.get(variant.name)
        moves = legal_moves(pos)
        afters = [play(pos, m) for m in moves]
        values = self._values_after(tb, afters)
        rows = [
            self._move_row(pos, m, moves, a, v)
            for m, a, v in zip(moves, afters, values, strict=True)
        ]
        rows.sort(key=lambda row: move_rank(row["result"], row["dtw"]))
        out: dict[str, Any] = {
            "variant": variant.name,
            "fen": pos.fen(),
            "side": "white" if pos.white_to_move else "black",
            "slice": None,
            "result": None,
            "dtw": None,
            "result_under_count": None,
            "count": None,
            "king_runs": king_runs_json(pos),
            "moves": rows,
        }
        own, opp = pieces(pos)
        if own == 0 or not moves:
            out.update(result="loss", dtw=0)  # no pieces or no legal move: lost
            return out
        if opp == 0:
            raise ApiError(422, f"{pos.fen()}: the side not to move has no pieces", **out)
        out["slice"] = normalise(pos)[0].name
        if tb is None:
            raise ApiError(404, f"no tables are loaded for {variant.name}", **out)
        try:
            wdl, dtw = tb.probe(pos)
        except MissingSliceError as error:
            raise ApiError(
                404, f"slice {error.slice} is not in the {variant.name} database", **out
            ) from None
        out.update(result=RESULT_NAMES[wdl], dtw=dtw)
        self._under_count(tb, pos, moves, (afters, values), rows, elapsed, out)
        return out

    @staticmethod
    def _values_after(tb: Tablebase | None, afters: list[Position]) -> list[Value | None]:
        """The table value of each position after a move, read in one batch; None where it
        is unknown (no tables, its slice missing); the error of a damaged file raised."""
        if tb is None:
            return [None] * len(afters)
        values = tb.probe_many(afters)
        for i, v in enumerate(values):
            if v is None:  # probed alone: its own error, as when each move was probed alone
                try:
                    values[i] = tb.probe(afters[i])
                except (MissingSliceError, ValueError):
                    pass
        return values

    def _under_count(
        self,
        tb: Tablebase,
        pos: Position,
        moves: list[Move],
        after: tuple[list[Position], list[Value | None]],
        rows: list[dict[str, Any]],
        elapsed: int,
        out: dict[str, Any],
    ) -> None:
        """``result_under_count`` of the position and its moves, ``elapsed`` plies into the
        count in force (counts never turn a loss into a win: values stay null outside the
        tables)."""
        counter = RuleOptions().counter(pos.variant)
        try:
            premise = self.premises.get(pos.variant.name)
            if premise is None:
                premise = self.premises[pos.variant.name] = premise_for(tb)
            shortcut, unreadable = premise
            count, whole, per_move = under_count(
                tb,
                pos,
                counter,
                elapsed,
                moves,
                nodes=self.settings.search_nodes,
                shortcut=shortcut,
                deadline=time.monotonic() + self.settings.request_ms / 1000,
                unreadable=dict(unreadable),
                afters=after[0],
                values=after[1],
            )
        except LookupError:
            return  # a move leads outside the tables: the values stay null
        out["result_under_count"] = whole
        out["count"] = {"rule": count.rule, "limit": count.finite_limit, "elapsed": count.elapsed}
        by_move = {(m.frm, m.to, m.captures): v for m, v in zip(moves, per_move, strict=True)}
        for row in rows:
            row["result_under_count"] = by_move[(row["from"], row["to"], tuple(row["captures"]))]

    @staticmethod
    def _move_row(
        pos: Position, move: Move, moves: list[Move], after: Position, value: Value | None
    ) -> dict[str, Any]:
        result = dtw = None
        if value is not None:
            wdl, d = value
            result, dtw = RESULT_NAMES[-wdl], (None if d is None else d + 1)
        return {
            "move": move_text(pos, move, moves),
            "from": move.frm,
            "to": move.to,
            "captures": list(move.captures),
            "path": list(move.path),
            "result": result,
            "dtw": dtw,
            "result_under_count": None,
            "fen": after.fen(),
        }

    # --- /adjudicate ----------------------------------------------------------------------
    def rule_pdn(
        self, body: bytes, variant: str | None, options: RuleOptions, collect: bool
    ) -> list[dict[str, Any]]:
        games: list[PdnGame] = []
        source = io.BytesIO(body)
        for game in read_games(source, name="<request>", errors="collect", strict=options.strict):
            if game.error is not None and not collect:
                raise ApiError(400, f"malformed PDN: {game.error}", game=game.index)
            games.append(game)
            if len(games) > self.settings.max_games:
                raise ApiError(413, f"too many games (at most {self.settings.max_games})")
            if len(game.moves) > self.settings.max_plies:
                raise ApiError(
                    413, f"game {game.index}: too many moves (at most {self.settings.max_plies})"
                )
        if not games:
            raise ApiError(400, "no games found in the PDN text")
        options = self._with_deadline(options)

        def past_budget(game: PdnGame) -> Ruling | None:
            if self._past(options):
                return not_ruled(game, "time-limit", self._budget_text())
            return None

        rulings = rule_games(
            games, variant=variant, tablebase=self.tables, options=options, instead=past_budget
        )
        return [ruling.to_dict() for _, ruling in rulings]

    def _with_deadline(self, options: RuleOptions) -> RuleOptions:
        """The options with this request's deadline, counted from now (the worker's start)."""
        return replace(options, deadline=time.monotonic() + self.settings.request_ms / 1000)

    @staticmethod
    def _past(options: RuleOptions) -> bool:
        return options.deadline is not None and time.monotonic() > options.deadline

    def _budget_text(self) -> str:
        return (
            f"not ruled: the request's time budget of {self.settings.request_ms} ms "
            "(ADJUDICATOR_REQUEST_MS) ran out before this game"
        )

    def rule_json(self, games: list[GameModel]) -> list[dict[str, Any]]:
        out = []
        deadline = self._with_deadline(RuleOptions()).deadline
        for index, g in enumerate(games, 1):
            variant = get_variant(g.variant.value)
            if g.fen is not None:
                try:
                    Position.from_fen(g.fen, variant)
                except FenError as error:
                    raise ApiError(400, f"game {index}: {error}") from None
            options = replace(self.options_of(g.options), deadline=deadline)
            if self._past(options):
                game = PdnGame(index=index, moves=[])
                out.append(not_ruled(game, "time-limit", self._budget_text()).to_dict())
                continue
            ruling: Ruling = rule_game(
                g.moves,
                variant=variant,
                tablebase=self.tables.get(variant.name),
                options=options,
                fen=g.fen,
            )
            out.append(replace(ruling, game=index).to_dict())
        return out

    def options_of(self, o: OptionsModel) -> RuleOptions:
        """The rule options a request's ``options`` stand for, with the search budget."""
        return RuleOptions(
            disputed=o.disputed,
            english_preset=o.english_rule,
            english_count=o.english_count,
            elapsed=o.elapsed,
            search_nodes=self.settings.search_nodes,
            strict=o.strict,
        )

    def parse_json_games(self, body: bytes) -> list[GameModel]:
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as error:
            raise ApiError(400, f"malformed JSON: {error}") from None
        items = data if isinstance(data, list) else [data]
        if not items:
            raise ApiError(400, "no games in the JSON body")
        if len(items) > self.settings.max_games:
            raise ApiError(413, f"too many games (at most {self.settings.max_games})")
        games = []
        for index, item in enumerate(items, 1):
            try:
                game = GameModel.model_validate(item)
            except ValidationError as error:
                raise ApiError(422, f"game {index}: {validation_text(error.errors())}") from None
            if len(game.moves) > self.settings.max_plies:
                raise ApiError(
                    413, f"game {index}: too many moves (at most {self.settings.max_plies})"
                )
            games.append(game)
        return games


def king_runs_json(pos: Position) -> dict[str, Any] | None:
    """The king-move counter of ``pos`` (variants with a king-move limit; None otherwise):
    ``{"limit": 3, "white": {"square": 28, "moves": 2} | null, "black": ..., "barred": 28 |
    null}``, ``barred`` being the side to move's king that may not make a quiet move now."""
    limit = pos.variant.king_move_limit
    if limit == 0:
        return None
    out: dict[str, Any] = {"limit": limit, "barred": None}
    men = {"white": pos.white_men, "black": pos.black_men}
    for colour, (square, n) in zip(("white", "black"), pos.king_runs, strict=True):
        out[colour] = {"square": square, "moves": n} if n else None
        mover = "white" if pos.white_to_move else "black"
        if colour == mover and n >= limit and men[colour]:
            out["barred"] = square
    return out


def validation_text(errors: list[Any]) -> str:
    """The first few validation errors (pydantic's) as one line."""
    parts = []
    for e in errors[:5]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc}: {e.get('msg', 'invalid')}" if loc else str(e.get("msg")))
    return "; ".join(parts)
