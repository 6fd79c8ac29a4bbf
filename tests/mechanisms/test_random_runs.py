"""The number of runs of Papernot–Steinke tuning (mechanisms/_random_runs.py).

Goodness of fit of 10⁵ draws against the pmf (chi-square, p > 1e-3: a false
alarm in 1 of 1000 seeds) and the mean within 4 standard errors of E[K]
(the exact mean of the law: tnb_mean, or μ/(1 − e^{−μ}) for the
zero-truncated Poisson).
"""

import math

import numpy as np
import pytest
from scipy import stats

from skuserdp.mechanisms._random_runs import (
    draw_num_runs,
    num_runs_pmf,
    random_runs_schedule,
)
from skuserdp.privacy import tnb_gamma, tnb_mean

N = 100_000


def _law_mean(mean, distribution):
    if distribution == "poisson":
        return mean / -math.expm1(-mean)
    shape = {"logarithmic": 0.0, "geometric": 1.0}.get(distribution, distribution)
    return tnb_mean(tnb_gamma(shape, mean), shape)


@pytest.mark.parametrize("distribution", ["geometric", "logarithmic", 0.5,
                                          "poisson"])
@pytest.mark.parametrize("mean", [3.0, 24.0])
def test_num_runs_law(distribution, mean):
    k = draw_num_runs(mean, distribution, np.random.default_rng(20261128), size=N)
    assert k.min() >= 1
    # the values with an expected count >= 5 (a run of them: the pmf is
    # unimodal), the values below and above pooled into the end bins
    support = np.arange(1, int(500 * mean) + 200)
    pmf = num_runs_pmf(support, mean, distribution)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-9)
    observed, expected = _binned(k, support, pmf)
    p = stats.chisquare(observed, expected).pvalue
    assert p > 1e-3
    mu = _law_mean(mean, distribution)
    assert abs(k.mean() - mu) <= 4 * k.std() / math.sqrt(N)
    assert np.sum(support * pmf) == pytest.approx(mu, rel=1e-9)


def _binned(k, support, pmf):
    keep = support[N * pmf >= 5]
    lo, hi = keep[0], keep[-1]
    inner = support[(support > lo) & (support < hi)]
    observed = np.array([np.sum(k <= lo)] + [np.sum(k == v) for v in inner]
                        + [np.sum(k >= hi)])
    expected = N * np.array([pmf[support <= lo].sum()]
                            + list(pmf[(support > lo) & (support < hi)])
                            + [1 - pmf[support < hi].sum()])
    return observed, expected


def test_positive_control_wrong_law_is_rejected():
    # the same test must reject a geometric law of the wrong mean (a check
    # that can fail): draws of mean 3.3 against the pmf of mean 3
    k = draw_num_runs(3.3, "geometric", np.random.default_rng(1), size=N)
    support = np.arange(1, 60)
    pmf = num_runs_pmf(support, 3.0, "geometric")
    observed, expected = _binned(k, support, pmf)
    assert stats.chisquare(observed, expected).pvalue < 1e-3


def test_schedule_candidates_uniform_and_independent_of_k():
    rng = np.random.default_rng(7)
    runs = [random_runs_schedule(6.0, "geometric", 4, rng) for _ in range(5000)]
    flat = np.concatenate(runs)
    assert set(flat.tolist()) == {0, 1, 2, 3}
    counts = np.bincount(flat, minlength=4)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert draw_num_runs(1.0, "logarithmic", rng) == 1
