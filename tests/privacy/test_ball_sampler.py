"""Privacy map of the few-users ball sampler (EMN Algorithm 1).

Spec: shared/specs/emn2021_few_users.md §2.2 items 5-7 (P0, P1, the direct
bound on the whole output) and §2.11 (calibration). The exact 1-D check that
these numbers are attained is in tests/testing/test_ball_exact.py.
"""

import math

import pytest

from skuserdp.privacy import (
    ApproxDP,
    ball_sampler_max_rounds,
    ball_sampler_privacy,
    calibrate_ball_sampler,
)
from skuserdp.privacy._ball_sampler import BALL_SAMPLER_MAX_EPSILON

EPS_A = [1e-4, 0.01, 0.1, 0.2, 1.0 / 3.0]
DELTA_A = [1e-12, 1e-6, 1e-3, 0.1, 0.2]


def _spec_map(eps_a, delta_a):
    """Spec §2.2 item 7, written out independently of the library."""
    slack = 1.0 - math.exp(eps_a) * delta_a / 4.0
    eps = 3.0 * eps_a + math.log(1.0 / slack)
    delta = delta_a * (4.0 + math.exp(3.0 * eps_a) / (4.0 * slack))
    return eps, delta


def _meets(eps_a, delta_a, epsilon, delta, rel=1e-12):
    """Whether the spec's map meets (epsilon, delta), up to float rounding.

    The calibration bisects to the last bit, and this independent
    evaluation of the map may round differently (1e-12 relative).
    """
    eps, dlt = _spec_map(eps_a, delta_a)
    return eps <= epsilon * (1 + rel) and dlt <= delta * (1 + rel)


# ------------------------------------------------------------ privacy map
@pytest.mark.parametrize("eps_a", EPS_A)
@pytest.mark.parametrize("delta_a", DELTA_A)
def test_privacy_map_is_the_closed_form_of_the_spec(eps_a, delta_a):
    loss = ball_sampler_privacy(eps_a, delta_a)
    assert isinstance(loss, ApproxDP)
    eps, delta = _spec_map(eps_a, delta_a)
    assert loss.epsilon == pytest.approx(eps, rel=1e-12)
    assert loss.delta == pytest.approx(delta, rel=1e-12)
    # The spec's summary of the bound: about (3 eps_a, 4.25 delta_a), and
    # at most (3 eps_a + 0.4 delta_a, 4.8 delta_a) for delta_a <= 0.1.
    assert loss.epsilon >= 3 * eps_a
    if delta_a <= 0.1:
        assert loss.epsilon <= 3 * eps_a + 0.4 * delta_a
        assert loss.delta <= 4.8 * delta_a
    if eps_a <= 0.01 and delta_a <= 1e-6:
        assert loss.delta == pytest.approx(4.25 * delta_a, rel=0.01)


def test_privacy_map_docstring_value():
    loss = ball_sampler_privacy(0.1, 1e-6)
    assert loss.epsilon == pytest.approx(0.3, abs=1e-6)
    assert loss.delta == pytest.approx(4.3375e-6, rel=1e-4)


@pytest.mark.parametrize("eps_a,delta_a", [
    (0.34, 1e-6), (1.0, 1e-6), (0.1, 1.0 / 3.0), (0.1, 0.5), (0.0, 1e-6),
    (0.1, 0.0), (-0.1, 1e-6), (float("nan"), 1e-6), (0.1, float("inf")),
])
def test_privacy_map_refuses_parameters_outside_prop19(eps_a, delta_a):
    # Prop 19 (and so the whole bound) needs eps_a <= 1/3, delta_a < 1/3.
    with pytest.raises(ValueError):
        ball_sampler_privacy(eps_a, delta_a)


# ------------------------------------------------------------ calibration
EPSILONS = [0.01, 0.1, 0.5, 1.0, 2.0, 10.0]
DELTAS = [1e-12, 1e-8, 1e-5, 1e-2, 0.1]


@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_calibration_meets_the_target(calibration, epsilon, delta):
    eps_a, delta_a = calibrate_ball_sampler(epsilon, delta, calibration=calibration)
    assert 0 < eps_a <= BALL_SAMPLER_MAX_EPSILON
    assert 0 < delta_a < 1.0 / 3.0
    loss = ball_sampler_privacy(eps_a, delta_a)
    assert loss.epsilon <= epsilon and loss.delta <= delta, loss
    assert _meets(eps_a, delta_a, epsilon, delta)
    if calibration == "paper":
        assert eps_a == min(epsilon / 4.0, 1.0 / 3.0)
    else:
        # About eps/3: the log term is at most e^{1/3} delta_a / 3.
        assert eps_a >= min((epsilon - delta) / 3.0, 1.0 / 3.0) * (1 - 1e-9)
    # delta_a is maximal given eps_a: a relative 1e-6 more breaks one of the
    # two targets, or the 0.3 cap binds. (When the epsilon target binds the
    # step in epsilon is ~ delta * 1e-7, below float resolution for tiny
    # delta, hence the Pareto form.)
    tight_delta = loss.delta >= delta * (1 - 1e-6)
    tight_eps = loss.epsilon >= epsilon * (1 - 1e-12)
    assert tight_delta or tight_eps or delta_a == 0.3, (loss, eps_a, delta_a)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_tight_epsilon_a_is_maximal(epsilon, delta):
    eps_a, delta_a = calibrate_ball_sampler(epsilon, delta)
    if eps_a == BALL_SAMPLER_MAX_EPSILON:
        # The cap binds only when the target allows more (eps >~ 1).
        assert epsilon >= 1.0 and _spec_map(eps_a, delta_a)[0] <= epsilon
        return
    # A relative 1e-9 larger eps_a breaks the epsilon target (the bisection
    # stops at a relative width of 1e-15). The map's epsilon is increasing
    # in both arguments, so this holds at every delta_a >= delta/4.8.
    assert _spec_map(eps_a * (1 + 1e-9), min(delta / 4.8, 0.3))[0] > epsilon
    assert not _meets(eps_a * (1 + 1e-9), delta_a, epsilon, delta, rel=0.0)


# Was a library bug (eps_a = 0 when delta >~ 19 eps); fixed by capping the
# provisional delta_a at eps.
@pytest.mark.parametrize("epsilon,delta", [(0.01, 0.5), (0.001, 0.05)])
def test_calibration_is_feasible_when_delta_is_large(epsilon, delta):
    # (eps/6, eps) meets the target (3 eps/6 + a log term of about eps/4
    # < eps; delta about 4.25 eps < delta), so a valid internal pair exists.
    assert _meets(epsilon / 6, epsilon, epsilon, delta)
    eps_a, delta_a = calibrate_ball_sampler(epsilon, delta)
    assert eps_a > 0
    assert _meets(eps_a, delta_a, epsilon, delta)


def test_tight_calibration_docstring_value():
    eps_a, delta_a = calibrate_ball_sampler(0.6, 1e-5)
    assert eps_a == pytest.approx(0.2, abs=1e-5)
    assert delta_a == pytest.approx(0.2083e-5, rel=1e-3)


@pytest.mark.parametrize("kwargs", [
    dict(epsilon=0.0, delta=1e-6), dict(epsilon=-1.0, delta=1e-6),
    dict(epsilon=float("inf"), delta=1e-6), dict(epsilon=1.0, delta=0.0),
    dict(epsilon=1.0, delta=1.0), dict(epsilon=1.0, delta=1e-6, calibration="x"),
])
def test_calibration_validation(kwargs):
    with pytest.raises(ValueError):
        calibrate_ball_sampler(**kwargs)


# ----------------------------------------------------------- P1: N_priv
@pytest.mark.parametrize("n", [2, 10, 57, 100, 300, 1000])
@pytest.mark.parametrize("eps_a", [0.01, 0.2, 1.0 / 3.0])
@pytest.mark.parametrize("delta_a", [1e-9, 1e-5, 0.1])
@pytest.mark.parametrize("accept,beta", [(1.0 / 3.0, 2.0 / 3.0), (0.1, 0.9),
                                         (0.28, 0.56)])
def test_max_rounds_is_the_p1_formula(n, eps_a, delta_a, accept, beta):
    log_n = ball_sampler_max_rounds(n, eps_a, delta_a, accept=accept,
                                    cap_fraction=beta)
    a = eps_a * beta * n
    if a < 700:  # direct evaluation is safe: compare with it
        n_priv = delta_a * (math.exp(a) + 4.0 / delta_a) / (accept * math.exp(eps_a))
        assert log_n == pytest.approx(math.log(n_priv), rel=1e-12, abs=1e-12)
        # P1 with equality at N = N_priv: Delta = delta_a / N_priv.
        gap = accept * math.exp(eps_a) / (math.exp(a) + 4.0 / delta_a)
        assert gap == pytest.approx(delta_a / n_priv, rel=1e-12)
    # The garbage weight alone gives N_priv >= 4 / (c_acc e^{eps_a}) > 1,
    # so P1 never needs more users (the plan only clamps N).
    assert log_n >= math.log(4.0 / accept) - eps_a - 1e-12


def test_max_rounds_defaults_are_the_papers():
    assert ball_sampler_max_rounds(100, 0.2, 1e-6) == ball_sampler_max_rounds(
        100, 0.2, 1e-6, accept=1 / 3, cap_fraction=2 / 3)
    # docstring value
    assert math.exp(ball_sampler_max_rounds(100, 0.2, 1e-6)) == pytest.approx(
        11.3, abs=0.05)


@pytest.mark.parametrize("n", [10 ** 6, 10 ** 9])
def test_max_rounds_in_log_space_for_huge_n(n):
    # e^{eps_a beta n} = e^{222222} overflows float64; the log does not.
    eps_a, delta_a = 1.0 / 3.0, 1e-6
    log_n = ball_sampler_max_rounds(n, eps_a, delta_a)
    assert math.isfinite(log_n)
    with pytest.raises(OverflowError):
        math.exp(eps_a * 2.0 / 3.0 * n)
    expected = math.log(delta_a) + eps_a * 2.0 / 3.0 * n - math.log(1 / 3) - eps_a
    assert log_n == pytest.approx(expected, rel=1e-12)
