"""Rates of Levy et al.'s optimisers (spec §3.8, §3.9, §7 #12, #13).

Theorem 3 (i): the privacy term of the excess empirical risk of user-level
private gradient descent scales as 1/n. Theorem 4 (Phased ERM): the excess
population risk decreases in the number m of rows per user when the
aggregator's noise scales with the concentration radius τ ∝ 1/√m of the
users' average gradients (see the second part of this docstring).

Problem. The linear loss ℓ(θ; z) = −⟨θ, z⟩ on the ball ‖θ‖ ≤ R: convex,
smooth with any H > 0 (we declare H = 1e-9), minimised on the sphere at
θ* = R·z̄/‖z̄‖, with excess risk F(θ) − F* = R‖z̄‖ − ⟨θ, z̄⟩ (linear, so the
excess of the tail average is the average excess of the iterates). It is the
instance on which Theorem 3's O(Rν/√T) privacy term is attained (the lower
bound construction is linear too); a strongly convex or quadratic loss would
show the faster ν² decay of averaged SGD instead. Every user's gradient −z_u
is constant; the users' means are centred so that z̄ is the same vector for
every n. Clip aggregator, full batch: the released noise per coordinate is
s = σ·grid/n with σ and grid fixed by (ε, δ, T, C, p), so ν ∝ 1/n exactly
(asserted).

Prediction. With η = 1/(H + ν√T/R) the drift per step is η‖z̄‖ = κR. Once
on the sphere (after ~1/κ steps, far fewer than the T/2 steps before the
tail), the projection contracts the tangential offset y (per tangent
direction) by 1/(1 + κ) per step: y' = (y − ηξ)/(1 + κ), ξ ~ N(0, s²), whose
stationary variance is η²s²/(κ(2 + κ)). To second order in the angle
(E φ² ≤ 0.02 here: relative error < 0.2%), the excess of an iterate is
‖z̄‖Σy²/(2R), hence

    E[excess] = (p − 1)·η·s² / (2(2 + κ)),      η ∝ 1/ν,  s² ∝ ν²,  κ ∝ 1/ν,

linear in ν = 1/n up to the factor 1/(2 + κ). The slope of log E against
log n is therefore −1 + Δ with Δ = −log((2 + κ_3)/(2 + κ_1))/log(n_3/n_1),
a deterministic correction computed from the plans (|Δ| ≈ 0.10 here; the
test asserts |Δ| ≤ 0.11).

Cost. κ ∝ n/T (η ∝ 1/(ν√T), ν ∝ √T/n), so κT — the number of steps the
tail average mixes over — and E φ² do not depend on T: halving T (from
400) doubles κ and Δ but leaves the precision of the excess unchanged
(measured sd of b_r: 0.11 at T = 100, 0.08 at T = 200, 0.09 at T = 400).
T = 200 keeps κ ≤ 0.4 and |Δ| ≈ 0.1.

Statistics (as in tests/mean/test_person_level_rates.py). In each of R
repetitions the excess is measured at n1 and n3 = 4·n1 and the
per-repetition slope b_r = (log e3 − log e1)/log(n3/n1) is taken (the
least-squares slope over the geometric grid n1, 2n1, 4n1 is this same
difference: a middle size would add nothing to it); the test is two-sided:

    |mean_r b_r − (−1 + Δ)| ≤ t_{R−1}(1 − α/2)·sd(b_r)/√R,   α = 1e-3,

and it asserts that this tolerance is below 1/4, so that the rates −1/2
(noise ∝ 1/√n) and −2 (a ν² law) are excluded: the design cannot pass
vacuously. With R = 12 and sd(b_r) ≈ 0.09 the tolerance is ≈ 0.12. The
level is checked too: the mean excess at n1 and n3 is within a CLT
interval (α = 1e-3, Bonferroni) of the prediction times (1 ± 1%) for the
second-order approximation. A privacy term ∝ n^(-1/2) (the noise
calibrated to a budget shrinking like 1/n, so ν ∝ n^(-1/2)) gives slopes near
−0.53 and is rejected (``test_theorem3_slope_check_rejects_a_slower_rate``).

Phased ERM in m (issue 15). Same loss and ball, in p = 2 dimensions: the
winsorized aggregator's noise is proportional to τ once its range step is
reliable, which on 1000-user blocks needs few dimensions (with p = 16 it
keeps its box fallback of radius G, whose noise does not depend on m, for
every m up to 65536 at n = 2000). User u has m rows z = z̄ + (B/√p)·s, with
s uniform on {±1}^p, so its average gradient −z̄_u is drawn exactly from
Binomial counts, and the public τ(n_t) = B·√(2 ln(2p·n_t/γ)/m) holds with
probability ≥ 1 − γ (Hoeffding per coordinate, union over the coordinates
and users). The excess population risk is R‖z̄‖ − ⟨θ, z̄⟩. Before the fix
of issue 15 the fitted slope of log excess against log m was +0.48 ± 0.03
on this problem (60 repetitions: the error grew with m); Theorem 4's
privacy term predicts a decrease (−1/2 for a Lipschitz excess, −1 for the
quadratic one near the sphere). Over R repetitions the per-repetition
least-squares slope b_r over the m grid is computed and the test is
one-sided:

    mean_r b_r + t_{R−1}(1 − α)·sd(b_r)/√R ≤ −0.3,      α = 1e-3,

i.e. the upper 99.9% confidence bound of the slope is at most −0.3
(measured: −0.60, standard error 0.05).

With the clip aggregator (C = G) the noise does not depend on m at all, so
Phased ERM's privacy term cannot decrease in m; the last test checks, in
the p = 16 problem itself, that it no longer *increases* (old slope +0.50):
the upper 99.9% bound of the slope is below +1/4, halfway between the
prediction 0 and the old law, with a tolerance asserted below 1/4 so that
the old law is excluded.
"""

import math

import numpy as np
import pytest
from scipy import stats

import skuserdp.linear_model._sgd as sgd_module
from skuserdp.linear_model import (
    phased_erm,
    plan_gradient_descent,
    plan_phased_erm,
    private_gradient_descent,
)
from skuserdp.privacy import ZCDP

P, R_BALL, T, ZNORM = 16, 1.0, 200, 0.5
N_GRID = (1450, 2900, 5800)


def _users(n, rng):
    """n users with ‖z_u‖ ≤ 0.9 whose mean is exactly z̄ = (ZNORM, 0, ...)."""
    zbar = np.zeros(P)
    zbar[0] = ZNORM
    E = rng.uniform(-0.1, 0.1, (n, P))
    E -= E.mean(axis=0)
    return zbar + E, zbar


def _plan(n):
    return plan_gradient_descent(n, P, epsilon=1.0, delta=1e-6, n_steps=T,
                                 aggregator="clip", gradient_bound=1.0,
                                 smoothness=1e-9, radius=R_BALL)


def _prediction(plan):
    eta = float(plan.learning_rates[0])
    s2 = plan.noise_variance / P
    kappa = eta * ZNORM / R_BALL
    return (P - 1) * eta * s2 / (2 * (2 + kappa)), kappa


def _excess(n, seed):
    rng = np.random.default_rng([n, seed])
    Z, zbar = _users(n, rng)
    theta = private_gradient_descent(lambda th: -Z, _plan(n),
                                     theta0=np.zeros(P),
                                     random_state=np.random.SeedSequence([n, seed]))
    return R_BALL * ZNORM - float(theta @ zbar)


def test_plans_noise_scales_as_one_over_n():
    plans = [_plan(n) for n in N_GRID]
    scaled = [p.noise_variance * n ** 2 for p, n in zip(plans, N_GRID)]
    np.testing.assert_allclose(scaled, scaled[0], rtol=1e-12)
    # the regime of the module docstring: κ small, mixing within the tail
    for plan in plans:
        _, kappa = _prediction(plan)
        assert 0.08 <= kappa <= 0.45 and kappa * T / 2 >= 8


def _slope_check(reps):
    """Per-repetition slopes of log excess in n over (n1, n3), their
    prediction −1 + Δ and the t-tolerance (module docstring)."""
    sizes = (N_GRID[0], N_GRID[-1])
    plans = [_plan(n) for n in sizes]
    preds = np.array([_prediction(p)[0] for p in plans])
    kappas = [_prediction(p)[1] for p in plans]
    span = math.log(sizes[1] / sizes[0])
    delta = -math.log((2 + kappas[1]) / (2 + kappas[0])) / span
    e = np.array([[_excess(n, r) for n in sizes] for r in range(reps)])
    assert np.all(e > 0)
    b = (np.log(e[:, 1]) - np.log(e[:, 0])) / span
    tol = stats.t.ppf(1 - 5e-4, reps - 1) * b.std(ddof=1) / math.sqrt(reps)
    return b, delta, tol, e, preds


@pytest.mark.slow
def test_theorem3_privacy_term_slope_in_n():
    reps = 12
    b, delta, tol, e, preds = _slope_check(reps)
    assert abs(delta) <= 0.11
    assert tol < 0.25
    msg = f"slopes {b.mean():.3f} vs {-1 + delta:.3f} ± {tol:.3f}; " \
          f"means {e.mean(0)} vs predicted {preds}"
    assert abs(b.mean() - (-1 + delta)) <= tol, msg
    # the level: CLT interval around the prediction (±1% for the model)
    z = stats.norm.ppf(1 - 1e-3 / (2 * len(preds)))
    se = e.std(0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(e.mean(0) - preds) <= z * se + 0.01 * preds), msg


@pytest.mark.slow
def test_theorem3_slope_check_rejects_a_slower_rate(monkeypatch):
    # The check can fail: plans whose noise is calibrated to a budget that
    # shrinks like 1/n (ν ∝ n^(-1/2), so the privacy term ∝ n^(-1/2)/(2 + κ))
    # give slopes near −0.5 + Δ ≈ −0.53, rejected against −1 + Δ ≈ −1.03
    # even with half the repetitions (a wider tolerance). Measured: −0.50 ±
    # 0.25 with 6 repetitions, −0.52 ± 0.13 with the real test's 12; the real
    # plans give −1.09 against −1.10 ± 0.11.
    real = sgd_module.plan_clip_noise

    def shrinking_budget(n_users, n_features, *, budget, **kw):
        shrunk = ZCDP(budget.rho * N_GRID[0] / n_users)
        return real(n_users, n_features, budget=shrunk, **kw)

    monkeypatch.setattr(sgd_module, "plan_clip_noise", shrinking_budget)
    b, delta, tol, _, _ = _slope_check(6)
    assert abs(b.mean() - (-0.5 + delta)) <= tol  # the slower rate, measured
    assert abs(b.mean() - (-1 + delta)) > tol, (b.mean(), delta, tol)


# ------------------------------------------------------ Theorem 4: m rows
P_M, N_M, M_GRID, B_ROW, GAMMA_M = 2, 2000, (16, 64, 256, 1024), 0.4, 0.01


def _tau_rows(m):
    """Public τ(n_t) of the users' mean rows (module docstring)."""
    return lambda n_t: B_ROW * math.sqrt(2 * math.log(2 * P_M * n_t / GAMMA_M) / m)


def _phased_plan_m(m):
    return plan_phased_erm(N_M, P_M, epsilon=1.0, delta=1e-6,
                           aggregator="winsorized", gradient_bound=1.0,
                           smoothness=1e-9, radius=R_BALL, samples_per_user=m,
                           max_iter=100, tau=_tau_rows(m))


def _phased_excess(m, plan, seed):
    rng = np.random.default_rng([m, seed])
    zbar = np.zeros(P_M)
    zbar[0] = ZNORM
    plus = rng.binomial(m, 0.5, size=(N_M, P_M))  # rows with s_j = +1
    Z = zbar + B_ROW / math.sqrt(P_M) * (2 * plus - m) / m
    theta = phased_erm(lambda users: (lambda th: -Z[users]), plan,
                       theta0=np.zeros(P_M),
                       random_state=np.random.SeedSequence([m, seed, 1]))
    return R_BALL * ZNORM - float(theta @ zbar)


def test_theorem4_phased_erm_excess_decreases_in_m():
    reps = 60
    plans = [_phased_plan_m(m) for m in M_GRID]
    # the premise: the planned noise shrinks with m on this grid
    kappas = [p.noise_scale for p in plans]
    assert all(a >= b for a, b in zip(kappas, kappas[1:]))
    assert kappas[-1] < kappas[0] / 2
    e = np.array([[_phased_excess(m, plan, r) for m, plan in zip(M_GRID, plans)]
                  for r in range(reps)])
    assert np.all(e > 0)
    x = np.log(M_GRID) - np.mean(np.log(M_GRID))
    b = np.log(e) @ x / (x @ x)
    tol = stats.t.ppf(1 - 1e-3, reps - 1) * b.std(ddof=1) / math.sqrt(reps)
    msg = f"slope {b.mean():.3f} + {tol:.3f}; mean excess {e.mean(0)}"
    assert b.mean() + tol <= -0.3, msg


def _phased_excess_rows(m, plan, p, seed):
    """Excess of Phased ERM on users with m rows z̄ + (B/√p)·s (see above)."""
    rng = np.random.default_rng([p, m, seed])
    zbar = np.zeros(p)
    zbar[0] = ZNORM
    plus = rng.binomial(m, 0.5, size=(plan.n_users, p))
    Z = zbar + B_ROW / math.sqrt(p) * (2 * plus - m) / m
    theta = phased_erm(lambda users: (lambda th: -Z[users]), plan,
                       theta0=np.zeros(p),
                       random_state=np.random.SeedSequence([p, m, seed, 1]))
    return R_BALL * ZNORM - float(theta @ zbar)


def test_phased_erm_clip_excess_does_not_grow_in_m():
    reps, grid, n = 24, (4, 16, 64, 256), 1000
    plans = [plan_phased_erm(n, P, epsilon=1.0, delta=1e-6, aggregator="clip",
                             gradient_bound=1.0, smoothness=1e-9, radius=R_BALL,
                             samples_per_user=m, max_iter=100) for m in grid]
    assert len({p.block_sizes for p in plans}) == 1  # m changes λ only
    e = np.array([[_phased_excess_rows(m, plan, P, r)
                   for m, plan in zip(grid, plans)] for r in range(reps)])
    assert np.all(e > 0)
    x = np.log(grid) - np.mean(np.log(grid))
    b = np.log(e) @ x / (x @ x)
    tol = stats.t.ppf(1 - 1e-3, reps - 1) * b.std(ddof=1) / math.sqrt(reps)
    assert tol < 0.25
    msg = f"slope {b.mean():.3f} + {tol:.3f}; mean excess {e.mean(0)}"
    assert b.mean() + tol < 0.25, msg
