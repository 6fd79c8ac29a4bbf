"""Unbalanced users: weighted means and the row estimand (skuserdp.mean._weights).

The unit of privacy is the user (replace-one, number of users public).
"""

import dataclasses
import math

import numpy as np
import pytest

from skuserdp.mean import ColumnScaledMeanEstimator, UserMeanEstimator
from skuserdp.mean import _weights as wm
from skuserdp.privacy import PureDP, ZCDP, compose, zcdp_to_approx_dp
from skuserdp.testing import epsilon_lower_bound


def _unbalanced(n=2000, m_big=200, tau=0.1, seed=0, informative=0.0):
    rng = np.random.default_rng(seed)
    m = np.where(np.arange(n) < n // 2, 2, m_big)
    effect = 1.0 + tau * rng.standard_normal(n) + informative * (m > 2)
    groups = np.repeat(np.arange(n), m)
    x = effect[groups] * rng.lognormal(0.0, 1.0, size=groups.size) / math.exp(0.5)
    return x[:, None], groups, m


def test_row_count_buckets_have_public_edges():
    m = np.array([1, 2, 3, 4, 15, 16, 63, 64, 255, 256, 10 ** 7])
    assert wm.row_count_buckets(m).tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


@pytest.mark.parametrize("budget", [PureDP(1.0), ZCDP(0.05)], ids=["pure", "zcdp"])
@pytest.mark.parametrize("estimand", ["user_mean", "row_mean"])
def test_privacy_map_is_the_composition_of_the_plans(budget, estimand):
    plan = wm.plan_weights(500, 3, budget, estimate_budget=PureDP(1.0),
                           estimand=estimand, max_rows=10)
    parts = [plan.first.loss] + ([] if plan.second is None else [plan.second.loss])
    assert plan.loss == compose(*parts)
    if isinstance(budget, PureDP):
        assert plan.loss.epsilon <= budget.epsilon * (1 + 1e-12)
    else:
        assert plan.loss.rho <= budget.rho * (1 + 1e-12)
    # every user's contribution lies in the plan's ball (clipping is a no-op)
    d = 3
    r = plan.first.radius
    extreme = np.r_[1.0, np.ones(d)]  # (1, z) at a corner of the box
    assert np.linalg.norm(extreme) <= r + 1e-12
    if plan.second is not None:
        v = np.r_[np.ones(d), np.zeros(d)]  # (|z − c|/2, s) at a corner
        assert np.linalg.norm(v - 0.5) <= plan.second.radius + 1e-12


def test_replace_one_moves_the_padded_vectors_by_at_most_twice_the_radius():
    # a 200-row user at one corner replaced by a 2-row user at the other:
    # they sit in different buckets' blocks; and two users of one bucket
    d = 2
    r = math.sqrt(1 + d)
    B = wm.N_BUCKETS

    def padded(m, z):
        x = np.zeros((B, 1 + d))
        x[wm.row_count_buckets([m])[0]] = np.r_[1.0, z]
        return x.ravel()

    pairs = [(padded(200, np.ones(d)), padded(2, -np.ones(d))),
             (padded(2, np.ones(d)), padded(3, -np.ones(d))),
             (padded(1, np.ones(d)), padded(10 ** 6, np.zeros(d)))]
    for a, b in pairs:
        assert np.linalg.norm(a - b) <= 2 * r + 1e-12
        assert np.abs(a - b).sum() <= 2 * (1 + d) + 1e-12


def test_transform_keeps_users_in_the_box_and_is_per_user():
    rng = np.random.default_rng(1)
    Z = rng.uniform(-1, 1, size=(50, 3))
    counts = rng.integers(1, 300, 50)
    wb = rng.uniform(0, 1, size=(wm.N_BUCKETS, 3))
    c = np.array([0.3, -0.9, 1.0])
    w = wm.UserWeights("auto", c, wb, np.full(3, 10.0), np.ones(3, bool))
    Zp = w.transform(Z, counts)
    assert np.all(np.abs(Zp) <= 1.0 + 1e-12)
    # user i's transformed mean depends on its own (z_i, m_i) only
    Z2, counts2 = Z.copy(), counts.copy()
    Z2[7], counts2[7] = -Z[7], 1
    Zp2 = w.transform(Z2, counts2)
    assert np.array_equal(np.delete(Zp, 7, 0), np.delete(Zp2, 7, 0))
    assert not np.shares_memory(Zp, Z)


def test_default_is_equal_weights_and_spends_nothing_on_them():
    X, g, _ = _unbalanced(n=300, m_big=20)
    est = ColumnScaledMeanEstimator(bounds=(0.0, 10.0), random_state=0).fit(X, groups=g)
    assert est.weighting_ == "equal" and est.weights_share_ == 0.0
    assert est.weighting_reason_ == "weighting='equal'"


def test_auto_weights_beat_equal_weights_on_the_unbalanced_design():
    # half the users with 2 rows, half with 200; the user effect is small,
    # so a 200-row user's mean is far less noisy. Sign test over 40 fixed
    # seeds: under "no gain" the wins are Binomial(40, 1/2), P(≥ 27) ≈ 0.019
    wins = 0
    kinds = []
    for seed in range(40):
        X, g, _ = _unbalanced(seed=seed)
        kw = dict(epsilon=4.0, bounds=(0.0, 10.0), random_state=seed + 100)
        w = ColumnScaledMeanEstimator(weighting="auto", **kw).fit(X, groups=g)
        e = ColumnScaledMeanEstimator(weighting="equal", **kw).fit(X, groups=g)
        kinds.append(w.weighting_)
        wins += abs(w.mean_[0] - 1.0) < abs(e.mean_[0] - 1.0)
    assert wins >= 27, (wins, kinds)
    assert e.weighting_ == "equal" and e.weights_share_ == 0.0
    assert kinds.count("inverse_variance") >= 30


def test_informative_row_counts_keep_equal_weights():
    # the 200-row users' means are 50 % higher: weighting would estimate a
    # different quantity, so the released bucket means keep equal weights
    X, g, _ = _unbalanced(seed=3, informative=0.5)
    est = ColumnScaledMeanEstimator(epsilon=50.0, bounds=(0.0, 10.0),
                                    weighting="auto", random_state=0).fit(X, groups=g)
    assert est.weighting_ == "equal"
    assert "related" in est.weighting_reason_


def test_row_mean_estimand_at_large_epsilon():
    X, g, m = _unbalanced(n=400, m_big=50, seed=5, informative=0.5)
    user_means = np.bincount(g, weights=X[:, 0]) / m
    for k in (1, 10, 50):
        wk = np.minimum(m, k)
        target = float(wk @ user_means / wk.sum())
        est = ColumnScaledMeanEstimator(epsilon=1e5, bounds=(0.0, 100.0),
                                        estimand="row_mean", max_rows=k,
                                        random_state=0).fit(X, groups=g)
        assert abs(est.mean_[0] - target) < 1e-3 * abs(target), (k, est.mean_, target)
    # k ≥ max rows: the row mean
    assert abs(est.mean_[0] - X.mean()) < 1e-3 * X.mean()
    assert est.weighting_ == "row_mean"


def test_row_mean_needs_max_rows_and_user_mean_refuses_it():
    X, g, _ = _unbalanced(n=200, m_big=5)
    with pytest.raises(ValueError, match="needs max_rows"):
        ColumnScaledMeanEstimator(bounds=(0, 10), estimand="row_mean").fit(X, groups=g)
    with pytest.raises(ValueError, match="row_mean' only"):
        ColumnScaledMeanEstimator(bounds=(0, 10), max_rows=3).fit(X, groups=g)


def test_spend_includes_the_weights_and_never_exceeds_the_budget():
    X, g, _ = _unbalanced(n=500, m_big=20)
    for kw in (dict(weighting="auto"), dict(estimand="row_mean", max_rows=20)):
        est = UserMeanEstimator(epsilon=1.0, delta=1e-6, bounds=(0.0, 10.0),
                                random_state=0, **kw).fit(X, groups=g)
        assert est.weights_share_ == 0.1
        assert est.epsilon_ <= 1.0 + 1e-9 and est.delta_ <= 1e-6


# --------------------------------------------------------------------------
# audit with a positive control

AUDIT_RUNS = 4000
AUDIT_DELTA = 1e-3


def _claim(loss):
    if isinstance(loss, PureDP):
        return loss.epsilon, 0.0
    return zcdp_to_approx_dp(loss.rho, AUDIT_DELTA).epsilon, AUDIT_DELTA


def _bucket7_count(Z, counts, plan, seed, uncapped=False):
    """The released count of the 200-row bucket (first release), as the
    mechanism computes it (``uncapped``: each user counted m_i times, the
    positive control)."""
    zc = np.clip(Z, -1, 1)
    n = Z.shape[0]
    w = counts.astype(float) if uncapped else np.ones(n)
    buckets = wm.row_count_buckets(counts)
    vals = np.column_stack([w, w[:, None] * zc])
    first = plan.first
    if uncapped:  # and not clipped by the lattice's ball either (same noise)
        first = dataclasses.replace(first, ball=1e4)
    sums = wm._release(vals, first, np.random.SeedSequence(seed), blocks=buckets)
    return sums.reshape(wm.N_BUCKETS, -1)[4, 0]


@pytest.mark.slow
@pytest.mark.parametrize("budget", [PureDP(1.0), ZCDP(0.05)], ids=["pure", "zcdp"])
def test_audit_of_the_weights_release(budget):
    n = 51
    plan = wm.plan_weights(n, 1, budget, estimate_budget=PureDP(1.0))
    eps, delta = _claim(plan.first.loss)
    Z = np.zeros((n, 1))
    c_big = np.r_[np.full(n - 1, 2), 200]  # the changed user: 200 rows ...
    c_small = np.r_[np.full(n - 1, 2), 2]  # ... or 2 rows
    for uncapped, flagged in ((False, False), (True, True)):
        a = [_bucket7_count(Z, c_big, plan, 2 * i, uncapped) for i in range(AUDIT_RUNS)]
        b = [_bucket7_count(Z, c_small, plan, 2 * i + 1, uncapped)
             for i in range(AUDIT_RUNS)]
        res = epsilon_lower_bound(np.array(a), np.array(b), delta=delta,
                                  epsilon_claimed=eps)
        assert res.violation == flagged, (uncapped, res)
