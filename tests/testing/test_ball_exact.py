"""Exact 1-D output law of the few-users ball sampler and its privacy.

Spec: shared/specs/emn2021_few_users.md §2.12 (exact 1-D law), §2.2 item 7
(the privacy map and the counterexample to the paper's Prop 15), §7 test 8.
Everything here is exact arithmetic on piecewise-constant densities: there is
no Monte Carlo, hence no tolerance beyond float rounding. The Monte Carlo
check that :func:`ball_sampler` follows this law is in
tests/mean/test_few_users.py.
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from skuserdp.mean._few_users import _max_acceptance, plan_ball_sampler, robust_cap
from skuserdp.privacy import ball_sampler_max_rounds, ball_sampler_privacy
from skuserdp.testing import ball_sampler_law_1d, hockey_stick_divergence

pytestmark = pytest.mark.filterwarnings(
    # When P[G2] underflows to 1 the law's log-density is -inf (density 0).
    "ignore:divide by zero encountered in log1p:RuntimeWarning"
)


def _reference_law(x, plan):
    """Spec §2.12 written out independently (brute-force counts on pieces).

    Returns (p_g1, p_g2, q, density) with density a function of points.
    Everything is scaled by e^{-L}, L = eps_a * beta * n, as in the spec's
    overflow advice (§6.2).
    """
    x = np.sort(np.asarray(x, dtype=float))
    n, R, eps = plan.n_users, plan.ball_radius, plan.epsilon_a
    cap = plan.cap_fraction * n
    L = eps * cap
    b = np.unique(np.concatenate([x - R, x + R]))
    mid, width = (b[:-1] + b[1:]) / 2, np.diff(b)
    f = (np.abs(mid[:, None] - x[None, :]) <= R).sum(axis=1)
    keep = f > 0
    # log(I e^{-L}) with I = (1/2R) sum |J| e^{eps min(f, cap)}
    log_i = logsumexp(np.log(width[keep]) + eps * np.minimum(f[keep], cap) - L) \
        - math.log(2 * R)
    log_g = math.log(4 / plan.delta_a) - L
    # q = c_acc (I + 4/delta) / (e^L + 4/delta)
    q = plan.accept * math.exp(np.logaddexp(log_i, log_g) - np.logaddexp(0, log_g))
    N = plan.n_rounds
    p_g2 = (1 - q) / ((N - 1) * q + 1)
    log_z = float(np.logaddexp(log_i, log_g))
    p_g1 = (1 - p_g2) * math.exp(log_g - log_z)

    def density(t):
        t = np.asarray(t, dtype=float)
        ft = (np.abs(t[..., None] - x) <= R).sum(axis=-1)
        dens = (1 - p_g2) * np.exp(eps * np.minimum(ft, cap) - L - log_z) / (2 * R)
        return np.where(ft > 0, dens, 0.0)

    return p_g1, p_g2, q, density


def _total_mass(law):
    b = law.breakpoints()
    mid, width = (b[:-1] + b[1:]) / 2, np.diff(b)
    return law.p_g1 + law.p_g2 + float(np.sum(width * law.density(mid)))


DATASETS = {
    "identical": np.zeros(20),
    "cluster": np.linspace(-1, 1, 20),
    "two_clusters": np.r_[np.zeros(7), np.full(13, 50.0)],
    "spread": np.arange(20) * 7.0,
    "mixed": np.r_[np.linspace(-1, 1, 12), [2.5, 4.0, 5.5], np.linspace(30, 31, 5)],
}


# ------------------------------------------------------- the law itself
@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("delta_a,n_rounds", [(2e-6, 8.0), (0.02, 5.0),
                                              (1e-3, 1e4)])
def test_law_matches_the_spec_formulas(name, delta_a, n_rounds):
    x = DATASETS[name]
    plan = plan_ball_sampler(x.size, 1, radius=1.0, epsilon=1.0, delta=1e-5)
    plan = dataclasses.replace(plan, delta_a=delta_a, n_rounds=n_rounds)
    law = ball_sampler_law_1d(x, plan)
    p_g1, p_g2, q, density = _reference_law(x, plan)
    assert law.q == pytest.approx(q, rel=1e-10)
    assert law.p_g2 == pytest.approx(p_g2, rel=1e-10)
    assert law.p_g1 == pytest.approx(p_g1, rel=1e-10, abs=1e-300)
    # Density at random points and at the midpoints of the pieces.
    rng = np.random.default_rng(0)
    t = np.r_[rng.uniform(x.min() - 3, x.max() + 3, 500),
              (law.breakpoints()[1:] + law.breakpoints()[:-1]) / 2]
    np.testing.assert_allclose(law.density(t), density(t), rtol=1e-10, atol=0)
    # A probability law: the atoms and the density add up to one.
    assert _total_mass(law) == pytest.approx(1.0, abs=1e-12)
    # Column input and unsorted input give the same law.
    perm = rng.permutation(x.size)
    other = ball_sampler_law_1d(x[perm][:, None], plan)
    assert (other.p_g1, other.p_g2, other.q) == (law.p_g1, law.p_g2, law.q)


def test_law_refuses_mismatched_plans():
    plan = plan_ball_sampler(10, 1, radius=1.0, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError):
        ball_sampler_law_1d(np.zeros(9), plan)
    plan2 = plan_ball_sampler(10, 2, radius=1.0, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError):
        ball_sampler_law_1d(np.zeros((10, 2)), plan2)


def test_hockey_stick_basic_properties():
    plan = plan_ball_sampler(20, 1, radius=1.0, epsilon=1.0, delta=1e-5)
    plan = dataclasses.replace(plan, delta_a=0.02, n_rounds=5.0)
    x = DATASETS["mixed"]
    y = x.copy()
    y[0] = 100.0
    a, b = ball_sampler_law_1d(x, plan), ball_sampler_law_1d(y, plan)
    assert hockey_stick_divergence(a, a, 0.0) == pytest.approx(0.0, abs=1e-15)
    # At eps = 0 it is the total variation distance, computed by brute force
    # on the merged pieces here.
    bp = np.unique(np.r_[a.breakpoints(), b.breakpoints()])
    mid, width = (bp[:-1] + bp[1:]) / 2, np.diff(bp)
    tv = 0.5 * (abs(a.p_g1 - b.p_g1) + abs(a.p_g2 - b.p_g2)
                + np.sum(width * np.abs(a.density(mid) - b.density(mid))))
    assert hockey_stick_divergence(a, b, 0.0) == pytest.approx(tv, rel=1e-10)
    assert hockey_stick_divergence(b, a, 0.0) == pytest.approx(tv, rel=1e-10)
    # Non-increasing in eps; for large eps only the mass of a where b has no
    # density is left (here the edge [-3, -2.82) of the moved point's ball).
    grid = [hockey_stick_divergence(a, b, e) for e in np.linspace(0, 60, 121)]
    assert all(u >= v - 1e-15 for u, v in zip(grid, grid[1:]))
    only_a = np.sum(width * np.where(b.density(mid) == 0, a.density(mid), 0.0))
    assert only_a > 0
    assert grid[-1] == pytest.approx(only_a, rel=1e-9)


# ----------------------------------------------------- neighbouring pairs
def _pairs(n, R):
    """The spec §7 test 8 families of replace-one neighbours (1-D)."""
    far = 1000.0 * R
    out = {}
    x = np.linspace(-0.25, 0.25, n) * R  # a cluster within r = R/2 of 0
    y = x.copy()
    y[0] = far
    out["cluster_out"] = (x, y)
    a = n // 3
    x = np.r_[np.zeros(a), np.full(n - a, 100 * R)]  # n/3 and 2n/3
    y = x.copy()
    y[0] = 100 * R
    out["small_to_large"] = (x, y)
    y = x.copy()
    y[-1] = 0.0
    out["large_to_small"] = (x, y)
    for k in range(-2, 3):  # the large cluster crosses the cap 2n/3
        b = int(round(2 * n / 3)) + k
        if 1 <= b < n:
            x = np.r_[np.zeros(n - b), np.full(b, 100 * R)]
            y = x.copy()
            y[0] = 100 * R
            out[f"move_to_{b}"] = (x, y)
    x = np.arange(n) * 3.0 * R  # all balls disjoint
    y = x.copy()
    y[0] = -far
    out["spread_far"] = (x, y)
    y = x.copy()
    y[0] = x[1]
    out["spread_onto"] = (x, y)
    x = np.zeros(n)
    y = x.copy()
    y[0] = far
    out["identical_far"] = (x, y)
    y = x.copy()
    y[0] = 1.5 * R
    out["identical_near"] = (x, y)
    return out


def _splits(n, R):
    """Every two-cluster split, one point moved from the first to the second."""
    for a in range(1, n):
        x = np.r_[np.zeros(a), np.full(n - a, 100 * R)]
        y = x.copy()
        y[0] = 100 * R
        yield f"split_{a}", (x, y)


def _worst(plan, pairs, epsilon):
    """Largest delta(epsilon) over the pairs, both directions."""
    worst, where = 0.0, None
    for name, (x, y) in pairs:
        a, b = ball_sampler_law_1d(x, plan), ball_sampler_law_1d(y, plan)
        h = max(hockey_stick_divergence(a, b, epsilon),
                hockey_stick_divergence(b, a, epsilon))
        if h > worst:
            worst, where = h, name
    return worst, where


@pytest.mark.parametrize("calibration,robustness", [("tight", 0.25),
                                                    ("paper", 0.25),
                                                    ("tight", 0.4)])
@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-6), (0.5, 1e-5), (1.0, 1e-6),
                                           (2.0, 1e-8), (1.0, 1e-3)])
@pytest.mark.parametrize("n", [3, 10, 30, 60, 150, 400, 2000])
def test_planned_sampler_meets_its_claim_exactly(calibration, robustness, epsilon,
                                                 delta, n):
    plan = plan_ball_sampler(n, 1, radius=1.0, epsilon=epsilon, delta=delta,
                             calibration=calibration, robustness=robustness)
    eps_c, delta_c = plan.loss.epsilon, plan.loss.delta
    assert eps_c <= epsilon and delta_c <= delta
    pairs = list(_pairs(n, plan.ball_radius).items())
    if n <= 150:
        pairs += list(_splits(n, plan.ball_radius))
    worst, where = _worst(plan, pairs, eps_c)
    assert worst <= delta_c, (where, worst, delta_c)


def _edge_plan(n, eps_a, delta_a, kappa=0.25):
    """A plan at the edge of the theorem: P0 holds, N = floor(N_priv) (P1)."""
    beta = robust_cap(kappa)[0]
    accept = beta / 2
    a_max = _max_acceptance(n, eps_a, beta, accept)
    if a_max > 0.5:
        accept *= 0.5 / a_max
    n_rounds = math.floor(math.exp(ball_sampler_max_rounds(
        n, eps_a, delta_a, accept=accept, cap_fraction=beta)))
    base = plan_ball_sampler(n, 1, radius=1.0, epsilon=1.0, delta=1e-6)
    return dataclasses.replace(
        base, cap_fraction=beta, accept=accept, epsilon_a=eps_a, delta_a=delta_a,
        n_rounds=float(n_rounds), loss=ball_sampler_privacy(eps_a, delta_a))


EDGE = [(n, e, d, 0.25) for n in (60, 90, 150, 300) for e in (0.2, 1.0 / 3.0)
        for d in (1e-8, 1e-5)]
EDGE += [(n, 1.0 / 3.0, d, k) for n in (150, 300) for d in (1e-8, 1e-5)
         for k in (0.1, 0.4, 0.49)]


@pytest.mark.parametrize("n,eps_a,delta_a,kappa", EDGE)
def test_edge_plans_meet_the_privacy_map_exactly(n, eps_a, delta_a, kappa):
    # The map (3 eps_a + ..., ~4.25 delta_a) must hold for every plan with
    # P0, P1, eps_a <= 1/3, whatever the cap beta n -- in particular for N
    # as large as P1 allows, where the G2 bit and pi both move (the
    # library's own plans clamp N much lower in 1-D).
    plan = _edge_plan(n, eps_a, delta_a, kappa)
    pairs = list(_pairs(n, plan.ball_radius).items()) + list(
        _splits(n, plan.ball_radius))
    worst, where = _worst(plan, pairs, plan.loss.epsilon)
    assert worst <= plan.loss.delta, (where, worst, plan.loss.delta)


def test_the_loss_is_above_one_and_a_half_eps_a():
    # Spec §2.2 item 7 / erratum [E1]: pi alone is not (eps_a, delta_a)-DP
    # (the normaliser moves too). On a plan satisfying P0/P1 the two-cluster
    # split 74/76 at n = 150 has delta(eps_a) ~ 1e3 x the claimed delta and
    # still delta(1.5 eps_a) > claimed delta, but nothing at 2.5 eps_a < 3 eps_a.
    n, eps_a, delta_a = 150, 1.0 / 3.0, 1e-5
    plan = _edge_plan(n, eps_a, delta_a)
    pairs = list(_splits(n, plan.ball_radius))
    claim = plan.loss.delta
    assert _worst(plan, pairs, eps_a)[0] > 100 * claim
    assert _worst(plan, pairs, 1.5 * eps_a)[0] > claim
    assert _worst(plan, pairs, 2.5 * eps_a)[0] <= claim


@pytest.mark.parametrize("n,eps_a,delta_a", [(150, 1.0 / 3.0, 1e-8),
                                             (300, 0.2, 1e-5)])
def test_exact_check_sees_a_factor_two_in_eps_a(n, eps_a, delta_a):
    # The check above is not vacuous: the same sampler run with twice the
    # calibrated eps_a, but claiming the original loss, is caught.
    plan = _edge_plan(n, eps_a, delta_a)
    broken = dataclasses.replace(plan, epsilon_a=2 * eps_a)
    pairs = list(_splits(n, plan.ball_radius))
    worst, _ = _worst(broken, pairs, plan.loss.epsilon)
    assert worst > 10 * plan.loss.delta


# ---------------------------------------------------- Prop 15 (spec [E1])
def _counterexample():
    plan = plan_ball_sampler(57, 1, radius=1.0, epsilon=1.0, delta=1e-5)
    plan = dataclasses.replace(plan, epsilon_a=0.5, delta_a=1e-6, n_rounds=1000.0,
                               accept=1.0 / 3.0, cap_fraction=2.0 / 3.0)
    assert plan.ball_radius == 2.0
    x = np.r_[np.zeros(20), np.full(37, 100.0)]
    y = np.r_[np.zeros(19), np.full(38, 100.0)]  # one point small -> large
    return plan, ball_sampler_law_1d(x, plan), ball_sampler_law_1d(y, plan)


def test_prop15_counterexample_of_the_spec():
    # Clusters of 20 and 37 points, R = 2, 100 apart; internal eps = 0.5,
    # delta = 1e-6, N = 1000. The spec quotes two significant digits.
    plan, a, b = _counterexample()
    eps = plan.epsilon_a
    assert hockey_stick_divergence(a, b, eps) == pytest.approx(6.5e-4, rel=0.01)
    assert hockey_stick_divergence(a, b, eps) > 600 * plan.delta_a
    assert hockey_stick_divergence(a, b, 1.9 * eps) == pytest.approx(6.5e-6,
                                                                     rel=0.01)
    assert hockey_stick_divergence(a, b, 2 * eps) == 0.0
    assert hockey_stick_divergence(b, a, eps) == 0.0
    # pi alone (conditioned on "not G2"): the small cluster's probability
    # drops by 2.68 ~ e^{2 eps}, not e^{eps}. Its ball [-2, 2] is one piece
    # of constant density.

    def pi_small(law):
        return 4.0 * float(law.density(0.0)) / (1 - law.p_g2)

    ratio = pi_small(a) / pi_small(b)
    assert ratio == pytest.approx(2.68, abs=0.01)
    assert ratio > math.exp(1.9 * eps)
