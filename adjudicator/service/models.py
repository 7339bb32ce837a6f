"""The service's request and response models (pydantic), and the OpenAPI descriptions of
the ``/adjudicate`` body and of the error answers built from them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from tablebase.rules.variants import VARIANTS

MAX_FEN = 600
MAX_MOVE_TEXT = 64

# The variants a client may name (checked against this fixed set, never used as a path).
VariantName = StrEnum("VariantName", {name: name for name in VARIANTS})  # type: ignore[misc]

#: the variant of a request that names none
DEFAULT_VARIANT = VariantName("international")


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

    variant: VariantName = DEFAULT_VARIANT
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


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
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

    out: dict[str, Any] = resolve(schema)
    return out


_GAME_SCHEMA = inline_schema(GameModel)

#: the ``/adjudicate`` request body: PDN text, or one JSON game or a list of them
ADJUDICATE_BODY = {
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

#: the error answers every endpoint may give
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorModel, "description": text}
    for code, text in (
        (400, "malformed PDN, JSON or FEN"),
        (413, "body too large, or too many games or moves"),
        (415, "unsupported content type"),
        (422, "invalid parameters or JSON fields"),
    )
}
