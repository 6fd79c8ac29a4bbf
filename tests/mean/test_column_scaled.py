"""Tests of ColumnScaledMeanEstimator (the docs' worked example of a new
estimator): its privacy, and its accuracy on columns in different units.

Everything every estimator must pass -- scikit-learn's common checks, the
bad-input matrix, metadata routing, the demo, the top-level export, the
docstring example -- runs on it automatically (tests/test_common.py, ...).
"""

import dataclasses

import numpy as np
import pytest

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import ClipNoiseMeanEstimator, ColumnScaledMeanEstimator
from skuserdp.mean._column_scaled import choose_column_noise
from skuserdp.privacy import PureDP, ZCDP
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
    # ClipNoise adds the same noise to both columns in the units of X: the
    # share's error is then about 20000 times its range; here each column's
    # noise is scaled to its own box
    X, users = _panel()
    truth = np.mean([X[users == u].mean(axis=0) for u in range(3000)], axis=0)
    ours = _relative_errors(ColumnScaledMeanEstimator(bounds=BOX), X, users,
                            truth, range(5))
    # (ClipNoise says so: its noise swamps the share's box, and the estimate
    # lands on its edge)
    with pytest.warns(AccuracyWarning, match=r"feature\(s\) \[0\]"):
        iso = _relative_errors(ClipNoiseMeanEstimator(bounds=BOX), X, users,
                               truth, range(5))
    assert ours.max() < 0.05
    assert iso[:, 0].max() > 10 * ours[:, 0].max()


def test_bias_vanishes_as_epsilon_grows():
    X, users = _panel()
    truth = np.mean([X[users == u].mean(axis=0) for u in range(3000)], axis=0)
    est = ColumnScaledMeanEstimator(epsilon=1e4, bounds=BOX)
    assert _relative_errors(est, X, users, truth, range(3)).max() < 1e-4


@pytest.mark.parametrize("delta, noise", [(0.0, "laplace"), (1e-6, "gaussian")])
def test_audit_passes_and_flags_a_box_read_off_the_data(delta, noise, monkeypatch):
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1, radius=1.0, rows_per_user=2)
    est = ColumnScaledMeanEstimator(delta=delta, bounds=(-1.0, 1.0), noise=noise)
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
