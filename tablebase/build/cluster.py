"""Dask backend for builds: the same slice-pair tasks, run by the workers of a Dask cluster.

:class:`DaskScheduler` has the interface of :class:`tablebase.build.schedule.LocalScheduler`. The
build graph becomes a Dask task graph: every pair task is submitted at once, with the
futures of the pairs it needs as extra (ignored) arguments, so the Dask scheduler runs it
only after them. Each task is :func:`tablebase.build.task.run_pair_task`, unchanged: it reads
its inputs from the database directory, which every worker must see at the same path (a
shared filesystem), and writes one file per slice under a temporary name
(``<slice>.h5.<pid>.tmp``) renamed when complete, so a worker lost mid-task leaves at most
a temporary file, which never counts as a table; the submitter deletes such leftovers at the
start and end of a run. Failed tasks are retried; tasks of lost workers are rescheduled by
Dask. Worker log records of ``tablebase.*`` and the progress callbacks reach the submitter.
With a ``memory`` per task, a pair with men that does not fit it in memory is solved out of
core by a task per band instead (:mod:`tablebase.build.clusterbands`), its progress told
band by band (``progress.band(label, done, total)``, where the progress has it).

``address`` is ``tcp://HOST:PORT`` (an existing ``dask scheduler``) or ``local-cluster:N``
(a :class:`distributed.LocalCluster` of N single-threaded worker processes on this machine,
for testing). Dask is imported lazily: the rest of the package never needs it.
"""

from __future__ import annotations

import logging
import os
import queue
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from tablebase.build import clusterbands
from tablebase.build.faults import BuildError, describe
from tablebase.build.schedule import PairTask, Progress, check_budget, plan_tasks
from tablebase.build.task import PairReport, run_pair_task
from tablebase.build.workertask import STARTED_TOPIC, begin_task, task_threads
from tablebase.identity import build_identity
from tablebase.rules.variants import Variant
from tablebase.solve.men import pool_threads
from tablebase.storage.writer import remove_stale_temporaries

log = logging.getLogger("tablebase.build.cluster")

LOCAL_CLUSTER = "local-cluster:"
POLL_SECONDS = 0.1


def clean_temp_files(db: str | Path) -> list[Path]:
    """Delete leftover temporary slice files (``*.h5.<pid>.tmp``) in ``db``; returns them."""
    removed = remove_stale_temporaries(db)
    if removed:
        log.info("removed %d leftover temporary file(s) from %s", len(removed), db)
    return removed


def parse_address(address: str) -> int | None:
    """Workers to start for ``local-cluster:N``, or None for the address of a scheduler."""
    if not address.startswith(LOCAL_CLUSTER):
        return None
    n = address[len(LOCAL_CLUSTER) :]
    if not n.isdigit() or int(n) < 1:
        raise ValueError(f"{address!r}: expected local-cluster:N with N >= 1 workers")
    return int(n)


def _check_address(distributed: Any, address: str) -> None:
    """ValueError unless ``address`` names a scheduler Dask can connect to (a port given
    where its protocol needs one), before anything starts."""
    try:
        scheme, location = distributed.comm.parse_address(address)
        if scheme in ("tcp", "tls", "ws", "wss"):
            distributed.comm.parse_host_port(location)
    except ValueError as e:
        raise ValueError(
            f"--scheduler {address!r}: {e} (expected tcp://HOST:PORT or local-cluster:N)"
        ) from None


def pair_task(
    task_fn: Callable[..., PairReport],
    variant_name: str,
    names: tuple[str, ...],
    db: str,
    threads: int | None,
    log_level: int,
    token: str,
    *needs: PairReport,
) -> PairReport:
    """Worker side of one pair: ``task_fn(variant_name, names, db, threads)``.

    ``needs`` are the reports of the pairs this one waits for; Dask passes them only because
    they order the graph, and they are ignored. ``threads=None`` means the worker's own
    ``NUMBA_NUM_THREADS``. The start is announced to the submitter (for its progress line).
    """
    begin_task(log_level, token, names)
    return task_fn(variant_name, names, db, task_threads(threads))


def _worker_facts(probe: str, token: str) -> dict[str, Any]:
    """What the submitter checks on every worker before a run (runs on the worker)."""
    p = Path(probe)
    try:
        sees = p.read_text() == token
    except OSError:
        sees = False
    return {
        "sees_db": sees,
        "version": build_identity(),
        "numba_threads": pool_threads(),
    }


@contextmanager
def _quiet_distributed() -> Iterator[None]:
    """Keep Dask's own INFO chatter (connections, a local cluster's start) off the terminal."""
    logger = logging.getLogger("distributed")
    old = logger.level
    logger.setLevel(max(old, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(old)


def _import_distributed():
    try:
        import distributed
    except ImportError as e:
        raise ImportError(
            "the Dask backend needs dask[distributed]: pip install 'draughts-tablebase[cluster]'"
        ) from e
    return distributed


class DaskScheduler:
    """Run pair tasks on a Dask cluster; each task uses ``threads`` numba threads.

    ``threads=None``: ``cores // N`` for ``local-cluster:N``, else each worker's own
    ``NUMBA_NUM_THREADS`` (set it in the worker's environment). ``retries``: extra attempts of
    a task that raised (a task whose worker died is rescheduled by Dask, up to its
    ``distributed.scheduler.allowed-failures`` setting). ``memory``: bytes a worker has for
    one task; a task estimated above it stops the run before anything is submitted.
    """

    def __init__(
        self,
        address: str,
        threads: int | None = None,
        retries: int = 2,
        memory: int | None = None,
    ) -> None:
        distributed = _import_distributed()  # fail early, with the install hint
        self.address = address
        self.memory = memory
        self.local_workers = parse_address(address)
        if self.local_workers is None:
            _check_address(distributed, address)
        if threads is None and self.local_workers:
            threads = max(1, (os.cpu_count() or 1) // self.local_workers)
        self.threads = threads
        self.retries = retries

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A :class:`distributed.Client` for the address (starting a LocalCluster if asked)."""
        distributed = _import_distributed()
        with ExitStack() as stack:
            stack.enter_context(_quiet_distributed())
            if self.local_workers:
                cluster = stack.enter_context(
                    distributed.LocalCluster(
                        n_workers=self.local_workers,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=":0",  # any free port (needs bokeh)
                    )
                )
                client = stack.enter_context(distributed.Client(cluster))
            else:
                try:
                    client = stack.enter_context(distributed.Client(self.address))
                except OSError as e:
                    raise ConnectionError(f"cannot reach Dask scheduler {self.address}: {e}") from e
            yield client

    def run(
        self,
        variant: Variant,
        tasks: list[PairTask],
        db: str,
        progress: Progress,
        task_fn: Callable[..., PairReport] = run_pair_task,
    ) -> list[PairReport]:
        """Build ``tasks`` into ``db``; needs outside ``tasks`` must already be on disk.

        With ``memory`` (the memory of one task), a pair with men whose in-memory task does
        not fit it is solved out of core by band tasks (:mod:`tablebase.build.clusterbands`;
        ``task_fn`` is not used for it), and a task whose estimate exceeds it even so stops
        the run before anything is submitted; Dask's own ``--memory-limit`` of each worker
        decides what runs together there.
        """
        sizes: dict[tuple[str, ...], int] = {}
        ooc: set[tuple[str, ...]] = set()
        if self.memory is not None:
            tasks, ooc = plan_tasks(variant, tasks, self.memory)
            check_budget(tasks, self.memory, ooc)
            sizes = clusterbands.band_sizes(variant, ooc, self.memory)
        db = os.path.abspath(db)
        Path(db).mkdir(parents=True, exist_ok=True)
        clean_temp_files(db)
        try:
            with self.connect() as client:
                return self._run(client, variant, tasks, db, progress, task_fn, sizes, ooc)
        finally:
            clean_temp_files(db)

    def _check_workers(self, client: Any, db: str, token: str) -> None:
        probe = Path(db) / f".tablebase-probe-{token}"
        probe.write_text(token)
        try:
            facts = client.run(_worker_facts, str(probe), token)
        finally:
            probe.unlink()
        if not facts:
            log.warning("no workers connected to %s yet: tasks wait until some join", self.address)
        blind = sorted(w for w, f in facts.items() if not f["sees_db"])
        if blind:
            raise RuntimeError(
                f"worker(s) {', '.join(blind)} do not see {db}: the database directory must "
                "be on a filesystem shared by the submitter and every worker, at the same path"
            )
        other = sorted(
            f"{w} ({f['version']})" for w, f in facts.items() if f["version"] != build_identity()
        )
        if other:
            raise RuntimeError(
                f"worker(s) {', '.join(other)} run other tablebase code than the "
                f"submitter ({build_identity()}): install the same sources everywhere"
            )
        threads = self.threads or "NUMBA_NUM_THREADS"
        if self.threads is None and facts:
            threads = "/".join(sorted({str(f["numba_threads"]) for f in facts.values()}))
        log.info(
            "Dask scheduler %s: %d workers, %s threads per task",
            client.scheduler.address,
            len(facts),
            threads,
        )

    def _run(
        self,
        client: Any,
        variant: Variant,
        tasks: list[PairTask],
        db: str,
        progress: Progress,
        task_fn: Callable[..., PairReport],
        sizes: dict[tuple[str, ...], int],
        ooc: set[tuple[str, ...]],
    ) -> list[PairReport]:
        distributed = _import_distributed()

        token = uuid.uuid4().hex[:12]
        self._check_workers(client, db, token)
        client.forward_logging("tablebase")
        started: queue.SimpleQueue[tuple[tuple[str, ...], int | None]] = queue.SimpleQueue()

        def on_started(event: tuple[float, dict]) -> None:
            msg = event[1]
            if msg.get("token") == token:
                started.put((tuple(msg["names"]), msg.get("band")))

        client.subscribe_topic(STARTED_TOPIC, on_started)
        level = logging.getLogger("tablebase").getEffectiveLevel()
        by_names = {t.names: t for t in tasks}
        futures: dict[tuple[str, ...], Any] = {}  # each pair's last task
        parts: dict[str, tuple[PairTask, int | None]] = {}  # prepare (None), bands (number)
        nbands: dict[tuple[str, ...], int] = {}
        extra: list[Any] = []  # the futures of the prepare and band tasks
        for t in _topological(tasks):
            needs = [futures[n] for n in sorted(t.needs) if n in by_names]
            if t.names in sizes:
                got = clusterbands.submit_pair(
                    client, variant, t, db, sizes[t.names], self.threads, level, token,
                    self.retries, needs,
                )  # fmt: skip
                futures[t.names] = got.finish
                parts[got.prepare.key] = (t, None)
                parts.update({f.key: (t, n) for n, f in enumerate(got.bands)})
                nbands[t.names] = len(got.bands)
                extra.extend([got.prepare, *got.bands])
                continue
            # a pair not solved in memory nor by bands: whole, its dependencies mapped
            fn = partial(task_fn, memory=self.memory) if t.names in ooc else task_fn
            futures[t.names] = client.submit(
                pair_task,
                fn,
                variant.name,
                t.names,
                db,
                self.threads,
                level,
                token,
                *needs,
                key=f"pair-{'+'.join(t.names)}-{token}",
                pure=False,
                retries=self.retries,
                priority=t.entries,  # among ready pairs, biggest first (as LocalScheduler)
            )
        task_of = {f.key: by_names[n] for n, f in futures.items()}
        every = [*futures.values(), *extra]
        progress.start(len(tasks), sum(t.entries for t in tasks))
        reports: list[PairReport] = []
        done: set[tuple[str, ...]] = set()
        bands_done: dict[tuple[str, ...], int] = dict.fromkeys(nbands, 0)
        band_progress = getattr(progress, "band", None)
        pending = distributed.as_completed(every)
        try:
            while not pending.is_empty():
                # finished before started: a worker's next start follows its last finish
                for fut in pending.next_batch(block=False):
                    t, band = parts.get(fut.key) or (task_of[fut.key], None)
                    try:
                        report = fut.result()
                    except Exception as e:
                        what = "" if band is None else f" (band {band + 1})"
                        raise BuildError(
                            f"slice pair {t.label} failed on the cluster{what}: {describe(e)}; "
                            f"{len(done)} of {len(tasks)} pairs were done and are kept "
                            "(run the same command to resume)"
                        ) from e
                    if fut.key in parts:
                        if band is not None and report is not None:  # None: pair complete
                            bands_done[t.names] += 1
                            if band_progress is not None:
                                band_progress(t.label, bands_done[t.names], nbands[t.names])
                        continue
                    done.add(t.names)
                    reports.append(report)
                    progress.done(t, report)
                while not started.empty():
                    names, band = started.get()
                    if band is not None:
                        log.debug("%s: band %d started", "+".join(names), band + 1)
                    elif names not in done:
                        progress.begin(by_names[names])
                if not pending.has_ready():
                    time.sleep(POLL_SECONDS)
        except BaseException:
            progress.abort()
            raise
        finally:
            client.unsubscribe_topic(STARTED_TOPIC)
            if len(done) < len(tasks):
                client.cancel(every)
        progress.finish()
        return reports


def _topological(tasks: list[PairTask]) -> list[PairTask]:
    """``tasks`` with every task after the tasks (of the list) it needs."""
    names = {t.names for t in tasks}
    placed: set[tuple[str, ...]] = set()
    out: list[PairTask] = []
    left = list(tasks)
    while left:
        ready = [t for t in left if all(n in placed or n not in names for n in t.needs)]
        if not ready:
            raise RuntimeError("build graph has a cycle")
        for t in ready:
            placed.add(t.names)
            out.append(t)
        left = [t for t in left if t.names not in placed]
    return out
