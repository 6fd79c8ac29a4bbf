"""Tests of PrivateRange (Levy et al., Algorithm 6) and its segment sampler.

Oracles: the naive exponential mechanism over every bin,
``P(k) ∝ exp(-ε max(#{bins < k}, #{bins > k}) / 2)`` (spec §3.1, §7 item 1),
enumerated bin by bin; the window argument of spec [E3].
"""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chi2, chisquare, kstest

from skuserdp.mechanisms import private_range, private_range_window
from skuserdp.mechanisms._private_range import (
    MAX_BINS,
    bin_indices,
    sample_bins,
    score_segments,
)


# ---------------------------------------------------------------- oracles
def _naive_scores(bins, n_bins):
    """c(k) = max(#{values in bins < k}, #{values in bins > k}) for every bin."""
    bins = np.asarray(bins)
    k = np.arange(n_bins)[:, None]
    return np.maximum((bins < k).sum(axis=1), (bins > k).sum(axis=1))


def _naive_log_weights(bins, n_bins, epsilon):
    return -epsilon * _naive_scores(bins, n_bins) / 2.0


def _normalise(log_w):
    log_w = np.asarray(log_w, dtype=float)
    top = log_w.max(axis=-1, keepdims=True)
    p = np.exp(log_w - top)
    return p / p.sum(axis=-1, keepdims=True)


def _expand_segments(row, start, size, log_weight, n_rows, n_bins):
    """Per-bin log-weight of every row from the segment representation."""
    out = np.full((n_rows, n_bins), np.nan)
    for r, s, m, lw in zip(row, start, size, log_weight):
        if m == 0:
            continue
        assert np.all(np.isnan(out[r, s:s + m])), "segments overlap"
        out[r, s:s + m] = lw - math.log(m)
    return out


def _segment_log_weights(sorted_bins, n_bins, epsilon):
    sorted_bins = np.asarray(sorted_bins, dtype=np.int64)
    epsilon = np.broadcast_to(np.asarray(epsilon, float), (sorted_bins.shape[0],))
    segs = score_segments(sorted_bins, n_bins, np.ascontiguousarray(epsilon))
    return _expand_segments(*segs, sorted_bins.shape[0], n_bins)


# ------------------------------------------- segment representation (exact)
def test_segments_equal_naive_enumeration_on_random_instances():
    rng = np.random.default_rng(20240601)
    bound = 1.0
    n_checked_rows = 0
    for trial in range(300):
        n_bins = int(rng.integers(1, 11))
        width = 2.0 * bound / n_bins * rng.choice([1.0, 0.93, 0.81])
        n_bins = math.ceil(2.0 * bound / width)
        n = int(rng.integers(1, 9))
        n_rows = int(rng.integers(1, 6))
        # bins by construction; the values sit well inside their bin
        kind = trial % 4
        if kind == 0:  # all values in one bin
            bins = np.repeat(rng.integers(0, n_bins, size=(n_rows, 1)), n, axis=1)
        elif kind == 1:  # crowded at the two ends
            bins = rng.choice([0, n_bins - 1], size=(n_rows, n))
        else:
            bins = rng.integers(0, n_bins, size=(n_rows, n))
        values = -bound + (bins + rng.uniform(0.05, 0.95, size=bins.shape)) * width
        # values outside [-B, B] belong to the end bins
        out_low = (bins == 0) & (rng.random(bins.shape) < 0.5)
        out_high = (bins == n_bins - 1) & (rng.random(bins.shape) < 0.5)
        values[out_low] = -bound - rng.exponential(10.0, size=out_low.sum())
        values[out_high] = bound + rng.exponential(10.0, size=out_high.sum())
        np.testing.assert_array_equal(
            bin_indices(values, bound, width, n_bins), bins)

        epsilon = rng.choice([0.05, 0.5, 1.0, 3.0, 7.5], size=n_rows)
        sorted_bins = np.sort(bins, axis=1)
        row, start, size, log_weight = score_segments(
            sorted_bins, n_bins, epsilon)
        assert np.all(np.diff(row) >= 0)
        assert np.all(size >= 0)
        assert np.all(np.isneginf(log_weight[size == 0]))
        got = _expand_segments(row, start, size, log_weight, n_rows, n_bins)
        for r in range(n_rows):
            # the non-empty segments of row r tile 0..l-1 exactly
            mine = (row == r) & (size > 0)
            order = np.argsort(start[mine])
            s, m = start[mine][order], size[mine][order]
            assert s[0] == 0
            np.testing.assert_array_equal(s[1:], (s + m)[:-1])
            assert s[-1] + m[-1] == n_bins
            # 2r + 1 segments (some possibly empty) for r occupied bins
            assert np.sum(row == r) == 2 * len(np.unique(bins[r])) + 1
            expected = _naive_log_weights(bins[r], n_bins, epsilon[r])
            np.testing.assert_allclose(got[r], expected, rtol=0, atol=1e-12)
            n_checked_rows += 1
    assert n_checked_rows > 500


def test_segments_of_a_known_instance():
    # l = 10 bins, values in bins 2, 2, 5, 5, 7 (n = 5)
    sorted_bins = np.array([[2, 2, 5, 5, 7]])
    got = _segment_log_weights(sorted_bins, 10, 2.0)[0]
    scores = np.array([5, 5, 3, 3, 3, 2, 4, 4, 5, 5])
    np.testing.assert_allclose(got, -scores, rtol=0, atol=1e-12)


# ----------------------------------------------------------- exact sampler
def test_sampler_frequencies_match_exact_em_with_empty_bins():
    bound, width, eps = 1.0, 0.2, 1.0
    values = np.array([-0.55, -0.45, 0.05, 0.15, 0.47])  # bins 2, 2, 5, 5, 7
    n_bins = 10
    bins = bin_indices(values, bound, width, n_bins)
    np.testing.assert_array_equal(bins, [2, 2, 5, 5, 7])
    p = _normalise(_naive_log_weights(bins, n_bins, eps))
    empty = np.setdiff1d(np.arange(n_bins), bins)
    assert empty.size == 7 and np.all(p[empty] > 0.04)

    n_draws = 200_000
    V = np.broadcast_to(values, (n_draws, values.size))
    draws, l_out = sample_bins(V, np.full(n_draws, eps), bound, width,
                               np.random.default_rng(7))
    assert l_out == n_bins
    assert draws.shape == (n_draws,) and draws.min() >= 0
    counts = np.bincount(draws, minlength=n_bins)
    assert counts.size == n_bins
    # every empty bin gets mass
    assert np.all(counts[empty] > 0)
    stat, pvalue = chisquare(counts, p * n_draws)
    # reject at level 1e-3: the chi-square(l - 1) critical value
    assert stat <= chi2.ppf(1 - 1e-3, df=n_bins - 1)
    assert pvalue >= 1e-3


def test_sampler_per_row_epsilon_and_log_space_stability():
    # rows with a huge ε pick the unique minimum-score bin (bin 5) with
    # probability 1 - O(e^-5000): the weights would underflow in linear space
    values = np.array([-0.55, -0.45, 0.05, 0.15, 0.47])
    eps = np.array([1e4, 1e-9] * 500)
    V = np.broadcast_to(values, (eps.size, values.size))
    draws, _ = sample_bins(V, eps, 1.0, 0.2, np.random.default_rng(3))
    assert np.all(draws[::2] == 5)
    # the ε ≈ 0 rows are (to 5e-9) uniform over the 10 bins
    counts = np.bincount(draws[1::2], minlength=10)
    stat, _ = chisquare(counts)
    assert stat <= chi2.ppf(1 - 1e-3, df=9)


def test_private_range_midpoints_are_bin_midpoints():
    bound, tau = 1.0, 0.1
    values = np.array([-0.55, -0.45, 0.05, 0.15, 0.47])
    V = np.broadcast_to(values, (2000, values.size))
    lo, hi = private_range(V, 0.5, tau=tau, bound=bound, random_state=11)
    mid = 0.5 * (lo + hi)
    k = np.rint((mid + bound) / (2 * tau) - 0.5)
    np.testing.assert_allclose(mid, -bound + (k + 0.5) * 2 * tau, atol=1e-12)
    assert k.min() >= 0 and k.max() <= 9
    np.testing.assert_allclose(hi - lo, 6 * tau, rtol=1e-12)
    # every bin, empty or not, is reachable (P(bin) >= 0.07 at ε = 0.5)
    assert np.unique(k).size == 10


# ------------------------------------------------------------- privacy map
def _all_neighbouring_pairs(n_bins, n):
    datasets, pairs = [], []
    index = {}

    def idx(bins):
        key = tuple(sorted(bins))
        if key not in index:
            index[key] = len(datasets)
            datasets.append(key)
        return index[key]

    for ms in itertools.combinations_with_replacement(range(n_bins), n):
        a = idx(ms)
        for i in range(n):
            for b in range(n_bins):
                if b != ms[i]:
                    other = list(ms)
                    other[i] = b
                    pairs.append((a, idx(other)))
    return np.array(datasets, dtype=np.int64), np.array(pairs)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_privacy_map_over_all_neighbouring_pairs(epsilon):
    n_bins, n = 5, 4
    datasets, pairs = _all_neighbouring_pairs(n_bins, n)
    assert len(pairs) == 70 * n * (n_bins - 1)
    p_seg = _normalise(_segment_log_weights(datasets, n_bins, epsilon))
    p_naive = _normalise(np.stack(
        [_naive_log_weights(d, n_bins, epsilon) for d in datasets]))
    np.testing.assert_allclose(p_seg, p_naive, rtol=1e-12, atol=0)
    for p in (p_seg, p_naive):
        log_ratio = np.log(p[pairs[:, 0]]) - np.log(p[pairs[:, 1]])
        worst = log_ratio.max()
        assert worst <= epsilon + 1e-12
        # the bound is not loose by a factor 2: a mechanism at ε/2 would fail
        assert worst > epsilon / 2


# ------------------------------------------------------------------ window
def test_window_halfwidth():
    assert private_range_window(1.0) == 3.0
    assert private_range_window(1.0, 0.5) == 2.25
    for tau in (0.1, 0.37, 5.0):
        assert private_range_window(tau) == pytest.approx(3 * tau, rel=1e-15)
        for w in (0.01, tau, 2 * tau, 7.0):
            assert private_range_window(tau, w) == pytest.approx(
                2 * tau + w / 2, rel=1e-15)


def test_window_contains_concentrated_values_when_score_below_n():
    rng = np.random.default_rng(5)
    n_tested = n_not_best = n_paper_clips = 0
    for layout in range(200):
        bound = float(rng.uniform(1.0, 10.0))
        tau = float(bound * 10 ** rng.uniform(-2, -1))
        width = None if layout % 3 == 0 else float(tau * 2 ** rng.uniform(-2, 2))
        w = 2 * tau if width is None else width
        n_rows, n = 20, int(rng.integers(1, 21))
        x0 = rng.uniform(-bound + tau, bound - tau, size=(n_rows, 1))
        V = x0 + rng.uniform(-tau, tau, size=(n_rows, n))
        V[:, 0] = x0[:, 0] - tau  # extreme configurations
        V[:, -1] = x0[:, 0] + tau
        # εn between 10 and 30: mostly bins of score < n, not only the best
        eps = rng.uniform(10.0, 30.0) / n
        lo, hi = private_range(V, eps, tau=tau, bound=bound, bin_width=width,
                               random_state=layout)
        half = private_range_window(tau, width)
        np.testing.assert_allclose(hi - lo, 2 * half, rtol=1e-12)
        mid = 0.5 * (lo + hi)
        k = np.rint((mid + bound) / w - 0.5).astype(np.int64)
        n_bins = math.ceil(2 * bound / w)
        bins = bin_indices(V, bound, w, n_bins)
        for r in range(n_rows):
            scores = _naive_scores(bins[r], n_bins)
            if scores[k[r]] < n:
                n_tested += 1
                n_not_best += scores[k[r]] > scores.min()
                assert lo[r] <= V[r].min() and V[r].max() <= hi[r]
                # the paper's ±2τ window around the same midpoint
                n_paper_clips += not (mid[r] - 2 * tau <= V[r].min()
                                      and V[r].max() <= mid[r] + 2 * tau)
    assert n_tested > 2000
    assert n_not_best > 100  # not only the best bin is exercised
    # the check is sharp enough to catch the paper's narrower window
    assert n_paper_clips > 0


def test_paper_window_clips_in_edge_case_e3():
    # Spec [E3]: p a bin midpoint, values at p + 0.6τ and p + 2.4τ (both within
    # τ of x0 = p + 1.5τ), sampled midpoint p: ±2τ cuts p + 2.4τ off, ±3τ not.
    bound, tau = 1.0, 0.1
    p = 0.1  # midpoint of bin 5 = [0, 0.2)
    x0 = p + 1.5 * tau
    values = np.array([p + 0.6 * tau, p + 2.4 * tau])
    assert np.all(np.abs(values - x0) <= tau)
    np.testing.assert_array_equal(bin_indices(values, bound, 2 * tau, 10), [5, 6])
    V = np.broadcast_to(values, (400, 2))
    lo, hi = private_range(V, 1.0, tau=tau, bound=bound, random_state=3)
    at_p = np.isclose(0.5 * (lo + hi), p, rtol=0, atol=1e-12)
    # P(midpoint p) = e^{-1/2} / (2 e^{-1/2} + 8 e^{-1}) ≈ 0.146
    assert at_p.sum() > 20
    assert np.all(hi[at_p] >= values.max()) and np.all(lo[at_p] <= values.min())
    assert p + 2 * tau < values.max()  # the paper's ±2τ window would clip


# --------------------------------------------------------------------- API
def test_api_shapes_types_and_reproducibility():
    x = np.random.default_rng(0).uniform(0.30, 0.35, size=50)
    x_copy = x.copy()
    out = private_range(x, 0.2, tau=0.05, bound=10.0, random_state=1)
    assert isinstance(out, tuple) and len(out) == 2
    assert all(type(v) is float for v in out)
    assert out == private_range(x, 0.2, tau=0.05, bound=10.0, random_state=1)
    np.testing.assert_array_equal(x, x_copy)
    # a list works too
    assert out == private_range(list(x), 0.2, tau=0.05, bound=10.0, random_state=1)

    X = np.random.default_rng(1).normal(size=(7, 30))
    X_copy = X.copy()
    lo, hi = private_range(X, np.linspace(0.01, 0.1, 7), tau=0.5, bound=100.0,
                           random_state=2)
    assert isinstance(lo, np.ndarray) and lo.shape == (7,) and hi.shape == (7,)
    np.testing.assert_array_equal(X, X_copy)
    lo2, hi2 = private_range(X, np.linspace(0.01, 0.1, 7), tau=0.5, bound=100.0,
                             random_state=2)
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(hi, hi2)
    # with ε this small the output spreads over 200 bins: other seeds differ
    lo3, _ = private_range(X, np.linspace(0.01, 0.1, 7), tau=0.5, bound=100.0,
                           random_state=3)
    assert not np.array_equal(lo, lo3)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(values=[0.0, np.nan]),
        dict(values=[0.0, np.inf]),
        dict(values=[-np.inf, 0.0]),
        dict(values=[]),
        dict(values=np.zeros((2, 0))),
        dict(values=np.zeros((2, 2, 2))),
        dict(epsilon=0.0),
        dict(epsilon=-1.0),
        dict(epsilon=np.inf),
        dict(epsilon=np.nan),
        dict(values=np.zeros((3, 4)), epsilon=[1.0, 0.0, 1.0]),
        dict(values=np.zeros((3, 4)), epsilon=[1.0, 1.0]),
        dict(tau=0.0),
        dict(tau=-0.1),
        dict(tau=np.inf),
        dict(tau=np.nan),
        dict(tau=True),
        dict(bound=0.0),
        dict(bound=-1.0),
        dict(bound=np.inf),
        dict(bin_width=0.0),
        dict(bin_width=-0.2),
        # 2B / w = 1e13 bins > MAX_BINS
        dict(tau=1.0, bound=1e13),
        dict(tau=0.5, bound=MAX_BINS * 0.5 * 1.001),
    ],
)
def test_bad_inputs(kwargs):
    args = dict(values=[0.0, 1.0], epsilon=1.0, tau=0.1, bound=1.0)
    args.update(kwargs)
    values, epsilon = args.pop("values"), args.pop("epsilon")
    with pytest.raises(ValueError):
        private_range(values, epsilon, random_state=0, **args)


def test_max_bins_boundary_is_accepted():
    # exactly MAX_BINS bins: allowed, and sampled without enumerating them
    bound = float(MAX_BINS)
    lo, hi = private_range([3.0, 3.5, 4.0], 1.0, tau=1.0, bound=bound,
                           random_state=0)
    assert -bound - 3.0 <= lo < hi <= bound + 3.0
    assert hi - lo == pytest.approx(6.0, abs=1e-3)  # ulp(1e12) ≈ 1.2e-4


# (x + B) / w overflows to ±inf for |x| near the float64 maximum and w < 1;
# the clipped bin is still right, only numpy's RuntimeWarning is emitted.
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_extreme_finite_values_go_to_the_end_bins():
    x = np.array([-1.7e308, -1.7e308, 1.7e308])
    lo, hi = private_range(x, 50.0, tau=0.25, bound=1.0, random_state=0)
    # l = 4 bins, ε = 50: the lowest bin (score 1) beats the three others
    # (score 2) w.p. 1 - O(3 e^{-25})
    assert (lo, hi) == pytest.approx((-1.0 + 0.25 - 0.75, -1.0 + 0.25 + 0.75))


# ------------------------------------------------------------ huge ranges
def test_concentrated_data_far_inside_a_huge_range():
    # B/τ = 1e6 (l = 1e6 bins), n = 2000, ε = 1: a bin of score n is drawn
    # with probability <= l exp(-εn/4) = 1e6 e^{-500}, so all 100 windows
    # contain every value (a 1-in-100 failure is allowed nonetheless).
    tau, bound, n = 1.0, 1e6, 2000
    rng = np.random.default_rng(42)
    contained = 0
    for seed in range(100):
        x0 = rng.uniform(-bound + tau, bound - tau)
        x = x0 + rng.uniform(-tau, tau, size=n)
        lo, hi = private_range(x, 1.0, tau=tau, bound=bound, random_state=seed)
        assert hi - lo == pytest.approx(6 * tau)
        contained += lo <= x.min() and x.max() <= hi
    assert contained >= 99


def test_tiny_epsilon_spreads_uniformly_over_a_huge_range():
    # n = 3 values in one bin, ε = 1e-3: every bin has weight within a factor
    # e^{0.0015} of the others, so the midpoints are (to 1e-5 in
    # Kolmogorov distance) uniform on [-B, B] — empty bins far away included.
    tau, bound = 1.0, 1e6
    V = np.broadcast_to([0.1, 0.2, 0.3], (5000, 3))
    lo, hi = private_range(V, 1e-3, tau=tau, bound=bound, random_state=9)
    mid = 0.5 * (lo + hi)
    assert kstest(mid, "uniform", args=(-bound, 2 * bound)).pvalue >= 1e-3
