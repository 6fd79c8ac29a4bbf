"""Private selection (Levy et al. Algorithm 5, Theorem 6; Liu & Talwar random
stopping): accounting, parameters actually used, stopping law, data
independence, accuracy against the corrected Theorem 6, audit, input
handling, and the estimator-level utility.

Spec: shared/specs/levy2021_user_level_learning.md §3.10, §6.3, §7 item 14,
§9 [E3], [E10], [E16].
"""

import math
import pickle
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge

import skuserdp.model_selection._private_selection as ps
from skuserdp.exceptions import AccuracyWarning, ItemLevelPrivacyWarning
from skuserdp.model_selection import (
    SelectionResult,
    private_selection,
    select_model_privately,
    theorem6_error_bound,
)
from skuserdp.privacy import (
    ApproxDP,
    PureDP,
    random_stopping_call_budget,
    random_stopping_max_iter,
    random_stopping_privacy,
)
from skuserdp.testing import epsilon_lower_bound

# A statistical check fails by chance with probability at most this.
P_FALSE_ALARM = 1e-4


def _z(p=P_FALSE_ALARM):
    """Two-sided normal quantile for a false-alarm probability ``p``."""
    return stats.norm.isf(p / 2)


def _capped_delta(eps, gamma, max_iter):
    return (1 + math.exp(eps)) * (1 - gamma) ** max_iter


@pytest.fixture
def recorder(monkeypatch):
    """Record every WinsorizedMean release the selection makes."""
    calls = []
    real = ps.winsorized_mean_from_plan

    def wrapped(vectors, plan, *, random_state=None, n_jobs=None):
        calls.append((np.array(vectors, copy=True), plan, random_state))
        return real(vectors, plan, random_state=random_state, n_jobs=n_jobs)

    monkeypatch.setattr(ps, "winsorized_mean_from_plan", wrapped)
    return calls


@pytest.fixture
def stub(monkeypatch):
    """Replace the releases by a free stub that records the candidate index.

    Candidate k's column is the constant ``k / 16`` (shifted by ``-B/2`` with
    ``B = 1``), so the index is read back from the vector.
    """
    drawn = []

    def fake(vectors, plan, *, random_state=None, n_jobs=None):
        drawn.append(int(round((vectors[0, 0] + 0.5) * 16)))
        return np.zeros(1)

    monkeypatch.setattr(ps, "winsorized_mean_from_plan", fake)
    return drawn


def _constant_losses(K, n):
    return np.repeat((np.arange(K) / 16.0)[:, None], n, axis=1)


# ------------------------------------------------------------ privacy core
@pytest.mark.parametrize("eps", [1e-3, 0.1, 0.7, 1.0, 2.9, 7.3, 100.0])
def test_call_budget_is_a_third_and_composes_to_at_most_epsilon(eps):
    call = random_stopping_call_budget(eps)
    assert isinstance(call, PureDP)
    assert call.epsilon == pytest.approx(eps / 3, rel=1e-15)
    assert 3 * call.epsilon <= eps
    assert random_stopping_privacy(call, 0.1).epsilon <= eps


@pytest.mark.parametrize("eps0,gamma,L", [(1 / 3, 0.1, 300), (0.25, 0.5, 40),
                                          (1.0, 0.002, 20_000), (2.0, 1.0, 1)])
def test_capped_privacy_is_liu_talwar_plus_total_variation(eps0, gamma, L):
    uncapped = random_stopping_privacy(PureDP(eps0), gamma)
    assert uncapped == PureDP(3 * eps0)
    capped = random_stopping_privacy(PureDP(eps0), gamma, max_iter=L)
    assert isinstance(capped, ApproxDP)
    assert capped.epsilon == 3 * eps0
    assert capped.delta == pytest.approx(_capped_delta(3 * eps0, gamma, L),
                                         rel=1e-9, abs=0)


@pytest.mark.parametrize("eps,gamma,delta", [(1.0, 0.01, 1e-12), (0.1, 0.2, 1e-6),
                                             (5.0, 0.0005, 1e-9), (1.0, 1.0, 0.5)])
def test_max_iter_is_the_smallest_cap_meeting_delta(eps, gamma, delta):
    L = random_stopping_max_iter(eps, gamma, delta)
    assert _capped_delta(eps, gamma, L) <= delta
    if L > 1:
        assert _capped_delta(eps, gamma, L - 1) > delta
    # about log((1 + e^eps)/delta)/gamma, the brief's ceil(log(1/delta)/gamma)
    # up to the (1 + e^eps) factor.
    assert L <= math.ceil(math.log((1 + math.exp(eps)) / delta) / gamma)


def test_privacy_core_rejects_bad_inputs():
    with pytest.raises(ValueError):
        random_stopping_call_budget(0.0)
    with pytest.raises(ValueError):
        random_stopping_call_budget(float("inf"))
    with pytest.raises(TypeError):
        random_stopping_privacy(ApproxDP(1.0, 1e-6), 0.1)
    for gamma in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError):
            random_stopping_privacy(PureDP(1.0), gamma)
    with pytest.raises(ValueError):
        random_stopping_privacy(PureDP(1.0), 0.1, max_iter=0)
    for delta in (0.0, 1.0):
        with pytest.raises(ValueError):
            random_stopping_max_iter(1.0, 0.1, delta)


# ---------------------------------------------- parameters actually used
@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("eps", [0.7, 1.0, 3.0])
def test_every_release_uses_a_third_of_epsilon(recorder, calibration, eps):
    rng = np.random.default_rng(1)
    L = rng.uniform(0.0, 2.0, size=(3, 400))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        result = private_selection(L, epsilon=eps, loss_bound=2.0, tau=0.1,
                                   alpha=0.9, calibration=calibration,
                                   random_state=3)
    assert isinstance(result, SelectionResult)
    assert len(recorder) == result.n_iterations >= 1
    assert result.call_budget == PureDP(eps / 3)
    for vectors, plan, seed in recorder:
        assert plan is result.plan
        assert plan.n_users == 400 and plan.n_features == 1
        assert plan.value_range == 1.0  # [0, B] shifted to [-B/2, B/2]
        assert plan.loss.epsilon <= eps / 3
        assert plan.loss.epsilon == pytest.approx(eps / 3, rel=1e-6)
        if calibration == "paper":
            assert plan.route == "paper"
            assert plan.range_epsilon == pytest.approx(eps / 6, rel=1e-12)
            assert plan.halfwidth == pytest.approx(3 * result.tau)  # [E3]
        # Each release sees one candidate's column, shifted by -B/2.
        assert any(np.array_equal(vectors[:, 0], row - 1.0) for row in L)
    # Fresh randomness: a distinct child stream for every release.
    keys = {tuple(seed.spawn_key) for _, _, seed in recorder}
    assert len(keys) == len(recorder)
    loss = result.privacy_loss
    assert loss.epsilon == 3 * result.plan.loss.epsilon <= eps
    assert loss.delta == pytest.approx(
        _capped_delta(loss.epsilon, result.stop_probability, result.max_iter),
        rel=1e-9)
    assert loss.delta <= 1e-12


@pytest.mark.parametrize("K,alpha", [(1, 0.5), (4, 0.1), (50, 0.01)])
def test_public_parameters(stub, K, alpha):
    L = np.full((K, 30), 0.5)
    result = private_selection(L, epsilon=1.0, loss_bound=1.0, tau=0.2,
                               alpha=alpha, cap_delta=1e-9, random_state=0)
    assert result.stop_probability == pytest.approx(alpha / (5 * K), rel=1e-15)
    gamma = result.stop_probability
    assert result.max_iter == random_stopping_max_iter(1.0, gamma, 1e-9)
    need = math.log((1 + math.e) / 1e-9)
    assert result.max_iter == math.ceil(need / -math.log1p(-gamma))
    assert result.max_iter <= math.ceil(need / gamma)
    assert result.privacy_loss.delta <= 1e-9
    assert result.privacy_loss.epsilon <= 1.0
    assert 1 <= result.n_iterations <= result.max_iter


def test_tau_rules():
    L = np.full((4, 1000), 0.5)
    spread = math.sqrt((math.log(4 * 1000) + math.log(10 / 0.2)) / 50)
    auto = private_selection(L, epsilon=1.0, loss_bound=3.0, samples_per_user=50,
                             alpha=0.2, random_state=0)
    assert auto.tau == pytest.approx(3.0 * spread / math.sqrt(2), rel=1e-12)
    paper = private_selection(L, epsilon=1.0, loss_bound=3.0, samples_per_user=50,
                              alpha=0.2, tau="paper", random_state=0)
    assert paper.tau == pytest.approx(1.5 * spread, rel=1e-12)  # Theorem 6
    fixed = private_selection(L, epsilon=1.0, loss_bound=3.0, tau=0.3,
                              random_state=0)
    assert fixed.tau == 0.3
    # The plan is built on the tau actually used.
    assert auto.plan.tau == auto.tau and paper.plan.tau == paper.tau


# ------------------------------------------------------ stopping rule
@pytest.mark.parametrize("K,alpha", [(2, 1.0), (3, 0.6)])
def test_number_of_iterations_is_geometric(stub, K, alpha):
    """Mean #releases = 1/gamma = 5K/alpha; candidates uniform."""
    R = 2000
    n_iter = np.array([
        private_selection(_constant_losses(K, 3), epsilon=1.0, loss_bound=1.0,
                          tau=0.5, alpha=alpha, random_state=s).n_iterations
        for s in range(R)
    ])
    gamma = alpha / (5 * K)
    assert len(stub) == n_iter.sum()
    # The cap (delta 1e-12) changes the mean by < 1e-10: the law is Geometric.
    sd = math.sqrt(1 - gamma) / gamma
    assert abs(n_iter.mean() - 1 / gamma) <= _z() * sd / math.sqrt(R)
    p1 = np.mean(n_iter == 1)  # P[stop after the first release] = gamma
    assert abs(p1 - gamma) <= _z() * math.sqrt(gamma * (1 - gamma) / R)
    counts = np.bincount(stub, minlength=K)
    assert counts.shape == (K,)
    chi2 = ((counts - counts.sum() / K) ** 2 / (counts.sum() / K)).sum()
    assert chi2 <= stats.chi2.isf(P_FALSE_ALARM, K - 1)


def test_cap_truncates_the_loop(stub):
    """An explicit cap L: P[n_iterations = L] = (1 - gamma)^(L - 1)."""
    gamma, eps, cap_delta = 0.1, 1.0, 0.5
    L = random_stopping_max_iter(eps, gamma, cap_delta)
    assert L == 20
    R = 2000
    n_iter = np.array([
        private_selection(_constant_losses(2, 3), epsilon=eps, loss_bound=1.0,
                          tau=0.5, alpha=1.0, max_iter=L, cap_delta=cap_delta,
                          random_state=s).n_iterations
        for s in range(R)
    ])
    assert n_iter.max() == L
    p = (1 - gamma) ** (L - 1)
    assert abs(np.mean(n_iter == L) - p) <= _z() * math.sqrt(p * (1 - p) / R)
    with pytest.raises(ValueError, match="cap_delta"):
        private_selection(_constant_losses(2, 3), epsilon=eps, loss_bound=1.0,
                          tau=0.5, alpha=1.0, max_iter=L - 1, cap_delta=cap_delta)


# ------------------------------------------------------ data independence
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_public_outputs_do_not_depend_on_the_data(recorder, calibration):
    rng = np.random.default_rng(5)
    A = rng.uniform(0, 1, size=(4, 300))
    Bdata = rng.beta(0.2, 0.2, size=(4, 300))
    Bdata[1, :7] = np.nan  # sanitised per user
    results, logs = [], []
    for data in (A, Bdata):
        recorder.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            results.append(private_selection(
                data, epsilon=1.0, loss_bound=1.0, samples_per_user=40, alpha=0.5,
                calibration=calibration, random_state=11))
        logs.append([(plan, tuple(seed.spawn_key), seed.entropy)
                     for _, plan, seed in recorder])
    ra, rb = results
    for field in ("n_iterations", "privacy_loss", "stop_probability", "tau",
                  "max_iter", "call_budget", "plan"):
        assert getattr(ra, field) == getattr(rb, field), field
    assert logs[0] == logs[1]

    # The sequence of candidates drawn is the same too.
    def drawn(data, calls):
        clean = np.clip(np.nan_to_num(data, nan=1.0), 0, 1) - 0.5
        return [next(k for k in range(4) if np.array_equal(v[:, 0], clean[k]))
                for v, _, _ in calls]

    recorder.clear()
    private_selection(A, epsilon=1.0, loss_bound=1.0, samples_per_user=40,
                      alpha=0.5, calibration="tight", random_state=11)
    seq_a = drawn(A, list(recorder))
    recorder.clear()
    private_selection(Bdata, epsilon=1.0, loss_bound=1.0, samples_per_user=40,
                      alpha=0.5, calibration="tight", random_state=11)
    assert drawn(Bdata, list(recorder)) == seq_a


def test_reproducible_with_a_seed():
    L = np.random.default_rng(0).uniform(size=(3, 200))
    a = private_selection(L, epsilon=1.0, loss_bound=1.0, tau=0.1, alpha=0.5,
                          random_state=7)
    b = private_selection(L, epsilon=1.0, loss_bound=1.0, tau=0.1, alpha=0.5,
                          random_state=7)
    assert a == b


# ------------------------------------------------------ accuracy (Thm 6)
def _user_losses(rng, p, n, m):
    """Average 0/1 losses of m rows per user; candidate k errs w.p. p[k]."""
    return rng.binomial(m, np.asarray(p)[:, None], size=(len(p), n)) / m


@pytest.mark.parametrize("calibration", ["paper", "tight"])
@pytest.mark.parametrize("p", [(0.2, 0.3, 0.4, 0.5), (0.30, 0.31, 0.32, 0.6)])
def test_excess_risk_within_corrected_theorem6(calibration, p):
    """Excess empirical risk <= the corrected bound w.p. >= 1 - alpha."""
    n, m, K, eps, alpha, R = 2000, 50, len(p), 1.0, 0.2, 40
    bound = theorem6_error_bound(n, K, samples_per_user=m, epsilon=eps,
                                 loss_bound=1.0, alpha=alpha, halfwidth=3.0)
    assert n >= bound.min_users  # Theorem 6's condition (corrected, [E16])
    rng = np.random.default_rng(2024)
    failures = 0
    for r in range(R):
        L = _user_losses(rng, p, n, m)
        result = private_selection(L, epsilon=eps, loss_bound=1.0,
                                   samples_per_user=m, alpha=alpha,
                                   calibration=calibration, random_state=r)
        assert result.tau == bound.tau
        if r == 0:
            # The formula assumes release noise of scale <= 12h/(n eps) with
            # h = 3 tau (Laplace in grid units times the grid, per user), up
            # to the lattice's widening (< 1 + 2^-10).
            plan = result.plan
            scale = float(plan.noise.scale) * plan.grid / n
            assert scale <= 36 * bound.tau / (n * eps) * (1 + 2**-10)
        risks = L.mean(axis=1)
        failures += risks[result.index] - risks.min() > bound.excess_risk
    # failures ~ Binomial(R, <= alpha): reject only on strong evidence.
    assert failures <= stats.binom.isf(P_FALSE_ALARM, R, alpha)


def test_theorem6_constants():
    kw = dict(samples_per_user=100, epsilon=1.0, loss_bound=1.0, alpha=0.1)
    printed = theorem6_error_bound(5000, 8, tau="paper", halfwidth=2.0, **kw)
    assert printed.constant == pytest.approx(24.0, rel=1e-12)  # [E16]: 8 -> 24
    ours_printed_tau = theorem6_error_bound(5000, 8, tau="paper", **kw)
    assert ours_printed_tau.constant == pytest.approx(36.0, rel=1e-12)
    ours = theorem6_error_bound(5000, 8, **kw)
    assert ours.constant == pytest.approx(36.0 * math.sqrt(2), rel=1e-12)
    # The closed form of the printed bound with the corrected constant.
    K, n, m, a = 8, 5000, 100, 0.1
    closed = 24 / (n * math.sqrt(m)) * math.log(25 * K * math.log(5 / a) / a**2) \
        * math.sqrt(math.log(K * n) + math.log(10 / a))
    assert printed.excess_risk == pytest.approx(closed, rel=1e-12)
    tau = 0.5 * math.sqrt((math.log(K * n) + math.log(10 / a)) / m)
    assert printed.min_users == pytest.approx(
        24 * math.log(25 * math.log(5 / a) / a**2 * K / tau), rel=1e-12)
    # 1/n and 1/eps scaling (up to log(Kn) in tau).
    half_eps = theorem6_error_bound(5000, 8, tau=0.1, **{**kw, "epsilon": 2.0})
    full_eps = theorem6_error_bound(5000, 8, tau=0.1, **kw)
    assert half_eps.excess_risk == pytest.approx(full_eps.excess_risk / 2)
    assert half_eps.min_users == pytest.approx(full_eps.min_users / 2)


def test_accuracy_warning_only_from_public_values():
    L = np.full((3, 50), 0.5)
    with pytest.warns(AccuracyWarning, match="alpha/5"):
        private_selection(L, epsilon=1.0, loss_bound=1.0, tau=0.01,
                          calibration="paper", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        private_selection(L, epsilon=1.0, loss_bound=1.0, tau=0.01,
                          calibration="tight", random_state=0)


# ------------------------------------------------------ empirical audit
def _audit(calibration, eps, n_runs, seed):
    """Worst-case neighbours: 2 users, 2 candidates; one user's losses move
    to the opposite end of [0, B]."""
    D = np.array([[0.0, 0.0], [1.0, 1.0]])
    D_prime = D.copy()
    D_prime[:, 0] = [1.0, 0.0]
    stats_ = []
    for shift, data in enumerate((D, D_prime)):
        out = []
        for r in range(n_runs):
            res = private_selection(data, epsilon=eps, loss_bound=1.0, tau=0.25,
                                    alpha=1.0, calibration=calibration,
                                    random_state=seed + 2 * r + shift)
            out.append(10.0 * res.index + res.value)  # the whole output (J, V)
        stats_.append(np.array(out))
    return epsilon_lower_bound(stats_[0], stats_[1], delta=res.privacy_loss.delta,
                               epsilon_claimed=eps, random_state=seed), res


def test_audit_of_the_whole_selection():
    result, res = _audit("tight", 4.0, 800, 0)
    assert res.privacy_loss.epsilon <= 4.0
    assert not result.violation, str(result)
    assert result.epsilon_lower <= 4.0


@pytest.mark.slow
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_audit_of_the_whole_selection_many_runs(calibration):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        result, _ = _audit(calibration, 6.0, 4000, 100)
    assert not result.violation, str(result)


# ------------------------------------------------------ inputs
@pytest.mark.parametrize("bad", [np.zeros(5), np.zeros((2, 3, 4)), np.zeros((0, 5)),
                                 np.zeros((3, 0)), [["a", "b"]]])
def test_bad_shapes_are_rejected(bad):
    with pytest.raises(ValueError):
        private_selection(bad, epsilon=1.0, loss_bound=1.0, tau=0.1)


@pytest.mark.parametrize("kw", [dict(epsilon=0.0), dict(epsilon=-1.0),
                                dict(epsilon=float("nan")), dict(epsilon=np.inf),
                                dict(loss_bound=0.0), dict(alpha=0.0),
                                dict(alpha=1.5), dict(cap_delta=0.0),
                                dict(cap_delta=1.0), dict(tau=-0.1),
                                dict(tau="median"), dict(max_iter=0),
                                dict(max_iter=2.5), dict(calibration="exact")])
def test_bad_parameters_are_rejected(kw):
    args = dict(epsilon=1.0, loss_bound=1.0, tau=0.1, **{})
    args.update(kw)
    with pytest.raises(ValueError):
        private_selection(np.full((2, 10), 0.5), **args)


@pytest.mark.parametrize("tau", ["auto", "paper"])
def test_tau_rule_needs_samples_per_user(tau):
    with pytest.raises(ValueError, match="samples_per_user"):
        private_selection(np.full((2, 10), 0.5), epsilon=1.0, loss_bound=1.0,
                          tau=tau)
    with pytest.raises(ValueError, match="samples_per_user"):
        theorem6_error_bound(10, 2, samples_per_user=None, epsilon=1.0,
                             loss_bound=1.0)


def test_non_finite_and_out_of_range_losses_are_projected_per_user():
    """NaN -> B, +inf -> B, -inf and negatives -> 0, > B -> B: the output is
    exactly that of the projected table (same seed), so nothing else leaks."""
    rng = np.random.default_rng(3)
    L = rng.uniform(0, 2, size=(3, 100))
    dirty = L.copy()
    dirty[0, :5] = np.nan
    dirty[1, 3] = np.inf
    dirty[2, 7] = -np.inf
    dirty[2, 8] = -5.0
    dirty[1, 9] = 7.0
    kept = dirty.copy()
    clean = np.clip(np.where(np.isnan(dirty), 2.0, dirty), 0.0, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning about the data
        a = private_selection(dirty, epsilon=1.0, loss_bound=2.0, tau=0.1,
                              random_state=4)
    b = private_selection(clean, epsilon=1.0, loss_bound=2.0, tau=0.1,
                          random_state=4)
    assert a == b
    assert np.isfinite(a.value)
    np.testing.assert_array_equal(dirty, kept)  # input not modified


def test_single_candidate():
    result = private_selection(np.full((1, 50), 0.3), epsilon=1.0, loss_bound=1.0,
                               tau=0.1, alpha=0.5, random_state=0)
    assert result.index == 0
    assert result.stop_probability == pytest.approx(0.1)
    assert result.privacy_loss.epsilon <= 1.0
    assert result.privacy_loss.delta <= 1e-12


def test_single_user():
    result = private_selection([[0.1], [0.9]], epsilon=1.0, loss_bound=1.0,
                               tau=0.1, random_state=0)
    assert result.index in (0, 1) and np.isfinite(result.value)


# ------------------------------------------------------ estimator utility
def _ridge_problem(seed=0, n_users=1500, m=8):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=4)
    X_pub = rng.normal(size=(15, 4))
    y_pub = X_pub @ w + rng.normal(size=15)
    candidates = [Ridge(alpha=a).fit(X_pub, y_pub) for a in (0.01, 3.0, 1e4)]
    X = rng.normal(size=(n_users * m, 4))
    y = X @ w + rng.normal(size=n_users * m)
    groups = np.repeat(np.arange(n_users), m)
    return candidates, X, y, groups


def test_select_model_privately_end_to_end():
    candidates, X, y, groups = _ridge_problem()
    before = [pickle.dumps(c) for c in candidates]
    X0, y0, g0 = X.copy(), y.copy(), groups.copy()
    best, result = select_model_privately(
        candidates, X, y, groups=groups, epsilon=1.0, loss_bound=20.0,
        samples_per_user=8, alpha=0.5, random_state=0)
    risks = [np.mean(np.minimum((c.predict(X) - y) ** 2, 20.0)) for c in candidates]
    assert best is candidates[int(np.argmin(risks))]
    assert best is candidates[result.index]
    assert result.plan.n_users == 1500
    assert result.privacy_loss.epsilon <= 1.0
    # Nothing is mutated.
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(groups, g0)
    assert [pickle.dumps(c) for c in candidates] == before
    # Same as the core on the per-user table of clipped squared errors.
    rows = np.stack([np.minimum((c.predict(X) - y) ** 2, 20.0) for c in candidates])
    table = rows.reshape(3, 1500, 8).mean(axis=2)
    core = private_selection(table, epsilon=1.0, loss_bound=20.0,
                             samples_per_user=8, alpha=0.5, random_state=0)
    assert core.index == result.index and core.n_iterations == result.n_iterations
    assert core.value == pytest.approx(result.value, abs=1e-9)


def test_select_model_privately_item_level_warning():
    candidates, X, y, _ = _ridge_problem(n_users=100, m=2)
    with pytest.warns(ItemLevelPrivacyWarning, match="item-level"):
        best, result = select_model_privately(
            candidates, X, y, groups=None, epsilon=1.0, loss_bound=20.0, tau=1.0,
            alpha=0.5, random_state=0)
    assert result.plan.n_users == 200  # every row is its own user


def test_select_model_privately_log_loss_and_callable():
    rng = np.random.default_rng(1)
    X_pub = rng.normal(size=(200, 3))
    y_pub = (X_pub[:, 0] > 0).astype(int)
    good = LogisticRegression().fit(X_pub, y_pub)
    bad = LogisticRegression().fit(X_pub, 1 - y_pub)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] > 0).astype(int)
    groups = np.repeat(np.arange(1000), 3)
    best, _ = select_model_privately([bad, good], X, y, groups=groups, epsilon=1.0,
                                     loss="log_loss", loss_bound=5.0, tau=0.5,
                                     alpha=0.5, random_state=0)
    assert best is good
    # A label no candidate knows counts as the worst loss, not an error.
    y_new = y.copy()
    y_new[:10] = 7
    best, _ = select_model_privately([bad, good], X, y_new, groups=groups,
                                     epsilon=1.0, loss="log_loss", loss_bound=5.0,
                                     tau=0.5, alpha=0.5, random_state=0)
    assert best is good

    def zero_one(est, X, y):
        return (est.predict(X) != y).astype(float)

    best, result = select_model_privately([bad, good], X, y, groups=groups,
                                          epsilon=1.0, loss=zero_one, loss_bound=1.0,
                                          samples_per_user=3, alpha=0.5,
                                          random_state=0)
    assert best is good and result.index == 1
    with pytest.raises(ValueError, match="one value per row"):
        select_model_privately([good], X, y, groups=groups, epsilon=1.0,
                               loss=lambda e, X, y: np.zeros(3), loss_bound=1.0,
                               tau=0.5)


class _NaNModel(BaseEstimator):
    """A fitted 'estimator' whose predictions are NaN on some rows."""

    def __init__(self, offset=0.0):
        self.offset = offset

    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def predict(self, X):
        out = np.full(len(X), self.offset)
        out[::7] = np.nan
        return out


def test_select_model_privately_nan_predictions_count_as_worst():
    X = np.zeros((600, 1))
    y = np.zeros(600)
    groups = np.repeat(np.arange(200), 3)
    models = [_NaNModel(0.9).fit(X), _NaNModel(0.1).fit(X)]
    best, result = select_model_privately(
        models, X, y, groups=groups, epsilon=1.0, loss_bound=1.0, tau=0.5,
        alpha=0.5, random_state=0)
    assert best is models[1] and np.isfinite(result.value)
    rows = np.stack([np.full(600, 0.81), np.full(600, 0.01)])
    rows[:, ::7] = 1.0  # NaN prediction -> the worst loss B
    core = private_selection(rows.reshape(2, 200, 3).mean(axis=2), epsilon=1.0,
                             loss_bound=1.0, tau=0.5, alpha=0.5, random_state=0)
    assert core.index == result.index
    assert core.value == pytest.approx(result.value, abs=1e-9)


def test_select_model_privately_bad_inputs():
    candidates, X, y, groups = _ridge_problem(n_users=50, m=2)
    kw = dict(groups=groups, epsilon=1.0, loss_bound=10.0, tau=1.0)
    with pytest.raises(NotFittedError):
        select_model_privately([Ridge()], X, y, **kw)
    with pytest.raises(ValueError):
        select_model_privately([], X, y, **kw)
    with pytest.raises(ValueError, match="loss"):
        select_model_privately(candidates, X, y, loss="hinge", **kw)
    with pytest.raises(ValueError, match="rows"):
        select_model_privately(candidates, X, y[:-1], **kw)
    with pytest.raises(ValueError):
        select_model_privately(candidates, X, y, **{**kw, "groups": groups[:-1]})
    with pytest.raises(ValueError):
        select_model_privately(candidates, X, y, **{**kw, "epsilon": 0.0})
    with pytest.raises(ValueError, match="samples_per_user"):
        select_model_privately(candidates, X, y, **{**kw, "tau": "auto"})
