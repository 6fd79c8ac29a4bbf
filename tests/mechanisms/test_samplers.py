"""Tests for the exact discrete samplers in ``skuserdp.mechanisms._samplers``.

Statistical tests use fixed seeds and thresholds fixed in advance:

* Bernoulli frequencies: exact two-sided binomial test, reject if p < 1e-6;
* goodness of fit: Pearson chi-square against the exact normalised pmf, bins
  pooled so that every expected count is >= 5, reject if p < 1e-4.

A correct sampler fails one of these with probability at most the stated
level for a given seed.
"""

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from skuserdp.mechanisms._samplers import (
    _square_divmod,
    _uniform_below,
    bernoulli_exp,
    bernoulli_rational,
    round_up_fraction,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)

BINOMIAL_LEVEL = 1e-6
GOF_LEVEL = 1e-4
INT64_MAX = 2**63 - 1


def _assert_binomial(successes, n, p):
    """Exact two-sided binomial test of ``successes`` out of ``n`` against ``p``."""
    pvalue = stats.binomtest(int(successes), n, float(p)).pvalue
    assert pvalue > BINOMIAL_LEVEL, (successes, n, float(p), pvalue)


def _gof_pvalue(samples, cdf, edges):
    """Chi-square goodness-of-fit p-value of integer ``samples``.

    Bins are ``(-inf, edges[0])``, ``[edges[i], edges[i + 1])`` and
    ``[edges[-1], inf)``; ``cdf(x)`` returns P[X <= x] for an integer array.
    Adjacent bins are pooled from the left until each expected count is >= 5
    (a short remainder on the right joins the last pooled bin).
    """
    edges = np.asarray(edges, dtype=np.int64)
    n = samples.size
    cum = np.concatenate([[0.0], cdf(edges - 1), [1.0]])
    probs = np.diff(cum)
    assert np.all(probs >= -1e-15)
    observed = np.bincount(
        np.searchsorted(edges, samples.ravel(), side="right"),
        minlength=edges.size + 1,
    )
    pooled_obs, pooled_exp = [], []
    acc_obs, acc_exp = 0, 0.0
    for o, p in zip(observed, probs * n):
        acc_obs += o
        acc_exp += p
        if acc_exp >= 5:
            pooled_obs.append(acc_obs)
            pooled_exp.append(acc_exp)
            acc_obs, acc_exp = 0, 0.0
    pooled_obs[-1] += acc_obs
    pooled_exp[-1] += acc_exp
    assert len(pooled_obs) >= 3
    pooled_exp = np.array(pooled_exp)
    pooled_exp *= n / pooled_exp.sum()
    return stats.chisquare(pooled_obs, pooled_exp).pvalue


def _laplace_cdf(scale):
    """Exact-formula CDF of the discrete Laplace, P[X=x] ~ exp(-|x|/scale).

    With r = exp(-1/scale): P[X <= x] = r**(-x) / (1 + r) for x < 0 and
    1 - r**(x + 1) / (1 + r) for x >= 0.
    """
    r = math.exp(-1.0 / float(scale))

    def cdf(x):
        x = np.asarray(x, dtype=np.float64)
        neg = np.exp(np.minimum(x, 0) / float(scale)) / (1 + r)
        pos = 1.0 - np.exp(-(np.maximum(x, 0) + 1) / float(scale)) / (1 + r)
        return np.where(x < 0, neg, pos)

    return cdf


def _gaussian_cdf(sigma2):
    """CDF of the discrete Gaussian by direct summation over +-40 sigma."""
    sigma = math.sqrt(float(sigma2))
    m = int(math.ceil(40 * sigma)) + 1
    xs = np.arange(-m, m + 1, dtype=np.float64)
    weights = np.exp(-(xs * xs) / (2.0 * float(sigma2)))
    cum = np.cumsum(weights)
    cum /= cum[-1]

    def cdf(x):
        x = np.asarray(x, dtype=np.int64)
        return np.where(x < -m, 0.0, cum[np.clip(x + m, 0, 2 * m)])

    return cdf


# ---------------------------------------------------------------------------
# bernoulli_rational
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "num, den",
    [
        (0, 1),
        (1, 1),
        (1, 3),
        (2, 7),
        (2**61 - 1, 2**61),
        (1, 2**61),
        (2**60 + 12345, 2**61 + 1),
        (2**62, INT64_MAX),
        (INT64_MAX - 1, INT64_MAX),
        # Denominators beyond int64: Python-int (object) path.
        (2**62, 2**63 + 1),
        (10**30 // 3, 10**30 + 7),
        (10**30 + 6, 10**30 + 7),
        (1, 10**30 + 7),
        (10**30 + 7, 10**30 + 7),
    ],
)
def test_bernoulli_rational_frequency(num, den):
    rng = np.random.default_rng(20240601)
    n = 100_000
    draws = bernoulli_rational(num, den, rng, size=n)
    assert draws.dtype == bool and draws.shape == (n,)
    _assert_binomial(draws.sum(), n, Fraction(num, den))


def test_bernoulli_rational_int64_and_object_paths_agree():
    n = 200_000
    small = bernoulli_rational(1, 3, np.random.default_rng(1), size=n)
    big = bernoulli_rational(10**30, 3 * 10**30, np.random.default_rng(2), size=n)
    _assert_binomial(small.sum(), n, Fraction(1, 3))
    _assert_binomial(big.sum(), n, Fraction(1, 3))
    table = [[small.sum(), n - small.sum()], [big.sum(), n - big.sum()]]
    assert stats.chi2_contingency(table).pvalue > BINOMIAL_LEVEL


def test_bernoulli_rational_mixed_object_array_broadcasts():
    # One huge denominator forces the whole array onto the Python-int path.
    num = np.array([0, 1, 10**30, 2**62, 5], dtype=object)
    den = np.array([1, 3, 3 * 10**30 + 1, 2**63 + 5, 5], dtype=object)
    n = 50_000
    draws = bernoulli_rational(num, den, np.random.default_rng(3), size=(n, 5))
    assert draws.shape == (n, 5) and draws.dtype == bool
    for j in range(5):
        _assert_binomial(draws[:, j].sum(), n, Fraction(int(num[j]), int(den[j])))


def test_bernoulli_rational_broadcast_shape():
    rng = np.random.default_rng(4)
    out = bernoulli_rational(np.array([[0], [1], [2]]), np.array([2, 4, 8, 16]), rng)
    assert out.shape == (3, 4)
    assert not out[0].any()
    assert bernoulli_rational(3, 3, rng).shape == ()


# ---------------------------------------------------------------------------
# bernoulli_exp
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gamma",
    [
        Fraction(0),
        Fraction(1, 10**9),
        Fraction(1, 2),
        Fraction(1),
        Fraction(5, 2),
        Fraction(29, 4),
        # Python-int (object) denominators.
        Fraction(10**30 + 1, 2 * 10**30 + 7),
        Fraction(3 * 10**30 + 1, 10**30),
    ],
)
def test_bernoulli_exp_frequency(gamma):
    rng = np.random.default_rng(777)
    n = 200_000
    draws = bernoulli_exp(gamma.numerator, gamma.denominator, rng, size=n)
    assert draws.dtype == bool and draws.shape == (n,)
    _assert_binomial(draws.sum(), n, math.exp(-float(gamma)))


def test_bernoulli_exp_array_of_gammas():
    num = np.array([0, 1, 3, 7, 2])
    den = np.array([1, 4, 2, 2, 1])
    n = 100_000
    draws = bernoulli_exp(num, den, np.random.default_rng(8), size=(n, 5))
    for j in range(5):
        _assert_binomial(draws[:, j].sum(), n, math.exp(-num[j] / den[j]))


@pytest.mark.parametrize("num, den", [(40, 1), (10**18, 1), (10**40, 3)])
def test_bernoulli_exp_large_gamma_is_fast_and_false(num, den):
    # P[True] <= exp(-40) ~ 4e-18: any True is a bug. A loop of length
    # floor(gamma) would not finish for the two huge values.
    rng = np.random.default_rng(9)
    start = time.perf_counter()
    draws = bernoulli_exp(num, den, rng, size=100_000)
    elapsed = time.perf_counter() - start
    assert not draws.any()
    assert elapsed < 10.0


# ---------------------------------------------------------------------------
# Discrete Laplace
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scale, width",
    [
        (Fraction(1, 3), 1),
        (1, 1),
        (Fraction(15, 2), 1),
        (1000, 50),
        (0.3, 1),
        # Numerator t beyond int64: uniform U drawn as Python ints.
        (Fraction(2**64 + 1, 2**10), 2**50),
    ],
)
def test_discrete_laplace_goodness_of_fit(scale, width):
    rng = np.random.default_rng(31337)
    n = 100_000
    x = sample_discrete_laplace(scale, n, rng)
    assert x.dtype == np.int64 and x.shape == (n,)
    half = int(math.ceil(40 * float(scale))) + 5
    edges = np.arange(-half, half + 1, width)
    pvalue = _gof_pvalue(x, _laplace_cdf(scale), edges)
    assert pvalue > GOF_LEVEL


def test_discrete_laplace_cdf_reference():
    # The reference CDF used above matches the normalised pmf.
    scale = Fraction(15, 2)
    r = math.exp(-1 / float(scale))
    xs = np.arange(-400, 401)
    pmf = (1 - r) / (1 + r) * np.exp(-np.abs(xs) / float(scale))
    cdf = _laplace_cdf(scale)(xs)
    np.testing.assert_allclose(np.diff(cdf), pmf[1:], rtol=1e-9, atol=1e-15)


# ---------------------------------------------------------------------------
# Discrete Gaussian
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sigma2, width",
    [
        (Fraction(1, 4), 1),
        (1, 1),
        (10, 1),
        (Fraction(10**8, 3), 250),
        # int64 denominator, but squares beyond int64 for |Y| > ~4 sigma:
        # mixed int64 / Python-int path.
        (10**9, 1000),
        (Fraction(10**10, 3), 2500),
    ],
)
def test_discrete_gaussian_goodness_of_fit(sigma2, width):
    rng = np.random.default_rng(4242)
    n = 100_000
    x = sample_discrete_gaussian(sigma2, n, rng)
    assert x.dtype == np.int64 and x.shape == (n,)
    half = int(math.ceil(10 * math.sqrt(float(sigma2)))) + 5
    edges = np.arange(-half, half + 1, width)
    pvalue = _gof_pvalue(x, _gaussian_cdf(sigma2), edges)
    assert pvalue > GOF_LEVEL


def test_discrete_gaussian_large_sigma2_needs_python_ints():
    # For sigma2 = 10**10 / 3 the acceptance denominator 2 p q t**2 exceeds
    # int64, so the goodness-of-fit case above runs the object-dtype path.
    sigma2 = Fraction(10**10, 3)
    p, q = sigma2.numerator, sigma2.denominator
    t = math.isqrt(p // q) + 1
    assert 2 * p * q * t * t > INT64_MAX


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), 10])
def test_discrete_gaussian_second_moment(sigma2):
    # E[X^2] against the exact reference value, with a 6 standard-error bound.
    n = 200_000
    x = sample_discrete_gaussian(sigma2, n, np.random.default_rng(12)).astype(float)
    xs = np.arange(-200, 201, dtype=float)
    w = np.exp(-xs**2 / (2 * float(sigma2)))
    w /= w.sum()
    var = (w * xs**2).sum()
    fourth = (w * xs**4).sum()
    se = math.sqrt((fourth - var**2) / n)
    assert abs((x**2).mean() - var) < 6 * se


def test_square_divmod_matches_python_ints():
    # Mixed int64 / Python-int arithmetic of the Gaussian acceptance exponent.
    rng = np.random.default_rng(13)
    a = np.concatenate(
        [
            rng.integers(-(2**31), 2**31, size=200),
            rng.integers(-(2**62), 2**62, size=200),
            [0, 3037000499, -3037000500, INT64_MAX, -INT64_MAX],
        ]
    ).astype(np.int64)
    for den in [7, 2 * 10**18 + 3, 2**63 - 25, 2**70 + 1]:
        whole, rem = _square_divmod(a, den)
        expected = [divmod(int(v) * int(v), den) for v in a]
        assert [int(w) for w in whole] == [e[0] for e in expected]
        assert [int(r) for r in rem] == [e[1] for e in expected]
        if den <= INT64_MAX:
            assert rem.dtype == np.int64


def test_uniform_below_python_ints():
    high = 3 * 2**64 + 5
    n = 60_000
    u = _uniform_below(high, n, np.random.default_rng(14))
    assert u.dtype == object
    assert all(0 <= int(v) < high for v in u)
    # Twelve bins of (nearly) equal width; edge effects are O(2**-60).
    counts = np.bincount([int(v) * 12 // high for v in u], minlength=12)
    assert stats.chisquare(counts).pvalue > GOF_LEVEL


# ---------------------------------------------------------------------------
# Shapes, dtypes, reproducibility
# ---------------------------------------------------------------------------

SAMPLERS = [
    (sample_discrete_laplace, Fraction(7, 3)),
    (sample_discrete_gaussian, Fraction(10**9, 7)),
]


@pytest.mark.parametrize("sampler, param", SAMPLERS)
@pytest.mark.parametrize("size, shape", [(7, (7,)), ((2, 3), (2, 3)), (0, (0,))])
def test_shapes_and_dtype(sampler, param, size, shape):
    out = sampler(param, size, np.random.default_rng(0))
    assert out.shape == shape
    assert out.dtype == np.int64


@pytest.mark.parametrize("sampler, param", SAMPLERS)
def test_size_none_returns_scalar(sampler, param):
    out = sampler(param, None, np.random.default_rng(0))
    assert isinstance(out, np.int64)


@pytest.mark.parametrize("sampler, param", SAMPLERS)
def test_reproducible(sampler, param):
    a = sampler(param, 1000, np.random.default_rng(5))
    b = sampler(param, 1000, np.random.default_rng(5))
    c = sampler(param, 1000, np.random.default_rng(6))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_float_scale_is_read_exactly():
    a = sample_discrete_laplace(0.1, 500, np.random.default_rng(3))
    b = sample_discrete_laplace(Fraction(0.1), 500, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_bernoulli_reproducible():
    a = bernoulli_exp(3, 7, np.random.default_rng(5), size=1000)
    b = bernoulli_exp(3, 7, np.random.default_rng(5), size=1000)
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------
# round_up_fraction
# ---------------------------------------------------------------------------


def test_round_up_fraction_examples():
    assert round_up_fraction(0.1, denominator_bits=4) == Fraction(1, 8)
    assert round_up_fraction(Fraction(3, 8), denominator_bits=3) == Fraction(3, 8)
    assert round_up_fraction(Fraction(3, 8), denominator_bits=2) == Fraction(1, 2)
    assert round_up_fraction(5) == 5
    assert round_up_fraction(1e-9) == Fraction(1, 2**20)


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(
    x=st.floats(min_value=1e-30, max_value=1e30, allow_nan=False),
    bits=st.integers(min_value=0, max_value=80),
)
def test_round_up_fraction_is_smallest_upper_bound(x, bits):
    r = round_up_fraction(x, denominator_bits=bits)
    assert isinstance(r, Fraction)
    assert (r * 2**bits).denominator == 1
    assert r >= Fraction(x)
    assert r - Fraction(1, 2**bits) < Fraction(x)


# ---------------------------------------------------------------------------
# Continuous samplers (analysis only)
# ---------------------------------------------------------------------------


def test_continuous_samplers():
    rng = np.random.default_rng(10)
    n = 100_000
    lap = sample_laplace(2.0, n, rng)
    gau = sample_gaussian(3.0, (n,), rng)
    assert lap.shape == gau.shape == (n,)
    # E|Laplace(b)| = b with sd b; E[N(0, s)^2] = s^2 with sd sqrt(2) s^2.
    assert abs(np.abs(lap).mean() - 2.0) < 6 * 2.0 / math.sqrt(n)
    assert abs((gau**2).mean() - 9.0) < 6 * math.sqrt(2) * 9.0 / math.sqrt(n)


# ---------------------------------------------------------------------------
# Argument validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, Fraction(-1, 2), 0.0, -2.5, math.nan, math.inf])
@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_discrete_gaussian])
def test_bad_scale_raises(sampler, bad):
    with pytest.raises(ValueError):
        sampler(bad, 3, np.random.default_rng(0))


@pytest.mark.parametrize("bad", ["1", None, True, complex(1, 0)])
@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_discrete_gaussian])
def test_bad_scale_type_raises(sampler, bad):
    with pytest.raises(TypeError):
        sampler(bad, 3, np.random.default_rng(0))


@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_discrete_gaussian])
def test_bad_size_and_rng(sampler):
    with pytest.raises(ValueError):
        sampler(1, -1, np.random.default_rng(0))
    with pytest.raises(TypeError):
        sampler(1, 2.5, np.random.default_rng(0))
    with pytest.raises(TypeError):
        sampler(1, 3, None)
    with pytest.raises(TypeError):
        sampler(1, 3, np.random.RandomState(0))


@pytest.mark.parametrize(
    "num, den",
    [(4, 3), (-1, 3), (1, 0), (0, -2), (10**30 + 1, 10**30), ([1, 5], [2, 4])],
)
def test_bernoulli_rational_bad_values(num, den):
    with pytest.raises(ValueError):
        bernoulli_rational(num, den, np.random.default_rng(0))


@pytest.mark.parametrize("num, den", [(-1, 3), (1, 0), (-(10**30), 7)])
def test_bernoulli_exp_bad_values(num, den):
    with pytest.raises(ValueError):
        bernoulli_exp(num, den, np.random.default_rng(0))


@pytest.mark.parametrize("func", [bernoulli_rational, bernoulli_exp])
def test_bernoulli_bad_types(func):
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError):
        func(0.5, 1, rng)
    with pytest.raises(TypeError):
        func(np.array([1, Fraction(1, 2)], dtype=object), 2, rng)
    with pytest.raises(TypeError):
        func(np.array([True]), 2, rng)
    with pytest.raises(TypeError):
        func(1, 2, "rng")


def test_round_up_fraction_bad_values():
    with pytest.raises(ValueError):
        round_up_fraction(0)
    with pytest.raises(ValueError):
        round_up_fraction(-0.5)
    with pytest.raises(ValueError):
        round_up_fraction(math.inf)
    with pytest.raises(ValueError):
        round_up_fraction(1.0, denominator_bits=-1)


@pytest.mark.parametrize("func", [sample_laplace, sample_gaussian])
def test_continuous_bad_scale(func):
    with pytest.raises(ValueError):
        func(0.0, 3, np.random.default_rng(0))
    with pytest.raises(ValueError):
        func(-1.0, 3, np.random.default_rng(0))
    with pytest.raises(TypeError):
        func(1.0, 3, None)
