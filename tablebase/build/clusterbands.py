"""Pairs solved out of core on a Dask cluster: one task per band, the bands of a group at once.

A pair whose in-memory task does not fit the memory of one task (``--memory``) but can go
out of core (:func:`tablebase.build.task.out_of_core`) becomes, in the Dask graph of
:class:`tablebase.build.cluster.DaskScheduler`:

1. a **prepare** task (:func:`prepare_task`), after the pairs it needs: the scratch folder
   made ready, the bands kept from an earlier run, the dependencies decompressed
   (:func:`tablebase.build.outofcore.open_scratch`); a pair whose files exist and verify
   is found complete here and nothing more is done;
2. one **band** task per band (:func:`band_task`), after the prepare task and the band
   tasks of the group before: the bands of one group run at once, on any workers; a band
   kept from an earlier run returns at once;
3. a **finish** task (:func:`finish_task`), after every band task: the parts put together,
   the mirror, the counts, the pair's files written, the folder removed; its report is
   the pair's, and the pairs that need this one wait for it.

The tasks share nothing but the scratch folder ``<db>/.bands/<pair>/``, which must be on the
filesystem the workers share with the database; each band writes files of its own only
(:mod:`tablebase.build.outofcore`). The band size is chosen by the submitter under its
``memory`` (and :data:`tablebase.build.outofcore.BAND_CONFIGS_ENV` in its environment) and
handed to every task, which makes the same plan from it (:func:`tablebase.solve.bands.plan`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from tablebase.build import outofcore
from tablebase.build.schedule import PairTask
from tablebase.build.task import (
    PairReport,
    complete_report,
    dependency_value_bytes,
    entry_fen,
    out_of_core,
    out_of_core_plan,
    pass_threads,
)
from tablebase.build.workertask import begin_task, task_logging, task_threads
from tablebase.material.slices import Slice, parse_slice
from tablebase.rules.variants import Variant, get_variant
from tablebase.solve import bands


def band_sizes(
    variant: Variant, ooc: set[tuple[str, ...]], memory: int
) -> dict[tuple[str, ...], int]:
    """The band size of each pair of ``ooc`` solved by bands under the cap ``memory``
    (logged; :func:`tablebase.build.task.out_of_core_plan`); the others, solved whole with
    their dependencies mapped (:func:`tablebase.build.task.task_mode`), are left out."""
    sizes = {}
    for names in sorted(ooc):
        pair = tuple(parse_slice(n) for n in names)
        if out_of_core(variant, pair, memory):
            sizes[names] = out_of_core_plan(variant, pair, memory).band_configs
    return sizes


@lru_cache(maxsize=4)
def _plan(
    variant_name: str, names: tuple[str, ...], band_configs: int
) -> tuple[Variant, tuple[Slice, ...], bands.Plan]:
    """The pair's plan, made once per worker process and pair."""
    variant = get_variant(variant_name)
    pair = tuple(parse_slice(n) for n in names)
    return variant, pair, bands.plan(variant, pair, band_configs)


@dataclass(frozen=True)
class Prepared:
    """What the prepare task found: the bands kept, whether the dependencies are read with
    two bytes, when it started (``time.time``, for the pair's report) and how long it
    took; or the report of a pair found complete."""

    kept: frozenset[int]
    wide: bool
    started: float
    seconds: float
    complete: PairReport | None = None


def _scratch(
    variant_name: str, names: tuple[str, ...], db: str, band_configs: int, prepared: Prepared
) -> outofcore.Scratch:
    variant, pair, p = _plan(variant_name, names, band_configs)
    return outofcore.Scratch(Path(db), variant, pair, p, prepared.wide)


def prepare_task(
    variant_name: str,
    names: tuple[str, ...],
    db: str,
    band_configs: int,
    log_level: int,
    token: str,
    *needs: Any,
) -> Prepared:
    """Worker side of a pair's first task (``needs``: the reports of the pairs it waits for,
    ignored); announced as the pair's start."""
    begin_task(log_level, token, names)
    started, t0 = time.time(), time.perf_counter()
    variant, pair, p = _plan(variant_name, names, band_configs)
    found = complete_report(variant, pair, Path(db), t0)
    if found is not None:
        return Prepared(frozenset(), False, started, 0.0, found)
    wide = dependency_value_bytes(Path(db), pair) == 2
    _, kept = outofcore.open_scratch(Path(db), variant, pair, p, wide)
    return Prepared(kept, wide, started, time.perf_counter() - t0)


def band_task(
    variant_name: str,
    names: tuple[str, ...],
    db: str,
    band_configs: int,
    number: int,
    threads: int | None,
    log_level: int,
    token: str,
    prepared: Prepared,
    *needs: Any,
) -> int | None:
    """Worker side of band ``number`` (``needs``: the band tasks of the group before,
    ignored): solved unless kept; returns ``number``, None if the pair was found complete
    (no band to count)."""
    if prepared.complete is not None:
        return None
    if number in prepared.kept:
        return number
    begin_task(log_level, token, names, band=number)
    n = task_threads(threads)
    scr = _scratch(variant_name, names, db, band_configs, prepared)
    outofcore.solve_one(scr, scr.plan.bands[number], lambda: pass_threads(n))
    return number


def finish_task(
    variant_name: str,
    names: tuple[str, ...],
    db: str,
    band_configs: int,
    threads: int | None,
    log_level: int,
    token: str,
    prepared: Prepared,
    *needs: Any,
) -> PairReport:
    """Worker side of a pair's last task (``needs``: its band tasks, ignored): its files
    written; the pair's report."""
    if prepared.complete is not None:
        return prepared.complete
    task_logging(log_level)
    t0 = time.perf_counter()
    n = pass_threads(task_threads(threads))
    scr = _scratch(variant_name, names, db, band_configs, prepared)
    stats, reads = outofcore.finish(
        scr, Path(db), n, lambda: False, partial(entry_fen, scr.variant)
    )
    end = time.perf_counter() - t0
    total = time.time() - prepared.started
    phases = (prepared.seconds, 0.0, max(0.0, total - prepared.seconds - end), end)
    entries = sum(s.size(scr.variant) for s in scr.pair)
    return PairReport(tuple(names), stats, entries, total, False, reads, phases)


@dataclass(frozen=True)
class BandFutures:
    """The futures of one pair solved by band tasks: its prepare task, its band tasks (by
    band number) and its finish task (the pair's future)."""

    prepare: Any
    bands: list[Any]
    finish: Any


def submit_pair(
    client: Any,
    variant: Variant,
    t: PairTask,
    db: str,
    band_configs: int,
    threads: int | None,
    log_level: int,
    token: str,
    retries: int,
    needs: list[Any],
) -> BandFutures:
    """Submit the tasks of pair ``t`` solved by bands of ``band_configs`` (``needs``: the
    futures of the pairs it waits for); keyed by the pair, the band and ``token``."""
    _, _, p = _plan(variant.name, t.names, band_configs)
    common = {"pure": False, "retries": retries, "priority": t.entries}
    args = (variant.name, t.names, db, band_configs)
    prepare = client.submit(
        prepare_task, *args, log_level, token, *needs,
        key=f"prepare-{t.label}-{token}", **common,
    )  # fmt: skip
    futures: list[Any] = []
    before: list[Any] = []  # the band tasks of the group before
    for group in p.groups():
        now = []
        for b in group:
            key = f"band-{t.label}-{b.number}-{token}"
            now.append(client.submit(
                band_task, *args, b.number, threads, log_level, token, prepare, *before,
                key=key, **common,
            ))  # fmt: skip
        futures.extend(now)
        before = now
    finish = client.submit(
        finish_task, *args, threads, log_level, token, prepare, *futures,
        key=f"pair-{t.label}-{token}", **common,
    )  # fmt: skip
    return BandFutures(prepare, futures, finish)
