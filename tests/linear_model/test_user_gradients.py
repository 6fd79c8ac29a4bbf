"""Per-user average gradients (skuserdp.linear_model._user_gradients).

Every path is compared with a straightforward reference, the previous
implementation (a sparse averaging matrix times ``F[:, k]·X̃`` for every
output, with ``A[users][:, rows]`` for a subset of users), within 1e-10
relative: random data with unequal rows per user, one-row users, users
without rows, several outputs, subsets of users in arbitrary order (with a
repeated user), the squared loss's second-moments path against the rows
path; and fitted estimators with a fixed seed against the same fit run on the
reference (monkeypatched into ``_dpsgd``).
"""

import numpy as np
import pytest

import skuserdp.linear_model._dpsgd as dpsgd
from skuserdp.linear_model import UserDPSGDClassifier, UserDPSGDRegressor
from skuserdp.linear_model._base import user_averaging_matrix
from skuserdp.linear_model._losses import get_loss
from skuserdp.linear_model._user_gradients import (
    _MomentGradients,
    _RowGradients,
    user_gradient_fn,
    user_second_moments,
)

RTOL = 1e-10


def _reference_user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs):
    """The previous ``_dpsgd._user_gradient_fn``, verbatim."""
    A_all = user_averaging_matrix(codes, n_users)

    def for_users(users=None):
        if users is None:
            A, rows = A_all, slice(None)
        else:
            rows = np.flatnonzero(np.isin(codes, users))
            A = A_all[users][:, rows]
        Xr, yr = Xa[rows], y[rows]

        def gradients(theta):
            W = theta.reshape(n_outputs, -1)
            F = loss.residual_factor(Xr @ W.T, yr)  # (rows, n_outputs)
            return np.hstack([A @ (F[:, [k]] * Xr) for k in range(n_outputs)])

        return gradients

    return for_users


def _data(seed=0, n_users=60, p=5, empty_users=0, grouped=False):
    """Unequal rows per user (1 to 15; the first users have one row), rows
    interleaved across users (or grouped), ``empty_users`` extra users
    without rows, an intercept column."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 16, n_users)
    counts[:7] = 1
    codes = np.repeat(np.arange(n_users), counts)
    if not grouped:
        codes = rng.permutation(codes)
    X = rng.normal(size=(codes.size, p - 1))
    Xa = np.hstack([X, np.ones((codes.size, 1))])
    return Xa, codes, n_users + empty_users, rng


def _loss_and_targets(name, n, rng):
    if name == "multinomial":
        return get_loss("log_loss", n_classes=4), rng.integers(0, 4, n) * 1.0, 4
    if name == "log_loss":
        return get_loss("log_loss"), rng.integers(0, 2, n) * 1.0, 1
    y = np.clip(rng.normal(scale=2.0, size=n), -3, 3)
    return get_loss(name, huber_delta=0.5), y, 1


def _assert_close(new, ref):
    assert new.shape == ref.shape
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(new, ref, rtol=RTOL, atol=RTOL * 1e-3 * scale)


SUBSETS = [
    None,
    [5, 0, 33, 2, 59],  # arbitrary order, one-row users
    [12, 3, 12],  # a user twice
    list(range(59, -1, -3)),
    [],
]
CASES = [("squared_error", "moments"), ("squared_error", "rows"),
         ("squared_error", "auto"), ("huber", "rows"), ("huber", "auto"),
         ("log_loss", "rows"), ("multinomial", "rows"), ("multinomial", "auto")]


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("name, method", CASES)
def test_gradients_match_the_reference(name, method, grouped):
    Xa, codes, n_users, rng = _data(seed=1, grouped=grouped)
    loss, y, K = _loss_and_targets(name, codes.size, rng)
    ref = _reference_user_gradient_fn(loss, Xa, y, codes, n_users, K)
    new = user_gradient_fn(loss, Xa, y, codes, n_users, K, method=method)
    thetas = [rng.normal(scale=s, size=K * Xa.shape[1]) for s in (0.1, 1.0, 3.0)]
    for users in SUBSETS:
        sel = None if users is None else np.array(users, dtype=np.intp)
        g_ref, g_new = ref(sel), new(sel)
        for theta in thetas:
            _assert_close(g_new(theta), g_ref(theta))


@pytest.mark.parametrize("method", ["moments", "rows"])
def test_users_without_rows_get_zero_gradients(method):
    Xa, codes, n_users, rng = _data(seed=2, empty_users=3)
    loss, y, K = _loss_and_targets("squared_error", codes.size, rng)
    theta = rng.normal(size=Xa.shape[1])
    new = user_gradient_fn(loss, Xa, y, codes, n_users, K, method=method)
    ref = _reference_user_gradient_fn(loss, Xa, y, codes, n_users, K)
    G = new()(theta)
    np.testing.assert_array_equal(G[-3:], 0.0)
    _assert_close(G, ref()(theta))
    users = np.array([n_users - 1, 4, n_users - 2])
    _assert_close(new(users)(theta), ref(users)(theta))


@pytest.mark.parametrize("n_outputs", [1, 2, 3])
def test_moments_path_equals_rows_path_with_several_outputs(n_outputs):
    # the squared loss's residual z - y broadcasts one target over every
    # output: S_u w_k - b_u for each k
    Xa, codes, n_users, rng = _data(seed=3, p=7)
    loss, y, _ = _loss_and_targets("squared_error", codes.size, rng)
    moments = user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs,
                               method="moments")
    rows = user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs, method="rows")
    ref = _reference_user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs)
    for users in (None, np.array([9, 1, 40, 9])):
        for _ in range(3):
            theta = rng.normal(size=n_outputs * Xa.shape[1])
            _assert_close(moments(users)(theta), rows(users)(theta))
            _assert_close(moments(users)(theta), ref(users)(theta))


def test_second_moments_are_the_users_mean_outer_products():
    Xa, codes, n_users, rng = _data(seed=4, empty_users=1)
    y = rng.normal(size=codes.size)
    for chunk in (None, 1, 50):  # one user per chunk, a few, the default
        S, b = user_second_moments(Xa, y, codes, n_users, chunk_elements=chunk)
        assert S.shape == (n_users, 5, 5) and b.shape == (n_users, 5)
        for u in range(n_users):
            Z, t = Xa[codes == u], y[codes == u]
            if Z.shape[0] == 0:
                np.testing.assert_array_equal(S[u], 0.0)
                np.testing.assert_array_equal(b[u], 0.0)
                continue
            np.testing.assert_allclose(S[u], Z.T @ Z / Z.shape[0], rtol=1e-12,
                                       atol=1e-14)
            np.testing.assert_allclose(b[u], Z.T @ t / Z.shape[0], rtol=1e-12,
                                       atol=1e-14)


def test_auto_chooses_moments_for_the_squared_loss_within_the_cap():
    Xa, codes, n_users, rng = _data(seed=5)
    y = rng.normal(size=codes.size)
    sq, hub = get_loss("squared_error"), get_loss("huber")
    fn = user_gradient_fn(sq, Xa, y, codes, n_users, 1)
    assert isinstance(fn.__self__, _MomentGradients)
    # over the memory cap: the rows path
    capped = user_gradient_fn(sq, Xa, y, codes, n_users, 1, max_moment_bytes=8)
    assert isinstance(capped.__self__, _RowGradients)
    # not an affine residual: the rows path
    assert isinstance(user_gradient_fn(hub, Xa, y, codes, n_users, 1).__self__,
                      _RowGradients)
    # one row per user and p > 2: a step over the moments (n·p²) is more
    # work than over the rows (2·n·p)
    n = codes.size
    items = user_gradient_fn(sq, Xa, y, np.arange(n), n, 1)
    assert isinstance(items.__self__, _RowGradients)
    theta = rng.normal(size=Xa.shape[1])
    _assert_close(capped()(theta), fn()(theta))


def test_inputs_untouched_and_fresh_outputs():
    Xa, codes, n_users, rng = _data(seed=6)
    loss, y, K = _loss_and_targets("multinomial", codes.size, rng)
    copies = [a.copy() for a in (Xa, y, codes)]
    users = np.array([3, 1, 2])
    users_copy = users.copy()
    fn = user_gradient_fn(loss, Xa, y, codes, n_users, K, method="rows")
    theta = rng.normal(size=K * Xa.shape[1])
    theta_copy = theta.copy()
    g = fn()
    first = g(theta)
    kept = first.copy()
    g(2 * theta)
    fn(users)(theta)
    np.testing.assert_array_equal(first, kept)  # not a reused buffer
    np.testing.assert_array_equal(theta, theta_copy)
    sq = get_loss("squared_error")
    fn = user_gradient_fn(sq, Xa, y, codes, n_users, 1, method="moments")
    first = fn()(theta[:Xa.shape[1]])
    kept = first.copy()
    fn()(np.ones(Xa.shape[1]))
    np.testing.assert_array_equal(first, kept)
    for a, c in zip((Xa, y, codes), copies):
        np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(users, users_copy)


def test_errors():
    Xa, codes, n_users, rng = _data(seed=7)
    y = rng.normal(size=codes.size)
    with pytest.raises(ValueError, match="method must be one of"):
        user_gradient_fn(get_loss("squared_error"), Xa, y, codes, n_users, 1,
                         method="dense")
    with pytest.raises(ValueError, match="needs the squared loss"):
        user_gradient_fn(get_loss("huber"), Xa, y, codes, n_users, 1,
                         method="moments")
    fn = user_gradient_fn(get_loss("huber"), Xa, y, codes, n_users, 1)
    with pytest.raises(ValueError, match="user indices"):
        fn(np.array([0, n_users]))
    with pytest.raises(ValueError, match="1-D array of user indices"):
        fn(np.array([[0, 1]]))


# ------------------------------------------------- fitted estimators
def _panel(seed=0, n_users=300):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 12, n_users)
    groups = rng.permutation(np.repeat(np.arange(n_users), counts))
    X = rng.uniform(-0.5, 0.5, size=(groups.size, 3))
    score = X @ [0.8, -0.4, 0.2] + 0.1
    return X, score, groups, rng


def _fit_both(est, X, y, groups, monkeypatch):
    new = est.fit(X, y, groups=groups)
    coef, intercept = np.copy(new.coef_), np.copy(new.intercept_)
    with monkeypatch.context() as m:
        m.setattr(dpsgd, "_user_gradient_fn", _reference_user_gradient_fn)
        old = est.fit(X, y, groups=groups)
        return (coef, intercept), (np.copy(old.coef_), np.copy(old.intercept_))


@pytest.mark.filterwarnings("ignore::skuserdp.exceptions.AccuracyWarning")
@pytest.mark.parametrize("params", [
    {},
    {"loss": "huber", "huber_delta": 0.1},
    {"solver": "phased_erm", "samples_per_user": 1},
    {"alpha": 0.1, "max_iter": 40},
])
def test_regressor_coefficients_as_before(params, monkeypatch):
    X, score, groups, rng = _panel(seed=8)
    y = score + 0.05 * rng.normal(size=score.size)
    # declared boxes: 300 users are too few for bounds="auto" (it refuses)
    est = UserDPSGDRegressor(epsilon=2.0, random_state=0, bounds=(-0.5, 0.5),
                             target_bounds=(-1.0, 1.0), **params)
    (coef, intercept), (coef_old, intercept_old) = _fit_both(est, X, y, groups,
                                                             monkeypatch)
    np.testing.assert_allclose(coef, coef_old, rtol=0, atol=1e-8)
    np.testing.assert_allclose(intercept, intercept_old, rtol=0, atol=1e-8)


@pytest.mark.filterwarnings("ignore::skuserdp.exceptions.AccuracyWarning")
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_coefficients_as_before(n_classes, monkeypatch):
    X, score, groups, rng = _panel(seed=9)
    y = np.digitize(score + 0.1 * rng.normal(size=score.size),
                    np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    est = UserDPSGDClassifier(epsilon=2.0, classes=list(range(n_classes)),
                              max_iter=50, bounds=(-0.5, 0.5), random_state=0)
    (coef, intercept), (coef_old, intercept_old) = _fit_both(est, X, y, groups,
                                                             monkeypatch)
    np.testing.assert_allclose(coef, coef_old, rtol=0, atol=1e-8)
    np.testing.assert_allclose(intercept, intercept_old, rtol=0, atol=1e-8)


def _blas_threads():
    from skuserdp.linear_model._user_gradients import _blas_controller

    blas = _blas_controller().select(user_api="blas")
    return [lib.num_threads for lib in blas.lib_controllers]


def _interleave(enter):
    """Thread A enters, thread B enters, A leaves, B leaves (the order that
    broke threadpoolctl's per-call limit)."""
    import threading

    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with enter():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def b():
        a_in.wait(10)
        with enter():
            b_in.set()
            a_out.wait(10)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)


class _FakeLimiter:
    """threadpoolctl's limit, on a fake BLAS: save the current count, set
    one, restore the saved count."""

    def __init__(self, blas):
        self.blas, self.saved = blas, blas["threads"]
        blas["threads"] = 1

    def restore_original_limits(self):
        self.blas["threads"] = self.saved

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore_original_limits()


class _FakeController:
    def __init__(self):
        self.blas = {"threads": 4}

    def limit(self, limits, user_api):
        assert (limits, user_api) == (1, "blas")
        return _FakeLimiter(self.blas)


def test_concurrent_one_thread_blas_limits_restore_the_original(monkeypatch):
    import skuserdp.linear_model._user_gradients as module

    fake = _FakeController()
    monkeypatch.setattr(module, "_blas_controller", lambda: fake)
    _interleave(module._one_blas_thread)
    assert fake.blas["threads"] == 4
    # positive control: the per-call limit, interleaved, leaves one thread
    _interleave(lambda: fake.limit(limits=1, user_api="blas"))
    assert fake.blas["threads"] == 1


def test_the_real_blas_limit_is_restored_after_concurrent_fits():
    from skuserdp.linear_model._user_gradients import _one_blas_thread

    before = _blas_threads()
    _interleave(_one_blas_thread)
    assert _blas_threads() == before
