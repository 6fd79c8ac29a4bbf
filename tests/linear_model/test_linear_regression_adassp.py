"""UserDPLinearRegression, ``alpha="auto"``: AdaSSP's adaptive ridge (issue 15).

The smallest eigenvalue of the users' mean clipped second-moment matrix is
released at a share of the budget; the ridge is the noise bound minus its
lower confidence bound. Exact tests of the release's privacy map and of the
budget split, the released value against an independent computation, the
ridge rule, a coverage test of the confidence bound, and audits.

Issue 15 (box API): rows are clipped to the declared box and fitted in box
units ``z = x/A`` (here boxes ``(-A, A)`` with ``A = 1/√d``: the old rows,
which lay in the unit ball, become rows of norm at most ``√d``, the box row
bound, with the same geometry) and targets to ``(-1, 1)`` (unchanged). The
tests that rebuild exact plans pass the old ``clip_radius="auto"``, the
largest possible norm of a statistics vector (``_r_max``), as a number:
``"auto"`` is now a private median (tested in ``test_public_scale.py``).
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import binom

from sklearn.base import clone

from skuserdp.linear_model import UserDPLinearRegression
from skuserdp.linear_model._linear_regression import (
    EIGEN_FAILURE,
    EIGEN_SHARE,
    _vech_layout,
    plan_min_eigenvalue,
)
from skuserdp.mean import plan_clip_noise
from skuserdp.mechanisms import (
    DiscreteGaussianNoise,
    DiscreteLaplaceNoise,
    calibrate_discrete_gaussian_rho,
    round_up_fraction,
)
from skuserdp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    compose,
    gaussian_privacy,
    laplace_privacy,
    psd_min_eigenvalue_sensitivity,
    second_moment_bounds,
    split_off,
    split_zcdp,
    split_zcdp_shares,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)
from skuserdp.testing import audit_estimator

#: small synthetic fixtures: UserDPLinearRegression's accuracy warning (issue
#: 31: "may be worse than predicting the mean", from its public plan or its
#: released statistics) is expected on them; it is tested in
#: tests/linear_model/test_ssp_accuracy_check.py
pytestmark = pytest.mark.filterwarnings(
    "ignore:UserDPLinearRegression may be worse than:"
    "skuserdp.exceptions.AccuracyWarning")

U = 2.0 ** -53


def _panel(n_users, d, *, seed, rows=(1, 8), spread=0.5):
    """Unequal rows per user, rows uniform in a box inside the unit ball."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(rows[0], rows[1] + 1, n_users)
    groups = rng.permutation(np.repeat(np.arange(n_users), counts))
    X = rng.uniform(-spread, spread, size=(groups.size, d)) / math.sqrt(d)
    y = np.clip(X @ np.linspace(1.0, -0.5, d) + 0.1 + 0.05 * rng.normal(
        size=groups.size), -1.0, 1.0)
    return X, y, groups


def _half(d):
    """Half-width ``A = 1/√d`` of the declared box ``(-A, A)`` of d features."""
    return 1.0 / math.sqrt(d)


def _r_max(d, intercept):
    """Largest norm of a statistics vector in box units (rows of norm at most
    √d, augmented by 1 with an intercept; targets in [-1, 1]): the old
    ``clip_radius="auto"``, from the public shape only."""
    b2 = d + (1.0 if intercept else 0.0)
    return math.sqrt(b2 * b2 - (1.0 if intercept else 0.0) + b2)


def _est(d, cls=UserDPLinearRegression, **kw):
    """The estimator with the declared boxes and, unless given, the numeric
    clip radius ``_r_max`` (no clipping bias, no private radius release) and
    no interval releases (``ci_share=0``: their accounting is tested in
    test_linear_regression_intervals.py)."""
    kw.setdefault("clip_radius", _r_max(d, kw.get("fit_intercept", True)))
    if cls is UserDPLinearRegression:
        kw.setdefault("ci_share", 0.0)
    A = _half(d)
    return cls(bounds=(-A, A), target_bounds=(-1.0, 1.0), **kw)


def _with_shape(est, d):
    """An unfitted copy that knows its number of features (``_row_bound`` and
    ``_max_radius`` need it; ``fit`` sets it)."""
    est = clone(est)
    est.n_features_in_ = d
    return est


def _plans(est, n_users, d):
    # declared boxes: nothing spent before the plans, epsilon is the total
    p = d + (1 if est.fit_intercept else 0)
    n_stats = p * (p + 3) // 2 - (1 if est.fit_intercept else 0)
    zcdp = est.delta > 0 and est.calibration == "tight"
    assert not (est.clip_radius == "auto" and zcdp)  # a private radius
    est = _with_shape(est, d)
    radius = (est._max_radius() if est.clip_radius == "auto"
              else float(est.clip_radius))
    return est._plan(n_users, p, n_stats, radius, est.epsilon)


def _clipped_mean_gram(X, y, groups, est, norm, ball):
    """Independent reference: the users' mean clipped S_u, from scratch, in
    box units (rows clipped to the box ``(-A, A)`` and divided by A)."""
    users = np.unique(groups)
    d = X.shape[1]
    p = d + (1 if est.fit_intercept else 0)
    drop = bool(est.fit_intercept)
    rows, cols, scale = _vech_layout(p, drop)
    A = _half(d)
    total = np.zeros((p, p))
    for u in users:
        Xu = np.clip(X[groups == u], -A, A) / A
        if drop:
            Xu = np.c_[Xu, np.ones(len(Xu))]
        S = Xu.T @ Xu / len(Xu)
        yu = np.clip(y[groups == u], -1.0, 1.0)
        v = np.r_[S[rows, cols] * scale, Xu.T @ yu / len(Xu)]
        size = np.linalg.norm(v) if norm == "l2" else np.abs(v).sum()
        c = min(1.0, ball / size)
        Sc = c * S
        if drop:
            Sc[-1, -1] = 1.0
        total += Sc
    return total / len(users)


# ----------------------------------------------------- privacy map (exact)
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("clip", [math.inf, 0.3])
def test_sensitivity_and_gaussian_calibration_are_the_privacy_core_s(intercept, clip):
    n_users, p, row_bound = 700, 4, math.sqrt(2.0)
    rho = 0.0123
    plan = plan_min_eigenvalue(n_users, p, budget=ZCDP(rho), row_bound=row_bound,
                               clip_radius=clip, intercept=intercept)
    # λ_max of a clipped S_u: trace bound b², Frobenius bound √(r² + [1])
    b2 = row_bound ** 2
    op = min(b2, math.hypot(clip, 1.0 if intercept else 0.0))
    assert plan.op_bound == pytest.approx(op, rel=1e-15)
    assert plan.float_slack == b2 * 2.0 ** -20
    assert (plan.op_bound, plan.float_slack) == second_moment_bounds(
        row_bound, clip, constant_entry=intercept)
    # the sensitivity, term by term (grid units)
    L, s, g = plan.op_bound + plan.float_slack, plan.float_slack, plan.grid
    rounding = p / 2 + s / g
    solver = 4 * p * p * U * n_users * (L / g + rounding)
    expected = L / g + 2 * rounding + 2 * solver + 1.0
    assert plan.sensitivity == pytest.approx(expected, rel=1e-14)
    assert plan.sensitivity == psd_min_eigenvalue_sensitivity(
        L, p, n_users, g, float_slack=s)
    # noise σ = Δ/√(2ρ), rounded up to 2^-20 (never smaller than calibrated)
    assert isinstance(plan.noise, DiscreteGaussianNoise)
    sigma = plan.sensitivity / math.sqrt(2 * rho)
    assert plan.noise.sigma2 == round_up_fraction(sigma * sigma * (1 + 1e-12))
    assert plan.noise.std >= sigma
    assert plan.noise.std <= sigma * (1 + 1e-6)
    # the loss is the privacy map of the noise actually used: <= ρ, ~= ρ
    assert plan.loss == gaussian_privacy(plan.sensitivity, plan.noise.std)
    assert rho * (1 - 1e-6) <= plan.loss.rho <= rho


def test_laplace_calibration_for_pure_dp():
    plan = plan_min_eigenvalue(300, 3, budget=PureDP(0.07), row_bound=1.0,
                               clip_radius=2.0, intercept=False)
    assert isinstance(plan.noise, DiscreteLaplaceNoise)
    assert plan.noise.scale == round_up_fraction(plan.sensitivity / 0.07)
    assert plan.loss == laplace_privacy(plan.sensitivity, float(plan.noise.scale))
    assert 0.07 * (1 - 1e-6) <= plan.loss.epsilon <= 0.07


def test_upper_tail_of_the_noise():
    g = plan_min_eigenvalue(500, 3, budget=ZCDP(0.01), row_bound=1.0,
                            clip_radius=1.0, intercept=True)
    unit = g.grid / g.n_users
    assert g.upper_tail(0.01) == pytest.approx(
        g.noise.std * math.sqrt(2 * math.log(100)) * unit, rel=1e-15)
    assert g.noise_std == pytest.approx(g.noise.std * unit, rel=1e-15)
    lap = plan_min_eigenvalue(500, 3, budget=PureDP(0.1), row_bound=1.0,
                              clip_radius=1.0, intercept=True)
    assert lap.upper_tail(0.01) == pytest.approx(
        float(lap.noise.scale) * math.log(100) * lap.grid / lap.n_users, rel=1e-15)


def test_sensitivity_is_attained_up_to_the_lattice_terms():
    # 1 feature, no intercept: S_u = mean x² is 1x1, so λ_min of the mean is
    # the mean. All users at x = 0 vs one user at |x| = 1 moves it by
    # op_bound/n = 1/n exactly: the bound is tight but for the lattice terms.
    plan = plan_min_eigenvalue(10, 1, budget=ZCDP(0.1), row_bound=1.0,
                               clip_radius=math.inf, intercept=False)
    assert plan.op_bound == 1.0
    # extra: float slack (in λ_max and twice in the rounding), rounding of the
    # 1x1 matrices (1/2 each), of the released value (1), and the solver's
    extra = plan.sensitivity - 1.0 / plan.grid
    assert 0 < extra <= 3 * plan.float_slack / plan.grid + 2 + 1e-6


# ------------------------------------------------------------ budget split
@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (0.3, 1e-8), (4.0, 1e-5)])
def test_split_and_total_spend_zcdp(epsilon, delta):
    X, y, groups = _panel(120, 3, seed=0)
    est = _est(3, epsilon=epsilon, delta=delta, random_state=0)
    plan, eig = _plans(est, 120, 3)
    rho = zcdp_rho_for(epsilon, delta)
    eig_budget, rest = split_zcdp_shares(ZCDP(rho), [EIGEN_SHARE, 1 - EIGEN_SHARE])
    assert eig.loss.rho <= eig_budget.rho
    assert eig.loss.rho >= eig_budget.rho * (1 - 1e-6)
    assert plan.loss.rho <= rest.rho
    est.fit(X, y, groups=groups)
    assert est.privacy_loss_ == compose(eig.loss, plan.loss)
    assert est.clip_radius_ == _r_max(3, True)
    assert est.rho_ == est.privacy_loss_.rho <= rho
    assert est.delta_ == delta
    assert est.epsilon_ == zcdp_to_approx_dp(est.privacy_loss_, delta).epsilon
    # the whole budget is used (the noise parameters round up by <= 2^-20)
    assert epsilon * (1 - 1e-5) <= est.epsilon_ <= epsilon


def test_split_and_total_spend_pure():
    X, y, groups = _panel(120, 3, seed=1)
    # delta = 0: clip_radius="auto" is the largest possible norm, r_max
    est = _est(3, epsilon=2.0, delta=0.0, clip_radius="auto", random_state=0)
    plan, eig = _plans(est, 120, 3)
    step, rest = split_off(PureDP(2.0), EIGEN_SHARE)
    assert step == pytest.approx(0.2, rel=1e-15)
    assert eig.loss.epsilon <= step and plan.loss.epsilon <= rest.epsilon
    est.fit(X, y, groups=groups)
    assert est.privacy_loss_ == compose(eig.loss, plan.loss)
    assert est.clip_radius_ == est._max_radius()
    assert est.clip_radius_ == pytest.approx(_r_max(3, True), rel=1e-15)
    assert 2.0 * (1 - 1e-5) <= est.epsilon_ <= 2.0 and est.delta_ == 0.0


def test_split_with_paper_calibration():
    X, y, groups = _panel(120, 2, seed=2)
    # calibration="paper": clip_radius="auto" is the largest possible norm
    est = _est(2, epsilon=0.8, delta=1e-6, calibration="paper",
               clip_radius="auto", random_state=0)
    plan, eig = _plans(est, 120, 2)
    first, eps_rest = split_zcdp(0.8, 1e-6, EIGEN_SHARE)
    assert eig.loss.rho <= first.rho
    expected = plan_clip_noise(120, plan.n_features, budget=ApproxDP(eps_rest, 1e-6),
                               radius=_with_shape(est, 2)._max_radius(),
                               calibration="paper")
    assert plan == expected
    est.fit(X, y, groups=groups)
    assert est.clip_radius_ == est._max_radius()
    assert est.clip_radius_ == pytest.approx(_r_max(2, True), rel=1e-15)
    assert est.privacy_loss_ == compose(eig.loss, plan.loss)
    assert est.epsilon_ <= 0.8 and est.delta_ == 1e-6


def test_numeric_alpha_keeps_the_whole_budget_for_the_statistics():
    X, y, groups = _panel(100, 2, seed=3)
    est = _est(2, epsilon=1.0, delta=1e-6, alpha=0.05, random_state=0)
    plan, eig = _plans(est, 100, 2)
    assert eig is None
    assert plan == plan_clip_noise(100, plan.n_features,
                                   budget=ApproxDP(1.0, 1e-6),
                                   radius=_r_max(2, True))
    est.fit(X, y, groups=groups)
    assert est.alpha_ == 0.05 and est.min_eigenvalue_ is None
    assert est.privacy_loss_ == plan.loss


# --------------------------------------------------------- the release
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("clip", ["max", 0.6])
def test_released_min_eigenvalue_matches_an_independent_computation(intercept,
                                                                    clip):
    # A huge budget makes the noise negligible; what remains is bounded:
    # lattice rounding of the users' matrices (‖mean E_u‖ <= p/2 grid units
    # per user, i.e. p·grid/2 on the mean), the float slack, rounding the
    # eigenvalue (1/2 grid unit on the sum) and the noise, < 8σ with
    # probability > 1 − 1e-14. "max": the largest possible norm (no clip);
    # 0.6 in box units (rows scaled by √3) is the old 0.2: an active clip.
    X, y, groups = _panel(150, 3, seed=4, spread=0.9)
    est = _est(3, epsilon=1e5, delta=1e-6, fit_intercept=intercept,
               clip_radius=_r_max(3, intercept) if clip == "max" else clip,
               random_state=3)
    est.fit(X, y, groups=groups)
    plan, eig = _plans(est, 150, 3)
    M = _clipped_mean_gram(X, y, groups, est, plan.norm, plan.ball)
    exact = np.linalg.eigvalsh(M)[0]
    p = M.shape[0]
    tol = (p * eig.grid / 2 + eig.float_slack + 0.5 * eig.grid / 150
           + 8 * eig.noise_std)
    assert abs(est.min_eigenvalue_ - exact) <= tol
    assert tol < 0.05 * exact  # the test can tell a wrong matrix apart
    if clip != "max":  # the clip is active: unclipped λ_min is far away
        unclipped = _est(3, fit_intercept=intercept)
        M0 = _clipped_mean_gram(X, y, groups, unclipped, "l2", math.inf)
        assert abs(np.linalg.eigvalsh(M0)[0] - exact) > 10 * tol


def test_ridge_rule_and_bounds():
    X, y, groups = _panel(400, 3, seed=5)
    for seed in range(5):
        est = _est(3, epsilon=1.0, random_state=seed)
        est.fit(X, y, groups=groups)
        plan, eig = _plans(est, 400, 3)
        noise_bound = math.sqrt(2 * 4 * plan.noise_variance)
        lam_lower = max(0.0, est.min_eigenvalue_ - eig.upper_tail(EIGEN_FAILURE))
        assert est.alpha_ == max(0.0, noise_bound - lam_lower)
        assert 0.0 <= est.alpha_ <= noise_bound


def test_ridge_is_smaller_than_the_fixed_ridge_on_well_conditioned_data():
    # 20k users, isotropic features: λ_min of the mean S (box units: the
    # rows uniform in [-1, 1]^4, λ_min ~ 1/3) is far above the noise bound
    # σ√(2p) plus the confidence margin: the ridge is 0 unless the release's
    # noise is below −40 σ_λ (probability < e^-800). The old default,
    # σ√(2p) with the whole budget, is > 0.
    rng = np.random.default_rng(6)
    n_users, m, d = 20_000, 5, 4
    groups = np.repeat(np.arange(n_users), m)
    X = rng.uniform(-0.5, 0.5, size=(n_users * m, d))
    y = np.clip(X.sum(axis=1) * 0.3 + 0.05 * rng.normal(size=n_users * m), -1, 1)
    assert _half(d) == 0.5  # the declared box is the data's range
    est = _est(d, epsilon=1.0, random_state=0).fit(X, y, groups=groups)
    fixed = _est(d, epsilon=1.0, random_state=0)
    plan_full = _plans(fixed.set_params(alpha=1.0), n_users, d)[0]
    old_ridge = math.sqrt(2 * (d + 1) * plan_full.noise_variance)
    Xa = np.c_[X / _half(d), np.ones(len(X))]  # box units
    lam = np.linalg.eigvalsh(Xa.T @ Xa / len(X))[0]
    _, eig = _plans(est, n_users, d)
    assert lam > old_ridge * 1.2 + eig.upper_tail(EIGEN_FAILURE) + 40 * eig.noise_std
    assert est.alpha_ == 0.0 < old_ridge
    # ill-conditioned data (a duplicated feature): λ_min = 0, ridge kept
    X2 = np.c_[X[:, :2], X[:, :2]] / math.sqrt(2)
    est2 = _est(d, epsilon=1.0, random_state=0).fit(X2, y, groups=groups)
    plan2, eig2 = _plans(est2, n_users, d)
    bound2 = math.sqrt(2 * (d + 1) * plan2.noise_variance)
    assert est2.alpha_ >= bound2 - eig2.upper_tail(EIGEN_FAILURE) - 8 * eig2.noise_std
    assert est2.alpha_ > 0.5 * old_ridge


def test_lower_confidence_bound_covers():
    # P(λ̃ > λ_min) <= EIGEN_FAILURE per fit (the noise's tail bound; the
    # lattice terms are < 1e-3 of the margin). Over 300 seeds the number of
    # failures is at most Binomial(300, 0.01); the threshold is its 1 − 1e-6
    # quantile.
    X, y, groups = _panel(60, 2, seed=7, spread=0.8)
    est = _est(2, epsilon=1.0)
    plan, eig = _plans(est, 60, 2)
    exact = np.linalg.eigvalsh(_clipped_mean_gram(X, y, groups, est, plan.norm,
                                                  plan.ball))[0]
    lattice = 3 * eig.grid / 2 + eig.float_slack + eig.grid / 60
    assert lattice < 1e-3 * eig.upper_tail(EIGEN_FAILURE)
    failures = 0
    for seed in range(300):
        fitted = clone(est).set_params(random_state=seed).fit(X, y, groups=groups)
        lower = fitted.min_eigenvalue_ - eig.upper_tail(EIGEN_FAILURE)
        failures += lower > exact + lattice
    assert failures <= binom.ppf(1 - 1e-6, 300, EIGEN_FAILURE)


# ------------------------------------------------------------------ audits
class _LeakyEigenvalue(UserDPLinearRegression):
    """Positive control: the eigenvalue noise is 8x too small for its claim."""

    def _plan(self, n_users, p, n_stats, radius, epsilon):
        plan, eig = super()._plan(n_users, p, n_stats, radius, epsilon)
        noise = calibrate_discrete_gaussian_rho(eig.sensitivity / 8, eig.loss.rho)
        return plan, dataclasses.replace(eig, noise=noise)


def _eigenvalue_pair(n_users=10):
    # 1 feature, no intercept, one row per user: all users at x = 0, and the
    # neighbour with one user at x = 1 (y = 0): λ_min moves by the full 1/n.
    # The declared box of the one feature is (-1, 1): box units = raw units.
    X = np.zeros((n_users, 2))
    Xp = X.copy()
    Xp[0, 0] = 1.0
    g = np.arange(n_users)
    return X, g, Xp, g.copy()


def _eigenvalue_claim(n_users, delta):
    est = _est(1, epsilon=1.0, delta=delta, fit_intercept=False)
    _, eig = _plans(est, n_users, 1)
    return zcdp_to_approx_dp(eig.loss, delta).epsilon


@pytest.mark.slow
@pytest.mark.parametrize("cls,violation", [(UserDPLinearRegression, False),
                                           (_LeakyEigenvalue, True)])
def test_audit_min_eigenvalue_release(cls, violation, xy_audited):
    # The statistic is the eigenvalue release alone; it is audited against
    # its own claimed ε (about 0.37 of the total ε = 1 at δ = 1e-6).
    X, g, Xp, gp = _eigenvalue_pair()
    claim = _eigenvalue_claim(10, 1e-6)
    est = _est(1, cls, epsilon=1.0, delta=1e-6, fit_intercept=False)
    res = audit_estimator(xy_audited(est), X, Xp, groups=g, groups_prime=gp,
                          statistic=lambda e: float(e.fitted_.min_eigenvalue_),
                          epsilon_claimed=claim, delta=1e-6, n_runs=3000,
                          random_state=0)
    assert res.violation == violation, str(res)


@pytest.mark.slow
def test_audit_whole_fit(xy_audited):
    # The coefficient depends on both releases; audited against the total.
    X, g, Xp, gp = _eigenvalue_pair()
    X[:, 0] = 0.5
    Xp[:, 0] = 0.5
    Xp[0, 1] = 1.0  # one user's target changes
    est = _est(1, epsilon=1.0, delta=1e-6, fit_intercept=False)
    res = audit_estimator(xy_audited(est), X, Xp, groups=g, groups_prime=gp,
                          statistic=lambda e: float(e.fitted_.coef_[0]),
                          n_runs=3000, random_state=1)
    assert res.epsilon_claimed <= 1.0 and not res.violation, str(res)
