"""Tests of the fast Walsh–Hadamard transform and the random Hadamard rotation.

Oracle: the dense Sylvester–Hadamard matrix ``scipy.linalg.hadamard`` (spec
§3.3, §6.4, §7 item 7). On integer-valued inputs the transform is exact in
float64, so the comparisons are exact. Round-off bounds elsewhere: each of the
``L = log2 d′`` butterfly levels adds a relative (normwise) error of at most
the unit round-off ``u`` of the (scaled) vector, so a rotation is accurate to
``(L + 1) u ‖x‖`` and a round trip to twice that (first order).
"""

import math

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import binom

from skuserdp.mechanisms import RandomHadamardRotation, fwht, padded_dimension

U_ROUND = np.finfo(np.float64).eps / 2


def _roundtrip_tol(d_padded):
    return 2 * (math.log2(d_padded) + 2) * U_ROUND


def _dense_along(a, axis):
    n = a.shape[axis]
    return np.moveaxis(np.tensordot(hadamard(n), a, axes=([1], [axis])), 0, axis)


# -------------------------------------------------------------------- fwht
@pytest.mark.parametrize("n", [2 ** j for j in range(9)])
def test_fwht_equals_dense_hadamard(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-1000, 1000, size=n).astype(float)
    np.testing.assert_array_equal(fwht(x), hadamard(n) @ x)
    # along axis 0 and 1 of 2-d and 3-d arrays (and a negative axis)
    A = rng.integers(-1000, 1000, size=(n, 3)).astype(float)
    np.testing.assert_array_equal(fwht(A), hadamard(n) @ A)
    np.testing.assert_array_equal(fwht(A.T, axis=1), (hadamard(n) @ A).T)
    T = rng.integers(-1000, 1000, size=(n, 2, 3)).astype(float)
    np.testing.assert_array_equal(fwht(T, axis=0), _dense_along(T, 0))
    T1 = np.ascontiguousarray(np.moveaxis(T, 0, 1))
    np.testing.assert_array_equal(fwht(T1, axis=1), _dense_along(T1, 1))
    T2 = np.ascontiguousarray(np.moveaxis(T, 0, 2))
    np.testing.assert_array_equal(fwht(T2, axis=-1), _dense_along(T2, 2))
    # H H = n I
    np.testing.assert_array_equal(fwht(fwht(A)), n * A)


def test_fwht_float_input_within_roundoff():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(256, 5))
    ref = hadamard(256) @ x
    err = np.linalg.norm(fwht(x) - ref, axis=0)
    # unnormalised: ‖H x‖ = 16 ‖x‖; (L + 1) u relative, L = 8, plus the dense
    # product's own round-off (256 terms, 256 u relative at most)
    tol = (8 + 1 + 256) * U_ROUND * np.linalg.norm(ref, axis=0)
    assert np.all(err <= tol)


def test_fwht_inplace_and_copy_semantics():
    rng = np.random.default_rng(2)
    A = rng.integers(-9, 9, size=(16, 4)).astype(float)
    expected = hadamard(16) @ A
    B = A.copy()
    out = fwht(B, inplace=True)
    assert out is B
    np.testing.assert_array_equal(B, expected)
    # not in place: the input is untouched (arrays and lists)
    C = A.copy()
    out = fwht(C)
    assert out is not C
    np.testing.assert_array_equal(C, A)
    np.testing.assert_array_equal(out, expected)
    lst = [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(fwht(lst), [10.0, -2.0, -4.0, 0.0])
    assert lst == [1.0, 2.0, 3.0, 4.0]
    # integer arrays are converted, not truncated or modified
    ints = np.array([1, 2, 3, 4])
    np.testing.assert_array_equal(fwht(ints), [10.0, -2.0, -4.0, 0.0])
    np.testing.assert_array_equal(ints, [1, 2, 3, 4])


@pytest.mark.parametrize(
    "call",
    [
        lambda: fwht(np.zeros(3)),
        lambda: fwht(np.zeros(6)),
        lambda: fwht(np.zeros(0)),
        lambda: fwht(np.zeros((4, 3)), axis=1),
        lambda: fwht(np.zeros(12)[::2]),  # length 6
        lambda: fwht(np.float64(1.0)),
        lambda: fwht(np.zeros(16)[::2], inplace=True),  # non-contiguous
        lambda: fwht(np.asfortranarray(np.zeros((4, 4))), inplace=True),
        lambda: fwht(np.zeros(8, dtype=np.float32), inplace=True),
        lambda: fwht(np.zeros(8, dtype=np.int64), inplace=True),
        lambda: fwht([0.0, 1.0], inplace=True),
        lambda: fwht(np.zeros((4, 4)), axis=1, inplace=True),
        lambda: fwht(np.zeros(3), inplace=True),
    ],
)
def test_fwht_bad_inputs(call):
    with pytest.raises(ValueError):
        call()


def test_fwht_inplace_rejects_read_only():
    a = np.zeros(8)
    a.flags.writeable = False
    with pytest.raises(ValueError):
        fwht(a, inplace=True)


# -------------------------------------------------------- padded dimension
def test_padded_dimension():
    assert [padded_dimension(d) for d in (1, 2, 3, 4, 5, 100, 128, 129)] == [
        1, 2, 4, 4, 8, 128, 128, 256]
    for d in range(1, 300):
        p = padded_dimension(d)
        assert p >= d and p & (p - 1) == 0 and (p == 1 or p // 2 < d)
    for bad in (0, -1):
        with pytest.raises(ValueError):
            padded_dimension(bad)


# ---------------------------------------------------------------- rotation
@pytest.mark.parametrize("d", [1, 2, 3, 5, 64, 100])
def test_rotation_matrix_is_h_diag_signs_over_sqrt_d(d):
    rot = RandomHadamardRotation(d, random_state=d)
    dp = padded_dimension(d)
    assert rot.n_features == d and rot.n_padded == dp
    assert rot.signs.shape == (dp,)
    assert set(np.unique(rot.signs)) <= {-1.0, 1.0}
    U = rot.rotate_columns(np.eye(dp))
    np.testing.assert_allclose(U @ U.T, np.eye(dp), rtol=0, atol=1e-10)
    expected = hadamard(dp) @ np.diag(rot.signs) / math.sqrt(dp)
    np.testing.assert_allclose(U, expected, rtol=4 * U_ROUND, atol=0)
    # rotate(X) is (U [X, 0]ᵀ)ᵀ: rotating the identity gives the first d
    # columns of U as rows
    np.testing.assert_allclose(rot.rotate(np.eye(d)), U[:, :d].T,
                               rtol=4 * U_ROUND, atol=0)
    # the inverse is Uᵀ
    np.testing.assert_allclose(rot.unrotate_columns(np.eye(dp)), U.T,
                               rtol=4 * U_ROUND, atol=0)


def test_signs_are_balanced_random_signs():
    # 64 * 256 = 16384 signs from 64 seeds: #(+1) ~ Binomial(16384, 1/2)
    signs = np.concatenate([RandomHadamardRotation(256, random_state=s).signs
                            for s in range(64)])
    n_plus = int(np.sum(signs == 1.0))
    lo, hi = binom.ppf(5e-4, signs.size, 0.5), binom.isf(5e-4, signs.size, 0.5)
    assert lo <= n_plus <= hi


@pytest.mark.parametrize("d", [3, 5, 100])
def test_roundtrip_and_norms_with_padding(d):
    rng = np.random.default_rng(d)
    rot = RandomHadamardRotation(d, random_state=0)
    X = rng.normal(size=(40, d)) * rng.uniform(0.1, 10, size=(40, 1))
    X_copy = X.copy()
    Y = rot.rotate(X)
    assert Y.shape == (40, padded_dimension(d))
    np.testing.assert_array_equal(X, X_copy)
    norms = np.linalg.norm(X, axis=1)
    tol = _roundtrip_tol(rot.n_padded)
    assert np.all(np.abs(np.linalg.norm(Y, axis=1) - norms) <= tol * norms)
    back = rot.unrotate(np.ascontiguousarray(Y))
    assert back.shape == X.shape
    assert np.all(np.linalg.norm(back - X, axis=1) <= tol * norms)
    # padding coordinates of Uᵀ Y vanish (up to round-off)
    full = rot.unrotate_columns(Y.T)
    assert np.all(np.linalg.norm(full[d:], axis=0) <= tol * norms)


def test_unrotate_does_not_modify_a_c_ordered_input():
    rot = RandomHadamardRotation(3, random_state=0)
    Y = np.arange(8.0).reshape(2, 4)
    rot.unrotate(Y)
    np.testing.assert_array_equal(Y, np.arange(8.0).reshape(2, 4))


@pytest.mark.parametrize("source", ["rotate", "fortran"])
def test_unrotate_does_not_modify_an_f_ordered_input(source):
    rot = RandomHadamardRotation(3, random_state=0)
    if source == "rotate":
        Y = rot.rotate(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    else:
        Y = np.asfortranarray(np.arange(8.0).reshape(2, 4))
    Y_copy = Y.copy()
    rot.unrotate(Y)
    np.testing.assert_array_equal(Y, Y_copy)


def test_rotate_columns_and_unrotate_columns_are_inverse():
    rng = np.random.default_rng(3)
    rot = RandomHadamardRotation(32, random_state=5)
    Xt = rng.normal(size=(32, 7))
    Xt_copy = Xt.copy()
    Yt = rot.rotate_columns(Xt)
    np.testing.assert_array_equal(Xt, Xt_copy)
    tol = _roundtrip_tol(32) * np.linalg.norm(Xt, axis=0)
    assert np.all(np.linalg.norm(rot.unrotate_columns(Yt) - Xt, axis=0) <= tol)
    assert np.all(np.linalg.norm(rot.rotate_columns(rot.unrotate_columns(Xt))
                                 - Xt, axis=0) <= tol)
    # in place: same object, same values as the copying path
    Z = Xt.copy()
    out = rot.rotate_columns(Z, inplace=True)
    assert out is Z
    np.testing.assert_array_equal(Z, Yt)
    out = rot.unrotate_columns(Z, inplace=True)
    assert out is Z
    assert np.all(np.linalg.norm(Z - Xt, axis=0) <= tol)
    # a 1-d column works too
    np.testing.assert_array_equal(rot.rotate_columns(Xt[:, 0]), Yt[:, 0])


def test_signs_depend_only_on_the_seed():
    rng = np.random.default_rng(4)
    a = RandomHadamardRotation(100, random_state=7)
    b = RandomHadamardRotation(100, random_state=7)
    signs = a.signs.copy()
    np.testing.assert_array_equal(a.signs, b.signs)
    X1, X2 = rng.normal(size=(5, 100)), rng.normal(size=(9, 100)) * 1e3
    a.rotate(X1)
    b.rotate(X2)
    b.unrotate(b.rotate(X1))
    np.testing.assert_array_equal(a.signs, signs)
    np.testing.assert_array_equal(b.signs, signs)
    # the same seed rotates any data by the same matrix
    np.testing.assert_array_equal(a.rotate(X2), b.rotate(X2))
    # other seeds (or fresh entropy) give other signs: equal w.p. 2^-128
    assert not np.array_equal(RandomHadamardRotation(100, random_state=8).signs,
                              signs)
    assert not np.array_equal(RandomHadamardRotation(100).signs,
                              RandomHadamardRotation(100).signs)


def test_rotation_shape_validation():
    rot = RandomHadamardRotation(5, random_state=0)
    with pytest.raises(ValueError):
        rot.rotate(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        rot.rotate(np.zeros(5))
    with pytest.raises(ValueError):
        rot.unrotate(np.zeros((2, 5)))
    with pytest.raises(ValueError):
        rot.rotate_columns(np.zeros((5, 2)))
    with pytest.raises(ValueError):
        rot.unrotate_columns(np.zeros((16, 2)))
    with pytest.raises(ValueError):
        RandomHadamardRotation(0)


# ------------------------------------------------- Lemma 2 (Hoeffding form)
def test_lemma2_hoeffding_bound_over_random_rotations():
    # (U z)_j = Σ_k H_jk s_k z_k / √d′ is a Rademacher sum with variance
    # proxy ‖z‖²/d′ <= 1/d′: P(|(U z)_j| > t) <= 2 exp(-t² d′/2); a union
    # bound over the n d′ entries gives P(max > t_α) <= α at
    # t_α = √(2 log(2 n d′/α)/d′) (spec §6.5, §7 item 7).
    d, alpha, n_rot = 64, 0.1, 200
    rng = np.random.default_rng(12)
    H = hadamard(d) / math.sqrt(d)
    gauss = rng.normal(size=(24, d))
    Z = np.vstack([
        H,  # rows of H: spikes under H D in the wrong order
        gauss / np.linalg.norm(gauss, axis=1, keepdims=True),
        np.eye(d)[:8],
        0.5 * np.ones((1, d)) / math.sqrt(d),
    ])
    n = Z.shape[0]
    assert np.all(np.linalg.norm(Z, axis=1) <= 1 + 1e-12)
    t_alpha = math.sqrt(2 * math.log(2 * n * d / alpha) / d)
    assert t_alpha < 1  # a coordinate of size ‖z‖ = 1 would exceed it

    exceed = 0
    for seed in range(n_rot):
        rot = RandomHadamardRotation(d, random_state=seed)
        exceed += np.abs(rot.rotate(Z)).max() > t_alpha
        if seed == 0:
            # control: the mis-ordered D H / √d′ maps the rows of H to ±e_j
            wrong = (rot.signs[:, None] * (hadamard(d) @ Z.T) / math.sqrt(d)).T
            assert np.abs(wrong).max() > t_alpha
    # exceed ~ Binomial(200, p) with p <= α: one-sided test at level 1e-3
    assert exceed <= binom.isf(1e-3, n_rot, alpha)
