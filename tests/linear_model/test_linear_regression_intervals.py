"""conf_int / bse_ of UserDPLinearRegression: the user-level cluster-robust
interval (spec intervals_and_weights.md §2.2, §2.5, §2.8).

* the privacy map of the meat release (sensitivity √2·C²/n, its lattice
  widening, the noise calibration, the composed loss within the budget);
* the noise law: redrawing only the meat's noise on fixed scores, and only
  the fit's noise on fixed data against the bootstrap's noise part;
* accounting: post-processing only (works after the data are overwritten,
  one release for every alpha), ci_share=0, DataFrame rows;
* a coverage smoke test against the per-user-mean-weighted population
  coefficients computed from the generating law (slow);
* a privacy audit of the meat release with a positive control (slow).
"""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
from skuserdp.linear_model._linear_regression import sufficient_statistics
from skuserdp.linear_model._regression_intervals import (
    BOOTSTRAP_MAX_PARAMS,
    MEAT_FLOAT_SLACK,
    N_BOOTSTRAP,
    QUANTILE_SHARE,
    meat_matrix,
    noise_covariance,
    plan_meat,
    release_meat,
    score_bound,
    split_interval_budget,
    user_scores,
)
from skuserdp.mean import plan_clip_noise
from skuserdp.mechanisms import calibrate_noise, encode_contributions, exact_sum
from skuserdp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    compose,
    rank_one_psd_sum_sensitivity,
    split_off,
    split_zcdp,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)
from skuserdp.testing import epsilon_lower_bound

#: small synthetic fixtures: UserDPLinearRegression's accuracy warning (issue
#: 31: "may be worse than predicting the mean", from its public plan or its
#: released statistics) is expected on them; it is tested in
#: tests/linear_model/test_ssp_accuracy_check.py
pytestmark = pytest.mark.filterwarnings(
    "ignore:UserDPLinearRegression may be worse than:"
    "skuserdp.exceptions.AccuracyWarning")

# ------------------------------------------------------------ generating law
#: coefficients of the linear part, the intercept, the quadratic term (a
#: misspecification, so the user weighting matters) and the user effect
BETA0 = np.array([0.8, -0.4, 0.3])
C0, GAMMA, USER_EFFECT = 0.1, 0.5, 0.3
#: direction of the users' mean shift, which grows with their row count
DIRECTION = np.array([1.0, -1.0, 0.5])
M_MAX = 20
#: declared target box: |y| <= 0.8+0.4+0.3 (x in [-1, 1]^3) + 0.1 + 0.5 + 0.3
#: + 0.5·√3 < 3.5
Y_BOX = 3.5


def _shift(m):
    return 0.3 * ((np.asarray(m, dtype=float) - 1) / (M_MAX - 1))[..., None] * DIRECTION


def generate(n_users, rng):
    """Users with 1..20 rows (uniform), rows ``x = μ(m) + 0.7·U`` (U uniform
    on the cube, so x stays in [-1, 1]^3), targets with a quadratic term, a
    user effect and heteroskedastic row errors (all bounded)."""
    m = rng.integers(1, M_MAX + 1, size=n_users)
    groups = np.repeat(np.arange(n_users), m)
    N = int(m.sum())
    X = _shift(m)[groups] + 0.7 * rng.uniform(-1, 1, size=(N, 3))
    u = rng.uniform(-USER_EFFECT, USER_EFFECT, size=n_users)[groups]
    s = 0.2 + 0.3 * np.abs(X[:, 1])
    y = (X @ BETA0 + C0 + GAMMA * X[:, 0] ** 2 + u
         + s * rng.uniform(-math.sqrt(3), math.sqrt(3), size=N))
    return X, y, groups


def population_coefficients():
    """β solving E[A_i]β = E[b_i] (A_i, b_i a user's mean x̃x̃ᵀ, x̃y) from the
    law: given m the rows are i.i.d., so E[A_i | m] = E[x̃x̃ᵀ | m], and m is
    uniform on 1..20. Moments of x = μ + 0.7U: E x = μ, E xxᵀ = μμᵀ + vI,
    E[x_1³] = μ_1³ + 3μ_1v, E[x_k x_1²] = μ_k(μ_1² + v), v = 0.49/3."""
    v = 0.49 / 3
    EA, Eb = np.zeros((4, 4)), np.zeros(4)
    for m in range(1, M_MAX + 1):
        mu = _shift(m)
        Exx = np.outer(mu, mu) + v * np.eye(3)
        Ex1sq = mu[0] ** 2 + v
        Exk_x1sq = mu * Ex1sq
        Exk_x1sq[0] = mu[0] ** 3 + 3 * mu[0] * v
        A = np.block([[Exx, mu[:, None]], [mu[None, :], np.ones((1, 1))]])
        b = np.r_[Exx @ BETA0 + C0 * mu + GAMMA * Exk_x1sq,
                  mu @ BETA0 + C0 + GAMMA * Ex1sq]
        EA += A / M_MAX
        Eb += b / M_MAX
    return np.linalg.solve(EA, Eb)  # coef_ then intercept_


def r_max(d):
    """Largest norm of a user's statistics vector in box units (nothing is
    clipped at this radius)."""
    b2 = d + 1.0
    return math.sqrt(b2 * b2 - 1.0 + b2)


def _est(**kw):
    kw.setdefault("bounds", (-1.0, 1.0))
    kw.setdefault("target_bounds", (-Y_BOX, Y_BOX))
    kw.setdefault("clip_radius", r_max(3))
    return UserDPLinearRegression(**kw)


@pytest.fixture(scope="module")
def panel():
    return generate(600, np.random.default_rng(0))


# ------------------------------------------------------------ privacy map
def test_rank_one_sensitivity_is_attained_and_never_exceeded():
    rng = np.random.default_rng(1)
    C, p = 0.7, 3
    rows, cols = np.triu_indices(p)
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))

    def vech(g):
        return np.outer(g, g)[rows, cols] * scale

    worst = 0.0
    for _ in range(2000):
        g, h = rng.normal(size=(2, p))
        g *= C * rng.uniform() ** 0.1 / np.linalg.norm(g)
        h *= C * rng.uniform() ** 0.1 / np.linalg.norm(h)
        worst = max(worst, np.linalg.norm(vech(g) - vech(h)))
        # the Frobenius norm is the l2 norm of the released vector
        assert np.linalg.norm(vech(g)) == pytest.approx(np.linalg.norm(g) ** 2)
    assert worst <= math.sqrt(2) * C * C * (1 + 1e-12)
    g = np.array([C, 0, 0])
    h = np.array([0, C, 0])  # orthogonal, both at the radius: √2·C²
    assert np.linalg.norm(vech(g) - vech(h)) == pytest.approx(math.sqrt(2) * C * C)
    # on the lattice: the integer sums of two neighbours differ by at most Δ
    grid = 2.0 ** -12
    F = C * C
    delta = rank_one_psd_sum_sensitivity(F, p, grid)
    assert delta == pytest.approx(math.sqrt(2) * F / grid + math.sqrt(6))
    others = rng.normal(size=(20, p)) * 0.1
    Ka = exact_sum(encode_contributions(np.array([vech(r) for r in np.vstack(
        [others, g])]), center=0.0, radius=F, grid=grid))
    Kb = exact_sum(encode_contributions(np.array([vech(r) for r in np.vstack(
        [others, h])]), center=0.0, radius=F, grid=grid))
    assert np.linalg.norm((Ka - Kb).astype(float)) <= delta


@pytest.mark.parametrize("p", [2, 4, 7])
def test_meat_plan_zcdp(p):
    budget = ZCDP(0.003)
    plan = plan_meat(2500, p, budget=budget, radius=0.4)
    F = 0.4 * 0.4 * (1 + MEAT_FLOAT_SLACK)
    slack = MEAT_FLOAT_SLACK * F
    rel = plan.release
    assert plan.frobenius_bound == F and plan.float_slack == slack
    assert rel.norm == "l2" and rel.ball == F + slack
    assert rel.n_features == p * (p + 1) // 2
    assert rel.sensitivity == rank_one_psd_sum_sensitivity(F, p, rel.grid,
                                                           float_slack=slack)
    # √2·C²/n in mean units, up to the lattice widening
    assert rel.sensitivity * rel.grid / 2500 == pytest.approx(
        math.sqrt(2) * 0.16 / 2500, rel=2e-3)
    assert rel.noise == calibrate_noise(budget, rel.sensitivity)
    assert plan.loss == rel.noise.privacy(rel.sensitivity)
    assert budget.rho * (1 - 1e-6) <= plan.loss.rho <= budget.rho
    # the noise standard deviation of a coordinate of the mean
    sd = math.sqrt(rel.noise.sigma2) * rel.grid / 2500
    assert plan.noise_variance == pytest.approx(sd ** 2, rel=1e-12)
    assert sd == pytest.approx(rel.sensitivity * rel.grid / 2500
                               / math.sqrt(2 * budget.rho), rel=1e-5)


def test_meat_plan_pure():
    budget = PureDP(0.2)
    plan = plan_meat(2500, 4, budget=budget, radius=0.4)
    F = 0.4 * 0.4 * (1 + MEAT_FLOAT_SLACK)
    expected = plan_clip_noise(2500, 10, budget=budget,
                               radius=F * (1 + MEAT_FLOAT_SLACK))
    assert plan.release == expected
    # the l1 ball of radius (F + s)·√k holds every contribution
    assert plan.release.norm == "l1"
    assert plan.release.ball == pytest.approx(
        (F + MEAT_FLOAT_SLACK * F) * math.sqrt(10))
    assert plan.loss.epsilon <= 0.2


def test_score_bound_holds_for_extreme_users():
    rng = np.random.default_rng(2)
    d = 3
    b2 = d + 1.0
    w = rng.normal(size=d + 1)
    radius = 1.3
    op_bound = min(b2, math.hypot(radius, 1.0))
    cap = score_bound(radius, math.sqrt(b2), op_bound, np.linalg.norm(w),
                      intercept=True)
    worst = 0.0
    for _ in range(300):
        m = rng.integers(1, 4)
        X = rng.choice([-1.0, 1.0], size=(m, d)) * rng.uniform(0.5, 1, size=(m, 1))
        y = rng.choice([-1.0, 1.0], size=m)
        V = sufficient_statistics(np.c_[X, np.ones(m)], y, np.zeros(m, int), 1,
                                  drop_last_diagonal=True)
        g = user_scores(V, w, clip_radius=radius, norm="l2", drop_last_diagonal=True)
        worst = max(worst, np.linalg.norm(g))
    assert worst <= cap


def test_user_scores_match_a_direct_computation(panel):
    X, y, groups = panel
    n = groups.max() + 1
    Xa = np.c_[X, np.ones(len(X))]
    V = sufficient_statistics(Xa, y / Y_BOX, groups, n, drop_last_diagonal=True)
    w = np.array([0.2, -0.1, 0.05, 0.03])
    radius = 1.0
    G = user_scores(V, w, clip_radius=radius, norm="l2", drop_last_diagonal=True)
    for u in (0, 7, 123):
        Xu, yu = Xa[groups == u], y[groups == u] / Y_BOX
        A = Xu.T @ Xu / len(Xu)
        b = Xu.T @ yu / len(Xu)
        c = min(1.0, radius / np.linalg.norm(V[u]))
        Ac = c * A
        Ac[-1, -1] = 1.0  # the intercept's constant entry is not clipped
        np.testing.assert_allclose(G[u], c * b - Ac @ w, atol=1e-12)


def _fit_losses(est, n_users, p):
    """The planned losses of a fit with declared boxes, clip radius and a
    numeric alpha: the statistics release from the rest of the budget, the
    interval's quantile and meat budget."""
    k = p * (p + 3) // 2 - 1
    if est.delta > 0 and est.calibration == "tight":
        ci, rest_eps = split_zcdp(est.epsilon, est.delta, est.ci_share)
        plan = plan_clip_noise(n_users, k, budget=ApproxDP(rest_eps, est.delta),
                               radius=est.clip_radius)
    else:
        step, rest = split_off(PureDP(est.epsilon), est.ci_share)
        ci = PureDP(step)
        plan = plan_clip_noise(n_users, k, budget=rest, radius=est.clip_radius)
    _, quantile_loss, meat_budget = split_interval_budget(ci)
    return ci, plan, quantile_loss, meat_budget


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (4.0, 1e-8), (2.0, 0.0)])
def test_fit_spend_is_the_composition_with_the_meat(panel, epsilon, delta):
    X, y, groups = panel
    est = _est(epsilon=epsilon, delta=delta, alpha=0.0, random_state=0)
    est.fit(X, y, groups=groups)
    ci, plan, quantile_loss, meat_budget = _fit_losses(est, 600, 4)
    if delta > 0:
        assert isinstance(est.privacy_loss_, ZCDP)
        # the quantile is bounded range at QUANTILE_SHARE of the ci's ρ
        assert quantile_loss.rho == pytest.approx(QUANTILE_SHARE * ci.rho, rel=1e-12)
        total = compose(plan.loss, quantile_loss, meat_budget)
        assert est.privacy_loss_.rho <= total.rho
        assert est.privacy_loss_.rho == pytest.approx(total.rho, rel=1e-6)
        assert est.rho_ <= zcdp_rho_for(epsilon, delta)
        assert est.epsilon_ == zcdp_to_approx_dp(est.privacy_loss_, delta).epsilon
    else:
        assert isinstance(est.privacy_loss_, PureDP)
        assert quantile_loss.epsilon == pytest.approx(QUANTILE_SHARE * ci.epsilon)
        total = compose(plan.loss, quantile_loss, meat_budget)
        assert est.privacy_loss_.epsilon <= total.epsilon
    assert epsilon * (1 - 1e-5) <= est.epsilon_ <= epsilon
    assert est.delta_ <= delta


def test_paper_calibration_and_auto_alpha_stay_within_the_budget(panel):
    X, y, groups = panel
    for kw in (dict(calibration="paper"), dict(alpha="auto"),
               dict(alpha="auto", delta=0.0), dict(ci_share="auto"),
               dict(clip_radius="auto", delta=0.0)):  # pure: r_max, no caveat
        est = _est(epsilon=1.0, random_state=1, **kw).fit(X, y, groups=groups)
        assert est.epsilon_ <= 1.0 and est.delta_ <= est.delta
        assert np.all(np.isfinite(est.conf_int()))


@pytest.mark.parametrize("kw,what", [
    (dict(clip_radius="auto"), "clip_radius='auto'"),
    (dict(bounds="auto"), "bounds learned"),
    (dict(target_bounds="auto"), "target_bounds learned"),
])
def test_clipped_estimands_warn_at_every_conf_int(kw, what):
    X, y, groups = generate(3000, np.random.default_rng(8))
    est = _est(epsilon=2.0, random_state=2, **kw).fit(X, y, groups=groups)
    for _ in range(2):
        with pytest.warns(AccuracyWarning, match="clipped problem") as rec:
            est.conf_int()
        assert what in str(rec[0].message)


# ------------------------------------------------------------ noise laws
def test_meat_noise_law_on_fixed_scores():
    rng = np.random.default_rng(3)
    n, p = 200, 3
    G = rng.normal(size=(n, p)) * 0.2
    plan = plan_meat(n, p, budget=ZCDP(0.002), radius=0.5)
    rows, cols = np.triu_indices(p)
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    norms = np.linalg.norm(G, axis=1)
    Gc = G * np.minimum(1.0, 0.5 / norms)[:, None]
    exact = (Gc[:, rows] * Gc[:, cols] * scale).mean(axis=0)
    R = 1000
    seeds = np.random.SeedSequence(11).spawn(R)
    draws = np.array([release_meat(G, plan, random_state=s) for s in seeds])
    err = draws - exact  # lattice rounding of the contributions: < 1e-6 here
    sd = math.sqrt(plan.noise_variance)
    # pooled variance over the k coordinates: chi-square with k·R df
    k = err.shape[1]
    ratio = (err ** 2).sum() / (k * R * sd ** 2)
    lo, hi = stats.chi2.ppf([1e-4, 1 - 1e-4], k * R) / (k * R)
    assert lo <= ratio <= hi, ratio
    # unbiased (each coordinate within 4 standard errors)
    assert np.all(np.abs(err.mean(axis=0)) <= 4 * sd / math.sqrt(R))
    # the projection onto the PSD cone is post-processing of the release
    S = meat_matrix(draws[0])
    assert np.all(np.linalg.eigvalsh(S) >= -1e-15)


@pytest.mark.slow
def test_bootstrap_noise_matches_the_fits_noise_on_fixed_data():
    # fixed data, the fit's noise redrawn 300 times: the spread of coef_ is
    # the privacy noise (no sampling); the bootstrap's noise part must match
    # it (chi-square tolerance on a standard deviation from 300 fits, plus
    # the bootstrap's own approximation)
    X, y, groups = generate(2000, np.random.default_rng(4))
    est = _est(epsilon=4.0, alpha=0.0)
    coefs, noise = [], []
    for s in range(300):
        fit = est.set_params(random_state=s).fit(X, y, groups=groups)
        coefs.append(np.r_[fit.coef_, fit.intercept_])
        noise.append(fit._interval_state.noise_std)
    emp = np.std(coefs, axis=0, ddof=1)
    planned = np.sqrt(np.mean(np.square(noise), axis=0))
    lo, hi = np.sqrt(stats.chi2.ppf([1e-3, 1 - 1e-3], 299) / 299)
    ratio = emp / planned
    assert np.all(ratio >= lo * 0.9) and np.all(ratio <= hi * 1.1), ratio


# ------------------------------------------------------------ accounting
def test_conf_int_is_post_processing_of_released_values(panel):
    X, y, groups = panel
    X, y = X.copy(), y.copy()
    est = _est(epsilon=2.0, random_state=5).fit(X, y, groups=groups)
    ci05 = est.conf_int(0.05)
    ci10 = est.conf_int(0.1)
    X[:] = np.nan  # the data are gone
    y[:] = np.nan
    del X, y
    np.testing.assert_array_equal(est.conf_int(0.05), ci05)  # no fresh draws
    np.testing.assert_array_equal(est.conf_int(0.1), ci10)
    assert ci05.shape == (4, 2)
    # one release serves every alpha: the 90% interval inside the 95% one
    assert np.all(ci05[:, 0] <= ci10[:, 0]) and np.all(ci10[:, 1] <= ci05[:, 1])
    assert np.all(ci10[:, 0] < ci10[:, 1])
    theta = np.r_[est.coef_, est.intercept_]
    assert np.all((ci05[:, 0] <= theta) & (theta <= ci05[:, 1]))
    state = est._interval_state
    assert state.draws.shape == (N_BOOTSTRAP, 4) and state.method == "bootstrap"
    np.testing.assert_array_equal(state.estimate, theta)
    np.testing.assert_allclose(est.bse_, state.draws.std(axis=0, ddof=1))
    with pytest.raises(ValueError, match="alpha"):
        est.conf_int(1.5)


def test_no_released_meat_or_scores_in_fitted_attributes(panel):
    X, y, groups = panel
    est = _est(epsilon=2.0, random_state=5).fit(X, y, groups=groups)
    allowed = {"coef_", "intercept_", "alpha_", "min_eigenvalue_", "n_users_",
               "n_features_in_", "bounds_", "target_bounds_", "clip_radius_",
               "privacy_loss_", "epsilon_", "delta_", "rho_", "_interval_state"}
    assert set(k for k in vars(est) if k.endswith("_") or k.startswith("_")) - {
        "_no_interval_reason"} <= allowed


def test_ci_share_zero_releases_nothing(panel):
    X, y, groups = panel
    est = _est(epsilon=2.0, ci_share=0.0, alpha=0.0, random_state=0)
    est.fit(X, y, groups=groups)
    with pytest.raises(AttributeError, match="ci_share=0"):
        est.conf_int()
    with pytest.raises(AttributeError, match="ci_share=0"):
        est.bse_
    assert not hasattr(est, "bse_")
    # the whole budget went to the statistics
    k = 4 * 7 // 2 - 1
    plan = plan_clip_noise(600, k, budget=ApproxDP(2.0, est.delta), radius=r_max(3))
    assert est.privacy_loss_ == plan.loss
    # refit with a share: the interval is back
    est.set_params(ci_share=0.05).fit(X, y, groups=groups)
    assert est.conf_int().shape == (4, 2)


def test_other_linear_models_say_why_they_have_no_interval(panel):
    X, y, groups = panel
    est = UserDPSGDRegressor(epsilon=1.0, bounds=(-1, 1), target_bounds=(-Y_BOX, Y_BOX),
                             max_iter=2, random_state=0)
    est.fit(X, y, groups=groups)
    # (DP-SGD has one, opt-in: interval="groups")
    with pytest.raises(AttributeError, match="interval='groups'"):
        est.conf_int()


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dataframe_rows_are_the_coefficients_then_the_intercept(panel, fit_intercept):
    X, y, groups = panel
    df = pd.DataFrame(X, columns=["age", "income", "score"])
    est = _est(epsilon=2.0, fit_intercept=fit_intercept, random_state=0)
    est.fit(df, y, groups=groups)
    ci = est.conf_int(0.05)
    assert isinstance(ci, pd.DataFrame)
    assert list(ci.columns) == ["lower", "upper"]
    names = ["age", "income", "score"] + (["intercept"] if fit_intercept else [])
    assert list(ci.index) == names
    theta = np.r_[est.coef_, [est.intercept_] if fit_intercept else []]
    assert np.all((ci["lower"] <= theta) & (theta <= ci["upper"]))
    assert est.bse_.shape == (len(names),)
    # an array fit gives an array with the same rows
    arr = _est(epsilon=2.0, fit_intercept=fit_intercept, random_state=0).fit(
        X, y, groups=groups).conf_int(0.05)
    np.testing.assert_allclose(arr, ci.to_numpy())


# ------------------------------------------------------------ coverage
@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_coverage_smoke(epsilon):
    truth = population_coefficients()
    R, n = 300, 2000
    covered = np.zeros((R, 4), dtype=bool)
    for rep in range(R):
        X, y, groups = generate(n, np.random.default_rng(10_000 + rep))
        est = _est(epsilon=epsilon, random_state=rep).fit(X, y, groups=groups)
        ci = est.conf_int(0.05)
        covered[rep] = (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    rate = covered.mean(axis=0)
    band = 3 * math.sqrt(0.95 * 0.05 / R)
    assert np.all(np.abs(rate - 0.95) <= band), rate


def test_population_coefficients_match_a_large_sample():
    # the law's truth against a big non-private per-user-mean-weighted fit
    X, y, groups = generate(50_000, np.random.default_rng(6))
    n = groups.max() + 1
    Xa = np.c_[X, np.ones(len(X))]
    w = 1.0 / np.bincount(groups)[groups]
    beta = np.linalg.solve((Xa * w[:, None]).T @ Xa, (Xa * (w * y)[:, None]).sum(0))
    np.testing.assert_allclose(beta, population_coefficients(), atol=0.01)
    assert n == 50_000


# ------------------------------------------------------------ audit
def _corner_scores(n_users=40):
    """Scores of two neighbouring panels: the same 39 users, and user 0 with
    200 rows at the box corner (1, 1, 1), y = 1, or 2 rows at the opposite
    corner, y = −1 (box units, an intercept)."""
    rng = np.random.default_rng(7)
    w = np.array([0.1, -0.1, 0.05, 0.0])  # public: released before the meat
    m_others = rng.integers(1, 5, size=n_users - 1)
    X_others = rng.uniform(-0.3, 0.3, size=(m_others.sum(), 3))
    y_others = rng.uniform(-0.3, 0.3, size=m_others.sum())

    def scores(first_rows, corner, target):
        groups = np.repeat(np.arange(n_users), np.r_[first_rows, m_others])
        X = np.r_[np.full((first_rows, 3), corner), X_others]
        y = np.r_[np.full(first_rows, target), y_others]
        V = sufficient_statistics(np.c_[X, np.ones(len(X))], y, groups, n_users,
                                  drop_last_diagonal=True)
        return user_scores(V, w, clip_radius=r_max(3), norm="l2",
                           drop_last_diagonal=True)

    Ga = scores(200, 1.0, 1.0)
    Gb = scores(2, -1.0, -1.0)
    np.testing.assert_array_equal(Ga[1:], Gb[1:])
    return Ga, Gb


def _audit_samples(plan, Ga, Gb, runs):
    rows, cols = np.triu_indices(Ga.shape[1])
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))

    def contribution(g):
        g = g * min(1.0, plan.radius / np.linalg.norm(g))
        return g[rows] * g[cols] * scale

    direction = contribution(Ga[0]) - contribution(Gb[0])
    direction /= np.linalg.norm(direction)
    seeds = np.random.SeedSequence(12).spawn(2 * runs)
    a = [release_meat(Ga, plan, random_state=s) @ direction for s in seeds[:runs]]
    b = [release_meat(Gb, plan, random_state=s) @ direction for s in seeds[runs:]]
    return np.array(a), np.array(b)


@pytest.mark.slow
def test_meat_release_audit_with_positive_control():
    Ga, Gb = _corner_scores()
    # both corner users' scores exceed the radius: clipped to its boundary
    radius = 1.0
    assert np.linalg.norm(Ga[0]) > radius and np.linalg.norm(Gb[0]) > radius
    delta = 1e-3
    rho = zcdp_rho_for(1.0, delta)
    plan = plan_meat(40, 4, budget=ZCDP(rho), radius=radius)
    claimed = zcdp_to_approx_dp(plan.loss, delta).epsilon
    assert claimed <= 1.0
    a, b = _audit_samples(plan, Ga, Gb, 4000)
    res = epsilon_lower_bound(a, b, delta=delta, epsilon_claimed=claimed)
    assert not res.violation, str(res)
    # positive control: the meat released with its sensitivity understated 4x
    weak = calibrate_noise(ZCDP(rho), plan.release.sensitivity / 4)
    bad = dataclasses.replace(plan, release=dataclasses.replace(plan.release,
                                                                noise=weak))
    a, b = _audit_samples(bad, Ga, Gb, 4000)
    res = epsilon_lower_bound(a, b, delta=delta, epsilon_claimed=claimed)
    assert res.violation, str(res)


# ------------------------------------------------------------ Wald fast path
@pytest.mark.parametrize("drop", [True, False])
def test_noise_covariance_matches_the_encoding(drop):
    # simulate the released coordinates' noise exactly as they are encoded
    # (upper triangle, off-diagonal entries times √2, the intercept's
    # constant entry not released) and compare Cov(e_b − E β)
    rng = np.random.default_rng(9)
    p, sigma2, R = 4, 0.3, 200_000
    beta = np.array([0.7, -1.2, 0.4, 0.9])
    rows, cols = np.triu_indices(p)
    if drop:
        keep = ~((rows == p - 1) & (cols == p - 1))
        rows, cols = rows[keep], cols[keep]
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    e = rng.normal(0.0, math.sqrt(sigma2), size=(R, rows.size + p))
    E = np.zeros((R, p, p))
    E[:, rows, cols] = e[:, :rows.size] / scale
    E[:, cols, rows] = e[:, :rows.size] / scale
    err = e[:, rows.size:] - E @ beta
    got = np.cov(err, rowvar=False)
    want = noise_covariance(beta, sigma2, drop_last_diagonal=drop)
    se = np.sqrt((np.outer(np.diag(want), np.diag(want)) + want ** 2) / R)
    assert np.all(np.abs(got - want) <= 5 * se)


def test_many_parameters_use_the_wald_fast_path():
    rng = np.random.default_rng(10)
    n, d = 3000, BOOTSTRAP_MAX_PARAMS  # p = d + 1 > BOOTSTRAP_MAX_PARAMS
    m = rng.integers(1, 4, size=n)
    groups = np.repeat(np.arange(n), m)
    X = rng.uniform(-1, 1, size=(groups.size, d))
    y = np.clip(X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=groups.size), -3, 3)
    b2 = d + 1.0
    est = UserDPLinearRegression(epsilon=4.0, bounds=(-1, 1), target_bounds=(-3, 3),
                                 clip_radius=math.sqrt(b2 * b2 - 1 + b2),
                                 random_state=0).fit(X, y, groups=groups)
    state = est._interval_state
    assert state.method == "wald" and state.draws is None
    ci = est.conf_int(0.05)
    assert ci.shape == (d + 1, 2)
    np.testing.assert_allclose(ci.mean(axis=1), np.r_[est.coef_, est.intercept_])
    np.testing.assert_allclose(est.bse_, np.hypot(state.sampling_std, state.noise_std))
    assert np.all(state.noise_std > 0) and np.all(state.sampling_std > 0)
