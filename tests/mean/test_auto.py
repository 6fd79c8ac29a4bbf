"""Tests of UserMeanEstimator and its rule (skuserdp/mean/_auto.py).

The rule reads public values only; the estimator delegates to the chosen
estimator, whose output and spend it reproduces exactly (so the delegate's
privacy tests carry over); an audit checks the whole.
"""

import contextlib
import math

import numpy as np
import pytest

from skuserdp.datasets import make_user_samples
from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    ColumnScaledMeanEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
    choose_mean_method,
    coinpress_shrink_ratio,
    plan_clip_noise,
    plan_coinpress,
)
from skuserdp.privacy import ZCDP, zcdp_rho_for
from skuserdp.testing import audit_estimator, worst_case_mean_neighbours


def test_shrink_ratio_is_the_documented_formula():
    for n, d, eps, delta in [(1000, 10, 1.0, 1e-6), (50, 300, 0.3, 1e-8)]:
        plan = plan_coinpress(n, d, budget=ZCDP(zcdp_rho_for(eps, delta)))
        step = plan_clip_noise(n, d, budget=plan.center_budgets[0], radius=1.0)
        assert coinpress_shrink_ratio(n, d, eps, delta) == pytest.approx(
            math.sqrt(d * step.noise_variance), rel=1e-12)
        # ... which is the Gaussian 2·sqrt(d)/(n·sqrt(2 rho)) up to the
        # lattice's widening of the sensitivity (well under 1 %)
        gauss = 2 * math.sqrt(d) / (n * math.sqrt(2 * plan.center_budgets[0].rho))
        assert coinpress_shrink_ratio(n, d, eps, delta) == pytest.approx(
            gauss, rel=1e-2)
    # more users or a larger budget shrink faster
    assert coinpress_shrink_ratio(4000, 10, 1.0, 1e-6) < coinpress_shrink_ratio(
        1000, 10, 1.0, 1e-6) < coinpress_shrink_ratio(1000, 10, 0.5, 1e-6)


@pytest.mark.parametrize("n, d, delta, knowledge, expected", [
    # many users, only a box (declared or learned): per-column (issue 28)
    (1000, 10, 1e-6, dict(bounds=(-100.0, 100.0)), "column_scaled"),
    (1000, 10, 1e-6, dict(bounds="auto"), "column_scaled"),
    # many users: the box wins over a radius without a location
    (1000, 10, 1e-6, dict(bounds=(-100.0, 100.0), radius=4.0), "column_scaled"),
    # a declared ball smaller than the box in every column ...
    (1000, 10, 1e-6, dict(bounds=(-100.0, 100.0), radius=4.0, center=0.0),
     "clip_noise"),
    # ... or larger than its narrowest column (√10·1 < 2·4)
    (1000, 2, 1e-6, dict(bounds=([0.0, 0.0], [1.0, 100.0]), radius=4.0,
                         center=0.0), "column_scaled"),
    (1000, 10, 1e-6, dict(bounds="auto", radius=4.0, center=0.0), "column_scaled"),
    # few users for the dimension
    (100, 100, 1e-6, dict(bounds=(-100.0, 100.0), radius=7.0), "few_users"),
    (100, 100, 1e-6, dict(radius=7.0, center=0.0), "clip_noise"),
    (100, 100, 1e-6, dict(bounds=(-100.0, 100.0)), "column_scaled"),
    (1000, 10, 1e-6, dict(radius=4.0), "few_users"),
    # pure DP
    (1000, 10, 0.0, dict(bounds=(-5.0, 5.0)), "column_scaled"),
    (1000, 10, 0.0, dict(bounds=(-5.0, 5.0), radius=3.0), "column_scaled"),
    (1000, 10, 0.0, dict(bounds=(-5.0, 5.0), radius=3.0, center=0.0), "clip_noise"),
    # many users, a radius but no box and no location
    (1000, 10, 1e-6, dict(radius=4.0, samples_per_user=5), "few_users"),
    (1000, 10, 0.0, dict(bounds=(-5.0, 5.0), moment_order=2.0, moment_bound=1.2,
                         samples_per_user=5), "threaded"),
])
def test_rule_table(n, d, delta, knowledge, expected):
    method, reason = choose_mean_method(n, d, 1.0, delta, **knowledge)
    assert method == expected, reason


def test_rule_threshold_is_where_the_ratio_crosses():
    d, eps, delta = 10, 1.0, 1e-6
    ns = np.unique(np.geomspace(20, 2000, 60).astype(int))
    picks = [choose_mean_method(n, d, eps, delta, bounds=(-1.0, 1.0), radius=1.0)[0]
             for n in ns]
    ratios = [coinpress_shrink_ratio(n, d, eps, delta) for n in ns]
    for p, r in zip(picks, ratios):
        assert (p == "column_scaled") == (r <= 0.5)
    assert "column_scaled" in picks and "few_users" in picks


def test_pure_dp_radius_without_location_is_an_error():
    with pytest.raises(ValueError, match="delta=0"):
        choose_mean_method(1000, 10, 1.0, 0.0, radius=3.0)


def test_rule_sees_only_public_scalars(monkeypatch):
    # whatever the data, the rule is called with the shape, the budget and
    # the declarations only
    import skuserdp.mean._auto as auto
    calls = []
    real = auto.choose_mean_method

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(auto, "choose_mean_method", spy)
    X, groups, _ = make_user_samples(n_users=300, n_features=4, random_state=0)
    UserMeanEstimator(epsilon=0.5, bounds=(-100.0, 100.0), radius=2.0,
                      random_state=0).fit(X, groups=groups)
    (args, kwargs), = calls
    assert args == (300, 4, 0.5, 1e-6)
    assert kwargs == dict(bounds=(-100.0, 100.0), radius=2.0, center=None,
                          samples_per_user=None, moment_order=None,
                          moment_bound=None, weighted=False)


def test_fitted_delegate_and_minimum_users():
    X, groups, _ = make_user_samples(n_users=300, n_features=3, random_state=0)
    est = UserMeanEstimator(bounds=(-100.0, 100.0), random_state=0)
    est.fit(X, groups=groups)
    assert isinstance(est.estimator_, ColumnScaledMeanEstimator)
    np.testing.assert_array_equal(est.estimator_.mean_, est.mean_)
    assert est.estimator_.noise_ == "laplace"
    assert est.estimator_.privacy_loss_ == est.privacy_loss_
    # the heavy-tail estimator needs 3 users; so does the dispatcher
    X2 = np.array([[0.0], [1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="3"):
        UserMeanEstimator(delta=0.0, bounds=(-5.0, 5.0), moment_bound=1.0,
                          samples_per_user=2).fit(X2, groups=[0, 0, 1, 1])


def test_per_feature_box_reaches_the_heavy_tail_estimator_as_a_scalar():
    X, groups, _ = make_user_samples(n_users=400, n_features=2,
                                     samples_per_user=5, random_state=0)
    box = ([-5.0, -7.0], [5.0, 7.0])
    est = UserMeanEstimator(delta=0.0, bounds=box, moment_bound=1.2,
                            samples_per_user=5, random_state=0)
    est.fit(X, groups=groups)
    assert est.method_ == "threaded" and est.estimator_.bounds == box
    np.testing.assert_array_equal(est.bounds_[1], [5.0, 7.0])


def test_no_knowledge_is_an_error():
    X, groups, _ = make_user_samples(n_users=30, n_features=2, random_state=0)
    with pytest.raises(ValueError, match="declare at least"):
        choose_mean_method(30, 2, 1.0, 1e-6, bounds=None)
    with pytest.raises(ValueError, match="needs a public radius"):
        UserMeanEstimator(method="few_users", bounds=(-5.0, 5.0)).fit(X, groups=groups)


def test_choice_does_not_depend_on_the_data():
    picks = set()
    for seed, mean in [(0, 0.0), (1, 50.0), (2, -80.0)]:
        X, groups, _ = make_user_samples(n_users=300, n_features=4, mean=mean,
                                         random_state=seed)
        est = UserMeanEstimator(bounds=(-100.0, 100.0), radius=2.0, random_state=0)
        picks.add(est.fit(X, groups=groups).method_)
    assert len(picks) == 1


@pytest.mark.parametrize("method, direct, knowledge", [
    ("column_scaled", ColumnScaledMeanEstimator, dict(bounds=(-20.0, 20.0))),
    ("coinpress", CoinPressMeanEstimator, dict(bounds=(-20.0, 20.0))),
    ("clip_noise", ClipNoiseMeanEstimator, dict(radius=3.0, center=0.5)),
    ("winsorized", WinsorizedMeanEstimator, dict(bounds=(-20.0, 20.0))),
    ("few_users", FewUsersBallEstimator, dict(radius=3.0)),
    ("threaded", ThreadedClipNoiseEstimator,
     dict(moment_order=2.0, moment_bound=1.2, samples_per_user=5,
          bounds=(-5.0, 5.0))),
])
def test_delegation_reproduces_the_chosen_estimator_exactly(method, direct,
                                                            knowledge):
    X, groups, _ = make_user_samples(n_users=400, n_features=3,
                                     samples_per_user=5, mean=0.5,
                                     random_state=1)
    auto = UserMeanEstimator(epsilon=0.8, delta=1e-5, method=method,
                             random_state=7, **knowledge).fit(X, groups=groups)
    direct_kw = {k: v for k, v in knowledge.items()
                 if k in direct().get_params()}
    ref = direct(epsilon=0.8, delta=1e-5, random_state=7,
                 **direct_kw).fit(X, groups=groups)
    np.testing.assert_array_equal(auto.mean_, ref.mean_)
    assert auto.privacy_loss_ == ref.privacy_loss_
    assert (auto.epsilon_, auto.delta_) == (ref.epsilon_, ref.delta_)
    assert auto.method_ == method


@pytest.mark.parametrize("fraction, robustness",
                         [(0.0, 0.25), (0.1, 0.25), (0.3, 0.3), (0.45, 0.45)])
def test_corrupted_fraction_sets_the_few_users_robustness(fraction, robustness):
    X, groups, _ = make_user_samples(n_users=400, n_features=3,
                                     samples_per_user=5, mean=0.5,
                                     corrupted_fraction=fraction, random_state=1)

    # at robustness 0.45, 400 users have no accuracy guarantee, and are told
    def expected_warning():
        return (pytest.warns(AccuracyWarning, match="guarantee holds only")
                if robustness == 0.45 else contextlib.nullcontext())

    with expected_warning():
        auto = UserMeanEstimator(epsilon=0.8, delta=1e-5, method="few_users",
                                 radius=3.0, corrupted_fraction=fraction,
                                 random_state=7).fit(X, groups=groups)
    assert auto.estimator_.robustness == robustness
    with expected_warning():
        ref = FewUsersBallEstimator(epsilon=0.8, delta=1e-5, radius=3.0,
                                    robustness=robustness,
                                    random_state=7).fit(X, groups=groups)
    np.testing.assert_array_equal(auto.mean_, ref.mean_)


@pytest.mark.parametrize("bad", [-0.1, 0.5, 1.0])
def test_corrupted_fraction_out_of_range_is_refused(bad):
    from sklearn.utils._param_validation import InvalidParameterError
    X, groups, _ = make_user_samples(n_users=50, n_features=2, random_state=0)
    with pytest.raises(InvalidParameterError, match="corrupted_fraction"):
        UserMeanEstimator(bounds=(-5, 5), corrupted_fraction=bad).fit(
            X, groups=groups)


@pytest.mark.parametrize("center", [np.nan, np.inf, [0.0, np.nan], [0.0, 1.0, 2.0]])
def test_a_bad_center_is_refused_even_where_the_method_ignores_it(center):
    # issue 26: with bounds only, the chosen method (CoinPress) ignores the
    # center, and a NaN center was silently accepted
    X, groups, _ = make_user_samples(n_users=50, n_features=2, random_state=0)
    with pytest.raises(ValueError, match="center"):
        UserMeanEstimator(bounds=(-5, 5), center=center).fit(X, groups=groups)


def test_audit_clip_noise_path():
    # radius and centre declared, 5 users: the rule picks clip-and-noise.
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1, radius=1.0, rows_per_user=2)
    est = UserMeanEstimator(epsilon=1.0, delta=1e-6, radius=1.0, center=0.0,
                            bounds=(-1.0, 1.0))
    assert est.fit(X, groups=g).method_ == "clip_noise"
    res = audit_estimator(est, X, Xp, groups=g, groups_prime=gp, n_runs=4000,
                          random_state=0)
    assert not res.violation, str(res)
