"""Fuzz: flip every byte of one slice file in turn and see what each reader makes of it.

For each offset (every byte, or every ``--step``-th, or those of ``--offsets``) the file is
written back into a copy of the database with that byte XORed with ``--xor`` (0xFF), and a
reader runs on it in a worker process: ``raw`` (the HDF5
library alone reading every attribute and part, none of the package's checks), ``read``
(the file's two parts, read and checked),
``probe`` (every entry of the slice probed through both parts, on a fresh
:class:`tablebase.Tablebase`), ``verify`` (:func:`tablebase.build.verify.verify_database`),
``rule`` (``adjudicator.ruling.rule_game`` of a game ending in a position of the slice) or
``service`` (``GET /probe`` and ``GET /health`` of the adjudication service). Each outcome is
one of

- ``right``: the same answer as on the undamaged file;
- ``table-error``: a :class:`TableFileError` naming the file (for ``rule`` the game's
  ``table-error`` ruling naming it, for ``service`` a 503 naming it);
- ``wrong``: another answer (a forged result);
- ``error:<type>``: another exception;
- ``hang``: no answer within ``--timeout`` seconds (the worker is asked for its threads'
  stacks, killed and restarted);
- ``crash``: the worker died (a segfault in the HDF5 library, or killed by the system).

Only the first two are acceptable. Prints a summary, or with ``--json`` one JSON object
(``flips``, ``outcomes`` counted, ``bad``: the offsets of the other outcomes, ``details``:
for each hang or crash how the worker ended, its exit status or signal, its peak resident
size and the last lines of its stderr, with its stacks; ``worker_peak_rss_mb``: the largest
peak resident size of the workers, a worker that keeps what it no longer needs shows
here)::

    python scripts/fuzz_slice_file.py DB 0101 --reader probe [--step 7] [--timeout 10]
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

READERS = ("raw", "read", "probe", "verify", "rule", "service")
GOOD = ("right", "table-error")


# --- the worker: answers one flipped file per line of stdin ------------------------------
def _worker(reader: str, db: Path, name: str) -> None:
    """Read offsets from stdin; for each, write the flipped file and print its outcome."""
    from tablebase.material.slices import parse_slice
    from tablebase.storage.slicefile import TableFileError, slice_path

    # the answers go to a private copy of stdout; whatever else writes to stdout (a library's
    # print, the HDF5 library's C code) goes to stderr and cannot be read as an answer
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable(all_threads=True)  # a crash leaves its stacks on stderr
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # and a hang, asked by the driver
    s = parse_slice(name)
    path = slice_path(db, s)
    original = path.read_bytes()
    check = _make_reader(reader, db, s)
    expected = check()  # on the undamaged file
    print("ready", file=answers, flush=True)
    for line in sys.stdin:
        offset, xor = (int(x) for x in line.split())
        data = bytearray(original)
        data[offset] ^= xor
        tmp = path.with_name(path.name + ".fuzz")
        tmp.write_bytes(bytes(data))
        os.replace(tmp, path)  # a new file (inode): no reader may trust an earlier check
        try:
            got = check()
            outcome = "right" if got == expected else "wrong"
            if isinstance(got, tuple) and got and got[0] == "table-error":
                outcome = "table-error" if str(path) in got[1] else "wrong"
        except TableFileError as e:
            outcome = "table-error" if Path(e.path) == path else "wrong"
        except Exception as e:  # noqa: BLE001 - every other outcome is counted, by type
            outcome = f"error:{type(e).__name__}"
        print(json.dumps({"offset": offset, "outcome": outcome}), file=answers, flush=True)


def _make_reader(reader: str, db: Path, s):
    """A function giving the reader's answer on the slice file as it now is."""
    import numpy as np

    from tablebase.probe.database import Tablebase
    from tablebase.storage.reader import read_attrs, read_slice, read_wdl
    from tablebase.storage.slicefile import slice_path

    path = slice_path(db, s)
    variant_name = read_attrs(path)["variant"]
    from tablebase.rules.variants import get_variant

    variant = get_variant(variant_name)
    if reader == "raw":  # the HDF5 library alone, none of the package's checks

        def raw():
            import h5py

            with h5py.File(path, "r") as f:
                attrs = {k: np.asarray(v).tobytes() for k, v in f.attrs.items()}
                parts = {k: (f[k][()].tobytes(), dict(f[k].attrs)) for k in f}
            return repr((attrs, parts))

        return raw
    if reader == "read":

        def read():
            return read_slice(path, variant, s).tobytes(), read_wdl(path, variant, s).tobytes()

        return read
    if reader == "probe":
        from tablebase.build.task import entry_position
        from tablebase.storage.wdl import non_positions

        size = s.size(variant)
        dont = np.unpackbits(non_positions(variant, s), bitorder="little")[:size]
        boards = [[], [], [], []]
        for i in np.flatnonzero(dont == 0)[:4000].tolist():
            p = entry_position(variant, s, i)
            for k, b in enumerate((p.white_men, p.white_kings, p.black_men, p.black_kings)):
                boards[k].append(b)
        arrays = [np.array(b, dtype=np.uint64) for b in boards]

        def probe():
            with Tablebase(db) as tb:
                values = tb.probe_batch(*arrays).tobytes()
            with Tablebase(db, wdl_only=True) as tb:
                wdl = tb.probe_batch_wdl(*arrays).tobytes()
            return values, wdl

        return probe
    if reader == "verify":
        from tablebase.build.verify import verify_database

        def verify():
            report = verify_database(db, variant, threads=1, only=frozenset(x.name for x in s.pair))
            for f, reason in report.damaged:
                if f == path:
                    return ("table-error", f"{f}: {reason}")
            return report.summary()

        return verify
    if reader == "rule":
        from adjudicator.ruling import rule_game
        from tablebase.build.task import entry_position

        a = read_attrs(path)
        index = int(a["longest_win_index"]) if int(a["longest_win_index"]) >= 0 else 0
        fen = entry_position(variant, s, index).fen()

        def rule():
            with Tablebase(db) as tb:
                r = rule_game([], variant=variant, tablebase=tb, fen=fen)
            if r.reason == "table-error":
                return ("table-error", r.detail)
            return r.result, r.reason, r.detail

        return rule
    if reader == "service":
        from fastapi.testclient import TestClient

        from adjudicator.service.app import create_app
        from tablebase.build.task import entry_position

        a = read_attrs(path)
        index = int(a["longest_win_index"]) if int(a["longest_win_index"]) >= 0 else 0
        fen = entry_position(variant, s, index).fen()

        def service():
            with TestClient(create_app({variant.name: db})) as client:
                r = client.get("/probe", params={"variant": variant.name, "fen": fen})
                health = client.get("/health").json()
            if r.status_code == 503:
                message = r.json()["error"]
                named = s.name in json.dumps(health)
                return ("table-error", str(path) if named and s.name in message else message)
            return r.status_code, r.json()

        return service
    raise ValueError(f"unknown reader {reader!r}")


# --- the driver -------------------------------------------------------------------------
class _Worker:
    """The worker process, its stderr kept in a file (the last lines of it go into the report
    of a flip that hung or crashed)."""

    def __init__(self, reader: str, db: Path, name: str, log: Path) -> None:
        self.args = [sys.executable, __file__, "--worker", reader, str(db), name]
        self.proc: subprocess.Popen | None = None
        self.path = db / f"{name}.h5"
        self.original = self.path.read_bytes()
        self.log = log
        self.peak_rss = 0  # bytes: the largest peak resident size of a worker so far

    def start(self) -> None:
        self.path.write_bytes(self.original)  # a killed worker left a flipped file
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                self.args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                bufsize=1,
            )
        line = self._line(600.0)
        if line != "ready":
            raise RuntimeError(f"the worker did not start (said {line!r}): {self._tail()}")

    def _line(self, timeout: float) -> str | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline().strip()

    def _note_rss(self) -> None:
        """The worker's peak resident size (``VmHWM``), kept if the largest yet."""
        assert self.proc is not None
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return
        for row in status.splitlines():
            if row.startswith("VmHWM:"):
                self.peak_rss = max(self.peak_rss, int(row.split()[1]) * 1024)

    def _tail(self, since: int = 0, lines: int = 40) -> str:
        """The last ``lines`` lines the worker wrote to stderr from byte ``since`` on."""
        try:
            with open(self.log, "rb") as fh:
                fh.seek(since)
                text = fh.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def ask(self, offset: int, xor: int, timeout: float) -> tuple[str, dict | None]:
        """The outcome of flipping byte ``offset``, and for a hang or a crash how the worker
        ended (its exit status or signal, its peak resident size, its last words)."""
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        since = self.log.stat().st_size
        try:
            self.proc.stdin.write(f"{offset} {xor}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return "crash", self._ended(False, since)
        line = self._line(timeout)
        if line is None:
            return "hang", self._ended(True, since)
        if not line:  # end of output: the worker died
            return "crash", self._ended(False, since)
        self._note_rss()
        return json.loads(line)["outcome"], None

    def _ended(self, hung: bool, since: int) -> dict:
        """Stop the worker (a hung one first asked for every thread's stack) and describe
        how it ended, with what it wrote to stderr from byte ``since`` (the flip's start)."""
        assert self.proc is not None
        self._note_rss()
        rss = self.peak_rss
        if hung:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack
                time.sleep(2.0)
            code = self.proc.poll()
        else:
            try:
                code = self.proc.wait(30.0)  # it closed its output: it is ending
            except subprocess.TimeoutExpired:
                code = None
        self.stop()
        if code is None:
            how = "killed by the fuzz" + (" after the time limit" if hung else "")
        elif code < 0:
            how = f"signal {-code} ({signal.Signals(-code).name})"
        else:
            how = f"exit status {code}"
        return {"worker": how, "peak_rss_mb": rss >> 20, "stderr": self._tail(since)}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def fuzz(
    db: Path,
    name: str,
    reader: str,
    offsets: list[int] | None = None,
    step: int = 1,
    xor: int = 0xFF,
    timeout: float = 10.0,
) -> dict:
    """Flip the bytes of slice ``name`` of ``db`` (a copy is made) one at a time; returns
    ``{"flips", "outcomes", "bad", "details", "worker_peak_rss_mb", "seconds"}`` (see the
    module docstring)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        copy = Path(tmp) / db.name
        shutil.copytree(db, copy)
        size = (copy / f"{name}.h5").stat().st_size
        todo = offsets if offsets is not None else list(range(0, size, step))
        worker = _Worker(reader, copy, name, Path(tmp) / "worker.stderr")
        outcomes: Counter[str] = Counter()
        bad: dict[str, list[int]] = {}
        details: dict[int, dict] = {}
        try:
            for offset in todo:
                outcome, ended = worker.ask(offset, xor, timeout)
                outcomes[outcome] += 1
                if outcome not in GOOD:
                    bad.setdefault(outcome, []).append(offset)
                if ended is not None:
                    details[offset] = ended
        finally:
            worker.stop()
    return {
        "reader": reader,
        "slice": name,
        "file_bytes": size,
        "flips": len(todo),
        "outcomes": dict(outcomes),
        "bad": bad,
        "details": details,
        "worker_peak_rss_mb": worker.peak_rss >> 20,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], Path(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("slice")
    ap.add_argument("--reader", choices=READERS, default="probe")
    ap.add_argument("--step", type=int, default=1, help="flip every N-th byte")
    ap.add_argument("--offsets", default=None, help="comma-separated offsets to flip")
    ap.add_argument("--xor", type=lambda t: int(t, 0), default=0xFF)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per flip")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    offsets = [int(x) for x in args.offsets.split(",")] if args.offsets else None
    r = fuzz(args.db, args.slice, args.reader, offsets, args.step, args.xor, args.timeout)
    if args.json:
        print(json.dumps(r))
        return
    print(
        f"{r['reader']} on {r['slice']} ({r['file_bytes']} bytes): {r['flips']} flips in "
        f"{r['seconds']} s: " + ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
    )
    for outcome, where in sorted(r["bad"].items()):
        print(f"  {outcome}: offsets {where[:20]}{' ...' if len(where) > 20 else ''}")
    for offset, ended in sorted(r["details"].items()):
        print(
            f"  offset {offset}: the worker ended: {ended['worker']}, peak RSS "
            f"{ended['peak_rss_mb']} MB; its last words:"
        )
        print("    " + ended["stderr"].replace("\n", "\n    "))
    print(f"  the workers' peak resident size: {r['worker_peak_rss_mb']} MB")
    sys.exit(1 if r["bad"] else 0)


if __name__ == "__main__":
    main()
