"""Post-processing accuracy checks shared by the mean estimators (issue 15,
part 4): the warning when the public plan's own noise exceeds the box.

The check costs no privacy: it compares the root mean squared ℓ2 error of
the release's noise (a function of the public plan) with the half-diagonal
of the box, the error of the box's midpoint in the worst case.
"""

import math
import warnings

import numpy as np
import pytest

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
    plan_clip_noise,
)
from skuserdp.privacy import ApproxDP

NOISY = "noise of this release alone"
ESTIMATORS = [ClipNoiseMeanEstimator, CoinPressMeanEstimator,
              WinsorizedMeanEstimator, UserMeanEstimator]


def _data(n_users, seed=0, d=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 1.0, (3 * n_users, d)), np.repeat(np.arange(n_users), 3)


def _accuracy_messages(est, X, g):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, groups=g)
    return [str(w.message) for w in caught if w.category is AccuracyWarning]


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_noise_larger_than_the_box_warns(cls):
    # 50 users at epsilon 0.01 in the unit cube: the noise alone is far
    # larger than the half-diagonal sqrt(3)/2
    X, g = _data(50)
    messages = _accuracy_messages(cls(epsilon=0.01, bounds=(0, 1), random_state=0),
                                  X, g)
    assert any(NOISY in m for m in messages), messages


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_enough_users_do_not_warn(cls):
    X, g = _data(2000)
    est = cls(epsilon=1.0, bounds=(0, 1), random_state=0)
    assert _accuracy_messages(est, X, g) == []
    assert not hasattr(est, "_noise_error")  # no stale state between fits


@pytest.mark.parametrize("n_users", [60, 80, 100, 120, 150, 200, 300])
def test_the_warning_is_exactly_the_public_plan_rule(n_users):
    # ClipNoise with a declared box: the radius is the half-diagonal, the
    # plan is public, and the warning must fire exactly when the plan's
    # sqrt(d * noise_variance) exceeds that half-diagonal -- on any data of
    # that shape (two different datasets decide alike)
    d, eps, delta = 3, 0.1, 1e-6
    half_diagonal = math.sqrt(d) / 2
    plan = plan_clip_noise(n_users, d, budget=ApproxDP(eps, delta),
                           radius=half_diagonal)
    expected = math.sqrt(d * plan.noise_variance) > half_diagonal
    for seed in (0, 1):
        X, g = _data(n_users, seed)
        # ci_share=0: the estimate's plan gets the whole (eps, delta)
        est = ClipNoiseMeanEstimator(epsilon=eps, delta=delta, bounds=(0, 1),
                                     ci_share=0.0, random_state=seed)
        messages = _accuracy_messages(est, X, g)
        assert any(NOISY in m for m in messages) == expected, (n_users, messages)


def test_rule_flips_inside_the_tested_range():
    # the parametrised range above straddles the threshold (so both sides
    # of the rule are exercised)
    d, eps, delta = 3, 0.1, 1e-6
    half_diagonal = math.sqrt(d) / 2
    flags = [math.sqrt(d * plan_clip_noise(n, d, budget=ApproxDP(eps, delta),
                                           radius=half_diagonal).noise_variance)
             > half_diagonal for n in (60, 300)]
    assert flags == [True, False]
