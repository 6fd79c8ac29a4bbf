"""The core's planners warn whenever their range step will certainly fail
(issue 31): ``plan_gradient_descent`` / ``plan_phased_erm`` raise an
AccuracyWarning, from public values only, when their own range-failure bound
(the union over steps, or phases, of the winsorized releases' bounds) is 1.
"""

import math
import warnings

import pytest

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import plan_gradient_descent, plan_phased_erm

KW = dict(epsilon=1.0, delta=1e-6, gradient_bound=1.0, smoothness=1.0,
          radius=1.0)
FAILS = "range steps have a public failure bound of 1"


def _caught(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = fn(*args, **kwargs)
    return plan, [str(w.message) for w in caught if w.category is AccuracyWarning]


def test_gradient_descent_warns_when_the_bound_is_one():
    plan, msgs = _caught(plan_gradient_descent, 1000, 3, n_steps=20,
                         aggregator="winsorized", tau=0.05, calibration="paper",
                         **KW)
    assert plan.range_failure_bound == 1.0
    assert len(msgs) == 1 and FAILS in msgs[0] and "aggregator='clip'" in msgs[0]


@pytest.mark.parametrize("kwargs", [
    dict(aggregator="winsorized", tau=0.05, calibration="tight"),
    dict(aggregator="clip"),
])
def test_gradient_descent_plans_that_can_succeed_do_not_warn(kwargs):
    plan, msgs = _caught(plan_gradient_descent, 10_000, 3, n_steps=20, **KW,
                         **kwargs)
    assert plan.range_failure_bound < 1.0
    assert msgs == []


def test_bound_is_the_union_over_steps():
    # a paper plan whose one-step bound is below 1 but whose T steps are not
    one, msgs1 = _caught(plan_gradient_descent, 10_000, 3, n_steps=1,
                         aggregator="winsorized", tau=0.05, calibration="paper",
                         **KW)
    assert 0.0 < one.range_failure_bound < 1.0 and msgs1 == []
    plan, msgs = _caught(plan_gradient_descent, 10_000, 3, n_steps=20,
                         aggregator="winsorized", tau=0.05, calibration="paper",
                         **KW)
    per_step = plan.release.range_failure_bound
    assert plan.range_failure_bound == min(1.0, 20 * per_step) == 1.0
    assert len(msgs) == 1 and FAILS in msgs[0]


def test_phased_erm_warns_once_when_the_bound_is_one():
    plan, msgs = _caught(plan_phased_erm, 1000, 3, aggregator="winsorized",
                         tau=0.05, calibration="paper", samples_per_user=10, **KW)
    assert plan.range_failure_bound == 1.0
    assert len(msgs) == 1 and msgs[0].startswith("plan_phased_erm")
    total = sum(p.range_failure_bound for p in plan.phases)
    assert math.isclose(plan.range_failure_bound, min(1.0, total))


def test_phased_erm_that_can_succeed_does_not_warn():
    plan, msgs = _caught(plan_phased_erm, 100_000, 3, aggregator="winsorized",
                         tau=0.05, calibration="tight", samples_per_user=10, **KW)
    assert plan.range_failure_bound < 1.0 and msgs == []
