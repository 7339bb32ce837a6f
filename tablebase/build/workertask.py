"""The worker side of every task of a Dask build (:mod:`tablebase.build.cluster`, pair tasks;
:mod:`tablebase.build.clusterbands`, the tasks of a pair out of core): logging at the
submitter's level, the start announced to the submitter, the threads a task uses."""

from __future__ import annotations

import logging

from tablebase.solve.men import pool_threads

STARTED_TOPIC = "tablebase-pair-started"  # the Dask event topic of task starts


def task_logging(log_level: int) -> None:
    """In a worker's task: the ``tablebase`` loggers at the submitter's level."""
    logging.getLogger("tablebase").setLevel(log_level)


def begin_task(log_level: int, token: str, names: tuple[str, ...], band: int | None = None) -> None:
    """In a worker's task: logging at the submitter's level, and the start of pair ``names``
    (or of its band ``band``) announced to the submitter of run ``token``."""
    task_logging(log_level)
    try:
        from distributed import get_worker

        msg = {"token": token, "names": list(names), "band": band}
        get_worker().log_event(STARTED_TOPIC, msg)
    except ValueError:  # not running on a worker (called directly)
        pass


def task_threads(threads: int | None) -> int:
    """The threads of a task: ``threads``, or the worker's own ``NUMBA_NUM_THREADS``."""
    return pool_threads() if threads is None else threads
