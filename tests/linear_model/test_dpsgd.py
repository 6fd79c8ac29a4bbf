"""UserDPSGDRegressor and UserDPSGDClassifier (Levy et al., Algorithms 3, 4).

Spec shared/specs/levy2021_user_level_learning.md §3.7-3.9, §6.3, §7 items 3,
4, 12, 13, 16.

* Spend: ``epsilon_``/``delta_`` never exceed the targets in any mode, and
  they are the loss of the plan rebuilt here from the public constants.
* Data independence: every plan an estimator builds (and the arguments it
  builds it from) is the same for two datasets of the same public shape,
  even with different numbers of rows per user.
* Convergence as ε → large (ε = 1e4): squared loss against sklearn's Ridge
  with sample weights 1/(n·m_u) (our objective is the mean over users of
  each user's mean loss; ½·(Ridge objective) with the same alpha), with an
  *exact* Gaussian tolerance (gradient descent on a quadratic is linear in
  the noise); Huber, logistic and multinomial against scipy on the same
  objective, with the inexact projected-gradient bound of Schmidt, Le Roux
  and Bach (2011, Prop. 1); Phased ERM phase by phase against the closed
  form of each regularised block problem.
* Empirical privacy audits on worst-case neighbours (one user's rows
  replaced by extreme rows): the core on a 1-parameter problem (fast), the
  regressor (slow), with a check that the audit flags a broken noise scale.
* API: projection, n_iter_, verbose, fitted attributes, classes, shapes,
  errors, inputs untouched, pandas, seeds, metadata routing.
"""

import dataclasses
import functools
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
import sklearn
from scipy import optimize, stats
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import GridSearchCV, GroupKFold

import skuserdp.linear_model._dpsgd as dpsgd
import skuserdp.linear_model._sgd as sgd
import skuserdp.mechanisms._poisson as poisson_mech
import skuserdp.privacy._subsampled as subsampled
from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import (
    UserDPSGDClassifier,
    UserDPSGDRegressor,
    plan_gradient_descent,
    private_gradient_descent,
)
from skuserdp.mechanisms import DiscreteGaussianNoise
from skuserdp.privacy import calibrate_poisson_lattice, lattice_contribution_radius
from skuserdp.privacy._conversion import report_spend
from skuserdp.testing import audit_estimator, worst_case_mean_neighbours


#: the few-users AccuracyWarning of clip_norm="auto" (public: n and the clip
#: release's epsilon; tested in test_dpsgd_few_users.py): the fixtures of this
#: module fit 40-100 users at epsilon <= 1, below its threshold
pytestmark = [
    # issue 31: the target-spread check of UserDPSGDRegressor warns on the
    # small fixtures of this module (tested in test_dpsgd_target_spread.py)
    pytest.mark.filterwarnings(
        "ignore:UserDPSGDRegressor may be worse than predicting the mean:"
        "skuserdp.exceptions.AccuracyWarning"),
    pytest.mark.filterwarnings(
        "ignore:.*too few for the private clip norm:"
        "skuserdp.exceptions.AccuracyWarning"),
]

ALLOWED_ATTRIBUTES = {"coef_", "intercept_", "classes_", "n_iter_", "n_users_",
                      "n_features_in_", "feature_names_in_", "privacy_loss_",
                      "epsilon_", "delta_", "rho_", "bounds_", "target_bounds_",
                      "clip_norm_", "mean_squared_row_norm_",
                      # standardize="auto": the private centres and spreads
                      "feature_center_", "feature_scale_"}

#: declared boxes under which the box-scaled rows and targets of ``_users``
#: are the data themselves (mid 0, half 1: z = x, y_z = y, coef_ = w)
BOX = dict(bounds=(-1.0, 1.0), target_bounds=(-1.0, 1.0))

#: the plan-accuracy AccuracyWarning (tested in test_plan_warnings.py)
NOISY = "noise term of this plan's public excess-risk bound"
#: for the spend, plan and API tests whose few users and small budgets make
#: some but not all of their fits warn that the plan is noisy (the plan
#: depends on the mode, and on the private releases behind the step size)
noisy_plans_expected = pytest.mark.filterwarnings(
    f"ignore:.*{NOISY}:skuserdp.exceptions.AccuracyWarning")


# ------------------------------------------------------------------ data
def _users(n=100, seed=0, d=2):
    """Heterogeneous users: even users have 1 row, odd users 9, with other
    coefficients, so the mean over users of user means and the mean over
    rows give clearly different fits. Rows have norm <= 0.9 (every
    coordinate in (-1, 1): with ``BOX`` nothing is clipped and the box-scaled
    rows are the rows) and |targets| < 1."""
    rng = np.random.default_rng(seed)
    rows = np.where(np.arange(n) % 2 == 0, 1, 9)
    groups = np.repeat(np.arange(n), rows)
    u = rng.normal(size=(groups.size, d))
    X = 0.9 * u / np.linalg.norm(u, axis=1, keepdims=True)
    X *= rng.uniform(0.5, 1.0, (groups.size, 1))
    few = (rows[groups] == 1)[:, None]
    W = np.where(few, np.r_[0.6, 0.3, [0.0] * (d - 2)],
                 np.r_[-0.6, 0.1, [0.0] * (d - 2)])
    score = np.sum(X * W, axis=1) + np.where(few[:, 0], 0.2, -0.2)
    return X, score, groups, rows, rng


def _box(Est):
    """The declared boxes of ``_users`` for a regressor or a classifier (the
    few users of these tests are far too few for ``bounds="auto"``)."""
    return dict(BOX) if Est is UserDPSGDRegressor else {"bounds": BOX["bounds"]}


def _user_weights(groups, rows):
    """Row weights 1/(n·m_u): Σ_i w_i ℓ_i is the mean over users of user means."""
    return 1.0 / (rows.size * rows[groups])


def _augment(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _row_bound(n_features=2):
    """Public ℓ2 bound of the augmented box-scaled row (z, 1): every
    coordinate of z is in [-1, 1], so ‖z‖ ≤ √n_features and b = √(p + 1)
    (computed as the estimators do)."""
    fb = math.sqrt(n_features)
    return math.sqrt(fb * fb + 1.0)


def _squared_gradient_bound(radius=5.0):
    """G = b(Rb + 1) of the squared loss (targets in box units: |y_z| ≤ 1)."""
    b = _row_bound()
    return b * (radius * b + 1.0)


def _public_eta(plan):
    """The step size of a plan built from the public constants alone.

    ``learning_rate="auto"`` with zCDP accounting now spends a private
    release on the smoothness; the exact-plan tests pass this step size
    explicitly so that the plan stays a function of public constants."""
    eta = float(plan.learning_rates[0])
    assert np.all(plan.learning_rates == eta)
    return eta


def _squared_plan(n_users, n_params, *, epsilon, delta, max_iter, alpha, radius=5.0,
                  **kw):
    """The plan of UserDPSGDRegressor (squared loss, intercept, 2 features),
    rebuilt from the documented public constants G = b(Rb + 1), H = b² +
    alpha in box units."""
    b = _row_bound()
    return plan_gradient_descent(
        n_users, n_params, epsilon=epsilon, delta=delta, n_steps=max_iter,
        aggregator="clip", gradient_bound=_squared_gradient_bound(radius),
        smoothness=b * b + alpha, radius=radius, **kw)


# ------------------------------------------------------------------- spend
MODES = [(agg, solver, cal, delta)
         for agg in ("clip", "winsorized")
         for solver in ("gd", "phased_erm")
         for cal in ("tight", "paper")
         for delta in (1e-6, 0.0)]


@noisy_plans_expected  # 27 of the 32 modes, with 64 users at epsilon 1
@pytest.mark.parametrize("aggregator,solver,calibration,delta", MODES)
@pytest.mark.parametrize("Est", [UserDPSGDRegressor, UserDPSGDClassifier])
def test_spend_never_exceeds_the_targets(Est, aggregator, solver, calibration,
                                         delta):
    X, score, groups, rows, _ = _users(64, seed=1)
    y = score if Est is UserDPSGDRegressor else (score > 0).astype(int)
    extra = {"classes": [0, 1]} if Est is UserDPSGDClassifier else {}
    est = Est(**_box(Est),
              epsilon=1.0, delta=delta, aggregator=aggregator, solver=solver,
              calibration=calibration, samples_per_user=1, max_iter=20,
              random_state=0, **extra).fit(X, y, groups=groups)
    assert est.epsilon_ <= 1.0 * (1 + 1e-9)
    assert est.delta_ <= delta * (1 + 1e-12)
    assert (est.epsilon_, est.delta_, est.rho_) == report_spend(
        est.privacy_loss_, delta)
    if solver == "gd":
        assert est.n_iter_ == 20


@functools.lru_cache(maxsize=None)
def _cached_calibration(*args, **kwargs):
    return calibrate_poisson_lattice(*args, **kwargs)


@pytest.fixture
def cached_poisson(monkeypatch):
    """Reuse the (slow, deterministic) PLD calibration across fits."""
    monkeypatch.setattr(poisson_mech, "calibrate_poisson_lattice",
                        _cached_calibration)


@pytest.mark.filterwarnings(  # its range steps are planned to fail as well
    # (issue 31; tests/linear_model/test_planner_warnings.py)
    "ignore:plan_gradient_descent:skuserdp.exceptions.AccuracyWarning")
def test_spend_with_one_parameter_and_many_paper_steps():
    # Regression test: winsorized + calibration="paper" with one parameter
    # has pure steps whose ε0 comes from Theorem 10's advanced-composition
    # split; their basic composition T·ε0 reported ε = 1.31 > 1.
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (1000, 1))
    est = UserDPSGDRegressor(epsilon=1.0, aggregator="winsorized", tau=0.5,
                             calibration="paper", fit_intercept=False,
                             max_iter=200, random_state=0)
    # this paper plan is rightly flagged (the learned boxes no longer are:
    # since issue 28 two columns from 1000 users are well within the joint
    # log2 histogram's reach)
    with pytest.warns(AccuracyWarning, match=NOISY):
        est.fit(X, X[:, 0], groups=np.arange(1000))
    assert est.epsilon_ <= 1.0


def test_poisson_sampled_fit_spends_at_most_the_target(cached_poisson):
    X, score, groups, rows, _ = _users(200, seed=2)
    # declared boxes; clip_norm="auto" is G under Poisson sampling (not zCDP)
    est = UserDPSGDRegressor(epsilon=1.0, delta=1e-6, sampling_rate=0.2,
                             max_iter=10, random_state=0, **BOX)
    with pytest.warns(AccuracyWarning, match=NOISY):  # 40 users a step
        est.fit(X, score, groups=groups)
    assert est.epsilon_ <= 1.0 and est.delta_ == 1e-6 and est.rho_ is None
    z, loss = _cached_calibration(1.0, 1e-6, 0.2, 10, n_params=3, tau=2.0)
    assert est.privacy_loss_ == loss
    assert est.n_iter_ == 10
    # the plan: the lattice release of multiplier z, discrete Gaussian
    # σ² ≥ (z·r)² + τ² in grid units (r = C/grid widened for rounding),
    # ν² = p·σ²·grid²/(qn)² with the public divisor q·n, C = G = b(Rb + 1)
    # for clip_norm="auto" (box units)
    b = _row_bound()
    G = b * (5.0 * b + 1.0)
    assert est.clip_norm_ == G
    plan = sgd.plan_gradient_descent(200, 3, epsilon=1.0, delta=1e-6, n_steps=10,
                                     aggregator="clip", gradient_bound=G,
                                     smoothness=b * b, radius=5.0,
                                     sampling_rate=0.2)
    release = plan.release
    assert release.noise_multiplier == z and plan.clip_norm == G
    assert plan.loss == loss == release.loss
    r = lattice_contribution_radius(G / release.grid, 3, "l2")
    assert release.radius_units == r and release.radius == G
    assert release.noise.sigma2 >= (Fraction(z) * Fraction(r)) ** 2 + 4
    assert release.noise.sigma2 - (Fraction(z) * Fraction(r)) ** 2 - 4 <= 2 ** -20
    assert plan.noise_variance == pytest.approx(
        3 * float(release.noise.sigma2) * (release.grid / (0.2 * 200)) ** 2,
        rel=1e-12)
    # the widening and τ² cost < 0.2 % of the continuous route's variance
    assert plan.noise_variance == pytest.approx(3 * (z * G / (0.2 * 200)) ** 2,
                                                rel=2e-3)


def test_fitted_spend_is_the_rebuilt_plan_loss():
    X, score, groups, rows, _ = _users(80, seed=3)
    # declared boxes and a numeric clip norm: the whole budget is the plan's
    G = _squared_gradient_bound()
    eta = _public_eta(_squared_plan(80, 3, epsilon=0.7, delta=1e-7, max_iter=30,
                                    alpha=0.1, clip_norm=G))
    est = UserDPSGDRegressor(standardize=False,
                             epsilon=0.7, delta=1e-7, alpha=0.1, max_iter=30,
                             clip_norm=G, learning_rate=eta, random_state=0,
                             **BOX)
    with pytest.warns(AccuracyWarning, match=NOISY):  # 80 users at epsilon 0.7
        est.fit(X, score, groups=groups)
    plan = _squared_plan(80, 3, epsilon=0.7, delta=1e-7, max_iter=30, alpha=0.1,
                         clip_norm=G, learning_rate=eta)
    assert est.privacy_loss_ == plan.loss
    assert est.clip_norm_ == G


# -------------------------------------------------------- data independence
def _plan_equal(a, b):
    """Recursive equality of plans (dataclasses, arrays, tuples, scalars)."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            _plan_equal(getattr(a, f.name), getattr(b, f.name))
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _plan_equal(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _plan_equal(x, y)
    elif callable(a):  # tau(n_users) of Phased ERM: compare on a few sizes
        for n in (2, 10, 1000):
            assert a(n) == b(n)
    else:
        assert a == b, (a, b)


def _recorded_plans(est, X, y, groups, monkeypatch):
    calls = []
    for name in ("plan_gradient_descent", "plan_phased_erm"):
        real = getattr(dpsgd, name)

        def wrapper(*args, _real=real, **kwargs):
            plan = _real(*args, **kwargs)
            calls.append((args, kwargs, plan))
            return plan

        monkeypatch.setattr(dpsgd, name, wrapper)
    clone(est).fit(X, y, groups=groups)
    monkeypatch.undo()
    assert len(calls) == 1
    return calls[0]


@pytest.mark.parametrize("boxes", [
    dict(bounds=(-2.0, 2.0), target_bounds=(-5.0, 5.0))])
# (with "auto" boxes the plan also depends on charged private releases -- the
# smoothness behind the step size --: their accounting is recomposed exactly
# in test_public_scale.py)
@pytest.mark.parametrize("aggregator", ["clip", "winsorized"])
@pytest.mark.parametrize("solver", ["gd", "phased_erm"])
@noisy_plans_expected  # 60 users at epsilon 1
def test_plans_do_not_depend_on_the_data(aggregator, solver, boxes, monkeypatch):
    # Same public shape (n users, d features, declared samples_per_user),
    # different rows, targets and even numbers of rows per user. A numeric
    # clip norm (clip_norm="auto" is a private release of the data, charged:
    # tested below).
    n, d = 60, 3
    rng = np.random.default_rng(4)
    g1 = np.repeat(np.arange(n), 3)
    g2 = np.repeat(np.arange(n), rng.integers(1, 7, n))
    X1, X2 = rng.normal(size=(g1.size, d)), rng.uniform(-2, 2, (g2.size, d))
    y1, y2 = rng.normal(size=g1.size), 5 * rng.standard_cauchy(g2.size)
    est = UserDPSGDRegressor(epsilon=1.0, aggregator=aggregator, solver=solver,
                             samples_per_user=1, max_iter=15, alpha=0.05,
                             clip_norm=1.0, random_state=0, **boxes)
    a = _recorded_plans(est, X1, y1, g1, monkeypatch)
    b = _recorded_plans(est, X2, y2, g2, monkeypatch)
    _plan_equal(a, b)
    # and for the classifier (declared classes)
    clf = UserDPSGDClassifier(epsilon=1.0, aggregator=aggregator, solver=solver,
                              samples_per_user=1, max_iter=15, classes=[0, 1, 2],
                              clip_norm=1.0, bounds=boxes["bounds"],
                              random_state=0)
    a = _recorded_plans(clf, X1, rng.integers(0, 3, g1.size), g1, monkeypatch)
    b = _recorded_plans(clf, X2, np.zeros(g2.size, int), g2, monkeypatch)
    _plan_equal(a, b)


# --------------------------------------------------- convergence, ε → large
def _gd_response(plan, A):
    """Bias and noise maps of GD on the quadratic ½θᵀAθ − bᵀθ (no projection).

    Returns (B, Cs): output − θ* = B(θ0 − θ*) + Σ_j Cs[j] ξ_j.
    """
    p = A.shape[0]
    I = np.eye(p)
    e = [I] + [np.zeros((p, p)) for _ in range(plan.n_steps)]
    out = [np.zeros((p, p)) for _ in range(plan.n_steps + 1)]
    assert plan.schedule in ("convex", "constant")
    for t in range(plan.n_steps):
        M = I - plan.learning_rates[t] * A
        e = [M @ m for m in e]
        e[1 + t] = e[1 + t] - plan.learning_rates[t] * I
        for k in range(plan.n_steps + 1):
            out[k] += plan.weights[t] * e[k]
    return out[0], out[1:]


def test_squared_loss_matches_user_weighted_ridge():
    # ε = 1e4. Objective: (1/n)Σ_u mean_j ½(x̃θ − y)² + α/2‖coef‖² =
    # ½[Σ_i w_i (y_i − x_iw − b)² + α‖w‖²] with w_i = 1/(n·m_u): half of
    # sklearn Ridge(alpha=α) with sample_weight=w, same minimiser θ*.
    # GD on this quadratic is linear: output − θ* = B(θ0 − θ*) + Σ_j C_j ξ_j
    # (ξ_j the release noise, covariance ≤ s²I) + Σ_j C_j r_j (r_j the lattice
    # rounding of step j, |r_j| ≤ grid/2 per coordinate). No clipping (C = G
    # bounds every gradient) and no projection (‖θ_t‖ ≤ 2‖θ*‖ < R for GD on a
    # quadratic from 0). Per coordinate, Bonferroni over the 3 coordinates at
    # α = 1e-3: |θ̂ − θ* − B(θ0 − θ*)| ≤ z·√Cov_ii + Σ_j|C_j|·grid/2.
    # Boxes bounds=(-1, 1) (z = x) and target_bounds=(-Y, Y): GD runs on
    # y_z = y/Y, whose minimiser is θ*/Y (the ridge is linear in y), and the
    # model is mapped back by the exact factor Y; everything above is linear,
    # so the statement holds in X units with the tolerance times Y.
    X, score, groups, rows, rng = _users(100)
    y = 0.4 + score + 0.05 * rng.normal(size=score.size)  # |y| < 2
    w = _user_weights(groups, rows)
    alpha, T, R, Y = 0.3, 300, 1.5, 2.0
    assert np.abs(y).max() < Y
    G = _squared_gradient_bound(R)
    eta = _public_eta(_squared_plan(100, 3, epsilon=1e4, delta=1e-6, max_iter=T,
                                    alpha=alpha, radius=R, clip_norm=G))
    reg = UserDPSGDRegressor(standardize=False,
                             epsilon=1e4, delta=1e-6, alpha=alpha, max_iter=T,
                             radius=R, bounds=(-1.0, 1.0), target_bounds=(-Y, Y),
                             clip_norm=G, learning_rate=eta,
                             random_state=0).fit(X, y, groups=groups)
    ridge = Ridge(alpha=alpha).fit(X, y, sample_weight=w)
    star = np.r_[ridge.coef_, ridge.intercept_]
    assert 2 * np.linalg.norm(star / Y) < R
    Xa = _augment(X)
    A = (Xa * w[:, None]).T @ Xa + alpha * np.diag([1.0, 1.0, 0.0])
    plan = _squared_plan(100, 3, epsilon=1e4, delta=1e-6, max_iter=T, alpha=alpha,
                         radius=R, clip_norm=G, learning_rate=eta)
    assert reg.privacy_loss_ == plan.loss
    B, Cs = _gd_response(plan, A)
    s2 = plan.release.noise_variance
    cov = s2 * sum(C @ C.T for C in Cs)
    rounding = sum(np.abs(C).sum(axis=1) for C in Cs) * plan.release.grid / 2
    z = stats.norm.ppf(1 - 1e-3 / 6)
    tol = Y * (z * np.sqrt(np.diag(cov)) + rounding)
    got = np.r_[reg.coef_, reg.intercept_]
    centre = star + B @ (np.zeros(3) - star)
    assert np.all(np.abs(got - centre) <= tol), (got - centre, tol)
    # the tolerance is far below what a wrong objective would give: the
    # row-weighted ridge (each row weighted 1/N) is outside it
    rowwise = Ridge(alpha=alpha).fit(X, y, sample_weight=np.full(y.size, 1 / y.size))
    assert np.any(np.abs(np.r_[rowwise.coef_, rowwise.intercept_] - centre)
                  > 5 * tol)
    # ... and so is the ridge that also penalises the intercept
    Xp = np.hstack([X, np.ones((X.shape[0], 1))])
    both = Ridge(alpha=alpha, fit_intercept=False).fit(Xp, y, sample_weight=w).coef_
    assert np.any(np.abs(both - centre) > 5 * tol)


def _huber(r, h):
    a = np.abs(r)
    return np.where(a <= h, 0.5 * r * r, h * (a - 0.5 * h))


def _objective(kind, theta, Xa, y, w, alpha, n_classes=None, huber_delta=None):
    """The estimators' objective: Σ_i w_i ℓ_i + α/2‖coef‖² (no intercept)."""
    if kind == "multinomial":
        W = theta.reshape(n_classes, -1)
        loss = -log_softmax(Xa @ W.T, axis=1)[np.arange(y.size), y]
        return np.sum(w * loss) + alpha / 2 * np.sum(W[:, :-1] ** 2)
    s = Xa @ theta
    if kind == "huber":
        loss = _huber(s - y, huber_delta)
    else:
        loss = -(y * log_expit(s) + (1 - y) * log_expit(-s))
    return np.sum(w * loss) + alpha / 2 * np.sum(theta[:-1] ** 2)


def _minimise(fun, p):
    res = optimize.minimize(fun, np.zeros(p), method="L-BFGS-B",
                            options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000})
    return res.x


def _sgd_gap_bound(plan, smoothness, dist0, n_params, alpha_fail=1e-3):
    """High-probability objective gap of projected GD with noisy gradients.

    Released gradient g_t = ∇F(x_t) + ξ_t + r_t: ξ_t fresh, mean-zero,
    s-sub-Gaussian per coordinate (discrete Gaussian on the lattice, s² =
    ν²/p) and r_t the lattice rounding, ‖r_t‖ ≤ ρ = √p·grid/2. For a step
    η < 1/H, smoothness, convexity and the projection inequality give (the
    proof of Bubeck 2015, Thm 6.3, with γ = η/(1 − ηH), plus the bias term)
        F(x_{t+1}) − F* ≤ (‖x_t − x*‖² − ‖x_{t+1} − x*‖²)/(2η) + Z_t,
        Z_t = γ/2·‖ξ_t‖² + 2Rρ − ⟨ξ_t, x_t − x*⟩      (‖x − x*‖ ≤ 2R in Θ).
    Summing over the k tail steps, bounding ‖x_s − x*‖² by the same
    inequality over the first s steps (F(x_{t+1}) ≥ F*), and using convexity
    for the tail average: F(x̄) − F* ≤ (‖x_0 − x*‖²/(2η) + Σ_{t<T} Z_t)/k.
    With probability ≥ 1 − α: Σ‖ξ_t‖² ≤ s²(N + 2√(Nu) + 2u), N = pT
    (Hsu, Kakade & Zhang 2012, Thm 1), and the martingale Σ −⟨ξ_t, x_t − x*⟩
    with (2Rs)-sub-Gaussian increments is ≤ 2Rs√(2Tu) (Azuma), u = ln(2/α).
    """
    T = plan.n_steps
    eta = float(plan.learning_rates.max())
    assert np.all(plan.learning_rates == eta) and eta * smoothness < 1
    gamma = eta / (1 - eta * smoothness)
    k = int(np.count_nonzero(plan.weights))
    R, p = plan.radius, n_params
    s2 = plan.noise_variance / p
    u = math.log(2 / alpha_fail)
    N = p * T
    squares = s2 * (N + 2 * math.sqrt(N * u) + 2 * u)
    martingale = 2 * R * math.sqrt(s2) * math.sqrt(2 * T * u)
    rounding = T * 2 * R * math.sqrt(p) * plan.release.grid / 2
    return (dist0 ** 2 / (2 * eta) + gamma / 2 * squares + rounding
            + martingale) / k


@pytest.mark.parametrize("kind", ["huber", "logistic", "multinomial"])
def test_smooth_losses_reach_the_same_objective_minimum(kind):
    X, score, groups, rows, rng = _users(100, seed=5)
    w = _user_weights(groups, rows)
    Xa = _augment(X)
    alpha, T, R = 0.02, 400, 1.0
    if kind == "huber":
        y = score + 0.05 * rng.normal(size=score.size)
        out = rng.uniform(size=y.size) < 0.1
        y[out] = np.clip(y[out] + rng.choice([-0.8, 0.8], out.sum()), -1, 1)
        b = _row_bound()
        H, G = b * b + alpha, b * min(0.1, R * b + 1.0)
        est = UserDPSGDRegressor(standardize=False,
                                 epsilon=1e4, loss="huber", huber_delta=0.1,
                                 alpha=alpha, max_iter=T, radius=R, clip_norm=G,
                                 random_state=0, **BOX)
        obj = functools.partial(_objective, "huber", huber_delta=0.1)
        p = 3
    elif kind == "logistic":
        y = (rng.uniform(size=score.size) < expit(3 * score)).astype(int)
        b = _row_bound()
        H, G, p = b * b / 4 + alpha, b, 3
        est = UserDPSGDClassifier(standardize=False,
                                  epsilon=1e4, classes=[0, 1], alpha=alpha,
                                  max_iter=T, radius=R, clip_norm=G,
                                  bounds=BOX["bounds"], random_state=0)
        obj = functools.partial(_objective, "logistic")
    else:
        logits = np.column_stack([3 * score, -3 * score, 2 * X[:, 1]])
        y = np.array([rng.choice(3, p=q) for q in softmax(logits, axis=1)])
        b = _row_bound()
        H, G, p = b * b / 2 + alpha, math.sqrt(2) * b, 9
        est = UserDPSGDClassifier(standardize=False,
                                  epsilon=1e4, classes=[0, 1, 2], alpha=alpha,
                                  max_iter=T, radius=R, clip_norm=G,
                                  bounds=BOX["bounds"], random_state=0)
        obj = functools.partial(_objective, "multinomial", n_classes=3)
    public = functools.partial(plan_gradient_descent, 100, p, epsilon=1e4, delta=1e-6,
                               n_steps=T, aggregator="clip", gradient_bound=G,
                               smoothness=H, radius=R, clip_norm=G)
    eta = _public_eta(public())
    est.set_params(learning_rate=eta).fit(X, y, groups=groups)

    def F(theta, weights=w):
        return obj(theta, Xa, y, weights, alpha)

    star = _minimise(F, p)
    if kind == "multinomial":  # the minimiser nearest θ0 = 0: centred intercepts
        star = star.reshape(3, 3)
        star[:, -1] -= star[:, -1].mean()
        star = star.ravel()
        got = np.column_stack([est.coef_, est.intercept_]).ravel()
    else:
        got = np.r_[np.ravel(est.coef_), est.intercept_]
    plan = public(learning_rate=eta)
    assert est.privacy_loss_ == plan.loss  # the constants used are these
    assert est.clip_norm_ == G
    tol = _sgd_gap_bound(plan, H, np.linalg.norm(star), p)
    gap = F(got) - F(star)
    assert -1e-10 <= gap <= tol, (gap, tol)
    # the bound has power: the row-weighted (wrong) minimiser is far outside
    wrong = _minimise(functools.partial(F, weights=np.full(y.size, 1 / y.size)), p)
    assert F(wrong) - F(star) > 2 * tol
    if kind == "logistic":
        # F is μ-strongly convex on the segment [θ̂, θ*] with
        # μ = σ'(b·max‖θ‖)·λ_min(Σ w x̃x̃ᵀ): ‖θ̂ − θ*‖ ≤ √(2·gap/μ).
        zmax = _row_bound() * max(np.linalg.norm(got), np.linalg.norm(star))
        mu = expit(zmax) * expit(-zmax) * np.linalg.eigvalsh(
            (Xa * w[:, None]).T @ Xa)[0]
        assert np.linalg.norm(got - star) <= math.sqrt(2 * tol / mu)


def _scalar_response(plan, h):
    """(a, c) of GD on a 1-D quadratic of curvature h: error = a·e0 + Σc_jξ_j."""
    T = plan.n_steps
    e = np.zeros(T + 1)
    e[0] = 1.0
    stage, out = np.zeros(T + 1), np.zeros(T + 1)
    for t in range(T):
        if t == plan.restart:
            e = stage.copy()
        eta = plan.learning_rates[t]
        e = (1 - eta * h) * e
        e[1 + t] -= eta
        if t < plan.stage_weights.shape[0]:
            stage += plan.stage_weights[t] * e
        out += plan.weights[t] * e
    return out[0], out[1:]


def _subgaussian_norm_bound(variances, u):
    """‖N‖ bound holding with probability ≥ 1 − e^−u for a sub-Gaussian vector
    with (proxy) covariance diag(variances) (Hsu, Kakade & Zhang 2012, Thm 1):
    ‖N‖² ≤ tr Σ + 2√(tr(Σ²)·u) + 2‖Σ‖u."""
    v = np.asarray(variances)
    return math.sqrt(v.sum() + 2 * math.sqrt(np.sum(v * v) * u) + 2 * v.max() * u)


def test_phased_erm_solves_each_regularised_block_problem(monkeypatch):
    # Phase t minimises F_t(θ) = (1/n_t)Σ_{u∈block t} mean_j ½(x̃θ − y)²
    # + α/2‖coef‖² + λ_t/2‖θ − θ_{t−1}‖², a quadratic with Hessian
    # M_t = Q diag(h) Qᵀ and closed-form minimiser θ_t*. Gradient descent on
    # it is linear: in eigendirection i the error is a(h_i)·(θ_{t−1} − θ_t*)_i
    # + Σ_j c_j(h_i)·(ξ_j + r_j)_i, with (a, c) the scalar response of the
    # phase's plan (step sizes, restart, weights) at curvature h_i. ξ_j is
    # s-sub-Gaussian per coordinate (discrete Gaussian, s² = ν_t²/p), r_j the
    # lattice rounding (|r_j| ≤ grid/2 per coordinate). Hence, with
    # probability ≥ 1 − α (Bonferroni over the phases), per phase:
    #   ‖out_t − θ_t* − Q diag(a) Qᵀ(θ_{t−1} − θ_t*)‖
    #       ≤ HKZ(s²·Σ_j c_j(h_i)²) + Σ_j max_i|c_j(h_i)|·√p·grid/2.
    # No projection (‖θ‖ ≪ R) and no clipping (C = G). ε = 1e4. The phases'
    # inputs and outputs are recorded; the blocks from the gradient factory.
    # With BOX the box-scaled rows and targets are X and y (|y| < 1).
    X, score, groups, rows, rng = _users(200, seed=6)
    y = score + 0.05 * rng.normal(size=score.size)
    assert np.abs(y).max() < 1
    alpha = 0.5
    blocks, phases = [], []
    real_phased = dpsgd.phased_erm

    def phased(users_fn, plan, **kw):
        def recording(users):
            blocks.append(np.array(users))
            return users_fn(users)
        phases.append(plan)
        return real_phased(recording, plan, **kw)

    real_gd = sgd.private_gradient_descent
    runs = []

    def gd(fn, plan, *, theta0, **kw):
        out = real_gd(fn, plan, theta0=theta0, **kw)
        runs.append((plan, np.array(theta0), out))
        return out

    monkeypatch.setattr(dpsgd, "phased_erm", phased)
    monkeypatch.setattr(sgd, "private_gradient_descent", gd)
    reg = UserDPSGDRegressor(standardize=False,
                             epsilon=1e4, solver="phased_erm", alpha=alpha,
                             samples_per_user=1, max_iter=200,
                             clip_norm=_squared_gradient_bound(), random_state=0,
                             **BOX).fit(X, y, groups=groups)
    (plan,) = phases
    assert reg.n_iter_ == plan.n_steps == sum(r[0].n_steps for r in runs)
    assert [len(b) for b in blocks] == list(plan.block_sizes)
    Xa = _augment(X)
    u = math.log(len(runs) / 1e-3)
    informative = 0
    for users, lam_t, (phase, anchor, out) in zip(blocks, plan.lambdas, runs):
        rows_t = np.isin(groups, users)
        w = 1.0 / (len(users) * rows[groups[rows_t]])
        Xt = Xa[rows_t]
        M = (Xt * w[:, None]).T @ Xt + alpha * np.diag([1.0, 1.0, 0.0])
        M += lam_t * np.eye(3)
        star = np.linalg.solve(M, (Xt * w[:, None]).T @ y[rows_t] + lam_t * anchor)
        h, Q = np.linalg.eigh(M)
        resp = [_scalar_response(phase, hi) for hi in h]
        bias = Q @ (np.array([a for a, _ in resp]) * (Q.T @ (anchor - star)))
        c = np.array([ci for _, ci in resp])  # (3, T)
        s2 = phase.noise_variance / 3
        noise = _subgaussian_norm_bound(s2 * np.sum(c ** 2, axis=1), u)
        rounding = np.sum(np.abs(c).max(axis=0)) * math.sqrt(3) * phase.release.grid / 2
        err = np.linalg.norm(out - star - bias)
        assert err <= noise + rounding, (len(users), err, noise, rounding)
        # informative where the anchor matters: the bound is smaller than the
        # move the anchor penalty causes (θ_t* vs the unanchored minimiser)
        free = np.linalg.lstsq(M - lam_t * np.eye(3),
                               (Xt * w[:, None]).T @ y[rows_t], rcond=None)[0]
        informative += np.linalg.norm(star - free) > 3 * (noise + rounding)
    assert informative >= len(runs) - 1
    np.testing.assert_array_equal(np.r_[reg.coef_, reg.intercept_], runs[-1][2])
    # consecutive anchors chain the phases
    for (_, _, out), (_, anchor, _) in zip(runs[:-1], runs[1:]):
        np.testing.assert_array_equal(out, anchor)


# ------------------------------------------------------------------ audits
class _CoreGD(BaseEstimator):
    """1-parameter private GD on ½(θ − x_u)², for the audit harness.

    Worst case for C = 1 and a small ball (R = 0.5): users at −1 vs one user
    at +1 have gradients θ + 1 ↦ clipped to 1 and θ − 1 ↦ clipped to −1, a
    difference of 2C, the replace-one sensitivity of the clipped sum.
    """

    def __init__(self, epsilon=1.0, delta=1e-6, n_steps=1, sampling_rate=None,
                 noise_factor=1.0, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.n_steps = n_steps
        self.sampling_rate = sampling_rate
        self.noise_factor = noise_factor
        self.random_state = random_state

    def fit(self, X, groups=None):
        U = np.asarray(X, dtype=float)[:, :1]  # one row per user here
        plan = _core_plan(U.shape[0], self.epsilon, self.delta, self.n_steps,
                          self.sampling_rate, self.noise_factor)
        self.mean_ = private_gradient_descent(lambda th: th - U, plan,
                                              theta0=np.zeros(1),
                                              random_state=self.random_state)
        self.epsilon_, self.delta_, _ = report_spend(plan.loss, self.delta)
        return self


@functools.lru_cache(maxsize=None)
def _core_plan(n, epsilon, delta, n_steps, sampling_rate, noise_factor):
    plan = plan_gradient_descent(n, 1, epsilon=epsilon, delta=delta,
                                 n_steps=n_steps, aggregator="clip",
                                 gradient_bound=1.5, smoothness=1.0, radius=0.5,
                                 clip_norm=1.0, sampling_rate=sampling_rate,
                                 learning_rate=0.5)
    if noise_factor == 1.0:
        return plan
    # a broken mechanism: less noise than planned, the same claimed loss
    noise = DiscreteGaussianNoise(plan.release.noise.sigma2 * noise_factor ** 2)
    return dataclasses.replace(plan, release=dataclasses.replace(plan.release,
                                                                 noise=noise))


@pytest.mark.parametrize("n_steps,delta", [(1, 1e-6), (3, 0.0)])
def test_audit_core_one_parameter(n_steps, delta):
    X, g, Xp, gp = worst_case_mean_neighbours(10, 1, radius=1.0)
    res = audit_estimator(_CoreGD(epsilon=1.0, delta=delta, n_steps=n_steps), X,
                          Xp, groups=g, groups_prime=gp, n_runs=2000,
                          random_state=0)
    assert res.epsilon_claimed <= 1.0 and not res.violation, str(res)


def test_audit_flags_a_core_with_too_little_noise():
    # Noise std 8x too small at ε = 1 (δ = 1e-6): the release's true ε on
    # this pair is about 8x larger, which 2000 runs expose.
    X, g, Xp, gp = worst_case_mean_neighbours(10, 1, radius=1.0)
    res = audit_estimator(_CoreGD(epsilon=1.0, noise_factor=1 / 8), X, Xp,
                          groups=g, groups_prime=gp, n_runs=2000, random_state=0)
    assert res.violation, str(res)


@pytest.mark.slow
@pytest.mark.parametrize("noise_factor,violation", [(1.0, False), (0.25, True)])
def test_audit_core_poisson_sampling(noise_factor, violation):
    # The positive control has 1/4 of the planned noise (true ε 4.6 against
    # the claimed 1.0). The projection onto the small ball hides most of it:
    # on the lattice route (issue 26) the 95 % lower bound at 20 000 runs
    # was 0.97 at this random_state (1.08-1.26 with the former float noise,
    # the same law up to the lattice), so the control runs 40 000 (1.22)
    X, g, Xp, gp = worst_case_mean_neighbours(10, 1, radius=1.0)
    est = _CoreGD(epsilon=1.0, delta=1e-5, n_steps=1, sampling_rate=0.5,
                  noise_factor=noise_factor)
    res = audit_estimator(est, X, Xp, groups=g, groups_prime=gp,
                          n_runs=20000 if noise_factor == 1.0 else 40000,
                          random_state=1)
    assert res.violation == violation, str(res)


def _regressor_pair(n_users):
    # Every user has the row x = 1 with target −1; in the neighbour one user
    # has target +1. With fit_intercept=False the user gradient at θ0 = 0 is
    # −y·x = ±1: clip_norm = 1 makes the difference exactly 2C. One step.
    # Declared boxes (-1, 1) for x and y: the box-scaled data are the data.
    X = np.column_stack([np.ones(n_users), -np.ones(n_users)])
    Xp = X.copy()
    Xp[0, 1] = 1.0
    g = np.arange(n_users)
    return X, g, Xp, g.copy()


def _too_little_noise(monkeypatch, factor):
    """Every clip-and-noise release gets noise ``factor`` times too small
    (its plan still claims the target budget)."""
    import skuserdp.mean._clip_noise as cn
    import skuserdp.mean._winsorized as wz  # the winsorized aggregator's release

    # the noise of a ``factor`` times smaller sensitivity
    for module in (cn, wz):
        real = module.calibrate_noise
        monkeypatch.setattr(module, "calibrate_noise", lambda budget, sens, real=real,
                            **kw: real(budget, sens / factor, **kw))


# One step on the regressor pair: the released gradient moves by its full
# sensitivity. With aggregator="clip", 3000 or 2000 runs per dataset (was 10000,
# without a control): the same pair, statistic and run count must catch
# noise too small by the factor below. Measured eps_lb (claimed eps = 1;
# random_state 0, 1, 2 of the audit, 0 is the test's):
# * kw0 (Gaussian, delta = 1e-6), 3000 runs: real 0.164, 0.000, 0.080;
#   control (noise 4x too small) 1.523, 1.519, 1.216. At 2500 runs the
#   control gives 1.051, 1.291, 1.240 and at 2000 runs 0.992, 1.437, 1.282
#   (not flagged at 0): too little margin, so the run count stays at 3000.
# * kw1 (Laplace, delta = 0), 2000 runs: real 0.824, 0.802, 0.785; control
#   (noise 2x too small) 1.587, 1.602, 1.610.
# The winsorized aggregator (kw2; 10000 runs before, no control) has
# power only against gross errors on this pair: with 10 users its plan is
# the box route, whose sensitivity is 3x the gradient change the pair makes;
# real 0.000, 0.000, 0.000; noise 50x too small is caught with 2000 runs
# (eps_lb 2.513, 3.083, 2.640), 20x needs 4000
# (1.03) and 4x is not caught (0.0). Fine errors of that release are caught
# by tests/mean/test_winsorized.py's d = 1 audits (same plan and apply code).
@pytest.mark.slow
@pytest.mark.parametrize("kw, factor, n_runs", [
    (dict(), 4.0, 3000),
    (dict(delta=0.0), 2.0, 2000),
    (dict(aggregator="winsorized", tau=0.5), 50.0, 2000),
])
def test_audit_regressor(kw, factor, n_runs, xy_audited, monkeypatch):
    X, g, Xp, gp = _regressor_pair(10)
    reg = UserDPSGDRegressor(epsilon=1.0, fit_intercept=False, clip_norm=1.0,
                             max_iter=1, **BOX, **kw)
    audit = functools.partial(
        audit_estimator, xy_audited(reg), X, Xp, groups=g, groups_prime=gp,
        statistic=lambda e: float(e.fitted_.coef_[0]), n_runs=n_runs,
        random_state=0)
    res = audit()
    assert not res.violation, str(res)
    if factor is not None:
        _too_little_noise(monkeypatch, factor)
        bad = audit(epsilon_claimed=reg.epsilon)
        assert bad.violation, str(bad)


# --------------------------------------------------------------------- API
def _small(n=40, seed=7, d=2):
    X, score, groups, rows, rng = _users(n, seed=seed, d=d)
    return X, score, groups


def test_projection_keeps_the_model_in_the_ball():
    # The ball acts on the model of the box-scaled data; with BOX (mid 0,
    # half 1) that model is (coef_, intercept_) itself.
    X, score, groups = _small()
    for solver in ("gd", "phased_erm"):
        reg = UserDPSGDRegressor(standardize=False,
                                 epsilon=1.0, radius=0.05, solver=solver,
                                 random_state=0, **BOX).fit(X, 3 * score,
                                                            groups=groups)
        assert np.linalg.norm(np.r_[reg.coef_, reg.intercept_]) <= 0.05 * (1 + 1e-12)
        clf = UserDPSGDClassifier(standardize=False,
                                  epsilon=1.0, radius=0.05, classes=[0, 1, 2],
                                  solver=solver, bounds=BOX["bounds"],
                                  random_state=0)
        clf.fit(X, (score > 0).astype(int) + (score > 0.3), groups=groups)
        assert np.linalg.norm(np.c_[clf.coef_, clf.intercept_]) <= 0.05 * (1 + 1e-12)


@noisy_plans_expected  # few users: the public clip rule's plan is noisy
def test_n_iter_and_verbose_lines(capsys):
    X, score, groups = _small()
    reg = UserDPSGDRegressor(**BOX,
                             standardize=False, epsilon=1.0, max_iter=7, verbose=1,
                             random_state=0).fit(X, score * 1.2345, groups=groups)
    assert reg.n_iter_ == 7
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"[UserDPSGDRegressor] step {t}/7" for t in range(1, 8)]
    G = _row_bound()
    clf = UserDPSGDClassifier(standardize=False,
                              epsilon=1.0, solver="phased_erm", max_iter=5,
                              verbose=2, classes=[0, 1], samples_per_user=2,
                              bounds=BOX["bounds"], clip_norm=G, random_state=0)
    with pytest.warns(AccuracyWarning, match=NOISY):  # 40 users, Phased ERM
        clf.fit(X, (score > 0).astype(int), groups=groups)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == clf.n_iter_
    pattern = re.compile(r"^\[PhasedERM phase \d+/\d+\] step \d+/\d+$")
    assert all(pattern.match(line) for line in lines), lines[:3]
    assert not any(re.search(r"\d\.\d", line) for line in lines)
    # n_iter_ is the plan's number of steps, a public function of the shape
    plan = dpsgd.plan_phased_erm(40, 3, epsilon=1.0, delta=1e-6,
                                 aggregator="clip", gradient_bound=G,
                                 smoothness=G * G / 4, radius=5.0,
                                 samples_per_user=2, max_iter=5, clip_norm=G)
    assert clf.n_iter_ == plan.n_steps


@noisy_plans_expected  # the winsorized Phased ERM of 40 users
def test_only_public_fitted_attributes():
    X, score, groups = _small()
    import pandas as pd
    df = pd.DataFrame(X, columns=["a", "b"])
    for est, y in [(UserDPSGDRegressor(**BOX, random_state=0), score),
                   (UserDPSGDClassifier(bounds=BOX["bounds"],
                                        classes=[0, 1], random_state=0),
                    (score > 0).astype(int)),
                   (UserDPSGDRegressor(**BOX,
                                       solver="phased_erm", aggregator="winsorized",
                                       samples_per_user=1, random_state=0), score)]:
        before = set(vars(est))
        est.fit(df, y, groups=groups)
        new = set(vars(est)) - before
        assert new <= ALLOWED_ATTRIBUTES, new - ALLOWED_ATTRIBUTES
        assert list(est.feature_names_in_) == ["a", "b"]
        assert est.n_features_in_ == 2 and est.n_users_ == 40
        assert hasattr(est, "target_bounds_") == isinstance(est, UserDPSGDRegressor)
        assert np.all(est.bounds_[0] <= est.bounds_[1]) and est.clip_norm_ > 0


def test_classes_parameter():
    X, score, groups = _small()
    y = (score > 0).astype(int)
    with pytest.raises(ValueError, match="not in the declared classes"):
        UserDPSGDClassifier(bounds=BOX["bounds"],
                            classes=[0, 2]).fit(X, y, groups=groups)
    # the label set is never read off the private y (it would publish a
    # label held by one user): classes=None refuses to fit
    with pytest.raises(ValueError, match="needs classes"):
        UserDPSGDClassifier(bounds=BOX["bounds"],
                            random_state=0).fit(X, y, groups=groups)
    clf = UserDPSGDClassifier(bounds=BOX["bounds"], classes=[1, 0],
                              random_state=0).fit(X, y, groups=groups)
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert clf.coef_.shape == (1, 2) and clf.intercept_.shape == (1,)
    # declared classes may be absent from y (the label set is public)
    clf = UserDPSGDClassifier(bounds=BOX["bounds"],
                              classes=["a", "b", "c"], random_state=0)
    clf.fit(X, np.where(y == 1, "a", "c"), groups=groups)
    assert clf.coef_.shape == (3, 2) and clf.intercept_.shape == (3,)
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert set(clf.predict(X)) <= {"a", "b", "c"}
    np.testing.assert_array_equal(clf.predict(X),
                                  clf.classes_[np.argmax(proba, axis=1)])
    binary = UserDPSGDClassifier(bounds=BOX["bounds"], classes=[0, 1], random_state=0)
    binary.fit(X, y, groups=groups)
    p = binary.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(p[:, 1], expit(binary.decision_function(X)))
    assert binary.decision_function(X).shape == (X.shape[0],)


@pytest.mark.parametrize("params,match", [
    (dict(aggregator="winsorized"), "samples_per_user"),
    (dict(aggregator="winsorized", sampling_rate=0.5, tau=0.1), "sampling_rate"),
    (dict(sampling_rate=0.5, delta=0.0), "delta > 0"),
    (dict(sampling_rate=0.5, solver="phased_erm"), "sampling_rate"),
    (dict(solver="phased_erm", learning_rate=0.1), "learning_rate='auto'"),
    (dict(max_iter=0), "max_iter"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(clip_norm=-1.0), "clip_norm"),
])
def test_bad_parameters_give_clear_errors(params, match):
    X, score, groups = _small()
    with pytest.raises(ValueError, match=match):
        UserDPSGDRegressor(**BOX, **params).fit(X, score, groups=groups)


def test_bad_inputs_give_clear_errors():
    X, score, groups = _small()
    with pytest.raises(ValueError, match="at least 2 users"):
        UserDPSGDRegressor(**BOX).fit(X, score, groups=np.zeros(len(X)))
    with pytest.raises(ValueError, match="at least 4 users"):
        UserDPSGDRegressor(**BOX, solver="phased_erm").fit(
            X[:3], score[:3], groups=[0, 1, 2])
    with pytest.raises(ValueError, match="at least 2 classes"):
        UserDPSGDClassifier(bounds=BOX["bounds"],
                            classes=[1]).fit(X, np.ones(len(X), int),
                                             groups=groups)
    with pytest.raises(ValueError, match="[Uu]nknown label type|continuous"):
        UserDPSGDClassifier(bounds=BOX["bounds"], classes=[0, 1]).fit(
            X, score, groups=groups)
    with pytest.raises(ValueError, match="NaN"):
        UserDPSGDRegressor(**BOX).fit(np.where(X > 0.8, np.nan, X), score,
                                      groups=groups)
    import scipy.sparse as sp
    with pytest.raises(ValueError, match="sparse"):
        UserDPSGDRegressor(**BOX).fit(sp.csr_matrix(X), score, groups=groups)


@noisy_plans_expected  # 40 users at epsilon 1 (the plan of seed 4 is not)
def test_inputs_are_not_modified_and_seeds_reproduce():
    X, score, groups = _small()
    X[0] = [3.0, 4.0]  # outside the box: clipped in a copy
    y = score * 5  # outside target_bounds: clipped in a copy
    copies = X.copy(), y.copy(), groups.copy()
    a = UserDPSGDRegressor(random_state=3, **BOX).fit(X, y, groups=groups)
    for orig, cp in zip((X, y, groups), copies):
        np.testing.assert_array_equal(orig, cp)
    b = UserDPSGDRegressor(random_state=3, **BOX).fit(X, y, groups=groups)
    c = UserDPSGDRegressor(random_state=4, **BOX).fit(X, y, groups=groups)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    assert not np.array_equal(a.coef_, c.coef_)
    # the phased solver too (partition and noise from the seed)
    kw = dict(solver="phased_erm", random_state=5)
    first = UserDPSGDRegressor(**BOX, **kw).fit(X, y, groups=groups).coef_
    np.testing.assert_array_equal(
        first, UserDPSGDRegressor(**BOX, **kw).fit(X, y, groups=groups).coef_)


def test_pandas_input_matches_numpy():
    import pandas as pd
    X, score, groups = _small()
    df = pd.DataFrame(X, columns=["u", "v"])
    a = UserDPSGDRegressor(**BOX, random_state=0).fit(df, pd.Series(score),
                                                      groups=pd.Series(groups))
    b = UserDPSGDRegressor(**BOX, random_state=0).fit(X, score, groups=groups)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.predict(df), b.predict(X))
    with pytest.warns(UserWarning, match="feature names"):
        a.predict(X)


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _routing_data():
    X, score, groups, rows, rng = _users(60, seed=8)
    return X, score + 0.05 * rng.normal(size=score.size), groups


@noisy_plans_expected  # few users: the public clip rule's plan is noisy
def test_grid_search_routes_groups_to_fit(routing):
    # With a scorer that does not call estimator.score, GroupKFold splits by
    # user and every fit gets the training users' ids (n_users_ = 40, not the
    # number of rows). Each split score is recomputed by hand.
    X, y, groups = _routing_data()
    cv = GroupKFold(n_splits=3)
    est = UserDPSGDRegressor(**BOX, random_state=0, max_iter=50)
    gs = GridSearchCV(est, {"epsilon": [0.5, 1e3]}, cv=cv,
                      scoring="neg_mean_squared_error").fit(X, y, groups=groups)
    assert gs.best_estimator_.n_users_ == 60
    assert gs.best_params_ == {"epsilon": 1e3}
    for i, eps in enumerate([0.5, 1e3]):
        for k, (train, test) in enumerate(cv.split(X, y, groups=groups)):
            fitted = clone(est).set_params(epsilon=eps).fit(
                X[train], y[train], groups=groups[train])
            assert fitted.n_users_ == 40
            got = gs.cv_results_[f"split{k}_test_score"][i]
            assert got == pytest.approx(
                -mean_squared_error(y[test], fitted.predict(X[test])), rel=1e-12)


@pytest.mark.parametrize("Est", [UserDPSGDRegressor, UserDPSGDClassifier])
def test_grid_search_with_the_default_score(routing, Est):
    # Regression test: UserLevelMixin requests groups for score; the
    # sklearn RegressorMixin/ClassifierMixin.score took none, so with routing
    # on every default score raised TypeError inside GridSearchCV (NaN).
    # Declared boxes: "auto" with 40 users warns (AccuracyWarning is a
    # UserWarning, made an error below to catch "Scoring failed").
    X, y, groups = _routing_data()
    extra = dict(BOX)
    if Est is UserDPSGDClassifier:
        y, extra = (y > 0).astype(int), {"classes": [0, 1], "bounds": BOX["bounds"]}
    gs = GridSearchCV(Est(random_state=0, max_iter=20, **extra),
                      {"epsilon": [0.5, 1e3]}, cv=GroupKFold(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # "Scoring failed"
        # 40 training users at epsilon 0.5 rightly warn that the plan is noisy
        warnings.filterwarnings("ignore", f".*{NOISY}", AccuracyWarning)
        # ... and that they are too few for the private clip norm
        warnings.filterwarnings("ignore", ".*too few for the private clip norm",
                                AccuracyWarning)
        # ... and that their target's spread is not resolved (issue 31)
        warnings.filterwarnings("ignore", "UserDPSGDRegressor may be worse than",
                                AccuracyWarning)
        gs.fit(X, y, groups=groups)
    assert np.isfinite(gs.cv_results_["mean_test_score"]).all()


def test_poisson_calibration_never_evaluates_absurd_multipliers(monkeypatch):
    # Regression test: when multiplier 1 already met the target (large ε or
    # small q·T) the bisection evaluated the PLD at multiplier 1e-3, which
    # needs ~38 GiB (numpy MemoryError; e.g. ε = 2, q = 0.01, T = 100).
    # The search logic is tested on a cheap monotone surrogate of the PLD's
    # ε(z) (ε = c/z², exact inverse known) with a guard refusing z < 0.05.
    calls = []

    def surrogate(z, q, steps, delta):
        if z < 0.05:
            raise MemoryError(f"PLD at multiplier {z} would need tens of GiB")
        calls.append(z)
        return subsampled.ApproxDP(1.1 / z ** 2, delta)

    monkeypatch.setattr(subsampled, "poisson_gaussian_epsilon", surrogate)
    for target in (0.3, 2.0, 50.0, 1e4):
        calls.clear()
        z, loss = subsampled.calibrate_poisson_gaussian(target, 1e-6, 0.01, 100)
        assert loss.epsilon <= target and min(calls) >= 0.05
        exact = math.sqrt(1.1 / target)
        if exact >= 0.25:  # inside the searched range: within rtol = 1e-3
            assert exact <= z <= exact * (1 + 2e-3)
        else:  # below it: a valid, larger multiplier
            assert z >= exact
