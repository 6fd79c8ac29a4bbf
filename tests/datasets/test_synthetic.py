"""Tests for skuserdp.datasets.make_user_samples.

Statistical checks use fixed seeds and bounds derived from the sampling law,
each stated next to its assertion. Unless said otherwise a bound is 6
standard errors (two-sided false-failure probability about 2e-9 per
coordinate under a normal approximation) or a test p-value threshold of 1e-6.
"""

import math

import numpy as np
import pytest
from scipy import stats

from skuserdp.datasets import make_user_samples

DISTRIBUTIONS = ["gaussian", "bounded", "student_t", "pareto"]
SQRT3 = math.sqrt(3.0)
Z = 6.0  # number of standard errors in CLT-type bounds
P_MIN = 1e-6  # p-value threshold of goodness-of-fit tests


def _symmetric_lomax_cdf(a):
    """CDF of a fair random sign times a Lomax(a) variable."""

    def cdf(x):
        x = np.asarray(x, dtype=float)
        tail = 0.5 * (1.0 + np.abs(x)) ** (-a)
        return np.where(x < 0, tail, 1.0 - tail)

    return cdf


# --------------------------------------------------------------------------
# Shapes, dtypes, reproducibility
# --------------------------------------------------------------------------


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_shapes_and_dtypes(distribution):
    X, groups, true_mean = make_user_samples(
        n_users=7, n_features=3, samples_per_user=4, distribution=distribution,
        random_state=0,
    )
    assert X.shape == (28, 3)
    assert X.dtype == np.float64
    assert groups.shape == (28,)
    assert groups.dtype == np.int64
    assert true_mean.shape == (3,)
    assert true_mean.dtype == np.float64
    assert np.all(np.isfinite(X))


def test_single_user_single_feature():
    X, groups, true_mean = make_user_samples(
        1, 1, samples_per_user=1, random_state=0
    )
    assert X.shape == (1, 1)
    assert groups.tolist() == [0]
    assert true_mean.shape == (1,)


def test_defaults():
    X, groups, true_mean = make_user_samples(random_state=0)
    assert X.shape == (1000, 2)
    assert np.array_equal(np.bincount(groups), np.full(100, 10))
    assert true_mean.shape == (2,)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_reproducible_with_int_seed(distribution):
    kwargs = dict(
        n_users=20, n_features=2, samples_per_user=(1, 5), distribution=distribution,
        corrupted_fraction=0.2,
    )
    a = make_user_samples(**kwargs, random_state=3)
    b = make_user_samples(**kwargs, random_state=3)
    c = make_user_samples(**kwargs, random_state=4)
    for u, v in zip(a, b):
        assert np.array_equal(u, v)
    assert not np.array_equal(a[2], c[2])
    if a[0].shape == c[0].shape:
        assert not np.array_equal(a[0], c[0])


def test_seed_sequence_and_random_state_accepted():
    ss = np.random.SeedSequence(11)
    a = make_user_samples(n_users=5, random_state=ss)
    b = make_user_samples(n_users=5, random_state=np.random.SeedSequence(11))
    assert np.array_equal(a[0], b[0])
    rs = np.random.RandomState(0)
    c = make_user_samples(n_users=5, random_state=rs)
    d = make_user_samples(n_users=5, random_state=rs)  # instance is advanced
    assert not np.array_equal(c[0], d[0])


def test_none_random_state_uses_fresh_entropy():
    np.random.seed(0)
    a = make_user_samples(n_users=5)
    np.random.seed(0)
    b = make_user_samples(n_users=5)
    assert not np.array_equal(a[0], b[0])


# --------------------------------------------------------------------------
# Users, counts and shuffling
# --------------------------------------------------------------------------


def test_fixed_counts_every_user_present():
    _, groups, _ = make_user_samples(
        n_users=13, samples_per_user=6, random_state=0
    )
    assert np.array_equal(np.bincount(groups, minlength=13), np.full(13, 6))


def test_random_counts_within_bounds():
    n_users, low, high = 3000, 2, 5
    _, groups, _ = make_user_samples(
        n_users=n_users, samples_per_user=(low, high), random_state=1
    )
    counts = np.bincount(groups, minlength=n_users)
    assert counts.shape == (n_users,)
    assert counts.min() >= low and counts.max() <= high
    # Both end points are included: P(a value is missing) <= 4 * (3/4)^3000.
    assert set(np.unique(counts)) == {2, 3, 4, 5}
    # Mean of a discrete uniform on {2..5}: 3.5, variance (4^2 - 1) / 12.
    se = math.sqrt((4**2 - 1) / 12 / n_users)
    assert abs(counts.mean() - 3.5) < Z * se


def test_degenerate_count_range():
    _, groups, _ = make_user_samples(
        n_users=9, samples_per_user=(3, 3), random_state=0
    )
    assert np.array_equal(np.bincount(groups), np.full(9, 3))


def test_shuffle_false_keeps_users_in_order():
    _, groups, _ = make_user_samples(
        n_users=40, samples_per_user=(1, 4), shuffle=False, random_state=0
    )
    counts = np.bincount(groups)
    assert np.array_equal(groups, np.repeat(np.arange(40), counts))


def test_shuffle_interleaves_same_rows():
    kwargs = dict(n_users=40, samples_per_user=5, random_state=0)
    X_sorted, g_sorted, mu_sorted = make_user_samples(**kwargs, shuffle=False)
    X_shuf, g_shuf, mu_shuf = make_user_samples(**kwargs, shuffle=True)
    # 200 rows of 40 users: sorted by chance with negligible probability.
    assert np.any(np.diff(g_shuf) < 0)
    assert np.array_equal(mu_sorted, mu_shuf)
    # Same rows, same owners; only the order changes.
    for u in range(40):
        a = X_sorted[g_sorted == u]
        b = X_shuf[g_shuf == u]
        assert np.array_equal(a[np.lexsort(a.T)], b[np.lexsort(b.T)])


# --------------------------------------------------------------------------
# Moments and laws
# --------------------------------------------------------------------------


@pytest.mark.parametrize("samples_per_user", [20, (5, 30)])
def test_gaussian_empirical_mean_clt(samples_per_user):
    user_spread, sample_spread = 0.5, 1.0
    X, groups, true_mean = make_user_samples(
        n_users=2000, n_features=3, samples_per_user=samples_per_user,
        user_spread=user_spread, sample_spread=sample_spread, random_state=5,
    )
    counts = np.bincount(groups)
    n_rows = counts.sum()
    # Row mean = mu + user_spread * sum_u c_u xi_u / N + sample_spread * mean(eta):
    # variance per coordinate user_spread^2 sum c_u^2 / N^2 + sample_spread^2 / N.
    se = math.sqrt(
        user_spread**2 * np.sum(counts.astype(float) ** 2) / n_rows**2
        + sample_spread**2 / n_rows
    )
    assert np.all(np.abs(X.mean(axis=0) - true_mean) < Z * se)


@pytest.mark.parametrize("distribution,tail_index,eta_var", [
    ("student_t", 5.0, 5.0 / 3.0),  # nu / (nu - 2)
    ("pareto", 5.0, 2.0 / (4.0 * 3.0)),  # 2 / ((a - 1)(a - 2))
])
def test_heavy_tailed_empirical_mean_clt(distribution, tail_index, eta_var):
    # tail_index 5: third moments are finite, so the normal approximation holds.
    user_spread, sample_spread, n_users, m = 0.5, 1.0, 2000, 20
    X, _, true_mean = make_user_samples(
        n_users=n_users, n_features=2, samples_per_user=m,
        distribution=distribution, tail_index=tail_index,
        user_spread=user_spread, sample_spread=sample_spread, random_state=6,
    )
    se = math.sqrt(
        user_spread**2 / n_users + sample_spread**2 * eta_var / (n_users * m)
    )
    assert np.all(np.abs(X.mean(axis=0) - true_mean) < Z * se)


def test_bounded_rows_in_public_box():
    user_spread, sample_spread = 0.7, 1.3
    X, _, true_mean = make_user_samples(
        n_users=500, n_features=4, samples_per_user=(1, 20), distribution="bounded",
        user_spread=user_spread, sample_spread=sample_spread, random_state=2,
    )
    radius = SQRT3 * (user_spread + sample_spread)
    assert np.all(np.abs(X - true_mean) <= radius)


def _noise_law(distribution, tail_index, scale):
    if distribution == "gaussian":
        return stats.norm(scale=scale).cdf
    if distribution == "bounded":
        return stats.uniform(loc=-SQRT3 * scale, scale=2 * SQRT3 * scale).cdf
    if distribution == "student_t":
        return stats.t(tail_index, scale=scale).cdf
    lomax = _symmetric_lomax_cdf(tail_index)
    return lambda x: lomax(np.asarray(x) / scale)


@pytest.mark.parametrize("distribution,tail_index", [
    ("gaussian", None), ("bounded", None), ("student_t", None), ("student_t", 1.5),
    ("pareto", None), ("pareto", 1.5),
])
def test_row_noise_law_ks(distribution, tail_index):
    # user_spread=0 and one row per user: X - mu = sample_spread * eta exactly.
    sample_spread = 2.0
    X, _, true_mean = make_user_samples(
        n_users=10000, n_features=2, samples_per_user=1, distribution=distribution,
        tail_index=tail_index, user_spread=0.0, sample_spread=sample_spread,
        mean=[1.0, -3.0], random_state=7,
    )
    default = {"student_t": 5.0, "pareto": 3.0}.get(distribution)
    cdf = _noise_law(distribution, tail_index or default, sample_spread)
    for j in range(2):
        assert stats.kstest(X[:, j] - true_mean[j], cdf).pvalue > P_MIN


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_user_offset_law_ks(distribution):
    # sample_spread=0: every row of user u equals mu_u = mu + user_spread * xi_u.
    user_spread = 0.5
    X, groups, true_mean = make_user_samples(
        n_users=10000, n_features=2, samples_per_user=(1, 3),
        distribution=distribution, user_spread=user_spread, sample_spread=0.0,
        shuffle=False, random_state=8,
    )
    counts = np.bincount(groups)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    user_means = X[first]
    assert np.array_equal(X, user_means[groups])
    law = "bounded" if distribution == "bounded" else "gaussian"
    cdf = _noise_law(law, None, user_spread)
    for j in range(2):
        assert stats.kstest(user_means[:, j] - true_mean[j], cdf).pvalue > P_MIN


@pytest.mark.parametrize("distribution,tail_index,sd", [
    ("student_t", 5.0, math.sqrt(5.0 / 3.0)),
    ("pareto", 3.0, 1.0),
])
def test_heavier_tails_than_gaussian(distribution, tail_index, sd):
    # Pure row noise (user_spread=0, one row per user, mean 0), standardised by
    # the law's standard deviation; count |eta| > 4 sd.
    n, threshold = 100000, 4.0
    kwargs = dict(
        n_users=n, n_features=1, samples_per_user=1, user_spread=0.0, mean=0.0,
    )
    X_g, _, _ = make_user_samples(**kwargs, random_state=9)
    X_h, _, _ = make_user_samples(
        **kwargs, distribution=distribution, tail_index=tail_index, random_state=9
    )
    p_g = 2 * stats.norm.sf(threshold)  # ~6.3e-5
    if distribution == "student_t":
        p_h = 2 * stats.t.sf(threshold * sd, tail_index)
    else:
        p_h = (1.0 + threshold * sd) ** (-tail_index)
    # Binomial counts: upper / lower bounds at 6 standard deviations.
    upper_g = n * p_g + Z * math.sqrt(n * p_g)
    lower_h = n * p_h - Z * math.sqrt(n * p_h)
    assert lower_h > upper_g  # the design separates the two laws
    count_g = np.sum(np.abs(X_g) > threshold)
    count_h = np.sum(np.abs(X_h / sd) > threshold)
    assert count_g <= upper_g
    assert count_h >= lower_h
    assert np.max(np.abs(X_h / sd)) > np.max(np.abs(X_g))


@pytest.mark.parametrize("distribution,tail_index", [
    ("student_t", 1.5), ("student_t", 5.0), ("pareto", 1.5), ("pareto", 3.0),
])
def test_heavy_tailed_user_means_are_centred(distribution, tail_index):
    # Every user mean is symmetric about mu with a continuous law, so the number
    # of user means above mu is exactly Binomial(n_users, 1/2) in each
    # coordinate (a sign test on the median, valid even without a variance).
    n_users = 4000
    X, groups, true_mean = make_user_samples(
        n_users=n_users, n_features=2, samples_per_user=(1, 10),
        distribution=distribution, tail_index=tail_index, mean=[0.3, -2.0],
        random_state=10,
    )
    counts = np.bincount(groups)
    user_means = np.stack(
        [np.bincount(groups, weights=X[:, j]) / counts for j in range(2)], axis=1
    )
    above = np.sum(user_means > true_mean, axis=0)
    assert np.all(np.abs(above - n_users / 2) <= Z * math.sqrt(n_users) / 2)


@pytest.mark.parametrize("distribution,tail_index,density_at_0", [
    ("student_t", 1.5, stats.t.pdf(0.0, 1.5)),
    ("pareto", 1.5, 1.5 / 2),  # Lomax density a at 0, halved by the sign
    ("pareto", 3.0, 3.0 / 2),
])
def test_heavy_tailed_row_median(distribution, tail_index, density_at_0):
    # Pure row noise: the sample median of n i.i.d. rows has asymptotic standard
    # error 1 / (2 f(0) sqrt(n)).
    n = 20001
    X, _, true_mean = make_user_samples(
        n_users=n, n_features=2, samples_per_user=1, distribution=distribution,
        tail_index=tail_index, user_spread=0.0, mean=[5.0, -5.0], random_state=11,
    )
    se = 1.0 / (2.0 * density_at_0 * math.sqrt(n))
    assert np.all(np.abs(np.median(X, axis=0) - true_mean) < Z * se)


def test_tail_index_ignored_for_light_tails():
    for distribution in ["gaussian", "bounded"]:
        a = make_user_samples(distribution=distribution, random_state=0)
        b = make_user_samples(distribution=distribution, tail_index=2.5, random_state=0)
        assert np.array_equal(a[0], b[0])


def test_default_tail_index():
    for distribution, default in [("student_t", 5.0), ("pareto", 3.0)]:
        a = make_user_samples(distribution=distribution, random_state=0)
        b = make_user_samples(
            distribution=distribution, tail_index=default, random_state=0
        )
        assert np.array_equal(a[0], b[0])


def test_zero_spreads_give_constant_rows():
    X, _, true_mean = make_user_samples(
        n_users=10, user_spread=0.0, sample_spread=0.0, random_state=0
    )
    assert np.array_equal(X, np.broadcast_to(true_mean, X.shape))


# --------------------------------------------------------------------------
# Corruption
# --------------------------------------------------------------------------


def _corrupted_users(X, groups, outlier):
    is_outlier_row = np.all(X == outlier, axis=1)
    users = np.unique(groups[is_outlier_row])
    # A user is corrupted in full or not at all.
    for u in users:
        assert np.all(is_outlier_row[groups == u])
    return users


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("n_users,fraction,expected", [
    (50, 0.3, 15), (100, 0.29, 29), (7, 0.5, 3), (1, 0.9, 0), (10, 0.0, 0),
])
def test_corrupted_users(distribution, n_users, fraction, expected):
    distance = 37.5
    X, groups, true_mean = make_user_samples(
        n_users=n_users, n_features=3, samples_per_user=(1, 4),
        distribution=distribution, corrupted_fraction=fraction,
        corruption_distance=distance, random_state=12,
    )
    outlier = true_mean + distance * np.array([1.0, 0.0, 0.0])
    assert len(_corrupted_users(X, groups, outlier)) == expected
    assert len(np.unique(groups)) == n_users


def test_corrupted_users_are_random_and_clean_rows_unchanged():
    kwargs = dict(n_users=30, samples_per_user=(1, 5), mean=0.0)
    X0, g0, mu0 = make_user_samples(**kwargs, random_state=13)
    X1, g1, mu1 = make_user_samples(**kwargs, corrupted_fraction=0.2, random_state=13)
    assert np.array_equal(g0, g1)
    assert np.array_equal(mu0, mu1)  # true_mean is the clean mean
    outlier = mu1 + np.array([100.0, 0.0])
    bad = _corrupted_users(X1, g1, outlier)
    assert len(bad) == 6
    clean_rows = ~np.isin(g1, bad)
    assert np.array_equal(X0[clean_rows], X1[clean_rows])
    # Different seeds pick different users (all 5 equal has tiny probability).
    chosen = {
        tuple(_corrupted_users(*make_user_samples(
            **kwargs, corrupted_fraction=0.2, random_state=s)[:2], outlier))
        for s in range(5)
    }
    assert len(chosen) > 1


# --------------------------------------------------------------------------
# mean handling
# --------------------------------------------------------------------------


def test_mean_none_drawn_in_unit_box():
    means = np.array([
        make_user_samples(n_users=2, n_features=5, random_state=s)[2]
        for s in range(20)
    ])
    assert np.all(np.abs(means) <= 1.0)
    assert len(np.unique(means[:, 0])) == 20
    again = make_user_samples(n_users=2, n_features=5, random_state=0)[2]
    assert np.array_equal(means[0], again)


@pytest.mark.parametrize("mean", [2.5, np.float32(2.5), np.array(2.5)])
def test_mean_scalar(mean):
    _, _, true_mean = make_user_samples(n_features=3, mean=mean, random_state=0)
    assert np.array_equal(true_mean, np.full(3, 2.5))


@pytest.mark.parametrize("mean", [[1.0, -2.0, 3.0], np.array([1, -2, 3]), (1, -2, 3)])
def test_mean_array(mean):
    _, _, true_mean = make_user_samples(n_features=3, mean=mean, random_state=0)
    assert np.array_equal(true_mean, [1.0, -2.0, 3.0])
    assert true_mean.dtype == np.float64


def test_mean_array_not_aliased():
    mean = np.array([1.0, 2.0])
    _, _, true_mean = make_user_samples(mean=mean, random_state=0)
    true_mean[0] = 99.0
    assert mean[0] == 1.0


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,name", [
    (dict(n_users=0), "n_users"),
    (dict(n_users=2.5), "n_users"),
    (dict(n_features=0), "n_features"),
    (dict(samples_per_user=0), "samples_per_user"),
    (dict(samples_per_user=2.0), "samples_per_user"),
    (dict(samples_per_user=(0, 3)), "samples_per_user"),
    (dict(samples_per_user=(5, 2)), "samples_per_user"),
    (dict(samples_per_user=(1, 2, 3)), "samples_per_user"),
    (dict(samples_per_user=(1.0, 2)), "samples_per_user"),
    (dict(samples_per_user=[1, 2]), "samples_per_user"),
    (dict(distribution="cauchy"), "distribution"),
    (dict(user_spread=-1.0), "user_spread"),
    (dict(user_spread=np.inf), "user_spread"),
    (dict(sample_spread=-0.1), "sample_spread"),
    (dict(sample_spread=np.nan), "sample_spread"),
    (dict(tail_index=1.0), "tail_index"),
    (dict(tail_index=0.5), "tail_index"),
    (dict(tail_index=np.inf), "tail_index"),
    (dict(corrupted_fraction=1.0), "corrupted_fraction"),
    (dict(corrupted_fraction=-0.1), "corrupted_fraction"),
    (dict(corruption_distance=-1.0), "corruption_distance"),
    (dict(shuffle="yes"), "shuffle"),
    (dict(random_state=-1), "random_state"),
    (dict(random_state="seed"), "random_state"),
    (dict(mean=np.nan), "mean"),
    (dict(mean=[1.0, 2.0, 3.0]), "mean"),
    (dict(mean=[[1.0, 2.0]]), "mean"),
    (dict(mean=[np.nan, 0.0]), "mean"),
    (dict(mean=["a", "b"]), "mean"),
    (dict(mean="abc"), "mean"),
])
def test_invalid_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_user_samples(**kwargs)


def test_keyword_only():
    with pytest.raises(TypeError):
        make_user_samples(10, 2, 5)
