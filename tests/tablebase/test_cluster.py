"""The Dask backend: same files as the local one, lost workers, retries, resume across backends.

A LocalCluster with two single-threaded worker processes stands in for a cluster; the
scheduler under test connects to it by its ``tcp://`` address, as it would to a real one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from tablebase.build import outofcore  # noqa: E402
from tablebase.build.cluster import DaskScheduler, _topological, parse_address  # noqa: E402
from tablebase.build.faults import BuildError  # noqa: E402
from tablebase.build.folderlock import LOCK_NAME  # noqa: E402
from tablebase.build.schedule import (  # noqa: E402
    LocalScheduler,
    PairTask,
    Progress,
    build_graph,
    graph_for_pairs,
)
from tablebase.build.task import PairReport, pair_memory, pass_threads, run_pair_task  # noqa: E402
from tablebase.build.verify import verify_slice  # noqa: E402
from tablebase.material.slices import all_slices, parse_slice  # noqa: E402
from tablebase.rules.variants import ENGLISH, INTERNATIONAL  # noqa: E402
from tablebase.storage.slicefile import slice_path  # noqa: E402
from tests.conftest import session_database  # noqa: E402
from tests.tablebase.conftest import same_table  # noqa: E402

TARGET = ("0111", "1101")  # a 3-piece pair in the middle of the graph: others wait for it


class Recorder(Progress):
    """Remembers the callbacks a scheduler made."""

    def start(self, total: int, entries: int) -> None:
        self.total, self.begun, self.reports, self.finished = total, [], [], False

    def begin(self, task: PairTask) -> None:
        self.begun.append(task.names)

    def done(self, task: PairTask, report: PairReport) -> None:
        assert report.slices == task.names
        self.reports.append(report)

    def finish(self) -> None:
        self.finished = True


def sha256s(db: Path) -> dict[str, str]:
    """Every file of ``db`` (temporaries included, the build lock file aside) with the
    SHA-256 of its content: for a slice file its attributes and each dataset's values and
    attributes, else its bytes. (HDF5's byte layout of the same content was seen to differ
    now and then between a Dask worker's file and a local one, 118 of 12,222 bytes, with
    every value and attribute equal; the content is what a build must reproduce.)"""
    return {p.name: _content_digest(p) for p in sorted(db.iterdir()) if p.name != LOCK_NAME}


def _content_digest(path: Path) -> str:
    import h5py

    digest = hashlib.sha256()
    if not path.name.endswith(".h5"):
        digest.update(path.read_bytes())
        return digest.hexdigest()
    with h5py.File(path, "r") as f:
        for k in sorted(f.attrs):
            digest.update(f"{k}={f.attrs[k]!r};".encode())
        for name in sorted(f):
            ds = f[name]
            digest.update(f"{name}:{ds.dtype}:{ds.shape}".encode())
            digest.update(ds[()].tobytes())
            for k in sorted(ds.attrs):
                digest.update(f"{k}={ds.attrs[k]!r};".encode())
    return digest.hexdigest()


def marker(db: str) -> Path:
    return Path(db).with_name(Path(db).name + ".failed-once")


def dying_task(variant_name: str, names: tuple[str, ...], db: str, threads: int) -> PairReport:
    """The first attempt at TARGET leaves half a temporary file and kills its worker process."""
    if tuple(names) == TARGET and not marker(db).exists():
        marker(db).write_text(str(os.getpid()))
        (Path(db) / f"{names[0]}.h5.{os.getpid()}.tmp").write_bytes(b"\x89HDF\r\n\x1a\n half")
        os._exit(1)
    return run_pair_task(variant_name, names, db, threads)


def raising_task(variant_name: str, names: tuple[str, ...], db: str, threads: int) -> PairReport:
    """The first attempt at TARGET logs a warning and raises."""
    if tuple(names) == TARGET and not marker(db).exists():
        marker(db).write_text(str(os.getpid()))
        logging.getLogger("tablebase.test").warning("pair %s fails on purpose", "+".join(names))
        raise OSError("simulated I/O error")
    return run_pair_task(variant_name, names, db, threads)


def always_failing_task(
    variant_name: str, names: tuple[str, ...], db: str, threads: int
) -> PairReport:
    if tuple(names) == TARGET:
        raise OSError("simulated permanent failure")
    return run_pair_task(variant_name, names, db, threads)


@pytest.fixture(scope="module")
def cluster_address():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def local_build(db: Path, pieces: int, tasks: list[PairTask] | None = None) -> list[PairReport]:
    tasks = build_graph(INTERNATIONAL, pieces) if tasks is None else tasks
    db.mkdir(parents=True, exist_ok=True)
    return LocalScheduler(jobs=2, threads=1).run(INTERNATIONAL, tasks, str(db), Progress())


def cluster_build(
    address: str, db: Path, pieces: int, tasks: list[PairTask] | None = None, **kw
) -> tuple[list[PairReport], Recorder]:
    tasks = build_graph(INTERNATIONAL, pieces) if tasks is None else tasks
    rec = Recorder()
    reports = DaskScheduler(address, threads=1).run(INTERNATIONAL, tasks, str(db), rec, **kw)
    return reports, rec


@pytest.fixture(scope="module")
def local3(tmp_path_factory) -> dict[str, str]:
    """Checksums of the 2-3 piece International database built by the local backend."""
    db = tmp_path_factory.mktemp("local") / "international"
    local_build(db, 3)
    return sha256s(db)


def assert_complete(db: Path, pieces: int) -> None:
    assert not list(db.glob("*.tmp"))
    names = {p.name for p in db.iterdir()}
    assert names == {s.file_name() for s in all_slices(pieces)}
    for s in all_slices(pieces):
        assert verify_slice(db, INTERNATIONAL, s).bad_count == 0, s.name


def test_parse_address() -> None:
    assert parse_address("local-cluster:3") == 3
    assert parse_address("tcp://10.0.0.1:8786") is None
    for bad in ("local-cluster:", "local-cluster:0", "local-cluster:x"):
        with pytest.raises(ValueError):
            parse_address(bad)


@pytest.mark.parametrize("address", ["bogus", "tcp://10.0.0.1", "10.0.0.1:port"])
def test_a_scheduler_address_without_a_port_is_refused_before_the_build(
    address: str, tmp_path: Path
) -> None:
    """``--scheduler`` with an address Dask cannot connect to: a one-line error naming the
    address and the expected forms, exit code 2, no traceback, nothing written."""
    from click.testing import CliRunner

    from tablebase.cli import main

    db = tmp_path / "international"
    args = ["generate", "--pieces", "2", "--db", str(db), "--scheduler", address]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"--scheduler {address!r}" in result.output
    assert "tcp://HOST:PORT or local-cluster:N" in result.output
    assert "Traceback" not in result.output
    assert not list(db.glob("*.h5"))


def test_topological_order_puts_needs_first() -> None:
    tasks = build_graph(INTERNATIONAL, 4)
    order = _topological(list(reversed(tasks)))
    seen: set[tuple[str, ...]] = set()
    for t in order:
        assert t.needs <= seen
        seen.add(t.names)
    assert len(order) == len(tasks)


def test_cluster_build_matches_local_build(cluster_address, local3, tmp_path) -> None:
    db = tmp_path / "international"
    reports, rec = cluster_build(cluster_address, db, 3)
    assert sha256s(db) == local3
    assert len(reports) == rec.total == len(build_graph(INTERNATIONAL, 3))
    assert rec.finished and not any(r.skipped for r in reports)
    assert set(rec.begun) <= {r.slices for r in reports}


@pytest.mark.slow
def test_cluster_build_matches_local_build_4_pieces(cluster_address, tmp_path) -> None:
    local_build(tmp_path / "local", 4)
    cluster_build(cluster_address, tmp_path / "cluster", 4)
    assert sha256s(tmp_path / "cluster") == sha256s(tmp_path / "local")


@pytest.mark.slow  # a Dask cluster build, 5-7 s in the quick tier (issue 51); CI runs it
def test_lost_worker_mid_write_leaves_complete_database(cluster_address, local3, tmp_path) -> None:
    db = tmp_path / "international"
    reports, _ = cluster_build(cluster_address, db, 3, task_fn=dying_task)
    assert marker(str(db)).exists(), "the worker was not killed"
    assert_complete(db, 3)
    assert sha256s(db) == local3
    assert len(reports) == len(build_graph(INTERNATIONAL, 3))


@pytest.mark.slow  # a Dask cluster build, 5-7 s in the quick tier (issue 51); CI runs it
def test_failed_task_is_retried_and_its_log_forwarded(
    cluster_address, local3, tmp_path, caplog
) -> None:
    db = tmp_path / "international"
    with caplog.at_level(logging.INFO, logger="tablebase"):
        cluster_build(cluster_address, db, 3, task_fn=raising_task)
        deadline = time.time() + 10
        while time.time() < deadline and "fails on purpose" not in caplog.text:
            time.sleep(0.1)
    assert marker(str(db)).exists()
    assert sha256s(db) == local3
    assert "pair 0111+1101 fails on purpose" in caplog.text  # logged on a worker


def test_permanent_failure_raises_and_leaves_no_temporaries(cluster_address, tmp_path) -> None:
    db = tmp_path / "international"
    with pytest.raises(
        BuildError, match=r"0111\+1101 failed on the cluster: .*simulated permanent failure"
    ):
        cluster_build(cluster_address, db, 3, task_fn=always_failing_task)
    assert not list(db.glob("*.tmp"))
    assert not any((db / f"{n}.h5").exists() for n in TARGET)


@pytest.mark.slow  # a Dask cluster build, 5-7 s in the quick tier (issue 51); CI runs it
def test_resume_local_then_cluster(cluster_address, local3, tmp_path) -> None:
    db = tmp_path / "international"
    tasks = build_graph(INTERNATIONAL, 3)
    half = len(tasks) // 2
    local_build(db, 3, tasks[:half])  # build order: a prefix holds its own dependencies
    stale = db / f"{tasks[half].names[0]}.h5.99999999.tmp"
    stale.write_bytes(b"left by a killed writer")  # never counts as a table
    reports, _ = cluster_build(cluster_address, db, 3)
    skipped = {r.slices for r in reports if r.skipped}
    assert skipped == {t.names for t in tasks[:half]}
    assert sha256s(db) == local3


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_resume_cluster_then_local(cluster_address, local3, tmp_path) -> None:
    db = tmp_path / "international"
    tasks = build_graph(INTERNATIONAL, 3)
    half = len(tasks) // 2
    cluster_build(cluster_address, db, 3, tasks[:half])
    reports = local_build(db, 3)
    skipped = {r.slices for r in reports if r.skipped}
    assert skipped == {t.names for t in tasks[:half]}
    assert sha256s(db) == local3


@pytest.mark.slow  # a Dask cluster build, 5-7 s in the quick tier (issue 51); CI runs it
def test_cli_generate_with_scheduler(cluster_address, local3, tmp_path) -> None:
    from click.testing import CliRunner

    from tablebase.cli import main

    db = tmp_path / "international"
    args = ["generate", "--pieces", "3", "--db", str(db), "--scheduler", cluster_address]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert sha256s(db) == local3
    bad = CliRunner().invoke(main, [*args[:-1], "local-cluster:x"])
    assert bad.exit_code == 2 and "local-cluster:N" in bad.output


def test_cli_material_and_memory_with_scheduler(cluster_address, local3, tmp_path) -> None:
    from click.testing import CliRunner

    from tablebase.cli import main

    db = tmp_path / "international"
    args = ["generate", "--material", "1010", "--db", str(db), "--scheduler", cluster_address]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    got = sha256s(db)
    assert sorted(got) == ["0101.h5", "0110.h5", "1001.h5", "1010.h5"]
    assert all(local3[name] == digest for name, digest in got.items())
    small = CliRunner().invoke(main, ["generate", "--pieces", "3", *args[3:], "--memory", "64M"])
    assert small.exit_code == 1 and "needs an estimated" in small.output
    assert sorted(sha256s(db)) == sorted(got)  # nothing was submitted


OOC_PAIR = ("1011", "1110")  # English, 3 pieces, solved by men configurations
BAND_LINE = re.compile(r"1011\+1110: band (\d+) of (\d+) solved")


class BandRecorder(Recorder):
    """Also remembers the band progress callbacks."""

    def start(self, total: int, entries: int) -> None:
        super().start(total, entries)
        self.bands: list[tuple[str, int, int]] = []

    def band(self, label: str, done: int, total: int) -> None:
        self.bands.append((label, done, total))


@pytest.fixture
def english3_without_pair(tmp_path_factory, tmp_path, monkeypatch) -> tuple[Path, Path, int]:
    """The English 2-3 database, a copy of it without OOC_PAIR's files, and a cap one byte
    below the pair's in-memory estimate; bands of 10 configurations at most (about 80)."""
    src = session_database(tmp_path_factory, "english", 3)
    db = tmp_path / "english"
    shutil.copytree(src, db)
    pair = tuple(parse_slice(n) for n in OOC_PAIR)
    for s in pair:
        slice_path(db, s).unlink()
    monkeypatch.setenv(outofcore.BAND_CONFIGS_ENV, "10")
    return src, db, pair_memory(ENGLISH, pair, db) - 1


def ooc_build(address: str, db: Path, cap: int) -> BandRecorder:
    pair = tuple(parse_slice(n) for n in OOC_PAIR)
    rec = BandRecorder()
    scheduler = DaskScheduler(address, threads=1, memory=cap)
    scheduler.run(ENGLISH, graph_for_pairs(ENGLISH, [pair]), str(db), rec)
    return rec


def band_records(caplog, want: int) -> list[logging.LogRecord]:
    """The forwarded "band N of M solved" records, once ``want`` of them arrived (10 s at
    most: worker records may trail the last result)."""
    deadline = time.time() + 10
    while True:
        got = [r for r in caplog.records if BAND_LINE.search(r.getMessage())]
        if len(got) >= want or time.time() > deadline:
            return got
        time.sleep(0.1)


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_cluster_solves_a_pair_out_of_core_by_band_tasks(
    cluster_address, english3_without_pair, caplog
) -> None:
    """``memory`` below the pair's in-memory task: the pair is solved by one Dask task per
    band on the workers, each band once, the progress told of every band as its task
    ends; the files equal the in-memory build's and the scratch folder is gone; a rerun
    finds the pair complete and solves no band. (Which
    worker takes a band is Dask's choice: with bands of milliseconds here, the worker
    holding the prepare task's result takes most.)"""
    src, db, cap = english3_without_pair
    pair = tuple(parse_slice(n) for n in OOC_PAIR)
    nbands = len(outofcore.choose_plan(ENGLISH, pair, cap).bands)
    assert nbands > 20
    with caplog.at_level(logging.INFO, logger="tablebase"):
        rec = ooc_build(cluster_address, db, cap)
        records = band_records(caplog, nbands)
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()
    assert rec.finished and [r.slices for r in rec.reports] == [OOC_PAIR]
    assert rec.bands == [("1011+1110", k, nbands) for k in range(1, nbands + 1)]
    solved = sorted(int(BAND_LINE.search(r.getMessage()).group(1)) for r in records)
    assert solved == list(range(1, nbands + 1))  # each band once, by a task of its own
    assert os.getpid() not in {r.process for r in records}  # solved by the workers
    assert all(r.band_progress[0] == "1011+1110" for r in records)
    again = ooc_build(cluster_address, db, cap)  # found complete by the prepare task
    assert [r.skipped for r in again.reports] == [True] and again.bands == []


@pytest.mark.slow  # over 29 s in the quick tier (issue 51): CI's slow tier runs it
def test_cluster_resumes_a_pair_out_of_core_from_its_band_files(
    cluster_address, english3_without_pair, caplog
) -> None:
    """Band files of the first groups left by an earlier run (solved here in this process)
    are kept by the Dask build: only the other bands are solved, and the files equal the
    in-memory build's."""
    src, db, cap = english3_without_pair
    pair = tuple(parse_slice(n) for n in OOC_PAIR)
    p = outofcore.choose_plan(ENGLISH, pair, cap)
    scr, _ = outofcore.open_scratch(db, ENGLISH, pair, p, False)
    first = [b for g in p.groups()[:3] for b in g]
    for band in first:
        outofcore.solve_one(scr, band, lambda: pass_threads(1))
    nb, k = len(p.bands), len(first)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="tablebase"):
        ooc_build(cluster_address, db, cap)
        records = band_records(caplog, nb - k)
    assert f"1011+1110: {k} of {nb} bands kept from an earlier run" in caplog.text
    solved = sorted(int(BAND_LINE.search(r.getMessage()).group(1)) for r in records)
    assert solved == list(range(k + 1, nb + 1))
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()


@pytest.mark.slow  # over 30 s in the quick tier (issue 51): CI's slow tier runs it
def test_cluster_solves_a_pair_whose_bands_outweigh_it_whole_with_dependencies_mapped(
    cluster_address, tmp_path_factory, tmp_path
) -> None:
    """English 1030+3010 (men only) with ``memory`` one byte below its in-memory task: no
    band tasks, one pair task given the cap, which solves the pair whole with its
    dependencies mapped from its scratch folder; the files equal the in-memory build's
    and the scratch folder is gone."""
    from tablebase.build import task as generator

    src = session_database(tmp_path_factory, "english", 4)
    db = tmp_path / "english"
    shutil.copytree(src, db)
    pair = (parse_slice("1030"), parse_slice("3010"))
    for s in pair:
        slice_path(db, s).unlink()
    cap = pair_memory(ENGLISH, pair, db) - 1
    assert generator.task_mode(ENGLISH, pair, cap) == generator.MAPPED
    rec = Recorder()
    DaskScheduler(cluster_address, threads=1, memory=cap).run(
        ENGLISH, graph_for_pairs(ENGLISH, [pair]), str(db), rec
    )
    for s in pair:
        assert same_table(slice_path(src, s), slice_path(db, s)), s.name
    assert not (db / outofcore.FOLDER).exists()
