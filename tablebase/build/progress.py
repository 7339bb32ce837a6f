"""Progress of a build: a ``tqdm`` bar on a terminal, one log line per pair otherwise.

Both show the slices done of the total, the solving rate in index entries per second and
the estimated time left; a pair solved out of core shows its bands done of its bands (on the
bar beside the pair's name; in the log, a line per band from the worker). Pairs found
complete on disk ("verified, kept") count as done but not towards the rate, and their
entries leave the amount still to solve.
"""

from __future__ import annotations

import logging
import sys
import time

from tqdm import tqdm

from tablebase.build.schedule import PairTask, Progress
from tablebase.build.task import PHASES, PairReport

log = logging.getLogger("tablebase.build.progress")
ETA_FROM = 0.01  # the share of the entries solved before an ETA is shown


def _fmt_time(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class _Tally:
    """Slices and entries done, and the solving rate since the start."""

    def start(self, total_entries: int) -> None:
        self.t0 = time.perf_counter()
        self.slices_total = 0
        self.slices_done = 0
        self.to_solve = total_entries
        self.solved = 0

    def add(self, report: PairReport) -> None:
        self.slices_done += len(report.slices)
        if report.skipped:
            self.to_solve -= report.entries
        else:
            self.solved += report.entries

    def rate(self) -> float:
        dt = time.perf_counter() - self.t0
        return self.solved / dt if dt > 0 else 0.0

    def eta(self) -> str:
        """Time left at the rate so far; "?" until a hundredth of the entries are solved
        (the first pairs are the smallest, and a worker's first task pays for its start-up:
        their rate said hours for a build of seconds)."""
        rate = self.rate()
        if rate <= 0 or self.solved < ETA_FROM * self.to_solve:
            return "?"
        return _fmt_time((self.to_solve - self.solved) / rate)


class LogProgress(Progress):
    """One log line per finished pair: its slices' counts, slices done, rate and ETA."""

    def __init__(self, slices_total: int | None = None) -> None:
        self.slices_total = slices_total

    def start(self, total: int, entries: int) -> None:
        self.total, self.entries, self.count = total, entries, 0
        self.tally = _Tally()
        self.tally.start(entries)

    def done(self, task: PairTask, report: PairReport) -> None:
        self.count += 1
        self.tally.add(report)
        counts = "; ".join(
            f"{name}: {st.positions} positions, {st.wins} wins, {st.draws} draws, "
            f"{st.losses} losses, longest win {st.longest_win} plies"
            for name, st in zip(report.slices, report.stats, strict=True)
        )
        phases = ""
        if not report.skipped:
            phases = (
                " ["
                + ", ".join(
                    f"{name} {sec:.2f} s"
                    for name, sec in zip(PHASES, report.phase_seconds, strict=True)
                )
                + "]"
            )
        log.info(
            "[%d/%d slices] %s %s in %.2f s%s (%s); %s entries/s, ETA %s",
            self.tally.slices_done,
            self._slices_total(),
            "+".join(report.slices),
            "verified, kept" if report.skipped else "solved",
            report.seconds,
            phases,
            counts,
            f"{self.tally.rate():,.0f}",
            self.tally.eta(),
        )

    def _slices_total(self) -> int:
        return self.slices_total or self.tally.slices_done

    def finish(self) -> None:
        dt = time.perf_counter() - self.tally.t0
        log.info("%d pairs, %d index entries in %.1f s", self.total, self.entries, dt)


class TerminalProgress(LogProgress):
    """A ``tqdm`` bar over the entries to solve: slices done/total, entries/s, ETA."""

    def start(self, total: int, entries: int) -> None:
        super().start(total, entries)
        self.running: list[str] = []
        self.bands: dict[str, tuple[int, int]] = {}  # pairs out of core: bands done, bands
        self.bar = tqdm(
            total=entries,
            unit=" entries",
            unit_scale=True,
            smoothing=0,  # the average since the start: pairs finish in bursts
            dynamic_ncols=True,
            file=sys.stderr,
            bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
            "[{elapsed}<{remaining}, {rate_fmt}{postfix}]",
        )
        self._describe()

    def begin(self, task: PairTask) -> None:
        self.running.append(task.label)
        self._describe()

    def band(self, label: str, done: int, total: int) -> None:
        self.bands[label] = (done, total)
        self._describe()

    def done(self, task: PairTask, report: PairReport) -> None:
        self.count += 1
        self.tally.add(report)
        if task.label in self.running:
            self.running.remove(task.label)
        self.bands.pop(task.label, None)
        if report.skipped:  # nothing to solve there: out of the amount and the rate
            self.bar.total -= report.entries
            self.bar.refresh()
        else:
            self.bar.update(report.entries)
        self._describe()

    def _describe(self) -> None:
        self.bar.set_description_str(
            f"slices {self.tally.slices_done}/{self._slices_total()}", refresh=False
        )
        running = " ".join(self._running(label) for label in self.running[:4])
        self.bar.set_postfix_str(f"running {running}" if running else "")

    def _running(self, label: str) -> str:
        """``1221+2112`` or, out of core, ``1221+2112 (bands 7/25)``."""
        if label not in self.bands:
            return label
        done, total = self.bands[label]
        return f"{label} (bands {done}/{total})"

    def finish(self) -> None:
        self.bar.close()
        super().finish()

    def abort(self) -> None:
        self.bar.close()  # the error line goes below the bar, not onto it


class TqdmLogHandler(logging.StreamHandler):
    """Log lines printed above the progress bar instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # logging must never raise
            self.handleError(record)


def on_terminal() -> bool:
    return sys.stderr.isatty()


def make_progress(slices_total: int | None = None) -> Progress:
    if on_terminal():
        return TerminalProgress(slices_total)
    return LogProgress(slices_total)
