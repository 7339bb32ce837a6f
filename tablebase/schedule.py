"""Scheduling slice-pair tasks: the dependency graph and the local process-pool backend.

The scheduler knows nothing about solving: it runs :func:`tablebase.generator.run_pair_task`
for each pair once the pairs it depends on are done. :class:`LocalScheduler` uses worker
processes on this machine; a cluster backend hands the same task function to its engine.
Worker log records reach the parent through ``multiprocessing-logging``.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass

from tablebase.generator import PairReport, run_pair_task
from tablebase.rules.variants import Variant
from tablebase.slices import Slice, build_pairs, pair_dependencies

log = logging.getLogger("tablebase.schedule")


@dataclass(frozen=True)
class PairTask:
    """One node of the build graph: the pair's slice names and the pairs it waits for."""

    names: tuple[str, ...]
    needs: frozenset[tuple[str, ...]]
    entries: int


def build_graph(variant: Variant, pieces: int) -> list[PairTask]:
    """Every pair of a database of up to ``pieces`` pieces with its dependencies, in order."""
    pairs = build_pairs(pieces)
    owner: dict[Slice, tuple[str, ...]] = {}
    for pair in pairs:
        for s in pair:
            owner[s] = tuple(x.name for x in pair)
    tasks = []
    for pair in pairs:
        names = tuple(s.name for s in pair)
        needs = frozenset(owner[d] for d in pair_dependencies(pair[0]))
        tasks.append(PairTask(names, needs, sum(s.size(variant) for s in pair)))
    return tasks


class Progress:
    """Callbacks a scheduler calls; the default logs one line per finished pair."""

    def start(self, total: int, entries: int) -> None:
        pass

    def begin(self, task: PairTask) -> None:
        pass

    def done(self, task: PairTask, report: PairReport) -> None:
        pass

    def finish(self) -> None:
        pass


def default_jobs() -> int:
    return os.cpu_count() or 1


class LocalScheduler:
    """Run pair tasks in ``jobs`` worker processes, each with ``threads`` numba threads."""

    def __init__(self, jobs: int | None = None, threads: int | None = None) -> None:
        self.jobs = max(1, jobs or default_jobs())
        self.threads = max(1, threads or (default_jobs() // self.jobs))

    def run(
        self,
        variant: Variant,
        tasks: list[PairTask],
        db: str,
        progress: Progress,
        task_fn: Callable[..., PairReport] = run_pair_task,
    ) -> list[PairReport]:
        import multiprocessing_logging

        multiprocessing_logging.install_mp_handler()
        try:
            reports = self._run(variant, tasks, db, progress, task_fn)
        finally:
            multiprocessing_logging.uninstall_mp_handler()
        progress.finish()  # after the handler is gone, so that its line is not lost
        return reports

    def _run(self, variant, tasks, db, progress, task_fn) -> list[PairReport]:
        done: set[tuple[str, ...]] = set()
        pending = list(tasks)
        running: dict[Future, PairTask] = {}
        reports: list[PairReport] = []
        ctx = mp.get_context("spawn")
        progress.start(len(tasks), sum(t.entries for t in tasks))
        with ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx) as pool:
            while pending or running:
                ready = [t for t in pending if t.needs <= done]
                # biggest first among the ready ones keeps the workers busy at the end
                ready.sort(key=lambda t: -t.entries)
                for t in ready[: max(0, self.jobs - len(running))]:
                    pending.remove(t)
                    progress.begin(t)
                    fut = pool.submit(task_fn, variant.name, t.names, db, self.threads)
                    running[fut] = t
                if not running:
                    raise RuntimeError("build graph has a cycle or a missing dependency")
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    t = running.pop(fut)
                    report = fut.result()
                    done.add(t.names)
                    reports.append(report)
                    progress.done(t, report)
        return reports
