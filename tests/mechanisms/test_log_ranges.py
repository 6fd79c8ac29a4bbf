"""The joint log2-histogram range finder behind ``bounds="auto"`` (issue 28).

Exact privacy maps (replace-one user-level sensitivities √(2d) and 2d, the
plan's loss against its closed form, the thresholds), an empirical audit with
a positive control (noise at the add/remove scale must be flagged), accuracy
with binomial tolerances, refusals, the declared window's overflow counts and
input immutability.
"""

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import binom

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mechanisms import (
    calibrate_discrete_laplace,
    learn_box,
    learn_box_for_fit,
    log_ranges_from_plan,
    plan_log_ranges,
)
from skuserdp.mechanisms._private_bounds import default_bounds_share
from skuserdp.privacy import (
    ZCDP,
    PureDP,
    histogram_pass_threshold,
    replace_one_histogram_sensitivity,
    split_for_log_ranges,
    zcdp_rho_for,
)
from skuserdp.testing import epsilon_lower_bound

# A statistical check fails by chance with probability at most this.
P_FALSE_ALARM = 1e-4
RHO_1 = zcdp_rho_for(1.0, 1e-6)


def _min_successes(runs, p):
    """Fewest successes out of ``runs`` at success rate ``p`` that a check
    accepts, failing by chance with probability at most ``P_FALSE_ALARM``."""
    return int(binom.ppf(P_FALSE_ALARM, runs, p))


# ------------------------------------------------------------ privacy maps
@pytest.mark.parametrize("d", [1, 2, 7, 10, 64])
def test_sensitivities_are_the_replace_one_ones(d):
    assert replace_one_histogram_sensitivity(d, "l2") == math.sqrt(2 * d)
    assert replace_one_histogram_sensitivity(d, "l1") == 2.0 * d
    assert replace_one_histogram_sensitivity(d, "linf") == 1.0


@pytest.mark.parametrize("d", [1, 3, 10])
@pytest.mark.parametrize("rho", [0.001, 0.0073, 0.5])
def test_zcdp_plan_loss_is_the_closed_form(d, rho):
    plan = plan_log_ranges(1000, d, budget=ZCDP(rho))
    sigma2 = float(plan.noise.sigma2)
    assert plan.sensitivity == math.sqrt(2 * d)
    assert abs(plan.loss.rho - 2 * d / (2 * sigma2)) <= 1e-12 * plan.loss.rho
    assert plan.loss.rho <= rho
    # sigma^2 = 2d / (2 rho), rounded up by at most 2^-20 (plus 1e-12 relative)
    assert 0 <= sigma2 - d / rho <= 2.0 ** -20 + 2e-12 * d / rho
    assert plan.count_std == math.sqrt(sigma2)


@pytest.mark.parametrize("d", [1, 3, 10])
@pytest.mark.parametrize("eps", [0.1, 0.3, 2.0])
def test_pure_plan_loss_is_the_closed_form(d, eps):
    plan = plan_log_ranges(1000, d, budget=PureDP(eps))
    scale = float(plan.noise.scale)
    assert plan.sensitivity == 2.0 * d
    assert abs(plan.loss.epsilon - 2 * d / scale) <= 1e-12 * plan.loss.epsilon
    assert plan.loss.epsilon <= eps
    assert 0 <= scale - 2 * d / eps <= 2.0 ** -20


def test_thresholds_are_the_closed_forms():
    plan = plan_log_ranges(500, 4, budget=ZCDP(0.01), beta=1e-3)
    sigma = math.sqrt(float(plan.noise.sigma2))
    assert plan.n_cells == 4 * 1025
    # beta split in two: signed cells, merged magnitudes; mirror tests at 0.02
    assert plan.threshold == math.ceil(sigma * -ndtri(0.5e-3 / plan.n_cells))
    assert plan.merged_threshold == math.ceil(
        sigma * math.sqrt(2) * -ndtri(0.5e-3 / (4 * 512)))
    assert plan.mirror_threshold == math.ceil(
        sigma * math.sqrt(8) * -ndtri(0.02 / (2 * 4)))
    assert plan.n_min == math.ceil(plan.threshold + 2 * sigma)
    pure = plan_log_ranges(500, 4, budget=PureDP(0.5), beta=1e-3)
    b = float(pure.noise.scale)
    c = pure.n_cells
    assert pure.threshold == math.ceil(-b * math.log(2 - 2 * (1 - 0.5e-3) ** (1 / c)))
    # ApproxBounds' default (doubles: 2,047 bins per sign, p = 1 - 1e-9) at b = 1
    assert histogram_pass_threshold(1.0, 4093, 1e-9, kind="laplace") == 29
    # a sum of two Laplace noises reaches t only if one reaches t/2
    assert histogram_pass_threshold(1.0, 100, 0.01, kind="laplace", n_summed=2) == \
        math.ceil(-2 * math.log(2 - 2 * 0.99 ** (1 / 200)))


def test_window_plan_has_overflow_cells():
    plan = plan_log_ranges(500, 3, budget=ZCDP(0.01), window=(0.0, 1.0))
    assert plan.cells_per_feature == 2 * 60 + 1 + 2
    assert plan.n_cells == 3 * 123


def test_a_change_in_d_changes_the_map():
    a = plan_log_ranges(1000, 5, budget=ZCDP(0.01))
    b = plan_log_ranges(1000, 10, budget=ZCDP(0.01))
    assert b.count_std / a.count_std == pytest.approx(math.sqrt(2), rel=1e-6)
    assert b.threshold > a.threshold and b.n_min > a.n_min
    c = plan_log_ranges(1000, 5, budget=PureDP(1.0))
    e = plan_log_ranges(1000, 10, budget=PureDP(1.0))
    assert float(e.noise.scale) == 2 * float(c.noise.scale)


def test_split_for_log_ranges_stays_within_the_budget():
    budget, rest_eps, rest_delta = split_for_log_ranges(1.0, 1e-6, 0.3, zcdp=True)
    assert budget.rho <= 0.3 * RHO_1 and rest_delta == 1e-6
    assert zcdp_rho_for(rest_eps, 1e-6) + budget.rho <= RHO_1 * (1 + 1e-12)
    budget, rest_eps, _ = split_for_log_ranges(1.0, 0.0, 0.3, zcdp=False)
    assert isinstance(budget, PureDP) and budget.epsilon + rest_eps <= 1.0
    budget, rest_eps, rest_delta = split_for_log_ranges(1.0, 1e-6, 0.3, zcdp=False,
                                                        approx=True)
    assert isinstance(budget, ZCDP) and rest_delta == pytest.approx(0.7e-6)


# ------------------------------------------------------------ audit
def _audit_samples(plan, runs, seed):
    """The noisy count of the top cell minus that of the bottom cell of column
    0, on two neighbours: one user at +2^300 (D) or at -2^300 (D'), both
    clamped into the outermost cells (the overflow cells with a window)."""
    base = np.zeros((3, plan.n_features))
    d_top, d_bottom = base.copy(), base.copy()
    d_top[0] = 2.0 ** 300
    d_bottom[0] = -(2.0 ** 300)
    top, bottom = plan.cells_per_feature - 1, 0  # most positive / most negative
    out = []
    for data, shift in ((d_top, 0), (d_bottom, 1)):
        vals = np.empty(runs)
        for r in range(runs):
            seed_r = np.random.SeedSequence([seed, shift, r])
            c = log_ranges_from_plan(data, plan, random_state=seed_r).counts
            vals[r] = c[0, top] - c[0, bottom]
        out.append(vals)
    return out


def _audit(runs, window):
    plan = plan_log_ranges(3, 1, budget=PureDP(2.0), window=window)
    s, s_prime = _audit_samples(plan, runs, 0)
    res = epsilon_lower_bound(s, s_prime, epsilon_claimed=2.0, random_state=0)
    assert not res.violation, str(res)
    assert res.epsilon_lower > 0.5  # the event does see the change
    # positive control: the add/remove scale (l1 sensitivity d instead of 2d)
    control = dataclasses.replace(plan, noise=calibrate_discrete_laplace(1.0, 2.0))
    c, c_prime = _audit_samples(control, runs, 1)
    res = epsilon_lower_bound(c, c_prime, epsilon_claimed=2.0, random_state=0)
    assert res.violation, str(res)


def test_audit_and_positive_control():
    # the windowed grid (123 cells) for speed: the same noise and sensitivity
    _audit(1500, (-1.0, 1.0))


@pytest.mark.slow
def test_audit_and_positive_control_many_runs():
    _audit(5000, None)


# ------------------------------------------------------------ accuracy
def test_concentrated_users_get_a_box_around_them():
    """1,000 users x 10 columns, user means N(0.5, 0.07^2), no bounds, (1, 1e-6):
    every run finds a box holding at least 99.5% of the users of every column
    (cells (0.25, 1] kept; 0.25 is 3.6 standard deviations below 0.5)."""
    runs = 20
    ok = 0
    for r in range(runs):
        U = np.random.default_rng([1, r]).normal(0.5, 0.07, size=(1000, 10))
        lo, hi = learn_box_for_fit("t", U, epsilon=1.0, delta=1e-6, share=None,
                                   zcdp=True, random_state=r)[:2]
        ok += bool(np.all(((U >= lo) & (U <= hi)).mean(axis=0) >= 0.995)
                   and np.all(hi <= 4.0) and np.all(lo >= 0.0))
    assert ok >= _min_successes(runs, 0.99)


def test_lognormal_columns_get_sane_boxes():
    """10 lognormal columns (medians 1e-3..1e6), 2,000 users, (1, 1e-6): the
    box holds the median and at most 4x the largest value in every column in
    at least 90% of runs (bench_ranges.py measured 0.97-1.00)."""
    runs = 20
    ok = 0
    for r in range(runs):
        rng = np.random.default_rng([2, r])
        U = np.logspace(-3, 6, 10) * np.exp(rng.normal(size=(2000, 10)))
        lo, hi = learn_box_for_fit("t", U, epsilon=1.0, delta=1e-6, share=None,
                                   zcdp=True, random_state=r)[:2]
        med = np.median(U, axis=0)
        ok += bool(np.all((lo <= med) & (med <= hi) & (hi <= 4 * U.max(axis=0))))
    assert ok >= _min_successes(runs, 0.9)


def test_edges_follow_the_kept_cells():
    """With little noise the box is the span of the kept cells (no neighbour
    holds users: no extension); a side with no kept cell (and no users) ends
    at the inner edge of the other side's innermost kept cell; zero-centred
    data is covered on both sides; margin=1 adds an octave on both sides
    (its spans of 5 and 3 octaves make the empty sides end at the origin)."""
    plan = plan_log_ranges(4000, 3, budget=ZCDP(50.0))
    rng = np.random.default_rng(0)
    U = np.column_stack([rng.uniform(3.0, 7.9, 4000), -rng.uniform(100, 120, 4000),
                         rng.normal(0.0, 1.0, 4000)])
    res = log_ranges_from_plan(U, plan, random_state=0)
    assert res.lower.tolist()[:2] == [2.0, -128.0]
    assert res.upper.tolist()[:2] == [8.0, -64.0]
    assert res.lower[2] <= U[:, 2].min() + 1 and res.upper[2] >= U[:, 2].max() - 1
    assert not res.missing.any() and res.outside_lower is None
    wide = plan_log_ranges(4000, 3, budget=ZCDP(50.0), margin=1)
    res = log_ranges_from_plan(U, wide, random_state=0)
    # kept spans of at least 3 octaves: the empty sides end at 0
    assert res.lower.tolist()[:2] == [0.0, -256.0]
    assert res.upper.tolist()[:2] == [16.0, 0.0]


def test_window_overflow_counts_estimate_the_cut_users():
    """A declared box cutting the top 20% of the users: the overflow counts
    are near 0.2 n and 0 within a few noise standard deviations, and the box
    never leaves the declared one."""
    n = 5000
    U = np.random.default_rng(3).normal(0.0, 1.0, size=(n, 2))
    q80 = np.quantile(U, 0.8, axis=0)
    window = (np.array([-50.0, -50.0]), q80)
    plan = plan_log_ranges(n, 2, budget=ZCDP(0.05), window=window)
    res = log_ranges_from_plan(U, plan, random_state=0)
    above = (U > q80).sum(axis=0)
    tol = 5 * res.count_std
    assert np.all(np.abs(res.outside_upper - above) <= tol)
    assert np.all(np.abs(res.outside_lower) <= tol)
    assert np.all(res.upper == q80)  # the overflow cell is kept: declared edge
    assert np.all(res.lower >= -50.0) and np.all(res.lower <= U.min(axis=0))
    assert res.lower[0] > -50.0  # refined inside the loose declared box


def test_window_keeps_the_declared_box_without_kept_cells():
    U = np.random.default_rng(4).normal(size=(20, 2))
    plan = plan_log_ranges(20, 2, budget=ZCDP(0.01), window=(-5.0, 5.0))
    res = log_ranges_from_plan(U, plan, random_state=0)
    assert res.lower.tolist() == [-5.0, -5.0] and res.upper.tolist() == [5.0, 5.0]


# ------------------------------------------------------------ refusals
def test_refuses_below_n_min_naming_the_numbers():
    U = np.random.default_rng(0).normal(size=(60, 10))
    plan = plan_log_ranges(60, 10, budget=ZCDP(0.3 * RHO_1))
    assert not plan.feasible
    with pytest.raises(ValueError, match=rf"10 column\(s\) from 60 users.*n_min = "
                                         rf"{plan.n_min}"):
        learn_box("T", U, ZCDP(0.3 * RHO_1), random_state=0, total_epsilon=1.0)


def test_refuses_a_column_without_kept_cells():
    # enough users for n_min, but spread thinly over many cells in column 1
    rng = np.random.default_rng(0)
    n = 400
    U = np.column_stack([np.full(n, 1.5), np.exp2(rng.integers(-100, 100, n))])
    with pytest.raises(ValueError, match=r"no range for column\(s\) \[1\]"):
        learn_box("T", U, ZCDP(0.05), random_state=0)


def test_flat_box_warns():
    U = np.zeros((2000, 2))
    U[:40, 1] = 1.0  # a rare binary feature
    U[:, 0] = np.random.default_rng(0).uniform(1, 2, 2000)
    with pytest.warns(AccuracyWarning, match=r"flat box for column\(s\) \[1\]"):
        lo, hi = learn_box("T", U, ZCDP(0.01), random_state=0)
    assert lo[1] == hi[1] == 0.0


def test_non_finite_values_are_refused():
    U = np.ones((500, 2))
    U[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        log_ranges_from_plan(U, plan_log_ranges(500, 2, budget=ZCDP(1.0)))


# ------------------------------------------------------------ inputs, seeds
def test_never_mutates_the_input_and_accepts_read_only():
    U = np.random.default_rng(0).normal(size=(1000, 3))
    U.setflags(write=False)
    before = U.copy()
    plan = plan_log_ranges(1000, 3, budget=ZCDP(0.05))
    a = log_ranges_from_plan(U, plan, random_state=7)
    b = log_ranges_from_plan(U, plan, random_state=7)
    np.testing.assert_array_equal(U, before)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.lower.tolist() == b.lower.tolist()
    c = log_ranges_from_plan(U, plan, random_state=np.random.RandomState(3))
    assert c.counts.shape == (3, 1025)


def test_shape_mismatch_and_window_misuse():
    plan = plan_log_ranges(10, 2, budget=ZCDP(1.0))
    with pytest.raises(ValueError, match="shape"):
        log_ranges_from_plan(np.ones((11, 2)), plan)
    with pytest.raises(ValueError, match="without a window"):
        log_ranges_from_plan(np.ones((10, 2)), plan, window=(0, 1))
    with pytest.raises(ValueError, match="window"):
        plan_log_ranges(10, 2, budget=ZCDP(1.0), window=(1.0, 0.0))
    with pytest.raises(TypeError):
        plan_log_ranges(10, 2, budget=0.5)


def test_default_share_adapts_to_n_from_public_values():
    shares = [default_bounds_share(n, 10, epsilon=1.0, delta=1e-6, zcdp=True)
              for n in (300, 1000, 2000, 5000, 100_000)]
    assert shares == sorted(shares, reverse=True)
    assert shares[0] == 0.5 and shares[-1] == 0.05


# ------------------------------------------------------------ estimator targets
def test_estimators_learn_boxes_at_ordinary_sizes():
    from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
    from skuserdp.mean import UserMeanEstimator

    rng = np.random.default_rng(5)
    X = rng.normal(3.0, 1.0, size=(900, 2))
    g = np.repeat(np.arange(300), 3)
    est = UserMeanEstimator(epsilon=1.0, random_state=0).fit(X, groups=g)
    assert np.all(np.abs(est.mean_ - 3.0) < 1.0)
    X = rng.normal(0.5, 0.07 * math.sqrt(5), size=(5000, 10))
    g = np.repeat(np.arange(1000), 5)
    est = UserMeanEstimator(epsilon=1.0, random_state=0).fit(X, groups=g)
    assert np.all(np.abs(est.mean_ - 0.5) < 0.1)
    n, m, p = 800, 5, 8
    X = rng.normal(size=(n * m, p))
    y = X @ rng.normal(size=p) + 1.0 + rng.normal(0, 0.5, n * m)
    g = np.repeat(np.arange(n), m)
    for cls in (UserDPLinearRegression, UserDPSGDRegressor):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)  # noisy fit, not the box
            est = cls(epsilon=1.0, random_state=0).fit(X, y, groups=g)
        assert np.isfinite(est.coef_).all()
        assert est.bounds_[0].shape == (p,)


def test_spread_fallback_for_a_column_spread_over_many_cells():
    # the regression target of 800 users x 8 features (y = X·linspace(-1, 1,
    # 8) + noise, 5 rows each): its users' means, N(0, ~1), can leave every
    # signed and merged cell below the threshold; the spread test
    # (post-processing of the same counts) gives a symmetric box that holds
    # almost every user. Positive control: without it the column is missing
    # (the fit refused) in some seeds.
    import dataclasses

    from skuserdp.mechanisms import log_ranges_from_plan, plan_log_ranges
    from skuserdp.privacy import ZCDP
    from skuserdp.users import user_means
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(800), 5)
    X = rng.normal(size=(groups.size, 8))
    y = X @ np.linspace(-1, 1, 8) + rng.normal(size=groups.size)
    U = user_means(np.column_stack([X, y]), groups).means
    plan = plan_log_ranges(800, 9, budget=ZCDP(0.0122))
    never = dataclasses.replace(plan, spread_threshold=np.iinfo(np.int64).max)
    missed = 0
    for seed in range(40):
        res = log_ranges_from_plan(U, plan, random_state=seed)
        off = log_ranges_from_plan(U, never, random_state=seed)
        assert not res.missing.any()
        if off.missing[8]:
            missed += 1
            assert res.lower[8] == -res.upper[8]
            inside = (U[:, 8] >= res.lower[8]) & (U[:, 8] <= res.upper[8])
            assert inside.mean() > 0.95
    assert missed >= 1  # the case the fallback exists for
