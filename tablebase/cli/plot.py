"""``tablebase stats --plot``: one picture of a database, per slice.

Left, the win/draw/loss shares of the slice's positions (side to move) as a stacked bar;
right, how its wins are spread over the distance-to-win (plies), as a heat map whose colour is
the share of the slice's positions won at that distance (log scale). Slices are rows, in build
order. Needs matplotlib (the ``plot`` extra); it is imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def plot_stats(rows: Sequence[dict], path: Path | str, title: str = "") -> Path:
    """Draw ``rows`` (one per slice: ``material``, ``positions``, ``wins``, ``draws``,
    ``losses``, ``value_histogram``) into the image file ``path`` (format from its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    if not rows:
        raise ValueError("no slices to plot")
    n = len(rows)
    names = [r["material"] for r in rows]
    pos = np.array([max(1, r["positions"]) for r in rows], dtype=float)
    shares = np.array([[r["wins"], r["draws"], r["losses"]] for r in rows], dtype=float)
    shares /= pos[:, None]
    longest = max((len(r["value_histogram"]) for r in rows), default=2)
    columns = max(1, longest // 2)  # column k: wins in 2k + 1 plies (value 2k + 2)
    wins = np.zeros((n, columns))
    for i, r in enumerate(rows):
        h = np.asarray(r["value_histogram"], dtype=float)
        for v in range(2, h.shape[0], 2):  # even values: wins, dtw = v - 1 (odd)
            wins[i, v // 2 - 1] = h[v] / pos[i]
    wins[wins == 0] = np.nan

    height = 1.2 + 0.16 * n
    fig, (ax_wdl, ax_dtw) = plt.subplots(
        1,
        2,
        figsize=(12, height),
        sharey=True,
        gridspec_kw={"width_ratios": [1, 3], "wspace": 0.05},
    )
    y = np.arange(n)
    left = np.zeros(n)
    for k, (label, colour) in enumerate(
        (("win", "#2a9d4b"), ("draw", "#b8b8b8"), ("loss", "#d1495b"))
    ):
        ax_wdl.barh(y, shares[:, k], left=left, color=colour, label=label, height=0.85)
        left += shares[:, k]
    ax_wdl.set_xlim(0, 1)
    ax_wdl.set_yticks(y, names, fontsize=7, family="monospace")
    ax_wdl.invert_yaxis()
    ax_wdl.set_xlabel("share of positions (side to move)")
    ax_wdl.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, fontsize=8, frameon=False)

    finite = wins[np.isfinite(wins)]
    norm = LogNorm(vmin=max(finite.min(), 1e-9), vmax=finite.max()) if finite.size else None
    im = ax_dtw.imshow(
        wins,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        norm=norm,
        extent=(0, 2 * columns, n - 0.5, -0.5),  # a column spans its odd distance +- 1
    )
    ax_dtw.set_xlabel("distance to win (plies)")
    ax_dtw.set_xlim(0, 2 * columns)
    label = "share of the slice's positions won at this distance"
    fig.colorbar(im, ax=ax_dtw, pad=0.01, label=label)
    if title:
        fig.suptitle(title, fontsize=10)
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
