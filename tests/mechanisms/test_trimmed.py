"""The trimmed-mean release: sensitivity, privacy map, release, audit."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import norm as _normal

from skuserdp.mechanisms import (
    calibrate_noise,
    plan_trimmed_mean,
    trimmed_mean_from_plan,
    trimmed_sum,
)
from skuserdp.mechanisms._lattice import lattice_radius
from skuserdp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    replace_one_trimmed_mean_sensitivity,
    replace_one_trimmed_sum_sensitivity,
)


def _clip(V, C):
    norms = np.linalg.norm(V, axis=-1, keepdims=True)
    return V * np.minimum(1.0, C / np.maximum(norms, 1e-300))


def _tm(V, k):
    s = np.sort(V, axis=0)
    return s[k:V.shape[0] - k].mean(axis=0)


def test_sensitivity_property_random_replacements():
    # ||TM(X) - TM(X')|| <= ||clip(a) - clip(b)||/(n-2k) <= 2C/(n-2k), and
    # <= ||w(0)||/(n-2k) with w_j(0) = v_(n-k+1) - v_(k) (1-indexed) of the
    # dataset before the replacement, for both directions (spec §1.4)
    rng = np.random.default_rng(0)
    C = 1.0
    for trial in range(400):
        n = int(rng.integers(5, 201))
        d = int(rng.integers(1, 21))
        k = int(rng.integers(0, (n - 1) // 2 + 1))
        V = _clip(rng.normal(size=(n, d)) * rng.uniform(0.05, 2.0), C)
        u = int(rng.integers(n))
        kind = trial % 3
        if kind == 0:  # the worst case: +-C e_j
            j = int(rng.integers(d))
            b = np.zeros(d)
            b[j] = C * rng.choice([-1.0, 1.0])
        elif kind == 1:
            b = _clip(rng.normal(size=d) * 10.0, C)
        else:
            b = -V[u]
        W = V.copy()
        W[u] = b
        change = np.linalg.norm(_tm(V, k) - _tm(W, k))
        a_b = np.linalg.norm(V[u] - b)
        assert change <= a_b / (n - 2 * k) + 1e-12
        assert change <= replace_one_trimmed_mean_sensitivity(C, n, k) + 1e-12
        if k >= 1:
            for X in (V, W):
                s = np.sort(X, axis=0)
                w0 = s[n - k] - s[k - 1]
                assert change <= np.linalg.norm(w0) / (n - 2 * k) + 1e-12


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_trimmed_sum_sensitivity_exhaustive(n):
    # every dataset of n values on a grid and every replacement of one
    # value: |S(X) - S(X')| <= |a - b| (one coordinate; coordinates are
    # independent)
    grid = np.arange(-2, 3)
    X = np.array(list(itertools.product(grid, repeat=n)), dtype=np.int64)
    for k in range(0, (n - 1) // 2 + 1):
        S = np.sort(X, axis=1)[:, k:n - k].sum(axis=1)
        for u in range(n):
            for b in grid:
                Y = X.copy()
                Y[:, u] = b
                T = np.sort(Y, axis=1)[:, k:n - k].sum(axis=1)
                assert np.all(np.abs(S - T) <= np.abs(X[:, u] - b))
    # the bound is attained (so it is the sensitivity, not a loose bound)
    Z = np.zeros((n, 1), dtype=np.int64)
    Z[0] = -2
    W = Z.copy()
    W[0] = 2
    assert abs(int(trimmed_sum(W, 0)[0] - trimmed_sum(Z, 0)[0])) == 4


def test_privacy_map_is_exact():
    for budget in (ZCDP(0.3), ApproxDP(1.0, 1e-6), PureDP(0.7)):
        plan = plan_trimmed_mean(48, 3, n_trim=8, budget=budget, radius=2.0)
        R = lattice_radius(plan.ball, plan.grid, 3, plan.norm)
        assert plan.sensitivity == 2.0 * R
        assert plan.sensitivity == replace_one_trimmed_sum_sensitivity(R, 48, 8)
        assert plan.noise == calibrate_noise(budget, plan.sensitivity)
        assert plan.loss == plan.noise.privacy(plan.sensitivity)
        assert plan.n_kept == 32
        assert plan.noise_variance == pytest.approx(
            (plan.noise.std * plan.grid / 32) ** 2)
    # zCDP: sigma = Delta/sqrt(2 rho) (up to the calibration's rounding up of
    # sigma^2 by at most 2^-20 after a relative margin 1e-12)
    plan = plan_trimmed_mean(48, 3, n_trim=8, budget=ZCDP(0.3), radius=2.0)
    sigma2 = plan.sensitivity ** 2 / (2 * 0.3)
    assert sigma2 <= float(plan.noise.sigma2) <= sigma2 * (1 + 1e-12) + 2.0 ** -20
    assert plan.loss.rho <= 0.3
    # in the mean's units: 2C/(n - 2k) up to the lattice widening
    assert replace_one_trimmed_mean_sensitivity(2.0, 48, 8) == 4.0 / 32


@pytest.mark.parametrize("k", [24, 25, -1, 1.5])
def test_rejects_trimming_everyone(k):
    with pytest.raises(ValueError, match="n_trim"):
        plan_trimmed_mean(48, 3, n_trim=k, budget=ZCDP(0.3), radius=1.0)


def test_release_is_the_trimmed_mean_plus_noise():
    rng = np.random.default_rng(1)
    U = rng.normal(size=(400, 4)) * 0.2 + 1.0
    U[:40] += 1e6  # 10 % far away: clipped to the ball, then trimmed
    before = U.copy()
    plan = plan_trimmed_mean(400, 4, n_trim=50, budget=ZCDP(1e8), radius=3.0)
    out = trimmed_mean_from_plan(U, plan, center=np.ones(4), random_state=0)
    np.testing.assert_array_equal(U, before)  # not mutated
    want = np.ones(4) + _tm(_clip(U - 1.0, 3.0), 50)
    np.testing.assert_allclose(out, want, atol=1e-3)
    with pytest.raises(ValueError, match="shape"):
        trimmed_mean_from_plan(U[:10], plan)


def test_accuracy_matches_the_plan():
    # no clipping active, concentrated data, k=0 bias-free reference:
    # (1/R) sum ||err||^2/(d sigma^2) in 1 +- 4 sqrt(2/(dR)) (chi-square
    # with dR degrees of freedom; spec §1.4). err is measured to the
    # non-private trimmed mean, so the bias term is zero.
    rng = np.random.default_rng(2)
    n, d, reps = 60, 5, 400
    U = rng.normal(size=(n, d)) * 0.01
    plan = plan_trimmed_mean(n, d, n_trim=10, budget=ZCDP(0.5), radius=1.0)
    target = _tm(U, 10)
    errs = [np.sum((trimmed_mean_from_plan(U, plan, random_state=s) - target) ** 2)
            for s in range(reps)]
    # the rounding of each contribution to the lattice adds at most grid/2
    # per value, so its effect on the mean is at most grid/2 per coordinate
    ratio = np.mean(errs) / (d * plan.noise_variance)
    tol = 4 * math.sqrt(2 / (d * reps)) + d * (plan.grid / 2) ** 2 / plan.noise_variance
    assert abs(ratio - 1) <= tol


# ---------------------------------------------------------------- the audit
AUDIT_RUNS = 20_000
CONTROL_RUNS = 5_000  # the controls are 1.5x and 2x the claim: fewer runs
AUDIT_RHO = 0.5


def _worst_pair(n, k, d, C):
    """k users at -C e1, k at +C e1, the rest at 0; the canary at -C e1
    (D) or +C e1 (D'): the trimmed mean moves by 2C/(n - 2k) in e1."""
    V = np.zeros((n, d))
    V[:k, 0] = -C
    V[k:2 * k, 0] = C
    D, Dp = V.copy(), V.copy()
    D[-1, 0], Dp[-1, 0] = -C, C
    return D, Dp


def _mu_hat(plan, D, Dp, seed, runs=AUDIT_RUNS):
    """Lower 99.9 % confidence bound of |mean difference|/sigma of the e1
    coordinate over ``runs`` releases per side (sigma estimated from the
    runs)."""
    ss = np.random.SeedSequence(seed).spawn(2 * runs)
    a = np.array([trimmed_mean_from_plan(D, plan, random_state=s)[0]
                  for s in ss[:runs]])
    b = np.array([trimmed_mean_from_plan(Dp, plan, random_state=s)[0]
                  for s in ss[runs:]])
    sd = math.sqrt(0.5 * (a.var(ddof=1) + b.var(ddof=1)))
    mu = abs(b.mean() - a.mean()) / sd
    # Var(mu_hat) ~ 2/N + mu^2/(4N) (the difference, and sigma's estimate)
    se = math.sqrt(2 / runs + mu ** 2 / (4 * runs))
    return mu - _normal.ppf(0.9995) * se


@pytest.mark.slow
def test_audit_worst_pair_with_positive_controls(monkeypatch):
    n, k, d, C = 48, 8, 2, 1.0
    D, Dp = _worst_pair(n, k, d, C)
    claimed = math.sqrt(2 * AUDIT_RHO)  # mu of a rho-zCDP Gaussian
    plan = plan_trimmed_mean(n, d, n_trim=k, budget=ZCDP(AUDIT_RHO), radius=C)
    lower = _mu_hat(plan, D, Dp, 1)
    assert lower <= claimed, lower
    # ... and the audit sees most of the claim (the pair is the worst case)
    assert lower > 0.8 * claimed, lower
    # positive control 1: the trim ignored (sensitivity 2C/n in the mean's
    # units, i.e. the noise scaled by (n-2k)/n): mu 1.5x the claim
    bad = plan_trimmed_mean(n, d, n_trim=k, budget=ZCDP(AUDIT_RHO), radius=C)
    shrunk = calibrate_noise(ZCDP(AUDIT_RHO * (n / (n - 2 * k)) ** 2),
                             plan.sensitivity)
    object.__setattr__(bad, "noise", shrunk)
    assert _mu_hat(bad, D, Dp, 2, CONTROL_RUNS) > claimed
    # positive control 2: sigma halved
    halved = calibrate_noise(ZCDP(4 * AUDIT_RHO), plan.sensitivity)
    object.__setattr__(bad, "noise", halved)
    assert _mu_hat(bad, D, Dp, 3, CONTROL_RUNS) > claimed
