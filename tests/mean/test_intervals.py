"""User-level confidence intervals of the mean estimators.

The releases of ``skuserdp.mean._intervals`` (private scale, private mean of
normalised squared deviations, private count of clipped users), their
sensitivity (``squared_deviation_ball``) and the per-column scale
(``top_bin_edges``); the estimators' accounting and ``conf_int``; coverage;
and (slow) privacy audits with positive controls.
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

import skuserdp.mean._clip_noise as cn
import skuserdp.mean._intervals as mi
import skuserdp.mechanisms._top_bin as tb
from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    ColumnScaledMeanEstimator,
    DiscreteDistributionEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
)
from skuserdp.mean._base import LEARNED_BOX_CAVEAT, UserLevelMeanEstimator, _compose_any
from skuserdp.mechanisms import calibrate_noise, lattice_sensitivity
from skuserdp.mechanisms._lattice import lattice_radius
from skuserdp.mechanisms._top_bin import top_bin_edges
from skuserdp.privacy import (
    PureDP,
    ZCDP,
    compose,
    replace_one_count_sensitivity,
    replace_one_histogram_sensitivity,
    squared_deviation_ball,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)
from skuserdp.testing import epsilon_lower_bound


# ---------------------------------------------------------------------------
# squared_deviation_ball: every normalised squared deviation lies in it
# ---------------------------------------------------------------------------

def _norm(x, norm):
    return np.abs(x).sum(axis=-1) if norm == "l1" else np.sqrt((x * x).sum(axis=-1))


def _box_q(rng, d, k):
    """q of users clipped to [-1, 1]^d around a θ in the box (s = 1 + |θ|),
    with the box's corners and faces among the points."""
    v = rng.uniform(-1, 1, (k, d))
    theta = rng.uniform(-1, 1, (k, d))
    v[: k // 4] = rng.choice([-1.0, 1.0], (k // 4, d))  # corners
    theta[: k // 8] = -np.sign(v[: k // 8])  # the opposite corner
    theta[k // 8: k // 4] = rng.choice([-1.0, 1.0], (k // 4 - k // 8, d))
    return ((v - theta) / (1 + np.abs(theta))) ** 2


def _ball_q(rng, d, k, clip_norm):
    """q of users clipped to a ball (c, r) around a θ anywhere (s = r + ‖θ − c‖)."""
    c = rng.normal(0, 3, d)
    r = rng.uniform(0.1, 5)
    u = rng.normal(size=(k, d))
    u /= _norm(u, clip_norm)[:, None]
    v = c + r * u * rng.uniform(0, 1, (k, 1)) ** (1 / d)
    v[: k // 4] = c + r * u[: k // 4]  # on the sphere
    theta = c + rng.normal(0, 2, (k, d))
    theta[: k // 8] = c - r * u[: k // 8]  # the antipode
    theta[k // 8: k // 4] = c  # the centre
    s = r + _norm(theta - c, clip_norm)[:, None]
    return ((v - theta) / s) ** 2


@pytest.mark.parametrize("d", [1, 2, 3, 4, 9])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_box_deviations_lie_in_the_ball(d, norm):
    rng = np.random.default_rng(d)
    q = _box_q(rng, d, 4000)
    center, radius = squared_deviation_ball(d, "box", norm)
    assert np.all(q >= 0)
    assert _norm(q - center, norm).max() <= radius * (1 + 1e-12)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 9])
@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("clip_norm", ["l1", "l2"])
def test_ball_deviations_lie_in_the_ball(d, norm, clip_norm):
    # users clipped radially in ℓ2 or ℓ1 (pure DP): ‖·‖₂ ≤ ‖·‖₁, so s bounds both
    rng = np.random.default_rng(10 + d)
    q = _ball_q(rng, d, 4000, clip_norm)
    center, radius = squared_deviation_ball(d, "ball", norm)
    assert _norm(q - center, norm).max() <= radius * (1 + 1e-12)


@pytest.mark.parametrize("geometry", ["box", "ball"])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_radius_is_tight_in_one_dimension(geometry, norm):
    # q = 0 (v = θ) and q = 1 (v = 1, θ = 0 in the box; v on the sphere,
    # θ = c) are both reached: the ball [0, 1] is the smallest
    center, radius = squared_deviation_ball(1, geometry, norm)
    assert (center, radius) == (0.5, 0.5)
    if geometry == "box":
        q = ((np.array([1.0, 0.3]) - np.array([0.0, 0.3])) / 1.0) ** 2
    else:
        c, r = 2.0, 0.75
        q = ((np.array([c + r, c]) - c) / r) ** 2
    np.testing.assert_allclose(np.sort(q), [0.0, 1.0])
    assert np.ptp(q) == 2 * radius


def test_ball_geometry_checks():
    with pytest.raises(ValueError, match="geometry"):
        squared_deviation_ball(2, "sphere", "l2")
    with pytest.raises(ValueError, match="norm"):
        squared_deviation_ball(2, "box", "linf")


# ---------------------------------------------------------------------------
# top_bin_edges: exact privacy map and positive cases
# ---------------------------------------------------------------------------

def _spy_noise(monkeypatch):
    seen = []
    real = tb.add_noise

    def spy(counts, noise, seed_sequence, **kw):
        seen.append(noise)
        return real(counts, noise, seed_sequence, **kw)

    monkeypatch.setattr(tb, "add_noise", spy)
    return seen


@pytest.mark.parametrize("budget", [PureDP(0.3), PureDP(2.0), ZCDP(0.01), ZCDP(1.5)])
@pytest.mark.parametrize("d", [1, 3])
def test_top_bin_edges_privacy_map_is_exact(budget, d, monkeypatch):
    seen = _spy_noise(monkeypatch)
    top_bin_edges(np.ones((50, d)), budget, base=0.25, n_bins=6, random_state=0)
    (noise,) = seen
    pure = isinstance(budget, PureDP)
    sens = replace_one_histogram_sensitivity(d, "l1" if pure else "l2")
    assert sens == (2 * d if pure else math.sqrt(2 * d))
    assert noise == calibrate_noise(budget, sens)
    spent = noise.privacy(sens)
    assert type(spent) is type(budget)
    if pure:
        assert budget.epsilon * (1 - 1e-5) <= spent.epsilon <= budget.epsilon
    else:
        assert budget.rho * (1 - 1e-5) <= spent.rho <= budget.rho


@pytest.mark.parametrize("budget", [PureDP(1e4), ZCDP(1e6)])
def test_top_bin_edges_positive_cases(budget):
    rng = np.random.default_rng(0)
    base, n_bins = 2.0 ** -6, 8
    v = np.column_stack([rng.uniform(0, 0.3, 3000), rng.uniform(0, 0.9, 3000),
                         np.full(3000, base / 2), np.full(3000, 1e9)])
    edges = top_bin_edges(v, budget, base=base, n_bins=n_bins, random_state=1)
    # the highest non-empty cell of each column (its upper edge), nan when
    # only cell 0 is filled, the last cell (edge base·2^(n_bins - 1)) for
    # values above the top edge
    np.testing.assert_array_equal(edges, [0.5, 1.0, np.nan, base * 2.0 ** (n_bins - 1)])
    np.testing.assert_array_equal(v[:, 2], base / 2)  # not modified


@pytest.mark.parametrize("budget", [PureDP(0.5), ZCDP(0.005)])
def test_top_bin_edges_ignore_a_lone_user(budget):
    # one user far above the others does not pass (the threshold)
    v = np.full((400, 2), 0.1)
    v[0] = 100.0
    edges = top_bin_edges(v, budget, base=2.0 ** -8, n_bins=12, random_state=3)
    np.testing.assert_array_equal(edges, [0.125, 0.125])


# ---------------------------------------------------------------------------
# plan_mean_interval: exact privacy map
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [PureDP(0.05), PureDP(1.0), ZCDP(1e-4), ZCDP(0.3)])
@pytest.mark.parametrize("d", [1, 2, 7])
@pytest.mark.parametrize("count", [False, True])
def test_plan_privacy_map_is_exact(budget, d, count):
    n = 1000
    plan = mi.plan_mean_interval(n, d, budget, geometry="ball" if count else "box",
                                 count=count)
    pure = isinstance(budget, PureDP)
    norm = "l1" if pure else "l2"
    parts = []
    rest = budget
    if count:
        cbudget, rest = mi._split(budget, mi.COUNT_SHARE)
        csens = replace_one_count_sensitivity(1, norm)
        assert plan.count == calibrate_noise(cbudget, csens)
        parts.append(plan.count.privacy(csens))
    else:
        assert plan.count is None
    sbudget, vbudget = mi._split(rest, mi.SCALE_SHARE)
    assert plan.scale == sbudget
    parts.append(sbudget)
    # the variance release: the ball of squared_deviation_ball, its sum's
    # sensitivity the lattice-widened 2·radius, in grid units
    center, radius = squared_deviation_ball(d, "box", norm)
    var = plan.variance
    assert (plan.center, var.ball, var.norm) == (center, pytest.approx(radius), norm)
    assert var.sensitivity == 2 * lattice_radius(var.ball, var.grid, d, norm)
    assert var.sensitivity == lattice_sensitivity(var.ball, var.grid, d, norm)
    widening = d if pure else math.sqrt(d)
    assert var.sensitivity == pytest.approx(2 * radius / var.grid + widening)
    assert var.noise == calibrate_noise(vbudget, var.sensitivity)
    assert var.loss == var.noise.privacy(var.sensitivity)
    parts.append(var.loss)
    assert plan.loss == compose(*parts)
    if pure:
        assert budget.epsilon * (1 - 1e-4) <= plan.loss.epsilon <= budget.epsilon
    else:
        assert budget.rho * (1 - 1e-4) <= plan.loss.rho <= budget.rho
    assert plan.geometry == ("ball" if count else "box")


# ---------------------------------------------------------------------------
# noise law of the variance release
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [ZCDP(0.002), PureDP(0.2)])
def test_variance_release_noise_law(budget, monkeypatch):
    # fixed data and a fixed scale (R = 1): only the variance release's noise
    # is redrawn; its empirical variance over N draws matches the plan's
    # noise_variance (chi-square with N - 1 degrees of freedom, two-sided
    # 1e-3), and its mean the exact mean of the q's
    rng = np.random.default_rng(0)
    n, d, N = 400, 2, 2000
    W = rng.uniform(-1.5, 1.5, (n, d))
    theta = np.array([0.2, -0.4])
    plan = mi.plan_mean_interval(n, d, budget)
    monkeypatch.setattr(mi, "top_bin_edges", lambda *a, **k: np.ones(d))
    out = []
    real = mi.clip_noise_from_plan

    def spy(Q, vplan, **kw):
        qbar = real(Q, vplan, **kw)
        out.append((Q.mean(axis=0), qbar))
        return qbar

    monkeypatch.setattr(mi, "clip_noise_from_plan", spy)
    for seed in np.random.SeedSequence(7).spawn(N):
        mi.mean_interval_from_plan(W, theta, plan, noise_std=np.full(d, 0.01),
                                   noise_law="gaussian", random_state=seed)
    exact = out[0][0]
    np.testing.assert_allclose(exact, (((np.clip(W, -1, 1) - theta)
                                        / (1 + np.abs(theta))) ** 2).mean(axis=0))
    err = np.array([q for _, q in out]) - exact  # (N, d)
    var = plan.variance.noise_variance
    lo, hi = stats.chi2.ppf([5e-4, 1 - 5e-4], N - 1) / (N - 1)
    for j in range(d):
        ratio = err[:, j].var(ddof=1) / var
        assert lo <= ratio <= hi, (err[:, j].std(), math.sqrt(var))
        assert abs(err[:, j].mean()) <= 4 * math.sqrt(var / N)


# ---------------------------------------------------------------------------
# estimators: accounting, conf_int, bse_, refusals
# ---------------------------------------------------------------------------

BOX = (np.full(2, -5.0), np.full(2, 5.0))

#: (name, class, parameters): every estimator (and route) offering intervals
OFFERING = [
    ("column-scaled-pure", ColumnScaledMeanEstimator, dict(delta=0.0)),
    ("column-scaled-gaussian", ColumnScaledMeanEstimator, dict(noise="gaussian")),
    ("clip-noise", ClipNoiseMeanEstimator, {}),
    ("clip-noise-pure", ClipNoiseMeanEstimator, dict(delta=0.0)),
    ("coinpress", CoinPressMeanEstimator, {}),
    ("user-mean", UserMeanEstimator, {}),
]


def _data(n=2000, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(0.5, 1.0, (n, d)), np.arange(n)


@pytest.fixture(scope="module")
def data():
    return _data()


def _spy_release(monkeypatch):
    """Record the estimate's loss, the interval's loss and both seeds of
    every interval release."""
    rec = []
    real = UserLevelMeanEstimator._interval_release

    def spy(self, W, mean_w, budget, ci, loss):
        state, ci_loss = real(self, W, mean_w, budget, ci, loss)
        rec.append(dict(loss=loss, ci_loss=ci_loss, fit_seed=budget.random_state,
                        ci_seed=ci[1], ci_budget=ci[0]))
        return state, ci_loss

    monkeypatch.setattr(UserLevelMeanEstimator, "_interval_release", spy)
    return rec


def _amount(loss):
    return loss.epsilon if isinstance(loss, PureDP) else loss.rho


@pytest.mark.parametrize("name, cls, kw", OFFERING, ids=[o[0] for o in OFFERING])
def test_privacy_loss_includes_the_interval(name, cls, kw, data, monkeypatch):
    X, g = data
    rec = _spy_release(monkeypatch)
    share = 0.2
    est = cls(1.0, bounds=BOX, ci_share=share, random_state=0, **kw).fit(X, groups=g)
    (r,) = rec
    delta = kw.get("delta", 1e-6)
    # the fit's loss is the estimate's composed with the interval's releases
    assert est.privacy_loss_ == _compose_any(r["loss"], r["ci_loss"], delta)
    assert type(r["ci_loss"]) is type(r["loss"]) is type(est.privacy_loss_)
    assert est.epsilon_ <= 1.0 * (1 + 1e-12)
    whole = 1.0 if isinstance(est.privacy_loss_, PureDP) else zcdp_rho_for(1.0, delta)
    # the interval spends at most its share, and nearly all of it
    assert share * whole * (1 - 1e-3) <= _amount(r["ci_loss"]) <= share * whole
    assert _amount(est.privacy_loss_) <= whole * (1 + 1e-12)
    # with ci_share=0 the estimate's own plan gets the whole budget
    rec.clear()
    est0 = cls(1.0, bounds=BOX, ci_share=0.0, random_state=0, **kw).fit(X, groups=g)
    assert rec == []
    assert _amount(est0.privacy_loss_) > _amount(r["loss"]) * (1 + 0.5 * share)
    assert _amount(est0.privacy_loss_) == pytest.approx(whole, rel=1e-3)
    assert _amount(est.privacy_loss_) == pytest.approx(whole, rel=1e-3)


@pytest.mark.parametrize("name, cls, kw", OFFERING, ids=[o[0] for o in OFFERING])
def test_conf_int_is_post_processing(name, cls, kw):
    X, g = _data()
    est = cls(1.0, bounds=BOX, random_state=0, **kw).fit(X, groups=g)
    ci = est.conf_int()
    assert ci.shape == (2, 2) and est.bse_.shape == (2,)
    assert np.all(est.bse_ > 0)
    assert np.all(ci[:, 0] < est.mean_) and np.all(est.mean_ < ci[:, 1])
    # the data are not used again: overwritten, then deleted
    X[:] = 1e6
    del X
    np.testing.assert_array_equal(est.conf_int(), ci)
    np.testing.assert_array_equal(est.conf_int(0.05), ci)  # same releases
    narrow = est.conf_int(0.1)
    assert np.all(ci[:, 0] < narrow[:, 0]) and np.all(narrow[:, 1] < ci[:, 1])
    wide = est.conf_int(0.01)
    assert np.all(wide[:, 0] < ci[:, 0]) and np.all(ci[:, 1] < wide[:, 1])


@pytest.mark.parametrize("name, cls, kw", OFFERING, ids=[o[0] for o in OFFERING])
def test_ci_share_zero_has_no_interval(name, cls, kw, data):
    X, g = data
    est = cls(1.0, bounds=BOX, ci_share=0.0, random_state=0, **kw).fit(X, groups=g)
    with pytest.raises(AttributeError, match="ci_share=0"):
        est.conf_int()
    with pytest.raises(AttributeError, match="ci_share=0"):
        est.bse_
    assert not hasattr(est, "bse_")


@pytest.mark.parametrize("name, cls, kw", OFFERING, ids=[o[0] for o in OFFERING])
def test_noise_is_never_shared(name, cls, kw, data, monkeypatch):
    X, g = data
    rec = _spy_release(monkeypatch)
    a = cls(1.0, bounds=BOX, random_state=0, **kw).fit(X, groups=g)
    b = cls(1.0, bounds=BOX, random_state=1, **kw).fit(X, groups=g)
    a2 = cls(1.0, bounds=BOX, random_state=0, **kw).fit(X, groups=g)
    np.testing.assert_array_equal(a.conf_int(), a2.conf_int())  # reproducible
    assert not np.any(a.conf_int() == b.conf_int())
    assert not np.any(a.bse_ == b.bse_)
    # the estimate and the interval draw from two children of the fit's seed
    fit_seed, ci_seed = rec[0]["fit_seed"], rec[0]["ci_seed"]
    assert fit_seed.entropy == ci_seed.entropy
    assert fit_seed.spawn_key != ci_seed.spawn_key
    assert {fit_seed.spawn_key[-1:], ci_seed.spawn_key[-1:]} == {(0,), (1,)}
    # so the estimate with an interval is not the one without (whose noise
    # is drawn from the fit's seed itself)
    c = cls(1.0, bounds=BOX, ci_share=0.0, random_state=0, **kw).fit(X, groups=g)
    assert not np.any(a.mean_ == c.mean_)


@pytest.mark.parametrize("name, cls, kw", OFFERING, ids=[o[0] for o in OFFERING])
def test_dataframe_output(name, cls, kw):
    pd = pytest.importorskip("pandas")
    X, g = _data()
    df = pd.DataFrame(X, columns=["income", "age"])
    est = cls(1.0, bounds=BOX, random_state=0, **kw).fit(df, groups=g)
    ci = est.conf_int(0.1)
    assert isinstance(ci, pd.DataFrame)
    assert list(ci.index) == ["income", "age"]
    assert list(ci.columns) == ["lower", "upper"]
    plain = cls(1.0, bounds=BOX, random_state=0, **kw).fit(X, groups=g)
    np.testing.assert_array_equal(ci.to_numpy(), plain.conf_int(0.1))


@pytest.mark.parametrize("name, cls, kw", OFFERING, ids=[o[0] for o in OFFERING])
def test_learned_box_warns(name, cls, kw, data):
    X, g = data
    est = cls(1.0, bounds="auto", random_state=0, **kw).fit(X, groups=g)
    with pytest.warns(AccuracyWarning, match="learned privately") as rec:
        ci = est.conf_int()
    assert LEARNED_BOX_CAVEAT in str(rec[0].message)
    assert "bounds_" in str(rec[0].message)
    assert np.all(ci[:, 0] < ci[:, 1])
    assert rec[0].filename == __file__  # at the caller
    with pytest.warns(AccuracyWarning):  # every time
        est.conf_int(0.1)
    # a declared box: no warning (all warnings are errors here)
    cls(1.0, bounds=BOX, random_state=0, **kw).fit(X, groups=g).conf_int()


def test_user_mean_estimator_delegates(data):
    X, g = data
    est = UserMeanEstimator(1.0, bounds=BOX, random_state=0).fit(X, groups=g)
    np.testing.assert_array_equal(est.conf_int(), est.estimator_.conf_int())
    np.testing.assert_array_equal(est.bse_, est.estimator_.bse_)
    assert est.estimator_.privacy_loss_ == est.privacy_loss_


def test_coinpress_allows_for_the_clipping_bias(data):
    X, g = data
    est = CoinPressMeanEstimator(1.0, bounds=BOX, random_state=0).fit(X, groups=g)
    state = est._interval_state
    # the last ball is smaller than the box: a private count bounds the bias
    assert state.bias_level == mi.BIAS_LEVEL
    assert np.all(state.bias_bound > 0)
    with pytest.raises(ValueError, match="clipping bias"):
        est.conf_int(mi.BIAS_LEVEL)
    # the declared-box estimators need no count (their clipping holds the box)
    for cls in (ColumnScaledMeanEstimator, ClipNoiseMeanEstimator):
        st = cls(1.0, bounds=BOX, random_state=0).fit(X, groups=g)._interval_state
        assert st.bias_level == 0.0 and np.all(st.bias_bound == 0)


def _refusers():
    rng = np.random.default_rng(0)
    n, m, d = 102, 20, 2
    Xf = rng.normal(size=(n * m, d))
    gf = np.repeat(np.arange(n), m)
    Xt = rng.standard_t(5, size=(3000 * 8, 1))
    gt = np.repeat(np.arange(3000), 8)
    labels = rng.choice(["x", "y"], size=(2000 * 5, 1))
    gl = np.repeat(np.arange(2000), 5)
    return [
        ("winsorized", WinsorizedMeanEstimator(tau="bounded", bounds=(-5.0, 5.0),
                                               samples_per_user=1, random_state=0),
         *_data(), "Winsorized"),
        ("few-users", FewUsersBallEstimator(epsilon=1.0, delta=1e-5,
                                            radius=math.sqrt(d), samples_per_user=m,
                                            random_state=0),
         Xf, gf, "few-users"),
        ("threaded", ThreadedClipNoiseEstimator(epsilon=1.0, delta=0.0, moment_order=4,
                                                moment_bound=10.0, samples_per_user=8,
                                                bounds=(-10.0, 10.0), random_state=0),
         Xt, gt, "threaded"),
        ("discrete", DiscreteDistributionEstimator(classes=["x", "y"],
                                                   samples_per_user=5, random_state=0),
         labels, gl, "simplex"),
    ]


@pytest.mark.parametrize("case", range(4), ids=["winsorized", "few-users", "threaded",
                                                "discrete"])
def test_refusing_estimators_say_why(case):
    _, est, X, g, reason = _refusers()[case]
    est.fit(X, groups=g)
    with pytest.raises(AttributeError, match=reason) as info:
        est.conf_int()
    assert "Confidence intervals" in str(info.value)
    with pytest.raises(AttributeError, match=reason):
        est.bse_
    assert not hasattr(est, "ci_share")  # no budget is set aside for nothing


# ---------------------------------------------------------------------------
# coverage
# ---------------------------------------------------------------------------

def _coverage(cls, kind, R, n=3000, d=2, m=2, epsilon=1.0):
    """Share of R replications (fresh users, fresh noise; fixed seeds) whose
    95 % interval holds the truth, per feature."""
    g = np.repeat(np.arange(n), m)
    hits = np.zeros(d)
    for r in range(R):
        rng = np.random.default_rng([2024, r])
        if kind == "gaussian":
            # user effects N(0, 1) plus row noise: the users' means are
            # gaussian; the box is ±6.5 sd of them around their mean (the
            # clipping moves the estimand by less than 1e-9)
            truth = np.array([0.5, -1.0])
            box = (np.full(d, -6.0), np.full(d, 6.0))
            X = (np.repeat(truth + rng.standard_normal((n, d)), m, axis=0)
                 + rng.normal(0.0, 0.5, (n * m, d)))
        else:
            # skewed: lognormal rows, truth e^{1/2}; the box [0, 60] holds
            # all but P(row > 60) ≈ 2e-5 of them (bias below 1e-4, against a
            # standard error of about 0.03)
            truth = np.full(d, math.exp(0.5))
            box = (np.zeros(d), np.full(d, 60.0))
            X = rng.lognormal(0.0, 1.0, (n * m, d))
        ci = cls(epsilon, bounds=box, random_state=r).fit(X, groups=g).conf_int(0.05)
        hits += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    return hits / R


def _band(R, level=0.95):
    # the band of the spec (intervals_and_weights.md §2.8): ±3 binomial
    # standard deviations around the nominal level, sqrt(0.95·0.05/R)
    # (R = 300: ±0.0377; R = 1000: ±0.0207); a calibrated method falls
    # outside with probability about 0.003 per feature
    half = 3.0 * math.sqrt(level * (1 - level) / R)
    return level - half, level + half


def test_coverage_smoke():
    # default UserMeanEstimator (the per-column Wald interval), gaussian
    # users' means, n = 3000, d = 2, ε = 1, declared box, R = 300
    lo, hi = _band(300)
    cover = _coverage(UserMeanEstimator, "gaussian", 300)
    assert np.all((lo <= cover) & (cover <= hi)), (cover, lo, hi)


@pytest.mark.slow
@pytest.mark.parametrize("cls", [UserMeanEstimator, ClipNoiseMeanEstimator,
                                 CoinPressMeanEstimator])
def test_coverage_skewed(cls):
    # lognormal (skewed) users' means, R = 1000. CoinPress allows for the
    # clipping bias of its last ball from a private count (bias-aware
    # critical value): valid but wide on a wide box, so only its lower edge
    # is checked
    lo, hi = _band(1000)
    cover = _coverage(cls, "lognormal", 1000)
    assert np.all(lo <= cover), (cover, lo, hi)
    if cls is not CoinPressMeanEstimator:
        assert np.all(cover <= hi), (cover, lo, hi)


# ---------------------------------------------------------------------------
# privacy audit of the interval's releases, with positive controls
# ---------------------------------------------------------------------------

AUDIT_RUNS = 5_000
AUDIT_THETA = np.array([0.9])  # the released estimate, fixed (adaptive composition)
AUDIT_DELTA = 1e-3  # the δ at which a zCDP claim is converted and audited


def _audit_users(changed):
    # 25 users at each end of the box [-1, 1] (so the scale's top cell
    # passes: R = 1) and one user who moves between the two corners: seen
    # from θ = 0.9 its normalised squared deviation is 1 at -1 and
    # (0.1/1.9)² at +1, so the sum of the q's moves by almost 2·radius
    return np.array([-1.0] * 25 + [1.0] * 25 + [changed])[:, None]


def _audit_samples(W, plan, seed, monkeypatch, release=None):
    """The released mean squared deviation of ``AUDIT_RUNS`` runs of
    mean_interval_from_plan on ``W`` (a released value: auditing it audits
    the whole transcript's post-processing)."""
    out = []
    real = mi.clip_noise_from_plan if release is None else release
    law = "laplace" if isinstance(plan.loss, PureDP) else "gaussian"

    def spy(Q, vplan, **kw):
        qbar = real(Q, vplan, **kw)
        out.append(float(qbar[0]))
        return qbar

    with monkeypatch.context() as mp:
        mp.setattr(mi, "clip_noise_from_plan", spy)
        for s in np.random.SeedSequence(seed).spawn(AUDIT_RUNS):
            mi.mean_interval_from_plan(W, AUDIT_THETA, plan, noise_std=np.array([0.01]),
                                       noise_law=law, random_state=s)
    return np.array(out)


def _claim(loss):
    """``(ε, δ)`` of a loss: pure ε, or a zCDP ρ converted at AUDIT_DELTA."""
    if isinstance(loss, PureDP):
        return loss.epsilon, 0.0
    return zcdp_to_approx_dp(loss.rho, AUDIT_DELTA).epsilon, AUDIT_DELTA


def _audit(plan, D, Dp, monkeypatch, seeds, claimed, release=None):
    a = _audit_samples(D, plan, seeds[0], monkeypatch, release)
    b = _audit_samples(Dp, plan, seeds[1], monkeypatch, release)
    eps, delta = claimed
    return epsilon_lower_bound(a, b, delta=delta, epsilon_claimed=eps)


@pytest.mark.slow
@pytest.mark.parametrize("budget", [PureDP(2.0), ZCDP(0.1)], ids=["pure", "zcdp"])
def test_audit_of_the_variance_release(budget, monkeypatch):
    # the interval's releases at a budget whose claim is about 2 (pure) or
    # 1.8 (ρ = 0.1 at δ = 1e-3); the variance release gets half of it
    plan = mi.plan_mean_interval(51, 1, budget)
    claimed = _claim(plan.loss)
    variance_claim = _claim(plan.variance.loss)
    assert claimed[0] <= 2.0 and variance_claim[0] < claimed[0]
    D, Dp = _audit_users(1.0), _audit_users(-1.0)
    # the real mechanism: below the whole claim, and below the variance
    # release's own (the statistic sees that release only)
    res = _audit(plan, D, Dp, monkeypatch, (1, 2), claimed)
    print("real:", res)
    assert not res.violation, res
    assert res.epsilon_lower <= variance_claim[0], res

    # positive control (i): the variance release calibrated to a 4× smaller
    # sensitivity than its lattice-widened 2·radius (the plan still claims
    # its budget): the true ε of that release is 4× (pure) and its ρ 16×
    real_sensitivity = cn.lattice_sensitivity
    with monkeypatch.context() as mp:
        mp.setattr(cn, "lattice_sensitivity",
                   lambda *a, **k: real_sensitivity(*a, **k) / 4)
        bad_plan = mi.plan_mean_interval(51, 1, budget)
    assert _claim(bad_plan.loss)[0] <= claimed[0]
    res = _audit(bad_plan, D, Dp, monkeypatch, (3, 4), claimed)
    print("understated sensitivity:", res)
    assert res.violation, res

    # positive control (ii): the variance computed from the UNclipped
    # deviations of users' means outside the box (the changed user at ±5),
    # normalised by 1 + |θ| but neither clipped to the box, nor to the
    # private scale, nor by the lattice (its ball widened, same noise): one
    # user moves the sum of the q's by (5.9² − 4.1²)/1.9² ≈ 5 instead of 1
    D3, Dp3 = _audit_users(5.0), _audit_users(-5.0)
    real_release = mi.clip_noise_from_plan
    s = 1.0 + np.abs(AUDIT_THETA)

    def unclipped(W):
        def release(Q, vplan, **kw):
            Q = ((W - AUDIT_THETA) / s) ** 2
            return real_release(Q, dataclasses.replace(vplan, ball=1e3), **kw)
        return release

    a = _audit_samples(D3, plan, 5, monkeypatch, unclipped(D3))
    b = _audit_samples(Dp3, plan, 6, monkeypatch, unclipped(Dp3))
    res = epsilon_lower_bound(a, b, delta=claimed[1], epsilon_claimed=claimed[0])
    print("unclipped deviations:", res)
    assert res.violation, res
    # the same users through the real mechanism: no violation (the box
    # clips them back to the corners)
    res = _audit(plan, D3, Dp3, monkeypatch, (7, 8), claimed)
    print("real, users outside the box:", res)
    assert not res.violation, res
