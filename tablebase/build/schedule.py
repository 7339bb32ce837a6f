"""Scheduling slice-pair tasks: the dependency graph and the local process-pool backend.

The scheduler knows nothing about solving: it runs :func:`tablebase.build.task.run_pair_task`
for each pair once the pairs it depends on are done. :class:`LocalScheduler` uses worker
processes on this machine; a cluster backend hands the same task function to its engine.
Worker log records reach the parent's handlers through a queue (``logging.handlers``'
``QueueHandler`` in each worker, a ``QueueListener`` in the parent), at the parent's level.

Invariants of :class:`LocalScheduler`:

* **memory**: the estimated memory (:func:`tablebase.solve.memory.task_memory_bytes`) of the tasks
  running at once never exceeds the budget; a task that alone exceeds it stops the build
  before anything starts (:class:`~tablebase.build.faults.MemoryBudgetError`). A task's estimate
  is taken again when its dependencies are done, from their files
  (:func:`tablebase.build.task.pair_memory`: dependencies stored with 16-bit values are read
  with two bytes each); one that then exceeds the budget alone stops the build there, the
  pairs done kept;
* **workers end with their parent**: each worker asks the kernel to kill it when its parent
  dies (``PR_SET_PDEATHSIG`` on Linux) and a watchdog thread checks the parent pid, so a
  ``kill -9`` of the build leaves no worker running and no table written afterwards;
* **a failure ends the build in one line**: the first failed task stops new tasks, the
  running ones are killed (their temporary files never count as tables; files already
  renamed into place are kept), and :class:`~tablebase.build.faults.BuildError` names the pair and
  the cause.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import multiprocessing as mp
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from logging.handlers import QueueHandler, QueueListener
from pathlib import Path
from typing import TYPE_CHECKING

from tablebase.build import task
from tablebase.build.faults import BuildError, MemoryBudgetError, describe
from tablebase.build.outofcore import BAND_PROGRESS
from tablebase.build.task import (
    IN_MEMORY,
    PairReport,
    pair_memory,
    planned_memory,
    run_pair_task,
    task_mode,
)
from tablebase.material.slices import Slice, build_pairs, pair_dependencies, parse_slice
from tablebase.rules.variants import Variant

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

log = logging.getLogger("tablebase.build.schedule")


@dataclass(frozen=True)
class PairTask:
    """One node of the build graph: the pair's slice names, the pairs it waits for (within
    the build), its index entries and its estimated peak memory in bytes."""

    names: tuple[str, ...]
    needs: frozenset[tuple[str, ...]]
    entries: int
    memory: int = 0

    @property
    def label(self) -> str:
        return "+".join(self.names)


def graph_for_pairs(variant: Variant, pairs: Iterable[tuple[Slice, ...]]) -> list[PairTask]:
    """Tasks for ``pairs`` (in build order); a task waits only for the pairs of the list
    (slices outside it must already be in the database)."""
    pairs = list(pairs)
    owner: dict[Slice, tuple[str, ...]] = {}
    for pair in pairs:
        for s in pair:
            owner[s] = tuple(x.name for x in pair)
    tasks = []
    for pair in pairs:
        names = tuple(s.name for s in pair)
        deps = pair_dependencies(pair[0])
        needs = frozenset(owner[d] for d in deps if d in owner)
        entries = sum(s.size(variant) for s in pair)
        tasks.append(PairTask(names, needs, entries, pair_memory(variant, pair)))
    return tasks


def build_graph(variant: Variant, pieces: int) -> list[PairTask]:
    """Every pair of a database of up to ``pieces`` pieces with its dependencies, in order."""
    return graph_for_pairs(variant, build_pairs(pieces))


def human_bytes(n: float) -> str:
    """``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def parse_size(text: str) -> int:
    """Bytes of ``20G``, ``512M``, ``20GiB``, ``1.5GB``, ``4096`` (binary multiples: a
    memory budget is counted as the kernel counts RAM); raises ValueError otherwise."""
    t = text.strip().upper().replace(" ", "")
    for suffix in ("IB", "B"):
        if t.endswith(suffix) and len(t) > len(suffix) and t[-len(suffix) - 1] in "KMGT":
            t = t[: -len(suffix)]
            break
    scale = 1
    if t and t[-1] in "KMGT":
        scale = 1024 ** ("KMGT".index(t[-1]) + 1)
        t = t[:-1]
    try:
        value = float(t)
    except ValueError:
        raise ValueError(
            f"memory size {text!r}: expected a number with an optional unit K, M, G or T "
            "(e.g. 20G, 512M, 20GiB)"
        ) from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"memory size {text!r} must be positive")
    return int(value * scale)


def available_memory() -> int:
    """Bytes of memory available to new processes now: ``MemAvailable`` (else free RAM),
    and no more than what this process's cgroup (a container's limit) has left."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except OSError:
        pass
    if avail is None:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    left = _cgroup_memory_left()
    return avail if left is None else min(avail, left)


def _cgroup_memory_left(root: str = "/sys/fs/cgroup") -> int | None:
    """The cgroup v2 memory limit minus its usage, None without a limit."""
    try:
        limit = Path(root, "memory.max").read_text().strip()
        used = int(Path(root, "memory.current").read_text())
    except (OSError, ValueError):
        return None
    return None if limit == "max" else max(0, int(limit) - used)


def default_memory() -> int:
    """The default budget of a build: 85 % of the memory available when it starts."""
    return int(0.85 * available_memory())


def check_budget(
    tasks: list[PairTask], budget: int | None, out_of_core: frozenset | set = frozenset()
) -> None:
    """Raise :class:`MemoryBudgetError` for the largest task that alone exceeds ``budget``
    (for a pair of ``out_of_core``, the least memory it needs out of core:
    :func:`tablebase.build.task.planned_memory`)."""
    if budget is None or not tasks:
        return
    worst = max(tasks, key=lambda t: t.memory)
    if worst.memory > budget:
        how = " even out of core" if worst.names in out_of_core else ""
        raise MemoryBudgetError(
            f"slice pair {worst.label} needs an estimated {human_bytes(worst.memory)}{how}, "
            f"more than the memory budget of {human_bytes(budget)} (--memory); nothing was "
            "started"
        )


def plan_tasks(
    variant: Variant, tasks: list[PairTask], memory: int | None
) -> tuple[list[PairTask], set[tuple[str, ...]]]:
    """``tasks`` with the memory of each under the cap ``memory``: in memory where a pair
    fits, else out of core, by bands or with its dependencies mapped
    (:func:`tablebase.build.task.task_mode`, its memory
    :func:`tablebase.build.task.planned_memory`); and the pairs not solved in memory (their
    tasks are given the cap). A pair that fits in none of these ways keeps the estimate of
    the way that needs the least (:func:`check_budget` refuses it)."""
    out, ooc = [], set()
    for t in tasks:
        if memory is not None and t.memory > memory:
            pair = tuple(parse_slice(n) for n in t.names)
            if task_mode(variant, pair, memory) != IN_MEMORY:
                t = dataclasses.replace(t, memory=planned_memory(variant, pair, memory))
                ooc.add(t.names)
        out.append(t)
    return out, ooc


class Progress:
    """Callbacks a scheduler calls; the default does nothing."""

    def start(self, total: int, entries: int) -> None:
        pass

    def begin(self, task: PairTask) -> None:
        pass

    def done(self, task: PairTask, report: PairReport) -> None:
        pass

    def band(self, label: str, done: int, total: int) -> None:
        """Pair ``label``, solved out of core, has ``done`` of its ``total`` bands solved."""

    def finish(self) -> None:
        pass

    def abort(self) -> None:
        """The build stopped before the end (a failure, an interrupt)."""


class BandRelay(logging.Handler):
    """Pass the band progress that worker log records carry (the attribute
    :data:`tablebase.build.outofcore.BAND_PROGRESS`) to ``progress.band``; other records are
    left to the other handlers."""

    def __init__(self, progress: Progress) -> None:
        super().__init__(logging.DEBUG)
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        got = getattr(record, BAND_PROGRESS, None)
        if got is not None:
            label, done, total = got
            self.progress.band(label, done, total)


def thread_share(total: int, running: int) -> int:
    """Compiled threads each of ``running`` tasks gets out of ``total`` (at least one)."""
    return max(1, total // max(1, running))


def default_jobs() -> int:
    return os.cpu_count() or 1


PR_SET_PDEATHSIG = 1
WATCHDOG_SECONDS = 0.5


def end_with_parent(
    parent: int,
    share: ctypes.c_int | None = None,
    records: Queue[logging.LogRecord] | None = None,
    level: int = logging.WARNING,
) -> None:
    """Worker initialiser: die when the process ``parent`` is gone, whatever killed it;
    take the compiled threads of each pass from ``share`` (see
    :func:`tablebase.build.task.work_for`) when given; send the log records of
    ``tablebase`` at ``level`` and above to the queue ``records`` (the parent writes them)."""
    if records is not None:
        logging.getLogger().handlers[:] = [QueueHandler(records)]
        logging.getLogger("tablebase").setLevel(level)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends the worker
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    task.work_for(parent, share)  # the parent checked again before each table is written

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_SECONDS)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


class LocalScheduler:
    """Run pair tasks in ``jobs`` worker processes, never starting tasks whose estimated
    memory together exceeds ``memory`` bytes. The build's ``jobs * threads`` compiled
    threads are shared among the tasks running (:func:`thread_share`; each task re-reads its
    share before each parallel pass), so that a pair running alone uses them all."""

    def __init__(
        self, jobs: int | None = None, threads: int | None = None, memory: int | None = None
    ) -> None:
        self.jobs = max(1, jobs or default_jobs())
        self.threads = max(1, threads or (default_jobs() // self.jobs))
        self.memory = memory if memory is not None else default_memory()
        self._ooc: set[tuple[str, ...]] = set()  # the pairs solved out of core

    def run(
        self,
        variant: Variant,
        tasks: list[PairTask],
        db: str,
        progress: Progress,
        task_fn: Callable[..., PairReport] = run_pair_task,
    ) -> list[PairReport]:
        # out of core where a pair with men does not fit the budget in memory
        tasks, self._ooc = plan_tasks(variant, tasks, self.memory)
        check_budget(tasks, self.memory, self._ooc)  # before any worker starts
        # the workers are spawned, so they inherit no handler: they put their records on
        # this queue, and the parent's handlers write them
        records = mp.get_context("spawn").Queue()
        listener = QueueListener(
            records, *logging.getLogger().handlers, BandRelay(progress), respect_handler_level=True
        )
        listener.start()
        try:
            reports = self._run(variant, tasks, db, progress, task_fn, records)
        except BaseException:
            listener.stop()
            progress.abort()
            raise
        listener.stop()  # every worker record written first
        progress.finish()
        return reports

    def _run(
        self,
        variant: Variant,
        tasks: list[PairTask],
        db: str,
        progress: Progress,
        task_fn: Callable[..., PairReport],
        records: Queue[logging.LogRecord],
    ) -> list[PairReport]:
        done: set[tuple[str, ...]] = set()
        pending = list(tasks)
        running: dict[Future, PairTask] = {}
        memory: dict[tuple[str, ...], int] = {}  # estimates with the dependencies' files
        reports: list[PairReport] = []
        workers: dict = {}  # pid -> process, to tell how a dead one ended
        ctx = mp.get_context("spawn")
        progress.start(len(tasks), sum(t.entries for t in tasks))
        # the threads of the running tasks: jobs x threads shared among them, re-read by
        # each task before each parallel pass (a pair left alone gets them all)
        share = ctx.Value("i", self.threads, lock=False)
        pool = ProcessPoolExecutor(
            max_workers=self.jobs,
            mp_context=ctx,
            initializer=end_with_parent,
            initargs=(
                os.getpid(),
                share,
                records,
                logging.getLogger("tablebase").getEffectiveLevel(),
            ),
        )
        try:
            while pending or running:
                ready = [t for t in pending if t.needs <= done]
                # biggest first among the ready ones keeps the workers busy at the end
                ready.sort(key=lambda t: -t.entries)
                for t in ready:
                    if t.names not in memory:
                        memory[t.names] = self._memory_now(variant, db, t, len(done), len(tasks))
                used = sum(memory[t.names] for t in running.values())
                start: list[PairTask] = []
                for t in ready:
                    if len(running) + len(start) >= self.jobs:
                        break
                    if used + memory[t.names] > self.memory:
                        continue  # waits until running tasks free enough memory
                    start.append(t)
                    used += memory[t.names]
                # set before the new tasks start, so that their first pass has it
                share.value = thread_share(self.jobs * self.threads, len(running) + len(start))
                for t in start:
                    # a pair solved out of core is told the budget its bands are cut for
                    ooc = {"memory": self.memory} if t.names in self._ooc else {}
                    try:
                        fut = pool.submit(task_fn, variant.name, t.names, db, self.threads, **ooc)
                    except BrokenProcessPool as e:
                        # a worker died since the last wait: its task's future says so
                        # below (the build ends naming that pair), nothing more starts;
                        # a worker killed while idle leaves no future to say it
                        if not running:
                            raise _build_error(
                                t, "could not start", e, workers, db, done, tasks
                            ) from e
                        break
                    pending.remove(t)
                    progress.begin(t)
                    workers.update(getattr(pool, "_processes", None) or {})
                    running[fut] = t
                if not running:
                    raise RuntimeError("build graph has a cycle or a missing dependency")
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    t = running.pop(fut)
                    try:
                        report = fut.result()
                    except Exception as e:
                        raise _build_error(t, "failed", e, workers, db, done, tasks) from e
                    done.add(t.names)
                    reports.append(report)
                    progress.done(t, report)
        except BaseException:
            _kill_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return reports

    def _memory_now(self, variant: Variant, db: str, t: PairTask, done: int, total: int) -> int:
        """The estimate of ``t`` with its dependencies' files as they are now (never less
        than the graph's, which counts one byte per dependency entry);
        :class:`MemoryBudgetError` if it alone exceeds the budget."""
        pair = tuple(parse_slice(n) for n in t.names)
        if t.names in self._ooc:
            need = planned_memory(variant, pair, self.memory, Path(db))
        else:
            need = pair_memory(variant, pair, Path(db))
        if need > self.memory:
            raise MemoryBudgetError(
                f"slice pair {t.label} needs an estimated {human_bytes(need)} (its "
                f"dependencies are read with two-byte values), more than the memory budget "
                f"of {human_bytes(self.memory)} (--memory); {done} of {total} pairs were "
                "done and are kept"
            )
        return need


def _build_error(
    t: PairTask, what: str, exc: BaseException, workers: dict, db: str, done: set, tasks: list
) -> BuildError:
    """The one-line error that ends a build: pair ``t`` ``what`` (failed, could not start),
    why, and the pairs kept."""
    return BuildError(
        f"slice pair {t.label} {what}: {_cause(exc, workers)}{_disk_hint(exc, db)}; "
        f"{len(done)} of {len(tasks)} pairs were done and are kept "
        "(run the same command to resume)"
    )


def _cause(exc: BaseException, workers: dict) -> str:
    """:func:`describe`, and for a worker that died, how it ended: its signal or status
    (the pool ends the other workers with SIGTERM when one dies, so that one is last)."""
    if isinstance(exc, BrokenProcessPool):
        # the dead worker may not be reaped yet, and the pool's own thread reaps the
        # workers too: a join that loses that race returns before the status is recorded
        deadline = time.monotonic() + 2.0
        for p in workers.values():
            while p.exitcode is None and time.monotonic() < deadline:
                p.join(timeout=0.05)
        codes = [p.exitcode for p in workers.values() if p.exitcode]
        codes.sort(key=lambda c: c == -signal.SIGTERM)
        if codes and codes[0] < 0:
            name = signal.Signals(-codes[0]).name
            why = " (a kill -9, or the kernel when out of memory)" if name == "SIGKILL" else ""
            return f"its worker process was killed by {name}{why}"
        if codes:
            return f"its worker process exited with status {codes[0]}"
    return describe(exc)


FULL_DISK_BYTES = 16 << 20


def _disk_hint(exc: BaseException, db: str) -> str:
    """For a worker that died: whether the database's disk is (nearly) full, which is
    worth saying beside the usual cause (the kernel's OOM killer, a kill)."""
    if not isinstance(exc, BrokenProcessPool):
        return ""
    try:
        free = shutil.disk_usage(db).free
    except OSError:
        return ""
    if free >= FULL_DISK_BYTES:
        return ""
    return f"; the disk of {db} is full ({human_bytes(free)} free), which is the likely cause"


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now (their unfinished tables stay temporary). The
    processes are listed before ``shutdown``, which forgets them (``_processes`` is None
    after it), so that a worker in the middle of a pair is killed, not waited for."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in workers:
        try:
            p.kill()
        except (OSError, ValueError):
            pass
