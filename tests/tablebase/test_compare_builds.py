"""``scripts/compare_builds.py``: two builds of one database compared value by value."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
from conftest import with_a_changed_value

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_builds.py"


def test_values_are_compared_in_chunks_across_widths() -> None:
    count_different = runpy.run_path(str(SCRIPT))["count_different"]
    a = np.array([0, 2, 255, 7, 9, 1, 4], dtype=np.uint8)
    b = a.astype(np.uint16)
    assert count_different(a, b, chunk=3) == 0
    b[2] = 256 + 255  # differs only above the low byte
    b[6] = 5
    assert count_different(a, b, chunk=3) == 2
    assert count_different(b, a, chunk=100) == 2


def test_one_changed_value_is_found(db3_international, tmp_path) -> None:
    """A copy with one value changed, that slice written with two-byte values: exit 1,
    one difference in that slice and none elsewhere."""
    dst, _ = with_a_changed_value(db3_international, tmp_path / "db", "1020", 0, 301, 300)
    r = subprocess.run(
        [sys.executable, str(SCRIPT), str(db3_international), str(dst)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert lines["1020"].endswith("compared, 1 different")
    assert all(v.endswith(", 0 different") for k, v in lines.items() if k not in ("1020", "total"))
    assert lines["total"].endswith(", 1 different")
