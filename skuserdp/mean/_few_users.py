"""Few-users family (Esfandiari, Mirrokni and Narayanan, Algorithms 1, 2 and 4).

One module per algorithm family; its layers, in order:

1. The ball sampler and its plans (Algorithms 1, 2 and 4).
2. The function and the estimator.

The ball sampler and its plans (Algorithms 1, 2 and 4)
------------------------------------------------------

Few users: the ball sampler of Esfandiari, Mirrokni and Narayanan (Alg. 1, 2, 4).

Implements §3.2, Corollary 5 and §4 of "Tight and Robust Private Mean
Estimation with Few Users" [EMN22]_ (docs: :ref:`papers-emn`,
:ref:`papers-emn-deviations`). The privacy map of the sampler is in
:mod:`skuserdp.privacy._ball_sampler`.

**Algorithm 1 (DP-Estimate-1).** Every point ``x_i`` (a user mean) owns the
ball ``B_i`` of radius ``R = c·r`` (``c = max(√d, 2)``); ``f(p)`` counts the
balls containing p. Target law π: density ``∝ e^{ε_a min(f(p), βn)}`` where
``f(p) > 0``, plus a garbage bucket G₁ of mass ``(4/δ_a)·V_B``. Rejection
sampling: each round picks the garbage branch with probability
``(4/δ_a)/(e^{ε_a βn} + 4/δ_a)`` (accepting G₁ with probability ``c_acc``),
else a uniform index i and a uniform point ``p ∈ B_i``, accepted with
probability ``c_acc·(n/f(p))·e^{ε_a(min(f(p), βn) − βn)}``; after a rejected
round the sampler stops with probability ``1/N`` and returns G₂ (the
memoryless form of the paper's ``Geom(1/N)`` rounds). The output is the
random point p itself — never a data point.

**Public plan.** N, ``c_acc``, R and the failure bound depend only on
(n, d, r, ε, δ, α, κ): ``c_acc = β/2`` (1/3 in the paper), lowered if needed
so that every acceptance probability is at most 1/2 (P0); ``N`` is chosen for
accuracy and run time only — ``N = ⌈2/(α c_acc ρ_LB)⌉`` (tight) or the
paper's ``⌈18 e^{10√ln n}/α⌉`` — where ``ρ_LB`` is a rigorous lower bound on
the volume fraction of the intersection of the good balls
(:func:`ball_intersection_lower_bound`). Privacy needs ``N ≤ N_priv`` (P1,
:func:`skuserdp.privacy.ball_sampler_max_rounds`); a larger N is clamped to
``N_priv`` (still private, accuracy degrades, the failure bound says by how
much). Privacy never depends on the data through N: that is why N is not, and
must not be, tuned on the data.

**Accuracy** (at least a β fraction of the points within r of an unknown x):
the output is within ``R + r`` of x except with probability at most
``P[G₂] + P[G₁] + P[far] ≤ (1 − q)/((N − 1)q + 1) + (4/δ_a)e^{−ε_a βn}/ρ_LB +
(1 − β)n e^{−ε_a(2β − 1)n}/ρ_LB`` with ``q = c_acc ρ_LB``
(:ref:`papers-emn-feasibility`).

**Algorithm 2 (Corollary 5).** k independent runs (their own random streams;
the result does not depend on ``n_jobs``) and the coordinate-wise median of
the non-garbage outputs; per-copy budget from the better of basic and
advanced composition; k is the smallest with ``P[Bin(k, 1 − β₀) < 0.6k] ≤ α``
(β₀ the per-copy failure bound). If at least 60 % of the copies are within
``R + r`` of x, the median is within ``√(s/(s − k/2))·(R + r)``,
``s = ⌈0.6k⌉`` (:ref:`papers-emn-median`).

**Algorithm 4 (user level).** Each user is reduced to its mean; with
``samples_per_user = m`` public and a per-row radius r
(``E‖X − μ‖² ≤ r²``) the user means are within ``r′ = t·r/√m`` of μ except
with probability ``2/t²`` each (Markov; ``t = 10`` in the paper).

**Robustness.** Up to a fraction κ (``robustness``, default 1/4 as in the
paper, any κ < 1/2) of the users may be replaced by an adversary who has seen
the data. The cap is ``βn`` with ``β = 1 − κ − η``, ``η = (1 − 2κ)/6``
(β = 2/3 at κ = 1/4, the paper's value), ``c_acc = β/2`` and
``t = max(10, 2/√η)``; the honest concentration step fails with probability
``P[Bin(n, 1 − 2/t²) < (1 − η)n]``.

The unit of privacy is the user: neighbouring datasets differ in all rows
of one user (replace-one, n public).

The function and the estimator
------------------------------

FewUsersBallEstimator: user-level means from few users (EMN Algorithms 1, 2, 4).

Esfandiari, Mirrokni and Narayanan, "Tight and Robust Private Mean
Estimation with Few Users" [EMN22]_, §3.2, Corollary 5 and §4 (Theorem 7);
docs: :ref:`papers-emn`, :ref:`papers-emn-deviations`. The sampler, its public
plan and the accuracy bounds are in :mod:`skuserdp.mean._few_users`; its
privacy map in :mod:`skuserdp.privacy._ball_sampler`. This module turns the
declared public knowledge into the sampler's radius and picks the method
(:func:`plan_few_users`, public values only), runs it
(:func:`few_users_from_plan`), and wraps both as a function and an
estimator.
"""


import functools
import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from scipy import special, stats
from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..exceptions import AccuracyWarning
from ..mechanisms import RandomHadamardRotation, padded_dimension
from ..mechanisms._ball_sampler import run_ball_sampler
from ..privacy import (
    ApproxDP,
    advanced_composition_step,
    ball_sampler_max_rounds,
    ball_sampler_privacy,
    calibrate_ball_sampler,
    compose_homogeneous,
)
from ..utils._docstrings import fill_doc
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import (
    _as_2d_float,
    _check_plan_shape,
    check_center,
    check_positive_scalar,
)
from ..utils._warnings import warn_at_caller
from ._base import UserLevelMeanEstimator

__all__ = [
    "BallPlan",
    "ball_intersection_lower_bound",
    "robust_cap",
    "plan_ball_sampler",
    "ball_sampler",
    "plan_median_of_balls",
    "median_of_balls",
    "min_users_for_ball_sampler",
    "MedianPlan",
    "InterpolationPlan",
    "plan_interpolation",
    "interpolated_balls",
    "few_users_mean",
    "user_radius",
    "FewUsersPlan",
    "plan_few_users",
    "few_users_from_plan",
    "FewUsersBallEstimator",
]


# ============================================================================
# Layer: The ball sampler and its plans (Algorithms 1, 2 and 4)
# (formerly skuserdp.mean._few_users)
# ============================================================================

# Per-copy failure target of Algorithm 2 (our
# choice: 0.1, not 1/3; docs: papers-emn-median).
MEDIAN_COPY_ALPHA = 0.1
# Algorithm 2 never runs more copies than this.
MAX_COPIES = 99
#: Cap on the worst-case expected work of one sampler run, in distance
#: terms (mean number of rounds N × n_users × n_features; about 1 ns each,
#: so a few minutes): a plan above it (e.g. from a tiny alpha, N ∝ 1/alpha)
#: is refused before the loop.
MAX_SAMPLER_WORK = 1e11


def robust_cap(robustness):
    """Cap fraction β, slack η and Markov factor t for corruption level κ.

    Parameters
    ----------
    robustness : float
        κ in ``(0, 1/2)``: the largest fraction of users an adversary may
        replace.

    Returns
    -------
    beta, eta, t : float
        ``η = (1 − 2κ)/6``, ``β = 1 − κ − η``, ``t = max(10, 2/√η)``.

    Examples
    --------
    >>> from skuserdp.mean._few_users import robust_cap
    >>> [round(v, 4) for v in robust_cap(0.25)]
    [0.6667, 0.0833, 10.0]
    """
    kappa = float(robustness)
    if not 0 < kappa < 0.5:
        raise ValueError(f"robustness must be in (0, 1/2), got {robustness!r}.")
    eta = (1.0 - 2.0 * kappa) / 6.0
    return 1.0 - kappa - eta, eta, max(10.0, 2.0 / math.sqrt(eta))


@functools.lru_cache(maxsize=1024)
def ball_intersection_lower_bound(n_points, n_features, ratio):
    """Lower bound ρ_LB on ``Vol(∩ good balls)/V_B`` (:ref:`papers-emn-rounds`).

    Good points lie within 1 of some x; balls have radius ``c = ratio ≥ 1``.
    ``ρ_LB = max{((c − 1)/c)^d, max_t (s/c)^d (1 − n I_{(1−t/s)/2}(a, a))}``
    with ``s = √(c² − 1 − 2t)``, ``a = (d + 1)/2``: a point within s of x
    and at most t behind x in the direction of every good point lies in every
    good ball; a union bound over at most n directions.

    Parameters
    ----------
    n_points : int
        Number of good points (n is an upper bound).
    n_features : int
        Dimension d.
    ratio : float
        ``c = R/r``, ``> 1``.

    Returns
    -------
    rho : float
        The bound, in ``(0, 1]``.

    Examples
    --------
    >>> from skuserdp.mean._few_users import ball_intersection_lower_bound
    >>> round(ball_intersection_lower_bound(100, 100, 10.0), 3)
    0.029
    """
    n, d, c = int(n_points), int(n_features), float(ratio)
    if c <= 1:
        raise ValueError(f"ratio must be > 1, got {ratio!r}.")
    best = d * math.log((c - 1.0) / c)
    # The best t is O(1) in high dimension and O(c²) in low dimension: a
    # geometric and a linear grid over (0, (c² − 1)/2).
    t_max = (c * c - 1.0) / 2.0
    t = np.concatenate([np.geomspace(1e-6 * t_max, t_max * (1 - 1e-3), 600),
                        t_max * np.linspace(1e-3, 1 - 1e-3, 200)])
    s = np.sqrt(c * c - 1.0 - 2.0 * t)
    a = (d + 1) / 2.0
    tail = special.betainc(a, a, np.clip((1.0 - t / s) / 2.0, 0.0, 1.0))
    inside = 1.0 - n * tail
    ok = inside > 0
    if ok.any():
        logs = d * np.log(s[ok] / c) + np.log(inside[ok])
        best = max(best, float(logs.max()))
    return math.exp(best)


@dataclass(frozen=True)
class BallPlan:
    """Every public quantity of one run of the ball sampler (Algorithm 1).

    Parameters
    ----------
    n_users, n_features : int
        n and d of the points.
    radius, ball_radius : float
        r (concentration radius of the good points) and ``R = c·r``.
    cap_fraction : float
        β (the score cap is βn).
    accept : float
        ``c_acc``.
    epsilon_a, delta_a : float
        Internal privacy parameters.
    n_rounds : float
        Mean number of rounds N (stop probability 1/N after a rejection).
    rounds_clamped : bool
        Whether N was lowered to ``N_priv`` for privacy (accuracy degrades).
    rho : float
        ρ_LB.
    failure_bound : float
        Bound on ``P[output farther than R + r from x]`` (or garbage) when a
        β fraction of the points is within r of x.
    loss : ApproxDP
        The user-level guarantee of one run.

    Examples
    --------
    >>> from skuserdp.mean._few_users import plan_ball_sampler
    >>> plan = plan_ball_sampler(200, 10, radius=1.0, epsilon=1.0, delta=1e-6,
    ...                          alpha=0.1)
    >>> plan.ball_radius == 10 ** 0.5, plan.loss.epsilon <= 1.0
    (True, True)
    """

    n_users: int
    n_features: int
    radius: float
    ball_radius: float
    cap_fraction: float
    accept: float
    epsilon_a: float
    delta_a: float
    n_rounds: float
    rounds_clamped: bool
    rho: float
    failure_bound: float
    loss: ApproxDP

    @property
    def error_bound(self):
        """``R + r``: the accuracy radius of a successful run."""
        return self.ball_radius + self.radius


def _max_acceptance(n, eps_a, beta, accept):
    f = np.arange(1, n + 1, dtype=np.float64)
    log_a = np.log(accept * n / f) + eps_a * (np.minimum(f, beta * n) - beta * n)
    return float(np.exp(log_a.max()))


def _g2_probability(q, n_rounds):
    return (1.0 - q) / ((n_rounds - 1.0) * q + 1.0)


def plan_ball_sampler(n_users, n_features, *, radius, epsilon, delta, alpha=0.1,
                      robustness=0.25, calibration="tight"):
    """Plan one run of the ball sampler from public values only.

    Parameters
    ----------
    n_users : int
        Number of points n (users; public).
    n_features : int
        Dimension d.
    radius : float
        r: a β fraction of the points is promised within r of an unknown x
        (accuracy only).
    epsilon, delta : float
        Target user-level guarantee of the run; ``delta > 0``.
    alpha : float, default=0.1
        Target failure probability (sets N; accuracy and run time only).
    robustness : float, default=0.25
        κ, see :func:`robust_cap`.
    calibration : {"tight", "paper"}, default="tight"
        ``"paper"``: ``ε_a = ε/4`` and the paper's ``N = ⌈18e^{10√ln n}/α⌉``
        (clamped to ``N_priv``); ``"tight"``: the exact privacy map and N from
        ρ_LB.

    Returns
    -------
    plan : BallPlan
        Private for every n ≥ 2; ``failure_bound`` says how accurate.

    Examples
    --------
    >>> from skuserdp.mean._few_users import plan_ball_sampler
    >>> plan = plan_ball_sampler(104, 100, radius=0.1, epsilon=1.0, delta=1e-5,
    ...                          alpha=0.05)
    >>> plan.failure_bound <= 0.05, plan.error_bound
    (True, 1.1)
    """
    n, d = int(n_users), int(n_features)
    if n < 2 or d < 1:
        raise ValueError("the ball sampler needs n_users >= 2 and n_features >= 1.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    beta = robust_cap(robustness)[0]
    eps_a, delta_a = calibrate_ball_sampler(epsilon, delta, calibration=calibration)
    c = max(math.sqrt(d), 2.0)
    if not math.isfinite(c * float(radius)):
        raise ValueError(
            f"radius {float(radius):.3g} is too large: the sampler's balls of radius "
            f"max(√d, 2)·radius exceed the float64 range (about 1.8e308). Rescale "
            "the data (and the radius).")
    accept = beta / 2.0
    a_max = _max_acceptance(n, eps_a, beta, accept)
    if a_max > 0.5:  # P0: lower the common constant, never clip per point
        accept *= 0.5 / a_max
    rho = ball_intersection_lower_bound(n, d, c)
    if calibration == "paper":
        n_rounds = math.ceil(18.0 * math.exp(10.0 * math.sqrt(math.log(n))) / alpha)
    else:
        n_rounds = math.ceil(2.0 / (alpha * accept * rho))
    log_priv = ball_sampler_max_rounds(n, eps_a, delta_a, accept=accept,
                                       cap_fraction=beta)
    # P1 holds for N <= N_priv, and N_priv >= 4/(c_acc e^{ε_a}) >= 1 always, so
    # privacy never needs more users; a larger N is clamped (accuracy only).
    clamped = math.log(n_rounds) > log_priv
    if clamped:
        n_rounds = max(1, math.floor(math.exp(log_priv)))
    q = accept * rho
    fail = (_g2_probability(q, n_rounds)
            + (4.0 / delta_a) * math.exp(-eps_a * beta * n) / rho
            + (1.0 - beta) * n * math.exp(-eps_a * (2.0 * beta - 1.0) * n) / rho)
    return BallPlan(
        n_users=n, n_features=d, radius=float(radius), ball_radius=c * float(radius),
        cap_fraction=beta, accept=accept, epsilon_a=eps_a, delta_a=delta_a,
        n_rounds=float(n_rounds), rounds_clamped=clamped, rho=rho,
        failure_bound=min(1.0, fail), loss=ball_sampler_privacy(eps_a, delta_a),
    )


def min_users_for_ball_sampler(epsilon, delta, n_features, *, alpha=0.1,
                               robustness=0.25, calibration="tight"):
    """Smallest number of users whose ball-sampler plan meets the failure target α.

    The sampler is private for every n; this is the accuracy threshold
    (:ref:`papers-emn-feasibility`) of Algorithm 1, i.e. of
    :func:`plan_few_users` with ``method="ball"`` and no
    ``samples_per_user``. It barely depends on d. A function of public
    values only.

    Parameters
    ----------
    epsilon, delta : float
        Target user-level guarantee (neighbours replace one user's data; the
        number of users is public), ``delta`` in ``(0, 1)``.
    n_features : int
        Dimension d.
    alpha : float, default=0.1
        Required ``failure_bound``.
    robustness : float, default=0.25
        κ, the fraction of users an adversary may replace, in ``(0, 1/2)``.
    calibration : {"tight", "paper"}, default="tight"
        As in :func:`plan_few_users`.

    Returns
    -------
    n_min : int
        The least number of users (at least 2) whose planned failure bound
        is at most ``alpha``.

    Examples
    --------
    >>> from skuserdp.mean import min_users_for_ball_sampler
    >>> min_users_for_ball_sampler(1.0, 1e-5, 100, alpha=0.05)
    102
    """
    def ok(n):
        plan = plan_ball_sampler(n, n_features, radius=1.0, epsilon=epsilon,
                                 delta=delta, alpha=alpha, robustness=robustness,
                                 calibration=calibration)
        return plan.failure_bound <= alpha

    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > 1 << 30:
            raise ValueError("no number of users below 2^30 meets alpha.")
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return max(hi, 2)


def check_sampler_work(plan):
    """Refuse a :class:`BallPlan` whose expected run time is absurd.

    The number of rounds is geometric with mean up to ``plan.n_rounds`` (it
    is reached when the points are spread), each round a pass over the
    ``n_users × n_features`` points; ``n_rounds`` grows as 1/alpha.

    Parameters
    ----------
    plan : BallPlan
        A sampler plan (public values only).

    Raises
    ------
    ValueError
        When ``n_rounds · n_users · n_features > MAX_SAMPLER_WORK``.
    """
    work = plan.n_rounds * plan.n_users * plan.n_features
    if work > MAX_SAMPLER_WORK:
        raise ValueError(
            f"the ball sampler's plan needs up to {plan.n_rounds:.3g} rounds on "
            f"average, each over {plan.n_users} x {plan.n_features} values: "
            f"{work:.3g} > MAX_SAMPLER_WORK = {MAX_SAMPLER_WORK:.0e}, hours of run "
            "time. The rounds grow as 1/alpha (and slowly with the number of "
            "users), and each is a pass over every user: use a larger alpha, "
            "method='median' when alpha is small (its copies run at alpha 0.1), "
            "or, with this many users, an estimator for many users "
            "(UserMeanEstimator or CoinPressMeanEstimator with bounds).")


def ball_sampler(points, plan, random_state=None):
    """One run of the ball sampler (EMN Algorithm 1).

    The plan's checks, then the rounds drawn by
    :func:`skuserdp.mechanisms._ball_sampler.run_ball_sampler`.

    Parameters
    ----------
    points : ndarray of shape (n_users, n_features)
        One point per user (finite). Not modified.
    plan : BallPlan
        From :func:`plan_ball_sampler` with the same shape.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness (``None``: fresh OS entropy).

    Returns
    -------
    point : ndarray of shape (n_features,) or None
        The released point (snapped to a grid of spacing about ``2^-20 R``
        while ``|x|/R ≲ 2^32``; beyond, the float grid is coarser), or None
        for a garbage bucket.
    outcome : {"point", "G1", "G2"}
        What was released (part of the private output).

    Raises
    ------
    ValueError
        Before any round, when the plan's worst-case expected work
        ``n_rounds · n_users · n_features`` exceeds ``MAX_SAMPLER_WORK``
        (1e11): the run could take hours (``n_rounds`` grows as 1/alpha).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._few_users import ball_sampler, plan_ball_sampler
    >>> X = np.random.default_rng(0).normal(3.0, 0.1, size=(200, 4))
    >>> plan = plan_ball_sampler(200, 4, radius=0.5, epsilon=1.0, delta=1e-6)
    >>> p, outcome = ball_sampler(X, plan, random_state=0)
    >>> outcome, bool(np.linalg.norm(p - 3.0) <= plan.error_bound)
    ('point', True)
    """
    X = np.asarray(points, dtype=np.float64)
    n, d = X.shape
    if (n, d) != (plan.n_users, plan.n_features):
        raise ValueError(
            f"points must have shape ({plan.n_users}, {plan.n_features}) to match "
            f"the plan, got {X.shape}."
        )
    check_sampler_work(plan)
    return run_ball_sampler(
        X, ball_radius=plan.ball_radius, cap_fraction=plan.cap_fraction,
        accept=plan.accept, epsilon_a=plan.epsilon_a, delta_a=plan.delta_a,
        n_rounds=plan.n_rounds, rng=generator_from(make_seed_sequence(random_state)))


@dataclass(frozen=True)
class MedianPlan:
    """Public plan of Algorithm 2: ``n_copies`` runs of ``copy`` and a median.

    Examples
    --------
    >>> from skuserdp.mean._few_users import plan_median_of_balls
    >>> plan = plan_median_of_balls(2000, 10, radius=1.0, epsilon=1.0,
    ...                             delta=1e-6, alpha=1e-3)
    >>> plan.n_copies, plan.failure_bound <= 1e-3, plan.loss.epsilon <= 1.0
    (5, True, True)
    """

    copy: BallPlan
    n_copies: int
    failure_bound: float
    error_bound: float
    loss: ApproxDP


def plan_median_of_balls(n_users, n_features, *, radius, epsilon, delta, alpha=0.1,
                         robustness=0.25, calibration="tight"):
    """Plan Algorithm 2 (median of k ball-sampler runs) from public values.

    Parameters
    ----------
    n_users, n_features : int
        n and d.
    radius : float
        r.
    epsilon, delta : float
        Total user-level guarantee of all k runs.
    alpha : float, default=0.1
        Target failure probability of the median.
    robustness : float, default=0.25
        κ.
    calibration : {"tight", "paper"}, default="tight"
        Per-copy calibration.

    Returns
    -------
    plan : MedianPlan
        The smallest k whose binomial failure bound meets α (at most
        ``MAX_COPIES``; the failure bound says whether α was reached).
    """
    best = None
    for k in range(1, MAX_COPIES + 1, 2):
        if k == 1:
            eps_c, delta_c, slack = epsilon, delta, None
        else:
            slack = delta / 2.0
            eps_c = advanced_composition_step(epsilon, slack, k)
            delta_c = delta / (2.0 * k)
        copy = plan_ball_sampler(n_users, n_features, radius=radius, epsilon=eps_c,
                                 delta=delta_c, alpha=MEDIAN_COPY_ALPHA,
                                 robustness=robustness, calibration=calibration)
        if k > 1 and copy.failure_bound >= 0.4:
            # Fewer than 60 % good copies on average: more copies (each with
            # less budget, so worse) can only make the median less reliable.
            break
        if k == 1:  # the median of one copy is the copy
            fail, err, loss = copy.failure_bound, copy.error_bound, copy.loss
        else:
            s = math.ceil(0.6 * k)
            fail = float(stats.binom.cdf(s - 1, k, 1.0 - copy.failure_bound))
            loss = compose_homogeneous(copy.loss, k, slack)
            err = math.sqrt(s / (s - k / 2.0)) * copy.error_bound
        plan = MedianPlan(copy=copy, n_copies=k, failure_bound=min(1.0, fail),
                          error_bound=err, loss=loss)
        if best is None or plan.failure_bound < best.failure_bound:
            best = plan
        if fail <= alpha:
            return plan
    return best


def _sample_all(tasks, plan, n_jobs):
    """:func:`ball_sampler` on every ``(points, seed)`` task, in order.

    Each task has its own seed, so the results do not depend on ``n_jobs``.
    """
    if n_jobs in (None, 1) or len(tasks) == 1:
        return [ball_sampler(P, plan, random_state=s) for P, s in tasks]
    return Parallel(n_jobs=n_jobs)(delayed(ball_sampler)(P, plan, s)
                                   for P, s in tasks)


def median_of_balls(points, plan, random_state=None, n_jobs=None):
    """Run Algorithm 2: k independent ball-sampler runs and their median.

    Parameters
    ----------
    points : ndarray of shape (n_users, n_features)
        One point per user. Not modified.
    plan : MedianPlan
        From :func:`plan_median_of_balls`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness; each copy gets its own child stream.
    n_jobs : int, default=None
        Workers over copies (joblib); results do not depend on it.

    Returns
    -------
    point : ndarray of shape (n_features,) or None
        Coordinate-wise median of the non-garbage outputs; None if every
        copy returned a garbage bucket.
    n_garbage : int
        Number of copies that returned a garbage bucket (a private output).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._few_users import median_of_balls, plan_median_of_balls
    >>> X = np.random.default_rng(0).normal(-2.0, 0.1, size=(300, 3))
    >>> plan = plan_median_of_balls(300, 3, radius=0.5, epsilon=1.0, delta=1e-6)
    >>> p, n_garbage = median_of_balls(X, plan, random_state=0)
    >>> bool(np.linalg.norm(p + 2.0) <= plan.error_bound)
    True
    """
    X = np.asarray(points, dtype=np.float64)
    seeds = make_seed_sequence(random_state).spawn(plan.n_copies)
    outs = _sample_all([(X, s) for s in seeds], plan.copy, n_jobs)
    good = [p for p, _ in outs if p is not None]
    if not good:
        return None, plan.n_copies
    return np.median(np.array(good), axis=0), plan.n_copies - len(good)


@dataclass(frozen=True)
class InterpolationPlan:
    """Public plan of Algorithm 3: ``k²`` blocks of a rotated space.

    Parameters
    ----------
    n_blocks_side : int
        k (a power of two, ``k² ≤ d′``); ``k²`` blocks of ``d′/k²``
        coordinates.
    n_padded : int
        d′.
    block : BallPlan
        The plan of every block's sampler.
    failure_bound, error_bound : float
        Total failure bound (rotation + blocks) and ``k·(R_blk + r_blk)``.
    loss : ApproxDP
        Composition of the ``k²`` block runs.

    Examples
    --------
    >>> from skuserdp.mean._few_users import plan_interpolation
    >>> plan = plan_interpolation(4000, 256, radius=1.0, epsilon=1.0,
    ...                           delta=1e-6, alpha=0.1, n_blocks_side=4)
    >>> plan.block.n_features, round(plan.error_bound, 1), plan.loss.epsilon <= 1
    (16, 29.6, True)
    """

    n_blocks_side: int
    n_padded: int
    block: BallPlan
    failure_bound: float
    error_bound: float
    loss: ApproxDP


def plan_interpolation(n_users, n_features, *, radius, epsilon, delta, alpha=0.1,
                       robustness=0.25, calibration="tight", n_blocks_side=None):
    """Plan Algorithm 3 (EMN Theorem 6) from public values.

    After a random Hadamard rotation (signs independent of the data), every
    coordinate of a good point's offset ``x_u − x`` is at most
    ``r√(2 ln(2d′n/α_rot)/d′)`` (Hoeffding, ``α_rot = α/2``), so each block of
    ``d′/k²`` coordinates holds the good points within
    ``r_blk = r√(2 ln(2d′n/α_rot))/k``. Each block runs the ball sampler
    with failure target ``α/(2k²)``, at the per-block budget of the better of
    basic and advanced composition over ``k²`` runs (``δ/(2k²)`` each plus a
    slack ``δ/2``). The error is at most ``k(R_blk + r_blk)`` with
    ``R_blk = max(√(d′/k²), 2)·r_blk`` — about ``r√(2 ln(2d′n/α))(1 + √d′/k)``,
    below Algorithm 1's ``(√d + 1)r`` once ``k`` exceeds the log factor.

    Parameters
    ----------
    n_users, n_features : int
        n and d.
    radius : float
        r.
    epsilon, delta : float
        Total guarantee.
    alpha : float, default=0.1
        Target failure probability.
    robustness : float, default=0.25
        κ.
    calibration : {"tight", "paper"}, default="tight"
        Per-block calibration.
    n_blocks_side : int, default=None
        k; ``None`` picks, among powers of two with ``k² ≤ d′``, the one of
        least error bound whose failure bound meets α (else of least failure
        bound).

    Returns
    -------
    plan : InterpolationPlan
    """
    n, d = int(n_users), int(n_features)
    d_pad = padded_dimension(d)
    if n_blocks_side is None:
        sides = [1 << j for j in range(0, 32) if (1 << (2 * j)) <= d_pad]
        plans = [plan_interpolation(n, d, radius=radius, epsilon=epsilon, delta=delta,
                                    alpha=alpha, robustness=robustness,
                                    calibration=calibration, n_blocks_side=k)
                 for k in sides]
        ok = [p for p in plans if p.failure_bound <= alpha]
        if ok:
            return min(ok, key=lambda p: p.error_bound)
        return min(plans, key=lambda p: p.failure_bound)
    k = int(n_blocks_side)
    blocks = k * k
    if k < 1 or blocks > d_pad or (k & (k - 1)):
        raise ValueError(
            f"n_blocks_side must be a power of two with k^2 <= {d_pad}, got {k}."
        )
    if blocks == 1:  # Algorithm 1 itself: no rotation, no log factor
        return _single_block(n, d, radius, epsilon, delta, alpha, robustness,
                             calibration)
    alpha_rot = alpha / 2.0
    r_blk = radius * math.sqrt(2.0 * math.log(2.0 * d_pad * n / alpha_rot)) / k
    slack = delta / 2.0
    eps_b = advanced_composition_step(epsilon, slack, blocks)
    block = plan_ball_sampler(n, d_pad // blocks, radius=r_blk, epsilon=eps_b,
                              delta=delta / (2.0 * blocks),
                              alpha=alpha / (2.0 * blocks), robustness=robustness,
                              calibration=calibration)
    loss = compose_homogeneous(block.loss, blocks, slack)
    return InterpolationPlan(
        n_blocks_side=k, n_padded=d_pad, block=block,
        failure_bound=min(1.0, alpha_rot + blocks * block.failure_bound),
        error_bound=k * block.error_bound, loss=loss,
    )


def _single_block(n, d, radius, epsilon, delta, alpha, robustness, calibration):
    block = plan_ball_sampler(n, d, radius=radius, epsilon=epsilon, delta=delta,
                              alpha=alpha, robustness=robustness,
                              calibration=calibration)
    return InterpolationPlan(n_blocks_side=1, n_padded=d, block=block,
                             failure_bound=block.failure_bound,
                             error_bound=block.error_bound, loss=block.loss)


def interpolated_balls(points, plan, random_state=None, n_jobs=None):
    """Run Algorithm 3: rotate, one ball sampler per block, rotate back.

    Parameters
    ----------
    points : ndarray of shape (n_users, n_features)
        One point per user. Not modified.
    plan : InterpolationPlan
        From :func:`plan_interpolation`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the rotation signs and of every block's sampler (own
        child streams; results do not depend on ``n_jobs``).
    n_jobs : int, default=None
        Workers over blocks (joblib).

    Returns
    -------
    point : ndarray of shape (n_features,) or None
        The estimate; None if any block released a garbage bucket.
    n_garbage : int
        Number of blocks that released a garbage bucket (a private output).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._few_users import interpolated_balls, plan_interpolation
    >>> X = np.random.default_rng(0).normal(5.0, 0.05, size=(3000, 64))
    >>> plan = plan_interpolation(3000, 64, radius=0.6, epsilon=1.0, delta=1e-6,
    ...                           n_blocks_side=2)
    >>> p, n_garbage = interpolated_balls(X, plan, random_state=0)
    >>> n_garbage, bool(np.linalg.norm(p - 5.0) <= plan.error_bound)
    (0, True)
    """
    X = np.asarray(points, dtype=np.float64)
    n, d = X.shape
    rot_seed, block_seed = make_seed_sequence(random_state).spawn(2)
    k2 = plan.n_blocks_side ** 2
    if k2 == 1:
        p, _ = ball_sampler(X, plan.block, random_state=block_seed)
        return p, int(p is None)
    rotation = RandomHadamardRotation(d, rot_seed)
    Y = rotation.rotate(X)
    width = plan.n_padded // k2
    seeds = block_seed.spawn(k2)
    parts = [np.ascontiguousarray(Y[:, b * width:(b + 1) * width]) for b in range(k2)]
    outs = _sample_all(list(zip(parts, seeds)), plan.block, n_jobs)
    n_garbage = sum(p is None for p, _ in outs)
    if n_garbage:
        return None, n_garbage
    z = np.concatenate([p for p, _ in outs])
    return rotation.unrotate(z[None, :])[0], 0


# ============================================================================
# Layer: The function and the estimator
# (formerly skuserdp.mean._few_users)
# ============================================================================

#: "auto" runs a single sampler unless its mean number of rounds exceeds this
AUTO_MAX_ROUNDS = 1e5


def user_radius(radius, samples_per_user, n_users, robustness=0.25):
    """Compute the radius of the user means and the chance that too few are inside.

    The public step of :func:`plan_few_users` with ``samples_per_user``
    (EMN Algorithm 4); a function of public values only. With ``m`` rows
    per user and ``E‖X − μ‖² ≤ r²`` per row (rows of one user may be
    correlated, but ``E⟨X_j − μ, X_k − μ⟩ ≤ r²/m``), a user mean is within
    ``r′ = t·r/√m`` of μ except with probability ``2/t²`` (Markov). The
    algorithm needs a β fraction of all users within ``r′`` after the
    adversary replaced a κ fraction, i.e. a ``1 − η`` fraction before.

    Parameters
    ----------
    radius : float
        Public per-row radius r.
    samples_per_user : int
        Public minimum number of rows per user m.
    n_users : int
        Number of users n.
    robustness : float, default=0.25
        κ, the fraction of users an adversary may replace, in ``(0, 1/2)``;
        it sets the Markov factor ``t = max(10, 2/√η)``, ``η = (1 − 2κ)/6``.

    Returns
    -------
    r_user : float
        ``t·r/√m`` (``t = 10`` at κ = 1/4, as in the paper).
    failure : float
        ``P[Bin(n, 1 − 2/t²) < (1 − η)n]``.

    Examples
    --------
    >>> from skuserdp.mean import user_radius
    >>> r, fail = user_radius(1.0, 10_000, 104)
    >>> r, bool(fail < 0.01)
    (0.1, True)
    """
    _, eta, t = robust_cap(robustness)
    m = int(samples_per_user)
    p_bad = 2.0 / (t * t)
    need = math.ceil((1.0 - eta) * n_users - 1e-9)
    failure = float(stats.binom.cdf(need - 1, int(n_users), 1.0 - p_bad))
    return t * float(radius) / math.sqrt(m), failure


def _plans(n, d, r, epsilon, delta, alpha, robustness, calibration, method):
    """(name, plan) of the method to run; public values only."""
    kwargs = dict(radius=r, epsilon=epsilon, delta=delta, alpha=alpha,
                  robustness=robustness, calibration=calibration)
    if method == "ball":
        return "ball", plan_ball_sampler(n, d, **kwargs)
    if method == "median":
        return "median", plan_median_of_balls(n, d, **kwargs)
    if method == "interpolate":
        return "interpolate", plan_interpolation(n, d, **kwargs)
    # auto: the least error bound among plans meeting alpha (Algorithm 3's
    # k = 1 is Algorithm 1); Algorithm 2 when Algorithm 1 would need more
    # than AUTO_MAX_ROUNDS rounds; else the least failure bound.
    interp = plan_interpolation(n, d, **kwargs)
    if interp.n_blocks_side > 1 and interp.failure_bound <= alpha:
        return "interpolate", interp
    # interp.block is Algorithm 1's plan only when k = 1.
    ball = (interp.block if interp.n_blocks_side == 1
            else plan_ball_sampler(n, d, **kwargs))
    if ball.failure_bound <= alpha and ball.n_rounds <= AUTO_MAX_ROUNDS:
        return "ball", ball
    median = plan_median_of_balls(n, d, **kwargs)
    if median.n_copies > 1 and (median.failure_bound <= alpha
                                or median.failure_bound < ball.failure_bound):
        return "median", median
    return "ball", ball


@dataclass(frozen=True)
class FewUsersPlan:
    """Every public quantity of one few-users release (EMN Algorithms 1–4).

    Computed by :func:`plan_few_users` from public values only (n, d, the
    budget, the radius and the method's knobs), never from the data: the
    method, its rounds, copies or blocks, the error and failure bounds and
    the privacy loss are the same for every dataset of the public shape.
    The loss is user-level: two datasets are neighbours when the data of
    one user are replaced (the number of users is public).

    Parameters
    ----------
    n_users, n_features : int
        Public shape of the per-user vectors.
    method : {"ball", "median", "interpolate"}
        The algorithm run: Algorithm 1 (one ball-sampler run), 2 (the median
        of independent runs) or 3 (one run per block of a random rotation).
    radius : float
        ``r′``: the radius around an unknown point promised to hold a β
        fraction of the user means (with ``samples_per_user``, ``t·r/√m``
        from the per-row radius r, see :func:`user_radius`).
    concentration_failure : float
        Bound on the probability that too few user means lie within
        ``radius`` (0 without ``samples_per_user``).
    method_plan : BallPlan, MedianPlan or InterpolationPlan
        The public plan of ``method``: rounds, acceptance constant and
        internal budget of the sampler; copies or blocks.
    error_bound : float
        Public radius: unless the release fails, the estimate is within it
        of the population mean (of the unknown point).
    failure_bound : float
        Bound on the probability of a larger error or of a garbage bucket,
        ``concentration_failure`` included.
    loss : ApproxDP
        The user-level privacy loss of the release.

    Examples
    --------
    >>> from skuserdp.mean import plan_few_users
    >>> from skuserdp.privacy import ApproxDP
    >>> plan = plan_few_users(200, 10, budget=ApproxDP(1.0, 1e-6), radius=1.0,
    ...                       method="ball")
    >>> plan.method, plan.error_bound == 10 ** 0.5 + 1, plan.loss.epsilon <= 1.0
    ('ball', True, True)
    """

    n_users: int
    n_features: int
    method: str
    radius: float
    concentration_failure: float
    method_plan: object
    error_bound: float
    failure_bound: float
    loss: ApproxDP


def plan_few_users(n_users, n_features, *, budget, radius, samples_per_user=None,
                   alpha=0.1, robustness=0.25, method="auto", calibration="tight"):
    """Plan a few-users release (EMN) from public values only.

    Chooses the algorithm as :class:`FewUsersBallEstimator`'s ``method``
    does and fixes every public quantity of its run; the private step is
    :func:`few_users_from_plan`. Privacy holds for every plan (the number of
    rounds, copies and blocks never depends on the data); ``alpha`` and
    ``radius`` set accuracy and run time only.

    Parameters
    ----------
    n_users : int
        Number of users n (public under replace-one neighbours), ``>= 2``.
    n_features : int
        Dimension d, ``>= 1``.
    budget : ApproxDP
        Target user-level guarantee (ε, δ), with δ in ``(0, 1)``: the
        garbage bucket of the sampler has mass ``4/δ``, so the method has no
        pure-DP form.
    radius : float
        Public radius: per row if ``samples_per_user`` is given (``E‖X −
        μ‖² ≤ r²``), else of the user means (a β fraction within it of an
        unknown point). Never estimate it from the data.
    samples_per_user : int, default=None
        Public minimum number of rows per user m.
    alpha : float, default=0.1
        Target failure probability (with ``samples_per_user``, half of it
        is planned for the sampler, the users' concentration failure is
        added to the plan's ``failure_bound``).
    robustness : float, default=0.25
        κ: fraction of users an adversary may replace, in ``(0, 1/2)``.
    method : {"auto", "ball", "median", "interpolate"}, default="auto"
        Algorithm 1, 2 or 3; ``"auto"``: Algorithm 3 with ``k > 1`` blocks
        if its error bound is smaller and it meets α, else Algorithm 1,
        unless that needs more than ``AUTO_MAX_ROUNDS`` (1e5) rounds (then
        Algorithm 2).
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: the exact privacy map of the sampler and a number of
        rounds from a rigorous volume bound; ``"paper"``: ``ε_a = ε/4`` and
        the paper's number of rounds.

    Returns
    -------
    plan : FewUsersPlan
        The chosen method, its public plan, error and failure bounds and
        privacy loss.

    Examples
    --------
    >>> from skuserdp.mean import plan_few_users
    >>> from skuserdp.privacy import ApproxDP
    >>> plan = plan_few_users(5000, 64, budget=ApproxDP(1.0, 1e-6), radius=1.0)
    >>> plan.method, plan.error_bound, plan.failure_bound <= 0.1
    ('ball', 9.0, True)

    With many users in high dimension, Algorithm 3 has the smaller error
    bound:

    >>> plan = plan_few_users(20000, 1024, budget=ApproxDP(1.0, 1e-6), radius=1.0)
    >>> plan.method, plan.method_plan.n_blocks_side, round(plan.error_bound, 1)
    ('interpolate', 16, 19.2)
    """
    if method not in ("auto", "ball", "median", "interpolate"):
        raise ValueError(
            "method must be 'auto', 'ball', 'median' or 'interpolate', got "
            f"{method!r}."
        )
    if not isinstance(budget, ApproxDP):
        raise TypeError(
            f"budget must be an ApproxDP loss (epsilon, delta > 0), got {budget!r}.")
    epsilon, delta = budget.epsilon, budget.delta
    if not 0 < delta < 1:
        raise ValueError(
            f"the few-users estimator needs delta in (0, 1), got {delta!r}: its "
            "garbage bucket has mass 4/delta."
        )
    n, d = int(n_users), int(n_features)
    radius = check_positive_scalar(radius, "radius")
    if samples_per_user is None:
        r, concentration_failure, alpha_item = radius, 0.0, alpha
    else:
        # Spec §2.5: half of α for the sampler, half for the users'
        # concentration (Markov + binomial).
        r, concentration_failure = user_radius(radius, samples_per_user, n, robustness)
        alpha_item = alpha / 2.0
        if not math.isfinite(r):
            raise ValueError(
                f"radius={radius:.3g} is too large: the users' radius 10·radius/"
                "√samples_per_user exceeds the float64 range (about 1.8e308). "
                "Rescale the data (and the radius).")
    name, inner = _plans(n, d, r, epsilon, delta, alpha_item, robustness, calibration,
                         method)
    return FewUsersPlan(
        n_users=n, n_features=d, method=name, radius=r,
        concentration_failure=concentration_failure, method_plan=inner,
        error_bound=inner.error_bound,
        failure_bound=min(1.0, inner.failure_bound + concentration_failure),
        loss=inner.loss)


def few_users_from_plan(user_means, plan, *, random_state=None, n_jobs=None):
    """Run a planned few-users release on per-user vectors (EMN).

    Parameters
    ----------
    user_means : array-like of shape (n_users, n_features)
        One vector per user; the shape must match the plan. Not modified.
        Non-finite rows are replaced by the origin (a per-user map: that
        user becomes an outlier).
    plan : FewUsersPlan
        From :func:`plan_few_users`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness.
    n_jobs : int, default=None
        Workers over the copies of Algorithm 2 or the blocks of Algorithm 3;
        results do not depend on it.

    Returns
    -------
    location : ndarray of shape (n_features,) or None
        The estimate, ``plan.loss``-DP at user level (replace-one user, the
        number of users public), or None when the mechanism released a
        garbage bucket.
    n_garbage : int
        Number of runs (copies, blocks) that released a garbage bucket (a
        private output, part of the release).

    Notes
    -----
    The run time depends on the data (few rounds on concentrated data, about
    the plan's mean number of rounds on spread data); pad it if the
    adversary can observe it.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import few_users_from_plan, plan_few_users
    >>> from skuserdp.privacy import ApproxDP
    >>> U = np.random.default_rng(0).normal(50.0, 0.01, size=(200, 5))
    >>> plan = plan_few_users(200, 5, budget=ApproxDP(1.0, 1e-6), radius=0.1)
    >>> loc, n_garbage = few_users_from_plan(U, plan, random_state=0)
    >>> n_garbage, bool(np.linalg.norm(loc - 50.0) <= plan.error_bound)
    (0, True)
    """
    U = np.ascontiguousarray(user_means, dtype=np.float64)
    _check_plan_shape("user_means", U, plan)
    bad = ~np.isfinite(U).all(axis=1)
    if bad.any():  # a per-user map, on a copy
        U = U.copy()
        U[bad] = 0.0
    if plan.method == "ball":
        location, _ = ball_sampler(U, plan.method_plan, random_state=random_state)
        return location, int(location is None)
    if plan.method == "interpolate":
        return interpolated_balls(U, plan.method_plan, random_state=random_state,
                                  n_jobs=n_jobs)
    return median_of_balls(U, plan.method_plan, random_state=random_state,
                           n_jobs=n_jobs)


def few_users_mean(user_means, *, epsilon, delta, radius, samples_per_user=None,
                   alpha=0.1, robustness=0.25, method="auto", calibration="tight",
                   random_state=None, n_jobs=None):
    """Estimate the location of per-user vectors from few users (EMN).

    :func:`plan_few_users` (public values only) followed by
    :func:`few_users_from_plan`, in one call. The guarantee is user-level:
    neighbouring datasets differ in the data of one user (replace-one, the
    number of users public).

    Parameters
    ----------
    user_means : array-like of shape (n_users, n_features)
        One vector per user. Not modified. Non-finite rows are replaced by
        the origin (a per-user map: that user becomes an outlier).
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)`` (the method needs δ > 0).
    radius : float
        Public radius: per row if ``samples_per_user`` is given (``E‖X −
        μ‖² ≤ r²``), else of the user means (a β fraction within it of an
        unknown point).
    samples_per_user : int, default=None
        Public minimum number of rows per user.
    alpha : float, default=0.1
        Target failure probability.
    robustness : float, default=0.25
        κ: fraction of users an adversary may replace, in ``(0, 1/2)``.
    method : {"auto", "ball", "median", "interpolate"}, default="auto"
        Algorithm 1, 2 or 3; ``"auto"``: Algorithm 3 with ``k > 1`` blocks
        if its error bound is smaller and it meets α, else Algorithm 1,
        unless that needs more than ``AUTO_MAX_ROUNDS`` rounds (then
        Algorithm 2).
    calibration : {"tight", "paper"}, default="tight"
        See :func:`skuserdp.mean._few_users.plan_ball_sampler`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness.
    n_jobs : int, default=None
        Workers over the copies of Algorithm 2 or the blocks of Algorithm 3.

    Returns
    -------
    location : ndarray of shape (n_features,) or None
        The estimate, or None when the mechanism released a garbage bucket.
    loss : ApproxDP
        The user-level privacy loss.
    info : dict
        Public facts of the release: ``method``, ``error_bound`` (radius
        around μ), ``failure_probability`` (bound on the probability of a
        larger error or garbage), ``n_garbage`` (garbage copies, a private
        output).

    Notes
    -----
    The run time depends on the data (few rounds on concentrated data, about
    N on spread data); pad it if the adversary can observe it. Centre the
    data by a *public* reference point when ``|x|/R`` is huge (beyond about
    2^32 the offsets within a ball are no longer representable finely; at
    2^51 the sampler degenerates to the float grid).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import few_users_mean
    >>> U = np.random.default_rng(0).normal(50.0, 0.01, size=(200, 5))
    >>> loc, loss, info = few_users_mean(U, epsilon=1.0, delta=1e-6, radius=0.1,
    ...                                  random_state=0)
    >>> bool(np.linalg.norm(loc - 50.0) <= info["error_bound"])
    True
    """
    U = _as_2d_float(user_means, "user_means")
    plan = plan_few_users(U.shape[0], U.shape[1], budget=ApproxDP(epsilon, delta),
                          radius=radius, samples_per_user=samples_per_user,
                          alpha=alpha, robustness=robustness, method=method,
                          calibration=calibration)
    location, n_garbage = few_users_from_plan(U, plan, random_state=random_state,
                                              n_jobs=n_jobs)
    info = dict(method=plan.method, error_bound=plan.error_bound,
                failure_probability=plan.failure_bound, n_garbage=n_garbage)
    return location, plan.loss, info


@fill_doc
class FewUsersBallEstimator(UserLevelMeanEstimator):
    """User-level private mean from few users (Esfandiari, Mirrokni, Narayanan).

    Accurate with only ``O(log(1/δ)/ε)`` users, whatever the dimension, and
    robust to a quarter of the users being adversarial. Each user is reduced
    to the mean of its rows. Around every user mean lies a ball of radius
    ``R = max(√d, 2)·r′``; the release is a random point drawn with density
    ``∝ exp(ε_a·min(#balls containing it, βn))`` — or a *garbage bucket* — by
    rejection sampling (Algorithm 1), or the coordinate-wise median of
    several such points (Algorithm 2). No bound on where the mean lies is
    needed, only the concentration radius.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    delta : float, default=1e-6
        Failure probability δ of the user-level guarantee, in ``(0, 1)``; the
        method needs δ > 0 and about ``8 ln(1/δ)/ε`` users.
    radius : float, default=None
        Public concentration radius, required (``fit`` raises without it:
        there is no safe default, and a radius learned from a box would make
        the error bound as large as the box). With ``samples_per_user`` it is the
        per-row radius r (``E‖X − μ‖² ≤ r²``, e.g. ``σ√d`` for Gaussian rows
        or the support radius) and the user means are promised within
        ``10r/√m``; without it, ``radius`` is directly the radius around an
        unknown point containing a β fraction (2/3 at κ = 1/4) of the user
        means. Only accuracy depends on it; never estimate it from the data.
    samples_per_user : int, default=None
        Public minimum number of rows per user m.
    alpha : float, default=0.1
        Target failure probability; sets the mean number of rounds (run
        time) and the number of copies of Algorithm 2. Privacy never depends
        on it. A plan whose mean rounds × users × features exceed
        ``MAX_SAMPLER_WORK`` (1e11, :mod:`skuserdp.mean._few_users`) is
        refused with a ``ValueError`` before sampling.
    robustness : float, default=0.25
        κ in ``(0, 1/2)``: the fraction of users an adversary may replace
        (after seeing the data) without breaking the accuracy guarantee. The
        paper's 1/4 gives the cap 2n/3; κ close to 1/2 needs about
        ``1/(1 − 2κ)`` times more users.
    method : {{"auto", "ball", "median", "interpolate"}}, default="auto"
        ``"ball"``: one run of Algorithm 1 (error ``R + r′``); ``"median"``:
        Algorithm 2, the median of ``k = O(log 1/α)`` runs at a split budget
        (fewer rounds for small α, error ``≈ √6 (R + r′)``, more users
        needed); ``"interpolate"``: Algorithm 3, a random rotation and one
        sampler in each of ``k²`` blocks of coordinates (error
        ``≈ r′√(2 ln(2d′n/α))(1 + √d′/k)``: better than Algorithm 1 once
        ``n ≳ √d·ln(1/δ)^{{3/2}}/ε``); ``"auto"``: the least error bound that
        meets α, with Algorithm 2 instead of 1 when 1 would need more than
        10⁵ rounds.
    {calibration}
        ``"tight"`` uses the exact privacy map of the sampler (about
        ``ε_a = ε/3``) and a number of rounds from a rigorous volume bound;
        ``"paper"`` uses ``ε_a = ε/4`` and the paper's
        ``N = 18e^{{10√ln n}}/α``, clamped to what privacy allows. Both
        correct the paper's δ (the sampler is about ``(3ε_a, 4.25δ_a)``-DP,
        not ``(4ε_a, 4δ_a)``).
    fallback : float or array-like of shape (n_features,), default=None
        Public point reported as ``mean_`` when the mechanism releases a
        garbage bucket; ``None`` is the origin.
    {random_state}
    {n_jobs}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private estimate, or ``fallback`` if ``garbage_``.
    garbage_ : bool
        Whether the mechanism released a garbage bucket (a private output);
        ``fit`` then warns with :class:`~skuserdp.exceptions.AccuracyWarning`.
    error_bound_ : float
        Public radius: with probability at least
        ``1 − failure_probability_`` (under the model), ``mean_`` is within
        ``error_bound_`` of the population mean.
    failure_probability_ : float
        Explicit bound on the probability of a larger error or garbage,
        computed from public values only (with ``samples_per_user``: α/2 is
        planned for the sampler and the users' concentration failure is
        added).
    method_ : {{"ball", "median", "interpolate"}}
        The algorithm run.
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_, delta_ : float
        The (ε, δ) actually spent (``<=`` the targets).
    rho_ : None
        This mechanism has no zCDP guarantee.
    privacy_loss_ : ApproxDP
        The native guarantee of the release.
    {feature_attributes}

    See Also
    --------
    WinsorizedMeanEstimator : Many users, a public box.
    ClipNoiseMeanEstimator : A public ball around a public centre.

    Notes
    -----
    The number of sampler rounds is random and depends on the data (few
    rounds when the users are concentrated, about N when they are spread):
    the *run time* of ``fit`` reveals how concentrated the data are. The
    released values are private; if the time is observable by the adversary,
    pad it (e.g. to a fixed deadline).

    The sampler is private for every n, but accurate only from about
    ``8 ln(1/δ)/ε`` users on (e.g. about 100 at ε = 1, δ = 1e-5, for any d);
    below that ``fit`` warns (:class:`~skuserdp.exceptions.AccuracyWarning`)
    and usually returns the fallback. Algorithms 1 and 2 have the error
    bound ``(max(√d, 2) + 1)·r′``, which does not shrink with n;
    Algorithm 3 (chosen by ``"auto"`` once it is better) shrinks it by up to
    ``√d`` for ``n ≳ √d·ln(1/δ)^{{3/2}}/ε``. This estimator is for few users
    and an unknown location, where clip-and-noise methods need a public
    centre or fail. Centre the data by a public point if ``|x|`` is huge
    compared with ``r′`` (floating point).

    References
    ----------
    Esfandiari, Mirrokni and Narayanan, "Tight and robust private mean
    estimation with few users", ICML 2022 (arXiv:2110.11876).

    Examples
    --------
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import FewUsersBallEstimator
    >>> X, groups, true_mean = make_user_samples(
    ...     n_users=150, n_features=20, samples_per_user=400, mean=700.0,
    ...     user_spread=0.0, sample_spread=1.0, random_state=0)
    >>> est = FewUsersBallEstimator(epsilon=1.0, delta=1e-6,
    ...                             radius=20 ** 0.5, samples_per_user=400,
    ...                             random_state=0).fit(X, groups=groups)
    >>> est.garbage_, bool(np.linalg.norm(est.mean_ - true_mean) <= est.error_bound_)
    (False, True)
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "radius": [None, Interval(Real, 0, None, closed="neither")],
        "samples_per_user": [None, Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "robustness": [Interval(Real, 0, 0.5, closed="neither")],
        "method": [StrOptions({"auto", "ball", "median", "interpolate"})],
        "fallback": [None, Real, "array-like"],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, radius=None, samples_per_user=None,
                 alpha=0.1, robustness=0.25, method="auto", calibration="tight",
                 fallback=None, random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.samples_per_user = samples_per_user
        self.alpha = alpha
        self.robustness = robustness
        self.method = method
        self.calibration = calibration
        self.fallback = fallback
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _interval_unavailable(self):
        return (
                "the few-users estimator's error comes from sampling a point of a "
                "ball around the users' means (a rejection sampler), not from "
                "additive noise of a known law, and with few users the sampling of "
                "the users is not normal: no valid interval is known for it (docs: "
                "'Confidence intervals'). With a box, UserMeanEstimator gives one.")

    def _fit_user_means(self, U, budget):
        if self.radius is None:
            raise ValueError(
                f"{type(self).__name__} needs a public radius= of the users' means "
                "(or, with samples_per_user=, of the rows): it is public knowledge "
                "(a physical limit, a codebook range), never read off the data. "
                "Without one, use UserMeanEstimator (it learns a box privately).")
        fallback = check_center(self.fallback, U.shape[1], name="fallback")
        plan = plan_few_users(
            U.shape[0], U.shape[1], budget=ApproxDP(budget.epsilon, budget.delta),
            radius=self.radius, samples_per_user=self.samples_per_user,
            alpha=self.alpha, robustness=self.robustness, method=self.method,
            calibration=self.calibration)
        location, _ = few_users_from_plan(U, plan, random_state=budget.random_state,
                                          n_jobs=self.n_jobs)
        loss = plan.loss
        self.garbage_ = location is None
        self.error_bound_ = plan.error_bound
        self.failure_probability_ = plan.failure_bound
        self.method_ = plan.method
        if self.failure_probability_ > self.alpha:
            warn_at_caller(
                f"{type(self).__name__}: with {U.shape[0]} users the accuracy "
                f"guarantee holds only with probability "
                f"{1 - self.failure_probability_:.3g} (< 1 - alpha); use more users, "
                "a larger epsilon or delta (the privacy guarantee is unaffected).",
                AccuracyWarning)
        if self.garbage_:
            warn_at_caller(
                f"{type(self).__name__}: the mechanism released its garbage bucket "
                "(the data were too spread for the radius, or bad luck); mean_ is "
                "the public fallback and garbage_ is True.", AccuracyWarning)
            return np.array(fallback, dtype=np.float64), loss
        return location, loss
