"""The adjudication service: an HTTP API over the rulings and the tables, and the endgame
explorer page.

``create_app(db)`` builds the FastAPI application (this module: the routes, the request
bodies read within bounds, errors as JSON); ``adjudicator serve --db DIR`` runs it with
uvicorn (:mod:`.server`). The work behind the routes is :class:`~.service.Service`, the
request and response models are in :mod:`.models`, the limits in :mod:`.settings`.

Endpoints (OpenAPI at ``/openapi.json``, interactive docs at ``/docs``):

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
variant and thread (:mod:`tablebase.probe.cache`), and recent ``/probe`` answers are kept
(:mod:`.answers`), both within ``ADJUDICATOR_CACHE_BYTES`` bytes (``adjudicator serve
--cache SIZE``, split between the worker processes; default a quarter of the machine's
memory): the answers take a sixteenth of it (at most 16 MiB), the blocks the rest. Nothing
is loaded whole, so the service's memory stays within the cache plus its fixed overhead
whatever it is asked.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from adjudicator.databases import resolve_databases
from adjudicator.ruling import Ruling
from adjudicator.service.answers import AnswerCache, split_budget
from adjudicator.service.models import (
    ADJUDICATE_BODY,
    DEFAULT_VARIANT,
    ERRORS,
    MAX_FEN,
    ErrorModel,
    OptionsModel,
    ProbeModel,
    VariantName,
)
from adjudicator.service.service import ApiError, Service, validation_text
from adjudicator.service.settings import ServiceSettings
from tablebase.probe.cache import BlockCache, cache_bytes
from tablebase.storage.slicefile import TableFileError

__all__ = ["ServiceSettings", "create_app"]

log = logging.getLogger("adjudicator.service")

STATIC_DIR = Path(__file__).resolve().parent / "static"
PDN_TYPES = ("text/plain", "application/x-pdn", "application/pdn")
JSON_TYPES = ("application/json",)


async def read_body(request: Request, limit: int) -> bytes:
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


def content_kind(request: Request, body: bytes) -> str:
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
    blocks, answers = split_budget(cache_bytes(settings.cache_bytes))
    cache = BlockCache(blocks)  # the service's one budget for table blocks ...
    app = FastAPI(
        title="Draughts adjudication service",
        version="0.1.0",
        description=(
            "Rules draughts games with the draw rules and the endgame tables, probes positions, "
            "and serves the endgame explorer at `/`."
        ),
        lifespan=_lifespan,
    )
    # The endpoints below find the service through the request (:func:`service_of`), never as a
    # variable of this function: FastAPI keeps the endpoint functions in process-wide caches
    # (4,096 of them), so an endpoint holding the service would keep every app ever made,
    # each with its block cache, alive long after it is dropped (issue 40: the service's fuzz,
    # an app per flipped file, grew to 22 GB and was killed by the system).
    app.state.service = Service(resolve_databases(db), settings, cache)
    app.state.answers = AnswerCache(answers)  # ... and its recent /probe answers
    _install_error_handlers(app)

    @app.get("/health", tags=["service"])
    def health(request: Request) -> dict[str, Any]:
        """Status, and per variant whether tables are loaded and which slices they hold."""
        out = service_of(request).health()
        answers: AnswerCache = request.app.state.answers
        out["answers"] = {"bytes": answers.capacity, "used": answers.used, "entries": len(answers)}
        return out

    @app.get(
        "/probe",
        tags=["tables"],
        response_model=ProbeModel,
        responses={**ERRORS, 404: {"model": ErrorModel, "description": "outside the tables"}},
    )
    async def probe(
        request: Request,
        fen: Annotated[str, Query(max_length=MAX_FEN, description="the position")],
        variant: Annotated[VariantName, Query()] = DEFAULT_VARIANT,
        elapsed: Annotated[
            int,
            Query(ge=0, le=10_000, description="plies already played under the count in force"),
        ] = 0,
    ) -> Response:
        """The position's value for the side to move (``result`` win/draw/loss, ``dtw`` plies
        to the end with best play) and every legal move with its value, best first; with
        ``result_under_count`` the value once the count in force (``count``, ``elapsed``
        plies in) is applied: a theoretical win too slow for the count is a draw."""
        answers: AnswerCache = request.app.state.answers
        key = (variant.value, fen, elapsed)
        body = answers.get(key)
        if body is not None:  # answered before: the same bytes, without a worker thread
            return Response(body, media_type=JSONResponse.media_type)
        service = service_of(request)
        out = await service.run_probe(service.probe, variant.value, fen, elapsed)
        response = JSONResponse(out)
        if final(out):
            answers.put(key, bytes(response.body), len(fen))
        return response

    @app.post(
        "/adjudicate",
        tags=["rulings"],
        response_model=list[Ruling],  # the dataclass: one schema for CLI and service
        responses=ERRORS,
        openapi_extra=ADJUDICATE_BODY,
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
        service = service_of(request)
        body = await read_body(request, service.settings.max_body_bytes)
        if content_kind(request, body) == "json":
            games = service.parse_json_games(body)
            out = await service.run(service.rule_json, games)
        else:
            options = service.options_of(
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


def final(answer: dict[str, Any]) -> bool:
    """True if a ``/probe`` answer cannot change when asked again: no value is
    ``"unknown"`` (the count search past its budget, which a quieter moment may meet)."""
    if answer.get("result_under_count") == "unknown":
        return False
    return all(row.get("result_under_count") != "unknown" for row in answer.get("moves", ()))


def service_of(request: Request) -> Service:
    """The service of the app answering ``request``."""
    service: Service = request.app.state.service
    return service


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
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
            {"error": f"invalid request: {validation_text(list(exc.errors()))}"},
            status_code=422,
        )

    @app.exception_handler(TableFileError)
    async def table_error(request: Request, exc: TableFileError) -> JSONResponse:
        message = service_of(request).note_damaged(exc)
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
