"""DiscreteDistributionEstimator (EMN Corollary 8): routes, simplex, spend,
public classes, accuracy against the Corollary 8 rate.

Spec: shared/specs/emn2021_few_users.md §2.7-2.8.
"""

import math
import warnings

import numpy as np
import pytest

from skuserdp.exceptions import AccuracyWarning, YIgnoredWarning
from skuserdp.mean import DiscreteDistributionEstimator
from skuserdp.mean._discrete import project_to_simplex
from skuserdp.privacy import ZCDP, zcdp_to_approx_dp


def _labels(rng, n_users, m, p, classes):
    users = np.repeat(np.arange(n_users), m)
    return rng.choice(classes, p=p, size=users.size).reshape(-1, 1), users


def _meets(loss, eps, delta):
    if isinstance(loss, ZCDP):
        return zcdp_to_approx_dp(loss.rho, delta).epsilon <= eps * (1 + 1e-12)
    return (loss.epsilon <= eps * (1 + 1e-12)
            and getattr(loss, "delta", 0.0) <= delta * (1 + 1e-12))


def test_project_to_simplex_is_the_euclidean_projection():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.normal(size=rng.integers(2, 8)) * 2
        p = project_to_simplex(v)
        assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
        # Optimality (KKT): v - p = lam on the support, <= lam off it.
        lam = (v - p)[p > 0]
        assert np.ptp(lam) < 1e-9
        assert np.all((v - p)[p == 0] <= lam[0] + 1e-9)
    assert np.array_equal(project_to_simplex([0.2, 0.3, 0.5]), [0.2, 0.3, 0.5])


@pytest.mark.parametrize("route", ["few_users", "winsorized"])
def test_both_routes_estimate_the_distribution(route):
    # 3 classes, 2000 users x 50 rows. Winsorized: the noise is tiny here.
    # Few users: error at most its bound (max(sqrt 3, 2) + 1) * 10/sqrt(50)
    # = 4.2 -- the simplex has diameter sqrt 2, so only the routing, the
    # projection and the spend are checked for it.
    rng = np.random.default_rng(1)
    p = np.array([0.6, 0.3, 0.1])
    X, g = _labels(rng, 2000, 50, p, ["x", "y", "z"])
    est = DiscreteDistributionEstimator(classes=["x", "y", "z"], samples_per_user=50,
                                        route=route, random_state=0).fit(X, groups=g)
    assert est.route_ == route
    assert est.probabilities_.min() >= 0
    assert est.probabilities_.sum() == pytest.approx(1.0)
    assert list(est.classes_) == ["x", "y", "z"]
    assert _meets(est.privacy_loss_, 1.0, 1e-6)
    if route == "winsorized":
        assert np.abs(est.probabilities_ - p).max() < 0.02


def test_auto_route_follows_the_public_comparison():
    # Few users, many classes, many rows per user: the few-users bound
    # (16 + 1) * 10 / sqrt(1e5) = 0.54 beats any clip to the simplex's box
    # (noise ~ sqrt(256) / 120 per coordinate). Many users, few classes:
    # WinsorizedMean's noise is far below the few-users bound.
    few = DiscreteDistributionEstimator(classes=list(range(256)),
                                        samples_per_user=100_000)
    assert few._choose_route(120, 256) == "few_users"
    many = DiscreteDistributionEstimator(classes=[0, 1, 2, 3], samples_per_user=5)
    assert many._choose_route(5000, 4) == "winsorized"
    # The choice uses public values only: fitting two datasets of the same
    # shape takes the same route.
    rng = np.random.default_rng(2)
    est = DiscreteDistributionEstimator(classes=[0, 1, 2, 3], samples_per_user=5,
                                        random_state=0)
    routes = set()
    for p in ([0.97, 0.01, 0.01, 0.01], [0.25] * 4):
        X, g = _labels(rng, 300, 5, p, [0, 1, 2, 3])
        routes.add(est.fit(X, groups=g).route_)
    assert len(routes) == 1


def test_rate_in_users_for_the_winsorized_route():
    # Corollary 8 (many users): TV error ~ sqrt(d/(mn)) + d/(sqrt(m) n eps).
    # Quadrupling n must shrink the error; measured over 30 seeds the
    # median L2 error ratio is at most 0.5 * 1.5 (slope -1/2 or steeper,
    # 50 % slack for the log factors and Monte Carlo).
    rng = np.random.default_rng(3)
    p = np.array([0.4, 0.3, 0.2, 0.1])
    errs = {}
    for n in (2000, 8000):
        e = []
        for s in range(30):
            X, g = _labels(rng, n, 10, p, [0, 1, 2, 3])
            U = (X == np.arange(4)).reshape(n, 10, 4).mean(axis=1).mean(axis=0)
            est = DiscreteDistributionEstimator(classes=[0, 1, 2, 3],
                                                samples_per_user=10,
                                                route="winsorized", random_state=s)
            e.append(np.linalg.norm(est.fit(X, groups=g).probabilities_ - U))
        errs[n] = np.median(e)
    assert errs[8000] <= 0.75 * errs[2000]


def test_values_outside_the_classes_count_as_no_class():
    # Half of every user's rows are "?": each user's frequencies sum to 1/2,
    # the projection renormalises the shape.
    rng = np.random.default_rng(4)
    n, m = 3000, 20
    users = np.repeat(np.arange(n), m)
    drawn = rng.choice(["a", "b"], p=[0.8, 0.2], size=n * m)
    X = np.where(np.arange(n * m) % 2 == 0, drawn, "?")
    est = DiscreteDistributionEstimator(classes=["a", "b"], samples_per_user=m,
                                        route="winsorized", random_state=0)
    est.fit(X.reshape(-1, 1), groups=users)
    # the mean of the frequency vectors is (0.4, 0.1); projecting onto the
    # simplex adds 0.25 to both: (0.65, 0.35)
    assert est.probabilities_ == pytest.approx([0.65, 0.35], abs=0.02)


def test_classes_must_be_public_and_valid():
    X = np.array([["a"], ["b"], ["a"], ["b"]])
    g = [0, 0, 1, 1]
    with pytest.raises(ValueError, match="public"):
        DiscreteDistributionEstimator().fit(X, groups=g)
    with pytest.raises(ValueError, match="repeat"):
        DiscreteDistributionEstimator(classes=["a", "a"]).fit(X, groups=g)
    with pytest.raises(ValueError, match="one categorical column"):
        DiscreteDistributionEstimator(classes=["a", "b"]).fit(
            np.array([["a", "b"]] * 4), groups=g)
    with pytest.raises(ValueError, match="delta"):
        DiscreteDistributionEstimator(classes=["a", "b"], delta=0.0).fit(X, groups=g)


def test_one_column_required_mixed_labels_and_no_mutation():
    rng = np.random.default_rng(5)
    labels = np.array([1, "a", 2.5], dtype=object)[rng.integers(0, 3, 4000)]
    users = np.repeat(np.arange(400), 10)
    before = labels.copy()
    est = DiscreteDistributionEstimator(classes=np.array([1, "a", 2.5], dtype=object),
                                        samples_per_user=10, route="winsorized",
                                        epsilon=4.0, random_state=0)
    with pytest.raises(ValueError, match="reshape"):
        est.fit(labels, groups=users)
    est.fit(labels.reshape(-1, 1), groups=users)
    assert np.array_equal(labels, before)
    assert est.n_features_in_ == 1
    assert np.abs(est.probabilities_ - 1 / 3).max() < 0.1


def test_y_without_groups_warns():
    X = np.array([["a"], ["b"]] * 50)
    est = DiscreteDistributionEstimator(classes=["a", "b"], delta=0.3,
                                        random_state=0)
    with pytest.warns(YIgnoredWarning):
        est.fit(X, np.arange(100))


def test_seeded_fits_repeat_and_unseeded_do_not():
    rng = np.random.default_rng(6)
    X, g = _labels(rng, 500, 5, [0.5, 0.5], ["a", "b"])
    kw = dict(classes=["a", "b"], samples_per_user=5, route="winsorized")
    a = DiscreteDistributionEstimator(**kw, random_state=1).fit(X, groups=g)
    b = DiscreteDistributionEstimator(**kw, random_state=1).fit(X, groups=g)
    assert np.array_equal(a.probabilities_, b.probabilities_)
    with warnings.catch_warnings():  # unseeded: their noise may warn
        warnings.simplefilter("ignore", AccuracyWarning)
        c = DiscreteDistributionEstimator(**kw).fit(X, groups=g)
        d = DiscreteDistributionEstimator(**kw).fit(X, groups=g)
    assert not np.array_equal(c.probabilities_, d.probabilities_)
    assert math.isclose(a.epsilon_, a.privacy_loss_.epsilon) or a.epsilon_ <= 1.0


def _first_probability(est):
    return float(est.probabilities_[0])


@pytest.mark.parametrize("route,n_users,m", [("winsorized", 60, 4),
                                             ("few_users", 60, 4)])
def test_audit_finds_no_violation(route, n_users, m):
    # Neighbours: every user all "a" vs one user switched to all "b" -- the
    # largest move of one user's frequency vector.
    from skuserdp.testing import audit_estimator

    g = np.repeat(np.arange(n_users), m)
    X = np.full((n_users * m, 1), "a", dtype=object)
    Xp = X.copy()
    Xp[:m] = "b"
    est = DiscreteDistributionEstimator(classes=["a", "b"], samples_per_user=m,
                                        route=route, delta=1e-3)
    res = audit_estimator(est, X, Xp, groups=g, groups_prime=g, n_runs=1500,
                          statistic=_first_probability, random_state=0)
    assert not res.violation, str(res)


@pytest.mark.parametrize("classes, column", [
    (["0", "1"], np.array([[0], [1], [1], [0]] * 10)),
    ([0, 1], np.array([["0"], ["1"], ["1"], ["0"]] * 10)),
])
def test_classes_of_another_kind_than_the_column_are_refused(classes, column):
    # before: no row matched a class and the fit silently returned ~uniform
    groups = np.repeat(np.arange(20), 2)
    with pytest.raises(ValueError, match="no row would match"):
        DiscreteDistributionEstimator(classes=classes).fit(column, groups=groups)
    # numbers of another numeric type still match (0 == 0.0)
    if column.dtype.kind == "i":
        est = DiscreteDistributionEstimator(classes=[0.0, 1.0], epsilon=50.0,
                                            delta=0.3, random_state=0)
        assert est.fit(column, groups=groups).probabilities_.min() > 0.3


def test_class_counts_are_float_even_when_no_row_is_in_a_class():
    # np.bincount with weights returns int64 zeros for an empty input; the
    # frequencies are divided in place, so the table must be float64 anyway
    from skuserdp.users._aggregate import user_class_counts
    counts = user_class_counts(np.array([7.0, 8.0]), np.array([0, 1, 2]),
                               np.array([0, 1]), 2)
    assert counts.dtype == np.float64 and counts.shape == (2, 3)
    assert not counts.any()
    # and a fit where no row is in a class runs (sklearn's
    # check_fit2d_1feature does this)
    X = np.array([[7.0], [8.0], [9.0], [7.0]] * 50)
    est = DiscreteDistributionEstimator(classes=[0, 1, 2], random_state=0)
    est.fit(X, groups=np.arange(200) // 2)
    assert est.probabilities_.shape == (3,)
