"""UserDPLinearRegression never silently worse than the mean (issue 31, part 1).

Two checks, on public and released values only: the public plan's first-order
excess risk (spec §3.3, :func:`plan_excess_risk`, verified here against
simulation) and a lower confidence bound of the released fit's gain over the
best constant (:func:`gain_lower_bound`, coverage checked here with a positive
control).
"""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import binom

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPLinearRegression
from skuserdp.linear_model._linear_regression import (
    _vech_layout,
    gain_lower_bound,
    gain_noise_bounds,
    noise_norm_bound,
    plan_excess_risk,
)

WORSE = "may be worse than predicting the mean"


def _symmetric_noise(rng, p, s2):
    """E with Var(E_jj) = s2, Var(E_jk) = s2/2 (the released vech times √2)."""
    G = rng.normal(scale=math.sqrt(s2 / 2.0), size=(p, p))
    E = np.triu(G, 1)
    E = E + E.T
    E[np.diag_indices(p)] = rng.normal(scale=math.sqrt(s2), size=p)
    return E


@pytest.mark.parametrize("ridge", [0.0, 0.05])
def test_plan_excess_risk_matches_simulation(ridge):
    # Σ = λI, λ‖θ‖² = v; the solve (S̃ + α)⁻¹b̃ with the estimator's noise law.
    p, lam, v, s2, R = 4, 0.2, 0.3, 1e-6, 4000
    rng = np.random.default_rng(0)
    theta = rng.normal(size=p)
    theta *= math.sqrt(v / lam) / np.linalg.norm(theta)
    first, full, factor = np.empty(R), np.empty(R), np.empty(R)
    M = (lam + ridge) * np.eye(p)
    for i in range(R):
        E = _symmetric_noise(rng, p, s2)
        e = rng.normal(scale=math.sqrt(s2), size=p)
        z = -ridge * theta + e - E @ theta
        d1 = np.linalg.solve(M, z)                  # first order
        d = np.linalg.solve(M + E, lam * theta + e) - theta  # the real solve
        first[i] = lam * d1 @ d1
        full[i] = lam * d @ d
        r = np.linalg.norm(E, 2) / (lam + ridge)
        factor[i] = r / (1.0 - r)
    expected = plan_excess_risk(s2, p, target_variance=v, conditioning=lam,
                                ridge=ridge)
    # the first-order excess has mean exactly `expected`: CLT, 4 standard errors
    se = first.std(ddof=1) / math.sqrt(R)
    assert abs(first.mean() - expected) <= 4.0 * se
    # the real solve: ‖(M+E)⁻¹z − M⁻¹z‖ ≤ ‖M⁻¹z‖·r/(1−r), r = ‖E‖/(λ+α) < 1
    assert factor.max() < 0.1
    root = np.sqrt(first)
    assert np.all(np.sqrt(full) <= root * (1 + factor) + 1e-15)
    assert np.all(np.sqrt(full) >= root * (1 - factor) - 1e-15)


def test_plan_excess_risk_closed_form():
    # λ(α²‖θ‖² + σ²(p + (p+1)‖θ‖²/2))/(λ+α)², ‖θ‖² = v/λ
    got = plan_excess_risk(0.01, 3, target_variance=0.5, conditioning=0.25,
                           ridge=0.1)
    theta2 = 0.5 / 0.25
    want = 0.25 * (0.01 * theta2 + 0.01 * (3 + 4 * theta2 / 2)) / 0.35 ** 2
    assert got == pytest.approx(want, rel=1e-14)


def _task(n_users, d, rows=4, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n_users * rows, d))
    beta = np.linspace(1.0, -1.0, d) / math.sqrt(d)
    y = X @ beta + 0.2 + noise * rng.normal(size=len(X))
    return X, y, np.repeat(np.arange(n_users), rows)


def _accuracy_warnings(est, X, y, g):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, groups=g)
    return [str(w.message) for w in caught if w.category is AccuracyWarning]


def test_public_plan_warns_at_48_users_and_not_at_10000():
    # spec §3.3: n = 48, p = 5 features, ε = 1 fires; n = 1e4 does not
    kw = dict(epsilon=1.0, bounds=(-1.0, 1.0), target_bounds=(-3.0, 3.0),
              random_state=0)
    X, y, g = _task(48, 5)
    msgs = _accuracy_warnings(UserDPLinearRegression(**kw), X, y, g)
    assert len(msgs) == 1 and WORSE in msgs[0] and "public plan" in msgs[0]
    assert "UserDPSGDRegressor" in msgs[0] and "more users" in msgs[0]
    X, y, g = _task(10_000, 5)
    est = UserDPLinearRegression(**kw)
    assert _accuracy_warnings(est, X, y, g) == []
    assert est.score(X, y) > 0.8


def test_released_fit_check_warns_on_a_tiny_target_variance():
    # the public plan assumes the largest target variance (box units); a
    # target that fills 2 % of its box is hopeless at 1000 users, and only the
    # check on the released statistics sees it
    X, y, g = _task(1000, 3, noise=0.01)
    y = 0.02 * y
    est = UserDPLinearRegression(epsilon=1.0, bounds=(-1.0, 1.0),
                                 target_bounds=(-1.0, 1.0), random_state=0)
    msgs = _accuracy_warnings(est, X, y, g)
    assert len(msgs) == 1 and "lower confidence bound" in msgs[0]
    assert est.score(X, y) < 0.0  # the warned fit is indeed worse than the mean


def _released(rng, S, b, s2, drop):
    p = b.shape[0]
    rows, cols, scale = _vech_layout(p, drop)
    g = rng.normal(scale=math.sqrt(s2), size=rows.shape[0] + p)
    E = np.zeros((p, p))
    E[rows, cols] = g[:rows.shape[0]] / scale
    E[cols, rows] = g[:rows.shape[0]] / scale
    return S + E, b + g[rows.shape[0]:]


def _true_gain(S, b, w, intercept):
    q = 2 * w @ b - w @ S @ w
    return q - (b[-1] ** 2 / S[-1, -1] if intercept else 0.0)


@pytest.mark.parametrize("drop", [True, False])
def test_gain_lower_bound_covers_with_a_positive_control(drop):
    # with probability >= 1 − β the bound is below the true gain (box units),
    # whatever solve produced w; ignoring the noise (t = 0) must be caught
    rng = np.random.default_rng(1)
    p, s2, beta, R = 4, 4e-4, 0.01, 1500
    A = rng.uniform(-1, 1, (200, p - 1))
    Xa = np.column_stack([A, np.ones(200)])
    yv = Xa @ [0.3, -0.2, 0.1, 0.1] + 0.3 * rng.uniform(-1, 1, 200)
    S, b = Xa.T @ Xa / 200, Xa.T @ yv / 200
    if drop:
        S[-1, -1] = 1.0
    t = gain_noise_bounds(p, s2, "gaussian", 0.0, drop, beta)
    misses = controls = 0
    for _ in range(R):
        St, bt = _released(rng, S, b, s2, drop)
        w = np.linalg.solve(St + 0.01 * np.diag([1, 1, 1, 0]), bt)
        gain = _true_gain(S, b, w, True)
        kw = dict(drop_last_diagonal=drop, intercept=True)
        misses += gain_lower_bound(St, bt, w, noise_bounds=t, **kw) > gain
        controls += gain_lower_bound(St, bt, w, noise_bounds=(0.0, 0.0), **kw) > gain
    limit = binom.ppf(1 - 1e-6, R, beta)   # P(false failure) <= 1e-6
    assert misses <= limit
    assert controls > limit


def test_noise_norm_bound_tail():
    # Hsu-Kakade-Zhang for Gaussian noise: P(‖g‖ > t) <= β; Markov for Laplace
    rng = np.random.default_rng(2)
    k, s2, beta, R = 20, 2.0, 0.05, 20000
    t = noise_norm_bound(k, s2, "gaussian", beta)
    norms = np.linalg.norm(rng.normal(scale=math.sqrt(s2), size=(R, k)), axis=1)
    assert (norms > t).sum() <= binom.ppf(1 - 1e-6, R, beta)
    t_lap = noise_norm_bound(k, s2, "laplace", beta)
    lap = rng.laplace(scale=math.sqrt(s2 / 2), size=(R, k))
    assert (np.linalg.norm(lap, axis=1) > t_lap).sum() <= binom.ppf(1 - 1e-6, R, beta)
