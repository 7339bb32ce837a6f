"""Progress of a build: a live status line on a terminal, one log line per pair otherwise."""

from __future__ import annotations

import logging
import sys
import time

from tablebase.generator import PairReport
from tablebase.schedule import PairTask, Progress

log = logging.getLogger("tablebase.progress")


def _fmt_time(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class LogProgress(Progress):
    """One log line per finished pair with its counts and time."""

    def start(self, total: int, entries: int) -> None:
        self.total, self.entries, self.count, self.done_entries = total, entries, 0, 0
        self.t0 = time.perf_counter()
        self.solved = 0

    def done(self, task: PairTask, report: PairReport) -> None:
        self.count += 1
        self.done_entries += report.entries
        for name, st in zip(report.slices, report.stats, strict=True):
            log.info(
                "[%d/%d] %s %s: %d positions, %d wins, %d draws, %d losses, longest win %d "
                "plies (%.2f s)",
                self.count,
                self.total,
                name,
                "verified, kept" if report.skipped else "solved",
                st.positions,
                st.wins,
                st.draws,
                st.losses,
                st.longest_win,
                report.seconds,
            )

    def finish(self) -> None:
        dt = time.perf_counter() - self.t0
        log.info("%d pairs, %d index entries in %.1f s", self.total, self.entries, dt)


class TerminalProgress(LogProgress):
    """A live line: pairs done of total, the pairs running, positions/s and ETA."""

    def start(self, total: int, entries: int) -> None:
        super().start(total, entries)
        self.running: dict[tuple[str, ...], float] = {}
        self.solved_entries = 0
        self.solved_seconds = 0.0

    def begin(self, task: PairTask) -> None:
        self.running[task.names] = time.perf_counter()
        self._draw()

    def done(self, task: PairTask, report: PairReport) -> None:
        self.count += 1
        self.done_entries += report.entries
        self.running.pop(task.names, None)
        if not report.skipped:
            self.solved_entries += report.entries
        self._draw()

    def _draw(self) -> None:
        elapsed = time.perf_counter() - self.t0
        rate = self.solved_entries / elapsed if elapsed > 0 else 0.0
        left = self.entries - self.done_entries
        eta = _fmt_time(left / rate) if rate > 0 else "?"
        names = " ".join("+".join(n) for n in list(self.running)[:4])
        line = (
            f"\r[{self.count}/{self.total}] {100 * self.done_entries / max(1, self.entries):5.1f}%"
            f"  {rate:,.0f} pos/s  ETA {eta}  running: {names}"
        )
        sys.stderr.write(line[:160].ljust(160))
        sys.stderr.flush()

    def finish(self) -> None:
        sys.stderr.write("\n")
        super().finish()


def make_progress() -> Progress:
    return TerminalProgress() if sys.stderr.isatty() else LogProgress()
