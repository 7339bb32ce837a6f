"""What ``tablebase generate`` runs once its database folder is locked: the pair tasks of
``--pieces`` and ``--material`` that the database lacks (:func:`build_tasks`), run on local
worker processes (:class:`~.schedule.LocalScheduler`) or on a Dask cluster
(:class:`~.cluster.DaskScheduler`), with the temporaries of an interrupted build removed
before and after (:func:`generate`)."""

from __future__ import annotations

import logging
from pathlib import Path

from tablebase.build import warmup
from tablebase.build.cluster import DaskScheduler
from tablebase.build.faults import BuildError
from tablebase.build.progress import make_progress
from tablebase.build.schedule import (
    LocalScheduler,
    PairTask,
    default_jobs,
    graph_for_pairs,
    human_bytes,
)
from tablebase.material.slices import Slice, build_key, build_pairs, material_pairs
from tablebase.rules.variants import Variant
from tablebase.storage.reader import check_header
from tablebase.storage.slicefile import TableFileError, slice_path
from tablebase.storage.writer import remove_stale_temporaries

log = logging.getLogger("tablebase")


class SchedulerError(ValueError):
    """The ``--scheduler`` cannot be used (a bad address, or Dask not installed)."""


def build_tasks(
    v: Variant, path: Path, pieces: int | None, materials: list[Slice]
) -> list[PairTask]:
    """The pair tasks of ``--pieces`` and ``--material`` (with what they need and the
    database lacks: a slice whose file's header checks is kept)."""

    def have(s: Slice) -> bool:
        try:
            check_header(slice_path(path, s), v, s)
        except TableFileError:
            return False
        return True

    pairs = set(build_pairs(pieces)) if pieces else set()
    pairs |= set(material_pairs(materials, have))
    return graph_for_pairs(v, sorted(pairs, key=lambda p: build_key(p[0])))


def generate(
    v: Variant,
    path: Path,
    pieces: int | None,
    wanted: list[Slice],
    jobs: int | None,
    threads: int | None,
    budget: int,
    memory_given: bool,
    scheduler: str | None,
) -> None:
    """Build the slices up to ``pieces`` pieces and those of ``wanted`` into ``path`` (the
    folder locked by the caller) on ``jobs`` local processes of ``threads`` threads within
    ``budget`` bytes, or on the Dask ``scheduler`` (its workers' memory capped by ``budget``
    only if ``memory_given``). Raises :class:`~.faults.BuildError` when the build stops (a
    lost cluster too),
    :class:`SchedulerError` for an unusable scheduler."""
    try:
        for tmp in remove_stale_temporaries(path):
            log.warning("removed %s, left by an interrupted build", tmp)
        tasks = build_tasks(v, path, pieces, wanted)
        what = f"up to {pieces} pieces" if pieces else ""
        if wanted:
            what += (" and " if what else "") + " ".join(s.name for s in wanted)
        progress = make_progress(sum(len(t.names) for t in tasks))
        if scheduler:
            try:
                dask_sched = DaskScheduler(
                    scheduler, threads, memory=budget if memory_given else None
                )
            except (ImportError, ValueError) as e:
                raise SchedulerError(str(e)) from None
            if jobs:
                log.warning("--jobs is ignored with --scheduler")
            log.info(
                "generating %s %s into %s: %d slice pairs on Dask %s",
                v.name,
                what,
                path,
                len(tasks),
                scheduler,
            )
            try:
                dask_sched.run(v, tasks, str(path), progress)
            except ConnectionError as e:  # the cluster was lost
                raise BuildError(str(e)) from None
            return
        if jobs is None:  # a build of fewer pairs than cores gives each more threads
            jobs = max(1, min(default_jobs(), len(tasks)))
        if tasks and not warmup.is_warm(v.name):  # before any task: see build.warmup
            log.info("compiling kernels, first run only (tablebase compile does it ahead)")
            log.info("kernels compiled in %.0f s", warmup.warm_up(v.name, min(2, jobs)))
        sched = LocalScheduler(jobs, threads, budget)
        log.info(
            "generating %s %s into %s: %d slice pairs, %d jobs x %d threads, memory budget %s",
            v.name,
            what,
            path,
            len(tasks),
            sched.jobs,
            sched.threads,
            human_bytes(budget),
        )
        sched.run(v, tasks, str(path), progress)
    finally:
        try:
            remove_stale_temporaries(path)  # ours: the folder is locked
        except OSError:
            pass
