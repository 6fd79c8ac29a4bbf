"""User-level private first-order optimisation (Levy et al., Algorithms 3 and 4).

Levy et al., "Learning with User-Level Privacy" [LSA+21]_: Algorithm 3
(Winsorized First-Order Optimization, §4, Theorem 3), the generic optimiser
of Appendix E.2 (Algorithm 7, Proposition 4, Remark 2) and Algorithm 4
(Phased ERM, §5.1, Theorem 4); docs: :ref:`papers-levy`,
:ref:`papers-levy-deviations`.

Neighbouring datasets differ in the entire data of one user (replace-one,
the number of users public). Every step releases one private mean of the
users' *average* gradients (a per-user function, so the unit of privacy is
the user) with one of three aggregators:

* ``"winsorized"`` — Algorithm 3: WinsorizedMean (Algorithm 2) of the
  per-user gradients, each projected onto the public ℓ2 ball of radius G
  (the gradient bound), with a fresh rotation and fresh noise per step;
  τ is the public concentration radius of user gradients (Proposition 1).
* ``"clip"`` (ours, the standard user-level DP-SGD of the survey): each
  per-user gradient is clipped to the public ℓ2 radius C and the mean is
  released with discrete Gaussian noise on a lattice
  (:func:`skuserdp.mean.plan_clip_noise`). With Poisson user sampling
  (public rate q, data-independent) the exact lattice sum of the sampled
  users' clipped gradients gets discrete Gaussian noise and is divided by
  the *public* expected count ``q·n``
  (:func:`skuserdp.mechanisms.poisson_sum_from_plan`); accounting by privacy
  loss distributions (:mod:`skuserdp.privacy._subsampled`).
* ``"trimmed"`` (ours; the few-users note's Mode A) — the coordinate-wise
  trimmed mean of the clipped per-user gradients, ``k`` users dropped per
  side in every coordinate (:func:`skuserdp.mechanisms.plan_trimmed_mean`):
  noise calibrated to ``2C/(n − 2k)``, more than the clip aggregator's
  ``2C/n``. It buys robustness to up to k arbitrary users, not privacy.

The per-step budget is :func:`skuserdp.privacy.adaptive_query_budget`
(``"tight"``: ρ/T of the zCDP budget; ``"paper"``: Theorem 10's advanced
composition split) and the total :func:`skuserdp.privacy.compose_adaptive_queries`.
Step sizes, the number of steps and the averaging weights depend only on
public quantities: G, H, R, μ, T and the *data-independent* noise variance
ν² of the released gradient (:ref:`papers-levy-step-sizes`). The gradient of a public
regulariser is added after the release, so the aggregators'
bounds are those of the data term alone.

Phased ERM (:ref:`papers-levy-phased-erm`): phases
``t = 1..P`` run the strongly convex variant on
disjoint blocks of ``⌊n/2^t⌋`` users (a data-independent random partition),
each with the whole budget (parallel composition), regularised towards the
previous phase's output with ``λ_t = 4^t·λ``. λ, P and the steps per phase
come from the *planned* noise of the aggregator (our choice, in place of the
paper's ``σd/(√m·ε)``, which assumes a noise the aggregators do not have),
and phases whose block is too small for that noise are not run (the early
stop); see :func:`plan_phased_erm`.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..mean._clip_noise import clip_noise_from_plan, plan_clip_noise
from ..mean._winsorized import plan_winsorized_mean, winsorized_mean_from_plan
from ..mechanisms import (
    plan_poisson_sum,
    plan_trimmed_mean,
    poisson_sum_from_plan,
    trimmed_mean_from_plan,
)
from ..privacy import (
    adaptive_query_budget,
    compose_adaptive_queries,
    compose_parallel,
)
from ..exceptions import AccuracyWarning
from ..utils._random import generator_from, make_seed_sequence
from ..utils._warnings import warn_at_caller

__all__ = [
    "GradientPlan",
    "plan_gradient_descent",
    "private_gradient_descent",
    "PhasedPlan",
    "plan_phased_erm",
    "phased_erm",
]

AGGREGATORS = ("clip", "winsorized", "trimmed")


@dataclass(frozen=True)
class GradientPlan:
    """Every public quantity of one private gradient-descent run.

    Computed by :func:`plan_gradient_descent` from public values only: two
    datasets of the same public shape get the same plan.

    Parameters
    ----------
    n_users, n_params, n_steps : int
        Users n, parameters p and steps T.
    aggregator : {"clip", "winsorized", "trimmed"}
        How each step's mean gradient is released.
    release : ClipNoisePlan, WinsorizedPlan, TrimmedMeanPlan or PoissonSumPlan
        The per-step release plan (for Poisson sampling, the plan of all T
        sampled releases, whose loss is the composed one).
    clip_norm : float
        ℓ2 radius of the per-user gradients (C for ``"clip"``, G for
        ``"winsorized"``).
    sampling_rate : float or None
        Poisson user-sampling rate q (``"clip"`` only).
    noise_variance : float
        ν²: total variance of the noise in one released gradient (sum over
        the parameters), data-independent.
    schedule : {"convex", "strongly_convex", "constant"}
        Step-size rule (:ref:`papers-levy-step-sizes`).
    learning_rates : ndarray of shape (n_steps,)
        η_t.
    weights : ndarray of shape (n_steps,)
        Averaging weights of the iterates θ_1..θ_T in the output (sum to 1).
    stage_weights : ndarray of shape (restart,)
        Averaging weights of the first stage's iterates, the restart point
        of the strongly convex schedule (empty without a restart).
    restart : int
        Step at which the strongly convex schedule restarts from the average
        of the first stage (``n_steps`` when there is no restart).
    radius : float
        Radius R of the parameter ball Θ (projection).
    loss : PureDP, ApproxDP or ZCDP
        The composed privacy loss of all T releases.

    Examples
    --------
    >>> from skuserdp.linear_model import plan_gradient_descent
    >>> plan = plan_gradient_descent(1000, 2, epsilon=1.0, delta=1e-6, n_steps=4,
    ...                              aggregator="clip", gradient_bound=1.0,
    ...                              smoothness=1.0, radius=1.0)
    >>> plan.weights.tolist()  # the average of the last half of the iterates
    [0.0, 0.0, 0.5, 0.5]
    """

    n_users: int
    n_params: int
    n_steps: int
    aggregator: str
    release: object
    clip_norm: float
    sampling_rate: object
    noise_variance: float
    schedule: str
    learning_rates: np.ndarray
    weights: np.ndarray
    stage_weights: np.ndarray
    restart: int
    radius: float
    loss: object

    @property
    def range_failure_bound(self):
        """The plan's public bound on the probability that a range step fails.

        ``"winsorized"``: the union over the T steps of each step's
        :attr:`~skuserdp.mean.WinsorizedPlan.range_failure_bound` (the
        probability that some PrivateRange misses the bulk of the users'
        gradients), capped at 1; ``"clip"`` has no range step (0). At 1 the
        bound guarantees nothing: the range steps are planned to fail.
        """
        if self.aggregator != "winsorized":
            return 0.0
        return min(1.0, self.n_steps * self.release.range_failure_bound)


def _warn_if_range_fails(plan, name):
    """AccuracyWarning (public values only) when ``plan``'s own range-failure
    bound is 1 (issue 31: the planners warn whenever their range step will
    certainly fail)."""
    bound = plan.range_failure_bound
    if bound >= 1.0:
        warn_at_caller(
            f"{name}: with {plan.n_users} users this plan's winsorized range "
            f"steps have a public failure bound of {bound:.3g}, i.e. nothing "
            "guarantees that they find the users' gradients: the winsorized "
            "aggregator falls back to noise-dominated estimates (the privacy "
            "guarantee is unaffected). Use aggregator='clip', more users or a "
            "larger epsilon.", AccuracyWarning)


def _schedule(schedule, n_steps, smoothness, strong_convexity, radius, nu2,
              learning_rate):
    """Learning rates, output weights, stage weights and restart step."""
    T = n_steps
    # Tail averaging (OUR CHOICE): the uniform average of the last ⌈T/2⌉
    # iterates. Same O(HR²/T + νR/√T) bound as averaging all of them (the
    # tail starts within 2R of θ*, so the first term's constant grows 8×),
    # without the start-up bias of the early iterates.
    half = math.ceil(T / 2)
    uniform = np.concatenate([np.zeros(T - half), np.full(half, 1.0 / half)])
    none = np.zeros(0)
    if learning_rate is not None:
        return np.full(T, float(learning_rate)), uniform, none, T
    H = float(smoothness)
    if schedule == "convex":
        eta = 1.0 / (H + math.sqrt(nu2 * T) / radius)
        return np.full(T, eta), uniform, none, T
    # strongly convex: stage A (η = 1/H, weights ∝ (1−μ/H)^(−t)), restart,
    # stage B (η_k = 2/(μ(k + k0)), weights ∝ k + k0).
    mu = float(strong_convexity)
    t_a = math.ceil(T / 2)
    t_b = T - t_a
    ratio = max(1.0 - mu / H, 0.0)
    if ratio == 0.0:
        log_w = np.arange(t_a, dtype=float)  # only the last iterate matters
        log_w[:-1] = -np.inf
    else:
        log_w = -np.arange(1, t_a + 1) * math.log(ratio)
    w_a = np.exp(log_w - log_w.max())
    w_a /= w_a.sum()
    k0 = math.ceil(2.0 * H / mu)
    k = np.arange(t_b, dtype=float)
    etas = np.concatenate([np.full(t_a, 1.0 / H), 2.0 / (mu * (k + k0))])
    if t_b == 0:
        return etas, w_a, none, T
    w_b = (k + k0) / np.sum(k + k0)
    return etas, np.concatenate([np.zeros(t_a), w_b]), w_a, t_a


def plan_gradient_descent(n_users, n_params, *, epsilon, delta, n_steps,
                          aggregator, gradient_bound, smoothness, radius,
                          clip_norm=None, tau=None, gamma=0.01,
                          sampling_rate=None, strong_convexity=0.0,
                          learning_rate=None, calibration="tight", n_trim=0):
    """Plan a user-level private gradient descent from public quantities.

    Parameters
    ----------
    n_users, n_params : int
        Public shape: users n and parameters p.
    epsilon : float
        Total ε, ``> 0``.
    delta : float
        Total δ in ``[0, 1)``; Poisson sampling needs ``δ > 0``.
    n_steps : int
        Number T of steps, ``>= 1``.
    aggregator : {"clip", "winsorized", "trimmed"}
        See the module docstring.
    gradient_bound : float
        Public G: every per-user average gradient of the data term has ℓ2
        norm at most G.
    smoothness : float
        Public H of the whole objective (data term plus regulariser).
    radius : float
        Radius R of the parameter ball Θ.
    clip_norm : float, default=None
        ``"clip"``: ℓ2 clip radius C of the per-user gradients (``None``:
        G, no clipping bias).
    tau : float, default=None
        ``"winsorized"``: public concentration radius of the per-user
        gradients (see :func:`skuserdp.mean._concentration.tau_gradients`).
    gamma : float, default=0.01
        ``"winsorized"``: total failure probability
        (γ/T per step, :ref:`papers-levy-gamma`).
    sampling_rate : float, default=None
        ``"clip"``: Poisson user-sampling rate q in ``(0, 1)``; ``None`` uses
        every user in every step.
    strong_convexity : float, default=0.0
        Public μ of the objective; ``> 0`` selects the strongly convex
        schedule. The estimators do not pass their L2 penalty ``alpha`` here
        (OUR CHOICE, measured): with the noise of the planned releases the
        convex schedule (step ``1/(H + ν√T/R)``, tail averaging) is as good
        or better on alpha-strongly convex quadratics — the strongly convex
        one's expected excess is 0.97–56× the convex one's, geometric mean
        1.38, over n·ε in [500, 5000], alpha/H in [0.005, 0.5] and T in
        [30, 300] (exact, from the linear response; the test
        ``test_strongly_convex_schedule_is_not_better_with_noisy_gradients``)
        — and with a fitted intercept, which is not penalised, the objective
        is not alpha-strongly convex.
    learning_rate : float, default=None
        Constant step size (tail averaging) instead of the schedule.
    calibration : {"tight", "paper"}, default="tight"
        Per-step budget rule and WinsorizedMean constants.
    n_trim : int, default=0
        ``"trimmed"``: users dropped per side in every coordinate of each
        step's coordinate-wise trimmed mean (``2·n_trim < n_users``).

    Returns
    -------
    plan : GradientPlan
        Step sizes, averaging weights, the per-step release plan and the
        composed loss.

    Warns
    -----
    AccuracyWarning
        When the plan's :attr:`GradientPlan.range_failure_bound` is 1 (the
        winsorized range steps are planned to fail; public values only).

    Examples
    --------
    >>> from skuserdp.linear_model import plan_gradient_descent
    >>> plan = plan_gradient_descent(1000, 3, epsilon=1.0, delta=1e-6,
    ...                              n_steps=50, aggregator="clip",
    ...                              gradient_bound=2.0, smoothness=1.0,
    ...                              radius=5.0)
    >>> plan.n_steps, plan.schedule, round(float(plan.weights.sum()), 12)
    (50, 'convex', 1.0)
    """
    plan = _plan_gradient_descent(
        n_users, n_params, epsilon=epsilon, delta=delta, n_steps=n_steps,
        aggregator=aggregator, gradient_bound=gradient_bound,
        smoothness=smoothness, radius=radius, clip_norm=clip_norm, tau=tau,
        gamma=gamma, sampling_rate=sampling_rate,
        strong_convexity=strong_convexity, learning_rate=learning_rate,
        calibration=calibration, n_trim=n_trim)
    _warn_if_range_fails(plan, "plan_gradient_descent")
    return plan


def _plan_gradient_descent(n_users, n_params, *, epsilon, delta, n_steps,
                           aggregator, gradient_bound, smoothness, radius,
                           clip_norm, tau, gamma, sampling_rate,
                           strong_convexity, learning_rate, calibration,
                           n_trim=0):
    """:func:`plan_gradient_descent` without its warning."""
    n_users, n_params, T = int(n_users), int(n_params), int(n_steps)
    if T < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}.")
    if aggregator not in AGGREGATORS:
        raise ValueError(
            f"aggregator must be one of {AGGREGATORS}, got {aggregator!r}.")
    G = float(gradient_bound)
    if sampling_rate is not None and aggregator != "clip":
        raise ValueError(
            "Poisson user sampling (sampling_rate) needs aggregator='clip'.")
    if aggregator == "clip":
        C = G if clip_norm is None else float(clip_norm)
        if sampling_rate is not None:
            if delta <= 0:
                raise ValueError("Poisson user sampling needs delta > 0.")
            release = plan_poisson_sum(n_users, n_params, epsilon=epsilon,
                                       delta=delta, sampling_rate=sampling_rate,
                                       n_steps=T, radius=C)
            nu2 = n_params * release.noise_variance
            loss = release.loss
        else:
            budget = adaptive_query_budget(epsilon, delta, T, calibration=calibration)
            release = plan_clip_noise(n_users, n_params, budget=budget, radius=C,
                                      calibration=calibration)
            nu2 = n_params * release.noise_variance
            loss = compose_adaptive_queries(release.loss, T, delta)
    elif aggregator == "trimmed":
        # the trimmed mean of the clipped gradients: the plain sum's noise
        # divided by n - 2k (robustness to k users, not privacy)
        C = G if clip_norm is None else float(clip_norm)
        budget = adaptive_query_budget(epsilon, delta, T, calibration=calibration)
        release = plan_trimmed_mean(n_users, n_params, n_trim=n_trim, budget=budget,
                                    radius=C, calibration=calibration)
        nu2 = n_params * release.noise_variance
        loss = compose_adaptive_queries(release.loss, T, delta)
    else:
        if tau is None:
            raise ValueError("aggregator='winsorized' needs the public radius tau.")
        C = G
        budget = adaptive_query_budget(epsilon, delta, T, calibration=calibration)
        release = plan_winsorized_mean(n_users, n_params, tau=float(tau),
                                       value_range=G, budget=budget,
                                       gamma=gamma / T, calibration=calibration)
        nu2 = n_params * release.noise_variance
        loss = compose_adaptive_queries(release.loss, T, delta)
    if learning_rate is not None:
        schedule = "constant"
    elif strong_convexity > 0:
        schedule = "strongly_convex"
    else:
        schedule = "convex"
    etas, weights, stage, restart = _schedule(schedule, T, smoothness,
                                              strong_convexity, radius, nu2,
                                              learning_rate)
    return GradientPlan(n_users, n_params, T, aggregator, release, C,
                        sampling_rate, nu2, schedule, etas, weights, stage, restart,
                        float(radius), loss)


def _project(theta, radius):
    norm = float(np.linalg.norm(theta))
    return theta if norm <= radius else theta * (radius / norm)


def _clip_rows(G, radius):
    norms = np.linalg.norm(G, axis=1)
    scale = np.minimum(1.0, radius * (1 - 1e-12) / np.maximum(norms, 1e-300))
    return G * scale[:, None]


def _release(plan, user_gradients, seed, n_jobs):
    """One private mean of the per-user gradients (a step of Algorithm 3)."""
    if plan.aggregator == "winsorized":
        rows = _clip_rows(user_gradients, plan.clip_norm)
        return winsorized_mean_from_plan(rows, plan.release, random_state=seed,
                                         n_jobs=n_jobs)
    if plan.aggregator == "trimmed":
        return trimmed_mean_from_plan(user_gradients, plan.release,
                                      random_state=seed, n_jobs=n_jobs)
    if plan.sampling_rate is None:
        return clip_noise_from_plan(user_gradients, plan.release, random_state=seed,
                                    n_jobs=n_jobs)
    # Poisson sampling: the mask and the noise come from the step's seed,
    # never from the data; divided by the public expected count.
    return poisson_sum_from_plan(user_gradients, plan.release, random_state=seed,
                                 n_jobs=n_jobs)


def private_gradient_descent(user_gradients, plan, *, theta0,
                             penalty_gradient=None, random_state=None,
                             n_jobs=None, verbose=0, label="UserDPGD"):
    """Run a planned user-level private (projected) gradient descent.

    The data enter only through ``user_gradients``, whose per-step result is
    released privately; everything else is post-processing.

    Parameters
    ----------
    user_gradients : callable
        ``user_gradients(theta) -> ndarray of shape (n_users, n_params)``:
        every user's average gradient of the data term at ``theta``, one row
        per user in a fixed order.
    plan : GradientPlan
        From :func:`plan_gradient_descent`.
    theta0 : ndarray of shape (n_params,)
        Public starting point (projected onto Θ).
    penalty_gradient : callable, default=None
        Gradient of a public regulariser, added after each release.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness (one child stream per step).
    n_jobs : int, default=None
        Threads inside each release (chunks of coordinates); results do not
        depend on it.
    verbose : int, default=0
        ``> 0`` prints the step number (no private values).
    label : str, default="UserDPGD"
        Prefix of the progress lines.

    Returns
    -------
    theta : ndarray of shape (n_params,)
        The weighted average of the iterates (post-processing of the T
        private gradients).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.linear_model import (plan_gradient_descent,
    ...                                    private_gradient_descent)
    >>> Z = np.random.default_rng(0).normal(0.5, 0.1, size=(2000, 2))
    >>> plan = plan_gradient_descent(2000, 2, epsilon=1.0, delta=1e-6,
    ...                              n_steps=20, aggregator="clip",
    ...                              gradient_bound=3.0, smoothness=1.0,
    ...                              radius=2.0, clip_norm=1.0)
    >>> theta = private_gradient_descent(lambda t: t - Z, plan,
    ...                                  theta0=np.zeros(2), random_state=0)
    >>> theta.round(1)  # the mean of Z, by minimising ½‖θ − z‖²
    array([0.5, 0.5])
    """
    seeds = make_seed_sequence(random_state).spawn(plan.n_steps)
    theta = _project(np.asarray(theta0, dtype=np.float64).copy(), plan.radius)
    stage = np.zeros_like(theta)
    out = np.zeros_like(theta)
    for t in range(plan.n_steps):
        if t == plan.restart:
            theta = _project(stage, plan.radius)
        grad = _release(plan, user_gradients(theta), seeds[t], n_jobs)
        if penalty_gradient is not None:
            grad = grad + penalty_gradient(theta)
        theta = _project(theta - plan.learning_rates[t] * grad, plan.radius)
        if t < plan.stage_weights.shape[0]:
            stage += plan.stage_weights[t] * theta
        out += plan.weights[t] * theta
        if verbose > 0:
            print(f"[{label}] step {t + 1}/{plan.n_steps}")
    return out


@dataclass(frozen=True)
class PhasedPlan:
    """Every public quantity of one Phased ERM run.

    Parameters
    ----------
    n_users, n_params : int
        Users n and parameters p.
    block_sizes : tuple of int
        ``n_t = ⌊n/2^t⌋`` users of every phase run (disjoint blocks).
    lambdas : tuple of float
        ``λ_t = 4^t·λ``.
    phases : tuple of GradientPlan
        The strongly convex gradient-descent plan of every phase run.
    loss : PureDP, ApproxDP or ZCDP
        The total loss: the worst phase (parallel composition).
    noise_scale : float
        κ, the planned noise of the first phase as one full-budget release
        over n users: ``κ = n_1·ν_1/√T_1`` (ν_1² the total noise variance of
        one of its T_1 steps, summed over the parameters). It takes the
        place of the paper's ``σd/(√m·ε)`` in λ, P and T_t.
    planned_phases : int
        P of Algorithm 4's line 1 (computed with κ); the early stop may run
        fewer phases (``len(phases)``).

    Examples
    --------
    >>> from skuserdp.linear_model import plan_phased_erm
    >>> plan = plan_phased_erm(4000, 2, epsilon=1.0, delta=1e-6, aggregator="clip",
    ...                        gradient_bound=1.0, smoothness=1.0, radius=1.0)
    >>> plan.block_sizes, [round(lam / plan.lambdas[0], 6) for lam in plan.lambdas]
    ((2000, 1000, 500, 250, 125, 62), [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0])
    """

    n_users: int
    n_params: int
    block_sizes: tuple
    lambdas: tuple
    phases: tuple
    loss: object
    noise_scale: float
    planned_phases: int

    @property
    def n_steps(self):
        """Total number of gradient steps over all phases."""
        return sum(p.n_steps for p in self.phases)

    @property
    def range_failure_bound(self):
        """The union over the phases of their failure bounds, capped at 1.

        The sum of the phases' :attr:`GradientPlan.range_failure_bound`.
        """
        return min(1.0, sum(p.range_failure_bound for p in self.phases))


#: phases with fewer users than this are never run (public rule)
PHASE_MIN_USERS = 2
#: c: E‖θ̂ − θ*‖² ≈ c·ν²/(μ²T) for the strongly convex schedule
SCHEDULE_VARIANCE_FACTOR = 2.0


def _noise_constant(plan):
    """``κ_t = n_t·ν_t/√T_t``: a phase's noise as one full-budget release."""
    return plan.n_users * math.sqrt(plan.noise_variance / plan.n_steps)


def plan_phased_erm(n_users, n_params, *, epsilon, delta, aggregator,
                    gradient_bound, smoothness, radius, samples_per_user=1,
                    max_iter=100, clip_norm=None, tau=None, gamma=0.01,
                    calibration="tight"):
    """Plan Levy et al.'s Phased ERM (Algorithm 4) from public quantities.

    Algorithm 4's line 1 and Corollary 2 balance the terms of Theorem 4's
    proof for the noise of Algorithm 3 in the paper's model: one full-budget
    release over n users of standard deviation ``σd/(√m·ε)/n``, with
    σ = G for gradients bounded by G. The planned aggregators do not have
    that noise: the clip aggregator's is proportional to the clip radius,
    whatever m, and the winsorized one's to τ only once τ is well below G
    (below that it falls back to a box release of radius G), both with the
    constants and logarithms the Õ drops. Planned with the paper's model,
    λ shrinks like 1/√m while the noise does not, the early phases return
    noise (``E‖θ̂_1 − θ*_1‖² ∝ 1/λ_1²`` exceeds R²) that the later, more
    regularised phases cannot undo, and the error *grows* with m. Hence
    (our choice, :ref:`papers-levy-phased-erm`) the
    constants use the planned noise: κ, the first phase's
    per-step noise as one full-budget release over n users (see
    :class:`PhasedPlan`; n²·variance is constant in n and T for the clip
    aggregator; T_1 and κ are found together by iterating ``T_1 ← T_1(κ)``
    from ``T_1 = 1`` until T_1 repeats). With ``c = 2`` the variance factor
    of the strongly convex schedule (``E‖θ̂ − θ*‖² ≈ c·ν²/(μ²T)``: 2.0–2.4
    for 2 ≤ T ≤ 400, from the schedule's linear response) and the uniform
    stability ``2G²/(λN)`` of Proposition 5, the proof's bound reads
    ``2λR² + (2c(P − 1)κ²/n² + 2G²/(nm))/λ + G√c·κ/(2^P·λ·n)`` and

    * ``λ = √(G²/(nm) + c·(P − 1)·κ²/n²)/R`` minimises it (the paper's
      λ with ``σ²d²/(mε²)`` replaced by ``c(P − 1)κ²``: the Õ drops the
      P − 1 noise terms of Δ₁; ``P − 1`` is taken as 1 when P = 1);
    * ``P = ⌈log₂(G·n/(2√c·κ))⌉`` phases, where the last phase's Δ₀ falls
      to one Δ₁ term (the paper's ``⌈log₂(Gn√m·ε/(σd))⌉``);
    * phase t has ``n_t = ⌊n/2^t⌋`` users, ``λ_t = 4^t·λ`` and
      ``T_t = max{1, ⌈(H + λ_t)/λ_t·ln(G·R·λ_t·n_t²/κ²)⌉}`` steps
      (Corollary 2: the initial gap GR over the noise floor
      ``κ²/(λ_t·n_t²)``), capped at ``max_iter``.

    Early stop (stop when ``n_t`` violates Corollary 2's
    condition): phase t ≥ 2 and all later phases are not run when

    * ``n_t < 2`` (``PHASE_MIN_USERS``);
    * its planned per-step noise exceeds the gradient bound, ``ν_t > G``:
      Corollary 2's ``n_t = Ω̃(√(d·T_t)/ε)`` made explicit; for the clip
      aggregator ``ν_t = √T_t·κ/n_t``, so the threshold is
      ``n_t ≥ √T_t·κ/G`` users;
    * its noise constant ``κ_t = n_t·ν_t/√T_t`` exceeds κ (up to rounding):
      λ, P and T_t were balanced for κ, and the phase's Δ₁ term grows as
      κ_t². This never happens with the clip aggregator (κ_t is constant,
      or decreasing with T_t under pure DP or the "paper" calibration); it
      stops the winsorized aggregator where its range step costs more on the
      smaller blocks, or they fall back to the box release.

    Everything depends only on public values (n, m, p, ε, δ, G, H, R, the
    aggregator's parameters), never on the data. The first phase is always
    run (the regularised ERM of half the users): without it there is no
    output.

    Parameters
    ----------
    n_users, n_params : int
        Public shape.
    epsilon, delta : float
        The budget; every phase gets all of it (disjoint users).
    aggregator : {"clip", "winsorized"}
        Per-step release (see :func:`plan_gradient_descent`).
    gradient_bound, smoothness, radius : float
        Public G, H (data term) and R.
    samples_per_user : int, default=1
        Public minimum number m of rows per user.
    max_iter : int, default=100
        Cap on the steps of each phase.
    clip_norm : float, default=None
        ``"clip"``: clip radius (``None``: G).
    tau : float or callable, default=None
        ``"winsorized"``: τ, or ``tau(n_users)`` giving the τ of a block.
    gamma : float, default=0.01
        ``"winsorized"``: failure probability of each phase.
    calibration : {"tight", "paper"}, default="tight"
        Per-step budget rule.

    Returns
    -------
    plan : PhasedPlan
        Block sizes, regularisation strengths and the plan of every phase.

    Warns
    -----
    AccuracyWarning
        When the plan's :attr:`PhasedPlan.range_failure_bound` is 1 (public
        values only).

    Examples
    --------
    >>> from skuserdp.linear_model import plan_phased_erm
    >>> plan = plan_phased_erm(4000, 3, epsilon=1.0, delta=1e-6,
    ...                        aggregator="clip", gradient_bound=2.0,
    ...                        smoothness=1.0, radius=3.0, samples_per_user=10)
    >>> plan.block_sizes, plan.planned_phases
    ((2000, 1000, 500, 250, 125, 62), 7)
    """
    n, d = int(n_users), int(n_params)
    if aggregator == "trimmed":
        raise ValueError("Phased ERM does not take aggregator='trimmed' (its "
                         "blocks of halving size would need their own trim).")
    G, H, R = float(gradient_bound), float(smoothness), float(radius)
    m = max(int(samples_per_user), 1)
    c = SCHEDULE_VARIANCE_FACTOR
    if n // 2 < PHASE_MIN_USERS:
        raise ValueError(
            f"Phased ERM needs at least {2 * PHASE_MIN_USERS} users, got {n}.")

    def gd_plan(t, steps, lam_t):
        n_t = n // 2 ** t
        return _plan_gradient_descent(
            n_t, d, epsilon=epsilon, delta=delta, n_steps=steps,
            aggregator=aggregator, gradient_bound=G, smoothness=H + lam_t,
            radius=R, clip_norm=clip_norm, tau=tau(n_t) if callable(tau) else tau,
            gamma=gamma, sampling_rate=None, strong_convexity=lam_t,
            learning_rate=None, calibration=calibration)

    def n_steps(t, lam_t, kappa):
        arg = G * R * lam_t * (n // 2 ** t) ** 2 / kappa ** 2
        steps = math.ceil((H + lam_t) / lam_t * math.log(max(arg, math.e)))
        return int(min(max(1, steps), max_iter))

    def line1(kappa):
        n_phases = max(1, math.ceil(math.log2(
            max(G * n / (2.0 * math.sqrt(c) * kappa), 1.0))))
        lam = math.sqrt(G * G / (n * m)
                        + c * max(n_phases - 1, 1) * kappa ** 2 / n ** 2) / R
        return n_phases, lam

    # κ depends on T_1 (the per-step budget) and T_1 on κ: iterate.
    steps, tried = 1, []
    while steps not in tried:
        tried.append(steps)
        kappa = _noise_constant(gd_plan(1, steps, 1.0))  # noise ignores λ
        n_phases, lam = line1(kappa)
        steps = n_steps(1, 4.0 * lam, kappa)
    sizes, lambdas, phases = [], [], []
    for t in range(1, n_phases + 1):
        n_t, lam_t = n // 2 ** t, 4.0 ** t * lam
        if n_t < PHASE_MIN_USERS:
            break
        phase = gd_plan(t, n_steps(t, lam_t, kappa), lam_t)
        if t > 1 and (math.sqrt(phase.noise_variance) > G
                      or _noise_constant(phase) > kappa * (1 + 1e-9)):
            break
        phases.append(phase)
        sizes.append(n_t)
        lambdas.append(lam_t)
    loss = compose_parallel(*(p.loss for p in phases))
    plan = PhasedPlan(n, d, tuple(sizes), tuple(lambdas), tuple(phases), loss,
                      kappa, n_phases)
    _warn_if_range_fails(plan, "plan_phased_erm")
    return plan


def phased_erm(user_gradients, plan, *, theta0, penalty_gradient=None,
               random_state=None, n_jobs=None, verbose=0):
    """Run a planned Phased ERM (Levy et al., Algorithm 4).

    Parameters
    ----------
    user_gradients : callable
        ``user_gradients(users)`` returns a callable ``g(theta)`` giving the
        average gradients of the users with indices ``users`` (one row each).
    plan : PhasedPlan
        From :func:`plan_phased_erm`.
    theta0 : ndarray of shape (n_params,)
        Public starting point.
    penalty_gradient : callable, default=None
        Gradient of a public regulariser of the objective.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the partition and of every phase's noise.
    n_jobs : int, default=None
        Threads inside each release; results do not depend on it.
    verbose : int, default=0
        ``> 0`` prints progress (no private values).

    Returns
    -------
    theta : ndarray of shape (n_params,)
        The last phase's output.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.linear_model import plan_phased_erm, phased_erm
    >>> Z = np.random.default_rng(0).normal(0.5, 0.1, size=(4000, 2))
    >>> plan = plan_phased_erm(4000, 2, epsilon=1.0, delta=1e-6,
    ...                        aggregator="clip", gradient_bound=3.0,
    ...                        smoothness=1.0, radius=2.0, samples_per_user=1)
    >>> theta = phased_erm(lambda users: (lambda t: t - Z[users]), plan,
    ...                    theta0=np.zeros(2), random_state=0)
    >>> theta.round(1)
    array([0.5, 0.5])
    """
    partition_seed, *phase_seeds = make_seed_sequence(random_state).spawn(
        1 + len(plan.phases))
    order = generator_from(partition_seed).permutation(plan.n_users)
    theta = np.asarray(theta0, dtype=np.float64).copy()
    start = 0
    phases = zip(plan.phases, plan.block_sizes, plan.lambdas)
    for t, (phase, n_t, lam_t) in enumerate(phases, start=1):
        users = np.sort(order[start:start + n_t])
        start += n_t
        anchor = theta.copy()

        def penalty(th, anchor=anchor, lam_t=lam_t):
            g = lam_t * (th - anchor)
            return g if penalty_gradient is None else g + penalty_gradient(th)

        theta = private_gradient_descent(
            user_gradients(users), phase, theta0=anchor, penalty_gradient=penalty,
            random_state=phase_seeds[t - 1], n_jobs=n_jobs, verbose=verbose,
            label=f"PhasedERM phase {t}/{len(plan.phases)}")
    return theta
