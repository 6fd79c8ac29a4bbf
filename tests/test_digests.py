"""Bit-identical releases across refactors: a digest of every public estimator's fit.

Each case fits one public estimator (or calls one public algorithm core) with
a fixed integer seed on fixed data and hashes every public fitted attribute
(``mean_``, ``coef_``, ``intercept_``, the recorded spend, ...), byte for
byte. The hashes are committed in ``tests/digests.json``; a refactor that
moves code without changing behaviour must leave every one unchanged.

A change that is *meant* to change the released values (a new noise, a new
default) regenerates the file on purpose::

    SKUSERDP_UPDATE_DIGESTS=1 pytest tests/test_digests.py

and says so in the commit message.
"""

import dataclasses
import hashlib
import json
import os
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor

from skuserdp.datasets import make_user_samples
from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import (
    UserDPLinearRegression,
    UserDPSGDClassifier,
    UserDPSGDRegressor,
    phased_erm,
    plan_gradient_descent,
    plan_phased_erm,
    private_gradient_descent,
)
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    DiscreteDistributionEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
    clip_noise_from_plan,
    few_users_mean,
    plan_clip_noise,
    winsorized_mean,
)
from skuserdp.mechanisms import (
    plan_poisson_sum,
    poisson_sum_from_plan,
    private_bounds,
)
from skuserdp.model_selection import BudgetedEstimator, PrivateGridSearch
from skuserdp.privacy import BudgetAccountant, ZCDP
from skuserdp.utils.discovery import all_estimators

DIGESTS = Path(__file__).with_name("digests.json")


def _feed(h, value):
    """Hash ``value`` structurally (types by name, numbers by their bytes)."""
    if value is None:
        h.update(b"N")
    elif isinstance(value, (bool, np.bool_)):
        h.update(b"b1" if value else b"b0")
    elif isinstance(value, (int, np.integer)):
        h.update(b"i" + str(int(value)).encode())
    elif isinstance(value, (float, np.floating)):
        h.update(b"f" + struct.pack("<d", float(value)))
    elif isinstance(value, str):
        h.update(b"s" + value.encode())
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            h.update(b"O" + str(value.shape).encode())
            for item in value.ravel():
                _feed(h, item)
        else:
            a = np.ascontiguousarray(value)
            h.update(b"a" + a.dtype.str.encode() + str(a.shape).encode())
            h.update(a.tobytes())
    elif isinstance(value, dict):
        h.update(b"d")
        for key in sorted(value, key=str):
            _feed(h, str(key))
            _feed(h, value[key])
    elif isinstance(value, (tuple, list)):
        h.update(b"t" + type(value).__name__.encode() + str(len(value)).encode())
        for item in value:
            _feed(h, item)
    elif dataclasses.is_dataclass(value):
        h.update(b"D" + type(value).__name__.encode())
        for field in dataclasses.fields(value):
            _feed(h, field.name)
            _feed(h, getattr(value, field.name))
    elif hasattr(value, "get_params") and hasattr(value, "fit"):
        # a fitted sub-estimator: its own released attributes
        h.update(b"E" + type(value).__name__.encode())
        _feed(h, _released(value))
    else:
        # an object without a structure we know (a plan, a mapping, ...):
        # its type name only, so that moving its class is not a change
        h.update(b"?" + type(value).__name__.encode())


def _digest(value):
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()[:32]


def _released(est):
    """Every public fitted attribute (trailing underscore) of ``est``."""
    return {
        name: value for name, value in vars(est).items()
        if name.endswith("_") and not name.startswith("_")
        and not name.endswith("__")
    }


def _means_data(n_users=400, n_features=3, seed=0, **kw):
    X, groups, _ = make_user_samples(n_users, n_features, samples_per_user=4,
                                     random_state=seed, **kw)
    return X, groups


def _regression_data(n_users=600, n_features=3, seed=1):
    rng = np.random.RandomState(seed)
    groups = np.repeat(np.arange(n_users), 3)
    X = rng.uniform(-1, 1, (groups.size, n_features))
    beta = np.linspace(-0.5, 0.5, n_features)
    y = X @ beta + 0.1 * rng.standard_normal(groups.size)
    return X, y, groups


def _classification_data(n_users=600, seed=2):
    X, y, groups = _regression_data(n_users, seed=seed)
    return X, (y > 0).astype(int) + (y > 0.4), groups


def _fit(est, X, y=None, groups=None):
    return _released(est.fit(X, y, groups=groups))


def _case_means(cls, **params):
    def run():
        X, g = _means_data()
        return _fit(cls(random_state=3, **params), X, groups=g)
    return run


def _case_many_means(cls, **params):
    def run():
        X, g = _means_data(n_users=4000, n_features=2)
        return _fit(cls(random_state=3, **params), X, groups=g)
    return run


def _case_discrete(**params):
    def run():
        rng = np.random.RandomState(4)
        g = np.repeat(np.arange(500), 3)
        X = rng.choice(4, size=(g.size, 1), p=[0.4, 0.3, 0.2, 0.1])
        return _fit(DiscreteDistributionEstimator(classes=[0, 1, 2, 3],
                                                  random_state=3, **params),
                    X, groups=g)
    return run


def _case_few_users(**params):
    def run():
        X, g = _means_data(n_users=60, n_features=2, seed=5)
        return _fit(FewUsersBallEstimator(radius=10.0, random_state=3, **params),
                    X, groups=g)
    return run


def _case_regressor(cls, **params):
    def run():
        X, y, g = _regression_data()
        return _fit(cls(random_state=3, **params), X, y, groups=g)
    return run


def _case_classifier(**params):
    def run():
        X, y, g = _classification_data()
        return _fit(UserDPSGDClassifier(classes=[0, 1, 2], random_state=3, **params),
                    X, y, groups=g)
    return run


def _case_budgeted():
    X, g = _means_data()
    acc = BudgetAccountant(epsilon=2.0, delta=1e-6)
    est = BudgetedEstimator(ClipNoiseMeanEstimator(epsilon=0.5, bounds=(-10, 10),
                                                   random_state=3),
                            acc)
    out = [_fit(est, X, groups=g), _fit(est, X, groups=g)]
    return {"fits": out, "spent": acc.spent}


def _case_search():
    X, g = _means_data(n_users=800)
    search = PrivateGridSearch(
        CoinPressMeanEstimator(bounds=(-10, 10)),
        {"n_steps": [1, 3, 6]}, epsilon=1.0, delta=1e-6, loss_bound=400.0,
        samples_per_user=4, random_state=3)
    return _fit(search, X, groups=g)


def _case_core_clip_noise():
    X, g = _means_data()
    U = np.vstack([X[g == u].mean(axis=0) for u in np.unique(g)])
    plan = plan_clip_noise(U.shape[0], U.shape[1], budget=ZCDP(0.05), radius=5.0)
    return clip_noise_from_plan(U, plan, random_state=3)


def _case_core_winsorized():
    X, g = _means_data(n_users=3000, n_features=2)
    U = np.vstack([X[g == u].mean(axis=0) for u in np.unique(g)])
    return winsorized_mean(U, epsilon=1.0, delta=1e-6, bound=10.0,
                           samples_per_user=4, random_state=3)


def _case_core_few_users():
    X, g = _means_data(n_users=60, n_features=2, seed=5)
    U = np.vstack([X[g == u].mean(axis=0) for u in np.unique(g)])
    return few_users_mean(U, epsilon=1.0, delta=0.3, radius=10.0, random_state=3)


def _case_core_bounds():
    X, _ = _means_data(n_users=3000, n_features=2)
    return private_bounds(X[:3000], 0.5, random_state=3)


def _case_core_poisson():
    rng = np.random.RandomState(6)
    V = rng.uniform(-1, 1, (2000, 3))
    plan = plan_poisson_sum(2000, 3, epsilon=1.0, delta=1e-6, sampling_rate=0.1,
                            n_steps=5, radius=1.0)
    return poisson_sum_from_plan(V, plan, random_state=3)


def _least_squares_core():
    rng = np.random.RandomState(7)
    Z = rng.normal(0.5, 0.3, size=(4000, 2))
    return Z, dict(epsilon=1.0, delta=1e-6, aggregator="clip", gradient_bound=3.0,
                   smoothness=1.0, radius=2.0)


def _case_core_gradient_descent():
    Z, kw = _least_squares_core()
    plan = plan_gradient_descent(4000, 2, n_steps=20, clip_norm=1.0, **kw)
    return private_gradient_descent(lambda t: t - Z, plan, theta0=np.zeros(2),
                                    random_state=3)


def _case_core_phased():
    Z, kw = _least_squares_core()
    plan = plan_phased_erm(4000, 2, samples_per_user=1, **kw)
    return phased_erm(lambda users: (lambda t: t - Z[users]), plan,
                      theta0=np.zeros(2), random_state=3)


BOX = dict(bounds=(-10.0, 10.0))

CASES = {
    # mean estimators, declared box, both calibrations, pure and approximate
    "ClipNoise-box": _case_means(ClipNoiseMeanEstimator, **BOX),
    "ClipNoise-box-pure": _case_means(ClipNoiseMeanEstimator, delta=0.0, **BOX),
    "ClipNoise-box-paper": _case_means(ClipNoiseMeanEstimator, calibration="paper",
                                       epsilon=0.5, **BOX),
    "ClipNoise-radius": _case_means(ClipNoiseMeanEstimator, radius=8.0,
                                    center=[0.0, 0.0, 0.0]),
    "ClipNoise-auto": _case_many_means(ClipNoiseMeanEstimator, epsilon=4.0),
    "ClipNoise-auto-pure": _case_many_means(ClipNoiseMeanEstimator, epsilon=4.0,
                                            delta=0.0),
    "CoinPress-box": _case_means(CoinPressMeanEstimator, **BOX),
    "CoinPress-steps": _case_means(CoinPressMeanEstimator, n_steps=3, **BOX),
    "CoinPress-radius": _case_means(CoinPressMeanEstimator, radius=8.0, epsilon=4.0),
    "CoinPress-auto": _case_many_means(CoinPressMeanEstimator, epsilon=4.0),
    "Winsorized-box": _case_many_means(WinsorizedMeanEstimator, **BOX),
    "Winsorized-box-tau": _case_many_means(WinsorizedMeanEstimator, delta=1e-6,
                                           tau=2.0, bounds=(-3.0, 3.0)),
    "Winsorized-box-paper": _case_many_means(WinsorizedMeanEstimator,
                                             calibration="paper", epsilon=0.5, **BOX),
    "Winsorized-auto": _case_many_means(WinsorizedMeanEstimator, epsilon=4.0),
    "Threaded-box": _case_many_means(ThreadedClipNoiseEstimator, moment_bound=2.0,
                                     **BOX),
    "Threaded-box-pure": _case_many_means(ThreadedClipNoiseEstimator,
                                          moment_bound=2.0, delta=0.0, **BOX),
    "Threaded-box-paper": _case_many_means(ThreadedClipNoiseEstimator,
                                           moment_bound=2.0, calibration="paper",
                                           epsilon=0.5, **BOX),
    "Auto-box": _case_means(UserMeanEstimator, **BOX),
    "Auto-many-box": _case_many_means(UserMeanEstimator, **BOX),
    "Auto-auto": _case_many_means(UserMeanEstimator, epsilon=4.0),
    "Auto-pure": _case_many_means(UserMeanEstimator, delta=0.0, **BOX),
    "Discrete": _case_discrete(),
    "Discrete-few-users": _case_discrete(route="few_users", delta=0.01),
    "Discrete-paper": _case_discrete(calibration="paper", epsilon=0.5, delta=0.01),
    "FewUsers": _case_few_users(epsilon=1.0, delta=0.3),
    "FewUsers-paper": _case_few_users(epsilon=0.5, delta=0.3, calibration="paper"),
    # linear models
    "SGDRegressor-box": _case_regressor(UserDPSGDRegressor, bounds=(-1, 1),
                                        target_bounds=(-2, 2)),
    "SGDRegressor-box-pure": _case_regressor(UserDPSGDRegressor, bounds=(-1, 1),
                                             target_bounds=(-2, 2), delta=0.0),
    "SGDRegressor-paper": _case_regressor(UserDPSGDRegressor, bounds=(-1, 1),
                                          target_bounds=(-2, 2),
                                          calibration="paper", epsilon=0.5),
    "SGDRegressor-poisson": _case_regressor(UserDPSGDRegressor, bounds=(-1, 1),
                                            target_bounds=(-2, 2),
                                            sampling_rate=0.2, max_iter=20),
    "SGDRegressor-phased": _case_regressor(UserDPSGDRegressor, bounds=(-1, 1),
                                           target_bounds=(-2, 2), solver="phased_erm",
                                           samples_per_user=3),
    "SGDRegressor-winsorized": _case_regressor(UserDPSGDRegressor, bounds=(-1, 1),
                                               target_bounds=(-2, 2),
                                               aggregator="winsorized",
                                               samples_per_user=3),
    "SGDRegressor-auto": _case_regressor(UserDPSGDRegressor, epsilon=4.0),
    "SGDClassifier-box": _case_classifier(bounds=(-1, 1)),
    "SGDClassifier-auto": _case_classifier(epsilon=4.0),
    "LinearRegression-box": _case_regressor(UserDPLinearRegression, bounds=(-1, 1),
                                            target_bounds=(-2, 2)),
    "LinearRegression-box-pure": _case_regressor(UserDPLinearRegression,
                                                 bounds=(-1, 1),
                                                 target_bounds=(-2, 2), delta=0.0),
    "LinearRegression-paper": _case_regressor(UserDPLinearRegression,
                                              bounds=(-1, 1),
                                              target_bounds=(-2, 2),
                                              calibration="paper", epsilon=0.5),
    "LinearRegression-auto": _case_regressor(UserDPLinearRegression, epsilon=4.0),
    # meta-estimators
    "BudgetedEstimator": _case_budgeted,
    "PrivateGridSearch": _case_search,
    # public algorithm cores
    "core-clip_noise": _case_core_clip_noise,
    "core-winsorized_mean": _case_core_winsorized,
    "core-few_users_mean": _case_core_few_users,
    "core-private_bounds": _case_core_bounds,
    "core-poisson_sum": _case_core_poisson,
    "core-private_gradient_descent": _case_core_gradient_descent,
    "core-phased_erm": _case_core_phased,
}


def _run(name):
    with warnings.catch_warnings():  # the cases' few users; values are digested
        warnings.simplefilter("ignore", AccuracyWarning)
        return _digest(CASES[name]())


def _committed():
    return json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}


#: the short name of each estimator's cases (an estimator without any gets a
#: generic case: a fit with the public box (-10, 10))
SHORT = {
    "ClipNoiseMeanEstimator": "ClipNoise", "CoinPressMeanEstimator": "CoinPress",
    "WinsorizedMeanEstimator": "Winsorized",
    "ThreadedClipNoiseEstimator": "Threaded", "UserMeanEstimator": "Auto",
    "DiscreteDistributionEstimator": "Discrete",
    "FewUsersBallEstimator": "FewUsers", "UserDPSGDRegressor": "SGDRegressor",
    "UserDPSGDClassifier": "SGDClassifier",
    "UserDPLinearRegression": "LinearRegression",
}


def _generic_case(cls):
    def run():
        params = dict(bounds=(-10.0, 10.0), random_state=3)
        if is_regressor(cls()) or is_classifier(cls()):
            X, y, g = (_classification_data() if is_classifier(cls())
                       else _regression_data())
            return _fit(cls(**params), X, y, groups=g)
        X, g = _means_data()
        return _fit(cls(**params), X, groups=g)
    return run


for _name, _cls in all_estimators():
    if not any(case.split("-")[0] == SHORT.get(_name, _name) for case in CASES):
        CASES[f"{_name}-generic"] = _generic_case(_cls)


@pytest.mark.parametrize("name", sorted(CASES))
def test_released_values_are_bit_identical(name):
    got = _run(name)
    if os.environ.get("SKUSERDP_UPDATE_DIGESTS"):
        table = _committed()
        table[name] = got
        DIGESTS.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n")
        return
    expected = _committed().get(name)
    if expected is None and name.endswith("-generic"):
        pytest.skip("a new estimator: its digest is not recorded yet (record it "
                    "with SKUSERDP_UPDATE_DIGESTS=1 before refactoring it)")
    assert expected is not None, f"no committed digest for {name}"
    assert got == expected, (
        f"{name}: released values changed (regenerate tests/digests.json only "
        "for a change meant to alter them)")


def test_the_digest_sees_one_ulp_and_an_attribute_name():
    # the guard itself must be able to fail
    a = {"mean_": np.array([0.1, 0.2])}
    b = {"mean_": np.nextafter(a["mean_"], 1.0)}
    c = {"mean_": np.array([0.1, 0.2]), "spent_": 0.5}
    assert _digest(a) != _digest(b)
    assert _digest(a) != _digest(c)
    assert _digest(a) == _digest({"mean_": np.array([0.1, 0.2])})


def test_a_new_estimator_gets_a_generic_case():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean = _generic_case(ClipNoiseMeanEstimator)()
        model = _generic_case(UserDPSGDRegressor)()
    assert mean["mean_"].shape == (3,) and model["coef_"].shape == (3,)
    assert {name.split("-")[0] for name in CASES} >= set(SHORT.values())
