"""DP-SGD's post-processing accuracy check (issue 15, part 4): an
AccuracyWarning when the noise term ``ν·R/√T`` of the plan's public
excess-risk bound exceeds the largest loss of the zero model.

The configurations that returned garbage silently (the paper's calibration
and the winsorized aggregator with few users) now warn; the defaults on a
well-posed task do not.
"""

import math
import warnings

import numpy as np
import pytest

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPSGDRegressor, plan_gradient_descent
from skuserdp.linear_model._losses import get_loss

NOISY = "noise term of this plan's public excess-risk bound"


def _task(n_users, rows=3, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n_users * rows, d))
    y = np.clip(X @ (rng.normal(size=d) / 3) + 0.1 * rng.normal(size=len(X)), -2, 2)
    return X, y, np.repeat(np.arange(n_users), rows)


def _messages(est, X, y, g):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, groups=g)
    return [str(w.message) for w in caught if w.category is AccuracyWarning]


@pytest.mark.parametrize("nu2, steps, radius", [
    (0.01, 100, 5.0), (0.99, 100, 5.0), (1.01, 100, 5.0), (4.0, 4, 0.5)])
def test_rule_is_the_noise_term_against_the_zero_model(nu2, steps, radius):
    # the rule on a plan whose public fields are set: warn iff
    # sqrt(nu2 / T) * R > 1/2 (squared loss, |y| <= 1 in box units)
    base = plan_gradient_descent(1000, 2, epsilon=1.0, delta=1e-6, n_steps=steps,
                                 aggregator="clip", gradient_bound=1.0,
                                 smoothness=1.0, radius=radius)
    plan = type(base)(**{**base.__dict__, "noise_variance": nu2})
    est = UserDPSGDRegressor()
    expected = math.sqrt(nu2 / steps) * radius > 0.5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est._check_plan_accuracy(plan, get_loss("squared_error"), 1)
    assert any(NOISY in str(w.message) for w in caught) == expected


@pytest.mark.parametrize("kwargs", [
    dict(calibration="paper", aggregator="winsorized"),
    dict(calibration="paper", aggregator="winsorized", solver="phased_erm"),
])
def test_hopeless_paper_configurations_warn(kwargs):
    X, y, g = _task(1000)
    est = UserDPSGDRegressor(epsilon=1.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             samples_per_user=3, max_iter=20, random_state=0,
                             **kwargs)
    assert any(NOISY in m for m in _messages(est, X, y, g))


def test_defaults_on_a_well_posed_task_do_not_warn():
    X, y, g = _task(4000)
    est = UserDPSGDRegressor(epsilon=1.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             max_iter=30, random_state=0)
    assert _messages(est, X, y, g) == []
    assert est.score(X, y) > 0.5
