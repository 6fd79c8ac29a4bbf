"""The post-processing of every interval (skuserdp.inference._intervals)."""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from skuserdp.inference import IntervalState, wald_half_width


# ---------------------------------------------------------------------------
# wald_half_width: exact cases
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.5])
@pytest.mark.parametrize("sd", [1e-3, 1.0, 7.5])
def test_normal_is_z(alpha, sd):
    assert wald_half_width(alpha, sd) == pytest.approx(
        sd * stats.norm.ppf(1 - alpha / 2), rel=1e-14)


@pytest.mark.parametrize("df", [1, 4, 29.5])
def test_t_is_the_t_quantile(df):
    assert wald_half_width(0.05, 2.0, df=df) == pytest.approx(
        2.0 * stats.t.ppf(0.975, df), rel=1e-14)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
@pytest.mark.parametrize("ell", [0.01, 1.0, 30.0])
def test_pure_laplace_is_minus_log_alpha(alpha, ell):
    # P(|L| <= h) = 1 - exp(-h / ell)
    assert wald_half_width(alpha, 0.0, laplace=ell) == pytest.approx(
        -ell * math.log(alpha), rel=1e-9)


def test_bias_only_and_nothing():
    assert wald_half_width(0.05, 0.0, bias=0.3) == 0.3
    assert wald_half_width(0.05, 0.0) == 0.0


@pytest.mark.parametrize("bias", [0.0, 0.1, 1.0, 5.0])
def test_bias_aware_is_the_root_of_the_normal_cdf(bias):
    # an independent root of P(|N(bias, 1)| <= h) = 0.95 (Armstrong & Kolesár)
    root = optimize.brentq(
        lambda h: stats.norm.cdf(h - bias) - stats.norm.cdf(-h - bias) - 0.95,
        0.0, bias + 10.0, xtol=1e-14)
    h = wald_half_width(0.05, 1.0, bias=bias)
    assert h == pytest.approx(root, rel=1e-9)
    # tighter than z + bias, never below z
    assert stats.norm.ppf(0.975) - 1e-9 <= h <= stats.norm.ppf(0.975) + bias + 1e-9
    if bias >= 1.0:  # far out, one tail only: bias + z_{1-alpha}
        assert h == pytest.approx(bias + stats.norm.ppf(0.95), abs=0.01)


def test_laplace_with_bias_closed_form():
    # sd = 0: P(|b + L| <= h) from the Laplace CDF
    ell, b, alpha = 1.5, 0.7, 0.05
    h = wald_half_width(alpha, 0.0, laplace=ell, bias=b)
    cdf = stats.laplace(scale=ell).cdf
    assert cdf(h - b) - cdf(-h - b) == pytest.approx(1 - alpha, abs=1e-10)


@pytest.mark.parametrize("sd, ell, bias, df", [
    (1.0, 0.8, 0.5, None),   # the closed form of N + Laplace
    (0.3, 2.0, 0.0, None),
    (1.0, 0.8, 0.5, 7),      # the quadrature of t + Laplace
])
def test_monte_carlo_coverage(sd, ell, bias, df):
    # X = bias + sd·T + Laplace(ell): P(|X| <= h) = 1 - alpha within 4
    # binomial standard deviations (fixed seed)
    alpha, n = 0.05, 200_000
    rng = np.random.default_rng(12345)
    t = rng.standard_normal(n) if df is None else rng.standard_t(df, n)
    x = bias + sd * t + rng.laplace(0.0, ell, n)
    h = wald_half_width(alpha, sd, laplace=ell, bias=bias, df=df)
    cover = np.mean(np.abs(x) <= h)
    tol = 4 * math.sqrt(alpha * (1 - alpha) / n)
    assert abs(cover - (1 - alpha)) <= tol, (cover, h)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, True, "0.05", None])
def test_alpha_is_checked(bad):
    with pytest.raises(ValueError, match="alpha"):
        wald_half_width(bad, 1.0)


@pytest.mark.parametrize("kw", [dict(sd=-1.0), dict(sd=math.inf),
                                dict(sd=1.0, laplace=-1), dict(sd=1.0, bias=math.nan)])
def test_parts_are_checked(kw):
    with pytest.raises(ValueError, match="finite"):
        wald_half_width(0.05, **kw)


# ---------------------------------------------------------------------------
# IntervalState
# ---------------------------------------------------------------------------

def _state(**kw):
    base = dict(estimate=np.array([1.0, -2.0]), sampling_std=np.array([0.3, 0.1]),
                noise_std=np.array([0.4, 0.0]), laplace_scale=np.array([0.0, 0.2]),
                bias_bound=np.array([0.0, 0.05]))
    base.update(kw)
    return IntervalState(**base)


def test_bounds_are_wald_per_row():
    st = _state()
    lo, hi = st.bounds(0.1)
    h0 = wald_half_width(0.1, 0.5)  # sqrt(0.3² + 0.4²)
    h1 = wald_half_width(0.1, 0.1, laplace=0.2, bias=0.05)
    np.testing.assert_allclose(hi - st.estimate, [h0, h1], rtol=1e-12)
    np.testing.assert_allclose(st.estimate - lo, [h0, h1], rtol=1e-12)
    np.testing.assert_allclose(st.std, np.sqrt([0.25, 0.01 + 2 * 0.04]))


def test_bounds_with_draws_are_percentiles():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(999, 2)) * [1.0, 3.0]
    st = _state(draws=draws, method="bootstrap")
    lo, hi = st.bounds(0.1)
    np.testing.assert_array_equal(lo, np.quantile(draws, 0.05, axis=0))
    np.testing.assert_array_equal(hi, np.quantile(draws, 0.95, axis=0))
    np.testing.assert_allclose(st.std, draws.std(axis=0, ddof=1))


def test_scaled_is_the_affine_map():
    draws = np.arange(10.0).reshape(5, 2)
    st = _state(draws=draws, df=5.0, bias_level=0.01, caveat="c", estimand="e")
    center, scale = np.array([10.0, 0.0]), np.array([2.0, -3.0])
    sc = st.scaled(center, scale)
    np.testing.assert_array_equal(sc.estimate, center + [2.0, 3.0] * st.estimate)
    for name in ("sampling_std", "noise_std", "laplace_scale", "bias_bound"):
        np.testing.assert_array_equal(getattr(sc, name), [2.0, 3.0] * getattr(st, name))
    np.testing.assert_array_equal(sc.draws, center + draws * [2.0, 3.0])
    assert (sc.df, sc.bias_level, sc.caveat, sc.estimand) == (5.0, 0.01, "c", "e")
    # Wald bounds scale with |scale| around the mapped estimate
    st = _state()
    lo, hi = st.bounds(0.05)
    slo, shi = st.scaled(center, scale).bounds(0.05)
    np.testing.assert_allclose(shi - slo, [2.0, 3.0] * (hi - lo), rtol=1e-9)


def test_bias_level_is_spent_first():
    st = _state(bias_level=0.005)
    lo, hi = st.bounds(0.05)
    lo2, hi2 = _state().bounds(0.045)
    np.testing.assert_allclose([lo, hi], [lo2, hi2], rtol=1e-12)
    for alpha in (0.005, 0.001):
        with pytest.raises(ValueError, match="bias"):
            st.bounds(alpha)


def test_nested_in_alpha():
    st = _state()
    lo1, hi1 = st.bounds(0.1)
    lo2, hi2 = st.bounds(0.05)
    assert np.all(lo2 < lo1) and np.all(hi1 < hi2)


@pytest.mark.parametrize("ell", [1e-11, 1e-6, 1e-3])
def test_tiny_laplace_next_to_a_normal(ell):
    # Laplace noise negligible against the sampling sd: the normal z (the
    # closed form once overflowed, e^{s²/2ℓ²})
    h = wald_half_width(0.05, 0.3, laplace=ell)
    assert h == pytest.approx(0.3 * stats.norm.ppf(0.975), rel=1e-4)
    assert wald_half_width(0.05, 0.3, laplace=ell, bias=0.2) == pytest.approx(
        wald_half_width(0.05, 0.3, bias=0.2), rel=1e-4)


@pytest.mark.parametrize("sd, ell", [(1.0, 0.02), (1.0, 0.8), (0.05, 3.0), (1.0, 40.0)])
def test_normal_laplace_cdf_against_quadrature(sd, ell):
    # the closed form against the convolution integral
    from scipy import integrate

    from skuserdp.inference._intervals import _normal_laplace_cdf

    for x in (-3.0, -0.4, 0.0, 0.7, 5.0):
        ref = integrate.quad(lambda c: stats.laplace.pdf(c, scale=ell)
                             * stats.norm.cdf((x - c) / sd), -np.inf, np.inf,
                             epsabs=1e-13, limit=400, points=None)[0]
        assert _normal_laplace_cdf(x, sd, ell) == pytest.approx(ref, abs=1e-8)
