"""Tests of ColumnScaledMeanEstimator (the docs' worked example of a new
estimator): its privacy, and its accuracy on columns in different units.

Everything every estimator must pass -- scikit-learn's common checks, the
bad-input matrix, metadata routing, the demo, the top-level export, the
docstring example -- runs on it automatically (tests/test_common.py, ...).
"""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import ClipNoiseMeanEstimator, ColumnScaledMeanEstimator
from skuserdp.mean._column_scaled import choose_column_noise
from skuserdp.privacy import PureDP, ZCDP, zcdp_to_approx_dp
from skuserdp.testing import audit_estimator, worst_case_mean_neighbours

#: two columns in different units: a share in [0, 1] and a count in [0, 20000]
BOX = ([0.0, 0.0], [1.0, 20000.0])


def _panel(n_users=3000, seed=0):
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), 4)
    X = np.column_stack([rng.beta(2, 5, users.size),
                         rng.gamma(2.0, 2000.0, users.size).clip(0, 20000)])
    return X, users


def _relative_errors(est, X, users, truth, seeds):
    return np.array([np.abs(est.set_params(random_state=s).fit(X, groups=users)
                            .mean_ / truth - 1) for s in seeds])


def test_spend_is_the_budget():
    X, users = _panel()
    pure = ColumnScaledMeanEstimator(delta=0.0, bounds=BOX, random_state=0)
    assert isinstance(pure.fit(X, groups=users).privacy_loss_, PureDP)
    assert 1 - 1e-6 < pure.epsilon_ <= 1.0 and pure.delta_ == 0.0
    # two columns at (1, 1e-6): Laplace has the smaller noise, and spends no δ
    auto = ColumnScaledMeanEstimator(bounds=BOX, random_state=0).fit(X, groups=users)
    assert auto.noise_ == "laplace" and isinstance(auto.privacy_loss_, PureDP)
    assert auto.delta_ == 0.0
    zcdp = ColumnScaledMeanEstimator(bounds=BOX, noise="gaussian",
                                     random_state=0).fit(X, groups=users)
    assert isinstance(zcdp.privacy_loss_, ZCDP) and zcdp.epsilon_ <= 1.0
    assert 1.0 - 1e-6 < zcdp.epsilon_ and zcdp.noise_ == "gaussian"
    with pytest.raises(ValueError, match="delta > 0"):
        ColumnScaledMeanEstimator(delta=0.0, bounds=BOX, noise="gaussian").fit(
            X, groups=users)


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-6), (0.3, 1e-8), (4.0, 1e-5)])
def test_noise_choice_is_the_smaller_planned_variance(eps, delta):
    # the public plan compares the two releases' per-column noise variance:
    # Laplace's grows as d², the Gaussian's as d, so there is one crossover
    picks = []
    for d in range(1, 40):
        name, plan = choose_column_noise(1000, d, eps, delta)
        lap = choose_column_noise(1000, d, eps, delta, noise="laplace")[1]
        gau = choose_column_noise(1000, d, eps, delta, noise="gaussian")[1]
        assert plan.noise_variance == min(lap.noise_variance, gau.noise_variance)
        # Laplace: 2·(width/2 · 2d/(n ε))² per scaled column, up to the lattice
        assert lap.noise_variance == pytest.approx(2 * (2 * d / (1000 * eps)) ** 2,
                                                   rel=1e-3)
        picks.append(name)
    first = picks.index("gaussian")
    assert set(picks[first:]) == {"gaussian"} and set(picks[:first]) == {"laplace"}
    if (eps, delta) == (1.0, 1e-6):
        # the spec's crossover (real_data_means.md §1.3: d* ≈ 10.3 through the
        # tight zCDP conversion)
        assert first + 1 == 11


def test_the_narrow_column_survives_the_wide_one():
    # Isotropic clip-and-noise (ClipNoise with its ball declared in the units
    # of X: the box's circumscribed ball) adds the same noise to both
    # columns: the share's error is then about 20000 times its range; here
    # each column's noise is scaled to its own box
    X, users = _panel()
    truth = np.mean([X[users == u].mean(axis=0) for u in range(3000)], axis=0)
    ours = _relative_errors(ColumnScaledMeanEstimator(bounds=BOX), X, users,
                            truth, range(5))
    # (with its ball declared it uses no box, so it cannot warn)
    lo, hi = np.array(BOX[0]), np.array(BOX[1])
    isotropic = ClipNoiseMeanEstimator(bounds=BOX, radius=np.linalg.norm(hi - lo) / 2,
                                       center=(lo + hi) / 2)
    iso = _relative_errors(isotropic, X, users, truth, range(5))
    assert ours.max() < 0.05
    assert iso[:, 0].max() > 10 * ours[:, 0].max()
    # ClipNoise on the box alone now scales its columns the same way
    scaled = _relative_errors(ClipNoiseMeanEstimator(bounds=BOX), X, users, truth,
                              range(5))
    assert scaled.max() < 0.05


def test_bias_vanishes_as_epsilon_grows():
    X, users = _panel()
    truth = np.mean([X[users == u].mean(axis=0) for u in range(3000)], axis=0)
    est = ColumnScaledMeanEstimator(epsilon=1e4, bounds=BOX)
    assert _relative_errors(est, X, users, truth, range(3)).max() < 1e-4


@pytest.mark.parametrize("delta, noise", [(0.0, "laplace"), (1e-6, "gaussian")])
def test_audit_passes_and_flags_a_box_read_off_the_data(delta, noise, monkeypatch):
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1, radius=1.0, rows_per_user=2)
    # ci_share=0: the estimate's release alone (the interval's releases have
    # their own audits in tests/mean/test_intervals.py)
    est = ColumnScaledMeanEstimator(delta=delta, bounds=(-1.0, 1.0), noise=noise,
                                    ci_share=0.0)
    ok = audit_estimator(est, X, Xp, groups=g, groups_prime=gp, n_runs=2000,
                         random_state=0)
    assert not ok.violation, str(ok)
    # positive control: the release planned with 4 times the budget it
    # claims (noise 4 times too small)
    real = ColumnScaledMeanEstimator._fit_user_means

    def greedy(self, U, budget):
        return real(self, U, dataclasses.replace(budget, epsilon=4 * budget.epsilon))

    monkeypatch.setattr(ColumnScaledMeanEstimator, "_fit_user_means", greedy)
    bad = audit_estimator(est, X, Xp, groups=g, groups_prime=gp, n_runs=2000,
                          epsilon_claimed=1.0, random_state=0)
    assert bad.violation, str(bad)


# ------------------------------------------------ the clipped-users check

def _cut_panel(n_users=6000, seed=0):
    # column 0 in its box; column 1: 30 % of the users' means above 10
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), 2)
    X = np.column_stack([rng.uniform(0, 1, users.size),
                         np.where(np.repeat(rng.random(n_users) < 0.3, 2), 14.0,
                                  rng.uniform(0, 10, users.size))])
    return X, users


def test_clip_check_plan_is_exact_and_gated():
    from skuserdp.mean._column_scaled import (
        CLIP_CHECK_MAX_SD, CLIP_CHECK_SHARE, plan_column_scaled)
    from skuserdp.privacy import zcdp_rho_for
    for n, d, delta in [(6000, 2, 1e-6), (20000, 30, 1e-6), (6000, 3, 0.0)]:
        plan = plan_column_scaled(n, d, 1.0, delta)
        assert plan.check is not None
        if plan.noise == "laplace":
            # discrete Laplace on counts of l1 sensitivity d at 5 % of epsilon,
            # the release at the rest: exactly epsilon in all
            assert plan.check.privacy(d).epsilon == pytest.approx(
                CLIP_CHECK_SHARE, rel=1e-5)
            assert plan.check.privacy(d).epsilon <= CLIP_CHECK_SHARE
            assert plan.loss.epsilon <= 1.0 and plan.loss.epsilon > 1 - 1e-5
            assert isinstance(plan.loss, PureDP)
        else:
            # discrete Gaussian on counts of l2 sensitivity sqrt(d) at 5 % of rho
            rho = zcdp_rho_for(1.0, delta)
            assert plan.check.privacy(np.sqrt(d)).rho <= CLIP_CHECK_SHARE * rho
            assert plan.check.privacy(np.sqrt(d)).rho == pytest.approx(
                CLIP_CHECK_SHARE * rho, rel=1e-5)
            assert isinstance(plan.loss, ZCDP) and plan.loss.rho <= rho
        assert plan.clip_noise_tail <= CLIP_CHECK_MAX_SD * n
        # the tail: Laplace b·ln(d/(2β)) or Gaussian σ·Φ⁻¹(1 − β/d), β = 1e-3
        b = (float(plan.check.scale) if plan.noise == "laplace"
             else np.sqrt(float(plan.check.sigma2)))
        expect = (b * np.log(d / 2e-3) if plan.noise == "laplace"
                  else b * stats.norm.isf(1e-3 / d))
        assert plan.clip_noise_tail == pytest.approx(expect, abs=1.0, rel=1e-3)
    # too few users for an informative count: no check, the whole budget
    # goes to the release
    few = plan_column_scaled(2000, 4, 1.0, 1e-6)
    assert few.check is None and few.loss == few.release.loss
    assert plan_column_scaled(6000, 2, 1.0, 1e-6, check_clipping=False).check is None


def test_clip_check_names_the_cut_column_and_only_it():
    X, users = _cut_panel()
    est = ColumnScaledMeanEstimator(bounds=([0, 0], [1, 10]), random_state=0)
    with pytest.warns(AccuracyWarning, match=r"cut the users' means of feature\(s\) "
                      r"\[1\]: about (2[5-9]|3[0-5]) %"):
        est.fit(X, groups=users)
    # 30 % of 6000 users outside column 1's box, none outside column 0's,
    # within 4 standard deviations of the count noise
    sd = est.clipped_users_std_
    assert abs(est.clipped_users_[1] - 0.3 * 6000) < 4 * sd + 60  # binomial
    assert abs(est.clipped_users_[0]) < 4 * sd
    # a box that holds the users: no warning, counts near 0
    ok = ColumnScaledMeanEstimator(bounds=([0, 0], [1, 20]), random_state=0)
    ok.fit(X, groups=users)
    assert np.all(np.abs(ok.clipped_users_) < 4 * ok.clipped_users_std_)


def test_clip_check_never_runs_on_a_learned_box_nor_when_off():
    X, users = _cut_panel()
    est = ColumnScaledMeanEstimator(bounds=([0, 0], [1, 10]), check_clipping=False,
                                    random_state=0)
    # (the clipped mean of column 1, about 6.5, is not at the box's edge:
    # without the check nothing warns -- which is why the check exists)
    est.fit(X, groups=users)
    assert not hasattr(est, "clipped_users_")
    learned = ColumnScaledMeanEstimator(random_state=0).fit(X, groups=users)
    assert not hasattr(learned, "clipped_users_")


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_audit_of_the_clip_check(delta, monkeypatch):
    # neighbours: one user moved from inside to outside the box in every
    # column; only the counts can see it (its clipped mean is the corner
    # either way), so the audit measures the check's privacy
    import skuserdp.mean._column_scaled as cs
    monkeypatch.setattr(cs, "CLIP_CHECK_MAX_SD", 1e9)  # informative or not
    n, d = 6, 1
    X = np.zeros((n, d))
    X[0] = 1.0   # on the box's edge ...
    Xp = X.copy()
    Xp[0] = 3.0  # ... and far outside: clipped to the same corner
    g = np.arange(n)
    est = ColumnScaledMeanEstimator(delta=delta, bounds=(-1.0, 1.0),
                                    noise="laplace" if delta == 0 else "gaussian")

    def released(fitted):
        return float(fitted.clipped_users_[0])

    # the audit's claim is the check's own share of the budget
    plan = cs.plan_column_scaled(n, d, 1.0, delta, noise=est.noise)
    loss = plan.check.privacy(1.0)
    claimed = (loss.epsilon if delta == 0
               else zcdp_to_approx_dp(loss.rho, delta).epsilon)
    assert claimed < 0.5
    ok = audit_estimator(est, X, Xp, groups=g, groups_prime=g, n_runs=3000,
                         epsilon_claimed=claimed, random_state=0,
                         statistic=released)
    assert not ok.violation, str(ok)
    # positive control: the counts noised for 10 times the check's budget
    real = cs.calibrate_noise

    def greedy(budget, sensitivity, **kw):
        return real(budget, sensitivity / 10.0, **kw)

    monkeypatch.setattr(cs, "calibrate_noise", greedy)
    bad = audit_estimator(est, X, Xp, groups=g, groups_prime=g, n_runs=3000,
                          epsilon_claimed=claimed, random_state=0,
                          statistic=released)
    assert bad.violation, str(bad)
