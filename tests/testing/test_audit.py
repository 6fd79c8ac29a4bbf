"""Tests for the empirical privacy audit harness ``skuserdp.testing``.

All tests use fixed seeds, so they are deterministic; the thresholds below are
derived from the mechanisms' exact output distributions, not tuned.
"""

import dataclasses
import sys
import warnings

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator

from skuserdp.testing import (
    AuditResult,
    audit_estimator,
    epsilon_lower_bound,
    worst_case_mean_neighbours,
)


def _laplace_pair(eps, n_runs, seed, scale_factor=1.0):
    """Laplace mechanism on a sensitivity-1 query with values 0 (D) and 1 (D')."""
    rng = np.random.default_rng(seed)
    scale = scale_factor / eps
    return rng.laplace(0.0, scale, n_runs), rng.laplace(1.0, scale, n_runs)


# --------------------------------------------------------------------------
# Validity on exact mechanisms with known epsilon
# --------------------------------------------------------------------------


def test_laplace_valid_and_informative():
    # Laplace(1/eps) on 0 vs 1 is exactly eps-DP with eps = 1. The best event
    # is {T >= t} for t >= 1 (on D' vs D), where the ratio equals e exactly:
    # at t = 1, P_D'(E) = 0.5 and P_D(E) = 0.5 / e = 0.184. With 10000
    # evaluation runs per dataset the one-sided 97.5% Clopper-Pearson bounds
    # are about 0.5 - 2.24 * 0.005 = 0.489 and 0.184 + 2.24 * 0.0039 = 0.193,
    # so epsilon_lower is expected near log(0.489 / 0.193) = 0.93, with a
    # standard deviation of about 0.025 (thresholds from t = 0.5 to t = 2, and
    # the mirror events {T <= t} on D vs D' for t from -1 to 0.5, all give
    # 0.85-0.95). Requiring > 0.5 leaves a margin of more than 10 sd.
    t, t_prime = _laplace_pair(1.0, 20000, seed=1)
    result = epsilon_lower_bound(t, t_prime, epsilon_claimed=1.0, random_state=2)
    assert 0.5 < result.epsilon_lower <= 1.0
    assert not result.violation
    assert result.n_runs == 20000
    assert result.counts[1] == result.counts[3] == 10000


def test_gaussian_valid_at_its_delta():
    # Classical calibration sigma = sqrt(2 ln(1.25 / delta)) / eps, valid for
    # eps < 1, so the mechanism is (0.9, 1e-5)-DP for sensitivity 1.
    eps, delta = 0.9, 1e-5
    sigma = np.sqrt(2 * np.log(1.25 / delta)) / eps
    rng = np.random.default_rng(3)
    t = rng.normal(0.0, sigma, 20000)
    t_prime = rng.normal(1.0, sigma, 20000)
    result = epsilon_lower_bound(
        t, t_prime, delta=delta, epsilon_claimed=eps, random_state=4
    )
    assert 0.0 <= result.epsilon_lower <= eps
    assert not result.violation
    assert result.delta == delta


def test_randomized_response_discrete_values():
    # Randomized response with eps = 1 outputs only 0 or 1 (massive ties):
    # P_D[T = 1] = e / (1 + e) = 0.731 and P_D'[T = 1] = 0.269, ratio exactly
    # e. With 10000 evaluation runs the bound is expected near
    # log((0.731 - 0.0098) / (0.269 + 0.0099)) = 0.95; > 0.5 is a wide margin.
    p = np.e / (1 + np.e)
    rng = np.random.default_rng(5)
    t = (rng.random(20000) < p).astype(float)
    t_prime = (rng.random(20000) < 1 - p).astype(float)
    result = epsilon_lower_bound(t, t_prime, epsilon_claimed=1.0, random_state=6)
    assert 0.5 < result.epsilon_lower <= 1.0


def test_exact_counts_zero_and_n():
    # Perfectly separated samples: on the evaluation part the chosen event has
    # count n under the numerator and 0 under the denominator, so both
    # Clopper-Pearson bounds have closed forms: (alpha/2)^(1/n) and
    # 1 - (alpha/2)^(1/n).
    n, alpha = 100, 0.05
    result = epsilon_lower_bound(
        np.zeros(n), np.ones(n), alpha=alpha, random_state=0
    )
    n_eval = n // 2
    k_num, n_num, k_den, n_den = result.counts
    assert (k_num, n_num, k_den, n_den) == (n_eval, n_eval, 0, n_eval)
    q = (alpha / 2) ** (1 / n_eval)
    assert result.epsilon_lower == pytest.approx(np.log(q / (1 - q)), rel=1e-12)


def test_identical_samples_give_zero():
    t = np.full(50, 3.0)
    result = epsilon_lower_bound(t, t.copy(), random_state=0)
    assert result.epsilon_lower == 0.0


def test_large_delta_gives_zero():
    # With delta = 0.99, p_lo - delta <= 0 for every event of this mechanism
    # (no event has probability above 0.99 under one dataset and a clear gap).
    t, t_prime = _laplace_pair(1.0, 2000, seed=7)
    result = epsilon_lower_bound(t, t_prime, delta=0.99, random_state=0)
    assert result.epsilon_lower == 0.0


# --------------------------------------------------------------------------
# Power
# --------------------------------------------------------------------------


def test_power_detects_too_little_noise():
    # Noise scale 1 / (4 eps) on a sensitivity-1 query: the true epsilon is 4.
    # For {T >= 1} (D' vs D): P_D'(E) = 0.5 and P_D(E) = 0.5 * e^-4 = 0.0092.
    # With n_runs = 1000 (500 evaluation runs each) the expected counts are
    # 250 and 4.6; even with a count of 9 on D the bounds are about
    # 0.5 - 0.044 = 0.456 and 0.034 (Clopper-Pearson, k = 9, n = 500), giving
    # log(13.4) = 2.6 > 1. So 1000 runs per dataset suffice with a wide margin.
    t, t_prime = _laplace_pair(1.0, 1000, seed=8, scale_factor=0.25)
    result = epsilon_lower_bound(t, t_prime, epsilon_claimed=1.0, random_state=9)
    assert result.violation
    assert result.epsilon_lower > 1.0
    assert "VIOLATION" in str(result)


# --------------------------------------------------------------------------
# Type-I error
# --------------------------------------------------------------------------


def test_type_one_error_rate():
    # 200 independent small audits of a correct eps = 1 Laplace mechanism at
    # alpha = 0.1: each wrongly flags a violation with probability <= 0.1, so
    # the number of violations is stochastically smaller than
    # Binomial(200, 0.1), whose mean + 4 sd is 20 + 4 * sqrt(18) = 36.97.
    n_rep, alpha = 200, 0.1
    bound = n_rep * alpha + 4 * np.sqrt(n_rep * alpha * (1 - alpha))
    children = np.random.SeedSequence(10).spawn(n_rep)
    violations = 0
    for child in children:
        data_seed, split_seed = child.spawn(2)
        t, t_prime = _laplace_pair(1.0, 400, seed=data_seed)
        result = epsilon_lower_bound(
            t, t_prime, alpha=alpha, epsilon_claimed=1.0, random_state=split_seed
        )
        violations += result.violation
    assert violations <= bound


# --------------------------------------------------------------------------
# AuditResult
# --------------------------------------------------------------------------


def test_audit_result_properties():
    result = AuditResult(
        epsilon_lower=0.5,
        epsilon_claimed=None,
        delta=0.0,
        alpha=0.05,
        n_runs=10,
        event="P[T >= 1] on D' vs D",
        counts=(4, 5, 1, 5),
    )
    assert not result.violation
    text = str(result)
    assert "epsilon >= 0.5000" in text and "95% confidence" in text
    assert "no claimed epsilon" in text and "4/5 vs 1/5" in text
    assert dataclasses.replace(result, epsilon_claimed=0.4).violation
    assert not dataclasses.replace(result, epsilon_claimed=0.5).violation
    assert "no violation" in str(dataclasses.replace(result, epsilon_claimed=1.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.epsilon_lower = 2.0


def test_event_description_and_reproducibility():
    t, t_prime = _laplace_pair(1.0, 400, seed=11)
    a = epsilon_lower_bound(t, t_prime, random_state=3)
    b = epsilon_lower_bound(t, t_prime, random_state=3)
    assert a == b
    assert a.event.startswith("P[T ") and a.event.endswith(("D vs D'", "D' vs D"))


# --------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"samples": []},
        {"samples_prime": []},
        {"samples": [1.0]},
        {"samples": [[1.0, 2.0]]},
        {"samples": [1.0, np.nan, 2.0]},
        {"alpha": 0.0},
        {"alpha": 1.0},
        {"alpha": -0.1},
        {"alpha": 1.5},
        {"delta": -0.1},
        {"delta": 1.0},
        {"selection_fraction": 0.0},
        {"selection_fraction": 1.0},
        {"n_thresholds": 0},
        {"epsilon_claimed": -1.0},
    ],
)
def test_epsilon_lower_bound_bad_inputs(kwargs):
    args = {"samples": [0.0, 1.0, 2.0], "samples_prime": [1.0, 2.0, 3.0]}
    args.update(kwargs)
    samples = args.pop("samples")
    samples_prime = args.pop("samples_prime")
    with pytest.raises(ValueError):
        epsilon_lower_bound(samples, samples_prime, **args)


# --------------------------------------------------------------------------
# Estimator-level audit
# --------------------------------------------------------------------------


class ToyLaplaceMean(BaseEstimator):
    """1-d user-level mean: clip user means to [-radius, radius], add Laplace."""

    def __init__(self, epsilon=1.0, radius=1.0, random_state=None, noise_factor=1.0):
        self.epsilon = epsilon
        self.radius = radius
        self.random_state = random_state
        self.noise_factor = noise_factor

    def fit(self, X, y=None, *, groups=None):
        X = np.asarray(X, dtype=float).reshape(len(X), -1)[:, 0]
        if groups is None:
            warnings.warn("groups is None: each row is treated as a user.")
            groups = np.arange(X.shape[0])
        _, inverse = np.unique(groups, return_inverse=True)
        user_means = np.bincount(inverse, weights=X) / np.bincount(inverse)
        user_means = np.clip(user_means, -self.radius, self.radius)
        n = user_means.shape[0]
        scale = 2 * self.radius / (n * self.epsilon) * self.noise_factor
        rng = np.random.default_rng(self.random_state)
        self.mean_ = np.array([user_means.mean() + rng.laplace(0.0, scale)])
        self.epsilon_ = float(self.epsilon)
        self.delta_ = 0.0
        return self


class ToyNoMean(BaseEstimator):
    """Releases a noisy count only; has no ``mean_``."""

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon = epsilon
        self.random_state = random_state

    def fit(self, X, y=None, *, groups=None):
        rng = np.random.default_rng(self.random_state)
        self.total_ = float(np.sum(X)) + rng.laplace(0.0, 2.0 / self.epsilon)
        return self


def _total(est):
    return est.total_


def test_worst_case_mean_neighbours():
    X, g, Xp, gp = worst_case_mean_neighbours(
        4, 3, center=[1.0, 2.0, 3.0], radius=0.5, rows_per_user=2
    )
    assert X.shape == Xp.shape == (8, 3)
    np.testing.assert_array_equal(g, np.repeat(np.arange(4), 2))
    np.testing.assert_array_equal(gp, g)
    np.testing.assert_allclose(X, np.tile([0.5, 2.0, 3.0], (8, 1)))
    np.testing.assert_allclose(Xp[:2], np.tile([1.5, 2.0, 3.0], (2, 1)))
    np.testing.assert_array_equal(Xp[2:], X[2:])
    # the moved user's mean moves by 2 * radius in l2 and l1
    diff = Xp[:2].mean(axis=0) - X[:2].mean(axis=0)
    assert np.linalg.norm(diff) == pytest.approx(1.0)
    assert np.abs(diff).sum() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        worst_case_mean_neighbours(0, 1)
    with pytest.raises(ValueError):
        worst_case_mean_neighbours(2, 2, center=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        worst_case_mean_neighbours(2, 1, radius=0.0)


def test_audit_estimator_correct_not_flagged():
    # 5 users, radius 1: the moved user shifts the mean by 2 / 5 = 0.4 and the
    # Laplace scale is 2 / (5 * 1) = 0.4, so the true epsilon is exactly 1.
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1)
    result = audit_estimator(
        ToyLaplaceMean(epsilon=1.0), X, Xp, groups=g, groups_prime=gp,
        n_runs=2000, random_state=0,
    )
    assert result.epsilon_claimed == 1.0 and result.delta == 0.0
    assert result.n_runs == 2000
    assert not result.violation
    # The statistic is -mean_, so T ~ 1 + Lap(0.4) on D and 0.6 + Lap(0.4) on
    # D'. For {T >= 1} (D vs D'): 0.5 vs 0.5 / e = 0.184; with 1000
    # evaluation runs the bounds are about 0.465 and 0.212, so the best event
    # gives about log(0.465 / 0.212) = 0.79 (sd about 0.07). The event chosen
    # on only 1000 selection runs can be a noisier tail event, so the bound
    # asserted is the looser 0.3, which any threshold between the medians
    # (0.6 and 1) or up to t = 1.8 still clears in expectation.
    assert result.epsilon_lower > 0.3


def test_audit_estimator_flags_too_little_noise():
    # noise_factor = 0.25: the true epsilon is 4 while 1 is claimed. As in
    # test_power_detects_too_little_noise, 2000 runs per dataset (1000 for
    # evaluation) give an expected bound around 3, far above 1.
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1)
    result = audit_estimator(
        ToyLaplaceMean(epsilon=1.0, noise_factor=0.25), X, Xp, groups=g,
        groups_prime=gp, n_runs=2000, random_state=0,
    )
    assert result.violation
    assert result.epsilon_lower > 1.0


@pytest.fixture
def pickle_this_module_by_value():
    # With --import-mode=importlib this test module is not importable in
    # joblib's (loky) worker processes, so its classes must be pickled by
    # value; loky pickles with cloudpickle when it is installed. Without it,
    # fall back to threads (still checks that chunking does not matter).
    try:
        import cloudpickle
    except ImportError:
        with joblib.parallel_config(backend="threading"):
            yield
        return
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def test_audit_estimator_n_jobs_invariant(pickle_this_module_by_value):
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1)
    kwargs = dict(groups=g, groups_prime=gp, n_runs=300, random_state=1)
    est = ToyLaplaceMean(epsilon=1.0)
    r1 = audit_estimator(est, X, Xp, n_jobs=1, **kwargs)
    r2 = audit_estimator(est, X, Xp, n_jobs=2, **kwargs)
    assert r1 == r2
    r3 = audit_estimator(est, X, Xp, n_jobs=1, **{**kwargs, "random_state": 2})
    assert r3 != r1


def test_audit_estimator_suppresses_fit_warnings():
    X, _, Xp, _ = worst_case_mean_neighbours(5, 1)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = audit_estimator(ToyLaplaceMean(), X, Xp, n_runs=50, n_jobs=1)
    assert record == []
    assert result.n_runs == 50


def test_audit_estimator_explicit_values_and_statistic():
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1)
    result = audit_estimator(
        ToyLaplaceMean(epsilon=1.0), X, Xp, groups=g, groups_prime=gp,
        n_runs=50, delta=1e-6, epsilon_claimed=2.0, alpha=0.1,
    )
    assert (result.delta, result.epsilon_claimed, result.alpha) == (1e-6, 2.0, 0.1)

    # No mean_: an explicit statistic is required.
    with pytest.raises(ValueError, match="statistic"):
        audit_estimator(ToyNoMean(), X, Xp, n_runs=20, n_jobs=1)
    result = audit_estimator(ToyNoMean(), X, Xp, statistic=_total, n_runs=50)
    # epsilon_claimed falls back to the epsilon parameter, delta to 0.
    assert (result.epsilon_claimed, result.delta) == (1.0, 0.0)


def test_audit_estimator_bad_inputs():
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1)
    with pytest.raises(ValueError):
        audit_estimator(ToyLaplaceMean(), X, Xp, n_runs=1)
    with pytest.raises(ValueError):
        audit_estimator(ToyLaplaceMean(), X, Xp, alpha=1.0)
    with pytest.raises(ValueError):
        audit_estimator(ToyLaplaceMean(), X, Xp, delta=1.0)
    with pytest.raises(ValueError):
        audit_estimator(ToyLaplaceMean(), X, Xp, statistic="mean_")
    with pytest.raises(ValueError):
        audit_estimator(ToyLaplaceMean(), X, Xp, groups=g[:-1])
    for n_jobs in (1.5, 0, True, "2"):  # issue 26: 1.5 was silently accepted
        with pytest.raises(ValueError, match="n_jobs must be"):
            audit_estimator(ToyLaplaceMean(), X, Xp, n_jobs=n_jobs)

    class NoSeed(BaseEstimator):
        def __init__(self, epsilon=1.0):
            self.epsilon = epsilon

    with pytest.raises(ValueError, match="random_state"):
        audit_estimator(NoSeed(), X, Xp)


def test_audit_estimator_clear_errors_for_bad_groups_and_shapes():
    # before: opaque TypeErrors from np.unique / broadcasting
    X, g, Xp, gp = worst_case_mean_neighbours(5, 2)
    g_none = np.asarray(g, dtype=object)
    g_none[0] = None
    with pytest.raises(ValueError, match="missing"):
        audit_estimator(ToyLaplaceMean(), X, Xp, groups=g_none, groups_prime=gp)
    mixed = np.asarray(g, dtype=object)
    mixed[::2] = [f"u{v}" for v in mixed[::2]]  # strings and ints together
    from skuserdp.mean import ClipNoiseMeanEstimator
    audit_estimator(ClipNoiseMeanEstimator(bounds=(-1.0, 1.0)), X, Xp,
                    groups=mixed, groups_prime=gp, n_runs=20, random_state=0)
    with pytest.raises(ValueError, match="same columns"):
        audit_estimator(ToyLaplaceMean(), X, Xp[:, :1], groups=g, groups_prime=gp)


def test_audits_with_a_random_state_are_reproducible():
    # the audits are a test tool: a RandomState reproduces their split (it
    # is not mixed with fresh entropy as the estimators' noise is, issue 26)
    rng = np.random.default_rng(0)
    t, t_prime = rng.laplace(0, 1, 2000), rng.laplace(0.5, 1, 2000)
    a, b = (epsilon_lower_bound(t, t_prime, epsilon_claimed=1.0,
                                random_state=np.random.RandomState(0))
            for _ in range(2))
    assert (a.epsilon_lower, a.event, a.counts) == (b.epsilon_lower, b.event, b.counts)
