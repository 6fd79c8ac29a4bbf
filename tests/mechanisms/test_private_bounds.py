"""Private bounds at user level (issue 15): ``bounds="auto"``.

Exact privacy map of both releases (every cost has sensitivity 1 under
replace-one, checked by brute force, and the exact output law of the
exponential mechanism has log-ratio <= epsilon_0), the budget split, the
clinical-scale acceptance example for every mean estimator, the warnings,
and an audit of the learned box with a positive control.
"""

import dataclasses
import warnings

import numpy as np
import pytest

import skuserdp.mechanisms._private_bounds as bounds_module
from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
)
from skuserdp.mechanisms import (
    bounds_failure_probability,
    bounds_grid,
    exponential_mechanism,
    private_bounds,
)
from skuserdp.mechanisms._private_bounds import (
    BOUNDS_QUANTILE,
    default_bounds_share,
    median_costs,
    quantile_costs,
    spread_rule,
)
from skuserdp.privacy import (
    ApproxDP,
    PureDP,
    ZCDP,
    compose,
    compose_spend,
    split_for_log_ranges,
    split_for_public_bounds,
    zcdp_rho_for,
)
from skuserdp.testing import audit_estimator
from skuserdp.utils._random import generator_from, make_seed_sequence


# ------------------------------------------------------------ exact privacy map
def _neighbours(rng, n):
    v = rng.choice([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 40.0], size=n)
    w = v.copy()
    w[rng.integers(n)] = rng.choice([-1e6, -2.0, 0.0, 1.0, 1e6])
    return v, w


@pytest.mark.parametrize("cost", ["median", "quantile"])
def test_costs_have_sensitivity_one_under_replace_one(cost):
    rng = np.random.default_rng(0)
    grid = bounds_grid()
    pos = grid[grid.size // 2:]
    worst = 0
    for _ in range(300):
        v, w = _neighbours(rng, int(rng.integers(1, 12)))
        if cost == "median":
            a, b = median_costs(np.sort(v), grid), median_costs(np.sort(w), grid)
        else:
            a = quantile_costs(np.sort(np.abs(v)), pos, BOUNDS_QUANTILE)
            b = quantile_costs(np.sort(np.abs(w)), pos, BOUNDS_QUANTILE)
        worst = max(worst, int(np.max(np.abs(a - b))))
    assert worst == 1  # attained, never exceeded


def test_exact_output_law_has_log_ratio_at_most_epsilon():
    rng = np.random.default_rng(1)
    grid = bounds_grid()
    eps0 = 0.7
    for _ in range(50):
        v, w = _neighbours(rng, 9)
        la = -0.5 * eps0 * median_costs(np.sort(v), grid)
        lb = -0.5 * eps0 * median_costs(np.sort(w), grid)
        assert la.shape == (grid.size - 1,)
        la -= np.logaddexp.reduce(la)
        lb -= np.logaddexp.reduce(lb)
        assert np.max(np.abs(la - lb)) <= eps0 + 1e-9


def test_release_is_the_exponential_mechanism_on_the_grid():
    # a huge epsilon makes the release the exact median (within one grid step)
    # and the exact quantile of the distances; the box is t +- 4 s
    v = np.arange(1.0, 102.0)[:, None]  # median 51, distances 0..50
    lo, hi = private_bounds(v, 1e6, random_state=0)
    grid = bounds_grid()
    k = int(np.argmin(median_costs(v[:, 0], grid)))
    assert grid[k] < 51.0 <= grid[k + 1]
    t = 0.5 * (lo[0] + hi[0])
    assert t == pytest.approx(0.5 * grid[k] + 0.5 * grid[k + 1])
    s = (hi[0] - t) / 4.0
    frac = np.mean(np.abs(v[:, 0] - t) <= s * (1 + 1e-12))
    assert frac >= BOUNDS_QUANTILE and np.isclose(grid, s, rtol=1e-12).any()
    # the next grid point below would hold fewer than 3/4 of the distances
    below = grid[grid < s * (1 - 1e-12)].max()
    assert np.mean(np.abs(v[:, 0] - t) <= below) < BOUNDS_QUANTILE


def test_users_inside_one_grid_cell_get_a_box_around_them():
    # all users within 0.1 % of 100.5 (one grid cell): the median bin is
    # unique (cost 0), the box contains them and is not wide
    v = 100.5 + np.random.default_rng(0).uniform(-0.1, 0.1, size=(2000, 1))
    for seed in range(20):
        lo, hi = private_bounds(v, 0.05, random_state=seed)
        assert lo[0] <= v.min() and v.max() <= hi[0] and hi[0] - lo[0] < 200


# ------------------------------------- the counting passes (issue 18, speed)
def _sorting_private_bounds(values, release_epsilon, *, random_state=None):
    """The sort-based implementation (before issue 18), column by column."""
    V = np.asarray(values, dtype=np.float64)
    quantile, scale = spread_rule(V.shape[0], release_epsilon)
    rng = generator_from(make_seed_sequence(random_state))
    grid = bounds_grid()
    pos = grid[grid.size // 2:]
    lower, upper = np.empty(V.shape[1]), np.empty(V.shape[1])
    for j in range(V.shape[1]):
        v = np.sort(V[:, j])
        k = exponential_mechanism(-median_costs(v, grid), release_epsilon, 1.0, rng)
        t = 0.5 * grid[k] + 0.5 * grid[k + 1]
        with np.errstate(over="ignore"):
            w = np.sort(np.abs(v - t))
        s = pos[exponential_mechanism(-quantile_costs(w, pos, quantile),
                                      release_epsilon, 1.0, rng)]
        lower[j], upper[j] = t - scale * s, t + scale * s
    return lower, upper


def _awkward_columns(rng, n):
    grid = bounds_grid()
    on_grid = rng.choice(grid, size=n)
    return np.column_stack([
        rng.normal(40.0, 5.0, n),
        rng.standard_normal(n) * 10.0 ** rng.uniform(-80, 80, n),  # every scale
        on_grid,  # exactly on grid points, and their neighbours
        np.nextafter(on_grid, np.inf), np.nextafter(on_grid, -np.inf),
        rng.choice([0.0, -0.0, 5e-324, -5e-324, 2.0 ** -300, 1e300, -1e300], n),
        np.full(n, -3.0),  # one value: a flat box
        rng.choice([-1.7e308, 1.7e308], n),  # |v - t| overflows to inf
    ])


@pytest.mark.parametrize("block_rows", [3, 2048])
@pytest.mark.parametrize("eps0", [0.01, 1.0, 1e4])
def test_counting_passes_give_the_sorting_release_bit_for_bit(monkeypatch, block_rows,
                                                              eps0):
    # the same box, and the same random stream, as sorting every column:
    # the counts are exact and the draws are made in the same order
    import skuserdp.mechanisms._private_bounds as pb

    monkeypatch.setattr(pb, "_BLOCK_ROWS", block_rows)
    monkeypatch.setattr(pb, "_BLOCKS_PER_COUNT", 2)
    rng = np.random.default_rng(7)
    for n in [1, 2, 5, 400]:
        V = _awkward_columns(rng, n)
        for seed in range(3):
            ours = private_bounds(V, eps0, random_state=seed)
            theirs = _sorting_private_bounds(V, eps0, random_state=seed)
            for a, b in zip(ours, theirs):
                assert a.tobytes() == b.tobytes()


def test_grid_index_is_searchsorted():
    from skuserdp.mechanisms._private_bounds import _GridIndex, _positive_grid

    rng = np.random.default_rng(0)
    for grid in [bounds_grid(), _positive_grid()]:
        index = _GridIndex(grid)
        x = np.concatenate([
            rng.standard_normal(20000) * 10.0 ** rng.uniform(-320, 308, 20000),
            grid, np.nextafter(grid, np.inf), np.nextafter(grid, -np.inf),
            [0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308,
             -1.7976931348623157e308, 2.0 ** 300, -(2.0 ** 300)]]).reshape(-1, 1)
        out = np.empty(x.shape, dtype=np.intp)
        buffers = (np.empty(x.shape, np.uint64), np.empty(x.shape),
                   np.empty(x.shape, bool))
        index.indices(x, out, buffers)
        np.testing.assert_array_equal(out[:, 0],
                                      np.searchsorted(grid, x[:, 0], side="left"))
        # non-finite values get their own index, past the grid
        bad = np.array([[np.inf], [-np.inf], [np.nan]])
        out = np.empty(bad.shape, dtype=np.intp)
        index.indices(bad, out, tuple(b[:3] for b in buffers))
        assert (out == grid.size + 1).all()


def test_non_finite_values_are_refused():
    for bad in [np.nan, np.inf, -np.inf]:
        with pytest.raises(ValueError, match="finite"):
            private_bounds(np.array([[1.0, 2.0], [3.0, bad]]), 1.0, random_state=0)


# --------------------------------------------------------------- budget split
@pytest.mark.parametrize("zcdp,delta", [(True, 1e-6), (False, 1e-6), (False, 0.0)])
@pytest.mark.parametrize("share,k", [(0.1, 2), (0.25, 64), (0.9, 1)])
def test_split_composes_within_the_target(zcdp, delta, share, k):
    eps0, loss, rest_eps, rest_delta = split_for_public_bounds(1.3, delta, share, k,
                                                               zcdp=zcdp)
    assert rest_delta == delta
    if zcdp:
        rho = zcdp_rho_for(1.3, delta)
        assert loss == ZCDP(k * eps0 ** 2 / 8)
        assert loss.rho <= share * rho
        assert compose(loss, ZCDP(zcdp_rho_for(rest_eps, delta))).rho <= rho
    else:
        assert loss.epsilon <= share * 1.3 and eps0 * k <= share * 1.3
        assert compose(loss, PureDP(rest_eps)).epsilon <= 1.3


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.1, 1e-10), (8.0, 0.01)])
@pytest.mark.parametrize("k", [1, 2, 16, 128, 1024])
def test_approx_split_accounts_the_box_in_zcdp_at_a_share_of_delta(eps, delta, k):
    # (eps, delta)-DP estimator with delta > 0 (approx=True): the box is
    # rho_b-zCDP with rho_b converting within (share eps, share delta), the
    # estimator plans with ((1 - share) eps, (1 - share) delta), and
    # compose_spend of the two (rho_b converted at the delta left) stays
    # within (eps, delta); used only where its eps_0 beats basic composition
    share = 0.25
    eps0, loss, rest_eps, rest_delta = split_for_public_bounds(
        eps, delta, share, k, zcdp=False, approx=True)
    basic = split_for_public_bounds(eps, delta, share, k, zcdp=False)
    assert eps0 >= basic[0]
    if isinstance(loss, PureDP):  # basic composition was better
        assert (eps0, loss, rest_eps, rest_delta) == basic
        return
    assert loss == ZCDP(k * eps0 ** 2 / 8)
    assert loss.rho <= zcdp_rho_for(share * eps, share * delta)
    assert rest_eps <= (1 - share) * eps and rest_delta == pytest.approx(
        (1 - share) * delta, rel=1e-12)
    total = compose_spend([loss, ApproxDP(rest_eps, rest_delta)], delta)
    assert total.epsilon <= eps and total.delta <= delta
    assert total.epsilon == pytest.approx(eps, rel=1e-6)  # nothing wasted
    # pure estimators (delta = 0) and approx=False keep basic composition
    assert split_for_public_bounds(eps, 0.0, share, k, zcdp=False,
                                   approx=True)[1] == PureDP(basic[1].epsilon)


def test_winsorized_with_delta_accounts_its_box_in_zcdp():
    # WinsorizedMean with delta > 0 at 64 features: the box (issue 28: one
    # joint log2-histogram release) is accounted in zCDP at a share of
    # (eps, delta), the release plans with the rest, and the fit reports the
    # compose_spend of both, within the budget; pure DP (the default
    # delta=0) cannot find every column's range there and refuses instead
    # of returning garbage
    rng = np.random.default_rng(0)
    n, d = 20_000, 64
    U = rng.uniform(-2, 2, d) + rng.normal(size=(n, d))
    seen = {}
    real = bounds_module._learn_box

    def spy(name, V, budget, *args, **kw):
        seen["budget"] = budget
        return real(name, V, budget, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bounds_module, "_learn_box", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("error", AccuracyWarning)
            est = WinsorizedMeanEstimator(epsilon=1.0, delta=1e-6, random_state=0)
            est.fit(U, groups=np.arange(n))
    share = default_bounds_share(n, d, epsilon=1.0, delta=1e-6, zcdp=False,
                                 approx=True)
    budget = split_for_log_ranges(1.0, 1e-6, share, zcdp=False, approx=True)[0]
    assert isinstance(seen["budget"], ZCDP) and seen["budget"] == budget
    assert est.epsilon_ <= 1.0 and est.delta_ <= 1e-6
    assert np.abs(est.mean_ - U.mean(axis=0)).max() < 0.5
    with pytest.raises(ValueError, match="bounds='auto' found no range"):
        WinsorizedMeanEstimator(epsilon=1.0, random_state=0).fit(
            U, groups=np.arange(n))


def test_estimators_record_the_bounds_step_in_their_spend():
    X, g = _clinical(0, n=1000)
    est = ClipNoiseMeanEstimator(epsilon=1.0, delta=1e-6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        est.fit(X, groups=g)
    eps0, loss, rest_eps, _ = split_for_public_bounds(1.0, 1e-6, 0.1, 6, zcdp=True)
    assert est.rho_ == pytest.approx(loss.rho + zcdp_rho_for(rest_eps, 1e-6), rel=1e-9)
    assert est.epsilon_ <= 1.0
    # declared bounds: nothing is spent on them
    declared = ClipNoiseMeanEstimator(epsilon=1.0, delta=1e-6, bounds=(0, 200),
                                      random_state=0).fit(X, groups=g)
    assert declared.rho_ == pytest.approx(zcdp_rho_for(1.0, 1e-6), rel=1e-9)
    np.testing.assert_array_equal(declared.bounds_[0], [0, 0, 0])


# ------------------------------------------------------- clinical acceptance
MU = np.array([40.0, 70.0, 120.0])


def _clinical(seed, n=2000, m=5):
    rng = np.random.default_rng(seed)
    users = rng.normal(MU, [8.0, 12.0, 15.0], size=(n, 3))
    X = np.repeat(users, m, axis=0) + rng.normal(0.0, 5.0, size=(n * m, 3))
    return X, np.repeat(np.arange(n), m)


@pytest.mark.parametrize("cls", [UserMeanEstimator, ClipNoiseMeanEstimator,
                                 CoinPressMeanEstimator, WinsorizedMeanEstimator])
def test_clinical_example_with_no_bounds_is_within_ten_percent(cls):
    # 2000 users, epsilon = 1, nothing declared: every coordinate within 10 %
    # (the noise at this size is ~1 %: 10 % is a failure of the box, not luck)
    for seed in range(3):
        X, g = _clinical(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error", AccuracyWarning)
            est = cls(epsilon=1.0, random_state=seed).fit(X, groups=g)
        assert np.all(np.abs(est.mean_ / MU - 1) <= 0.10), est.mean_
        assert est.epsilon_ <= 1.0


@pytest.mark.parametrize("cls, match", [(FewUsersBallEstimator, "radius"),
                                        (ThreadedClipNoiseEstimator, "moment_bound")])
def test_clinical_example_estimators_without_safe_defaults_refuse(cls, match):
    X, g = _clinical(0, n=300)
    with pytest.raises(ValueError, match=match):
        cls(epsilon=1.0, random_state=0).fit(X, groups=g)


def test_a_declared_box_that_misses_the_data_warns_instead_of_a_silent_corner():
    X, g = _clinical(0, n=500)
    with pytest.warns(AccuracyWarning, match="on or outside the public box"):
        est = UserMeanEstimator(bounds=(-10.0, 10.0), random_state=0).fit(X, groups=g)
    # every user clipped to the corner 10; the per-column release adds its
    # Laplace noise (sd √2·20·3/500 ≈ 0.17 per column): within 3 sd of 10
    np.testing.assert_allclose(est.mean_, 10.0, atol=0.51)


def test_too_few_users_for_auto_bounds_refuse_naming_the_numbers():
    # d = 3, epsilon = 1 (issue 28: the joint log2 histogram; the EM route
    # refused below 700 users and warned up to 1000): below the public
    # n_min the fit refuses before any release, naming n, d, epsilon and
    # n_min; at 200 users it runs with no warning
    X, g = _clinical(0, n=100)
    with pytest.raises(ValueError, match=r"3 column\(s\) from 100 users.*epsilon 1.*"
                                         r"n_min = \d+"):
        CoinPressMeanEstimator(random_state=0).fit(X, groups=g)
    for n in (200, 300):
        X, g = _clinical(0, n=n)
        with warnings.catch_warnings():
            warnings.simplefilter("error", AccuracyWarning)
            CoinPressMeanEstimator(random_state=0).fit(X, groups=g)


def test_rare_binary_feature_gets_a_flat_box_and_a_warning():
    # 1 % ones: the cell of the ones is below the threshold, the box is flat
    # (width 0) and the estimate sits on it: a loud warning, not silence.
    # (At 10 % ones the log2 histogram keeps their cell: box [0, 1].)
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(5.0, 1.0, 3000), (rng.random(3000) < 0.01).astype(float)]
    # (in the box's per-column scaled coordinates the flat column's noise is
    # in proportion to its own ~0 width: the estimate is the flat box's value
    # up to 1e-12, not noise from column 0 -- on the box's edge, warned too)
    with pytest.warns(AccuracyWarning, match=r"flat box for column\(s\) \[1\]"), \
            pytest.warns(AccuracyWarning, match=r"feature\(s\) \[1\] lies on"):
        est = ClipNoiseMeanEstimator(random_state=0).fit(X, groups=np.arange(3000))
    assert est.bounds_[1][1] - est.bounds_[0][1] < 1e-3
    assert est.bounds_[0][1] - 1e-12 <= est.mean_[1] <= est.bounds_[1][1] + 1e-12
    X[:, 1] = (rng.random(3000) < 0.1).astype(float)
    est = ClipNoiseMeanEstimator(random_state=0).fit(X, groups=np.arange(3000))
    assert est.bounds_[0][1] == 0.0 and est.bounds_[1][1] == 1.0


@pytest.mark.parametrize("cls", [ClipNoiseMeanEstimator, CoinPressMeanEstimator])
def test_ten_features_never_give_a_runaway_box(cls):
    # regression: with 2000 users x 10 features the 0.75-quantile spread had
    # a failure bound of 0.85 and gave boxes up to 1e57 (errors up to 1e72).
    # The joint log2 histogram (issue 28) has no such failure mode at this
    # size (an empty cell is kept w.p. at most 1e-3): no warning at all
    from skuserdp.datasets import make_user_samples
    X, g, mu = make_user_samples(n_users=2000, n_features=10, random_state=0)
    errors = []
    for seed in range(20):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = cls(random_state=seed).fit(X, groups=g)
        messages = [str(w.message) for w in caught]
        assert not messages, messages
        errors.append(np.linalg.norm(est.mean_ - mu))
        assert np.all(est.bounds_[1] - est.bounds_[0] < 100)
    assert max(errors) < 0.5, errors


def test_spread_rule_falls_back_to_the_median_distance_from_public_values():
    from skuserdp.mechanisms._private_bounds import (SPREAD_FAILURE_MAX,
                                                     _spread_failure, spread_rule)
    assert spread_rule(4000, 0.1) == (0.75, 4.0)
    assert spread_rule(2000, 0.1) == (0.5, 6.0)
    assert spread_rule(2000, 0.031) == (0.5, 6.0)
    # the 0.75 quantile only where it fails at most as rarely as 1e-9
    for n, eps0 in ((4000, 0.1), (2000, 0.1), (3000, 0.0441), (10000, 0.0441)):
        q75 = _spread_failure(n, eps0, 0.75) <= SPREAD_FAILURE_MAX
        assert (spread_rule(n, eps0)[0] == 0.75) == q75
    # the failure bound reported is that of the quantile used
    assert bounds_failure_probability(2000, 0.031)[1] < 1e-3


def test_no_silent_garbage_box_where_it_was_seen():
    # issue 26, finding 7: 3000 users x 5 features at the defaults (epsilon
    # 1, delta 1e-6): seed 150 of 1000 returned a mean of 1.5e32 -- the
    # 0.75-quantile spread release of one column failed (its bound, 1.4e-4
    # per column, was below the warning threshold) and its box of +-6e34
    # made the noise of every column garbage. Now the spread is the median
    # distance there (bound 1e-11), and the noise check names the features
    # that a far too wide box would swamp.
    rng = np.random.default_rng(0)
    n, d = 3000, 5
    X, g = rng.normal(size=(2 * n, d)), np.repeat(np.arange(n), 2)
    eps0 = split_for_public_bounds(1.0, 1e-6, 0.1, 2 * d, zcdp=True)[0]
    assert d * max(bounds_failure_probability(n, eps0)) < 1e-9
    for seed in (150, *range(40)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", AccuracyWarning)
            est = ClipNoiseMeanEstimator(random_state=seed).fit(X, groups=g)
        assert np.abs(est.mean_).max() < 0.1, seed


def test_a_far_too_wide_column_names_the_swamped_features():
    # the per-feature noise check (post-processing of the public plan and
    # the box). One column's declared box 1e6 wide no longer swamps the
    # others (the fit runs in the box's per-column scaled coordinates: no
    # warning); with a budget too small for the users every feature's own
    # noise exceeds its half-width, and all are named
    rng = np.random.default_rng(0)
    X, g = rng.normal(size=(6000, 3)), np.repeat(np.arange(3000), 2)
    lower, upper = np.array([-5.0, -1e6, -5.0]), np.array([5.0, 1e6, 5.0])
    est = ClipNoiseMeanEstimator(bounds=(lower, upper), random_state=0).fit(X, groups=g)
    assert np.all(est.noise_std_ < 0.01 * (upper - lower) / 2)
    with pytest.warns(AccuracyWarning, match=r"feature\(s\) \[0, 1, 2\] by"), \
            warnings.catch_warnings():
        # that noise may well push the swamped estimates onto their box's edge
        warnings.filterwarnings("ignore", ".*lies on or outside the public box",
                                AccuracyWarning)
        ClipNoiseMeanEstimator(epsilon=1e-3, bounds=(lower, upper),
                               random_state=0).fit(X, groups=g)


# ------------------------------------------- a random subset of many users
def _subset_law(values, m, eps0, grid, subsets):
    """Exact law of the median release on a subset: the mixture over the
    ``subsets`` (equally likely) of the exponential mechanism's law."""
    v = np.asarray(values, dtype=float)
    laws = []
    for rows in subsets:
        logw = -0.5 * eps0 * median_costs(np.sort(v[list(rows)]), grid)
        laws.append(np.exp(logw - np.logaddexp.reduce(logw)))
    return np.mean(laws, axis=0)


def test_exact_law_on_a_random_subset_has_log_ratio_at_most_epsilon():
    # Brute force over all C(6, 3) = 20 subsets: the mixture's log-ratio on
    # every replace-one neighbour stays <= eps0 (it is a mixture of eps0-DP
    # laws on neighbouring subsets); a data-dependent choice of the subset
    # (the 3 largest users when the mean exceeds 6, else the 3 smallest)
    # breaks it, so the check can fail.
    from itertools import combinations
    grid = np.array([-20.0, -5.0, -1.0, 0.0, 1.0, 5.0, 20.0])
    eps0, m = 1.0, 3
    subsets = list(combinations(range(6), m))
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(40):
        v = rng.choice([-3.0, 0.0, 0.5, 2.0, 10.0], size=6)
        w = v.copy()
        w[rng.integers(6)] = rng.choice([-30.0, 0.0, 3.0, 30.0])
        a = _subset_law(v, m, eps0, grid, subsets)
        b = _subset_law(w, m, eps0, grid, subsets)
        worst = max(worst, float(np.max(np.abs(np.log(a) - np.log(b)))))
    assert 0.3 * eps0 < worst <= eps0 + 1e-9

    def chosen(values):
        order = np.argsort(values, kind="stable")
        return [tuple(order[-m:] if values.mean() > 6 else order[:m])]

    v = np.array([0.0, 0.0, 0.0, 10.0, 10.0, 10.0])
    w = v.copy()
    w[0] = 10.0
    a = _subset_law(v, m, eps0, grid, chosen(v))
    b = _subset_law(w, m, eps0, grid, chosen(w))
    assert np.max(np.abs(np.log(a) - np.log(b))) > 1.4 * eps0  # 1.5 eps0


def test_released_median_follows_the_law_on_a_uniform_subset(monkeypatch):
    # private_bounds itself, forced onto 3 of 6 users: over 3000 seeds, the
    # bins its median release lands in follow the exact mixture over all 20
    # subsets of the exponential mechanism's law (chi-square test at
    # p = 1e-4 on the bins expected at least 5 times, the rest pooled). A
    # release on the first 3 users, on a non-uniform subset or with costs
    # counted for 6 users would follow another law.
    from itertools import combinations

    from scipy import stats
    import skuserdp.mechanisms._private_bounds as pb
    monkeypatch.setattr(pb, "bounds_sample_size", lambda n, eps0: min(n, 3))
    grid = bounds_grid()
    # six users in six distinct bins; at eps0 = 12 the release is the bin
    # of the subset's median but for about 1 % of the time, so the law is
    # the mixture 0.2, 0.3, 0.3, 0.2 on the bins of the 2nd to 5th users
    v = np.array([1.0, 1.5, 2.5, 4.0, 7.0, 12.0])
    eps0 = 12.0
    law = _subset_law(v, 3, eps0, grid, list(combinations(range(6), 3)))
    runs = 3000
    counts = np.zeros(grid.size - 1)
    for seed in np.random.SeedSequence(11).spawn(runs):
        lo, hi = private_bounds(v[:, None], eps0, random_state=seed)
        t = 0.5 * lo[0] + 0.5 * hi[0]  # the bin's midpoint, up to rounding
        counts[np.searchsorted(grid, t) - 1] += 1
    expected = runs * law
    big = expected >= 5
    observed = np.r_[counts[big], counts[~big].sum()]
    expect = np.r_[expected[big], expected[~big].sum()]
    chi2 = float(np.sum((observed - expect) ** 2 / expect))
    assert chi2 < stats.chi2.isf(1e-4, observed.size - 1), (chi2, observed, expect)
    assert big.sum() >= 4  # the law is spread over several bins


def test_bounds_sample_size_is_all_users_up_to_2_17_then_a_rank_rule():
    from skuserdp.mechanisms._private_bounds import (
        SUBSET_BETA, SUBSET_RANK_ERROR, bounds_sample_size)
    assert bounds_sample_size(2 ** 17, 1e6) == 2 ** 17
    assert bounds_sample_size(2 ** 17 + 1, 1e6) == 2 ** 17
    assert bounds_sample_size(10 ** 6, 0.0123) == 179952
    assert bounds_sample_size(10 ** 6, 0.002) == 10 ** 6  # the rule asks for more
    # at the size chosen, the exponential mechanism's rank error bound
    # 2 ln(K / beta) / eps0 is at most 2 % of the users
    m = bounds_sample_size(10 ** 6, 0.0123)
    ranks = 2 * np.log(bounds_grid().size / SUBSET_BETA) / 0.0123
    assert ranks <= SUBSET_RANK_ERROR * m
    # no subset for an epsilon too small (or invalid) to ask for one
    for eps0 in (0.0, -1.0, float("nan"), 1e-308, 5e-324):
        assert bounds_sample_size(10 ** 6, eps0) == 10 ** 6
    # the failure bounds reported are those of the subset
    assert bounds_failure_probability(10 ** 6, 0.0123) == bounds_failure_probability(
        m, 0.0123)


def test_many_users_learn_the_box_on_a_random_subset(monkeypatch):
    # With more users than the subset rule asks for, the release is exactly
    # private_bounds of the rows random_subset picks from the first child
    # of the seed; the noise stream is unchanged. Fewer users: no subset.
    import skuserdp.mechanisms._private_bounds as pb
    from skuserdp.utils._random import random_subset
    monkeypatch.setattr(pb, "SUBSET_MIN_USERS", 50)
    V = np.random.default_rng(0).normal([3.0, -40.0], [1.0, 5.0], size=(200, 2))
    assert pb.bounds_sample_size(200, 50.0) == 50
    seed = np.random.SeedSequence(5)
    got = private_bounds(V, 50.0, random_state=seed)
    assert seed.n_children_spawned == 0  # the caller's seed is not changed
    rng = np.random.default_rng(np.random.SeedSequence(5))
    for _ in range(2):  # the Gumbel noise of both columns comes first
        rng.gumbel(size=bounds_grid().size - 1)
        rng.gumbel(size=bounds_grid().size // 2 + 1)
    rows = random_subset(200, 50, rng)
    want = private_bounds(V[rows], 50.0, random_state=np.random.SeedSequence(5))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, private_bounds(
        V[:50], 50.0, random_state=np.random.SeedSequence(5)))
    # a non-finite value outside the subset is still refused
    W = V.copy()
    W[np.setdiff1d(np.arange(200), rows)[0], 1] = np.inf
    with pytest.raises(ValueError, match="finite"):
        private_bounds(W, 50.0, random_state=np.random.SeedSequence(5))


def test_box_of_many_users_covers_them():
    # 150 000 users (above 2^17): the box comes from a subset of 2^17 of
    # them and still holds the whole cloud but for a few far tail users
    U = np.random.default_rng(1).normal(7.0, 2.0, size=(150_000, 1))
    lo, hi = private_bounds(U, 0.1, random_state=0)
    assert np.mean((U >= lo) & (U <= hi)) > 0.9999
    assert hi[0] - lo[0] < 2 * 6 * 2.0  # not absurdly wide: under +-6 sd


# ---------------------------------------------------------------------- audit
def _box_neighbours(n=400):
    # half the users at 0, half at 10; the neighbour moves one user 10 -> 0,
    # which moves the median and the spread
    X = np.r_[np.zeros(n // 2), np.full(n // 2, 10.0)][:, None]
    Xp = X.copy()
    Xp[-1] = 0.0
    return X, Xp, np.arange(n)


def _lower(est):
    return float(est.bounds_[0][0])


def _exact_bounds(values, release_epsilon, *, random_state=None):
    v = np.asarray(values)
    t = np.median(v, axis=0)
    s = np.quantile(np.abs(v - t), BOUNDS_QUANTILE, axis=0)
    return t - 4 * s, t + 4 * s


def _audit_box(monkeypatch, est, X, Xp, g, n_runs):
    """The audit of a learned box (statistic: the first column's lower
    edge), then its positive control: a box read off the data without
    privacy must be flagged."""
    ok = audit_estimator(est, X, Xp, groups=g, groups_prime=g, statistic=_lower,
                         n_runs=n_runs, random_state=0)
    assert not ok.violation, str(ok)
    # (bounds='auto' goes through the joint log2 histogram since issue 28:
    # the control replaces that release by a box read off the data)
    real = bounds_module.log_ranges_from_plan

    def read_off(U, plan, **kw):
        res = real(U, plan, **kw)
        lower, upper = _exact_bounds(U, None)
        return dataclasses.replace(res, lower=np.asarray(lower, float),
                                   upper=np.asarray(upper, float))

    monkeypatch.setattr(bounds_module, "log_ranges_from_plan", read_off)
    bad = audit_estimator(est, X, Xp, groups=g, groups_prime=g, statistic=_lower,
                          n_runs=200, random_state=0)
    assert bad.violation, str(bad)


@pytest.mark.slow
def test_audit_of_the_learned_box_with_a_positive_control(monkeypatch):
    X, Xp, g = _box_neighbours()
    est = ClipNoiseMeanEstimator(epsilon=1.0, delta=1e-6, bounds_share=0.5)
    _audit_box(monkeypatch, est, X, Xp, g, 2000)


@pytest.mark.slow
def test_audit_of_the_box_accounted_in_zcdp_for_an_approx_estimator(monkeypatch):
    # WinsorizedMean with delta > 0 and 4 features: its box is accounted in
    # zCDP at half of (eps, delta) (bounds_share=0.5) and composed with its
    # (eps, delta) release by compose_spend. The moved user shifts every
    # column's median and spread; the statistic is the first column's lower
    # edge. The audit must pass; a box read off the data is flagged. (eps = 2:
    # at eps = 1, 400 users are too few for a box of 4 columns, and fit
    # refuses.)
    X1, Xp1, g = _box_neighbours()
    X, Xp = np.tile(X1, (1, 4)), np.tile(Xp1, (1, 4))
    est = WinsorizedMeanEstimator(epsilon=2.0, delta=1e-6, bounds_share=0.5)
    loss = split_for_public_bounds(2.0, 1e-6, 0.5, 8, zcdp=False, approx=True)[1]
    assert isinstance(loss, ZCDP)  # the zCDP route is the one audited
    _audit_box(monkeypatch, est, X, Xp, g, 1000)
