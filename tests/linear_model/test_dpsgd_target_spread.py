"""The target-spread check of UserDPSGDRegressor (issue 31): a fit whose
prediction noise may reach the target's spread warns that it may be worse
than predicting the mean.

The release's privacy map (its share of the zCDP budget, composed into the
spend) is checked exactly in
``test_public_scale.py::test_dpsgd_default_spend_is_the_composition_of_its_releases``
and by the whole-fit audits of ``test_dpsgd.py`` (``mark.slow``), which run
the default path.
"""

import dataclasses
import math
import warnings

import numpy as np
import pytest

import skuserdp.linear_model._dpsgd as dpsgd_module
from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPSGDRegressor
from skuserdp.linear_model._dpsgd import (
    SPREAD_Z,
    _capped_parts,
    prediction_noise_bound,
    target_spread_lower_bound,
)
from skuserdp.linear_model._rows import InMemoryRows
from skuserdp.linear_model._sgd import plan_gradient_descent
from skuserdp.mechanisms import calibrate_noise
from skuserdp.privacy import ZCDP, zcdp_rho_for, zcdp_to_approx_dp
from skuserdp.testing import epsilon_lower_bound

MESSAGE = "UserDPSGDRegressor may be worse than predicting the mean"


def _plan(n_steps, learning_rate=None):
    return plan_gradient_descent(2000, 3, epsilon=1.0, delta=1e-6,
                                 n_steps=n_steps, aggregator="clip",
                                 gradient_bound=2.0, smoothness=1.0, radius=3.0,
                                 learning_rate=learning_rate)


def _noise_energy(plan, lams, n_reps, seed):
    """Monte Carlo of ``δᵀAδ`` (``A = diag(lams)``), ``δ`` the noise part of
    the plan's weighted output on a quadratic: ``e_{t+1} = (I − ηA)e_t +
    ηξ_t``, ``ξ_t ~ N(0, σ²I)``, ``e_0 = 0``."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(plan.release.noise_variance)
    lams = np.asarray(lams, dtype=float)
    e = np.zeros((n_reps, lams.size))
    out = np.zeros_like(e)
    for eta, w in zip(plan.learning_rates, plan.weights):
        e = (1.0 - eta * lams) * e + eta * sigma * rng.standard_normal(e.shape)
        out += w * e
    return np.einsum("rk,k,rk->r", out, lams, out)


def test_prediction_noise_bound_is_attained_by_one_step_at_the_largest_curvature():
    # T = 1, weight 1, λ = 1/η in every direction: δᵀAδ = ησ²·χ²_p, whose
    # mean is the bound's square exactly. 20000 draws: the mean of χ²_3/3
    # has sd √(2/(3·20000)) = 0.0058; 5 sds (two-sided p < 1e-6)
    plan = _plan(1, learning_rate=0.5)
    bound2 = prediction_noise_bound(plan) ** 2
    assert bound2 == pytest.approx(3 * 0.5 * plan.release.noise_variance, rel=1e-12)
    energy = _noise_energy(plan, [2.0, 2.0, 2.0], 20000, seed=0)
    assert abs(energy.mean() / bound2 - 1.0) < 5 * math.sqrt(2.0 / (3 * 20000))


@pytest.mark.parametrize("lams", [[1.0, 1.0, 1.0], [1.0, 0.1, 0.001],
                                  [1e-4, 1e-4, 1e-4]])
def test_prediction_noise_bound_holds_for_the_planned_schedule(lams):
    # the default schedule (100 steps of η ≤ 1/H, H = 1 ≥ λ_max, tail
    # averaging): the mean noise energy stays below the bound's square. Each
    # draw is at most a constant times χ²_3 (sd/mean ≤ √(2/3)·√3); 4000 draws:
    # the Monte Carlo mean is within 5·√2/√4000 = 0.11 of the truth (relative)
    plan = _plan(100)
    assert float(np.max(plan.learning_rates)) * max(lams) <= 1.0
    bound2 = prediction_noise_bound(plan) ** 2
    energy = _noise_energy(plan, lams, 4000, seed=1)
    assert energy.mean() <= bound2 * (1.0 + 5.0 * math.sqrt(2.0) / math.sqrt(4000))


def _parts(y, center, cap):
    return _capped_parts(center, cap, None, y).mean(axis=0)


def test_spread_lower_bound_is_exact_for_two_symmetric_points():
    # Z = ±a with probability 1/2: sd = a and 2·min(u₊, u₋) = a (tight;
    # a missing factor 2 or a wrong part fails)
    y = np.r_[np.full(50, 0.3), np.full(50, -0.1)]
    assert target_spread_lower_bound(_parts(y, 0.1, 1.0), 0.0) == pytest.approx(
        y.std(), rel=1e-12)


@pytest.mark.parametrize("center,cap", [(0.0, 10.0), (0.4, 10.0), (0.0, 0.3),
                                        (-1.5, 0.5)])
@pytest.mark.parametrize("law", ["normal", "exponential", "two_points"])
def test_spread_lower_bound_never_exceeds_the_sd(law, center, cap):
    # sd(ỹ) ≥ sd(Z) ≥ E|Z − EZ| ≥ 2·min(u₊, u₋): exact for every sample
    rng = np.random.default_rng(3)
    y = {"normal": rng.normal(0.2, 0.5, 5000),
         "exponential": rng.exponential(0.3, 5000) - 0.5,
         "two_points": np.where(rng.random(5000) < 0.2, 1.0, -0.2)}[law]
    lower = target_spread_lower_bound(_parts(y, center, cap), 0.0)
    assert lower <= y.std() + 1e-12
    # and the noise allowance is SPREAD_Z sds of each part
    assert target_spread_lower_bound(_parts(y, center, cap), 0.01 ** 2) == (
        pytest.approx(lower - 2 * SPREAD_Z * 0.01, abs=1e-12))


def _panel(seed, n_users=2000, m=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_users * m, 3))
    y = X @ np.array([1.0, -0.5, 0.25]) + rng.normal(size=n_users * m)
    return X, y, np.repeat(np.arange(n_users), m)


def _fit(target_bounds, seed):
    X, y, groups = _panel(seed)
    est = UserDPSGDRegressor(epsilon=1.0, bounds=(-4.0, 4.0),
                             target_bounds=target_bounds, random_state=seed)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        est.fit(X, y, groups=groups)
    return est, [str(w.message) for w in record
                 if issubclass(w.category, AccuracyWarning)]


@pytest.mark.parametrize("seed", range(5))
def test_warns_with_a_loose_target_box(seed):
    # target sd 1.2 in a box of half-width 300: 0.004 box units, below the
    # plan's noise bound N (0.007-0.008 in these fits; the fits themselves
    # lose 0.05-0.2 of R² to OLS). The parts are ~0.002 with noise sd 0.0005:
    # reaching L ≥ N needs both parts ≥ N/2 + 2 sds ≈ 0.005, i.e. a noise
    # draw > 5 sds up (p < 3e-7 per part)
    est, msgs = _fit((-300.0, 300.0), seed)
    assert any(m.startswith(MESSAGE) for m in msgs), msgs
    assert "tighter target_bounds" in next(m for m in msgs if m.startswith(MESSAGE))


@pytest.mark.parametrize("seed", range(5))
def test_no_warning_when_the_model_is_clearly_good(seed):
    # target box ±6 (5 sds): the fit is near OLS (R² 0.556-0.572) and
    # L ≈ 3N (parts ≈ 0.025, N ≈ 0.014, noise sd of a part 0.001): a false
    # alarm needs a part's noise below −15 sds
    est, msgs = _fit((-6.0, 6.0), seed)
    assert not any(m.startswith(MESSAGE) for m in msgs), msgs
    X, y, groups = _panel(seed + 100)
    assert est.score(X, y) > 0.5


# ------------------------------------------------------------ audit
def _spread_samples(runs, seed):
    """The released parts' difference ``u₊ − u₋`` on two neighbouring
    panels: 40 users, user 0 far above the centre (parts (cap, 0)) or far
    below it (parts (0, cap)), the others at the centre (parts (0, 0)) --
    the worst case of the release's replace-one sensitivity."""
    plan = _plan(100)
    n_users = 40
    codes = np.arange(n_users)
    X = np.zeros((n_users, 1))
    est = UserDPSGDRegressor()
    budget = ZCDP(zcdp_rho_for(1.0, 1e-3))
    out = []
    seeds = np.random.SeedSequence(seed).spawn(2 * runs)
    for k, first in enumerate((5.0, -5.0)):
        y = np.zeros(n_users)
        y[0] = first
        rows = InMemoryRows(X, y, codes, n_users)
        vals = []
        for s in seeds[k * runs:(k + 1) * runs]:
            (_, released, _), loss = est._private_target_spread(
                rows, 0.0, plan, budget, s)
            vals.append(released[0] - released[1])
        out.append(np.array(vals))
    return out, loss


@pytest.mark.slow
def test_spread_release_audit_with_positive_control(monkeypatch):
    delta = 1e-3
    (a, b), loss = _spread_samples(3000, 21)
    assert loss.rho == pytest.approx(zcdp_rho_for(1.0, delta), rel=1e-12)
    claimed = zcdp_to_approx_dp(loss, delta).epsilon
    res = epsilon_lower_bound(a, b, delta=delta, epsilon_claimed=claimed)
    assert not res.violation, str(res)
    # positive control: the same release with its sensitivity understated 4x
    real = dpsgd_module.plan_clip_noise

    def weak(*args, budget, **kw):
        plan = real(*args, budget=budget, **kw)
        return dataclasses.replace(
            plan, noise=calibrate_noise(budget, plan.sensitivity / 4))

    monkeypatch.setattr(dpsgd_module, "plan_clip_noise", weak)
    (a, b), _ = _spread_samples(3000, 22)
    res = epsilon_lower_bound(a, b, delta=delta, epsilon_claimed=claimed)
    assert res.violation, str(res)
