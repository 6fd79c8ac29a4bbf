"""Tests of the lattice path and of the additive-noise privacy maps."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from skuserdp.mechanisms import (
    DiscreteGaussianNoise,
    DiscreteLaplaceNoise,
    add_noise,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    choose_grid,
    encode_contributions,
    exact_sum,
    release_on_lattice,
    round_to_grid,
)
from skuserdp.mechanisms._additive import CHUNK_SIZE
from skuserdp.privacy import (
    lattice_contribution_radius,
    zcdp_to_approx_dp,
)


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
@pytest.mark.parametrize("dim", [1, 7, 1000])
@pytest.mark.parametrize("radius", [1e-6, 1.0, 3e5])
def test_choose_grid_is_power_of_two_with_small_widening(norm, dim, radius):
    grid = choose_grid(radius, dim, 10_000, norm)
    assert math.frexp(grid)[0] == 0.5
    units = radius / grid
    bound = lattice_contribution_radius(units, dim, norm)
    assert bound / units - 1 <= 2 ** -10  # rounding widens by at most ~0.1 %
    assert 10_000 * bound < 2 ** 52       # sums stay exact


def test_choose_grid_trades_resolution_for_exactness_with_many_users():
    grid = choose_grid(1.0, 1000, 10 ** 12, "l2")
    assert 10 ** 12 * lattice_contribution_radius(1.0 / grid, 1000, "l2") < 2 ** 52
    with pytest.raises(ValueError, match="too large"):
        choose_grid(1.0, 10, 2 ** 53, "l2")
    with pytest.raises(ValueError):
        choose_grid(0.0, 1, 10, "l2")
    with pytest.raises(ValueError):
        choose_grid(1.0, 1, 10, "l5")


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    norm=st.sampled_from(["l1", "l2", "linf"]),
    n=st.integers(1, 20),
    d=st.integers(1, 6),
    radius=st.floats(1e-3, 1e3),
)
def test_encoded_contributions_respect_the_claimed_radius(data, norm, n, d, radius):
    V = data.draw(arrays(np.float64, (n, d), elements=st.floats(-1e4, 1e4)))
    center = data.draw(arrays(np.float64, (d,), elements=st.floats(-10, 10)))
    grid = choose_grid(radius, d, n, norm)
    V_copy = V.copy()
    K = encode_contributions(V, center=center, radius=radius, grid=grid, norm=norm)
    np.testing.assert_array_equal(V, V_copy)
    bound = lattice_contribution_radius(radius / grid, d, norm)
    Kf = K.astype(float)
    norms = {"l1": np.abs(Kf).sum(1), "l2": np.sqrt((Kf ** 2).sum(1)),
             "linf": np.abs(Kf).max(1)}[norm]
    assert (norms <= bound * (1 + 1e-12)).all()
    # contributions already inside the ball are only rounded
    D = V - center
    inside = {"l1": np.abs(D).sum(1), "l2": np.sqrt((D ** 2).sum(1)),
              "linf": np.abs(D).max(1)}[norm] <= radius
    assert np.all(np.abs(K[inside] * grid - D[inside]) <= grid / 2 * (1 + 1e-9))


def test_encode_clips_far_users_radially():
    K = encode_contributions(np.array([[30.0, 40.0]]), center=np.zeros(2), radius=1.0,
                             grid=2.0 ** -10, norm="l2")
    np.testing.assert_allclose(K[0] * 2.0 ** -10, [0.6, 0.8], atol=2.0 ** -10)
    with pytest.raises(ValueError, match="power of two"):
        encode_contributions(np.zeros((1, 1)), center=0.0, radius=1.0, grid=0.3)
    with pytest.raises(ValueError, match="finite"):
        encode_contributions(np.array([[np.inf]]), center=0.0, radius=1.0, grid=0.5)


def test_encode_repairs_rows_that_fail_the_exact_check(monkeypatch):
    # Simulate float round-off in clipping that leaves a row slightly outside
    # the ball: the exact integer check must catch and shrink it.
    import skuserdp.mechanisms._lattice as lat

    monkeypatch.setattr(lat, "_clip", lambda D, r, norm: D * 1.01)
    grid = 2.0 ** -4
    K = lat.encode_contributions(np.array([[1.0, 0.0], [0.0, -1.0]]), center=0.0,
                                 radius=1.0, grid=grid, norm="l2")
    bound = lattice_contribution_radius(1.0 / grid, 2, "l2")
    assert (np.sqrt((K.astype(float) ** 2).sum(1)) <= bound).all()


def test_exact_sum_is_exact():
    rng = np.random.default_rng(0)
    K = rng.integers(-(2 ** 40), 2 ** 40, size=(1000, 3), dtype=np.int64)
    assert exact_sum(K).tolist() == [sum(int(v) for v in K[:, j]) for j in range(3)]
    with pytest.raises(ValueError):
        exact_sum(K.astype(float))


def test_round_to_grid():
    assert round_to_grid([0.3, -1.2], 0.5).tolist() == [1, -2]
    with pytest.raises(ValueError):
        round_to_grid([1e300], 2.0 ** -10)
    with pytest.raises(ValueError):
        round_to_grid([1.0], 0.3)


# ------------------------------------------------------- additive noise
def test_discrete_laplace_privacy_map_is_exact():
    # For integer shifts v, max_z log p(z)/p(z+v) = |v|/b exactly.
    noise = DiscreteLaplaceNoise(Fraction(5, 2))
    z = np.arange(-200, 201)
    logp = -np.abs(z) / 2.5
    for shift in [1, 3, 7]:
        worst = np.max(logp[shift:] - logp[:-shift])
        assert worst == pytest.approx(noise.privacy(shift).epsilon, rel=1e-12)


def test_discrete_gaussian_privacy_map_bounds_renyi_divergences():
    # ρ-zCDP means D_α(P||Q) <= αρ for all α > 1; check numerically for the
    # discrete Gaussian with integer shifts (CKS20 Thm 14).
    sigma2 = Fraction(9, 4)
    noise = DiscreteGaussianNoise(sigma2)
    z = np.arange(-80, 81, dtype=float)
    logw = -z ** 2 / (2 * float(sigma2))
    logZ = np.logaddexp.reduce(logw)
    for shift in [1, 2, 5]:
        rho = noise.privacy(shift).rho
        assert rho == pytest.approx(shift ** 2 / (2 * 2.25))
        logq = -(z - shift) ** 2 / (2 * float(sigma2))
        for alpha in [1.5, 2.0, 4.0, 10.0]:
            # D_α = 1/(α-1) log Σ p^α q^(1-α), both normalised by the same Z
            terms = alpha * (logw - logZ) + (1 - alpha) * (logq - logZ)
            val = np.logaddexp.reduce(terms)
            assert val / (alpha - 1) <= alpha * rho * (1 + 1e-9)


def test_tight_discrete_gaussian_meets_target_exactly_in_one_dimension():
    # Exact hockey-stick divergence of the 1-D discrete Gaussian at the
    # calibrated σ², for the integer sensitivity it was calibrated for.
    for sens, eps, delta in [(3, 1.0, 1e-6), (10, 0.5, 1e-5), (1, 2.0, 1e-9)]:
        noise = calibrate_discrete_gaussian(sens, eps, delta)
        s2 = float(noise.sigma2)
        z = np.arange(-int(60 * math.sqrt(s2)) - sens, int(60 * math.sqrt(s2)) + sens)
        logw = -z.astype(float) ** 2 / (2 * s2)
        logZ = np.logaddexp.reduce(logw)
        p = np.exp(logw - logZ)
        q = np.exp(-(z - sens).astype(float) ** 2 / (2 * s2) - logZ)
        hockey = np.sum(np.maximum(0.0, p - math.exp(eps) * q))
        assert hockey <= delta
        assert zcdp_to_approx_dp(noise.privacy(sens), delta).epsilon <= eps


def test_calibrated_noise_never_below_target():
    lap = calibrate_discrete_laplace(3.0, 0.7)
    assert lap.privacy(3.0).epsilon <= 0.7
    assert float(lap.scale) >= 3.0 / 0.7
    gau = calibrate_discrete_gaussian(3.0, 0.7, 1e-7, calibration="paper")
    assert float(gau.sigma2) >= (3.0 * math.sqrt(2 * math.log(1.25e7)) / 0.7) ** 2
    with pytest.raises(ValueError):
        calibrate_discrete_gaussian(3.0, 0.7, 1e-7, calibration="analytic")


def test_add_noise_independent_of_n_jobs_and_reproducible():
    values = np.zeros(2 * CHUNK_SIZE + 5, dtype=np.int64)
    noise = DiscreteGaussianNoise(Fraction(100))
    a = add_noise(values, noise, np.random.SeedSequence(3), n_jobs=1)
    b = add_noise(values, noise, np.random.SeedSequence(3), n_jobs=2)
    c = add_noise(values, noise, np.random.SeedSequence(4), n_jobs=1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # chunks use different streams: no chunk repeats another's noise
    assert not np.array_equal(a[:CHUNK_SIZE], a[CHUNK_SIZE:2 * CHUNK_SIZE])
    with pytest.raises(ValueError):
        add_noise(values.astype(float), noise, np.random.SeedSequence(0))


def test_release_on_lattice_outputs_grid_points():
    out = release_on_lattice(np.linspace(-1, 1, 50), 2.0 ** -6,
                             DiscreteLaplaceNoise(Fraction(64)),
                             np.random.SeedSequence(1))
    units = out / 2.0 ** -6
    np.testing.assert_array_equal(units, np.round(units))


# ------------------------------------------- encode_sum: the sum, block by block
def _encode_sum_cases(rng):
    """(values, center, radius, grid, norm): data of every scale, zero rows,
    rows far outside, tiny rows, differences that overflow, odd grids."""
    for trial in range(240):
        n, d = int(rng.integers(1, 60)), int(rng.integers(1, 9))
        norm = ["l1", "l2", "linf"][trial % 3]
        scale = 10.0 ** rng.uniform(-200, 200) if trial % 4 == 0 else 1.0
        V = rng.standard_normal((n, d)) * scale
        if trial % 5 == 1:
            V[rng.random(n) < 0.3] = 0.0  # users exactly at the centre
        if trial % 5 == 2:
            V[rng.random((n, d)) < 0.2] = rng.choice([1e300, -1e300, 1e-300])
        if trial % 5 == 3:
            V = rng.integers(-3, 4, size=(n, d)).astype(float)
        if trial % 7 == 6:  # grids the fast path leaves to the general one
            scale = 2.0 ** int(rng.choice([-1000, 1000]))
            V = rng.standard_normal((n, d)) * scale
        center = rng.standard_normal(d) * scale if trial % 2 else 0.0
        radius = scale * 10.0 ** rng.uniform(-3, 3)
        yield V, center, radius, choose_grid(radius, d, n, norm), norm


@pytest.mark.parametrize("block_values", [1, 7, 1 << 17])
def test_encode_sum_is_the_exact_sum_of_the_encoded_rows(monkeypatch, block_values):
    import skuserdp.mechanisms._lattice as lat

    monkeypatch.setattr(lat, "_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(block_values)
    for V, center, radius, grid, norm in _encode_sum_cases(rng):
        kw = dict(center=center, radius=radius, grid=grid, norm=norm)
        with np.errstate(all="ignore"):
            expected = exact_sum(encode_contributions(V, **kw))
        total = lat.encode_sum(V, **kw)
        assert total.dtype == np.int64
        np.testing.assert_array_equal(total, expected)


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_encode_sum_takes_the_fast_path_and_repairs_failing_rows(monkeypatch, norm):
    # the float path is used on ordinary data, and a row that fails the exact
    # norm check there is shrunk in int64 exactly as encode_contributions does
    import skuserdp.mechanisms._lattice as lat

    calls = []
    fast = dict(lat._FAST_BLOCKS)
    monkeypatch.setattr(lat, "_FAST_BLOCKS", {
        k: (lambda *a, _f=f: calls.append(1) or _f(*a)) for k, f in fast.items()})
    rng = np.random.default_rng(0)
    monkeypatch.setattr(lat, "_BLOCK_VALUES", 6000)  # blocks of 2000 rows
    V = rng.standard_normal((5000, 3)) * 2.0
    grid = choose_grid(1.0, 3, 5000, norm)
    expected = exact_sum(encode_contributions(V, center=0.0, radius=1.0, grid=grid,
                                              norm=norm))
    total = lat.encode_sum(V, center=0.0, radius=1.0, grid=grid, norm=norm)
    np.testing.assert_array_equal(total, expected)
    assert len(calls) == 3  # every block, on the fast path
    # rows pushed outside the ball (as float round-off could) are shrunk in
    # int64 exactly as encode_contributions shrinks them
    monkeypatch.setattr(lat, "_FAST_BLOCKS", {
        k: (lambda *a, _f=f: np.rint(_f(*a) * 1.01)) for k, f in fast.items()})
    K = np.rint(encode_contributions(V, center=0.0, radius=1.0, grid=grid,
                                     norm=norm) * 1.01).astype(np.int64)
    bound = lattice_contribution_radius(1.0 / grid, 3, norm)
    assert not lat._row_norm_ok(K, bound, norm).all()  # some rows do fail
    expected = exact_sum(lat._shrink_failing_rows(K, bound, norm))
    total = lat.encode_sum(V, center=0.0, radius=1.0, grid=grid, norm=norm)
    np.testing.assert_array_equal(total, expected)


def test_encode_sum_refuses_what_encode_contributions_refuses():
    import skuserdp.mechanisms._lattice as lat

    for bad in [np.nan, np.inf]:
        with pytest.raises(ValueError, match="finite"):
            lat.encode_sum(np.array([[1.0], [bad]]), center=0.0, radius=1.0, grid=0.5)
    with pytest.raises(ValueError, match="power of two"):
        lat.encode_sum(np.zeros((1, 1)), center=0.0, radius=1.0, grid=0.3)
    assert lat.encode_sum(np.zeros((0, 2)), center=0.0, radius=1.0,
                          grid=0.5).tolist() == [0, 0]


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_encode_sum_of_gathered_shifted_clipped_rows(monkeypatch, norm):
    # rows, shift and box: the sum for clip(values[rows] - shift, -box, box),
    # read block by block from the caller's table (not modified)
    import skuserdp.mechanisms._lattice as lat

    monkeypatch.setattr(lat, "_BLOCK_VALUES", 7)
    rng = np.random.default_rng(1)
    V = rng.standard_normal((300, 4)) * 3.0 + 10.0
    V[5] = 1e300
    V_copy = V.copy()
    rows = rng.permutation(300)[:123]
    shift, box = np.full(4, 10.0), np.array([1.0, 2.0, 5.0, 100.0])
    grid = choose_grid(2.0, 4, 123, norm)
    for kw in [dict(rows=rows), dict(shift=shift), dict(rows=rows, shift=shift),
               dict(rows=rows, shift=shift, box=box), dict(box=box)]:
        W = V[kw["rows"]] if "rows" in kw else V
        with np.errstate(over="ignore"):
            W = W - kw["shift"] if "shift" in kw else W
        W = np.clip(W, -box, box) if "box" in kw else W
        with np.errstate(all="ignore"):
            expected = exact_sum(encode_contributions(W, center=0.5, radius=2.0,
                                                      grid=grid, norm=norm))
        got = lat.encode_sum(V, center=0.5, radius=2.0, grid=grid, norm=norm, **kw)
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(V, V_copy)
