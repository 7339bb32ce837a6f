"""The statistics of a match: pentanomial counts, Elo from pairs, the SPRT's LLR and bounds,
each against numbers worked out by hand (closed forms), not against the code."""

from __future__ import annotations

import math

import pytest

from adjudicator.match.sprt import (
    Sprt,
    llr,
    logistic_score,
    most_likely,
    pair_elo,
    parse_sprt,
    pentanomial,
)


def test_pairs_fall_in_five_bins_by_the_first_engines_two_scores():
    # (2, 2) two wins; (2, 0) and (1, 1) both score 1/2 a game; (0, 1) a loss and a draw
    assert pentanomial([(2, 2), (2, 0), (1, 1), (0, 1), (0, 0), (2, 1)]) == [1, 1, 2, 1, 1]


def test_the_bounds_are_wald_s():
    s = Sprt(0, 5, 0.05, 0.05)
    assert s.lower == pytest.approx(math.log(0.05 / 0.95))  # -2.944
    assert s.upper == pytest.approx(math.log(0.95 / 0.05))  # +2.944
    assert s.upper == pytest.approx(2.944439, abs=1e-6)
    t = Sprt(0, 5, 0.1, 0.2)
    assert (t.lower, t.upper) == (pytest.approx(math.log(0.2 / 0.9)), pytest.approx(math.log(8)))


def test_logistic_elo_maps_to_the_expected_score():
    assert logistic_score(0) == 0.5
    # 400 log10(3) Elo is a 3:1 odds, a score of 3/4
    assert logistic_score(400 * math.log10(3)) == pytest.approx(0.75)


def test_on_two_outcomes_the_llr_is_the_binomial_sprt():
    # With only the scores 0 and 1 possible, the one distribution of mean s is (1 - s, s),
    # so the ratio is the classic binomial one: N [m ln(s1/s0) + (1-m) ln((1-s1)/(1-s0))]
    counts, s0, s1 = [3.0, 7.0], 0.5, 0.6
    expected = 10 * (0.7 * math.log(0.6 / 0.5) + 0.3 * math.log(0.4 / 0.5))
    assert expected == pytest.approx(0.60683, abs=1e-5)
    assert llr(counts, s0, s1, scores=(0.0, 1.0)) == pytest.approx(expected, abs=1e-9)


def test_the_most_likely_distribution_keeps_the_mean_asked():
    # Three scores 0, 1/2, 1 with frequencies 1/4, 1/2, 1/4 (mean 1/2): asked for mean 1/2,
    # the nearest distribution is the data itself (theta = 0)
    p = most_likely([0.25, 0.5, 0.25], (0.0, 0.5, 1.0), 0.5)
    assert p == pytest.approx([0.25, 0.5, 0.25])
    # asked for mean 0.6: p_i = q_i / (1 + x (a_i - 0.6)) with x solving
    # .25(-.6)/(1-.6x) + .5(-.1)/(1-.1x) + .25(.4)/(1+.4x) = 0; clearing the denominators,
    # .024 x^2 - .105 x - .1 = 0, whose root in (-2.5, 5/3) is (.105 - sqrt(.020625)) / .048
    x = (0.105 - math.sqrt(0.020625)) / 0.048
    assert x == pytest.approx(-0.80446, abs=1e-5)
    expected = [0.25 / (1 - 0.6 * x), 0.5 / (1 - 0.1 * x), 0.25 / (1 + 0.4 * x)]
    assert expected == pytest.approx([0.168615, 0.462772, 0.368614], abs=1e-5)
    q = most_likely([0.25, 0.5, 0.25], (0.0, 0.5, 1.0), 0.6)
    assert q == pytest.approx(expected, abs=1e-9)


def test_the_llr_is_zero_when_the_data_sit_halfway_between_the_hypotheses():
    # The ratio of two distributions equally near the data: with symmetric hypotheses
    # s0 = 1/2 - d, s1 = 1/2 + d and symmetric data of mean 1/2, the LLR is 0 by symmetry
    assert llr([1.0, 2.0, 4.0, 2.0, 1.0], 0.45, 0.55) == pytest.approx(0.0, abs=1e-9)


def test_the_llr_agrees_with_the_normal_approximation_for_close_hypotheses():
    # For s0, s1 close together, LLR ~ N (s1 - s0)(2 m - s0 - s1) / (2 v): counts
    # [10, 20, 40, 20, 10] + 10 more WW: N = 110, m = (20*.25 + 40*.5 + 20*.75 + 20*1) / 110
    counts = [10.0, 20.0, 40.0, 20.0, 20.0]
    n = sum(counts)
    m = (20 * 0.25 + 40 * 0.5 + 20 * 0.75 + 20 * 1.0) / n
    v = (10 * m**2 + 20 * (0.25 - m) ** 2 + 40 * (0.5 - m) ** 2 + 20 * (0.75 - m) ** 2
         + 20 * (1 - m) ** 2) / n  # fmt: skip
    s0, s1 = 0.5, 0.505
    approx = n * (s1 - s0) * (2 * m - s0 - s1) / (2 * v)
    assert llr(counts, s0, s1) == pytest.approx(approx, rel=0.02)


def test_empty_bins_count_a_thousandth_so_one_sided_data_give_a_finite_ratio():
    s = Sprt(0, 10)
    # five pairs of two wins: bins [0, 0, 0, 0, 5] read as [1e-3, 1e-3, 1e-3, 1e-3, 5]
    value = s.llr([0, 0, 0, 0, 5])
    assert math.isfinite(value) and value > 0
    assert value == pytest.approx(
        llr([1e-3, 1e-3, 1e-3, 1e-3, 5.0], logistic_score(0), logistic_score(10))
    )
    assert s.llr([0, 0, 0, 0, 0]) == 0.0


def test_a_decision_needs_a_bound_crossed():
    s = Sprt(0, 10)
    assert s.decision(2.95) == "H1"
    assert s.decision(-2.95) == "H0"
    assert s.decision(2.9) is None


def test_elo_from_pairs_with_its_interval():
    # four pairs: two of 3/4, two of 1/4: mean 1/2 (Elo 0), variance 1/16, se = 1/4 / 2
    elo, low, high = pair_elo([0, 2, 0, 2, 0])
    se = 0.125
    assert elo == pytest.approx(0.0)
    assert low == pytest.approx(-400 * math.log10(1 / (0.5 - 1.959964 * se) - 1))
    assert high == pytest.approx(-400 * math.log10(1 / (0.5 + 1.959964 * se) - 1))
    # all pairs 3/4: Elo 400 log10(3) = 190.85, no spread
    assert pair_elo([0, 0, 0, 3, 0])[0] == pytest.approx(190.848, abs=1e-3)
    assert pair_elo([0, 0, 0, 0, 0]) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("elo0=0", "elo0= and elo1= are needed"),
        ("elo0=5 elo1=0", "elo0 must be below elo1"),
        ("elo0=0 elo1=5 alpha=1.5", "alpha and beta"),
        ("elo0=0 elo1=x", "elo1 must be a number"),
        ("elo=0", "is not one of"),
    ],
)
def test_bad_sprt_options_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_sprt(text)


def test_sprt_options_read():
    assert parse_sprt("elo0=0 elo1=5 alpha=0.1 beta=0.2") == Sprt(0, 5, 0.1, 0.2)
