"""Bad-input hardening (issue 17): overflow, huge parameters, hangs, sparse X."""

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.linear_model import Ridge

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    plan_coinpress,
)
from skuserdp.mechanisms import encode_contributions
import skuserdp.mechanisms._lattice as lattice
from skuserdp.model_selection import private_selection, select_model_privately
from skuserdp.privacy import (
    BudgetAccountant,
    PureDP,
    ZCDP,
    compose_homogeneous,
    random_stopping_max_iter,
    random_stopping_privacy,
)
from skuserdp.users import user_means

N_USERS = 2000
F32_MAX = float(np.finfo(np.float32).max)


def _data(n_users=N_USERS, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * n_users, d))
    return X, np.repeat(np.arange(n_users), 3)


def _with_huge_user(kind):
    X, g = _data()
    if kind == "float32":
        X = X.astype(np.float32)
        X[:3] = F32_MAX
    elif kind == "mixed":
        X[:3] = [1e308, -1e308]
    else:
        X[:3] = kind
    return X, g


ESTIMATORS = {
    "clip_noise_auto": lambda: ClipNoiseMeanEstimator(random_state=0),
    "clip_noise_box": lambda: ClipNoiseMeanEstimator(bounds=(-3, 3), random_state=0),
    "clip_noise_ball": lambda: ClipNoiseMeanEstimator(radius=3.0, center=0.0,
                                                      random_state=0),
    "clip_noise_pure": lambda: ClipNoiseMeanEstimator(delta=0.0, bounds=(-3, 3),
                                                      random_state=0),
    "coinpress": lambda: CoinPressMeanEstimator(random_state=0),
    "coinpress_box": lambda: CoinPressMeanEstimator(bounds=(-3, 3), random_state=0),
    "threaded": lambda: ThreadedClipNoiseEstimator(
        moment_bound=1.0, samples_per_user=3, bounds=(-3, 3), random_state=0),
    "threaded_pure": lambda: ThreadedClipNoiseEstimator(
        delta=0.0, moment_bound=1.0, samples_per_user=3, bounds=(-3, 3),
        random_state=0),
    "auto": lambda: UserMeanEstimator(method="auto", random_state=0),
    "auto_box": lambda: UserMeanEstimator(method="auto", bounds=(-3, 3),
                                          random_state=0),
}


# ------------------------------------------------ 1. per-user overflow
@pytest.mark.parametrize("kind", [1e308, -1e308, "mixed", "float32"])
def test_user_means_of_huge_finite_rows_are_finite(kind):
    X, g = _with_huge_user(kind)
    X_before = X.copy()
    means = user_means(X, g).means
    assert np.isfinite(means).all()
    np.testing.assert_array_equal(X, X_before)  # the caller's array is kept
    expected = np.asarray(X[:3], dtype=np.float64)[0]
    np.testing.assert_allclose(means[0], expected, rtol=1e-12)


def test_user_means_overflow_path_is_exact_and_keeps_other_users():
    X = np.array([[1e308, 1.0], [1e308, 2.0], [-1e308, 3.0], [0.5, 0.25]])
    result = user_means(X, groups=[0, 0, 0, 1])
    np.testing.assert_allclose(result.means[0], [1e308 / 3, 2.0], rtol=1e-12)
    assert result.means[1].tolist() == [0.5, 0.25]  # not recomputed
    top = user_means(np.full((3, 1), np.finfo(np.float64).max), groups=[0, 0, 0])
    assert np.isfinite(top.means).all()


@pytest.mark.parametrize("kind", [1e308, -1e308, "mixed", "float32"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_one_huge_user_does_not_make_fit_fail(name, kind):
    # a fit that fails only because of one user's (finite) data would leak it
    X, g = _with_huge_user(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        est = ESTIMATORS[name]().fit(X, groups=g)
    assert np.isfinite(est.mean_).all()
    assert np.abs(est.mean_).max() < 3.0


# ------------------------------------------------ 2. clipping to a ball
def test_clip_of_a_huge_point_lands_on_the_ball_edge():
    out = lattice._clip(np.array([[1e200, 1e200]]), 1.0, "l2")[0]
    np.testing.assert_allclose(out, [2 ** -0.5, 2 ** -0.5], rtol=1e-12)
    out = lattice._clip(np.array([[1e200, 1e200]]), 1.0, "l1")[0]
    np.testing.assert_allclose(out, [0.5, 0.5], rtol=1e-12)
    out = lattice._clip(np.array([[3e-300, -4e-300]]), 1e-300, "l2")[0]
    np.testing.assert_allclose(out, [0.6e-300, -0.8e-300], rtol=1e-12)


def test_clip_when_the_difference_to_the_centre_overflows():
    values = np.array([[-1.7e308, 1.7e308]])
    out = lattice._clip_centred(values, np.array([1e308, 1e308]), 1.0, "l2")[0]
    direction = np.array([-2.7, 0.7])
    np.testing.assert_allclose(out, direction / np.linalg.norm(direction),
                               rtol=1e-6)


def test_encode_contributions_keeps_the_direction_of_huge_rows():
    K = encode_contributions(np.array([[1e200, 1e200], [1e308, -1e308]]),
                             center=0.0, radius=1.0, grid=2.0 ** -10)
    assert K.tolist() == [[724, 724], [724, -724]]


# ------------------------------------------------ 3. large epsilon
def test_random_stopping_at_huge_epsilon():
    for eps in (710.0, 1e6):
        cap = random_stopping_max_iter(eps, 0.1, 1e-12)
        loss = random_stopping_privacy(PureDP(eps / 3), 0.1, cap)
        assert loss.delta <= 1e-12
    # ordinary epsilon: unchanged
    assert random_stopping_max_iter(1.0, 0.01, 1e-12) == 2880


def test_compose_homogeneous_at_huge_epsilon_is_basic():
    assert compose_homogeneous(PureDP(800.0), 3, 1e-6) == PureDP(2400.0)
    assert compose_homogeneous(PureDP(705.0), 3, 1e-6) == PureDP(2115.0)


@pytest.mark.parametrize("eps", [710.0, 1e6])
def test_estimators_at_huge_epsilon(eps):
    X, g = _data(n_users=200, d=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        for method in ("auto", "median", "interpolate"):
            est = FewUsersBallEstimator(epsilon=eps, radius=1.0, samples_per_user=3,
                                        method=method, random_state=0).fit(X, groups=g)
            assert np.isfinite(est.mean_).all()
        est = ThreadedClipNoiseEstimator(epsilon=eps, moment_bound=1.0,
                                         samples_per_user=3, bounds=(-3, 3),
                                         random_state=0).fit(X, groups=g)
        assert np.abs(est.mean_).max() < 1.0


@pytest.mark.parametrize("eps", [710.0, 1e6])
def test_select_model_privately_at_huge_epsilon(eps):
    X, g = _data(n_users=300)
    y = X @ [1.0, 2.0]
    candidates = [Ridge(alpha=a).fit(X[:20], y[:20]) for a in (0.1, 1e4)]
    best, result = select_model_privately(
        candidates, X, y, groups=g, epsilon=eps, loss_bound=10.0,
        samples_per_user=3, alpha=0.5, random_state=0)
    assert best is candidates[0] and result.privacy_loss.epsilon <= eps


def test_huge_radius_arguments_work():
    X, g = _data(n_users=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        for delta in (1e-6, 0.0):
            est = ClipNoiseMeanEstimator(delta=delta, radius=1e300, center=0.0,
                                         random_state=0).fit(X, groups=g)
            assert np.isfinite(est.mean_).all()
            assert (est.noise_std_ > 1e290).all()  # (inf included)
        est = FewUsersBallEstimator(radius=1e300, samples_per_user=3,
                                    random_state=0).fit(X, groups=g)
        assert np.isfinite(est.mean_).all()
    losses = np.random.default_rng(0).random((2, 300))
    result = private_selection(losses, epsilon=1.0, loss_bound=1e300,
                               tau=1e300, alpha=1.0, random_state=0)
    assert result.index in (0, 1)


# ------------------------------------------------ 4. bounded work
def test_tiny_alpha_of_selection_is_refused_up_front():
    X, g = _data(n_users=100)
    y = X[:, 0]
    candidates = [Ridge().fit(X[:20], y[:20])]
    start = time.perf_counter()
    with pytest.raises(ValueError, match="alpha=1e-09.*MAX_EXPECTED_RELEASES"):
        select_model_privately(candidates, X, y, groups=g, epsilon=1.0,
                               loss_bound=10.0, tau=1.0, alpha=1e-9)
    with pytest.raises(ValueError, match="alpha"):
        private_selection(np.zeros((2, 10)), epsilon=1.0, loss_bound=1.0,
                          tau=0.1, alpha=1e-9)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("method", ["auto", "ball", "interpolate"])
def test_tiny_alpha_of_few_users_is_refused_up_front(method):
    X, g = _data(n_users=200, d=3)
    X = 1000.0 * X  # spread: the sampler would run its mean number of rounds
    start = time.perf_counter()
    with pytest.raises(ValueError, match="MAX_SAMPLER_WORK.*alpha"):
        FewUsersBallEstimator(radius=1.0, samples_per_user=3, alpha=1e-9,
                              method=method, random_state=0).fit(X, groups=g)
    assert time.perf_counter() - start < 1.0


def test_huge_n_steps_of_coinpress_is_refused_up_front():
    X, g = _data(n_users=200)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="n_steps"):
        CoinPressMeanEstimator(n_steps=10 ** 6, bounds=(-3, 3)).fit(X, groups=g)
    with pytest.raises(ValueError, match="n_steps must be in \\[1, 1000\\]"):
        plan_coinpress(200, 2, budget=ZCDP(1.0), n_steps=10 ** 6)
    assert time.perf_counter() - start < 1.0
    plan_coinpress(200, 2, budget=ZCDP(1.0), n_steps=1000)  # the cap itself


# ------------------------------------------------ 5. huge bounds
@pytest.mark.parametrize("cls", [ClipNoiseMeanEstimator, CoinPressMeanEstimator,
                                 UserMeanEstimator])
def test_bounds_1e300_work(cls):
    X, g = _data(n_users=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        est = cls(bounds=(-1e300, 1e300), random_state=0).fit(X, groups=g)
    assert np.isfinite(est.mean_).all()


def test_bounds_beyond_float_range_give_an_accurate_error():
    X, g = _data(n_users=300)
    with pytest.raises(ValueError, match="bounds are too wide"):
        # a declared spread keeps the units of X: the box's half-diagonal
        # overflows there
        CoinPressMeanEstimator(radius=1.0, bounds=(-1.7e308, 1.7e308)).fit(X, groups=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        # in the box's scaled coordinates ([-1, 1]^d) the same box works
        est = ClipNoiseMeanEstimator(bounds=(-1.7e308, 1.7e308),
                                     random_state=0).fit(X, groups=g)
    assert np.isfinite(est.mean_).all()
    with pytest.raises(ValueError, match="radius=1.7e\\+308 is too large for pure"):
        ClipNoiseMeanEstimator(delta=0.0, radius=1.7e308, center=0.0).fit(X, groups=g)
    with pytest.raises(ValueError, match="declare tighter bounds"):
        ThreadedClipNoiseEstimator(delta=0.0, moment_bound=1.0, samples_per_user=3,
                                   bounds=(-1.7e308, 1.7e308)).fit(X, groups=g)
    # delta > 0 needs no box: one too wide for the bounded coarse step is
    # ignored (300 users are too few for the unbounded one: it warns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = ThreadedClipNoiseEstimator(moment_bound=1.0, samples_per_user=3,
                                         bounds=(-1.7e308, 1.7e308),
                                         random_state=0).fit(X, groups=g)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)
                or "public box" in str(w.message)]
    assert np.abs(est.mean_).max() < 0.5
    with pytest.raises(ValueError, match="radius=1.7e\\+308 is too large"):
        FewUsersBallEstimator(radius=1.7e308, samples_per_user=3).fit(X, groups=g)
    losses = np.zeros((2, 300))
    with pytest.raises(ValueError, match="loss_bound=1.7e\\+308 is too large"):
        private_selection(losses, epsilon=1.0, loss_bound=1.7e308,
                          samples_per_user=3)
    with pytest.raises(ValueError, match="tau=1.7e\\+308 is too large"):
        private_selection(losses, epsilon=1.0, loss_bound=1.0, tau=1.7e308)


# ------------------------------------------------ 6. sparse X
def test_select_model_privately_accepts_sparse_X():
    X, g = _data(n_users=300)
    y = X @ [1.0, 2.0]
    candidates = [Ridge(alpha=a).fit(X[:20], y[:20]) for a in (0.1, 1e4)]
    kw = dict(groups=g, epsilon=1.0, loss_bound=10.0, samples_per_user=3,
              alpha=0.5, random_state=0)
    dense = select_model_privately(candidates, X, y, **kw)[1]
    for Xs in (sp.csr_matrix(X), sp.csr_array(X)):
        sparse = select_model_privately(candidates, Xs, y, **kw)[1]
        assert (sparse.index, sparse.value) == (dense.index, dense.value)


# ------------------------------------------------ 7. no data-dependent fp warnings
def _fits_with_one_extreme_user(value, n_jobs):
    """Every kind of fit on 2000 users, one of whom has rows at ``value``."""
    from skuserdp.linear_model import (UserDPLinearRegression, UserDPSGDClassifier,
                                       UserDPSGDRegressor)
    from skuserdp.mean import DiscreteDistributionEstimator, WinsorizedMeanEstimator
    from skuserdp.model_selection import PrivateGridSearch
    X, g = _data()
    y = X[:, 0] + 0.5 * X[:, 1]
    X[:3], y[:3] = value, value
    for make in ESTIMATORS.values():
        make().set_params(n_jobs=n_jobs).fit(X, groups=g)
    WinsorizedMeanEstimator(random_state=0, n_jobs=n_jobs).fit(X, groups=g)
    FewUsersBallEstimator(radius=3.0, random_state=0, n_jobs=n_jobs).fit(X, groups=g)
    DiscreteDistributionEstimator(classes=[0, 1], random_state=0).fit(
        np.clip(X[:, :1], 0, 1).round(), groups=g)
    box = dict(bounds=(-3, 3), random_state=0, n_jobs=n_jobs)
    for est in (UserDPLinearRegression(target_bounds=(-3, 3), **box),
                UserDPSGDRegressor(target_bounds=(-3, 3), **box)):
        est.fit(X, y, groups=g)
    UserDPSGDClassifier(classes=[0, 1], **box).fit(X, (X[:, 0] > 0).astype(int),
                                                   groups=g)
    fitted = UserDPLinearRegression(target_bounds=(-3, 3), **box).fit(X, y, groups=g)
    select_model_privately([fitted, Ridge().fit(X[3:40], y[3:40])], X, y, groups=g,
                           epsilon=1.0, loss_bound=10.0, samples_per_user=3,
                           random_state=0)
    PrivateGridSearch(ClipNoiseMeanEstimator(bounds=(-3, 3)), {"radius": [1.0, 3.0]},
                      loss_bound=36.0, tau=1.0, random_state=0).fit(X, groups=g)


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("value", [1e154, 1e200, -1e308])
def test_no_floating_point_warning_reveals_an_extreme_user(value, n_jobs):
    # issue 26, finding 5: overflow warnings appeared only when some user's
    # values reached ~1e154 (CoinPress, UserMeanEstimator,
    # select_model_privately): a warning is an output, and this one told the
    # log's reader that such a user exists. Any other warning (accuracy) may
    # stay: it depends on public values and released outputs only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        warnings.simplefilter("error", RuntimeWarning)
        _fits_with_one_extreme_user(value, n_jobs)


# ------------------------------------------------ 8. spend within the request
def _every_estimator(epsilon, delta):
    from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
    from skuserdp.mean import DiscreteDistributionEstimator, WinsorizedMeanEstimator
    approx = delta if delta > 0 else 1e-6  # the estimators that need delta > 0
    box = dict(epsilon=epsilon, delta=delta, bounds=(-3, 3), random_state=0)
    return [
        ClipNoiseMeanEstimator(**box),
        ClipNoiseMeanEstimator(epsilon=epsilon, delta=delta, random_state=0),
        CoinPressMeanEstimator(**{**box, "delta": approx}),
        WinsorizedMeanEstimator(**box),
        UserMeanEstimator(**box),
        ThreadedClipNoiseEstimator(moment_bound=1.0, **box),
        FewUsersBallEstimator(epsilon=epsilon, delta=approx, radius=3.0,
                              random_state=0),
        DiscreteDistributionEstimator(epsilon=epsilon, delta=approx, classes=[0, 1],
                                      random_state=0),
        UserDPLinearRegression(epsilon=epsilon, delta=approx, bounds=(-3, 3),
                               target_bounds=(-3, 3), random_state=0),
        UserDPSGDRegressor(epsilon=epsilon, delta=approx, bounds=(-3, 3),
                           target_bounds=(-3, 3), random_state=0),
    ]


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("epsilon", [1e-11, 1e-9, 1e-5, 1 / 3, 1e3])
def test_spend_never_exceeds_the_request(epsilon, delta):
    # issue 26, finding 6: at epsilon = 1e-9 ThreadedClipNoiseEstimator
    # reported epsilon_ = 1.0000000035e-9, so BudgetAccountant(1e-9) refused
    # the estimator's own fit
    X, g = _data(n_users=3000, d=3)
    y = X[:, 0] - X[:, 1]
    for est in _every_estimator(epsilon, delta):
        if type(est).__name__ == "DiscreteDistributionEstimator":
            args = ((X[:, :1] > 0).astype(int),)
        else:
            args = (X, y) if hasattr(est, "predict") else (X,)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            try:
                est.fit(*args, groups=g)
            except ValueError as exc:  # a clear refusal, nothing released
                assert ("bounds='auto'" in str(exc)  # too few users for a box
                        or "too small for delta" in str(exc)), str(exc)
                continue
        name = type(est).__name__
        assert est.epsilon_ <= est.epsilon, name
        assert est.delta_ <= est.delta, name
        acc = BudgetAccountant(est.epsilon, est.delta)
        acc.charge(est.privacy_loss_, label=name)  # within its own budget


class _SquaringModel(BaseEstimator):
    """A fitted candidate whose predict squares the first feature (no
    validation: it overflows, with a RuntimeWarning, at 1e200)."""

    def fit(self, X, y=None):
        return self

    def __sklearn_is_fitted__(self):
        return True

    def predict(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0] ** 2


def test_the_selection_of_given_candidates_raises_no_floating_point_warning():
    # review of issue 26: select_model_privately lost its quiet context when
    # the decorators became contexts; a candidate's predict on one user's
    # rows at 1e200 warned
    X, g = _data(n_users=500)
    y = X[:, 0]
    X[:3] = 1e200
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        select_model_privately([_SquaringModel(), Ridge().fit(X[3:40], y[3:40])],
                               X, y, groups=g, epsilon=1.0, loss_bound=10.0,
                               samples_per_user=3, random_state=0)
