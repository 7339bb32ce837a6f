"""The adjudication service: an HTTP API over the rulings and the tables, and the endgame
explorer page.

``create_app(db)`` builds the FastAPI application; ``adjudicator serve --db DIR`` runs it with
uvicorn. Endpoints (OpenAPI at ``/openapi.json``, interactive docs at ``/docs``):

- ``POST /adjudicate``: PDN text (``text/plain`` or ``application/x-pdn``, one or more games;
  query parameters ``variant``, ``disputed``, ``english_rule``, ``english_count``, ``elapsed``,
  ``errors``) or a JSON game ``{"variant", "fen", "moves", "options"}`` (or a list of them).
  Answers a JSON list with one object per game, the objects of ``adjudicator rule --json``.
- ``GET /probe?variant=...&fen=...``: the position's value for the side to move and every
  legal move with its value and distance, best first. A position whose slice is not in the
  database answers 404 naming the slice, with the legal moves (values null where unknown).
- ``GET /health``: status, and per variant whether tables are loaded and which slices.
- ``GET /``: the endgame explorer (static files in ``adjudicator/service/static/``).

Databases: ``db`` is a mapping ``{variant: directory}``, a directory holding one subdirectory
per variant (``data/`` with ``data/international/``, ``data/english/``), or one variant's
directory (its ``*.h5`` slice files name the variant), or None (no tables: games that end
without a terminal event are ruled ``unknown``, probes list the legal moves only).

Safety: the variant is checked against the fixed set of known variants and slice files are
named from piece counts, so nothing a client sends becomes a path (and messages name a
database by its variant, never by its server path). Request bodies, the number of games and
of moves, and the tablebase search are bounded (:class:`ServiceSettings`, read by ``serve``
from ``ADJUDICATOR_MAX_BODY_BYTES``, ``ADJUDICATOR_MAX_GAMES``, ``ADJUDICATOR_MAX_PLIES``,
``ADJUDICATOR_SEARCH_NODES``, ``ADJUDICATOR_THREADS``); every error is a JSON object
``{"error": "..."}`` with a 4xx status (5xx only for a server fault). The CPU work runs in a
bounded thread pool, off the event loop.

Memory: the tables are read a block at a time through one bounded cache shared by every
variant and thread (:mod:`tablebase.probe.cache`), ``ADJUDICATOR_CACHE_BYTES`` bytes
(``adjudicator serve --cache SIZE``; default a quarter of the machine's memory); nothing
is loaded whole, so the service's memory stays within the cache plus its fixed overhead
whatever it is asked.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from adjudicator.databases import open_each, resolve_databases
from adjudicator.drawrules import RuleOptions
from adjudicator.pdn import PdnGame, read_games
from adjudicator.ruling import BadTag, Ruling, check_fen_text, not_ruled, rule_game, rule_games
from adjudicator.tablesearch import shortcut_for, unreadable_for
from tablebase.probe.cache import BlockCache
from tablebase.probe.database import MissingSliceError, Tablebase, normalise
from tablebase.rules import Move, legal_moves, play
from tablebase.rules.countsearch import under_count
from tablebase.rules.notation import move_text
from tablebase.rules.outcome import RESULT_NAMES, move_rank, pieces
from tablebase.rules.position import FenError, Position
from tablebase.rules.variants import VARIANTS, Variant, get_variant
from tablebase.storage.checks import damaged_slice_files
from tablebase.storage.slicefile import TableFileError, slice_path

log = logging.getLogger("adjudicator.service")

STATIC_DIR = Path(__file__).resolve().parent / "static"
PDN_TYPES = ("text/plain", "application/x-pdn", "application/pdn")
JSON_TYPES = ("application/json",)
MAX_FEN = 600
MAX_MOVE_TEXT = 64

T = TypeVar("T")


# The variants a client may name (checked against this fixed set, never used as a path).
VariantName = StrEnum("VariantName", {name: name for name in VARIANTS})  # type: ignore[misc]


@dataclass(frozen=True)
class ServiceSettings:
    """Limits and sizes of the service."""

    max_body_bytes: int = 1 << 20  # request body (PDN or JSON)
    max_games: int = 100  # games per /adjudicate request
    max_plies: int = 2000  # moves (plies) per game
    search_nodes: int = 200_000  # tablebase search budget per ruled game
    threads: int = 2  # rulings run on at most this many worker threads (see SERVICE.md)
    probe_threads: int = 2  # probes have their own threads: they never queue behind rulings
    request_ms: int = 5000  # time budget of one request (a ruling, a /probe count search)
    max_connections: int = 1000  # open connections; more are answered 503 at once
    idle_seconds: int = 5  # an idle (keep-alive) connection is closed after this
    request_seconds: int = 10  # a request's header and body must arrive within this
    # memory for table blocks, shared by every variant's tables (None: a quarter of the
    # machine's memory; tablebase.probe.cache)
    cache_bytes: int | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceSettings:
        """Settings with each field overridden by ``ADJUDICATOR_<FIELD>`` when set
        (``ADJUDICATOR_MAX_BODY_BYTES=65536``); raises ``ValueError`` for a bad value."""
        environ = os.environ if environ is None else environ
        values = {}
        for name in cls.__dataclass_fields__:
            key = f"ADJUDICATOR_{name.upper()}"
            if key in environ:
                try:
                    values[name] = int(environ[key])
                except ValueError:
                    raise ValueError(f"{key} must be an integer, not {environ[key]!r}") from None
                if values[name] < 1:
                    raise ValueError(f"{key} must be at least 1, not {values[name]}")
        return cls(**values)


class ApiError(Exception):
    """An error answered as ``{"error": message, **extra}`` with ``status``."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


# --------------------------------------------------------------------------- databases


class ServedTablebase(Tablebase):
    """A :class:`Tablebase` that names its database by the variant, never by a server path,
    and checks a position's slice (from its exact piece counts) is present before probing."""

    def __init__(self, path: Path, variant: Variant, cache: BlockCache | None = None) -> None:
        super().__init__(path, variant, cache=cache)
        self.available = [s.name for s in self.slices()]
        self._present = set(self.available)
        #: damaged slice files (name -> reason): found at start (each file's metadata
        #: checked) or when read; only the answers that need them fail (503 naming the file)
        self.damaged: dict[str, str] = {
            f.name: reason for f, reason in damaged_slice_files(path, variant, False).items()
        }

    def probe_byte(self, pos: Position | str) -> int:
        p = self._position(pos)
        own, other = pieces(p)
        if own == 0:
            return 1  # the side to move has no pieces: lost (value 1, dtw 0)
        if other == 0:
            raise ValueError(f"{p.fen()}: the side not to move has no pieces; the game is over")
        s, _ = normalise(p)
        if s.name not in self._present:
            if not slice_path(self.path, s).exists():  # s.name is digits: no path from input
                raise MissingSliceError(s.name, Path(self.variant.name), p.fen())
            self._present.add(s.name)
        return super().probe_byte(p)

    def table(self, s, fen: str = ""):  # type: ignore[no-untyped-def]
        try:
            return super().table(s, fen)
        except MissingSliceError:
            raise MissingSliceError(s.name, Path(self.variant.name), fen) from None

    @property
    def loaded(self) -> int:
        """Number of slices read into memory so far."""
        return self.opened


def open_databases(
    dirs: Mapping[str, Path], cache: BlockCache | None = None
) -> dict[str, ServedTablebase]:
    """Open each variant's directory (:func:`adjudicator.databases.open_each`), every
    variant's tables reading their blocks through ``cache`` (None: the process's default)."""
    return open_each(dirs, cache, ServedTablebase)


# --------------------------------------------------------------------------- request models


class OptionsModel(BaseModel):
    """How the draw rules are read (as the ``adjudicator rule`` options)."""

    model_config = ConfigDict(extra="forbid")

    disputed: Literal["restart", "cumulative"] = "restart"
    english_rule: Literal["standard", "casual"] = "standard"
    english_count: int | None = Field(default=None, ge=1, le=1000)
    elapsed: int = Field(default=0, ge=0, le=10_000)
    strict: bool = False


class GameModel(BaseModel):
    """One game as JSON: moves from ``fen`` (or the variant's initial position)."""

    model_config = ConfigDict(extra="forbid")

    variant: VariantName = VariantName.international
    fen: Annotated[str, StringConstraints(max_length=MAX_FEN)] | None = None
    moves: list[Annotated[str, StringConstraints(max_length=MAX_MOVE_TEXT)]]
    options: OptionsModel = OptionsModel()


class MoveModel(BaseModel):
    """A legal move and its value for the side to move (null when outside the tables)."""

    move: str
    from_: int = Field(alias="from")
    to: int
    captures: list[int]
    path: list[int]
    result: Literal["win", "draw", "loss"] | None
    dtw: int | None
    result_under_count: Literal["win", "draw", "loss", "unknown"] | None
    fen: str


class ProbeModel(BaseModel):
    """A position's value for the side to move and its moves, best first."""

    variant: str
    fen: str
    side: Literal["white", "black"]
    slice: str | None
    result: Literal["win", "draw", "loss"] | None
    dtw: int | None
    result_under_count: Literal["win", "draw", "loss", "unknown"] | None
    count: dict[str, Any] | None
    king_runs: dict[str, Any] | None
    moves: list[MoveModel]


class ErrorModel(BaseModel):
    error: str


def _inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema with its ``$defs`` inlined (for ``openapi_extra``)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.split("/")[-1]])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(schema)


_GAME_SCHEMA = _inline_schema(GameModel)
_ADJUDICATE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "text/plain": {"schema": {"type": "string", "description": "PDN games"}},
            "application/x-pdn": {"schema": {"type": "string", "description": "PDN games"}},
            "application/json": {
                "schema": {"anyOf": [_GAME_SCHEMA, {"type": "array", "items": _GAME_SCHEMA}]}
            },
        },
    }
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorModel, "description": text}
    for code, text in (
        (400, "malformed PDN, JSON or FEN"),
        (413, "body too large, or too many games or moves"),
        (415, "unsupported content type"),
        (422, "invalid parameters or JSON fields"),
    )
}


# --------------------------------------------------------------------------- the work


class Service:
    """The state behind the endpoints: the open databases and the settings."""

    def __init__(self, tables: dict[str, ServedTablebase], settings: ServiceSettings) -> None:
        self.tables = tables
        self.settings = settings
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
            if tb is not None and tb.available:
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
                tb.damaged[Path(error.path).name] = error.reason
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
            slices = tb.available if tb else []
            bad = dict(sorted(tb.damaged.items())) if tb else {}
            damaged = damaged or bool(bad)
            variants[name] = {
                "tables": tb is not None,
                "slices": slices,
                "slice_count": len(slices),
                "loaded": tb.loaded if tb else 0,
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
        cache = getattr(self, "cache", None)
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
        tb = self.tables.get(variant.name)
        moves = legal_moves(pos)
        rows = [self._move_row(tb, pos, m, moves) for m in moves]
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
        self._under_count(tb, pos, moves, rows, elapsed, out)
        return out

    def _under_count(
        self,
        tb: Tablebase,
        pos: Position,
        moves: list[Move],
        rows: list[dict[str, Any]],
        elapsed: int,
        out: dict[str, Any],
    ) -> None:
        """``result_under_count`` of the position and its moves, ``elapsed`` plies into the
        count in force (counts never turn a loss into a win: values stay null outside the
        tables)."""
        counter = RuleOptions().counter(pos.variant)
        try:
            count, whole, per_move = under_count(
                tb,
                pos,
                counter,
                elapsed,
                moves,
                nodes=self.settings.search_nodes,
                shortcut=shortcut_for(tb),
                deadline=time.monotonic() + self.settings.request_ms / 1000,
                unreadable=unreadable_for(tb),
            )
        except LookupError:
            return  # a move leads outside the tables: the values stay null
        out["result_under_count"] = whole
        out["count"] = {"rule": count.rule, "limit": count.finite_limit, "elapsed": count.elapsed}
        by_move = {(m.frm, m.to, m.captures): v for m, v in zip(moves, per_move, strict=True)}
        for row in rows:
            row["result_under_count"] = by_move[(row["from"], row["to"], tuple(row["captures"]))]

    def _move_row(
        self, tb: Tablebase | None, pos: Position, move: Move, moves: list[Move]
    ) -> dict[str, Any]:
        after = play(pos, move)
        result = dtw = None
        if tb is not None:
            try:
                wdl, d = tb.probe(after)
                result, dtw = RESULT_NAMES[-wdl], (None if d is None else d + 1)
            except (MissingSliceError, ValueError):
                pass
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
            options = replace(self._options(g.options), deadline=deadline)
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

    def _options(self, o: OptionsModel) -> RuleOptions:
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
                raise ApiError(422, f"game {index}: {_validation_text(error.errors())}") from None
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


def _validation_text(errors: list[Any]) -> str:
    parts = []
    for e in errors[:5]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc}: {e.get('msg', 'invalid')}" if loc else str(e.get("msg")))
    return "; ".join(parts)


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise ApiError(400, "malformed Content-Length header")
        if int(declared) > limit:
            raise ApiError(413, f"request body too large (at most {limit} bytes)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body too large (at most {limit} bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def _content_kind(request: Request, body: bytes) -> str:
    """``"pdn"`` or ``"json"``, from the Content-Type (sniffed from the body without one)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in PDN_TYPES:
        return "pdn"
    if ctype in JSON_TYPES or ctype.endswith("+json"):
        return "json"
    if not ctype:
        return "json" if body.lstrip()[:1] in (b"{", b"[") else "pdn"
    raise ApiError(
        415,
        f"unsupported content type {ctype!r} (use text/plain or application/x-pdn for PDN, "
        f"application/json for a JSON game)",
    )


# --------------------------------------------------------------------------- the app


def create_app(
    db: Mapping[str, str | os.PathLike[str]] | str | os.PathLike[str] | None = None,
    settings: ServiceSettings | None = None,
) -> FastAPI:
    """The FastAPI application serving the databases ``db`` (see the module docstring)."""
    settings = settings or ServiceSettings()
    cache = BlockCache(settings.cache_bytes)  # the service's one budget for table blocks
    app = FastAPI(
        title="Draughts adjudication service",
        version="0.1.0",
        description=(
            "Rules draughts games with the draw rules and the endgame tables, probes positions, "
            "and serves the endgame explorer at `/`."
        ),
        lifespan=_lifespan,
    )
    # The endpoints below find the service through the request (``_service``), never as a
    # variable of this function: FastAPI keeps the endpoint functions in process-wide caches
    # (4,096 of them), so an endpoint holding the service would keep every app ever made,
    # each with its block cache, alive long after it is dropped (issue 40: the service's fuzz,
    # an app per flipped file, grew to 22 GB and was killed by the system).
    app.state.service = Service(open_databases(resolve_databases(db), cache), settings)
    app.state.service.cache = cache
    _install_error_handlers(app)

    @app.get("/health", tags=["service"])
    def health(request: Request) -> dict[str, Any]:
        """Status, and per variant whether tables are loaded and which slices they hold."""
        return _service(request).health()

    @app.get(
        "/probe",
        tags=["tables"],
        response_model=ProbeModel,
        responses={**_ERRORS, 404: {"model": ErrorModel, "description": "outside the tables"}},
    )
    async def probe(
        request: Request,
        fen: Annotated[str, Query(max_length=MAX_FEN, description="the position")],
        variant: Annotated[VariantName, Query()] = VariantName.international,
        elapsed: Annotated[
            int,
            Query(ge=0, le=10_000, description="plies already played under the count in force"),
        ] = 0,
    ) -> JSONResponse:
        """The position's value for the side to move (``result`` win/draw/loss, ``dtw`` plies
        to the end with best play) and every legal move with its value, best first; with
        ``result_under_count`` the value once the count in force (``count``, ``elapsed``
        plies in) is applied: a theoretical win too slow for the count is a draw."""
        service = _service(request)
        out = await service.run_probe(service.probe, variant.value, fen, elapsed)
        return JSONResponse(out)

    @app.post(
        "/adjudicate",
        tags=["rulings"],
        response_model=list[Ruling],  # the dataclass: one schema for CLI and service
        responses=_ERRORS,
        openapi_extra=_ADJUDICATE_BODY,
    )
    async def adjudicate(
        request: Request,
        variant: Annotated[
            VariantName | None, Query(description="PDN: override the GameType tag")
        ] = None,
        disputed: Literal["restart", "cumulative"] = "restart",
        english_rule: Literal["standard", "casual"] = "standard",
        english_count: Annotated[int | None, Query(ge=1, le=1000)] = None,
        elapsed: Annotated[int, Query(ge=0, le=10_000)] = 0,
        strict: Annotated[
            bool, Query(description="every forgiveness of the reader and replay is an error")
        ] = False,
        errors: Annotated[
            Literal["reject", "collect"],
            Query(description="PDN: a malformed game fails the request, or is ruled pdn-error"),
        ] = "reject",
    ) -> JSONResponse:
        """Rule games: PDN text (the query parameters set the options) or a JSON game
        ``{"variant", "fen", "moves", "options"}`` (or a list of them). Answers one object per
        game, as ``adjudicator rule --json``."""
        service = _service(request)
        body = await _read_body(request, service.settings.max_body_bytes)
        if _content_kind(request, body) == "json":
            games = service.parse_json_games(body)
            out = await service.run(service.rule_json, games)
        else:
            options = service._options(
                OptionsModel(
                    disputed=disputed,
                    english_rule=english_rule,
                    english_count=english_count,
                    elapsed=elapsed,
                    strict=strict,
                )
            )
            name = variant.value if variant else None
            out = await service.run(service.rule_pdn, body, name, options, errors == "collect")
        return JSONResponse(out)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


def _service(request: Request) -> Service:
    """The service of the app answering ``request``."""
    return request.app.state.service  # type: ignore[no-any-return]


@asynccontextmanager
async def _lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
    """Start: the worker threads' limits, and the warm-up (compiling what the endpoints run).
    End: the tables closed (their files, and their blocks dropped from the cache)."""
    service: Service = app.state.service
    service.limiter = anyio.CapacityLimiter(service.settings.threads)
    service.probe_limiter = anyio.CapacityLimiter(service.settings.probe_threads)
    await service.run(service.warm_up)
    try:
        yield
    finally:
        service.close()


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"error": f"invalid request: {_validation_text(list(exc.errors()))}"},
            status_code=422,
        )

    @app.exception_handler(TableFileError)
    async def table_error(request: Request, exc: TableFileError) -> JSONResponse:
        message = _service(request).note_damaged(exc)
        log.error("database error: %s", exc)
        return JSONResponse({"error": message}, status_code=503)  # the file, not the request

    @app.exception_handler(ClientDisconnect)
    async def gone(request: Request, exc: ClientDisconnect) -> Response:
        log.info("%s %s: the client disconnected", request.method, request.url.path)
        return Response(status_code=400)  # nobody reads it

    @app.exception_handler(Exception)
    async def fault(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": "internal error"}, status_code=500)


def serve(
    db: str | os.PathLike[str] | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    settings: ServiceSettings | None = None,
) -> None:
    """Run the service with uvicorn until interrupted (settings from the environment, see
    :meth:`ServiceSettings.from_env`, unless given)."""
    import uvicorn

    settings = settings or ServiceSettings.from_env()
    app = create_app(db, settings)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=_bounded_protocol(settings.request_seconds),
        limit_concurrency=settings.max_connections,
        timeout_keep_alive=settings.idle_seconds,
    )


def _bounded_protocol(request_seconds: float) -> type:
    """uvicorn's HTTP/1.1 protocol with three bounds it lacks: a connection that sends nothing
    is closed after the keep-alive timeout (uvicorn arms it only after a response); a request
    whose header or body has begun but is not complete ``request_seconds`` after its first
    byte is closed (a client sending part of a request and going quiet would otherwise hold
    the connection for ever); and a connection over ``limit_concurrency`` open ones is closed
    at once (uvicorn accepts it and answers 503 only once a request arrives, holding the file
    handle meanwhile). It relies on ``H11Protocol``'s attributes (``conn``, ``connections``,
    ``timeout_keep_alive_task``, ``transport``), hence the upper bound on uvicorn in
    ``pyproject.toml``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11Protocol(H11Protocol):
        _request_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
            super().connection_made(transport)
            limit = self.limit_concurrency
            if limit is not None and len(self.connections) > limit:
                self.connections.discard(self)
                transport.close()
                return
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

        def data_received(self, data: bytes) -> None:
            if self._request_deadline is None and self.conn.their_state is h11.IDLE:
                self._request_deadline = self.loop.call_later(request_seconds, self._too_slow)
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not (
                h11.SEND_BODY
            ):
                self._cancel_deadline()  # the request is whole (or the connection ends)

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_deadline()
            super().connection_lost(exc)

        def _cancel_deadline(self) -> None:
            if self._request_deadline is not None:
                self._request_deadline.cancel()
                self._request_deadline = None

        def _too_slow(self) -> None:
            self._request_deadline = None
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                if not self.transport.is_closing():
                    self.transport.close()

    return BoundedH11Protocol
