"""Unbalanced users: weighted means and the row estimand (skuserdp.mean._weights).

The unit of privacy is the user (replace-one, number of users public).
"""

import dataclasses
import math

import numpy as np
import pytest

from skuserdp.mean import ColumnScaledMeanEstimator, UserMeanEstimator
from skuserdp.mean import _weights as wm
from skuserdp.privacy import (
    PureDP,
    ZCDP,
    compose,
    replace_one_histogram_sensitivity,
    zcdp_to_approx_dp,
)
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
    parts = ([plan.first.loss] if plan.second is None else
             [plan.counts.loss, plan.first.loss, plan.second.loss])
    assert plan.loss == compose(*parts)
    assert plan.spent(len(parts)) == plan.loss
    if len(parts) == 3:  # released in order
        for k in range(1, 3):
            assert plan.spent(k) == compose(*parts[:k])
        assert plan.spent_share(1) == 0.25 and plan.spent_share(3) == 1.0
    if isinstance(budget, PureDP):
        assert plan.loss.epsilon <= budget.epsilon * (1 + 1e-12)
    else:
        assert plan.loss.rho <= budget.rho * (1 + 1e-12)
    # every user's contribution lies in the plan's ball (clipping is a no-op)
    d = 3
    r = plan.first.radius
    extreme = np.r_[1.0, np.ones(d)] if estimand == "row_mean" else np.ones(d)
    assert np.linalg.norm(extreme) <= r + 1e-12  # (w, w·z) or z at a corner
    if plan.counts is not None:
        norm = "l1" if isinstance(budget, PureDP) else "l2"
        assert plan.counts.sensitivity == replace_one_histogram_sensitivity(1, norm)
        assert plan.counts.loss == plan.counts.noise.privacy(plan.counts.sensitivity)
    if plan.second is not None:
        v = np.r_[np.ones(d), np.zeros(d)]  # (|z − c|/2, s) at a corner
        assert np.linalg.norm(v - 0.5) <= plan.second.radius + 1e-12


def test_replace_one_moves_the_padded_vectors_by_at_most_twice_the_radius():
    # a 200-row user at one corner replaced by a 2-row user at the other:
    # they sit in different buckets' blocks; and two users of one bucket.
    # The counts' release (block entry 1, radius 1) and the sums' release
    # (block z, radius √d; pure: ℓ1 ball d)
    d = 2
    B = wm.N_BUCKETS

    def padded(m, v):
        x = np.zeros((B, len(v)))
        x[wm.row_count_buckets([m])[0]] = v
        return x.ravel()

    pairs = [((200, np.ones(d)), (2, -np.ones(d))),
             ((2, np.ones(d)), (3, -np.ones(d))),
             ((1, np.ones(d)), (10 ** 6, np.zeros(d)))]
    for (ma, za), (mb, zb) in pairs:
        a, b = padded(ma, [1.0]), padded(mb, [1.0])  # the counts' histogram
        assert np.linalg.norm(a - b) <= replace_one_histogram_sensitivity(1, "l2")
        assert np.abs(a - b).sum() <= replace_one_histogram_sensitivity(1, "l1")
        a, b = padded(ma, za), padded(mb, zb)
        assert np.linalg.norm(a - b) <= 2 * math.sqrt(d) + 1e-12
        assert np.abs(a - b).sum() <= 2 * d + 1e-12


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
    with pytest.raises(ValueError, match="only applies to estimand='row_mean'"):
        ColumnScaledMeanEstimator(bounds=(0, 10), max_rows=3).fit(X, groups=g)


def test_spend_includes_the_weights_and_never_exceeds_the_budget():
    X, g, _ = _unbalanced(n=500, m_big=20)
    # 500 users at ε = 1: the weights' counts would be too noisy at every
    # share (public plan), so weighting="auto" spends nothing; row_mean,
    # which needs its total, takes the largest share
    for kw, share in ((dict(weighting="auto"), 0.0),
                      (dict(estimand="row_mean", max_rows=20), 0.3),
                      # a forced share: the counts (a quarter of it) are
                      # too noisy here to show two buckets, so the rest of
                      # the share goes back to the estimate
                      (dict(weighting="auto", weights_share=0.1), 0.025)):
        est = UserMeanEstimator(epsilon=1.0, delta=1e-6, bounds=(0.0, 10.0),
                                random_state=0, **kw).fit(X, groups=g)
        assert est.weights_share_ == share
        assert est.epsilon_ <= 1.0 + 1e-9 and est.delta_ <= 1e-6
    est = UserMeanEstimator(epsilon=1.0, bounds=(0.0, 10.0), weighting="auto",
                            random_state=0).fit(X, groups=g)
    assert est.weighting_ == "equal" and "too few users" in est.weighting_reason_


def test_auto_share_is_a_public_plan():
    assert wm.choose_weights_share(2000, 1, 1.0, 1e-6, zcdp=True) is None
    assert wm.choose_weights_share(2000, 1, 1.0, 1e-6, zcdp=True,
                                   estimand="row_mean", max_rows=5) == 0.3
    shares = [wm.choose_weights_share(n, 1, 4.0, 1e-6, zcdp=True)
              for n in (2000, 20000)]
    assert shares[0] is not None and shares[1] <= shares[0]


# --------------------------------------------------------------------------
# audit with a positive control

AUDIT_RUNS = 4000
AUDIT_DELTA = 1e-3


def _claim(loss):
    if isinstance(loss, PureDP):
        return loss.epsilon, 0.0
    return zcdp_to_approx_dp(loss.rho, AUDIT_DELTA).epsilon, AUDIT_DELTA


def _released_statistic(kind, changed, plan, seed, control):
    """One run of a weights release on 51 users, 50 fixed and one
    ``changed`` (True/False: the two neighbours), and the coordinate the
    changed user moves most.

    ``kind``: ``"counts"`` (first release: the count of the 64–255-row
    bucket; the user has 200 rows or 2), ``"sums"`` (the 2–3-row bucket's
    sum; the user's mean at +1 or −1), ``"spreads"`` (second release: the
    user's row standard deviation, 1 or 0) or ``"row_total"`` (row_mean: the
    weighted total; the user has 10 rows or 1, cap 10). ``control``: the
    positive control, the same release and noise with the user's statistic
    neither capped nor clipped (counted m times; a row spread of 50).
    """
    n, ss = 51, np.random.SeedSequence(seed)
    ball = 1e4 if control else None
    if kind == "counts":
        counts = np.r_[np.full(n - 1, 2), 200 if changed else 2]
        w = counts.astype(float) if control else np.ones(n)
        return wm._release_counts(wm.row_count_buckets(counts), plan.counts, ss,
                                  per_user=w)[4]
    if kind == "sums":  # the user (2 rows) at +1 or −1 (positive control: ±50)
        counts = np.full(n, 2)
        z = np.zeros(n)
        z[-1] = (50.0 if control else 1.0) * (1 if changed else -1)
        rel = plan.first if ball is None else dataclasses.replace(plan.first, ball=ball)
        sums = wm._release(z[:, None], rel, ss, blocks=wm.row_count_buckets(counts))
        return sums[1]
    if kind == "spreads":
        sd = np.zeros(n)
        sd[-1] = (50.0 if control else 1.0) if changed else 0.0
        vals = np.column_stack([np.zeros(n), sd])
        rel = (plan.second if ball is None
               else dataclasses.replace(plan.second, ball=ball))
        return wm._release(vals, rel, ss, center=0.5)[1]
    k = plan.max_rows
    m = np.r_[np.full(n - 1, 3), k if changed else 1]
    w = m.astype(float) if control else np.minimum(m, k) / k
    vals = np.column_stack([w, np.zeros(n)])
    rel = plan.first if ball is None else dataclasses.replace(plan.first, ball=ball)
    return wm._release(vals, rel, ss)[0]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["counts", "sums", "spreads", "row_total"])
@pytest.mark.parametrize("budget", [PureDP(1.0), ZCDP(0.05)], ids=["pure", "zcdp"])
def test_audit_of_the_weights_releases(kind, budget):
    plan = wm.plan_weights(51, 1, budget, estimate_budget=PureDP(1.0),
                           estimand="row_mean" if kind == "row_total" else "user_mean",
                           max_rows=10)
    part = {"counts": plan.counts, "spreads": plan.second}.get(kind, plan.first)
    eps, delta = _claim(part.loss)
    for control in (False, True):
        a = [_released_statistic(kind, True, plan, 2 * i, control)
             for i in range(AUDIT_RUNS)]
        b = [_released_statistic(kind, False, plan, 2 * i + 1, control)
             for i in range(AUDIT_RUNS)]
        res = epsilon_lower_bound(np.array(a), np.array(b), delta=delta,
                                  epsilon_claimed=eps)
        print(kind, "control" if control else "real", res)
        assert res.violation == control, (control, res)


def test_auto_estimator_reports_the_weighted_estimate_and_conf_int_works():
    X, g, _ = _unbalanced(n=3000, m_big=100, seed=7)
    est = UserMeanEstimator(epsilon=8.0, bounds=(0.0, 10.0), weighting="auto",
                            random_state=0).fit(X, groups=g)
    assert est.weighting_ == "inverse_variance"
    assert np.array_equal(est.estimator_.mean_, est.mean_)
    assert est.estimator_.weighting_ == est.weighting_
    lo, hi = est.conf_int()[0]
    assert lo < est.mean_[0] < hi
    # the interval's width is of the order of the weighted estimate's error
    # (sampling of the 100-row users, a few thousandths), not of the box
    assert hi - lo < 0.1


def test_chooser_keeps_the_box_when_users_are_weighted():
    from skuserdp.mean import choose_mean_method

    kw = dict(bounds=(0.0, 10.0), radius=7.0)
    assert choose_mean_method(100, 100, 1.0, 1e-6, **kw)[0] == "few_users"
    assert choose_mean_method(100, 100, 1.0, 1e-6, weighted=True,
                              **kw)[0] == "column_scaled"


def test_declared_ball_learns_a_box_for_the_weights():
    # ClipNoise with a declared ball uses no box, but the row estimand's
    # statistics need one: bounds="auto" then learns it (charged)
    from skuserdp.mean import ClipNoiseMeanEstimator

    X, g, _ = _unbalanced(n=3000, m_big=5)
    est = ClipNoiseMeanEstimator(epsilon=4.0, radius=10.0, center=1.0,
                                 estimand="row_mean", max_rows=5, random_state=0)
    est.fit(X, groups=g)
    assert est.bounds_ is not None and est.weighting_ == "row_mean"
    assert est.epsilon_ <= 4.0 + 1e-9


def test_transform_never_overflows_for_users_far_out():
    # in the units of X (a declared ball: the estimator runs unscaled),
    # c + w·(z − c) overflowed for a user near the float64 limit, so whether
    # fit raised depended on one user's data
    from skuserdp.mean import ClipNoiseMeanEstimator

    X, g, _ = _unbalanced(n=200, m_big=5, seed=2)
    for far in (-0.9e308, 1.7e308):
        X2 = X.copy()
        X2[g == 0] = far
        est = ClipNoiseMeanEstimator(radius=1.0, center=1.0, bounds=(-1e308, 1.7e308),
                                     estimand="row_mean", max_rows=5, random_state=0)
        est.fit(X2, groups=g)
        assert np.isfinite(est.mean_).all()


def test_row_mean_with_one_row_is_the_users_mean_and_spends_nothing():
    X, g, _ = _unbalanced(n=300, m_big=5)
    kw = dict(bounds=(0.0, 10.0), random_state=0)
    a = ColumnScaledMeanEstimator(estimand="row_mean", max_rows=1, **kw)
    a.fit(X, groups=g)
    b = ColumnScaledMeanEstimator(**kw).fit(X, groups=g)
    assert np.array_equal(a.mean_, b.mean_) and a.weights_share_ == 0.0
    assert "max_rows=1" in a.weighting_reason_


def test_declared_ball_keeps_the_box_when_users_are_weighted():
    from skuserdp.mean import ClipNoiseMeanEstimator

    X, g, _ = _unbalanced(n=500, m_big=10)
    est = ClipNoiseMeanEstimator(radius=5.0, center=1.0, bounds=(0.0, 10.0),
                                 estimand="row_mean", max_rows=10,
                                 random_state=0).fit(X, groups=g)
    assert est.weighting_ == "row_mean"
    assert "row-level mean" in est._interval_state.estimand
