"""Faults of a build, tried as a careless user would: kill -9, two builds on one folder, a
killed worker, a full disk, a read-only folder, a stray file, a relabelled table."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tablebase.build.faults import BuildError, SliceWriteError, describe
from tablebase.build.folderlock import FolderInUseError, lock_folder
from tablebase.build.schedule import LocalScheduler, Progress, build_graph
from tablebase.build.task import PairReport, run_pair_task
from tablebase.material.slices import parse_slice
from tablebase.probe.database import Tablebase
from tablebase.rules.variants import INTERNATIONAL
from tablebase.storage.reader import read_slice
from tablebase.storage.slicefile import TableFileError, slice_path
from tests.tablebase.conftest import same_table

CLI = [sys.executable, "-m", "tablebase.cli"]
TARGET = ("1020", "2010")  # the last 3-piece pair: every other one is done before it


def start_generate(db: Path, pieces: int = 4) -> subprocess.Popen:
    cmd = [*CLI, "generate", "--pieces", str(pieces), "--db", str(db), "--jobs", "1"]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_for(condition, seconds: float = 600.0) -> None:
    """Poll until ``condition()``; generous: the first task may compile the solver."""
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def worker_of(proc: subprocess.Popen) -> int:
    """The pid of the build's worker process (the spawned one, not the resource tracker)."""
    found: list[int] = []

    def spawned() -> bool:
        for c in children(proc.pid):
            try:
                if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes():
                    found.append(c)
                    return True
            except OSError:
                pass
        return False

    wait_for(spawned)
    return found[0]


def slice_files(db: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in db.glob("*.h5")}


def blocked_build(db3: Path, db: Path) -> tuple[subprocess.Popen, int]:
    """A 2-3 piece build in ``db`` (a copy of ``db3``) whose every pair but TARGET is
    complete and one of TARGET's files a named pipe: its worker blocks inside TARGET's task,
    opening the pipe, however fast the build. Returns the build and its worker's pid once
    the worker is blocked there."""
    shutil.copytree(db3, db)
    blocker = db / f"{TARGET[0]}.h5"
    blocker.unlink()
    os.mkfifo(blocker)
    cmd = [*CLI, "generate", "--pieces", "3", "--db", str(db), "--jobs", "1"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    worker = worker_of(proc)
    wchan = Path(f"/proc/{worker}/wchan")
    wait_for(lambda: alive(worker) and wchan.read_text() == "wait_for_partner")
    return proc, worker


def test_workers_end_with_their_parent(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    proc, worker = blocked_build(db3_international, db)
    try:
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 <pid>` does
        proc.wait()
        wait_for(lambda: not alive(worker), seconds=5)
        (db / f"{TARGET[0]}.h5").unlink()  # the named pipe (reading it would block)
        before = slice_files(db)
        time.sleep(1.5)  # a worker left running would write its pair's files by now
        assert slice_files(db) == before
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_killed_worker_ends_the_build_with_one_line(db3_international, tmp_path) -> None:
    """Deterministic: the worker is killed while blocked inside TARGET's task
    (:func:`blocked_build`); the build then ends with TARGET's one-line error, the other
    files kept."""
    db = tmp_path / "international"
    blocker = db / f"{TARGET[0]}.h5"
    proc, worker = blocked_build(db3_international, db)
    try:
        os.kill(worker, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 1
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: slice pair {TARGET[0]}+{TARGET[1]}"), last
    assert "worker process was killed by SIGKILL" in last and "are kept" in last
    blocker.unlink()
    kept = {p.name for p in db.glob("*.h5")}
    assert kept == {p.name for p in db3_international.glob("*.h5")} - {blocker.name}
    assert not list(db.glob("*.tmp"))


def test_a_second_build_on_the_folder_names_the_first(tmp_path) -> None:
    db = tmp_path / "international"
    db.mkdir()
    with lock_folder(db):
        with pytest.raises(FolderInUseError, match=f"process {os.getpid()}"):
            with lock_folder(db):
                pass
        r = subprocess.run(
            [*CLI, "generate", "--pieces", "3", "--db", str(db)], capture_output=True, text=True
        )
        assert r.returncode == 1
        assert r.stderr.startswith(f"error: database folder {db} is in use by process ")
        assert f"process {os.getpid()} (" in r.stderr  # its pid and command line
        assert r.stderr.count("\n") == 1 and not list(db.glob("*.h5"))
    with lock_folder(db):  # released (and a lock file left behind blocks nothing)
        pass


def failing_write_task(
    variant_name: str, names: tuple[str, ...], db: str, threads: int
) -> PairReport:
    """TARGET's write fails as a full disk (or, by the marker file, a read-only folder) does."""
    if tuple(names) == TARGET:
        from tablebase.build import task as generator

        code = int((Path(db) / "errno.txt").read_text())

        def write_slice(db, variant, s, *args, **kwargs):
            raise OSError(code, os.strerror(code), str(slice_path(db, s)) + ".tmp")

        generator.write_slice = write_slice
    return run_pair_task(variant_name, names, db, threads)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_write_failures_end_the_build_with_one_line(code, tmp_path) -> None:
    db = tmp_path / "international"
    db.mkdir()
    (db / "errno.txt").write_text(str(code))
    with pytest.raises(BuildError) as e:
        LocalScheduler(jobs=1, threads=1).run(
            INTERNATIONAL, build_graph(INTERNATIONAL, 3), str(db), Progress(), failing_write_task
        )
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("slice pair 1020+2010 failed: cannot write slice 1020 ")
    assert os.strerror(code) in msg and "8 of 9 pairs were done and are kept" in msg
    assert len(list(db.glob("*.h5"))) == 14  # every other slice is there


def test_causes_are_worded_by_the_os() -> None:
    h5 = RuntimeError(
        "Can't decrement id ref count (file write failed: time = x\n, filename = 'a.tmp', "
        "file descriptor = 5, errno = 28, error message = 'No space left on device')"
    )
    assert describe(h5) == "No space left on device"
    assert describe(OSError(errno.EROFS, "x", "/db/1010.h5")) == (
        "Read-only file system (/db/1010.h5)"
    )
    assert describe(ValueError("bad\nmore")) == "ValueError: bad"
    err = SliceWriteError("1010", "/db/1010.h5", "No space left on device")
    import pickle

    assert str(pickle.loads(pickle.dumps(err))) == str(err)
    t = TableFileError("/db/1010.h5", "checksum mismatch")
    assert str(pickle.loads(pickle.dumps(t))) == str(t) == describe(t)


def mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)])
    if r.returncode:
        pytest.skip("needs permission to mount a tmpfs (root in a privileged environment)")


def test_read_only_folder_gives_one_line(db3_international, tmp_path) -> None:
    if os.geteuid() != 0:
        db = tmp_path / "international"
        shutil.copytree(db3_international, db)
        db.chmod(0o555)
    else:  # root writes through permissions: a read-only filesystem
        db = tmp_path / "ro"
        mount_tmpfs(db, "ro,size=1m")
    try:
        r = subprocess.run(
            [*CLI, "generate", "--pieces", "3", "--db", str(db)], capture_output=True, text=True
        )
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(db)])
        else:
            db.chmod(0o755)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(f"error: cannot write in database folder {db}: ")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_full_disk_ends_the_build_with_one_line(db3_international, tmp_path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    disk = tmp_path / "small"
    mount_tmpfs(disk, "size=300k")  # the 2-3 piece files need about 330 KiB
    try:
        r = subprocess.run(
            [*CLI, "generate", "--pieces", "3", "--jobs", "1", "--db", str(disk / "db")],
            capture_output=True,
            text=True,
        )
        kept = sorted((disk / "db").glob("*.h5"))
        leftovers = list((disk / "db").glob("*.tmp"))
        for p in kept:
            assert same_table(p, db3_international / p.name)
    finally:
        subprocess.run(["umount", str(disk)])
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: slice pair ") and "are kept" in last
    assert "cannot write slice " in last and "No space left on device" in last
    assert kept and not leftovers


def test_verify_names_a_stray_file_and_goes_on(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    shutil.copy(db / "1020.h5", db / "9999.h5")
    (db / "notes.h5").write_text("not a table")
    r = subprocess.run([*CLI, "verify", "--db", str(db)], capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert "9999.h5: skipped, not a slice file: material '9999': 36 pieces, more than " in (
        r.stdout
    )
    assert any(ln.startswith("notes.h5: skipped, not a slice file") for ln in lines)
    assert sum(ln.endswith("checked, ok") for ln in lines) == 16  # every real slice checked
    with Tablebase(db) as tb:
        assert "9999" not in {s.name for s in tb.slices()}


@pytest.mark.slow  # 8-30 s in the quick tier (issue 51): CI's slow tier runs it
def test_a_table_copied_over_another_name_is_refused(db3_international, tmp_path) -> None:
    db = tmp_path / "international"
    shutil.copytree(db3_international, db)
    victim = db / "2010.h5"
    assert (db / "1020.h5").stat().st_size != 0
    shutil.copy(db / "1020.h5", victim)  # same number of entries: the mirror slice
    s = parse_slice("2010")
    assert s.size(INTERNATIONAL) == parse_slice("1020").size(INTERNATIONAL)
    with pytest.raises(TableFileError, match="2010.h5: attribute material is '1020'"):
        read_slice(victim, INTERNATIONAL, s)
    with Tablebase(db) as tb, pytest.raises(TableFileError, match="2010.h5"):
        tb.probe("W:W33,34:B2")  # a 2010 position
    r = subprocess.run(
        [*CLI, "probe", "--db", str(db), "W:W33,34:B2"], capture_output=True, text=True
    )
    assert r.returncode == 2 and "material is '1020', expected '2010'" in r.stderr
    r = subprocess.run([*CLI, "verify", "--db", str(db)], capture_output=True, text=True)
    assert r.returncode == 1 and "2010: " in r.stdout and "expected '2010'" in r.stdout
    r = subprocess.run([*CLI, "stats", "--db", str(db)], capture_output=True, text=True)
    assert r.returncode == 1 and "2010.h5: attribute material is '1020'" in r.stderr
    # a build finds it, says so, and writes the right table in its place
    r = subprocess.run(
        [*CLI, "generate", "--material", "2010", "--db", str(db)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "2010.h5" in r.stderr and "regenerated" in r.stderr
    assert same_table(victim, db3_international / "2010.h5")


def test_interrupt_kills_a_worker_in_the_middle_of_a_task() -> None:
    """Ctrl-C while a worker is busy (here: a minute's sleep standing for a long pair): the
    worker is killed at once and the pool's final shutdown does not wait for its task."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tablebase.build.schedule import _kill_workers

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    busy = pool.submit(time.sleep, 60)
    wait_for(lambda: busy.running() and bool(pool._processes))
    worker = next(iter(pool._processes.values()))
    time.sleep(0.5)  # the worker has taken the task
    start = time.monotonic()
    _kill_workers(pool)
    pool.shutdown(wait=True, cancel_futures=True)
    assert time.monotonic() - start < 10
    wait_for(lambda: not alive(worker.pid), seconds=5)  # the pool's thread may reap it
