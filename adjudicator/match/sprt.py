"""Game-pair (pentanomial) statistics, Elo with its interval, and the SPRT that stops a match.

**Pairs.** Each opening is played twice, the engines swapping colours; a pair's score for the
first engine is the mean of its two games (0, 1/4, 1/2, 3/4 or 1), so the pair counts fall in
five bins ``[LL, LD, DD+WL, WD, WW]`` (the pentanomial). Pairs are correlated within (the same
opening), independent between, so the spread of pair scores measures the match's error
better than that of single games.

**Elo.** With ``m`` the mean pair score, ``v`` the variance of the pair scores (divided by
their count ``N``) and ``se = sqrt(v / N)``: Elo ``-400 log10(1/m - 1)``, its 95 % interval
the same map of ``m -+ 1.96 se``.

**SPRT** (the generalised SPRT of Michel Van den Bergh, "Comments on Normalized Elo", as
fastchess and OpenBench use it, logistic Elo): the hypotheses are the expected pair scores
``s0, s1 = 1 / (1 + 10^(-elo/400))`` of ``elo0`` and ``elo1``. Given the empirical
frequencies ``p^_i`` of the scores ``a_i``, the most likely distribution with mean ``s`` is
``p_i = p^_i / (1 + theta (a_i - s))`` where ``theta`` solves
``sum p^_i (a_i - s) / (1 + theta (a_i - s)) = 0`` (a function decreasing in ``theta`` on
``(-1/(a_max - s), -1/(a_min - s))``: solved by bisection). The log-likelihood ratio is
``N sum p^_i ln(p1_i / p0_i)``. A bin with no pair counts ``1e-3`` (so that one-sided data
give a finite ratio). The test stops at ``LLR >= ln((1 - beta) / alpha)`` (H1: the first
engine is ``elo1`` better) or ``LLR <= ln(beta / (1 - alpha))`` (H0: ``elo0``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
Z95 = 1.959964
EMPTY_BIN = 1e-3


def pair_bin(first: int, second: int) -> int:
    """The bin of a pair from the first engine's two game scores (2 win, 1 draw, 0 loss)."""
    assert 0 <= first <= 2 and 0 <= second <= 2
    return first + second


def pentanomial(pairs: list[tuple[int, int]]) -> list[int]:
    """Counts ``[LL, LD, DD+WL, WD, WW]`` of pairs given as the first engine's game scores."""
    counts = [0] * 5
    for a, b in pairs:
        counts[pair_bin(a, b)] += 1
    return counts


def logistic_score(elo: float) -> float:
    return 1 / (1 + 10 ** (-elo / 400))


def elo_of(score: float) -> float:
    if score >= 1:
        return math.inf
    if score <= 0:
        return -math.inf
    return -400 * math.log10(1 / score - 1)


def mean_variance(counts: list[float]) -> tuple[float, float, float]:
    """(pairs, mean pair score, variance of a pair score)."""
    n = float(sum(counts))
    if n <= 0:
        return 0.0, 0.5, 0.0
    mean = sum(c * a for c, a in zip(counts, SCORES, strict=True)) / n
    var = sum(c * (a - mean) ** 2 for c, a in zip(counts, SCORES, strict=True)) / n
    return n, mean, var


def pair_elo(counts: list[int]) -> tuple[float, float, float] | None:
    """(Elo, low, high) of the first engine from the pair counts, or None with no pair."""
    n, mean, var = mean_variance([float(c) for c in counts])
    if n == 0:
        return None
    se = math.sqrt(var / n)
    return elo_of(mean), elo_of(mean - Z95 * se), elo_of(mean + Z95 * se)


def most_likely(probs: list[float], scores: tuple[float, ...], s: float) -> list[float]:
    """The distribution on ``scores`` nearest ``probs`` (maximum likelihood) with mean ``s``;
    ``scores`` must straddle ``s`` and ``probs`` be positive."""
    low, high = -1 / (scores[-1] - s), -1 / (scores[0] - s)

    def slope(theta: float) -> float:
        return sum(p * (a - s) / (1 + theta * (a - s)) for p, a in zip(probs, scores, strict=True))

    for _ in range(200):  # bisection: slope decreases in theta
        mid = (low + high) / 2
        if slope(mid) > 0:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    theta = (low + high) / 2
    return [p / (1 + theta * (a - s)) for p, a in zip(probs, scores, strict=True)]


def llr(counts: list[float], s0: float, s1: float, scores: tuple[float, ...] = SCORES) -> float:
    """The log-likelihood ratio of mean ``s1`` against ``s0`` for counts on ``scores``
    (counts used as given: see :meth:`Sprt.llr` for the empty-bin rule)."""
    total = float(sum(counts))
    probs = [c / total for c in counts]
    p0 = most_likely(probs, scores, s0)
    p1 = most_likely(probs, scores, s1)
    return total * sum(p * math.log(b / a) for p, a, b in zip(probs, p0, p1, strict=True) if p > 0)


@dataclass(frozen=True)
class Sprt:
    """``--sprt elo0=... elo1=... alpha=... beta=...``."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError("--sprt: elo0 must be below elo1")
        if not (0 < self.alpha < 1 and 0 < self.beta < 1 and self.alpha + self.beta < 1):
            raise ValueError("--sprt: alpha and beta must be in (0, 1), their sum below 1")

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    def llr(self, counts: list[int]) -> float:
        """The ratio of the pair counts (an empty bin counts ``EMPTY_BIN``)."""
        if not sum(counts):
            return 0.0
        regular = [float(c) if c else EMPTY_BIN for c in counts]
        return llr(regular, logistic_score(self.elo0), logistic_score(self.elo1))

    def decision(self, value: float) -> str | None:
        """``"H1"`` (accepted: elo1), ``"H0"`` (elo0) or None (play on)."""
        if value >= self.upper:
            return "H1"
        if value <= self.lower:
            return "H0"
        return None

    def line(self, counts: list[int]) -> str:
        """The report after a pair: LLR, bounds, hypotheses, counts and the decision."""
        value = self.llr(counts)
        verdict = {"H1": "H1 accepted", "H0": "H0 accepted", None: "continue"}
        return (
            f"SPRT [{self.elo0:g}, {self.elo1:g}]: LLR {value:.3f} "
            f"({self.lower:.3f}, {self.upper:.3f}) after {sum(counts)} pairs "
            f"{counts}: {verdict[self.decision(value)]}"
        )


def parse_sprt(text: str) -> Sprt:
    """``elo0=E0 elo1=E1 [alpha=A] [beta=B]``; ``ValueError`` naming what is wrong."""
    fields: dict[str, float] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep or key not in ("elo0", "elo1", "alpha", "beta"):
            raise ValueError(f"--sprt: {word!r} is not one of elo0=, elo1=, alpha=, beta=")
        try:
            fields[key] = float(value)
        except ValueError:
            raise ValueError(f"--sprt: {key} must be a number, not {value!r}") from None
    if "elo0" not in fields or "elo1" not in fields:
        raise ValueError("--sprt: elo0= and elo1= are needed")
    return Sprt(fields["elo0"], fields["elo1"], fields.get("alpha", 0.05), fields.get("beta", 0.05))
