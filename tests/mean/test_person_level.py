"""Person-level 1-D mean under bounded k-th moments (AKMMSU 2024, §3):
accounting, coarse accuracy (Thm 3.10), rate in n, audit.

Spec: shared/specs/akmmsu2024_person_level.md §2.1-2.3, §7 items 3-6.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    ThreadedClipNoiseEstimator,
    person_level_from_plan,
    person_level_mean,
    person_level_mean_1d,
    plan_person_level,
)
from skuserdp.mean._person_level import coarse_estimate, fine_radius_1d, tcn_radii
from skuserdp.privacy import ApproxDP, PureDP
from skuserdp.testing import epsilon_lower_bound

# Student-t with 5 degrees of freedom: E|T|^4 = 3 nu^2 / ((nu-2)(nu-4)) = 25.
T5_SIGMA4 = 25 ** 0.25


def _t5_user_means(rng, n, m, mu=2.0):
    return mu + rng.standard_t(5, size=(n, m)).mean(axis=1)


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_spend_is_epsilon_in_both_calibrations(calibration):
    S = _t5_user_means(np.random.default_rng(0), 500, 10)
    _, loss, info = person_level_mean_1d(S, epsilon=0.7, bound=10.0, moment_order=4,
                                         moment_bound=T5_SIGMA4, samples_per_user=10,
                                         calibration=calibration, random_state=0)
    assert loss == PureDP(0.7) or loss.epsilon == pytest.approx(0.7)
    assert info["n_coarse"] + info["n_recenter"] + info["n_fine"] == 500
    if calibration == "paper":
        assert info["n_coarse"] == math.ceil(0.5 * 500) and info["n_recenter"] == 0
    else:
        # Public rule: max(5 % of n, users the exponential mechanism needs
        # over its l = 12 bins, 16 ln(l/beta)/(3 eps) = 37); 10 % re-centre.
        assert info["n_coarse"] == max(math.ceil(0.05 * 500), 37)
        assert info["n_recenter"] == math.ceil(0.1 * 500)
    width = (16.0 if calibration == "paper" else 4.0) * T5_SIGMA4 / math.sqrt(10)
    assert info["coarse_width"] == pytest.approx(width)


def test_fine_radius_balances_bias_and_noise():
    # Second term (n eps / ln(2/beta))^(1/k) / m^(1-1/k) wins for large n;
    # the floor sqrt((k-1) ln m / m) for small n.
    big = fine_radius_1d(10**6, 1.0, moment_order=4, moment_bound=2.0,
                         samples_per_user=10)
    assert big == pytest.approx(2.0 * (1e6 / math.log(20)) ** 0.25 / 10 ** 0.75)
    small = fine_radius_1d(2, 0.01, moment_order=4, moment_bound=1.0,
                           samples_per_user=100)
    assert small == pytest.approx(math.sqrt(3 * math.log(100) / 100))


def test_coarse_center_is_within_its_error_bound():
    # Theorem 3.10 with our constants: each coarse user mean is within
    # r = 4M/sqrt(m) of mu except w.p. <= 1/16 (Chebyshev); the chosen
    # midpoint is within u = 1.5 r except w.p. <= P[> n_c/8 outliers] +
    # l exp(-3 eps n_c / 16). n_c = 250: binomial tail P[Bin(250, 1/16) >
    # 31] and l exp(-47) are both < 1e-3; 200 runs, so at most 2 misses is a
    # generous binomial bound at level 1e-3.
    rng = np.random.default_rng(1)
    misses = 0
    for s in range(200):
        S = _t5_user_means(rng, 1000, 10)
        _, _, info = person_level_mean_1d(S, epsilon=1.0, bound=1000.0, moment_order=4,
                                          moment_bound=T5_SIGMA4, samples_per_user=10,
                                          coarse_fraction=0.25, random_state=s)
        misses += abs(info["coarse_center"] - 2.0) > info["coarse_error"]
    assert stats.binom.sf(31, 250, 1 / 16) < 1e-3
    assert misses <= 2


def test_error_shrinks_with_users_and_beats_clipping_to_the_range():
    # Theorem 3.14: error ~ sqrt(1/(mn)) + rho/(n eps); quadrupling n at
    # least halves the median error (slope <= -1/2, with 25 % slack for
    # Monte Carlo over 40 seeds).
    rng = np.random.default_rng(2)
    med = {}
    for n in (2000, 8000):
        errs = []
        for s in range(40):
            S = _t5_user_means(rng, n, 20)
            est, _, _ = person_level_mean_1d(S, epsilon=1.0, bound=100.0,
                                             moment_order=4, moment_bound=T5_SIGMA4,
                                             samples_per_user=20, random_state=s)
            errs.append(abs(est - S.mean()))
        med[n] = np.median(errs)
    assert med[8000] <= 0.5 * 1.25 * med[2000]
    # Clip-and-noise to the public range [-100, 100] has noise scale
    # 200/(n eps) = 0.025 at n = 8000; the person-level estimate is far below.
    assert med[8000] < 0.2 * 200 / 8000


def test_audit_finds_no_violation_on_a_far_user():
    # Neighbours: 60 users at 0 vs one of them at the far end of the range.
    S = np.zeros(60)
    Sp = S.copy()
    Sp[0] = 50.0
    runs = 3000
    kw = dict(epsilon=1.0, bound=50.0, moment_order=2, moment_bound=1.0,
              samples_per_user=4)
    a = [person_level_mean_1d(S, random_state=s, **kw)[0] for s in range(runs)]
    b = [person_level_mean_1d(Sp, random_state=s, **kw)[0] for s in range(runs)]
    res = epsilon_lower_bound(np.array(a), np.array(b), epsilon_claimed=1.0)
    assert not res.violation, str(res)


def test_bad_input():
    S = np.zeros(10)
    kw = dict(epsilon=1.0, bound=1.0, samples_per_user=4)
    with pytest.raises(ValueError, match="moment_order"):
        person_level_mean_1d(S, moment_order=1.5, **kw)
    with pytest.raises(ValueError, match="finite"):
        person_level_mean_1d(np.array([0.0, np.nan, 1.0]), **kw)
    with pytest.raises(ValueError, match="2 users"):
        person_level_mean_1d(np.zeros(1), **kw)
    before = S.copy()
    person_level_mean_1d(S, random_state=0, **kw)
    assert np.array_equal(S, before)


# ------------------------------------------------------- d dimensions (Alg 4)


def _meets(loss, eps, delta):
    return loss.epsilon <= eps * (1 + 1e-12) and loss.delta <= delta * (1 + 1e-12)


@pytest.mark.parametrize("d", [1, 4, 64])
def test_coarse_estimate_is_within_gamma0_and_charged(d):
    # Per coordinate: users within r' = 4/sqrt(m) except w.p. 1/16; the kept
    # bucket's midpoint within 1.5 r'. Over 30 runs with n = 3000 every
    # coordinate succeeds (the failure probabilities are below 1e-6).
    rng = np.random.default_rng(d)
    m = 10
    for s in range(30):
        U = 7.0 + rng.standard_t(5, size=(3000, d)) / math.sqrt(m) * 0.8
        c, loss, failed = coarse_estimate(U, epsilon=1.0, delta=1e-6,
                                          moment_bound=1.0, samples_per_user=m,
                                          random_state=s)
        assert failed == 0
        assert np.abs(c - 7.0).max() <= 1.5 * 4 / math.sqrt(m)
        assert _meets(loss, 1.0, 1e-6)


def test_tcn_radii_follow_the_recursion():
    # T = 1 for typical (d, m, k); several layers, decreasing, for k = 2,
    # d = 1e5, m = 4 (spec §7 item 8).
    assert len(tcn_radii(100, moment_order=4, moment_bound=1.0,
                         samples_per_user=10)) == 1
    radii = tcn_radii(10**5, moment_order=2, moment_bound=1.0, samples_per_user=4)
    assert len(radii) >= 2 and all(a > b for a, b in zip(radii, radii[1:]))
    assert radii[0] == pytest.approx(1e5 ** 0.75 / 4 ** 0.5)
    assert radii[-1] == pytest.approx(12 * math.sqrt(1e5 / 4))


def test_person_level_mean_accuracy_and_spend():
    # Student-t (5 dof) rows, k = 4, M = 25^(1/4); d = 8, m = 20, n = 6000.
    rng = np.random.default_rng(3)
    d, m, n = 8, 20, 6000
    errs = []
    for s in range(10):
        U = -3.0 + rng.standard_t(5, size=(n, m, d)).mean(axis=1)
        mean, loss, info = person_level_mean(U, epsilon=1.0, delta=1e-6,
                                             moment_order=4, moment_bound=T5_SIGMA4,
                                             samples_per_user=m, random_state=s)
        assert _meets(loss, 1.0, 1e-6) and isinstance(loss, ApproxDP)
        assert (info["n_coarse"] + info["n_tau"] + info["n_tcn"] + info["n_final"]
                == n)
        errs.append(np.linalg.norm(mean - U.mean(axis=0)))
    # Final stage noise: Gaussian, l2 sensitivity 2 rho*/n_V, about
    # 2 * rho* * sqrt(d) * 5 / (n_V eps) in norm; sampling error is ~0.
    bound = 2 * info["final_radius"] * math.sqrt(d) * 5.3 / info["n_final"]
    assert np.median(errs) < bound


def test_person_level_mean_audit_finds_no_violation():
    rng = np.random.default_rng(4)
    U = rng.normal(size=(90, 3)) * 0.1
    Up = U.copy()
    Up[0] = 80.0
    kw = dict(epsilon=1.0, delta=1e-3, moment_order=2, samples_per_user=4)
    direction = np.ones(3) / math.sqrt(3)
    # 30 coarse users cannot pass the threshold: the coarse step falls back
    # to 0 (and warns); the TCN and final stages still see the moved user.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        a = [person_level_mean(U, random_state=s, **kw)[0] @ direction
             for s in range(1500)]
        b = [person_level_mean(Up, random_state=s, **kw)[0] @ direction
             for s in range(1500)]
    res = epsilon_lower_bound(np.array(a), np.array(b), delta=1e-3,
                              epsilon_claimed=1.0)
    assert not res.violation, str(res)


def test_coarse_step_warns_when_no_bucket_can_be_released():
    # 100 users, d = 3, eps = 0.5: the per-coordinate threshold (~180) is
    # above the number of users, a public fact; the fallback centre is 0.
    U = np.random.default_rng(5).normal(size=(100, 3))
    with pytest.warns(AccuracyWarning, match="too few for the coarse step"):
        c, _, failed = coarse_estimate(U, epsilon=0.5, delta=1e-6, moment_bound=1.0,
                                       samples_per_user=5, random_state=0)
    assert failed == 3 and np.all(c == 0)


# ------------------------------------------------------------- the estimator
def test_estimator_routes_and_errors():
    rng = np.random.default_rng(6)
    n, m = 3000, 8
    g = np.repeat(np.arange(n), m)
    X1 = 1.5 + rng.standard_t(5, size=(n * m, 1))
    pure = ThreadedClipNoiseEstimator(epsilon=1.0, delta=0.0, moment_order=4,
                                      moment_bound=T5_SIGMA4, samples_per_user=m,
                                      bounds=(-10.0, 10.0), random_state=0)
    pure.fit(X1, groups=g)
    assert pure.privacy_loss_ == PureDP(1.0) and len(pure.radii_) == 1
    assert abs(pure.mean_[0] - 1.5) < 0.1
    with pytest.raises(ValueError, match="bound"):
        ThreadedClipNoiseEstimator(delta=0.0, samples_per_user=m).fit(X1, groups=g)
    X3 = 1.5 + rng.standard_t(5, size=(n * m, 3))
    # delta = 0, several features: the 1-D pipeline per feature at eps/d.
    per_feature = ThreadedClipNoiseEstimator(
        epsilon=1.0, delta=0.0, moment_order=4, moment_bound=T5_SIGMA4,
        samples_per_user=m, bounds=(-10.0, 10.0), random_state=0).fit(X3, groups=g)
    assert per_feature.privacy_loss_.epsilon == pytest.approx(1.0)
    assert isinstance(per_feature.privacy_loss_, PureDP)
    assert np.linalg.norm(per_feature.mean_ - 1.5) < 0.3
    approx = ThreadedClipNoiseEstimator(epsilon=1.0, delta=1e-6, moment_order=4,
                                        moment_bound=T5_SIGMA4, samples_per_user=m,
                                        random_state=0).fit(X3, groups=g)
    assert _meets(approx.privacy_loss_, 1.0, 1e-6)
    assert np.linalg.norm(approx.mean_ - 1.5) < 0.3
    assert approx.radii_[-1] > 0


@pytest.mark.parametrize("d,delta", [(1, 0.0), (1, 1e-3), (8, 1e-3)])
def test_estimator_audit(d, delta):
    # Worst case: every user at the origin vs one user far away.
    from skuserdp.testing import audit_estimator, worst_case_mean_neighbours
    X, g, Xp, gp = worst_case_mean_neighbours(90, d, radius=30.0, rows_per_user=2)
    est = ThreadedClipNoiseEstimator(epsilon=1.0, delta=delta, moment_order=2,
                                     samples_per_user=2, moment_bound=1.0,
                                     bounds=(-40.0, 40.0))
    res = audit_estimator(est, X, Xp, groups=g, groups_prime=gp, n_runs=1000,
                          random_state=0)
    assert not res.violation, str(res)


def test_one_feature_with_delta_uses_the_1d_pipeline_without_a_bound():
    # delta > 0: the coarse step is the stability histogram (no bound);
    # spend (eps, delta) by parallel composition; 5 % coarse, 10 % re-centring,
    # the rest in the fine stage (radii_ has one entry).
    rng = np.random.default_rng(8)
    n, m = 4000, 10
    mu = 123.0  # far from any default: no bound is declared
    X = mu + rng.standard_t(5, size=(n * m, 1))
    g = np.repeat(np.arange(n), m)
    est = ThreadedClipNoiseEstimator(epsilon=1.0, delta=1e-6, moment_order=4,
                                     moment_bound=T5_SIGMA4, samples_per_user=m,
                                     random_state=0).fit(X, groups=g)
    assert len(est.radii_) == 1
    assert _meets(est.privacy_loss_, 1.0, 1e-6)
    assert abs(est.mean_[0] - mu) < 0.1
    _, loss, info = person_level_mean_1d(X.reshape(n, m).mean(axis=1), epsilon=1.0,
                                         delta=1e-6, moment_order=4,
                                         moment_bound=T5_SIGMA4, samples_per_user=m,
                                         random_state=0)
    assert info["n_coarse"] == math.ceil(0.05 * n)
    assert info["n_fine"] == n - math.ceil(0.05 * n) - math.ceil(0.1 * n)
    assert loss.delta <= 1e-6 and loss.epsilon <= 1.0


# ------------------------------------------------ Algorithm 4 with a public box
def test_bounded_coarse_step_group_size_accounting_and_accuracy():
    """Algorithm 4 with ``bound``: the coarse group has the public size
    ``16 ln(l d/beta)/(3 eps0)`` (capped at n/3), the whole release meets
    (eps, delta), and every coarse coordinate is within 1.5 r of mu.

    Per coordinate the exponential mechanism picks a far bin w.p. at most
    ``l exp(-3 eps0 n_c/16) <= beta/d`` and more than 1/8 of the users are
    farther than r w.p. < 1e-3 (binomial, p <= 1/16), so over 20 runs the
    number of runs with a coarse coordinate off by more than 1.5 r is
    Binomial(20, <= 0.11): P(>= 7) < 1e-3.
    """
    from skuserdp.mean._person_level import _bounded_coarse_users
    d, m, n, R = 8, 10, 3000, 10.0
    r = 4.0 * T5_SIGMA4 / math.sqrt(m)
    expected = _bounded_coarse_users(1.0, 1e-6, d, R, T5_SIGMA4, m, 0.1)
    assert expected < n // 3
    bad = 0
    rng = np.random.default_rng(11)
    for rep in range(20):
        mu = rng.uniform(-R, R, size=d)
        U = mu + rng.standard_t(5, size=(n, m, d)).mean(axis=1)
        mean, loss, info = person_level_mean(
            U, epsilon=1.0, delta=1e-6, moment_order=4, moment_bound=T5_SIGMA4,
            samples_per_user=m, bound=R, random_state=rep)
        assert info["n_coarse"] == expected
        assert _meets(loss, 1.0, 1e-6)
        bad += np.abs(info["centers"][0] - mu).max() > 1.5 * r
    assert bad < 7


def test_bounded_coarse_step_audit():
    """Worst-case neighbours (all users at 0 vs one far user) with the
    bounded coarse route: the audit finds no violation of (1, 1e-3)."""
    from skuserdp.testing import audit_estimator, worst_case_mean_neighbours
    X, g, Xp, gp = worst_case_mean_neighbours(90, 4, radius=30.0, rows_per_user=2)
    est = ThreadedClipNoiseEstimator(epsilon=1.0, delta=1e-3, moment_order=2,
                                     samples_per_user=2, bounds=(-40.0, 40.0),
                                     moment_bound=1.0)
    res = audit_estimator(est, X, Xp, groups=g, groups_prime=gp, n_runs=1000,
                          random_state=0)
    assert not res.violation, str(res)


def test_n_threads_caps_the_layer_count():
    """``n_threads`` caps the recursion's layers; it never adds copies of the
    floor layer (regression: n_threads = 3 with T = 1 gave [floor, floor])."""
    U = np.random.default_rng(3).normal(size=(3000, 4))
    kw = dict(epsilon=1.0, delta=1e-6, moment_order=4, moment_bound=1.0,
              samples_per_user=10, random_state=0)
    auto = person_level_mean(U, **kw)[2]["radii"]
    for n_threads in (1, 2, 3, 5):
        radii = person_level_mean(U, n_threads=n_threads, **kw)[2]["radii"]
        assert radii == auto  # T = 1 here: one layer plus the refinement layer


def test_offset_is_the_same_as_shifting_the_table():
    """The estimator passes the box's midpoint as ``offset`` (each group is
    shifted after it is gathered, issue 18): the same release, bit for bit,
    as shifting the whole table first."""
    rng = np.random.default_rng(5)
    U = 40.0 + rng.standard_normal((4000, 6))
    offset = rng.uniform(35.0, 45.0, size=6)
    U_copy = U.copy()
    for kw in [dict(bound=10.0), dict(n_threads=3), dict(calibration="paper")]:
        a = person_level_mean(U - offset, epsilon=1.0, delta=1e-6, moment_bound=1.0,
                              samples_per_user=1, random_state=2, **kw)
        b = person_level_mean(U, epsilon=1.0, delta=1e-6, moment_bound=1.0,
                              samples_per_user=1, random_state=2, offset=offset,
                              **kw)
        assert a[0].tobytes() == b[0].tobytes()
        assert a[1] == b[1] and a[2]["radii"] == b[2]["radii"]
    np.testing.assert_array_equal(U, U_copy)  # the caller's table is not modified


def test_defaults_at_20k_users_and_64_features_learn_no_box():
    """Regression: with delta > 0 the estimator learned a box by default
    (bounds="auto": a quarter of epsilon over 128 releases, 0.002 each) and
    took its widest column as the coarse step's R for every feature. At
    20 000 users x 64 features some column's spread release came out
    absurdly wide in nearly every fit (half-widths up to 1e74), and the fit
    died in private_range ("... bins exceeds 1e+12"). No route needs a box
    with delta > 0: none is learned, the whole budget goes to the estimate."""
    n, d = 20000, 64
    rng = np.random.default_rng(0)
    mu = rng.uniform(-2.0, 2.0, size=d)
    X = mu + rng.normal(size=(n, d))
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        est = ThreadedClipNoiseEstimator(moment_bound=1, random_state=0).fit(
            X, groups=np.arange(n))
    assert est.bounds_ is None
    assert _meets(est.privacy_loss_, 1.0, 1e-6) and est.epsilon_ <= 1.0
    assert np.abs(est.mean_ - mu).max() < 0.15  # measured 0.02-0.05


def test_a_box_too_wide_for_the_bounded_coarse_step(monkeypatch):
    """A public R spanning more than 1e12 buckets of width 4M/sqrt(m): with
    delta > 0 Algorithm 4 ignores it (stability histogram, as without one);
    with delta = 0 the estimator refuses before any release."""
    from skuserdp.mean import _person_level
    from skuserdp.mean._person_level import _bounded_coarse_users
    rng = np.random.default_rng(1)
    U = 3.0 + rng.normal(size=(3000, 4))
    kw = dict(epsilon=1.0, delta=1e-6, moment_bound=1.0, samples_per_user=1,
              random_state=0)
    wide = person_level_mean(U, bound=1e13, **kw)
    none = person_level_mean(U, **kw)
    assert wide[0].tobytes() == none[0].tobytes()
    assert wide[2]["n_coarse"] == none[2]["n_coarse"]
    assert person_level_mean(U, bound=10.0, **kw)[2]["n_coarse"] == (
        _bounded_coarse_users(1.0, 1e-6, 4, 10.0, 1.0, 1, 0.1))
    g = np.arange(3000)
    est = ThreadedClipNoiseEstimator(moment_bound=1.0, bounds=(-1e13, 1e13),
                                     random_state=0).fit(U, groups=g)
    assert np.abs(est.mean_ - 3.0).max() < 0.3
    calls = []

    def no_release(*args, **kwargs):
        calls.append(1)
        raise AssertionError("a release before the refusal")

    monkeypatch.setattr(_person_level, "private_range", no_release)
    with pytest.raises(ValueError, match=r"declared bounds are too wide in "
                       r"feature\(s\) \[0, 1, 2, 3\].*declare tighter bounds"):
        ThreadedClipNoiseEstimator(delta=0.0, moment_bound=1.0,
                                   bounds=(-1e13, 1e13)).fit(U, groups=g)
    assert not calls


# ---------------------------------------------------------------------------
# Public plan/apply API (issue 27)
# ---------------------------------------------------------------------------

def _same_release(a, b):
    (mean_a, loss_a, info_a), (mean_b, loss_b, info_b) = a, b
    np.testing.assert_array_equal(mean_a, mean_b)
    assert loss_a == loss_b
    assert info_a.keys() == info_b.keys()


@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("bound", [None, 20.0])
def test_plan_and_apply_are_algorithm_4(calibration, bound):
    rng = np.random.default_rng(3)
    U = 5.0 + rng.standard_t(5, size=(3000, 10, 4)).mean(axis=1)
    kw = dict(moment_order=4, moment_bound=1.5, samples_per_user=10, bound=bound,
              calibration=calibration)
    plan = plan_person_level(3000, 4, budget=ApproxDP(1.0, 1e-6), **kw)
    assert plan.route == "threaded"
    got = person_level_from_plan(U, plan, random_state=1)
    _same_release(got, person_level_mean(U, epsilon=1.0, delta=1e-6, random_state=1,
                                         **kw))
    assert got[2]["radii"] == plan.stages["radii"]
    assert got[1].epsilon <= 1.0 + 1e-12 and got[1].delta <= 1e-6 * (1 + 1e-12)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_plan_and_apply_run_the_1d_pipeline_per_feature(delta):
    rng = np.random.default_rng(4)
    U = 1.0 + rng.standard_t(5, size=(2000, 10, 2)).mean(axis=1)
    kw = dict(moment_order=4, moment_bound=1.5, samples_per_user=10, bound=10.0)
    budget = PureDP(1.0) if delta == 0 else ApproxDP(1.0, delta)
    plan = plan_person_level(2000, 2, budget=budget, method="per_feature", **kw)
    assert plan.route == "per_feature"
    got = person_level_from_plan(U, plan, random_state=2)
    seeds = np.random.SeedSequence(2).spawn(2)
    for j in range(2):
        want = person_level_mean_1d(U[:, j], epsilon=0.5, delta=delta / 2,
                                    random_state=seeds[j], **kw)
        assert got[0][j] == want[0]
    assert plan.stages["radius"] == got[2]["radius"]


def test_person_level_plan_center_shifts_the_data_publicly():
    rng = np.random.default_rng(5)
    U = rng.normal(0.0, 0.3, size=(2000, 1))
    plan = plan_person_level(2000, 1, budget=PureDP(1.0), moment_bound=1.0,
                             samples_per_user=10, bound=1.0)
    mean, _, _ = person_level_from_plan(U, plan, random_state=0)
    moved, _, _ = person_level_from_plan(U + 1e3, plan, center=[1e3],
                                         random_state=0)
    assert abs(moved[0] - 1e3 - mean[0]) < 1e-9
    before = U.copy()
    person_level_from_plan(U, plan, center=[0.5], random_state=0)
    assert np.array_equal(U, before)


def test_person_level_plan_checks_its_public_inputs():
    kw = dict(moment_bound=1.0, samples_per_user=10)
    with pytest.raises(TypeError, match="PureDP or ApproxDP"):
        plan_person_level(100, 1, budget=(1.0, 0.0), **kw)
    with pytest.raises(ValueError, match="method"):
        plan_person_level(100, 1, budget=PureDP(1.0), bound=1.0, method="fast", **kw)
    with pytest.raises(ValueError, match="bound"):
        plan_person_level(100, 1, budget=PureDP(1.0), **kw)
    with pytest.raises(ValueError, match="delta=0"):
        plan_person_level(100, 1, budget=ApproxDP(1.0, 1e-6), bound=1.0,
                          method="pure", **kw)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        plan_person_level(100, 2, budget=PureDP(1.0), method="threaded", **kw)
    plan = plan_person_level(100, 2, budget=ApproxDP(1.0, 1e-6), **kw)
    with pytest.raises(ValueError, match="shape"):
        person_level_from_plan(np.zeros((100, 3)), plan)
    with pytest.raises(ValueError, match="finite"):
        person_level_from_plan(np.full((100, 2), np.nan), plan)


def test_plan_and_apply_are_algorithm_8():
    from skuserdp.mean import person_level_mean_pure

    U = np.random.default_rng(6).normal(0.5, 0.3, size=(3000, 1))
    kw = dict(bound=5.0, moment_bound=1.0, samples_per_user=10, alpha=0.4)
    plan = plan_person_level(3000, 1, budget=PureDP(1.0), method="pure", **kw)
    assert (plan.route, plan.stages["n_coarse"], plan.stages["alpha"]) == (
        "pure", 1500, 0.4)
    _same_release(person_level_from_plan(U, plan, random_state=7),
                  person_level_mean_pure(U, epsilon=1.0, random_state=7, **kw))
