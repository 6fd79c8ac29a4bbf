"""Tests of the budget-splitting helpers of the privacy core.

Advanced composition per step (Levy et al., Algorithm 2 / Theorem 10 and spec
[E6]), splitting a budget into a pure step and the rest, the per-query budget
of K adaptive queries (Theorem 10), and small conversion/sensitivity helpers.
Oracles are the closed forms of the spec and the exact DRV bound
(``compose_advanced``); every check recomposes the budget actually returned.
"""

import itertools
import math

import numpy as np
import pytest

from skuserdp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    adaptive_query_budget,
    advanced_composition_step,
    bounded_range_epsilon,
    compose,
    compose_adaptive_queries,
    compose_advanced,
    compose_homogeneous,
    linf_ball_l2_radius,
    pure_to_zcdp,
    split_off,
    split_zcdp_shares,
    zcdp_remaining,
    zcdp_to_approx_dp,
)

# Relative slack for float rounding of a recomposed budget: a few ulps of the
# sums involved, far below any modelling difference.
REL = 1e-12

EPSILONS = [0.1, 1.0, 10.0, 30.0]
SLACKS = [1e-3, 1e-6, 1e-9]
KS = [1, 2, 16, 128, 1024]
GRID = list(itertools.product(EPSILONS, SLACKS, KS))


def _paper_step(epsilon, delta_slack, k):
    return epsilon / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / delta_slack)))


def _composed(eps0, k, delta_slack):
    return compose_homogeneous(PureDP(eps0), k, delta_slack).epsilon


# ------------------------------------------------- compose_homogeneous
@pytest.mark.parametrize(
    "loss", [PureDP(0.01), PureDP(0.3), PureDP(2.0), ApproxDP(0.01, 1e-9),
             ApproxDP(0.5, 1e-7)])
@pytest.mark.parametrize("k", [1, 2, 10, 1000])
@pytest.mark.parametrize("delta_slack", [1e-3, 1e-8])
def test_compose_homogeneous_is_the_better_of_basic_and_advanced(
        loss, k, delta_slack):
    basic = compose(*([loss] * k))
    advanced = compose_advanced(loss, k, delta_slack)
    out = compose_homogeneous(loss, k, delta_slack)
    assert out.epsilon == min(basic.epsilon, advanced.epsilon)
    if advanced.epsilon < basic.epsilon:
        assert out == advanced and type(out) is ApproxDP
    else:
        assert out == basic
        assert type(out) is type(loss)  # PureDP stays pure
    assert out.epsilon <= basic.epsilon and out.epsilon <= advanced.epsilon


def test_compose_homogeneous_known_values():
    assert compose_homogeneous(PureDP(0.5), 2, 1e-6) == PureDP(1.0)
    eps0, k, ds = 0.01, 1000, 1e-6
    drv = eps0 * math.sqrt(2 * k * math.log(1 / ds)) + k * eps0 * math.expm1(eps0)
    out = compose_homogeneous(PureDP(eps0), k, ds)
    assert type(out) is ApproxDP
    assert out.epsilon == pytest.approx(drv, rel=REL) and drv < k * eps0
    assert out.delta == ds
    out = compose_homogeneous(ApproxDP(eps0, 1e-10), k, ds)
    assert out.delta == pytest.approx(k * 1e-10 + ds, rel=REL)
    with pytest.raises(ValueError):
        compose_homogeneous(PureDP(1.0), 0, 1e-6)
    with pytest.raises(ValueError):
        compose_homogeneous(PureDP(1.0), 3, 1.0)


# ------------------------------------------- advanced_composition_step
@pytest.mark.parametrize("epsilon,delta_slack,k", GRID)
def test_advanced_composition_step_composes_within_budget(epsilon, delta_slack, k):
    paper = advanced_composition_step(epsilon, delta_slack, k, rule="paper")
    exact = advanced_composition_step(epsilon, delta_slack, k, rule="exact")
    assert advanced_composition_step(epsilon, delta_slack, k) == exact
    for eps0 in (paper, exact):
        assert eps0 > 0
        assert _composed(eps0, k, delta_slack) <= epsilon * (1 + REL)
    closed = _paper_step(epsilon, delta_slack, k)
    if _composed(closed, k, delta_slack) <= epsilon:
        # the paper's closed form is used whenever it is valid
        assert paper == pytest.approx(closed, rel=REL)
    else:
        # otherwise the exact rule takes over
        assert paper == exact
    # the exact rule is at least as generous as the paper and as basic
    # composition (the bisection stops at a relative 1e-15)
    assert exact >= paper * (1 - 1e-14)
    assert exact >= epsilon / k
    # ... and maximal: 0.1% more would overspend, unless ε itself fits
    if exact != epsilon:
        assert _composed(1.001 * exact, k, delta_slack) > epsilon
    else:
        assert _composed(epsilon, k, delta_slack) <= epsilon


def test_paper_rule_closed_form_fails_for_large_epsilon_in_the_grid():
    # ε = 30, δ' = 1e-3, k = 1024: the closed form 0.126 composes to 32.3 by
    # DRV and 129 by basic composition (> 30), so the exact rule is used
    eps, ds, k = 30.0, 1e-3, 1024
    closed = _paper_step(eps, ds, k)
    assert _composed(closed, k, ds) > eps
    paper = advanced_composition_step(eps, ds, k, rule="paper")
    assert paper != closed
    assert paper == advanced_composition_step(eps, ds, k, rule="exact")
    assert _composed(paper, k, ds) <= eps


def test_spec_case_e6():
    # k = 16, ε = 30, δ' = 1e-3: the paper's ε0 ≈ 1.009 composes to ≈ 43.1 by
    # DRV (the quadratic term is not <= ε/2), yet basic composition gives
    # 16 ε0 ≈ 16.1 <= 30, so the paper's split is kept.
    eps, ds, k = 30.0, 1e-3, 16
    eps0 = advanced_composition_step(eps, ds, k, rule="paper")
    assert eps0 == pytest.approx(_paper_step(eps, ds, k), rel=REL)
    assert eps0 == pytest.approx(1.0088, abs=1e-4)
    drv = compose_advanced(PureDP(eps0), k, ds).epsilon
    assert drv == pytest.approx(43.1, abs=0.05)
    assert drv > eps
    best = compose_homogeneous(PureDP(eps0), k, ds)
    assert best == PureDP(16 * eps0)
    assert best.epsilon <= eps


def test_advanced_composition_step_known_values():
    # the docstring's values, recomputed from the closed form
    assert advanced_composition_step(1.0, 1e-6, 64, rule="paper") == pytest.approx(
        1.0 / (2 * math.sqrt(128 * math.log(1e6))), rel=REL)
    exact = advanced_composition_step(1.0, 1e-6, 64)
    assert exact == pytest.approx(0.02297, abs=5e-6)
    # k = 1: the mechanism itself, ε0 = ε
    assert advanced_composition_step(2.5, 1e-6, 1) == 2.5


@pytest.mark.parametrize(
    "kwargs",
    [dict(epsilon=0.0), dict(epsilon=-1.0), dict(epsilon=math.inf),
     dict(delta_slack=0.0), dict(delta_slack=1.0), dict(k=0),
     dict(rule="drv")])
def test_advanced_composition_step_bad_inputs(kwargs):
    args = dict(epsilon=1.0, delta_slack=1e-6, k=4)
    args.update(kwargs)
    rule = args.pop("rule", "exact")
    with pytest.raises(ValueError):
        advanced_composition_step(args["epsilon"], args["delta_slack"], args["k"],
                                  rule=rule)


# ---------------------------------------------------------------- split_off
@pytest.mark.parametrize("share", [0.01, 0.25, 0.5, 0.9])
def test_split_off_reproduces_the_budget(share):
    step, rest = split_off(PureDP(2.0), share)
    assert step == pytest.approx(2.0 * share, rel=REL)
    assert type(rest) is PureDP
    assert compose(PureDP(step), rest).epsilon == pytest.approx(2.0, rel=REL)

    step, rest = split_off(ApproxDP(1.5, 1e-6), share)
    assert step == pytest.approx(1.5 * share, rel=REL)
    total = compose(PureDP(step), rest)
    assert type(total) is ApproxDP
    assert total.epsilon == pytest.approx(1.5, rel=REL) and total.delta == 1e-6

    rho = 0.37
    step, rest = split_off(ZCDP(rho), share)
    assert type(rest) is ZCDP
    # an ε-bounded-range step costs ε²/8: share·ρ
    spent = pure_to_zcdp(step, bounded_range=True).rho
    assert spent == pytest.approx(share * rho, rel=REL)
    assert spent + rest.rho == pytest.approx(rho, rel=REL)
    assert step == pytest.approx(bounded_range_epsilon(share * rho), rel=REL)


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_split_off_rejects_bad_shares(share):
    with pytest.raises(ValueError):
        split_off(PureDP(1.0), share)


def test_split_off_rejects_unknown_budgets():
    with pytest.raises(TypeError):
        split_off(1.0, 0.5)
    with pytest.raises(TypeError):
        split_off((1.0, 1e-6), 0.5)


# -------------------------------------------------- K adaptive queries
@pytest.mark.parametrize(
    "epsilon,delta,k,calibration",
    list(itertools.product([0.5, 1.0, 8.0, 100.0], [1e-3, 1e-6, 1e-9],
                           [1, 4, 50, 100], ["tight", "paper"])))
def test_adaptive_queries_compose_within_budget(epsilon, delta, k, calibration):
    budget = adaptive_query_budget(epsilon, delta, k, calibration=calibration)
    total = compose_adaptive_queries(budget, k, delta)
    if calibration == "tight":
        assert type(budget) is ZCDP and type(total) is ZCDP
        assert total.rho == pytest.approx(k * budget.rho, rel=REL)
        total = zcdp_to_approx_dp(total.rho, delta)
    else:
        assert type(budget) is ApproxDP
        assert budget.delta == pytest.approx(delta / (2 * k), rel=REL)
        closed = epsilon / (2 * math.sqrt(2 * k * math.log(2 / delta)))
        # Theorem 10's ε0 whenever it composes (best of basic/DRV) within ε
        if _composed(closed, k, delta / 2) <= epsilon:
            assert budget.epsilon == pytest.approx(closed, rel=REL)
        else:
            assert budget.epsilon != closed
    assert total.epsilon <= epsilon * (1 + REL)
    assert total.delta <= delta * (1 + REL)


def test_adaptive_queries_paper_values_of_theorem_10():
    b = adaptive_query_budget(1.0, 1e-6, 100, calibration="paper")
    assert b.epsilon == pytest.approx(1 / (2 * math.sqrt(200 * math.log(2e6))),
                                      rel=REL)
    assert b.delta == pytest.approx(1e-6 / 200, rel=REL)
    total = compose_adaptive_queries(b, 100, 1e-6)
    # advanced composition with δ' = δ/2: total δ = K δ0 + δ/2 = δ
    assert type(total) is ApproxDP
    assert total.delta == pytest.approx(1e-6, rel=REL)
    assert total.epsilon < 1.0
    # ε = 100, K = 100, δ = 1e-3: Theorem 10's ε0 = 1.28 overspends (basic
    # composition gives 128, DRV 383), so it is corrected
    closed = 100 / (2 * math.sqrt(200 * math.log(2e3)))
    assert _composed(closed, 100, 5e-4) > 100
    b = adaptive_query_budget(100.0, 1e-3, 100, calibration="paper")
    assert b.epsilon < closed
    assert compose_adaptive_queries(b, 100, 1e-3).epsilon <= 100.0


@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_adaptive_queries_pure_when_delta_is_zero(calibration, k):
    b = adaptive_query_budget(2.0, 0.0, k, calibration=calibration)
    assert b == PureDP(2.0 / k)
    total = compose_adaptive_queries(b, k, 0.0)
    assert type(total) is PureDP
    assert total.epsilon == pytest.approx(2.0, rel=REL)


def test_adaptive_queries_tight_is_additive_zcdp():
    from skuserdp.privacy import zcdp_rho_for

    b = adaptive_query_budget(1.0, 1e-6, 10)
    assert b.rho == pytest.approx(zcdp_rho_for(1.0, 1e-6) / 10, rel=REL)
    assert compose_adaptive_queries(ZCDP(0.01), 10, 1e-6).rho == pytest.approx(
        0.1, rel=REL)
    with pytest.raises(ValueError):
        adaptive_query_budget(1.0, 1e-6, 0)


# ------------------------------------------------------------ small helpers
def test_zcdp_remaining():
    assert zcdp_remaining(ZCDP(0.5), 0.125, ZCDP(0.25)) == ZCDP(0.125)
    assert zcdp_remaining(1.0) == ZCDP(1.0)
    assert zcdp_remaining(0.3, 0.1).rho == pytest.approx(0.2, rel=REL)
    for spent in [(0.5,), (0.25, 0.25), (0.3, ZCDP(0.3))]:
        with pytest.raises(ValueError):
            zcdp_remaining(0.5, *spent)
    with pytest.raises(ValueError):
        zcdp_remaining(0.5, -0.1)  # a negative spend is not a budget


@pytest.mark.parametrize("epsilon", [1e-4, 0.3, 1.0, 2.0, 17.0])
def test_bounded_range_epsilon_inverts_pure_to_zcdp(epsilon):
    rho = pure_to_zcdp(epsilon, bounded_range=True)
    assert rho.rho == pytest.approx(epsilon ** 2 / 8, rel=REL)
    assert bounded_range_epsilon(rho) == pytest.approx(epsilon, rel=REL)
    assert bounded_range_epsilon(rho.rho) == pytest.approx(epsilon, rel=REL)
    assert pure_to_zcdp(bounded_range_epsilon(0.02), bounded_range=True).rho == (
        pytest.approx(0.02, rel=REL))


def test_bounded_range_epsilon_values():
    assert bounded_range_epsilon(0.125) == 1.0
    assert bounded_range_epsilon(ZCDP(0.5)) == 2.0
    assert bounded_range_epsilon(0.0) == 0.0
    with pytest.raises(ValueError):
        bounded_range_epsilon(-0.1)


@pytest.mark.parametrize("radius", [0.0, 0.5, 1.5, 3.0])
@pytest.mark.parametrize("dim", [1, 2, 16, 100])
def test_linf_ball_l2_radius(radius, dim):
    r = linf_ball_l2_radius(radius, dim)
    assert r == pytest.approx(radius * math.sqrt(dim), rel=REL)
    # attained at a corner of the ℓ∞ ball, and no point exceeds it
    assert np.linalg.norm(np.full(dim, radius)) == pytest.approx(r, rel=REL)
    pts = np.random.default_rng(dim).uniform(-radius, radius, size=(200, dim))
    assert np.all(np.linalg.norm(pts, axis=1) <= r * (1 + REL))


def test_linf_ball_l2_radius_bad_inputs():
    assert linf_ball_l2_radius(1.5, 16) == 6.0
    with pytest.raises(ValueError):
        linf_ball_l2_radius(-1.0, 4)
    with pytest.raises(ValueError):
        linf_ball_l2_radius(1.0, 0)
    with pytest.raises(ValueError):
        linf_ball_l2_radius(math.inf, 4)


# ------------------------------------------------------------ split_zcdp_shares
@pytest.mark.parametrize("rho", [1e-6, 0.0244, 1.0, 37.5])
@pytest.mark.parametrize("shares", [[1.0], [1, 1, 2], [0.05, 0.05, 0.05, 0.85],
                                    [0.3] * 17, [0.0, 1.0, 1e-9]])
def test_split_zcdp_shares_recomposes_to_at_most_the_budget(rho, shares):
    parts = split_zcdp_shares(ZCDP(rho), shares)
    assert len(parts) == len(shares)
    assert compose(*parts).rho <= rho
    # sequential float sums in any order stay under ρ, too
    assert sum(p.rho for p in reversed(parts)) <= rho
    w = np.asarray(shares, dtype=float) / np.sum(shares)
    np.testing.assert_allclose([p.rho for p in parts], rho * w, rtol=1e-12, atol=0)


@pytest.mark.parametrize("budget, shares, err", [
    (ApproxDP(1.0, 1e-6), [1.0], TypeError),
    (ZCDP(1.0), [], ValueError),
    (ZCDP(1.0), [0.0, 0.0], ValueError),
    (ZCDP(1.0), [1.0, -0.1], ValueError),
    (ZCDP(1.0), [1.0, float("nan")], ValueError),
    (ZCDP(1.0), [[1.0, 2.0]], ValueError),
])
def test_split_zcdp_shares_rejects_bad_inputs(budget, shares, err):
    with pytest.raises(err):
        split_zcdp_shares(budget, shares)


def test_split_zcdp_shares_huge_shares_do_not_overflow():
    parts = split_zcdp_shares(ZCDP(0.5), [1e308, 1e308, 0.0])
    assert [p.rho for p in parts] == pytest.approx([0.25, 0.25, 0.0], rel=1e-12)


def test_a_zcdp_split_worth_epsilon_zero_is_refused_clearly():
    # issue 26: epsilon far below delta -- a zCDP part converts to epsilon 0
    # at delta, and the next step said "got 0.0" without the requested value
    from skuserdp.privacy import split_for_fits, split_zcdp
    with pytest.raises(ValueError, match=r"epsilon=1e-09 is too small for delta"):
        split_for_fits(1e-9, 1e-6, 2, zcdp=True)
    with pytest.raises(ValueError, match=r"epsilon=1e-09 is too small for delta"):
        split_zcdp(1e-9, 1e-6, 0.1)
    assert split_for_fits(1e-9, 1e-6, 2, zcdp=False) == (5e-10, 5e-07)
    assert split_zcdp(1.0, 1e-6, 0.1)[1] > 0
