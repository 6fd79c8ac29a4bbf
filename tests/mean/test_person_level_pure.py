"""Pure ε-DP person-level mean in d ≤ 2 (AKMMSU 2024, §5, Algorithms 5–8).

Spec: shared/specs/akmmsu2024_person_level.md §2.8 and §7 item 10. Module:
skuserdp/mean/_person_level_pure.py. Covered here:

1. the exact score (Definition 5.5) against brute force on tiny instances;
2. sensitivity ≤ 1 of every candidate's score under adversarial neighbours;
3. the exact privacy map of the exponential mechanism on neighbours;
4. empirical audits of the estimator (``method="pure"``), d = 1 and d = 2;
5. accuracy against the public ``info["alpha"]`` and validity of
   ``person_level_error_bound_1d``;
6. public plans, the ``max_comparisons`` guard and the estimator's errors;
7. ``clip_bias_bound`` against Monte Carlo.

Every function of the module is called through the module object (``pure.``)
so that a mutation of the module (monkeypatching one of its functions) is
seen by these tests. Statistical checks have fixed seeds and a level of 1e-3
(binomial tails) or below (Monte Carlo means: one-sided normal bound at 4
standard errors), stated next to each.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import skuserdp.mean._person_level as pure
import skuserdp.mechanisms._exponential as expo
from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import ThreadedClipNoiseEstimator
from skuserdp.mean._person_level import person_level_mean_1d
from skuserdp.privacy import PureDP
from skuserdp.testing import (
    audit_estimator,
    epsilon_lower_bound,
    worst_case_mean_neighbours,
)

L = pure.LEVELS
LEVEL = 1e-3
# Student-t(5): E T^2 = 5/3, E T^4 = 3 nu^2/((nu - 2)(nu - 4)) = 25. For
# independent coordinates the directional 4th moment is
# max(E T^4, 3 (E T^2)^2) = 25 in every dimension, so M = 25^(1/4) with k = 4
# (benchmarks/bench_heavy_tails.py).
T5_M = 25 ** 0.25
T5_VAR = 5.0 / 3.0


def _binom_max_failures(n_runs, p, level=LEVEL):
    """Largest failure count c with P[Bin(n_runs, p) > c] ≤ level."""
    return int(stats.binom.isf(level, n_runs, p))


# ---------------------------------------------------------------- brute force


def _threshold(group, rho, dist):
    """Alg. 5 on the lattice: a group sum ≥ this ⇔ its mean ≥ the midpoint."""
    return math.ceil(group * (rho + dist / 2.0) / (2.0 * rho) * L)


def _hand_plan(n, kappa, rho, candidates, offsets, cap=None):
    """A tiny plan in the format of ``pure_fine_plan`` (public fields only)."""
    candidates = np.asarray(candidates, dtype=float)
    offsets = np.asarray(offsets, dtype=float)
    group = n // kappa
    thresholds = np.array([_threshold(group, rho, float(np.linalg.norm(o)))
                           for o in offsets], dtype=np.int64)
    return dict(n_groups=kappa, group_size=group, rho=rho, candidates=candidates,
                offsets=offsets, thresholds=thresholds,
                cap=group * kappa if cap is None else cap)


def _loses(U, p, q, rho, kappa):
    return not pure.binary_mean_comparison(U, p, q, rho=rho, n_groups=kappa)


def _replacement_values(p, q, rho, rng):
    """Values a changed user may take: the greedy's choice (far along +v) and
    others (window edges, midpoint, q, p, the far side, random points and, in
    2-D, points off the line), so that the brute force does not rely on the
    claim that "far along +v" is optimal."""
    v = (q - p) / np.linalg.norm(q - p)
    vals = [p + 1e6 * v, p + rho * v, q, (p + q) / 2.0, p, p - rho * v,
            p + 0.5 * rho * v, p - 1e6 * v]
    if p.size == 2:
        w = np.array([-v[1], v[0]])
        vals += [p + rho * v + 7.0 * w, (p + q) / 2.0 - 3.0 * w]
    vals += list(p + rng.uniform(-2.0 * rho, 2.0 * rho, size=(3, p.size)))
    return vals


def _brute_cost(U, p, q, rho, kappa, rng):
    """Least number of users whose mean must be replaced so that p loses.

    Subsets by increasing size; a subset of size k ≤ 2 tries every tuple of
    replacement values, larger subsets every constant assignment and four
    random mixed ones. inf if no subset (up to all users) works.
    """
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if _loses(U, p, q, rho, kappa):
        return 0
    vals = _replacement_values(p, q, rho, rng)
    n = U.shape[0]
    for k in range(1, n + 1):
        for subset in itertools.combinations(range(n), k):
            if k <= 2:
                assignments = itertools.product(vals, repeat=k)
            else:
                picks = rng.integers(len(vals), size=(4, k))
                assignments = ([[v] * k for v in vals]
                               + [[vals[j] for j in row] for row in picks])
            for values in assignments:
                V = U.copy()
                V[list(subset)] = np.array(values)
                if _loses(V, p, q, rho, kappa):
                    return k
    return math.inf


def _brute_costs(U, plan, rng):
    """Brute-force cost of every (candidate, offset) pair, shape (|J|, |J_p|)."""
    return np.array([[_brute_cost(U, p, p + o, plan["rho"], plan["n_groups"], rng)
                      for o in plan["offsets"]] for p in plan["candidates"]])


def _check_scores_against_brute_force(U, plan, rng):
    """Per comparison (a plan with one offset gives min(cap, cost)) and for the
    whole plan (Definition 5.5: min(cap, min over offsets))."""
    brute = _brute_costs(U, plan, rng)
    capped = np.minimum(brute, plan["cap"])
    for j in range(len(plan["offsets"])):
        one = dict(plan, offsets=plan["offsets"][j:j + 1],
                   thresholds=plan["thresholds"][j:j + 1])
        got = pure.candidate_scores(U, one)
        assert np.array_equal(got, capped[:, j]), (j, got, capped[:, j])
    got = pure.candidate_scores(U, plan)
    assert np.array_equal(got, capped.min(axis=1)), (got, capped)
    # Non-degenerate instance: the last offset is infeasible (inf), and the
    # finite costs take at least three values.
    assert np.isinf(brute[:, -1]).all()
    assert len(set(brute[:, :-1].ravel())) >= 3, brute


# Tiny instances. Candidates and offsets are dyadic, so q = p + o and q − p = o
# exactly and binary_mean_comparison sees the same direction and threshold as
# candidate_scores. rho = 1.5 is not dyadic: no lattice rounding ties. The
# offsets of length 2.875 (1-D) and 2.5 (2-D) put the midpoint near the top of
# the window (costs near the group size); length 3.5 > 2ρ makes a comparison
# infeasible (its midpoint is outside the window: cost inf); cap=2 exercises
# the capped count.
TINY_1D = [
    # n, kappa, cap
    (5, 1, None), (7, 1, None), (8, 1, 2), (5, 3, None), (7, 3, None), (8, 3, 2),
]


@pytest.mark.parametrize("n,kappa,cap", TINY_1D)
def test_scores_equal_brute_force_1d(n, kappa, cap):
    rng = np.random.default_rng(100 + 10 * n + kappa)
    rho = 1.5
    U = rng.uniform(-1.0, 1.0, size=(n, 1))
    plan = _hand_plan(n, kappa, rho, candidates=[[-0.5], [0.0], [0.25]],
                      offsets=[[0.5], [-0.75], [1.0], [2.875], [3.5]],
                      cap=cap)
    _check_scores_against_brute_force(U, plan, rng)


@pytest.mark.parametrize("n,kappa", [(6, 1), (7, 3)])
def test_scores_equal_brute_force_2d(n, kappa):
    rng = np.random.default_rng(200 + n)
    rho = 1.5
    U = rng.uniform(-0.75, 0.75, size=(n, 2))
    plan = _hand_plan(n, kappa, rho, candidates=[[0.0, 0.0], [0.25, -0.5]],
                      offsets=[[0.5, 0.25], [-0.75, 0.5], [0.25, -1.0],
                               [2.0, 1.5], [2.5, 2.5]])
    _check_scores_against_brute_force(U, plan, rng)


def _lattice_brute_cost(z, threshold):
    """Least number of lattice values (any groups) to change so that at least
    (κ + 1)/2 group sums reach the threshold: every subset of users, each
    changed user set to one of several lattice values (the top L, which
    the greedy claims is optimal, and others)."""
    kappa, group = z.shape
    flat = z.ravel()
    values = (L, L - 1, L // 2, 0)
    need = (kappa + 1) // 2
    for k in range(flat.size + 1):
        for subset in itertools.combinations(range(flat.size), k):
            for new in itertools.product(values, repeat=k) if k <= 2 else [
                    (v,) * k for v in values]:
                w = flat.copy()
                w[list(subset)] = new
                if (w.reshape(kappa, group).sum(axis=1) >= threshold).sum() >= need:
                    return k
    return math.inf


@pytest.mark.parametrize("kappa,group", [(1, 7), (3, 2), (3, 3), (5, 1)])
def test_comparison_cost_equals_lattice_brute_force(kappa, group):
    # comparison_cost on sorted lattice values, several comparisons at once,
    # thresholds anywhere in the reachable range [0, g·L] (including 0 and
    # g·L), with and without a cap: cost(cap=c) = min(c, exact cost).
    rng = np.random.default_rng(300 + 10 * kappa + group)
    n_cmp = 12
    z = rng.integers(0, L + 1, size=(kappa, group, n_cmp))
    z[..., 0] = L                      # everything at the top already
    z[..., 1] = 0                      # everything at the bottom
    thresholds = rng.integers(0, group * L + 1, size=n_cmp)
    thresholds[:2] = group * L
    thresholds[2] = 0
    z_sorted = np.sort(z, axis=1)
    want = np.array([_lattice_brute_cost(z[..., j], thresholds[j])
                     for j in range(n_cmp)])
    assert np.array_equal(pure.comparison_cost(z_sorted, thresholds), want)
    for cap in range(0, kappa * group + 2):
        got = pure.comparison_cost(z_sorted, thresholds, cap=cap)
        assert np.array_equal(got, np.minimum(want, cap)), (cap, got, want)
    assert want[1] == group * (kappa + 1) // 2 and want[0] == want[2] == 0


def test_capped_cost_of_an_infeasible_comparison_is_the_cap():
    # Docstring: with cap the result "is the same as capping the exact cost";
    # Definition 5.5: Score = cap when no change makes p lose. (Regression:
    # this returned ((κ+1)/2)(g+1) = 8 < 9.)
    z = np.zeros((3, 3, 1), dtype=np.int64)
    t = np.array([3 * L + 1])                 # above g·L: unreachable
    assert pure.comparison_cost(z, t)[0] == math.inf
    assert pure.comparison_cost(z, t, cap=9)[0] == 9


@pytest.mark.parametrize("d,kappa", [(1, 1), (1, 3), (1, 5), (2, 1), (2, 3)])
def test_binary_mean_comparison_is_algorithm_5(d, kappa):
    # Algorithm 5 in floating point: project on v = (q − p)/‖q − p‖, truncate
    # to [p0 − ρ, p0 + ρ], κ groups by index (extra users ignored); p loses
    # iff at least (κ + 1)/2 group means reach the midpoint. The lattice can
    # only disagree within a rounding step (ρ·2^-20) of the midpoint: such
    # near-ties (none expected) are skipped.
    rng = np.random.default_rng(400 + 10 * d + kappa)
    checked = {True: 0, False: 0}
    for _ in range(200):
        n = int(rng.integers(kappa, 4 * kappa + 3))
        rho = float(rng.uniform(0.3, 2.0))
        U = rng.normal(0.0, 1.0, size=(n, d))
        p, q = rng.uniform(-1.0, 1.0, size=(2, d))
        v = (q - p) / np.linalg.norm(q - p)
        p0, mid = p @ v, (p @ v + q @ v) / 2.0
        g = n // kappa
        z = np.clip(U[:kappa * g] @ v, p0 - rho, p0 + rho).reshape(kappa, g)
        gap = z.mean(axis=1) - mid
        if np.abs(gap).min() < 1e-5 * rho:
            continue
        p_wins = (gap >= 0).sum() < (kappa + 1) // 2
        assert pure.binary_mean_comparison(U, p, q, rho=rho, n_groups=kappa) == p_wins
        checked[bool(p_wins)] += 1
    assert min(checked.values()) >= 30, checked


# ------------------------------------------------------------ sensitivity ≤ 1


def _adversarial_neighbours(U, plan, rng):
    """(user index, new mean) pairs: one user's mean replaced adversarially.

    Huge values either way, the opposite sign (×−1000), exactly on the two
    window edges p0 ± ρ and on the midpoint of random comparisons (p, p + o),
    on q itself and at a random point; users at both ends of the used range,
    a random one and an ignored one (beyond κ⌊n/κ⌋) when there is one.
    """
    n, d = U.shape
    used = plan["n_groups"] * plan["group_size"]
    users = [0, used - 1, int(rng.integers(used))] + ([n - 1] if n > used else [])
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    out = []
    for i in users:
        out += [(i, 1e12 * u), (i, -1e12 * u), (i, -1e3 * U[i])]
    for _ in range(2):
        p = plan["candidates"][rng.integers(len(plan["candidates"]))]
        o = plan["offsets"][rng.integers(len(plan["offsets"]))]
        v = o / np.linalg.norm(o)
        i = int(rng.integers(used))
        out += [(i, p + plan["rho"] * v), (i, p - plan["rho"] * v),
                (i, p + o / 2.0), (i, p + o),
                (i, rng.uniform(-2.0, 2.0, size=d) * plan["rho"])]
    return out


def _datasets(rng, n, d, centre):
    """Spread data, every user at one point (ties), and two clusters."""
    spread = centre + rng.normal(0.0, 0.3, size=(n, d))
    tied = np.tile(centre, (n, 1))
    two = centre + np.where(rng.uniform(size=(n, 1)) < 0.5, 0.3, -0.3)
    return [spread, tied, two]


SENSITIVITY_CASES = [
    # d, calibration, n: κ = 1 (tight) or 25 groups of 6 (paper, d = 1) or
    # 49 groups of 2 (paper, d = 2; 2 users ignored).
    (1, "tight", 150), (1, "paper", 151), (2, "tight", 60), (2, "paper", 100),
]


def _sensitivity_plan(n, d, calibration, centre):
    """The real plan; in 2-D only the 24 candidates nearest the data centre
    (every offset kept), to bound the run time: sensitivity is per
    candidate, and these are the ones with non-zero scores."""
    plan = pure.pure_fine_plan(n, d, alpha=0.5, epsilon=1.0, moment_bound=1.0,
                               samples_per_user=10, calibration=calibration)
    if d == 2:
        near = np.argsort(np.linalg.norm(plan["candidates"] - centre, axis=1))
        plan["candidates"] = plan["candidates"][np.sort(near[:24])]
    return plan


@pytest.mark.parametrize("d,calibration,n", SENSITIVITY_CASES)
def test_score_sensitivity_is_one(d, calibration, n):
    # Lemma 5.6: changing one user moves every Score(p) by at most 1.
    rng = np.random.default_rng(500 + 10 * d + n)
    moved = []
    for _ in range(4 if d == 1 else 1):
        centre = rng.uniform(-0.4, 0.4, size=d)
        plan = _sensitivity_plan(n, d, calibration, centre)
        for U in _datasets(rng, n, d, centre):
            S = pure.candidate_scores(U, plan)
            assert 0 <= S.min() and S.max() <= plan["cap"]
            for i, value in _adversarial_neighbours(U, plan, rng):
                V = U.copy()
                V[i] = value
                change = np.abs(pure.candidate_scores(V, plan) - S)
                assert change.max() <= 1, (i, value, change.max())
                moved.append(change.max())
    # Not vacuous: many neighbours do move some score by exactly 1.
    assert sum(c == 1 for c in moved) >= len(moved) // 4, moved


# ------------------------------------------- exact privacy map of Algorithm 7


@pytest.fixture
def captured_logits(monkeypatch):
    """Record (log-weights, chosen index) of every call of the Gumbel-max
    sampler: the exact output law of Algorithm 7 is the softmax of the
    log-weights it hands over."""
    seen = []
    original = expo.gumbel_max

    def recording(log_weights, rng):
        index = original(log_weights, rng)
        seen.append((np.array(log_weights, dtype=float), int(index)))
        return index

    monkeypatch.setattr(expo, "gumbel_max", recording)
    return seen


def _fine_law(U, seen, **kw):
    """Exact log-probabilities of fine_estimate's output on U."""
    seen.clear()
    pure.fine_estimate(U, random_state=0, **kw)
    ((logw, _),) = seen
    return logw - np.logaddexp.reduce(logw)


def _worst_pairs(rng, n, d, plan):
    """Neighbouring pairs: the data sets of the sensitivity test (spread, tied,
    two clusters) with every third of its adversarial replacements, which
    includes each chosen user moved 1e12 away (on the tied data set: the
    textbook worst case)."""
    centre = np.full(d, 0.1)
    for U in _datasets(rng, n, d, centre):
        for i, value in _adversarial_neighbours(U, plan, rng)[::3]:
            V = U.copy()
            V[i] = value
            yield U, V


@pytest.mark.parametrize("d,calibration,n", [(1, "tight", 150), (1, "paper", 151),
                                             (2, "tight", 60)])
def test_exponential_mechanism_log_ratio_is_at_most_epsilon(captured_logits, d,
                                                            calibration, n):
    # Exact (no sampling): P(p | X) ∝ exp(ε·Score_X(p)/2) with sensitivity 1
    # gives |log P(p | X) − log P(p | X′)| ≤ ε/2 + ε/2 = ε for every p. The
    # tolerance 1e-9 covers float64 rounding of the softmax only.
    eps = 0.8
    rng = np.random.default_rng(600 + 10 * d + n)
    kw = dict(alpha=0.5, epsilon=eps, moment_bound=1.0, samples_per_user=10,
              calibration=calibration)
    plan = pure.pure_fine_plan(n, d, **{k: v for k, v in kw.items()})
    worst = 0.0
    for U, V in _worst_pairs(rng, n, d, plan):
        ratio = np.abs(_fine_law(U, captured_logits, **kw)
                       - _fine_law(V, captured_logits, **kw)).max()
        assert ratio <= eps + 1e-9
        worst = max(worst, ratio)
    # Not vacuous: the pairs reach at least half of the bound (one score
    # moved by 1 moves its log-probability by about ε/2).
    assert worst >= eps / 2, worst


@pytest.mark.parametrize("d", [1, 2])
def test_algorithm_8_is_coarse_plus_fine_estimation_of_recentred_users(
        captured_logits, d):
    # Algorithm 8: μ̂ = μ_coarse + FineEst(fine users − μ_coarse), FineEst the
    # exponential mechanism with weights exp(ε·Score/2). Identical users, so
    # the (data-independent) split does not matter: every fine user is u.
    n, eps, alpha = 400, 0.9, 0.6
    u = np.array([0.3, -0.2][:d])
    kw = dict(moment_bound=1.0, samples_per_user=10)
    with pytest.warns(AccuracyWarning, match="fine users are too few"):
        mean, loss, info = pure.person_level_mean_pure(
            np.tile(u, (n, 1)), epsilon=eps, bound=5.0, alpha=alpha,
            random_state=4, **kw)
    ((logw, index),) = captured_logits
    plan = pure.pure_fine_plan(n // 2, d, alpha=alpha, epsilon=eps, **kw)
    scores = pure.candidate_scores(np.tile(u - info["coarse"], (n // 2, 1)), plan)
    assert np.allclose(logw, eps / 2 * scores, rtol=1e-12, atol=0)
    assert np.array_equal(mean, info["coarse"] + plan["candidates"][index])
    assert loss == PureDP(eps) and info["n_fine"] == n // 2
    assert 0 < scores.max()  # not a flat law


# -------------------------------------------------------------- empirical audits


@pytest.mark.parametrize("d,n,runs", [
    # 1-D: 40 users exactly between the two middle candidates (±1/18 for
    # α = 0.5), so they tie; its exact law gives a best threshold event with
    # log-ratio ≈ 0.26 < ε = 1.
    (1, 40, 2000),
    # 2-D: 20 users at the origin, which the four middle candidates
    # (±α/13, ±α/13) tie around; ~45 s.
    pytest.param(2, 20, 1000, marks=pytest.mark.slow),
])
def test_audit_of_fine_estimation_finds_no_violation(d, n, runs):
    # Algorithm 7 alone on a pair built to be sensitive: the tied users vs
    # one of them moved far along e1; statistic: the first coordinate of the
    # chosen candidate, `runs` runs per dataset.
    U = np.zeros((n, d))
    V = U.copy()
    V[0, 0] = 1e6
    kw = dict(alpha=0.5, epsilon=1.0, moment_bound=1.0, samples_per_user=10)
    a = [pure.fine_estimate(U, random_state=s, **kw)[0][0] for s in range(runs)]
    b = [pure.fine_estimate(V, random_state=runs + s, **kw)[0][0]
         for s in range(runs)]
    res = epsilon_lower_bound(np.array(a), np.array(b), epsilon_claimed=1.0)
    assert not res.violation, str(res)


def _pure_estimator(m, bound, **kw):
    return ThreadedClipNoiseEstimator(epsilon=1.0, delta=0.0, moment_order=2,
                                      moment_bound=1.0, samples_per_user=m,
                                      bounds=(-bound, bound), method="pure", **kw)


def test_estimator_audit_1d():
    # Worst case for clipped means: every user at −3, one at +3 (m = 4 rows
    # each), |μ| ≤ R = 4; the default statistic (the mean along e1).
    X, g, Xp, gp = worst_case_mean_neighbours(200, 1, radius=3.0, rows_per_user=4)
    res = audit_estimator(_pure_estimator(4, 4.0), X, Xp, groups=g, groups_prime=gp,
                          n_runs=1000, random_state=0)
    assert res.epsilon_claimed == 1.0
    assert not res.violation, str(res)


@pytest.mark.slow
def test_estimator_audit_2d():
    # As in 1-D with d = 2 (the moved user goes along e1), with 8 users: each
    # coarse user then moves the coarse mean by a quarter of 2·radius, more
    # than the fine grid's step, which is what a leak in the coarse step
    # would show. 196 candidates × ~600 comparisons per fit; ~25 s for
    # 2 × 1000 fits.
    X, g, Xp, gp = worst_case_mean_neighbours(8, 2, radius=3.0, rows_per_user=4)
    res = audit_estimator(_pure_estimator(4, 4.0), X, Xp, groups=g, groups_prime=gp,
                          n_runs=1000, random_state=0)
    assert not res.violation, str(res)


# ------------------------------------------------------------------- accuracy


def _t5_user_means(rng, n, m, d, mu):
    return mu + rng.standard_t(5, size=(n, m, d)).mean(axis=1)


@pytest.mark.parametrize("d,n,m,runs,calibration", [
    (1, 4000, 10, 100, "tight"),
    # Paper constants (κ = 2⌈1.6 ln(2|J||J_p|/β)⌉ + 1 groups, each needing
    # its own concentration) certify a finite alpha only from ~20000 users.
    (1, 20000, 10, 40, "paper"),
    # 2-D: ~1 s per run (196 candidates × ~600 comparisons over 500 users).
    (2, 1000, 20, 5, "tight"),
])
def test_pure_mean_is_within_alpha(d, n, m, runs, calibration):
    # The public alpha ("auto") is certified at β = 0.1 (coarse β/2 over the
    # d coordinates, fine β/4 + β/4): failures ~ Bin(runs, ≤ 0.1); reject at
    # level 1e-3. Student-t(5) rows, k = 4, M = 25^(1/4) (module header).
    rng = np.random.default_rng(700 + 10 * d + n)
    mu = np.full(d, 0.7)
    failures = 0
    for s in range(runs):
        U = _t5_user_means(rng, n, m, d, mu)
        with warnings.catch_warnings():
            warnings.simplefilter("error", AccuracyWarning)  # feasible plan
            mean, loss, info = pure.person_level_mean_pure(
                U, epsilon=1.0, bound=5.0, moment_bound=T5_M, samples_per_user=m,
                moment_order=4, calibration=calibration, random_state=s)
        assert info["feasible"] and loss == PureDP(1.0)
        failures += np.linalg.norm(mean - mu) > info["alpha"]
    assert failures <= _binom_max_failures(runs, 0.1), failures


@pytest.mark.parametrize("law,k,M,n,m", [
    # Gaussian: E Z^4 = 3 (k = 4, M = 3^(1/4)); t5 with k = 2, M² = 5/3.
    ("gauss", 4, 3 ** 0.25, 4000, 4),
    ("t5", 2, T5_VAR ** 0.5, 2000, 10),
])
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_error_bound_1d_holds(law, k, M, n, m, calibration):
    # person_level_error_bound_1d(β) is a bound exceeded w.p. ≤ β for every
    # law with the moment bound: over 300 runs of person_level_mean_1d
    # (delta=0, same public inputs) the exceedances are ~ Bin(300, ≤ β);
    # reject at level 1e-3.
    beta, runs = 0.1, 300
    rng = np.random.default_rng(800 + n + k)
    kw = dict(bound=10.0, moment_bound=M, samples_per_user=m, moment_order=k,
              calibration=calibration)
    bound = pure.person_level_error_bound_1d(n, 1.0, beta=beta, **kw)
    assert 0 < bound < math.inf
    exceed = 0
    for s in range(runs):
        X = rng.standard_t(5, size=(n, m)) if law == "t5" else rng.normal(size=(n, m))
        est, loss, _ = person_level_mean_1d(1.5 + X.mean(axis=1), epsilon=1.0,
                                            delta=0.0, random_state=s, **kw)
        exceed += abs(est - 1.5) > bound
    assert exceed <= _binom_max_failures(runs, beta), exceed


def test_error_bound_1d_is_infinite_when_the_coarse_step_may_fail():
    # 40 users at ε = 0.1: the exponential mechanism over l bins fails w.p.
    # up to l·exp(−3εn_c/16) > β/2, so no finite bound is claimed.
    assert pure.person_level_error_bound_1d(
        40, 0.1, bound=10.0, moment_bound=1.0, samples_per_user=4) == math.inf
    # and the bound shrinks with n.
    e = [pure.person_level_error_bound_1d(n, 1.0, bound=10.0, moment_bound=1.0,
                                          samples_per_user=4)
         for n in (2000, 8000, 32000)]
    assert e[0] > e[1] > e[2]


# ---------------------------------------------------------- clip_bias_bound


@pytest.mark.parametrize("m", [4, 10])
@pytest.mark.parametrize("k,M", [(2, T5_VAR ** 0.5), (4, T5_M)])
def test_clip_bias_bound_bounds_monte_carlo(m, k, M):
    # E(|Ȳ − μ| − a)₊ for the mean Ȳ of m Student-t(5) samples (μ = 0), by
    # Monte Carlo over 4·10^5 user means, at radii a = (0.5, 1, 2, 3)·σ/√m.
    # The summand has a finite variance (t5 has 4 moments), so the MC mean
    # is normal to first order: require bound ≥ MC − 4·SE (one-sided 3e-5
    # per check, 16 checks). With k = 2 and M² = Var = 5/3 the bound is
    # within 1.3–1.6× of the truth at 0.5σ and σ.
    rng = np.random.default_rng(900 + 10 * m + k)
    Y = np.abs(rng.standard_t(5, size=(400_000, m)).mean(axis=1))
    sigma = math.sqrt(T5_VAR / m)
    for c in (0.5, 1.0, 2.0, 3.0):
        x = np.maximum(Y - c * sigma, 0.0)
        mc, se = x.mean(), x.std() / math.sqrt(x.size)
        bound = pure.clip_bias_bound(c * sigma, moment_bound=M, samples_per_user=m,
                                     moment_order=k)
        assert bound >= mc - 4.0 * se, (c, bound, mc, se)


def test_clip_bias_bound_formula():
    # min(M²/(4ma), (27/256)·M⁴(3m − 2)/(m³a³)) for k ≥ 4; the first only
    # for k < 4.
    assert pure.clip_bias_bound(2.0, moment_bound=3.0, samples_per_user=5,
                                moment_order=3.5) == pytest.approx(9 / 40)
    small = 27 / 256 * 81 * 13 / 125 / 8
    assert pure.clip_bias_bound(2.0, moment_bound=3.0, samples_per_user=5,
                                moment_order=4) == pytest.approx(min(9 / 40, small))
    assert pure.clip_bias_bound(0.1, moment_bound=3.0, samples_per_user=5,
                                moment_order=4) == pytest.approx(9 / 2)


# ------------------------------------------------------------ plans and guards


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_fine_plan_grids_and_thresholds(d, calibration):
    n, alpha, eps, beta, M, m, k = 5000, 0.2, 1.0, 0.1, 1.3, 10, 4.0
    plan = pure.pure_fine_plan(n, d, alpha=alpha, epsilon=eps, moment_bound=M,
                               samples_per_user=m, moment_order=k, beta=beta,
                               calibration=calibration)
    a_c = 8 * alpha / 9
    assert plan["alpha"] == alpha and plan["alpha_c"] == pytest.approx(a_c)
    # J: (⌈9√d⌉ + 1)^d points, every axis equally spaced on [−α, α] with step
    # ≤ 2α/(9√d) (so some candidate is within α/9 = α′/8 of any μ in the box).
    J = plan["candidates"]
    n_p = math.ceil(9 * math.sqrt(d)) + 1
    assert J.shape == (n_p ** d, d)
    for j in range(d):
        axis = np.unique(J[:, j])
        assert axis.size == n_p and axis[0] == -alpha and axis[-1] == alpha
        assert np.diff(axis).max() <= 2 * alpha / (9 * math.sqrt(d)) * (1 + 1e-12)
    # J_p − p: the grid of half-width 2α′ (paper) or 9α′/4 (tight) with step
    # ≤ α′/(4√d), without the closed ball of radius α′.
    O = plan["offsets"]
    half = (2.0 if calibration == "paper" else 2.25) * a_c
    axis = np.unique(O[:, 0])
    step = np.diff(axis).min()
    assert axis[-1] == pytest.approx(half) and axis[0] == pytest.approx(-half)
    assert step <= a_c / (4 * math.sqrt(d)) * (1 + 1e-12)
    full = np.linspace(-half, half, round(2 * half / step) + 1)
    assert np.allclose(np.diff(full), step)
    grid = np.stack(np.meshgrid(*[full] * d, indexing="ij"), -1).reshape(-1, d)
    outside = grid[np.linalg.norm(grid, axis=1) > a_c * (1 + 1e-6)]
    assert O.shape == outside.shape and np.allclose(np.sort(O, axis=0),
                                                    np.sort(outside, axis=0))
    assert (np.linalg.norm(O, axis=1) > a_c).all()
    # κ, ρ, cap (spec §2.8 OUR CHOICE; tight: one group).
    spread = M * math.sqrt((k - 1) * math.log(m) / m)
    kappa, g, rho = plan["n_groups"], plan["group_size"], plan["rho"]
    if calibration == "paper":
        want = 2 * math.ceil(1.6 * math.log(2 * len(J) * len(O) / beta)) + 1
        assert kappa == want
        assert rho == pytest.approx(max(2 * spread, 2 * M / m * (
            16 * M / ((k - 1) * a_c)) ** (1 / (k - 1)), 4 * a_c))
    else:
        assert kappa == 1 and rho == pytest.approx(spread + 2 * a_c)
    assert kappa % 2 == 1 and g == n // kappa and plan["cap"] == kappa * g
    # Integer thresholds: a group sum reaches it iff the group mean of the
    # lattice values reaches the midpoint (inside the window: ‖o‖/2 < ρ).
    t = plan["thresholds"]
    assert t.dtype.kind == "i" and t.shape == (len(O),)
    dist = np.linalg.norm(O, axis=1)
    assert np.array_equal(t, [_threshold(g, rho, x) for x in dist])
    assert (t > g * L // 2).all() and (t <= g * L).all()
    assert plan["comparisons"] == len(J) * len(O)
    assert plan["needed_score"] == pytest.approx(
        2 / eps * (math.log(len(J)) + math.log(4 / beta)))
    assert plan["feasible"] == (plan["good_score"] >= plan["needed_score"])
    if d == 3:
        assert plan["comparisons"] > 10 ** 6


def test_fine_plan_feasibility_grows_with_n():
    kw = dict(alpha=0.3, epsilon=1.0, moment_bound=1.0, samples_per_user=10)
    good = [pure.pure_fine_plan(n, 1, **kw)["good_score"] for n in (100, 1000, 10000)]
    assert good[0] <= good[1] <= good[2] and good[2] > good[0]
    assert not pure.pure_fine_plan(100, 1, **kw)["feasible"]
    assert pure.pure_fine_plan(10000, 1, **kw)["feasible"]


def test_max_comparisons_guard_fires_before_touching_the_data(monkeypatch):
    # d = 3 needs ~10^8 comparisons: ValueError naming max_comparisons, raised
    # before any data-dependent step (the coarse step and the scores are
    # replaced by functions that fail if called).
    def forbidden(*args, **kwargs):
        raise AssertionError("data touched before the guard")

    monkeypatch.setattr(pure, "person_level_mean_per_feature", forbidden)
    monkeypatch.setattr(pure, "candidate_scores", forbidden)
    U = np.zeros((400, 3))
    kw = dict(epsilon=1.0, bound=5.0, moment_bound=1.0, samples_per_user=10)
    with pytest.raises(ValueError, match="max_comparisons"):
        pure.person_level_mean_pure(U, alpha=0.5, **kw)
    with pytest.raises(ValueError, match="max_comparisons"):
        pure.fine_estimate(U, alpha=0.5, epsilon=1.0, moment_bound=1.0,
                           samples_per_user=10)
    # d = 2 (~1.2·10^5) passes the default but not a lower limit.
    with pytest.raises(ValueError, match="max_comparisons=1,000"):
        pure.person_level_mean_pure(np.zeros((400, 2)), alpha=0.5,
                                    max_comparisons=1000, **kw)


def test_max_comparisons_guard_with_auto_alpha():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        with pytest.raises(ValueError, match="max_comparisons"):
            pure.person_level_mean_pure(np.zeros((400, 3)), epsilon=1.0, bound=5.0,
                                        moment_bound=1.0, samples_per_user=10)


def test_pure_mean_bad_input_and_warnings():
    kw = dict(epsilon=1.0, bound=5.0, moment_bound=1.0, samples_per_user=10)
    with pytest.raises(ValueError, match="2-d"):
        pure.person_level_mean_pure(np.zeros(10), **kw)
    with pytest.raises(ValueError, match="4 users"):
        pure.person_level_mean_pure(np.zeros((3, 1)), **kw)
    with pytest.raises(ValueError, match="finite"):
        pure.person_level_mean_pure(np.array([[0.0], [np.inf], [0], [0]]), **kw)
    with pytest.raises(ValueError, match="calibration"):
        pure.person_level_mean_pure(np.zeros((10, 1)), calibration="loose", **kw)
    with pytest.raises(ValueError, match="alpha"):
        pure.person_level_mean_pure(np.zeros((10, 1)), alpha="small", **kw)
    # Too few users: both public warnings, and the grid covers the box.
    with pytest.warns(AccuracyWarning) as record:
        _, loss, info = pure.person_level_mean_pure(np.zeros((20, 1)),
                                                    random_state=0, **kw)
    text = " ".join(str(w.message) for w in record)
    assert "coarse step" in text and "fine users are too few" in text
    assert info["alpha"] == 2 * 5.0 and loss == PureDP(1.0)


def test_pure_mean_is_reproducible_and_leaves_input_alone():
    rng = np.random.default_rng(11)
    U = _t5_user_means(rng, 3000, 10, 1, np.array([0.3]))
    before = U.copy()
    kw = dict(epsilon=1.0, bound=5.0, moment_bound=T5_M, samples_per_user=10,
              moment_order=4)
    a = pure.person_level_mean_pure(U, random_state=3, **kw)
    b = pure.person_level_mean_pure(U, random_state=3, **kw)
    assert np.array_equal(a[0], b[0]) and np.array_equal(U, before)
    info = a[2]
    assert info["n_coarse"] + info["n_fine"] == 3000 and info["n_coarse"] == 1500
    assert info["n_candidates"] == 10 and info["comparisons"] == 100


def test_fine_estimate_returns_a_candidate_and_spends_epsilon():
    U = np.random.default_rng(12).normal(0.05, 0.3, size=(300, 2))
    point, loss, plan = pure.fine_estimate(U, alpha=0.4, epsilon=0.5,
                                           moment_bound=1.0, samples_per_user=10,
                                           random_state=0)
    assert loss == PureDP(0.5)
    assert any(np.array_equal(point, c) for c in plan["candidates"])


# -------------------------------------------------------------- the estimator


def _grouped(U, m, rng):
    """Rows whose per-user means are exactly U (m rows per user)."""
    n, d = U.shape
    noise = rng.normal(size=(n, m, d))
    noise -= noise.mean(axis=1, keepdims=True)
    return (U[:, None, :] + noise).reshape(n * m, d), np.repeat(np.arange(n), m)


def test_estimator_pure_errors():
    rng = np.random.default_rng(13)
    X2, g2 = _grouped(rng.normal(size=(50, 2)), 4, rng)
    X3, g3 = _grouped(rng.normal(size=(50, 3)), 4, rng)
    with pytest.raises(ValueError, match="delta=0"):
        ThreadedClipNoiseEstimator(delta=1e-6, bounds=(-5.0, 5.0), samples_per_user=4,
                                   moment_bound=1.0,
                                   method="pure").fit(X2, groups=g2)
    with pytest.raises(ValueError, match="2 features"):
        ThreadedClipNoiseEstimator(delta=0.0, bounds=(-5.0, 5.0), samples_per_user=4,
                                   moment_bound=1.0,
                                   method="pure").fit(X3, groups=g3)
    with pytest.raises(ValueError, match="moment_bound"):
        ThreadedClipNoiseEstimator(delta=0.0, samples_per_user=4, moment_bound=None,
                                   method="pure").fit(X2, groups=g2)


@pytest.mark.parametrize("d,calibration", [(1, "tight"), (1, "paper"),
                                           (2, "tight"), (2, "paper")])
def test_estimator_pure_runs_and_spends_epsilon(d, calibration):
    # The estimator is person_level_mean_pure on the user means (same seed),
    # spends ε (pure) and reports the truncation radius.
    rng = np.random.default_rng(14 + d)
    n, m = (3000, 8) if d == 1 else (300, 8)
    U = _t5_user_means(rng, n, m, d, np.full(d, 1.5))
    X, g = _grouped(U, m, rng)
    kw = dict(moment_bound=T5_M, samples_per_user=m, moment_order=4)
    est = ThreadedClipNoiseEstimator(epsilon=0.7, delta=0.0, bounds=(-10.0, 10.0),
                                     method="pure", calibration=calibration,
                                     random_state=5, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        est.fit(X, groups=g)
        mean, loss, info = pure.person_level_mean_pure(
            X.reshape(n, m, d).mean(axis=1), epsilon=0.7, bound=10.0,
            calibration=calibration, random_state=5, **kw)
    assert est.privacy_loss_ == PureDP(0.7) and est.epsilon_ == pytest.approx(0.7)
    assert est.delta_ == 0
    assert np.array_equal(est.mean_, mean) and est.radii_ == [info["rho"]]


def test_estimator_auto_with_delta_zero_is_the_1d_pipeline_per_feature():
    # method="auto", delta=0, d = 2: person_level_mean_1d on each feature
    # with ε/2 and the seeds spawned from random_state; spends ε.
    from skuserdp.utils._random import make_seed_sequence

    rng = np.random.default_rng(15)
    n, m = 1000, 8
    U = _t5_user_means(rng, n, m, 2, np.array([1.0, -1.0]))
    X, g = _grouped(U, m, rng)
    kw = dict(moment_bound=T5_M, samples_per_user=m, moment_order=4, bound=10.0)
    est = ThreadedClipNoiseEstimator(epsilon=1.0, delta=0.0, random_state=7,
                                     bounds=(-10.0, 10.0),
                                     **{k: v for k, v in kw.items() if k != "bound"})
    est.fit(X, groups=g)
    seeds = make_seed_sequence(7).spawn(2)
    Uf = X.reshape(n, m, 2).mean(axis=1)
    want = [person_level_mean_1d(Uf[:, j], epsilon=0.5, delta=0.0,
                                 random_state=seeds[j], **kw)[0] for j in range(2)]
    assert np.array_equal(est.mean_, want)
    assert est.privacy_loss_.epsilon == pytest.approx(1.0)
    assert isinstance(est.privacy_loss_, PureDP)


def test_coarse_estimate_is_clipped_to_the_public_box():
    """Post-processing: with too few users the coarse step can land far
    outside [-R, R]^d (values near ±46 were seen at n = 40, R = 4); Algorithm 8
    clips it to the box, which can only reduce the error."""
    rng = np.random.default_rng(5)
    R = 4.0
    for s in range(10):
        U = rng.standard_t(5, size=(40, 10, 1)).mean(axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            # A small epsilon: the coarse Laplace noise is wide.
            _, _, info = pure.person_level_mean_pure(
                U, epsilon=0.05, bound=R, moment_bound=T5_M, samples_per_user=10,
                moment_order=4, random_state=s)
        assert np.all(np.abs(info["coarse"]) <= R)
