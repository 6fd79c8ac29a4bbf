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
    assert var.sensitivity == pytest.approx(2 * radius / var.grid + (d if pure else math.sqrt(d)))
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
        assert lo <= err[:, j].var(ddof=1) / var <= hi, (err[:, j].std(), math.sqrt(var))
        assert abs(err[:, j].mean()) <= 4 * math.sqrt(var / N)
