"""Tests of ColumnScaledMeanEstimator (the docs' worked example of a new
estimator): its privacy, and its accuracy on columns in different units.

Everything every estimator must pass -- scikit-learn's common checks, the
bad-input matrix, metadata routing, the demo, the top-level export, the
docstring example -- runs on it automatically (tests/test_common.py, ...).
"""

import dataclasses

import numpy as np
import pytest

from skuserdp.mean import ClipNoiseMeanEstimator, ColumnScaledMeanEstimator
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
    zcdp = ColumnScaledMeanEstimator(bounds=BOX, random_state=0).fit(X, groups=users)
    assert isinstance(zcdp.privacy_loss_, ZCDP) and zcdp.epsilon_ <= 1.0


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


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_audit_passes_and_flags_a_box_read_off_the_data(delta, monkeypatch):
    X, g, Xp, gp = worst_case_mean_neighbours(5, 1, radius=1.0, rows_per_user=2)
    est = ColumnScaledMeanEstimator(delta=delta, bounds=(-1.0, 1.0))
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
