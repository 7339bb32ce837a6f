"""The working memory of a pair task: the model the schedulers budget with.

A pair task holds its pair's state words and the level passes' schedule, its dependencies'
values read in, and, while it writes, one slice's values read back with its packed WDL part;
plus what any task process holds besides (interpreter, numba, h5py). The figures are
calibrated on measured peaks (see :func:`task_memory_bytes`); the local scheduler runs
tasks together while their estimates fit its budget, and a pair whose estimate does not
fit is solved out of core (:mod:`tablebase.build.outofcore`).
"""

from __future__ import annotations

from tablebase.solve.levels import WORK_BLOCK

# Working memory of a pair task (used by the scheduler's memory budget): bytes per entry of
# the pair being solved (its state words and the level passes' schedule: a two-byte due
# level and two one-byte marks per block of WORK_BLOCK entries), per entry of each
# dependency read in, and per entry of the slice being written (its values read back to
# check the file, the packed WDL part, the don't-care bits); and what any task holds
# besides (interpreter, numba, h5py).
PAIR_BYTES_PER_ENTRY = 2 + 4 / WORK_BLOCK
DEPENDENCY_BYTES_PER_ENTRY = 1
WRITE_BYTES_PER_ENTRY = 1.5
FIXED_TASK_BYTES = 256 << 20


def task_memory_bytes(
    pair_entries: int,
    dependency_entries: int,
    largest_slice: int | None = None,
    dependency_bytes: int = DEPENDENCY_BYTES_PER_ENTRY,
) -> int:
    """Estimated peak memory of solving a pair of ``pair_entries`` index entries whose
    dependencies hold ``dependency_entries`` entries, read with ``dependency_bytes`` bytes
    each (2 when one of them is stored with 16-bit values), then writing its slices one by
    one (the largest has ``largest_slice`` entries; all of the pair when not given).

    Calibrated on measured peaks (maximum resident size of the task's process): the
    largest 5-piece International pair (1112+1211, 210 M entries, 113 M in dependencies)
    peaked at 767 MiB, estimated 947 MB; the Frisian slice 1111 (73 M entries with its king
    runs) at 412 MiB, estimated 523 MB."""
    largest = pair_entries if largest_slice is None else largest_slice
    return int(
        PAIR_BYTES_PER_ENTRY * pair_entries
        + dependency_bytes * dependency_entries
        + WRITE_BYTES_PER_ENTRY * largest
        + FIXED_TASK_BYTES
    )
