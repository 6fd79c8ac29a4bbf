"""One budget across fits (issue 16, part 1): ``compose_spend`` and
``BudgetAccountant``.

The composition of mixed losses is checked against the privacy core's
single-kind results (exact) and against dp-accounting's Rényi accountant
(an independent implementation); the accountant's refusals, its handle
semantics (clone, deepcopy, threads) and its refusal to cross processes.
"""

import copy
import math
import pickle
import threading

import numpy as np
import pytest

from skuserdp.exceptions import BudgetExceededError, DetachedAccountantError
from skuserdp.privacy import (
    ZCDP,
    ApproxDP,
    BudgetAccountant,
    PureDP,
    compose,
    compose_spend,
    rdp_curve_epsilon,
    zcdp_to_approx_dp,
)


# --------------------------------------------------------------- compose_spend
def test_single_kinds_reduce_to_the_core():
    pure = [PureDP(0.3), PureDP(0.2), PureDP(0.5)]
    assert compose_spend(pure, 0.0) == ApproxDP(1.0, 0.0)
    approx = [ApproxDP(0.5, 1e-7), PureDP(0.25)]
    assert compose_spend(approx, 1e-7) == compose(*approx)
    zc = [ZCDP(0.01), ZCDP(0.02), ZCDP(0.03)]
    assert compose_spend(zc, 1e-6).epsilon == pytest.approx(
        zcdp_to_approx_dp(compose(*zc), 1e-6).epsilon, rel=1e-9)
    assert compose_spend([], 1e-6) == ApproxDP(0.0, 0.0)


def test_many_small_pure_losses_beat_the_basic_sum():
    # 100 x 0.1-DP at delta = 1e-6: the Renyi bound (min(eps, alpha eps^2/2)
    # per loss) is far below 10, and never below the zCDP-only bound of the
    # same losses (it can only use the better of the two per order)
    spend = compose_spend([PureDP(0.1)] * 100, 1e-6)
    as_zcdp = zcdp_to_approx_dp(100 * 0.1 ** 2 / 2, 1e-6).epsilon
    assert spend.epsilon <= as_zcdp + 1e-9
    assert spend.epsilon < 10.0
    assert spend.delta == 1e-6


def test_no_bound_without_delta_for_zcdp():
    with pytest.raises(ValueError, match="no \\(ε, δ\\) bound"):
        compose_spend([ZCDP(0.1)], 0.0)
    with pytest.raises(ValueError, match="no \\(ε, δ\\) bound"):
        compose_spend([ApproxDP(0.1, 1e-5)], 1e-6)


def test_rdp_curve_epsilon_of_a_linear_curve_is_the_zcdp_conversion():
    for rho in (1e-4, 0.01, 0.5, 3.0):
        assert rdp_curve_epsilon(lambda a: a * rho, 1e-6) == pytest.approx(
            zcdp_to_approx_dp(rho, 1e-6).epsilon, rel=1e-7)


@pytest.fixture
def rdp():
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant
    return dp_event, RdpAccountant


@pytest.mark.parametrize("rhos, pures", [
    ([0.01] * 16, []),
    ([0.05, 0.2], [0.1, 0.3]),
    ([], [0.05] * 40),
    ([0.001], [1.0]),
])
def test_against_dp_accounting(rdp, rhos, pures):
    # dp-accounting's RdpAccountant on ZCDpEvent(rho) and ZCDpEvent(xi=eps)
    # (a pure loss's D_alpha <= eps), and on ZCDpEvent(rho=eps^2/2) (its
    # D_alpha <= alpha eps^2/2): both are valid Renyi curves; ours takes
    # their pointwise minimum and optimises the order continuously, so it is
    # never above either, and within 2 % of the better one (order grids)
    dp_event, RdpAccountant = rdp
    delta = 1e-6
    ours = compose_spend([ZCDP(r) for r in rhos] + [PureDP(e) for e in pures], delta)

    def theirs(pure_event):
        acc = RdpAccountant()
        for r in rhos:
            acc.compose(dp_event.ZCDpEvent(rho=r))
        for e in pures:
            acc.compose(pure_event(e))
        return acc.get_epsilon(delta)

    linear = theirs(lambda e: dp_event.ZCDpEvent(rho=0.0, xi=e))
    quadratic = theirs(lambda e: dp_event.ZCDpEvent(rho=e * e / 2))
    assert ours.epsilon <= min(linear, quadratic) * (1 + 1e-9)
    if not pures or not rhos:
        assert ours.epsilon >= 0.98 * min(linear, quadratic)


# ------------------------------------------------------------ the accountant
def test_sixteen_pure_charges_then_refusal():
    acc = BudgetAccountant(epsilon=2.0)
    for k in range(16):
        acc.charge(PureDP(0.125), label=f"fit {k}")
    assert acc.spent == ApproxDP(2.0, 0.0)
    assert acc.remaining_epsilon == 0.0
    with pytest.raises(BudgetExceededError, match="would exceed the total"):
        acc.charge(PureDP(0.125), label="fit 16")
    assert len(acc.ledger) == 16 and acc.ledger[-1][0] == "fit 15"
    assert not acc.would_fit(PureDP(1e-12))


def test_zcdp_charges_compose_in_rho_at_the_total_delta():
    # the zCDP fits compose in rho and are converted once, at the total delta:
    # far more fits than (eps, delta) composition of each fit's own guarantee
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    per_fit = zcdp_to_approx_dp(0.001, 1e-6 / 100).epsilon
    n = 0
    while acc.would_fit(ZCDP(0.001)):
        acc.charge(ZCDP(0.001))
        n += 1
    assert acc.spent.epsilon == pytest.approx(
        zcdp_to_approx_dp(n * 0.001, 1e-6).epsilon, rel=1e-9)
    assert zcdp_to_approx_dp((n + 1) * 0.001, 1e-6).epsilon > 1.0
    assert n > 3 * math.floor(1.0 / per_fit)


def test_approx_loss_over_the_total_delta_is_refused():
    acc = BudgetAccountant(epsilon=10.0, delta=1e-6)
    with pytest.raises(BudgetExceededError, match="no \\(ε, δ\\) bound"):
        acc.charge(ApproxDP(0.1, 1e-5))
    assert acc.ledger == ()


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon must be > 0"),
    (dict(epsilon=1.0, delta=1.0), "delta"),
    (dict(epsilon=float("inf")), "finite"),
])
def test_invalid_totals(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BudgetAccountant(**kwargs)


def test_charge_rejects_non_losses():
    with pytest.raises(TypeError, match="PureDP, ApproxDP or ZCDP"):
        BudgetAccountant(1.0).charge(0.5)


def test_copies_are_the_same_ledger_and_a_pickled_copy_is_detached():
    acc = BudgetAccountant(1.0)
    assert copy.deepcopy(acc) is acc and copy.copy(acc) is acc
    detached = pickle.loads(pickle.dumps(acc))
    assert detached.detached and detached.ledger == ()
    with pytest.raises(DetachedAccountantError, match="would be lost"):
        detached.charge(PureDP(0.1))


def test_concurrent_charges_never_overspend():
    # 8 threads race to charge 0.1 each against a total of 0.5: exactly 5
    # succeed, and the spend is exactly 0.5
    acc = BudgetAccountant(0.5)
    barrier = threading.Barrier(8)
    outcomes = []

    def work():
        barrier.wait()
        try:
            acc.charge(PureDP(0.1))
            outcomes.append(True)
        except BudgetExceededError:
            outcomes.append(False)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(outcomes) == 5
    assert acc.spent.epsilon == pytest.approx(0.5, abs=1e-12)


def test_to_dp_event(rdp):
    dp_event, RdpAccountant = rdp
    acc = BudgetAccountant(5.0, 1e-6)
    acc.charge(ZCDP(0.05))
    acc.charge(PureDP(0.2))
    event = acc.to_dp_event()
    assert isinstance(event, dp_event.ComposedDpEvent)
    assert event.events == [dp_event.ZCDpEvent(rho=0.05),
                            dp_event.ZCDpEvent(rho=0.0, xi=0.2)]
    theirs = RdpAccountant().compose(event).get_epsilon(1e-6)
    assert acc.spent.epsilon <= theirs * (1 + 1e-9)
    acc.charge(ApproxDP(0.1, 1e-7))
    assert isinstance(acc.to_dp_event().events[-1], dp_event.UnsupportedDpEvent)
    assert np.isfinite(acc.spent.epsilon)


def _charge_in_child(acc, queue):
    try:
        acc.charge(PureDP(0.5), label="in a forked child")
        queue.put("charged")
    except DetachedAccountantError as exc:
        queue.put(f"refused: {exc}")


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(),
    reason="the fork start method is POSIX-only")
def test_a_forked_copy_is_detached():
    # issue 26 review: a child made by fork inherits the accountant without
    # pickling it; its charges were lost to the parent's ledger and its
    # streams repeated the parent's (the same noise in two children)
    import multiprocessing
    acc = BudgetAccountant(epsilon=1.0)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_charge_in_child, args=(acc, queue))
    child.start()
    answer = queue.get(timeout=60)
    child.join(timeout=60)
    assert answer.startswith("refused") and "forked process" in answer
    assert acc.ledger == () and not acc.detached  # the parent's is intact
    acc.charge(PureDP(0.5))
    assert len(acc.ledger) == 1
