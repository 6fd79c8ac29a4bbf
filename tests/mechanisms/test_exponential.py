"""Tests of the exponential mechanism (Gumbel-max)."""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from skuserdp.mechanisms import exponential_mechanism, gumbel_max
from skuserdp.privacy import pure_to_zcdp


def _probabilities(scores, epsilon, sensitivity, monotonic=False):
    logits = epsilon * np.asarray(scores, float) / (
        sensitivity if monotonic else 2 * sensitivity)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def test_sampling_frequencies_match_softmax():
    scores = np.array([0.0, 1.0, 2.0, 2.0, -3.0])
    rng = np.random.default_rng(0)
    n = 200_000
    draws = exponential_mechanism(np.broadcast_to(scores, (n, 5)), 1.3, 1.0, rng)
    counts = np.bincount(draws, minlength=5)
    expected = _probabilities(scores, 1.3, 1.0) * n
    assert chisquare(counts, expected).pvalue > 1e-4


def test_privacy_map_exact_on_neighbouring_scores():
    # Scores of neighbours differ by at most Δ per candidate: the worst log
    # ratio of output probabilities is then at most ε (exact computation).
    rng = np.random.default_rng(1)
    eps, sens = 0.7, 2.0
    worst = 0.0
    for _ in range(2000):
        s = rng.normal(size=6) * 5
        s_prime = s + rng.uniform(-sens, sens, size=6)
        i = rng.integers(6)
        s_prime[i] = s[i] + sens  # push one score to the extreme
        p, q = _probabilities(s, eps, sens), _probabilities(s_prime, eps, sens)
        worst = max(worst, np.max(np.abs(np.log(p) - np.log(q))))
    assert worst <= eps + 1e-12
    # ε is attained in the limit: an unlikely candidate moves up by Δ while
    # the dominant one moves down by Δ
    s = np.array([-200.0, 0.0])
    p = _probabilities(s, eps, sens)
    q = _probabilities(s + np.array([sens, -sens]), eps, sens)
    assert np.max(np.abs(np.log(p) - np.log(q))) == pytest.approx(eps, rel=1e-9)
    assert pure_to_zcdp(eps, bounded_range=True).rho == pytest.approx(eps ** 2 / 8)


def test_monotonic_and_log_space_stability():
    rng = np.random.default_rng(2)
    # huge scores do not overflow: the best candidate wins with certainty
    assert exponential_mechanism([1e300 / 1e10, 0.0], 1e3, 1.0, rng) == 0
    assert gumbel_max([-np.inf, 0.0, -np.inf], rng) == 1
    p = _probabilities([0.0, 1.0], 1.0, 1.0, monotonic=True)
    assert p[1] / p[0] == pytest.approx(math.e)


def test_bad_inputs():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        exponential_mechanism([0.0, 1.0], 0.0, 1.0, rng)
    with pytest.raises(ValueError):
        exponential_mechanism([0.0, 1.0], 1.0, 0.0, rng)
    with pytest.raises(ValueError):
        gumbel_max([], rng)
    with pytest.raises(ValueError):
        gumbel_max([np.nan, 0.0], rng)
    with pytest.raises(ValueError):
        gumbel_max([-np.inf, -np.inf], rng)


def test_noise_drawn_up_front_gives_the_same_releases():
    # private_bounds draws the Gumbel noise of all its releases first (sizes
    # fixed by the grids): the same indices as sampling one after another
    from skuserdp.mechanisms._exponential import _exponential_mechanism_from_noise

    rng = np.random.default_rng(0)
    scores = [rng.integers(0, 50, size=k).astype(float) for k in (1, 3, 4098, 17)]
    one_by_one = np.random.default_rng(5)
    expected = [exponential_mechanism(-s, 0.7, 1.0, one_by_one) for s in scores]
    up_front = np.random.default_rng(5)
    noise = [up_front.gumbel(size=s.shape) for s in scores]
    got = [_exponential_mechanism_from_noise(-s, 0.7, 1.0, g)
           for s, g in zip(scores, noise)]
    assert got == expected
    with pytest.raises(ValueError, match="shape"):
        _exponential_mechanism_from_noise(-scores[1], 0.7, 1.0, noise[0])
