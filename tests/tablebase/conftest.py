"""Fixtures for the generator tests: small databases built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablebase.generator import run_pair_task
from tablebase.slices import Slice, build_pairs


def build_db(directory: Path, variant: str, pieces: int) -> Path:
    """Solve every pair up to ``pieces`` pieces in this process, in build order."""
    return solve_into(directory, variant, build_pairs(pieces))


def solve_into(directory: Path, variant: str, pairs: list[tuple[Slice, ...]]) -> Path:
    """Solve ``pairs`` (in build order) into ``directory`` in this process."""
    directory.mkdir(parents=True, exist_ok=True)
    for pair in pairs:
        run_pair_task(variant, tuple(s.name for s in pair), str(directory), threads=2)
    return directory


def same_table(a: Path, b: Path) -> bool:
    """Whether two slice files hold the same tables: every attribute, every dataset's
    type, contents and attributes. Not byte for byte: ISA-L's deflate can encode the same
    chunk a byte longer or shorter from one process to another (seen in a resumed build,
    the data and checksums equal), so equal tables need not be equal files."""
    import h5py
    import numpy as np

    def same_attrs(x, y) -> bool:
        return set(x) == set(y) and all(np.array_equal(x[k], y[k]) for k in x)

    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        if not same_attrs(fa.attrs, fb.attrs) or set(fa) != set(fb):
            return False
        return all(
            fa[k].dtype == fb[k].dtype
            and np.array_equal(fa[k][()], fb[k][()])
            and same_attrs(fa[k].attrs, fb[k].attrs)
            for k in fa
        )


def with_a_changed_value(src: Path, dst: Path, name: str, offset: int, value: int, longest: int):
    """A copy of the database ``src`` in ``dst`` (International) whose slice ``name`` is
    written again from two-byte values, entry ``longest_win_index + offset`` set to
    ``value`` and ``longest`` as its longest win; returns ``(dst, the values written)``."""
    import numpy as np

    from tablebase.rules.variants import INTERNATIONAL
    from tablebase.slices import parse_slice
    from tablebase.storage import SliceStats, read_attrs, read_slice, slice_path, write_slice

    dst.mkdir()
    for path in src.glob("*.h5"):
        (dst / path.name).write_bytes(path.read_bytes())
    s = parse_slice(name)
    a = read_attrs(slice_path(dst, s))
    values = read_slice(slice_path(dst, s), INTERNATIONAL, s).astype(np.uint16)
    values[int(a["longest_win_index"]) + offset] = value
    stats = SliceStats(
        a["positions"], a["wins"], a["draws"], a["losses"], longest, a["longest_win_index"]
    )
    write_slice(dst, INTERNATIONAL, s, values, stats, a["longest_win_fen"])
    return dst, values


@pytest.fixture(scope="session")
def db3_international(tmp_path_factory) -> Path:
    """The 2-3 piece International database."""
    return build_db(tmp_path_factory.mktemp("db") / "international", "international", 3)


@pytest.fixture(scope="session")
def db3_english(tmp_path_factory) -> Path:
    """The 2-3 piece English database."""
    return build_db(tmp_path_factory.mktemp("db") / "english", "english", 3)
