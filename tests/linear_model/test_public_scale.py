"""Issue 15: the public boxes of the linear models and the private releases
that come with the defaults.

* the fit in box units is mapped back exactly (``PublicScale.unscale``);
* the recorded spend is the composition of every release of the default
  configuration (boxes, starting intercept, clip norm or clip radius,
  smoothness or eigenvalue, and the plan), recomputed from the privacy core;
* audits of the privately learned knobs, each with a non-private positive
  control: DP-SGD's ``clip_norm="auto"`` (the private median of the users'
  gradient norms) and ``learning_rate="auto"`` (the users' mean squared row
  norm), and UserDPLinearRegression's ``clip_radius="auto"``.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import skuserdp.linear_model._dpsgd as dpsgd_module
from skuserdp.exceptions import AccuracyWarning
from skuserdp.mechanisms import plan_log_ranges
from skuserdp.mechanisms._private_bounds import default_bounds_share
from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
from skuserdp.linear_model._base import PublicScale
from skuserdp.linear_model._dpsgd import CLIP_SHARE as SGD_CLIP_SHARE
from skuserdp.linear_model._dpsgd import INTERCEPT_SHARE, SMOOTH_SHARE
from skuserdp.linear_model._dpsgd import (
    SPREAD_CAP,
    TARGET_SPREAD_SHARE,
    prediction_noise_bound,
)
from skuserdp.linear_model._linear_regression import CLIP_SHARE as LR_CLIP_SHARE
from skuserdp.linear_model._linear_regression import EIGEN_SHARE, plan_min_eigenvalue
from skuserdp.linear_model._losses import get_loss
from skuserdp.linear_model._regression_intervals import split_interval_budget
from skuserdp.linear_model._sgd import plan_gradient_descent
from skuserdp.mean import plan_clip_noise
from skuserdp.mechanisms._private_bounds import _positive_grid
from skuserdp.privacy import (
    ZCDP,
    bounded_range_epsilon,
    compose,
    split_for_log_ranges,
    split_for_public_bounds,
    split_zcdp,
    split_zcdp_shares,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)
from skuserdp.testing import audit_estimator

pytestmark = [
    # issue 31: the target-spread check of UserDPSGDRegressor warns on the
    # small fixtures of this module (tested in test_dpsgd_target_spread.py)
    pytest.mark.filterwarnings(
        "ignore:UserDPSGDRegressor may be worse than predicting the mean:"
        "skuserdp.exceptions.AccuracyWarning"),
]

EPS = np.finfo(np.float64).eps


# ------------------------------------------------------------- PublicScale
def test_unscale_is_the_inverse_of_the_box_map():
    # y = y_mid + y_half·(w·z + b), z = (x − mid)/half, for random boxes and
    # models of 3 outputs: the unscaled model gives the same predictions on
    # any x, and its formula is the documented one, to rounding.
    rng = np.random.default_rng(0)
    d, k = 6, 3
    lower = rng.normal(scale=100.0, size=d)
    upper = lower + rng.uniform(0.1, 50.0, size=d)
    y_lower, y_upper = -57.25, 13.5
    scale = PublicScale(lower, upper, y_lower, y_upper)
    mid, half = (lower + upper) / 2, (upper - lower) / 2
    y_mid, y_half = (y_lower + y_upper) / 2, (y_upper - y_lower) / 2
    np.testing.assert_allclose(scale.mid, mid, rtol=2 * EPS, atol=0)
    np.testing.assert_allclose(scale.half, half, rtol=2 * EPS, atol=0)
    assert scale.y_mid == y_mid and scale.y_half == y_half  # exact in binary
    w = rng.normal(size=(k, d))
    b = rng.normal(size=k)
    coef, intercept = scale.unscale(w, b)
    assert coef.shape == (k, d) and intercept.shape == (k,)
    np.testing.assert_allclose(coef, y_half * w / half, rtol=4 * EPS, atol=0)
    expected_b = y_mid + y_half * (b - (w / half) @ mid)
    mag = abs(y_mid) + y_half * (np.abs(b) + np.abs(w / half) @ np.abs(mid))
    assert np.all(np.abs(intercept - expected_b) <= 4 * d * EPS * mag)
    # same predictions, rows inside the box (clipping is then the identity)
    X = rng.uniform(lower, upper, size=(50, d))
    Z = scale.rows(X)
    np.testing.assert_allclose(Z, (X - mid) / half, rtol=0, atol=8 * EPS)
    assert np.all(np.abs(Z) <= 1.0)
    pred_box = y_mid + y_half * (Z @ w.T + b)
    pred_raw = X @ coef.T + intercept
    tol = 16 * d * EPS * (abs(y_mid) + y_half * (np.abs(Z) @ np.abs(w.T) + np.abs(b))
                          + np.abs(X) @ np.abs(coef.T) + np.abs(intercept))
    assert np.all(np.abs(pred_box - pred_raw) <= tol)
    # targets: clipped to their box, then mapped
    y = np.array([-100.0, y_lower, 0.0, y_upper, 100.0])
    np.testing.assert_allclose(scale.targets(y), [-1, -1, (0 - y_mid) / y_half, 1, 1],
                               rtol=2 * EPS, atol=2 * EPS)


def test_unscale_without_target_box():
    # classifiers: no target box, y_mid = 0 and y_half = 1
    rng = np.random.default_rng(1)
    lower, upper = rng.normal(size=4) - 3, rng.normal(size=4) + 3
    scale = PublicScale(lower, upper)
    assert scale.y_mid == 0.0 and scale.y_half == 1.0
    w, b = rng.normal(size=(2, 4)), rng.normal(size=2)
    coef, intercept = scale.unscale(w, b)
    half, mid = (upper - lower) / 2, (upper + lower) / 2
    np.testing.assert_allclose(coef, w / half, rtol=4 * EPS, atol=0)
    np.testing.assert_allclose(intercept, b - (w / half) @ mid, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(scale.targets([0.0, 3.0]), [0.0, 3.0])


# ------------------------------------------------ exactness of the map back
def _raw_panel(n_users=400, m=5, seed=2):
    """Features around 1000 (spread 10), a target around -50."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_users), m)
    X = 1000.0 + 10.0 * rng.normal(size=(n_users * m, 3))
    X[:, 1] = 5.0 + 2.0 * rng.normal(size=n_users * m)  # another unit
    y = (-50.0 + 0.8 * (X[:, 0] - 1000.0) - 3.0 * (X[:, 1] - 5.0)
         + 2.0 * (X[:, 2] - 1000.0) / 10.0 + rng.normal(size=n_users * m))
    return X, y, groups


BOUNDS = (np.array([960.0, -3.0, 960.0]), np.array([1040.0, 13.0, 1040.0]))
TARGET_BOUNDS = (-150.0, 50.0)


@pytest.mark.parametrize("make", [
    lambda **kw: UserDPSGDRegressor(max_iter=50, standardize=False, **kw),
    lambda **kw: UserDPSGDRegressor(max_iter=50, **kw),
    lambda **kw: UserDPLinearRegression(**kw),
], ids=["dpsgd", "dpsgd_standardize_default", "adassp"])
def test_fit_in_raw_units_equals_the_hand_scaled_fit_mapped_back(make):
    # At a huge budget (ε = 1e7) the same estimator on the raw data with the
    # declared boxes, and on the hand-scaled data with boxes (-1, 1), runs
    # the same releases on the same box-unit data with the same seeds: the
    # box-unit models agree to rounding (the scaled data may differ by an
    # ulp), far below the noise of the releases at that budget, and mapping
    # back by hand reproduces coef_/intercept_.
    X, y, groups = _raw_panel()
    lower, upper = BOUNDS
    assert np.all((X > lower) & (X < upper))
    kw = dict(epsilon=1e7, delta=1e-6, random_state=5)
    raw = make(bounds=BOUNDS, target_bounds=TARGET_BOUNDS, **kw).fit(
        X, y, groups=groups)
    mid, half = (lower + upper) / 2, (upper - lower) / 2
    y_mid, y_half = sum(TARGET_BOUNDS) / 2, (TARGET_BOUNDS[1] - TARGET_BOUNDS[0]) / 2
    Z = (np.clip(X, lower, upper) - mid) / half
    yz = (np.clip(y, *TARGET_BOUNDS) - y_mid) / y_half
    box = make(bounds=(-1.0, 1.0), target_bounds=(-1.0, 1.0), **kw).fit(
        Z, yz, groups=groups)
    assert box.epsilon_ == raw.epsilon_ and box.rho_ == raw.rho_
    w, b = box.coef_, box.intercept_
    coef = y_half * w / half
    intercept = y_mid + y_half * (b - w @ (mid / half))
    # tolerance: 1e-9 of the coefficient scale, orders of magnitude below
    # the noise of the fit at ε = 1e7 would show if the two fits drew
    # different noise (checked: the box fit's coefficients move by more
    # than that between seeds)
    other = clone(box).set_params(random_state=6).fit(Z, yz, groups=groups)
    noise = np.max(np.abs(other.coef_ - w))
    tol_w = 1e-9 * (1.0 + np.max(np.abs(w)))
    assert noise > 100 * tol_w
    np.testing.assert_allclose(raw.coef_ * half / y_half, w, rtol=0, atol=tol_w)
    np.testing.assert_allclose(raw.coef_, coef, rtol=1e-9, atol=0)
    assert raw.intercept_ == pytest.approx(intercept, rel=1e-9,
                                           abs=1e-9 * y_half * np.sum(np.abs(w * mid
                                                                             / half)))
    # and the model is the data's (R² on the raw units, fit at a huge budget)
    assert raw.score(X, y) > 0.9
    np.testing.assert_array_equal(raw.bounds_[0], lower)
    assert raw.target_bounds_ == TARGET_BOUNDS


# ------------------------------------------------------ spend recomposition
def _spend_panel(n_users=2000, d=3, seed=3):
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.repeat(np.arange(n_users), 4))
    X = rng.normal(size=(groups.size, d))
    y = X @ np.linspace(1.0, -1.0, d) + 0.5 + 0.3 * rng.normal(size=groups.size)
    return X, y, groups


def _row_bound(d):
    b = math.sqrt(d)  # box units
    return math.sqrt(b * b + 1.0)  # with the intercept


def _fit_quietly(est, X, y, groups):
    with warnings.catch_warnings():  # the learned boxes' accuracy warnings
        warnings.simplefilter("ignore", AccuracyWarning)
        return est.fit(X, y, groups=groups)


def _box_spend(n_users, n_columns, epsilon, delta):
    """Loss of the learned boxes and the budget left (zCDP accounting)."""
    share = default_bounds_share(n_users, n_columns, epsilon=epsilon, delta=delta,
                                 zcdp=True)
    budget, eps, delta_left = split_for_log_ranges(epsilon, delta, share, zcdp=True)
    return plan_log_ranges(n_users, n_columns, budget=budget).loss, eps, delta_left


@pytest.mark.parametrize("epsilon,delta", [(2.0, 1e-6), (5.0, 1e-8)])
def test_dpsgd_default_spend_is_the_composition_of_its_releases(epsilon, delta):
    # defaults (bounds and target_bounds "auto", clip_norm "auto",
    # learning_rate "auto", fit_intercept), the plain path: standardize=False
    # (d9ff1a8 made standardize="auto" the default; its extra release is not
    # recomposed here)
    X, y, groups = _spend_panel()
    n_users, d = 2000, X.shape[1]
    est = _fit_quietly(UserDPSGDRegressor(epsilon=epsilon, delta=delta,
                                          standardize=False, random_state=0),
                       X, y, groups)
    # 1. the boxes: d features and the target, one joint log2-histogram release
    box_loss, eps1, delta1 = _box_spend(n_users, d + 1, epsilon, delta)
    assert delta1 == delta
    # 2. learning_rate="auto": the smoothness, split first (_fit_parameters)
    b2 = _row_bound(d) ** 2
    smooth_budget, eps2 = split_zcdp(eps1, delta, SMOOTH_SHARE)
    smooth_loss = plan_clip_noise(n_users, 1, budget=smooth_budget,
                                  radius=0.5 * b2).loss
    # 3. clip_norm="auto" with an intercept: the starting intercept
    icpt_budget, eps3 = split_zcdp(eps2, delta, INTERCEPT_SHARE)
    icpt_loss = plan_clip_noise(n_users, 1, budget=icpt_budget, radius=1.0).loss
    # 4. the clip norm: one bounded-range release charged its whole share
    clip_loss, eps4 = split_zcdp(eps3, delta, SGD_CLIP_SHARE)
    # 5. the target's spread (issue 31): split before the plan, released
    #    after the fit, two coordinates in [0, cap] with cap = SPREAD_CAP * N
    spread_budget, eps5 = split_zcdp(eps4, delta, TARGET_SPREAD_SHARE)
    # 6. the plan, for the released clip norm (a public input of the plan;
    #    the smoothness only sets the step sizes, not the loss)
    G = get_loss("squared_error").gradient_bound(_row_bound(d), 1.0, 5.0)
    plan = plan_gradient_descent(n_users, d + 1, epsilon=eps5, delta=delta,
                                 n_steps=100, aggregator="clip", gradient_bound=G,
                                 smoothness=1.0, radius=5.0, clip_norm=est.clip_norm_,
                                 calibration="tight")
    cap = SPREAD_CAP * prediction_noise_bound(plan)
    spread_loss = plan_clip_noise(n_users, 2, budget=spread_budget,
                                  radius=cap / np.sqrt(2.0)).loss
    total = compose(box_loss, smooth_loss, icpt_loss, clip_loss, spread_loss,
                    plan.loss)
    assert isinstance(total, ZCDP) and isinstance(est.privacy_loss_, ZCDP)
    assert est.privacy_loss_.rho == pytest.approx(total.rho, rel=1e-12)
    assert est.epsilon_ == pytest.approx(
        zcdp_to_approx_dp(total, delta).epsilon, rel=1e-12)
    assert est.epsilon_ <= epsilon and est.delta_ == delta
    assert est.rho_ <= zcdp_rho_for(epsilon, delta)
    # every release was charged: leaving any one out misses by far more
    for part in (box_loss, smooth_loss, icpt_loss, clip_loss, spread_loss):
        assert part.rho > 1e-6 * total.rho
    # the clip norm is a grid point of the private quantile, within [G/1000, G]
    assert 1e-3 * G <= est.clip_norm_ <= G
    assert est.clip_norm_ in set(_positive_grid()) | {1e-3 * G, G}


@pytest.mark.parametrize("epsilon,delta", [(2.0, 1e-6), (5.0, 1e-8)])
def test_linear_regression_default_spend_is_the_composition_of_its_releases(
        epsilon, delta):
    X, y, groups = _spend_panel()
    n_users, d = 2000, X.shape[1]
    est = _fit_quietly(UserDPLinearRegression(epsilon=epsilon, delta=delta,
                                              random_state=0), X, y, groups)
    # 1. the boxes
    box_loss, eps1, _ = _box_spend(n_users, d + 1, epsilon, delta)
    # 2. clip_radius="auto": the private median of the statistics norms
    radius_loss, eps2 = split_zcdp(eps1, delta, LR_CLIP_SHARE)
    # 3. the interval's share (ci_share=0.05 of the ρ left): the scores'
    #    private quantile and the meat, whose noise is calibrated to its
    #    budget for a released radius (so compared through its budget)
    ci_budget, eps3 = split_zcdp(eps2, delta, 0.05)
    _, quantile_loss, meat_budget = split_interval_budget(ci_budget)
    # 4. alpha="auto": the eigenvalue and the statistics, for the released
    #    radius (a public input of the plans)
    p = d + 1
    n_stats = p * (p + 3) // 2 - 1
    eig_budget, rest = split_zcdp_shares(ZCDP(zcdp_rho_for(eps3, delta)),
                                         [EIGEN_SHARE, 1.0 - EIGEN_SHARE])
    plan = plan_clip_noise(n_users, n_stats, budget=rest, radius=est.clip_radius_,
                           calibration="tight")
    eig = plan_min_eigenvalue(n_users, p, budget=eig_budget, row_bound=_row_bound(d),
                              clip_radius=plan.ball, intercept=True)
    total = compose(box_loss, radius_loss, eig.loss, plan.loss, quantile_loss,
                    meat_budget)
    assert isinstance(est.privacy_loss_, ZCDP)
    assert est.privacy_loss_.rho <= total.rho
    assert est.privacy_loss_.rho == pytest.approx(total.rho, rel=1e-9)
    assert est.epsilon_ == pytest.approx(
        zcdp_to_approx_dp(total, delta).epsilon, rel=1e-9)
    assert est.epsilon_ <= epsilon and est.delta_ == delta
    for part in (box_loss, radius_loss, eig.loss):
        assert part.rho > 1e-6 * total.rho
    # the radius: a grid point of the private quantile within [r/1000, r]
    b2 = _row_bound(d) ** 2
    r_max = math.sqrt(b2 * b2 - 1.0 + b2)
    assert r_max * (1e-3 - 1e-12) <= est.clip_radius_ <= r_max * (1 + 1e-12)
    on_grid = est.clip_radius_ in set(_positive_grid())
    assert on_grid or est.clip_radius_ == pytest.approx(r_max, rel=1e-12) or (
        est.clip_radius_ == pytest.approx(1e-3 * r_max, rel=1e-12))
    assert est.min_eigenvalue_ is not None and est.alpha_ >= 0.0


# ------------------------------------------------------------------ audit
def _clip_pair(n_users=64):
    # One feature, box (-1, 1), no intercept; one row per user. At θ = 0 the
    # squared loss's gradient of a user is −x·y (up to the loss's constant):
    # half the users tiny (x = y = 0.2: |g| = 0.04), half large (x = y = 1:
    # |g| = 1), so the median's bin lies between the two groups; the
    # neighbour turns one tiny user into a large one (6 large, 4 tiny), which
    # moves the median's bin to the large users' bin. 64 users: above the
    # few-users threshold ⌈4·ln 2050/ε₀⌉ (ε₀ ≈ 1 here), below which the
    # estimator skips the private median for a public rule.
    X = np.zeros((n_users, 2))
    X[: n_users // 2] = 0.2
    X[n_users // 2:] = 1.0
    Xp = X.copy()
    Xp[0] = 1.0
    g = np.arange(n_users)
    return X, g, Xp, g.copy()


def _clip_estimator():
    # the box is declared (no box step), no intercept (no starting-intercept
    # release), a numeric learning rate (no smoothness release): clip_norm_
    # is the clip release alone. One step: the optimisation is not audited.
    return UserDPSGDRegressor(epsilon=15.0, delta=1e-6, bounds=(-1.0, 1.0),
                              target_bounds=(-1.0, 1.0), fit_intercept=False,
                              learning_rate=0.1, max_iter=1)


def _clip_claim():
    # the clip release is one ε₀-bounded-range (hence ε₀-DP) exponential
    # mechanism with ε₀ = bounded_range_epsilon(ρ_clip) (a few ulps less)
    first, _ = split_zcdp(15.0, 1e-6, SGD_CLIP_SHARE)
    return bounded_range_epsilon(first.rho)


def _exact_median(values, quantile, release_epsilon, *, random_state=None):
    """Non-private: the exact median, snapped up to the quantile's grid."""
    pos = _positive_grid()
    k = int(np.searchsorted(pos, float(np.quantile(values, quantile))))
    return float(pos[min(k, pos.size - 1)])


@pytest.mark.slow
@pytest.mark.parametrize("leaky", [False, True], ids=["private", "exact_median"])
def test_audit_clip_norm_auto(leaky, xy_audited, monkeypatch):
    X, g, Xp, gp = _clip_pair()
    est = _clip_estimator()
    # the two medians (exact) differ, and both lie within [G/1000, G]
    G = get_loss("squared_error").gradient_bound(1.0, 1.0, est.radius)
    norms = np.abs(X[:, 0] * X[:, 1]), np.abs(Xp[:, 0] * Xp[:, 1])
    medians = [_exact_median(v, 0.5, 1.0) for v in norms]
    assert medians[0] != medians[1]
    assert 1e-3 * G < 0.04 and all(1e-3 * G < m_ < G for m_ in medians)
    claim = _clip_claim()
    assert 0.5 < claim < 2.0  # a claim the audit can test
    if leaky:
        monkeypatch.setattr(dpsgd_module, "private_quantile", _exact_median)
    res = audit_estimator(xy_audited(est), X, Xp, groups=g, groups_prime=gp,
                          statistic=lambda e: float(e.fitted_.clip_norm_),
                          epsilon_claimed=claim, delta=0.0, n_runs=1500,
                          random_state=0)
    assert res.violation == leaky, str(res)


# The two other privately learned knobs, audited the same way: the released
# value is the statistic, the claim is that release's own guarantee, and the
# positive control releases it without noise.
def _smoothness_estimator():
    # declared box, no intercept, a numeric clip norm (no clip release):
    # mean_squared_row_norm_ is the smoothness release alone (first in the fit)
    return UserDPSGDRegressor(epsilon=15.0, delta=1e-6, bounds=(-1.0, 1.0),
                              target_bounds=(-1.0, 1.0), fit_intercept=False,
                              clip_norm=1.0, max_iter=1)


def _exact_clip_noise(user_values, plan, *, center=None, random_state=None,
                      n_jobs=None):
    """Non-private: the exact users' mean, without clipping or noise."""
    return np.asarray(user_values, dtype=np.float64).mean(axis=0)


@pytest.mark.slow
@pytest.mark.parametrize("leaky", [False, True], ids=["private", "exact_mean"])
def test_audit_learning_rate_auto(leaky, xy_audited, monkeypatch):
    # one row per user, one feature: each user's squared row norm is x² in
    # [0, 1]; the neighbour moves one user from x = 0.2 to x = 1 (its mean
    # moves by 0.096). The release is a discrete Gaussian at the smoothness
    # share of ρ: its (ε, δ = 1e-6) guarantee is the claim.
    X, g, Xp, gp = _clip_pair()
    est = _smoothness_estimator()
    first, _ = split_zcdp(15.0, 1e-6, SMOOTH_SHARE)
    claim = zcdp_to_approx_dp(first.rho, 1e-6).epsilon
    assert 1.0 < claim < 5.0  # a claim the audit can test
    if leaky:
        monkeypatch.setattr(dpsgd_module, "clip_noise_from_plan", _exact_clip_noise)
    res = audit_estimator(xy_audited(est), X, Xp, groups=g, groups_prime=gp,
                          statistic=lambda e: float(e.fitted_.mean_squared_row_norm_),
                          epsilon_claimed=claim, delta=1e-6, n_runs=1500,
                          random_state=0)
    assert res.violation == leaky, str(res)


@pytest.mark.slow
@pytest.mark.parametrize("leaky", [False, True], ids=["private", "exact_median"])
def test_audit_clip_radius_auto(leaky, xy_audited, monkeypatch):
    # UserDPLinearRegression's clip_radius="auto": the private median of the
    # norms of the users' statistics vectors (x², x·y): 0.057 for the tiny
    # users, √2 for the large ones; the neighbour has one more large user,
    # which moves the exact median's bin.
    import skuserdp.linear_model._linear_regression as lr_module
    X, g, Xp, gp = _clip_pair()
    norms = [np.hypot(Z[:, 0] ** 2, Z[:, 0] * Z[:, 1]) for Z in (X, Xp)]
    assert _exact_median(norms[0], 0.5, 1.0) != _exact_median(norms[1], 0.5, 1.0)
    est = UserDPLinearRegression(epsilon=15.0, delta=1e-6, bounds=(-1.0, 1.0),
                                 target_bounds=(-1.0, 1.0), fit_intercept=False,
                                 alpha=0.0)
    claim = split_for_public_bounds(15.0, 1e-6, LR_CLIP_SHARE, 1, zcdp=True)[0]
    assert 0.5 < claim < 2.0
    if leaky:
        monkeypatch.setattr(lr_module, "private_quantile", _exact_median)
    res = audit_estimator(xy_audited(est), X, Xp, groups=g, groups_prime=gp,
                          statistic=lambda e: float(e.fitted_.clip_radius_),
                          epsilon_claimed=claim, delta=0.0, n_runs=1500,
                          random_state=0)
    assert res.violation == leaky, str(res)
