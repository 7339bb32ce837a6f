"""Build scheduling: the memory budget (--memory), per-material builds (--material) and the
threads shared among the running tasks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import pytest

from tablebase.build.faults import MemoryBudgetError
from tablebase.build.schedule import (
    LocalScheduler,
    Progress,
    build_graph,
    graph_for_pairs,
    parse_size,
    thread_share,
)
from tablebase.build.task import PairReport
from tablebase.material.slices import material_pairs, parse_material
from tablebase.rules.variants import FRISIAN, INTERNATIONAL
from tablebase.storage.slicefile import SliceStats
from tests.tablebase.conftest import same_table

CLI = [sys.executable, "-m", "tablebase.cli"]
GiB = 1 << 30


def timed_task(variant_name: str, names: tuple[str, ...], db: str, threads: int) -> PairReport:
    """Stands in for a pair task: records when it ran (in ``db``/runs.txt), solves nothing."""
    t0 = time.time()
    time.sleep(0.25)
    with open(Path(db) / "runs.txt", "a") as f:
        f.write(f"{'+'.join(names)} {t0!r} {time.time()!r}\n")
    empty = SliceStats(0, 0, 0, 0, -1, -1)
    return PairReport(tuple(names), (empty,) * len(names), 0, 0.0, False)


def runs(db: Path) -> list[tuple[str, float, float]]:
    path = db / "runs.txt"
    if not path.exists():
        return []
    return [
        (n, float(a), float(b))
        for n, a, b in (ln.split() for ln in path.read_text().split("\n") if ln)
    ]


def overlapping(db: Path) -> list[tuple[str, str]]:
    return [(a[0], b[0]) for a, b in combinations(runs(db), 2) if a[1] < b[2] and b[1] < a[2]]


def test_parse_size() -> None:
    assert parse_size("20G") == 20 * GiB
    assert parse_size("20GiB") == 20 * GiB
    assert parse_size("20gb") == 20 * GiB
    assert parse_size("512M") == 512 << 20
    assert parse_size("1.5G") == 3 * GiB // 2
    assert parse_size("4096") == 4096
    for bad in ("", "G", "10x", "-1G", "0", "nan", "1e999G"):
        with pytest.raises(ValueError, match="memory size"):
            parse_size(bad)


def test_a_task_over_budget_stops_the_build_before_it_starts(tmp_path) -> None:
    # Frisian: no pair is solved by men configurations, so none can go out of core
    # (tests/tablebase/test_bands.py refuses a pair over the budget even out of core)
    tasks = build_graph(FRISIAN, 3)
    worst = max(tasks, key=lambda t: t.memory)
    sched = LocalScheduler(jobs=2, threads=1, memory=worst.memory - 1)
    with pytest.raises(MemoryBudgetError) as e:
        sched.run(FRISIAN, tasks, str(tmp_path), Progress(), task_fn=timed_task)
    assert worst.label in str(e.value) and "needs an estimated" in str(e.value)
    assert runs(tmp_path) == []  # nothing ran, not even the small tasks


def meeting_task(variant_name: str, names: tuple[str, ...], db: str, threads: int) -> PairReport:
    """Waits (up to the seconds in ``db``/wait.txt) for another task to start, so two tasks
    allowed to run together certainly overlap, then records its run like :func:`timed_task`."""
    (Path(db) / f"started-{'+'.join(names)}").touch()
    deadline = time.time() + float((Path(db) / "wait.txt").read_text())
    while time.time() < deadline and len(list(Path(db).glob("started-*"))) < 2:
        time.sleep(0.02)
    return timed_task(variant_name, names, db, threads)


def test_tasks_over_budget_together_run_one_after_the_other(tmp_path) -> None:
    independent = [parse_material("0102").pair, parse_material("0110").pair]
    tasks = graph_for_pairs(INTERNATIONAL, independent)
    assert all(not t.needs for t in tasks)
    one = max(t.memory for t in tasks)  # each fits alone, the two do not fit together
    assert sum(t.memory for t in tasks) > one
    tight, roomy = tmp_path / "tight", tmp_path / "roomy"
    # tight: a task waits 1.5 s for the other in vain; roomy: until the second worker is up
    for db, budget, wait in ((tight, one, 1.5), (roomy, 2 * one, 120)):
        db.mkdir()
        (db / "wait.txt").write_text(str(wait))
        sched = LocalScheduler(jobs=2, threads=1, memory=budget)
        reports = sched.run(INTERNATIONAL, tasks, str(db), Progress(), task_fn=meeting_task)
        assert len(reports) == len(runs(db)) == len(tasks)
    assert overlapping(tight) == []
    assert overlapping(roomy), "with room for both, the two pairs should have run together"


def test_material_pairs_of_four_kings_against_two() -> None:
    """Exactly what 0402 needs: kings-only slices its captures reach, nothing else."""
    pairs = material_pairs([parse_material("0402")], lambda s: False)
    names = {s.name for p in pairs for s in p}
    assert names == {
        "0402", "0204", "0401", "0104", "0302", "0203", "0301", "0103", "0202", "0201",
        "0102", "0101",
    }  # fmt: skip
    assert [p[0].pieces for p in pairs] == sorted(p[0].pieces for p in pairs)  # build order


def test_material_pairs_skip_what_the_database_has() -> None:
    have = {parse_material(n) for n in ("0101", "0110", "1001")}
    pairs = material_pairs([parse_material("1010")], lambda s: s in have)
    assert [tuple(s.name for s in p) for p in pairs] == [("1010",)]
    half = {parse_material("0101"), parse_material("0110")}  # 1001 is missing: its pair is built
    pairs = material_pairs([parse_material("1010")], lambda s: s in half)
    assert [tuple(s.name for s in p) for p in pairs] == [("0110", "1001"), ("1010",)]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("101", "must be four digits"),
        ("10a0", "must be four digits"),
        ("0011", "white has no piece"),
        ("1100", "black has no piece"),
        ("4400", "black has no piece"),
        ("0431", "8 pieces, more than the 7 supported"),
    ],
)
def test_bad_material_names_are_rejected(name, why, tmp_path) -> None:
    with pytest.raises(ValueError, match=why):
        parse_material(name)
    db = tmp_path / "db"
    r = subprocess.run(
        [*CLI, "generate", "--material", "0201", "--material", name, "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]  # one line
    assert name in r.stderr and why in r.stderr and "Traceback" not in r.stderr
    assert not db.exists() or not list(db.glob("*.h5"))


def _generate(db: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [*CLI, "generate", "--db", str(db), "--jobs", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_material_build_brings_its_mirror_and_missing_dependencies(
    db3_international, tmp_path
) -> None:
    db = tmp_path / "international"
    r = _generate(db, "--material", "1001")
    assert r.returncode == 0, r.stderr
    # 1001's mirror 0110, and 0101 that its promotion reaches; not 1010 nor anything else
    assert sorted(p.stem for p in db.glob("*.h5")) == ["0101", "0110", "1001"]
    for p in db.glob("*.h5"):
        assert same_table(p, db3_international / p.name), p.name
    r = _generate(db, "--material", "1010")
    assert r.returncode == 0, r.stderr
    assert "1 slice pairs" in r.stderr  # the dependencies present are neither rebuilt nor read
    assert sorted(p.stem for p in db.glob("*.h5")) == ["0101", "0110", "1001", "1010"]
    assert same_table(db / "1010.h5", db3_international / "1010.h5")


def test_generate_needs_pieces_or_material(tmp_path) -> None:
    r = subprocess.run([*CLI, "generate", "--db", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "--material" in r.stderr and "Traceback" not in r.stderr


def test_generate_refuses_a_budget_below_one_task(tmp_path) -> None:
    db = tmp_path / "international"
    r = _generate(db, "--pieces", "3", "--memory", "64M")
    assert r.returncode == 1
    assert "needs an estimated" in r.stderr and "64.0 MiB" in r.stderr
    assert "Traceback" not in r.stderr
    assert not list(db.glob("*.h5"))
    r = _generate(db, "--pieces", "3", "--memory", "lots")
    assert r.returncode == 2 and "--memory" in r.stderr


def test_default_budget_is_most_of_the_available_memory() -> None:
    from tablebase.build.schedule import available_memory, default_memory

    avail = available_memory()
    assert 0 < default_memory() <= avail
    assert default_memory() >= avail // 2
    assert LocalScheduler(jobs=1).memory > 0
    assert os.cpu_count()


def test_log_progress_is_one_line_per_pair_with_slices_rate_and_eta(caplog) -> None:
    import logging

    from tablebase.build.progress import LogProgress

    tasks = build_graph(INTERNATIONAL, 2)  # 0101, 0110+1001, 1010: 4 slices
    st = SliceStats(10, 5, 3, 2, 7, 1)
    p = LogProgress(slices_total=4)
    with caplog.at_level(logging.INFO, logger="tablebase.build.progress"):
        p.start(len(tasks), sum(t.entries for t in tasks))
        for i, t in enumerate(tasks):
            p.begin(t)
            phases = (0.0,) * 4 if i == 0 else (0.05, 0.25, 0.125, 0.0625)
            report = PairReport(t.names, (st,) * len(t.names), t.entries, 0.5, i == 0, 0, phases)
            p.done(t, report)
        p.finish()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == len(tasks) + 1
    assert lines[0].startswith("[1/4 slices] 0101 verified, kept in 0.50 s (0101: 10 positions")
    assert lines[1].startswith(
        "[3/4 slices] 0110+1001 solved in 0.50 s [read 0.05 s, pass 1 0.25 s, levels 0.12 s,"
        " write 0.06 s] (0110: 10 positions"
    )
    assert "entries/s, ETA " in lines[1]
    assert lines[2].startswith("[4/4 slices] 1010 solved") and lines[2].endswith("ETA 0:00")


def test_terminal_progress_bar_shows_slices_rate_and_eta(monkeypatch) -> None:
    import io

    from tablebase.build.progress import TerminalProgress

    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    tasks = build_graph(INTERNATIONAL, 2)
    st = SliceStats(10, 5, 3, 2, 7, 1)
    p = TerminalProgress(slices_total=4)
    p.start(len(tasks), sum(t.entries for t in tasks))
    for i, t in enumerate(tasks):
        p.begin(t)
        assert f"running {t.label}" in out.getvalue().splitlines()[-1].split("\r")[-1]
        time.sleep(0.05)
        p.done(t, PairReport(t.names, (st,) * len(t.names), t.entries, 0.05, i == 0))
    p.finish()
    last = out.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("slices 4/4 100%|")
    assert "entries/s" in last and "<00:00" in last  # rate and time left
    skipped = tasks[0].entries  # a kept pair leaves the amount to solve
    assert p.bar.n == p.bar.total == sum(t.entries for t in tasks) - skipped


def test_a_containers_memory_limit_bounds_the_default_budget(tmp_path) -> None:
    from tablebase.build.schedule import _cgroup_memory_left

    (tmp_path / "memory.max").write_text("8589934592\n")
    (tmp_path / "memory.current").write_text("1073741824\n")
    assert _cgroup_memory_left(str(tmp_path)) == 7 * GiB
    (tmp_path / "memory.max").write_text("max\n")
    assert _cgroup_memory_left(str(tmp_path)) is None
    assert _cgroup_memory_left(str(tmp_path / "absent")) is None


def sharing_task(variant_name: str, names: tuple[str, ...], db: str, threads: int) -> PairReport:
    """Records the thread share it sees once both tasks run (``together``), then, for the
    task that outlives the other, the share once it runs alone (``alone``)."""
    from tablebase.build import task as generator

    me, d = "+".join(names), Path(db)
    (d / f"started-{me}").touch()
    deadline = time.time() + 60
    while time.time() < deadline and len(list(d.glob("started-*"))) < 2:
        time.sleep(0.02)
    (d / f"together-{me}").write_text(str(generator.THREAD_SHARE.value))
    if names[0] == "0102":  # the longer task: waits for the other to end, and for its share
        while time.time() < deadline and not (d / "ended").exists():
            time.sleep(0.02)
        while time.time() < deadline and generator.THREAD_SHARE.value < 2 * threads:
            time.sleep(0.02)
        (d / "alone").write_text(str(generator.THREAD_SHARE.value))
    else:
        time.sleep(0.3)
    report = timed_task(variant_name, names, db, threads)
    if names[0] != "0102":
        (d / "ended").touch()
    return report


def test_thread_share() -> None:
    assert [thread_share(2, n) for n in (0, 1, 2, 3)] == [2, 2, 1, 1]
    assert [thread_share(32, n) for n in (1, 3, 8, 40)] == [32, 10, 4, 1]


def test_a_task_left_alone_gets_the_threads_of_the_build(tmp_path) -> None:
    tasks = graph_for_pairs(
        INTERNATIONAL, [parse_material("0102").pair, parse_material("0110").pair]
    )
    sched = LocalScheduler(jobs=2, threads=1, memory=1 << 40)
    sched.run(INTERNATIONAL, tasks, str(tmp_path), Progress(), task_fn=sharing_task)
    together = sorted(int(p.read_text()) for p in tmp_path.glob("together-*"))
    assert together == [1, 1]  # two tasks, two threads: one each
    assert int((tmp_path / "alone").read_text()) == 2  # the one left gets both


@pytest.mark.slow  # 7 s on a fresh install, compiling for two-byte dependencies: CI's slow tier
def test_dependencies_stored_wide_raise_a_tasks_estimate(db3_international, tmp_path) -> None:
    """A pair whose dependency is stored with 16-bit values reads every dependency with two
    bytes: its estimate is taken again from the files once it is ready, and a budget that
    held the one-byte estimate but not this one stops the build naming the pair, the task
    never started; a budget that holds it runs the pair."""
    from tablebase.build.task import pair_memory
    from tablebase.storage.values import encode
    from tests.tablebase.conftest import with_a_changed_value

    pair = parse_material("1020").pair
    tasks = graph_for_pairs(INTERNATIONAL, [pair])
    assert pair_memory(INTERNATIONAL, pair, db3_international) == tasks[0].memory
    # 1010, a dependency of 1020 (a capture leads there), stored with 16-bit values
    db, _ = with_a_changed_value(
        db3_international, tmp_path / "international", "1010", 0, encode(1, 301), 301
    )
    wide = pair_memory(INTERNATIONAL, pair, db)
    assert wide > tasks[0].memory
    sched = LocalScheduler(jobs=1, threads=1, memory=tasks[0].memory)
    with pytest.raises(MemoryBudgetError) as e:
        sched.run(INTERNATIONAL, tasks, str(db), Progress(), task_fn=timed_task)
    assert tasks[0].label in str(e.value) and "two-byte values" in str(e.value)
    assert runs(db) == []
    LocalScheduler(jobs=1, threads=1, memory=wide).run(
        INTERNATIONAL, tasks, str(db), Progress(), task_fn=timed_task
    )
    assert [r[0] for r in runs(db)] == [tasks[0].label]


def talking_task(variant_name: str, names: tuple[str, ...], db: str, threads: int) -> PairReport:
    """:func:`timed_task` that logs one INFO and one WARNING record from its worker."""
    import logging

    log = logging.getLogger("tablebase.build.task")
    log.info("info from %s", "+".join(names))
    log.warning("warning from %s", "+".join(names))
    return timed_task(variant_name, names, db, threads)


def test_worker_log_records_reach_the_parent_at_its_level(tmp_path, caplog) -> None:
    """The workers are spawned processes: their records (INFO ones too, the level the
    build logs at) reach the parent's handlers, once each."""
    import logging

    tasks = graph_for_pairs(INTERNATIONAL, [parse_material("0102").pair])
    with caplog.at_level(logging.INFO, logger="tablebase"):
        LocalScheduler(jobs=1, threads=1, memory=1 << 40).run(
            INTERNATIONAL, tasks, str(tmp_path), Progress(), task_fn=talking_task
        )
    messages = [r.getMessage() for r in caplog.records]
    for level in ("info", "warning"):
        assert messages.count(f"{level} from {tasks[0].label}") == 1, messages


def test_no_eta_until_a_hundredth_of_the_entries_is_solved() -> None:
    """A cold first pair is small and slow: its rate alone predicted hours for a build of
    seconds (909 entries/s, ETA 13:17:06 for 43 M entries)."""
    from tablebase.build.progress import _Tally

    t = _Tally()
    t.start(43_457_445)
    first = PairReport(("0101",), (SliceStats(2450, 424, 2024, 2, 3, 0),), 2450, 1.4, False)
    t.add(first)
    assert t.eta() == "?"
    t.add(PairReport(("1030",), (SliceStats(1, 0, 1, 0, -1, -1),), 600_000, 1.6, False))
    assert t.eta() != "?" and ":" in t.eta()
