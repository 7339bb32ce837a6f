"""The engines checked before a match starts, so that a wrong option is an error, not a match
of lost games.

Each Hub engine is started once in its folder and asked ``hub``; it answers with its name and
its ``param`` lines, and is told ``quit`` (it is not initialised). Every option given
(``option.NAME=VALUE``) must be a declared parameter with a value its type allows. For a
variant other than International the engine is also given ``variant`` (Hub's name:
``frisian``) unless the options set it; an engine that declares no ``variant`` parameter,
or one whose values do not include it, cannot play that variant. DXP carries International
draughts only, so a DXP engine in a match of another variant is refused.
"""

from __future__ import annotations

from adjudicator.match.engines import CONNECT_TIMEOUT
from adjudicator.match.enginespec import Spec
from adjudicator.match.hub import HubError, HubProcess, check_options
from tablebase.probe.hub import HUB_VARIANTS
from tablebase.rules.variants import Variant


class EngineCheckError(ValueError):
    """An engine the match cannot start with."""


def check_engines(specs: tuple[Spec, ...], variant: Variant) -> tuple[tuple[Spec, ...], list[str]]:
    """The specs with the variant option added, and the engines' names (``name=``, else the
    Hub engine's ``id name``, else ``engine N``)."""
    out, names = [], []
    for i, spec in enumerate(specs):
        label = f"engine {i + 1} ({spec.shown()})"
        if spec.kind != "hub":
            if variant.name != "international":
                raise EngineCheckError(
                    f"{label}: DXP carries International draughts only, not {variant.name}"
                )
            out.append(spec)
            names.append(spec.name or f"engine {i + 1}")
            continue
        spec = _with_variant(spec, variant, label)
        process = HubProcess(spec.args or spec.command, spec.dir)
        try:
            own = process.start(CONNECT_TIMEOUT, init=False)
        except HubError as error:
            raise EngineCheckError(f"{label}: cannot start it: {error}") from None
        finally:
            process.close(wait=1.0)
        if variant.name != "international" and "variant" not in {p.name for p in process.params}:
            raise EngineCheckError(
                f"engine {spec.name or own}: declares no variant parameter, so it cannot be "
                f"told to play {variant.name}"
            )
        try:
            check_options(spec.name or own, process.params, spec.options)
        except ValueError as error:
            raise EngineCheckError(str(error)) from None
        out.append(spec)
        names.append(spec.name or own or f"engine {i + 1}")
    return tuple(out), names


def _with_variant(spec: Spec, variant: Variant, label: str) -> Spec:
    if variant.name == "international":
        return spec
    wanted = HUB_VARIANTS.get(variant.name, variant.name)
    given = spec.option("variant")
    if given is not None and given != wanted:
        raise EngineCheckError(
            f"{label}: option.variant={given}, but the match is {variant.name} ({wanted})"
        )
    return spec.with_option("variant", wanted)
