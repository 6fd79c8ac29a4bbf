"""Person-level family (Agarwal et al. 2024, bounded k-th moments).

One module per algorithm family; its layers, in order:

1. Approximate DP: one dimension and per feature (§3).
2. Pure DP in low dimension (§5, Algorithms 5-8).
3. The estimator (ThreadedClipNoiseEstimator).

Approximate DP: one dimension and per feature (§3)
--------------------------------------------------

Person-level means under bounded k-th moments, one dimension (AKMMSU 2024, §3).

Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman, "Private Mean
Estimation with Person-Level Differential Privacy" [AKM+24]_, §3.3
(Algorithm 1, Theorem 3.10), §3.2 (clip-and-noise, Theorem 3.9) and §3.4
(Theorem 3.14); docs: :ref:`papers-akmmsu`, :ref:`papers-akmmsu-deviations`.

Model: every user (person) has ``m`` i.i.d. samples of a distribution with
mean μ and k-th central moment ``σ_k ≤ M`` (``moment_bound``); ``|μ| ≤ R``
(``bound``) for the pure-DP coarse step. All of these are public
assumptions: if they are false, only accuracy suffers.

Pipeline (pure ε-DP, replace-one user neighbours, n public):

1. Users are split by a random permutation drawn independently of the data
   into a coarse group, a re-centring group and a fine group. Tight sizes
   (public functions of n, ε, δ, R, M, m, β only): coarse
   ``max(⌈coarse_fraction·n⌉, min(n_min, ⌈n/4⌉))`` with ``n_min`` the users
   the coarse mechanism needs (δ = 0: ``16 ln(l/β)/(3ε)`` for l bins; δ > 0:
   ``COARSE_THRESHOLD_MULTIPLE`` × the stability histogram threshold, so a
   bulk split over two buckets still clears it); re-centring
   ``⌈RECENTER_FRACTION·n⌉`` (0 if fewer than n/2 users would remain).
   Measured on the heavy-tail benchmark (16 cells, held-out seeds): the
   coarse and re-centring steps need few users, the fine noise ∝ 1/n_f.
2. **Coarse** (Algorithm 1): the users' means are binned at width
   ``r = 4M/√m`` over ``[−R − 2r, R + 2r]`` and one bin is chosen by an exact
   exponential mechanism over *all* bins. skuserdp uses the median-type score
   of :func:`~skuserdp.mechanisms.private_range` (sensitivity 1, exact
   segment sampler) instead of the paper's histogram argmax: if at least
   7/8 of the coarse users are within ``r`` of μ (Chebyshev: each user mean
   is, except with probability ``M²/(m r²) = 1/16``), every bin entirely
   outside ``μ ± r`` has score ``≥ 7n_c/8`` against ``≤ n_c/2`` for the
   median bin, so the chosen midpoint is within ``u = 1.5r`` of μ except
   with probability ``l·e^{−3εn_c/16}`` — the guarantee of Theorem 3.10.
2b. **Re-centring** (tight only; like one TCN layer): the re-centring users
   are clipped to ``μ_c ± (u + ρ₀)`` and released with discrete Laplace
   noise; its public 95 % noise bound ``e = 2(u + ρ₀)/(n_r ε)·ln 20``
   replaces u in the fine radius (u = 1.5r is ~10× the spread of the user
   means, so ``u + ρ₀`` was dominated by the coarse error).
3. **Fine** (Theorem 3.14): the fine users' means are truncated to
   ``μ_c ± ρ`` (μ_c the re-centred centre) with ``ρ = e + ρ₀`` (paper: u + ρ₀),
   ``ρ₀ = M·max(√((k − 1) max(1, ln m)/m), (n_f ε/ln(2/β))^{1/k}/m^{1−1/k})``
   (the second term balances the clipping bias ``∝ ρ^{−(k−1)}`` against the
   Laplace noise ``∝ ρ/(n_f ε)``; constants 1), summed on a lattice and
   released with discrete Laplace noise of ℓ1 sensitivity ``2ρ`` per sum
   (:func:`~skuserdp.mean.clip_noise_mean`).

Privacy: the stages see disjoint users chosen independently of the data,
and every radius, centre and group size is public or an earlier private
output, so by (adaptive) parallel composition
(:ref:`papers-akmmsu-composition`) the pipeline is
ε-DP (resp. (ε, δ)) when each stage is (``calibration="tight"``).
``calibration="paper"`` runs the paper's constants instead: halves of the
users, ``r = 16M/√m`` and ε/2 per stage with basic composition.

Pure DP in low dimension (§5, Algorithms 5-8)
---------------------------------------------

Pure ε-DP person-level mean in low dimension (AKMMSU 2024, §5, Algorithms 5–8).

Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman [AKM+24]_, §5: Lemma
5.1–5.2 (truncated median of means), Algorithm 5 (binary mean comparison),
Definition 5.5 (score), Algorithm 6 (test candidate), Algorithm 7 (fine
estimation) and Algorithm 8 (the estimator); docs:
:ref:`papers-akmmsu` and, for the reconstructed and chosen constants,
:ref:`papers-akmmsu-pure`.

**Cost.** Fine estimation compares every candidate ``p`` of a grid ``J``
(``(⌈9√d⌉ + 1)^d`` points) against every point ``q`` of a local cover
``J_p`` (``≈ (16√d + 1)^d`` points): about 170 comparisons for d = 1,
10⁵ for d = 2 and 10⁸ for d = 3. The functions refuse more than
``max_comparisons`` (default 10⁶), so in practice d ≤ 2: this is a
reference implementation of the paper's pure-DP estimator, not a tool for
many features.

**Privacy** (replace-one user neighbours, n public):

* The data enter Algorithms 5–7 only through the users' means, split into
  ``κ`` groups *by index* (public; users beyond ``κ⌊n/κ⌋`` are ignored).
* For a pair ``(p, q)`` the comparison projects each user mean on
  ``v = (q − p)/‖q − p‖``, truncates it to ``[p₀ − ρ, p₀ + ρ]``
  (``p₀ = ⟨v, p⟩``) and *rounds it to a lattice* of ``levels + 1`` points;
  ``p`` loses when at least ``(κ + 1)/2`` groups have an integer sum at
  least a public integer threshold (their mean reaches the midpoint
  ``(p₀ + q₀)/2``). Everything after the rounding is exact integer
  arithmetic, so the comparison is a well-defined function of the data and
  :func:`comparison_cost` computes *exactly* the least number of users that
  must be changed to make ``p`` lose (greedy: raise the smallest values of
  a group to the top of the window; the cheapest ``(κ + 1)/2`` groups).
* ``Score(p) = min(cap, min_q cost(p, q))`` (Definition 5.5). Changing one
  user moves every cost by at most 1 (a changed user can be changed back),
  so ``Score`` has sensitivity 1 whatever ``cap`` is, and the exponential
  mechanism with ``exp(ε·Score/2)`` is ε-DP. An approximate score would
  break this argument; the exactness is tested against brute force.
* Algorithm 8 runs the 1-D pipeline
  (:func:`~skuserdp.mean._person_level.person_level_mean_1d`, pure) on each
  coordinate of the first half of the users with ε/d (basic composition:
  ε) and fine estimation on the second half with ε; the halves are disjoint
  and drawn independently of the data, so the whole is ε-DP (parallel
  composition, as in the paper).

The exponential mechanism samples with the Gumbel-max trick
(:func:`~skuserdp.mechanisms.exponential_mechanism`): a discrete output,
whose law departs from the ideal one only by float64 rounding of the
integer scores times ε/2.

The estimator (ThreadedClipNoiseEstimator)
------------------------------------------

ThreadedClipNoiseEstimator: person-level means under bounded k-th moments.

Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman [AKM+24]_: the 1-D pure
ε-DP estimator (§3, Theorem 3.14) and the (ε, δ) estimator of Algorithm 4
(coordinate-wise coarse estimation, Threaded Clip-and-Noise, final
clip-and-noise; §4); docs: :ref:`papers-akmmsu`. Every
route (the 1-D pipeline per feature, Algorithm 4, Algorithm 8) is planned
from public values only by :func:`plan_person_level` and run by
:func:`person_level_from_plan`; the function cores and the estimator go
through them.
"""


import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from scipy import stats
from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..base import BOUNDS_CONSTRAINTS, WEIGHT_CONSTRAINTS
from ..exceptions import AccuracyWarning
from ..mechanisms import (
    exponential_mechanism,
    private_range,
    stability_histogram_argmax,
)
from ..mechanisms._private_range import MAX_BINS
from ..privacy import (
    ApproxDP,
    PureDP,
    advanced_composition_step,
    compose,
    compose_homogeneous,
    compose_parallel,
    stability_histogram_threshold,
    zcdp_to_approx_dp,
)
from ..utils._docstrings import fill_doc
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import (
    _as_2d_float,
    _check_plan_shape,
    check_center,
    check_positive_scalar,
    feature_labels,
)
from ..utils._warnings import warn_at_caller
from ._base import UserLevelMeanEstimator
from ._clip_noise import _clip_noise_mean, clip_noise_mean, plan_clip_noise
from ._concentration import private_tau, private_tau_min_users

__all__ = [
    "person_level_mean_1d",
    "person_level_mean_per_feature",
    "plan_person_level_1d",
    "fine_radius_1d",
    "coarse_estimate",
    "tcn_radii",
    "person_level_mean",
    "clip_bias_bound",
    "person_level_error_bound_1d",
    "pure_fine_plan",
    "binary_mean_comparison",
    "comparison_cost",
    "candidate_scores",
    "fine_estimate",
    "person_level_mean_pure",
    "PersonLevelPlan",
    "plan_person_level",
    "person_level_from_plan",
    "ThreadedClipNoiseEstimator",
]


# ============================================================================
# Layer: Approximate DP: one dimension and per feature (§3)
# (formerly skuserdp.mean._person_level)
# ============================================================================

# Tight calibration: fixed public constants of the user split (see the
# docstrings of person_level_mean_1d and person_level_mean). Chosen once for
# every (n, d, m, distribution) on the heavy-tail benchmark grid, validated on
# held-out seeds and an asymmetric distribution; never from the data.
#: The coarse group holds this many times the stability histogram's
#: release threshold (a bucket holding most coarse users is then released).
COARSE_THRESHOLD_MULTIPLE = 3.0
#: 1-D: share of the users in the re-centring layer.
RECENTER_FRACTION = 0.1
#: Algorithm 4: share of the non-coarse, non-τ users in the TCN layers.
TCN_FRACTION = 0.3
#: Algorithm 4: the τ group holds at least this share of the users ...
TAU_FRACTION = 0.02
#: ... and at least this multiple of the users private_tau needs.
TAU_FEASIBILITY_MULTIPLE = 2.0
#: Failure probability of the private spread estimate's feasibility rule.
TAU_GAMMA = 0.1


def fine_radius_1d(n_fine, epsilon, *, moment_order, moment_bound, samples_per_user,
                   beta=0.1):
    """The fine stage's clipping radius ``ρ₀`` beyond the coarse error (Thm 3.14).

    Parameters
    ----------
    n_fine : int
        Users in the fine stage.
    epsilon : float
        ε of the fine stage.
    moment_order : float
        k ≥ 2.
    moment_bound : float
        M with ``σ_k ≤ M``.
    samples_per_user : int
        m.
    beta : float, default=0.1
        Failure probability of the noise bound.

    Returns
    -------
    rho0 : float
        ``M·max(√((k − 1) max(1, ln m)/m), (n ε/ln(2/β))^{1/k}/m^{1 − 1/k})``.

    Examples
    --------
    >>> from skuserdp.mean._person_level import fine_radius_1d
    >>> round(fine_radius_1d(1000, 1.0, moment_order=4, moment_bound=1.0,
    ...                      samples_per_user=10), 4)
    0.8311
    """
    k, m, M = float(moment_order), int(samples_per_user), float(moment_bound)
    floor = math.sqrt((k - 1.0) * max(1.0, math.log(m)) / m)
    balance = ((n_fine * epsilon / math.log(2.0 / beta)) ** (1.0 / k)
               / m ** (1.0 - 1.0 / k))
    return M * max(floor, balance)


def range_coarse_fits(bound, width):
    """Whether the bins of :func:`range_coarse_bins` fit the exact sampler.

    :func:`~skuserdp.mechanisms.private_range` indexes at most ``MAX_BINS``
    (1e12) bins in float64; ``[−R − 2r, R + 2r]`` at width r has about
    ``2R/r`` of them. A function of the public R and r only.
    """
    bound, width = float(bound), float(width)
    with np.errstate(over="ignore"):
        bins = 2.0 * (bound + 2.0 * width) / width
    return math.isfinite(bins) and math.ceil(bins) <= MAX_BINS


def range_coarse_bins(bound, width):
    """Bins of the pure coarse step: width r over ``[−R − 2r, R + 2r]``.

    Raises a ``ValueError`` (before any release) when they are more than
    :func:`~skuserdp.mechanisms.private_range` can index (1e12).
    """
    bound, width = float(bound), float(width)
    if not math.isfinite(width):
        raise ValueError(
            f"the coarse step's bin width is {width!r}: moment_bound is too large "
            "for float64 arithmetic. Rescale the data (and its bounds).")
    if not range_coarse_fits(bound, width):
        raise ValueError(
            f"the public bound R = {bound:.3g} is too wide for the pure coarse step: "
            f"[-R, R] spans more than {MAX_BINS:.0e} bins of width {width:.3g} (a "
            "multiple of moment_bound/sqrt(samples_per_user)), which its exact "
            "exponential mechanism cannot index in float64: declare tighter bounds "
            "(in the units of the data) or use delta > 0 (no bound needed).")
    return math.ceil(2.0 * (bound + 2.0 * width) / width)


def range_coarse_failure(n_coarse, epsilon, n_bins):
    """Bound ``l·e^{−3εn_c/16}`` on the pure coarse step picking a far bin.

    With 7/8 of the ``n_c`` coarse users within r of μ, every bin outside
    ``μ ± r`` scores at least ``7n_c/8`` against ``n_c/2`` (module
    docstring).
    """
    return n_bins * math.exp(-3.0 * epsilon * n_coarse / 16.0)


def range_coarse_users(epsilon, n_bins, failure):
    """Fewest coarse users with :func:`range_coarse_failure` ``≤ failure``."""
    return math.ceil(16.0 * math.log(n_bins / failure) / (3.0 * epsilon))


def plan_person_level_1d(n_users, epsilon, *, delta=0.0, bound=None,
                         moment_order=2.0, moment_bound=1.0, samples_per_user,
                         beta=0.1, coarse_fraction=0.05, calibration="tight"):
    """Public plan of :func:`person_level_mean_1d`: group sizes and radii.

    Every value is a function of the public inputs only (n, ε, δ, R, k, M,
    m, β and the module constants), never of the data.

    Returns
    -------
    plan : dict
        ``n_coarse``, ``n_recenter``, ``n_fine``, ``stage_epsilon`` (ε of
        each stage), ``width`` r (coarse bucket), ``u`` (coarse error,
        ``1.5r``; paper ``2r``), ``recenter_radius`` (None without the layer),
        ``center_error`` (u, or the re-centring layer's public 95 % noise
        bound ``2ρ_r/(n_r ε)·ln 20``), ``rho0`` and ``radius``
        ``ρ = center_error + ρ₀`` of the fine stage.

    Examples
    --------
    >>> from skuserdp.mean._person_level import plan_person_level_1d
    >>> plan = plan_person_level_1d(4000, 1.0, bound=10.0, moment_bound=1.0,
    ...                             samples_per_user=10)
    >>> plan["n_coarse"], plan["n_recenter"], plan["n_fine"]
    (200, 400, 3400)
    """
    n, M, m = int(n_users), float(moment_bound), int(samples_per_user)
    if calibration == "paper":
        share, width_factor, stage_eps, u_factor = 0.5, 16.0, epsilon / 2.0, 2.0
    else:
        share, width_factor, stage_eps, u_factor = coarse_fraction, 4.0, epsilon, 1.5
    r = width_factor * M / math.sqrt(m)
    if calibration == "paper":
        n_c = min(n - 1, max(1, math.ceil(share * n)))
        n_r = 0
    else:
        if delta == 0:
            # Exponential mechanism over l bins: a far bin wins w.p. at most
            # l·exp(−3εn_c/16) (module docstring), ≤ β from this many users.
            n_min = range_coarse_users(stage_eps, range_coarse_bins(bound, r), beta)
        else:
            # The kept bucket needs a noisy count above the threshold.
            n_min = math.ceil(COARSE_THRESHOLD_MULTIPLE * stability_histogram_threshold(
                stage_eps, delta)[1])
        n_c = min(n - 1, max(1, math.ceil(share * n), min(n_min, math.ceil(n / 4))))
        n_r = math.ceil(RECENTER_FRACTION * n)
        if n - n_c - n_r < n / 2:
            n_r = 0  # too few users for three groups: no re-centring layer
    n_f = n - n_c - n_r
    u = u_factor * r
    recenter_radius, center_error = None, u
    if n_r > 0:
        recenter_radius = u + fine_radius_1d(n_r, stage_eps, moment_order=moment_order,
                                             moment_bound=M, samples_per_user=m,
                                             beta=beta)
        # Discrete Laplace of scale b = 2ρ_r/(n_r ε) exceeds b·ln 20 w.p. 1/20.
        center_error = 2.0 * recenter_radius / (n_r * stage_eps) * math.log(20.0)
    rho0 = fine_radius_1d(n_f, stage_eps, moment_order=moment_order, moment_bound=M,
                          samples_per_user=m, beta=beta)
    return dict(n_coarse=n_c, n_recenter=n_r, n_fine=n_f, stage_epsilon=stage_eps,
                width=r, u=u, recenter_radius=recenter_radius,
                center_error=center_error, rho0=rho0, radius=center_error + rho0)


def person_level_mean_1d(values, *, epsilon, bound=None, delta=0.0, moment_order=2.0,
                         moment_bound=1.0, samples_per_user, beta=0.1,
                         coarse_fraction=0.05, calibration="tight",
                         random_state=None):
    """Person-level mean of one feature under bounded k-th moments (§3).

    The one-dimensional pipeline of :func:`plan_person_level`'s
    ``"per_feature"`` route on one column, seeded by ``random_state``
    itself. The guarantee is user-level: neighbouring datasets differ in the
    data of one user (replace-one, the number of users public).

    Pure ε-DP with ``delta=0`` (the coarse step searches ``[−R, R]``);
    with ``delta > 0`` the coarse step is the stability histogram on an
    unbounded grid (:func:`~skuserdp.mechanisms.stability_histogram_argmax`,
    no bound needed) and the release is (ε, δ)-DP.

    Parameters
    ----------
    values : array-like of shape (n_users,)
        One mean per user (of at least ``samples_per_user`` samples). Not
        modified.
    epsilon : float
        Target ε, ``> 0``.
    bound : float, default=None
        Public R with ``|μ| ≤ R`` (the pure coarse step's range; required
        when ``delta == 0``).
    delta : float, default=0.0
        Target δ in ``[0, 1)``.
    moment_order : float, default=2.0
        Public k ≥ 2: the samples have a bounded k-th central moment.
    moment_bound : float, default=1.0
        Public M: ``(E|X − μ|^k)^{1/k} ≤ M``.
    samples_per_user : int
        Public m (every user has at least m samples).
    beta : float, default=0.1
        Failure probability used in the fine radius.
    coarse_fraction : float, default=0.05
        Minimum share of users in the coarse stage (tight calibration; the
        paper's is 1/2); raised to the public ``n_min`` of the module
        docstring (at most n/4).
    calibration : {"tight", "paper"}, default="tight"
        See the module docstring.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the split and of both mechanisms.

    Returns
    -------
    mean : float
        The private estimate.
    loss : PureDP or ApproxDP
        The privacy loss.
    info : dict
        Public facts: ``coarse_width`` r, ``coarse_error`` u, ``radius`` ρ,
        ``recenter_radius`` (None without a re-centring layer), ``n_coarse``,
        ``n_recenter``, ``n_fine``; private outputs: ``coarse_center`` and
        ``center`` (the centre of the fine stage).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import person_level_mean_1d
    >>> rng = np.random.default_rng(0)
    >>> S = 3.0 + rng.standard_t(5, size=(4000, 20)).mean(axis=1)
    >>> mean, loss, info = person_level_mean_1d(
    ...     S, epsilon=1.0, bound=100.0, moment_order=4, moment_bound=1.3,
    ...     samples_per_user=20, random_state=0)
    >>> round(mean, 1), loss.epsilon
    (3.0, 1.0)
    """
    S = np.asarray(values, dtype=np.float64).ravel()
    plan = plan_person_level(
        S.size, 1, budget=_budget(epsilon, delta), moment_bound=moment_bound,
        samples_per_user=samples_per_user, moment_order=moment_order, bound=bound,
        method="per_feature", beta=beta, coarse_fraction=coarse_fraction,
        calibration=calibration)
    _check_finite(S, "values")
    return _run_1d(S, plan.stages, random_state)


def _budget(epsilon, delta):
    """The budget of a function core's (ε, δ): pure when δ = 0."""
    return PureDP(epsilon) if delta == 0 else ApproxDP(epsilon, delta)


def _check_finite(values, name):
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite.")


def _plan_1d(n, epsilon, delta, *, bound, moment_order, moment_bound,
             samples_per_user, beta, coarse_fraction, calibration):
    """Checked public stages of the 1-D pipeline at (ε, δ) (one feature)."""
    if n < 2:
        raise ValueError("the person-level estimator needs at least 2 users.")
    epsilon = check_positive_scalar(epsilon, "epsilon")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    R = None
    if delta == 0:
        if bound is None:
            raise ValueError("delta=0 needs a public bound R on |mean|.")
        R = check_positive_scalar(bound, "bound")
    M = check_positive_scalar(moment_bound, "moment_bound")
    if moment_order < 2:
        raise ValueError(f"moment_order must be >= 2, got {moment_order!r}.")
    m = int(samples_per_user)
    if m < 1:
        raise ValueError(f"samples_per_user must be >= 1, got {samples_per_user!r}.")
    _check_calibration(calibration)
    if calibration == "tight" and not 0 < coarse_fraction < 1:
        raise ValueError(
            f"coarse_fraction must be in (0, 1), got {coarse_fraction!r}."
        )
    stages = plan_person_level_1d(n, epsilon, delta=delta, bound=bound,
                                  moment_order=moment_order, moment_bound=M,
                                  samples_per_user=m, beta=beta,
                                  coarse_fraction=coarse_fraction,
                                  calibration=calibration)
    stages.update(delta=delta, bound=R, calibration=calibration)
    return stages


def _check_calibration(calibration):
    if calibration not in ("tight", "paper"):
        raise ValueError(
            f"calibration must be 'tight' or 'paper', got {calibration!r}."
        )


def _run_1d(S, stages, random_state):
    """The 1-D pipeline on the finite values ``S`` with the public ``stages``
    of :func:`_plan_1d`."""
    n = S.size
    n_c, n_r = stages["n_coarse"], stages["n_recenter"]
    r, u = stages["width"], stages["u"]
    stage_eps, delta = stages["stage_epsilon"], stages["delta"]
    calibration = stages["calibration"]
    split_seed, coarse_seed, fine_seed, recenter_seed = (
        make_seed_sequence(random_state).spawn(4))
    order = generator_from(split_seed).permutation(n)  # independent of the data
    coarse = S[order[:n_c]]
    recenter = S[order[n_c:n_c + n_r]]
    fine = S[order[n_c + n_r:]]
    if delta == 0:
        lower, upper = private_range(coarse, stage_eps, tau=r,
                                     bound=stages["bound"] + 2.0 * r,
                                     bin_width=r, random_state=coarse_seed)
        center = 0.5 * (lower + upper)
        coarse_loss = PureDP(stage_eps)
    else:
        stage_delta = delta / 2.0 if calibration == "paper" else delta
        center, coarse_loss = stability_histogram_argmax(
            coarse, epsilon=stage_eps, delta=stage_delta, width=r,
            random_state=coarse_seed)
        if math.isnan(center):
            warn_at_caller(
                "the coarse step released no bucket; the centre falls back to 0 "
                "(a public default). Privacy is unaffected; use more users or a "
                "larger epsilon or delta.", AccuracyWarning)
            center = 0.0
    coarse_center, losses = center, [coarse_loss]
    if n_r > 0:
        # Re-centring layer: clip-and-noise around the coarse centre on its
        # own users; its public 95 % error bound replaces u in the final
        # radius.
        c, recenter_loss = clip_noise_mean(recenter[:, None], epsilon=stage_eps,
                                           delta=0.0, radius=stages["recenter_radius"],
                                           center=center, random_state=recenter_seed)
        center = float(c[0])
        losses.append(recenter_loss)
    rho = stages["radius"]
    mean, fine_loss = clip_noise_mean(fine[:, None], epsilon=stage_eps, delta=0.0,
                                      radius=rho, center=center,
                                      random_state=fine_seed)
    losses.append(fine_loss)
    if calibration == "paper":
        loss = compose(coarse_loss, fine_loss)
    else:
        # Disjoint users, split independently of the data (parallel composition).
        loss = compose_parallel(*losses)
    info = dict(coarse_width=r, coarse_error=u, radius=rho, n_coarse=n_c,
                n_recenter=n_r, n_fine=fine.size, coarse_center=coarse_center,
                recenter_radius=stages["recenter_radius"], center=center)
    return float(mean[0]), loss, info


def person_level_mean_per_feature(user_means, *, epsilon, delta=0.0, bound=None,
                                  moment_order=2.0, moment_bound=1.0,
                                  samples_per_user, coarse_fraction=0.05,
                                  calibration="tight", random_state=None):
    """:func:`person_level_mean_1d` on every feature at (ε/d, δ/d).

    Basic composition over the d features gives (ε, δ) (pure ε-DP with
    ``delta=0``); the seeds of the features are spawned from
    ``random_state``.

    Returns
    -------
    mean : ndarray of shape (n_features,)
    loss : PureDP or ApproxDP
    info : dict
        The public plan facts of the last feature (the same for every
        feature) and its private ``center``.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level import person_level_mean_per_feature
    >>> U = np.random.default_rng(0).normal(1.0, 0.3, size=(4000, 2))
    >>> mean, loss, _ = person_level_mean_per_feature(
    ...     U, epsilon=1.0, bound=10.0, samples_per_user=10, random_state=0)
    >>> mean.round(1), loss.epsilon
    (array([1., 1.]), 1.0)
    """
    U = np.asarray(user_means, dtype=np.float64)
    plan = plan_person_level(
        U.shape[0], U.shape[1], budget=_budget(epsilon, delta),
        moment_bound=moment_bound, samples_per_user=samples_per_user,
        moment_order=moment_order, bound=bound, method="per_feature",
        coarse_fraction=coarse_fraction, calibration=calibration)
    return person_level_from_plan(U, plan, random_state=random_state)


def _run_per_feature(U, stages, random_state):
    """The 1-D pipeline on every column of the finite ``U``, each with its
    own child seed (the ``stages`` are the same for every feature)."""
    d = U.shape[1]
    seeds = make_seed_sequence(random_state).spawn(d)
    means, losses = np.empty(d), []
    for j in range(d):
        means[j], loss_j, info = _run_1d(U[:, j], stages, seeds[j])
        losses.append(loss_j)
    return means, compose(*losses), info


def _coarse_coordinate_budget(epsilon, delta, d):
    """Per-coordinate (ε₀, δ₀) of :func:`coarse_estimate` (public)."""
    basic = (epsilon / d, delta / d)
    if d > 1:
        advanced = (advanced_composition_step(epsilon, delta / 2.0, d),
                    delta / (2.0 * d))
    else:
        advanced = basic
    return max(basic, advanced)


def coarse_estimate(user_means, *, epsilon, delta, moment_bound, samples_per_user,
                    width_factor=4.0, random_state=None):
    """(ε, δ)-DP coordinate-wise coarse location (AKMMSU Thm 4.19).

    Every coordinate runs the stability histogram
    (:func:`~skuserdp.mechanisms.stability_histogram_argmax`) at width
    ``r′ = 4M/√m`` on an unbounded grid (no range bound needed), with the
    per-coordinate budget of the better of basic composition (ε/d, δ/d) and
    advanced composition (slack δ/2, δ/(2d) each). Each coordinate's user
    means are within ``r′`` of μ's coordinate except with probability 1/16
    (Chebyshev), so each kept bucket midpoint is within ``1.5r′`` and the
    estimate within ``γ₀ = 1.5r′√d = 6M√(d/m)`` (public). A coordinate with
    no kept bucket falls back to 0 (public; reported).

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
    epsilon, delta : float
        Guarantee of the whole step; ``delta`` in ``(0, 1)``.
    moment_bound : float
        M.
    samples_per_user : int
        m.
    width_factor : float, default=4.0
        Bucket width in units of ``M/√m`` (the paper's is 16).
    random_state : int, RandomState, SeedSequence or None, default=None

    Returns
    -------
    center : ndarray of shape (n_features,)
    loss : ApproxDP
    n_failed : int
        Coordinates with no kept bucket (a private output).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level import coarse_estimate
    >>> U = np.random.default_rng(0).normal(50.0, 0.3, size=(2000, 4))
    >>> c, loss, failed = coarse_estimate(U, epsilon=1.0, delta=1e-6,
    ...                                   moment_bound=1.0, samples_per_user=10,
    ...                                   random_state=0)
    >>> failed, bool(np.abs(c - 50.0).max() <= 1.5 * 4 / 10 ** 0.5)
    (0, True)
    """
    U = np.asarray(user_means, dtype=np.float64)
    d = U.shape[1]
    width = width_factor * moment_bound / math.sqrt(int(samples_per_user))
    eps0, delta0 = _coarse_coordinate_budget(epsilon, delta, d)
    basic = (epsilon / d, delta / d)
    threshold = stability_histogram_threshold(eps0, delta0)[1]
    if U.shape[0] < threshold:
        warn_at_caller(
            f"{U.shape[0]} users are too few for the coarse step: a bucket needs "
            f"a noisy count of at least {threshold} to be released at this "
            "per-coordinate budget, so every coordinate falls back to 0 (a public "
            "default). Privacy is unaffected; use more users, a larger epsilon "
            "or delta.", AccuracyWarning)
    mids, step_loss = stability_histogram_argmax(U.T, epsilon=eps0, delta=delta0,
                                                 width=width, random_state=random_state)
    failed = np.isnan(mids)
    mids[failed] = 0.0
    if failed.any() and U.shape[0] >= threshold:
        # "No bucket kept" is part of the private output: warning on it is
        # post-processing.
        warn_at_caller(
            f"the coarse step released no bucket for {int(failed.sum())} of {d} "
            "coordinates; they fall back to 0 (a public default) and the estimate "
            "may be far off there. Privacy is unaffected; use more users, a larger "
            "epsilon or delta.", AccuracyWarning)
    if d == 1:
        loss = step_loss
    elif (eps0, delta0) == basic:
        loss = compose(*([step_loss] * d))
    else:
        loss = compose_homogeneous(step_loss, d, delta / 2.0)
    return mids, loss, int(failed.sum())


def tcn_radii(n_features, *, moment_order, moment_bound, samples_per_user,
              max_layers=64):
    """Clipping radii of the Threaded Clip-and-Noise layers (our choice).

    ``ρ_floor = M·max(2√(d max(1, ln m)/m), 12√(d/m))`` (twice the coarse
    bound ``γ₀ = 6M√(d/m)``), ``r_t = M d^{1/2 + 1/(2k(k+1)^{t−1})}/m^{1−1/k}``;
    layers ``t < T`` use ``max(r_t, ρ_floor)``, the last ``ρ_floor``, with
    ``T = 1 + #{t ≥ 1 : r_t ≥ ρ_floor}`` (capped).

    Returns
    -------
    radii : list of float
        One radius per layer (length T).

    Examples
    --------
    >>> from skuserdp.mean._person_level import tcn_radii
    >>> len(tcn_radii(10, moment_order=4, moment_bound=1.0, samples_per_user=10))
    1
    >>> radii = tcn_radii(10**5, moment_order=2, moment_bound=1.0,
    ...                   samples_per_user=4)
    >>> len(radii) > 1
    True
    """
    d, m = int(n_features), int(samples_per_user)
    k, M = float(moment_order), float(moment_bound)
    floor = M * max(2.0 * math.sqrt(d * max(1.0, math.log(m)) / m),
                    12.0 * math.sqrt(d / m))
    radii = []
    for t in range(1, max_layers):
        log_r = ((0.5 + 1.0 / (2.0 * k * (k + 1.0) ** (t - 1))) * math.log(d)
                 - (1.0 - 1.0 / k) * math.log(m) + math.log(M))
        if log_r < math.log(floor):
            break
        radii.append(math.exp(log_r))
    return radii + [floor]


def _bounded_coarse_step(epsilon, delta, d):
    """Per-coordinate ε₀ of the bounded coarse step and the composed loss."""
    eps0 = (epsilon if d == 1
            else advanced_composition_step(epsilon, delta, d))  # ≥ ε/d
    loss = PureDP(eps0) if d == 1 else compose_homogeneous(PureDP(eps0), d, delta)
    return eps0, loss


def _bounded_coarse_users(epsilon, delta, d, bound, M, m, beta):
    """Users the bounded coarse step needs (public): ``16 ln(l·d/β)/(3ε₀)``.

    Per coordinate, the exponential mechanism over ``l`` bins picks a bin
    outside ``μ_j ± r`` with probability at most ``l·e^{−3ε₀n_c/16}`` (see
    the module docstring); this many users make it ``β/d``.
    """
    eps0, _ = _bounded_coarse_step(epsilon, delta, d)
    r = 4.0 * M / math.sqrt(m)
    return range_coarse_users(eps0, range_coarse_bins(bound, r), beta / d)


def _bounded_coarse(Y, epsilon, delta, bound, M, m, *, random_state):
    """Coarse location from a public box: Algorithm 1 on every coordinate.

    :func:`~skuserdp.mechanisms.private_range` (pure ε₀, exact exponential
    mechanism over the bins of ``[−R − 2r, R + 2r]``, ``r = 4M/√m``) on each
    coordinate, ε₀ the largest per-coordinate ε whose d-fold composition
    (better of basic and advanced, slack δ) is at most (ε, δ). Same
    ``1.5r`` guarantee per coordinate as the stability histogram, but it
    needs no release threshold, so far fewer users.
    """
    d = Y.shape[1]
    eps0, loss = _bounded_coarse_step(epsilon, delta, d)
    r = 4.0 * M / math.sqrt(m)
    lower, upper = private_range(Y.T, eps0, tau=r, bound=float(bound) + 2.0 * r,
                                 bin_width=r, random_state=random_state)
    return 0.5 * (np.asarray(lower) + np.asarray(upper)), loss


def person_level_mean(user_means, *, epsilon, delta, moment_order=2.0,
                      moment_bound=1.0, samples_per_user, n_threads="auto",
                      bound=None, beta=0.1, calibration="tight", random_state=None,
                      offset=None):
    """(ε, δ)-DP person-level mean in d dimensions (AKMMSU Algorithm 4).

    :func:`plan_person_level` with ``method="threaded"`` (public values
    only) followed by :func:`person_level_from_plan`, in one call. The
    guarantee is user-level: neighbouring datasets differ in the data of one
    user (replace-one, the number of users public).

    Disjoint groups of users, drawn by a data-independent permutation:
    coarse location (:func:`coarse_estimate`), Threaded Clip-and-Noise
    (layers on disjoint consecutive blocks, each clipping in ℓ2 around the
    previous layer's output with the radii of :func:`tcn_radii`), and a
    final clip-and-noise around the TCN output with radius
    ``ρ* = max(M√(d max(1, ln m)/m),
    M n_V^{1/k} ε^{1/k} d^{1/2−1/k}/(ln^{1/(2k)}(1/δ) m^{1−1/k}))`` plus a
    public 95 % bound on the norm of the TCN output's noise.

    Tight calibration, public choices (functions of n, d, m, k, M, ε, δ and
    the module constants only; measured on the heavy-tail benchmark):

    - coarse group: ``min(COARSE_THRESHOLD_MULTIPLE × threshold, ⌊n/3⌋)``
      users, the threshold being the stability histogram's at the
      per-coordinate budget (a bulk split over two buckets still clears it;
      1.5× failed in some coordinates, falling back to 0);
    - τ group: ``max(⌈TAU_FRACTION·n⌉, TAU_FEASIBILITY_MULTIPLE × the users
      private_tau needs at γ = TAU_GAMMA)`` (0 if fewer than n/2 users would
      remain). :func:`~skuserdp.mean._concentration.private_tau` (ε-DP, the
      pair-distance spread of WinsorizedMean's ``tau="auto"``) on these users
      gives τ̂; the final radius uses ``min(ρ*, τ̂)`` (M is a worst-case
      directional bound, often 2-3× the actual spread);
    - TCN: ``TCN_FRACTION`` of the remaining users, the layers of
      :func:`tcn_radii` plus one refinement layer of radius (public 95 %
      noise bound of the previous layer) + ``M√(d max(1, ln m)/m)``
      (dropped if the TCN group has fewer than 2 users per layer);
    - final: the rest.

    Tight calibration: every stage and layer (and the τ estimate) sees
    disjoint users and spends the full (ε, δ) (adaptive parallel
    composition, :ref:`papers-akmmsu-composition`). Paper
    calibration: (ε/2, δ/2) for the coarse step (bucket width ``16M/√m``),
    (ε/4, δ/4) for TCN split over its layers by advanced composition
    (computed exactly, not the paper's √6 form), (ε/4, δ/4) for
    the final step with the paper's floor ``M√(d/m)`` for ρ*; basic
    composition of the three. The Gaussian noise is the lattice discrete
    Gaussian of :func:`~skuserdp.mean.clip_noise_mean` in both.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One mean per user. Not modified.
    epsilon, delta : float
        Target guarantee, ``delta`` in ``(0, 1)``.
    moment_order : float, default=2.0
        Public k ≥ 2.
    moment_bound : float, default=1.0
        M: every direction's k-th central moment is at most ``M^k``.
    samples_per_user : int
        Public m: every user has at least m samples.
    n_threads : "auto" or int, default="auto"
        Number of TCN layers T: ``"auto"`` from :func:`tcn_radii`; an int
        caps it (the last layer always uses the floor radius).
    bound : float, default=None
        Public R with ``‖μ‖_∞ ≤ R`` (tight calibration only). When given, the
        coarse step is Algorithm 1 on every coordinate over ``[−R, R]``
        (:func:`~skuserdp.mechanisms.private_range`, pure ε₀ per coordinate,
        composed to (ε, δ)), which needs ``16 ln(l·d/β)/(3ε₀)`` users
        instead of three times the stability histogram's threshold. An R
        too wide for that step (more than 1e12 bins of width ``4M/√m``) is
        ignored: the coarse step is then the stability histogram.
    beta : float, default=0.1
        Failure probability behind the bounded coarse step's group size.
    calibration : {"tight", "paper"}, default="tight"
        See above.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the users' split and of every mechanism.
    offset : ndarray of shape (n_features,), default=None
        Public point subtracted from every user's mean: the same result as
        ``user_means - offset``, without a copy of the table (each group is
        gathered, then shifted in place).

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean (of ``user_means - offset`` when given).
    loss : PureDP, ApproxDP or ZCDP
        The guarantee (the maximum over the disjoint stages).
    info : dict
        Public facts: ``radii`` (TCN layers, the refinement layer last),
        ``final_radius``, group sizes (``n_coarse``, ``n_tau``, ``n_tcn``,
        ``n_final``); and private outputs (each already released under the
        guarantee): ``tau`` (τ̂, None without a τ group),
        ``coarse_failed`` (coordinates without a kept bucket) and
        ``centers`` (the coarse estimate, then each TCN layer's output).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import person_level_mean
    >>> rng = np.random.default_rng(0)
    >>> U = 5.0 + rng.standard_t(5, size=(6000, 10, 8)).mean(axis=1)
    >>> mean, loss, info = person_level_mean(U, epsilon=1.0, delta=1e-6,
    ...                                      moment_order=4, moment_bound=1.5,
    ...                                      samples_per_user=10, random_state=0)
    >>> bool(np.linalg.norm(mean - 5.0) < 0.5), len(info["radii"])
    (True, 2)
    """
    U = _as_2d_float(user_means, "user_means")
    plan = plan_person_level(
        U.shape[0], U.shape[1], budget=_budget(epsilon, delta),
        moment_bound=moment_bound, samples_per_user=samples_per_user,
        moment_order=moment_order, bound=bound, method="threaded",
        n_threads=n_threads, beta=beta, calibration=calibration)
    return _run_threaded(U, plan.stages, random_state, offset)


def _plan_threaded(n, d, epsilon, delta, *, moment_order, moment_bound,
                   samples_per_user, n_threads, bound, beta, calibration):
    """Public stages of Algorithm 4 (functions of n, d, m, k, M, ε, δ, R)."""
    if n < 3:
        raise ValueError("Algorithm 4 needs at least 3 users.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    k, M, m = float(moment_order), float(moment_bound), int(samples_per_user)
    paper = calibration == "paper"
    _check_calibration(calibration)
    third = n // 3
    radii = tcn_radii(d, moment_order=k, moment_bound=M, samples_per_user=m)
    if n_threads != "auto":
        radii = radii[:min(max(int(n_threads), 1), len(radii)) - 1] + radii[-1:]
    # The bounded coarse step needs R; a public R too wide for its exact
    # sampler (more than MAX_BINS bins) is ignored, as the paper's
    # unbounded stability histogram needs none.
    bounded = (not paper and bound is not None
               and range_coarse_fits(bound, 4.0 * M / math.sqrt(m)))
    if paper:
        n_c, n_tau, n_t = third, 0, third
        refine = False
    else:
        # Public group sizes: functions of (n, d, ε, δ, R) only.
        if not bounded:
            threshold = stability_histogram_threshold(
                *_coarse_coordinate_budget(epsilon, delta, d))[1]
            n_c = math.ceil(COARSE_THRESHOLD_MULTIPLE * threshold)
        else:
            n_c = _bounded_coarse_users(epsilon, delta, d, bound, M, m, beta)
        n_c = max(1, min(n_c, third))
        n_tau = max(math.ceil(TAU_FRACTION * n),
                    math.ceil(TAU_FEASIBILITY_MULTIPLE
                              * private_tau_min_users(epsilon, TAU_GAMMA)))
        if n - n_c - n_tau < n / 2:
            n_tau = 0  # too few users: the public radius alone
        rest = n - n_c - n_tau
        n_t = max(1, min(rest - 1, int(TCN_FRACTION * rest)))
        refine = n_t >= 2 * (len(radii) + 1)
    coarse_budget = (epsilon / 2, delta / 2) if paper else (epsilon, delta)
    # Tight: one more (refinement) layer after the recursion's layers, radius
    # = public 95 % bound on the previous layer's noise + the spread radius.
    spread = M * math.sqrt(d * max(1.0, math.log(m)) / m)
    L = len(radii) + (1 if refine else 0)
    if not paper:
        layer_budget = (epsilon, delta)
    elif L == 1:
        layer_budget = (epsilon / 4, delta / 4)
    else:
        layer_budget = (advanced_composition_step(epsilon / 4, delta / 8, L),
                        delta / (8 * L))
    center_error = None
    layer_radii = list(radii)
    for i, size in enumerate(len(b) for b in np.array_split(np.arange(n_t), L)):
        rho = layer_radii[i] if i < len(layer_radii) else center_error + spread
        if i >= len(layer_radii):
            layer_radii.append(rho)
        layer_zcdp = plan_clip_noise(size, d, budget=ApproxDP(*layer_budget),
                                     radius=rho, calibration="tight").loss
        # Public bound on this layer's noise (Gaussian of per-coordinate sd
        # ≈ (2ρ/n_l)/√(2ρ_zCDP), norm ≤ sd(√d + √(2 ln 20)) w.p. 0.95).
        noise_sd = 2.0 * rho / size / math.sqrt(2.0 * layer_zcdp.rho)
        center_error = noise_sd * (math.sqrt(d) + math.sqrt(2.0 * math.log(20.0)))
    final_eps, final_delta = (epsilon / 4, delta / 4) if paper else (epsilon, delta)
    n_final = n - n_c - n_tau - n_t
    balance = (M * (n_final * final_eps) ** (1 / k) * d ** (0.5 - 1 / k)
               / (math.log(1 / final_delta) ** (1 / (2 * k)) * m ** (1 - 1 / k)))
    # Paper: ρ* ≥ M√(d/m). Tight: M√(d max(1, ln m)/m) (the scale of
    # Cor 4.13's t₁) plus the public noise bound of the TCN centre; the
    # suggestion of a reading of the paper,
    # ρ_T (≥ 12M√(d/m), sized for the *coarse* centre's
    # error) was measured 4-5× less accurate with many users.
    floor = M * math.sqrt(d * (1.0 if paper else max(1.0, math.log(m))) / m)
    return dict(
        epsilon=epsilon, delta=delta, moment_bound=M, samples_per_user=m,
        calibration=calibration, bound=bound if bounded else None,
        n_coarse=n_c, n_tau=n_tau, n_tcn=n_t, n_final=n_final,
        coarse_budget=coarse_budget, layer_budget=layer_budget, radii=layer_radii,
        center_error=center_error, final_budget=(final_eps, final_delta),
        spread_radius=max(floor, balance))


def _run_threaded(U, stages, random_state, offset):
    """Algorithm 4 on ``U`` (minus the public ``offset``) with the public
    ``stages`` of :func:`_plan_threaded`."""
    n, d = U.shape
    epsilon, delta = stages["epsilon"], stages["delta"]
    M, m = stages["moment_bound"], stages["samples_per_user"]
    paper = stages["calibration"] == "paper"
    n_c, n_tau, n_t = stages["n_coarse"], stages["n_tau"], stages["n_tcn"]
    radii, layer_budget = stages["radii"], stages["layer_budget"]
    seeds = make_seed_sequence(random_state).spawn(5)
    order = generator_from(seeds[0]).permutation(n)  # independent of the data
    Y = U[order[:n_c]]
    T = U[order[n_c:n_c + n_tau]]
    if offset is not None:
        Y -= offset  # (U - offset)[rows], without copying U
        T -= offset
    # The TCN layers and the final stage only sum their users' clipped
    # contributions: each is released from the rows of U, gathered block by
    # block (in increasing order: the exact sum does not depend on it), not
    # from a copy of its group.
    tcn_rows = order[n_c + n_tau:n_c + n_tau + n_t]
    final_rows = np.sort(order[n_c + n_tau + n_t:])
    if stages["bound"] is not None:
        center, coarse_loss = _bounded_coarse(Y, epsilon, delta, stages["bound"], M, m,
                                              random_state=seeds[1])
        n_failed = 0
    else:
        center, coarse_loss, n_failed = coarse_estimate(
            Y, epsilon=stages["coarse_budget"][0], delta=stages["coarse_budget"][1],
            moment_bound=M, samples_per_user=m, width_factor=16.0 if paper else 4.0,
            random_state=seeds[1])
    L = len(radii)
    blocks = np.array_split(np.arange(tcn_rows.shape[0]), L)
    layer_seeds = seeds[2].spawn(L)
    layer_losses = []
    centers = [center]
    for rows, seed, rho in zip(blocks, layer_seeds, radii):
        layer = np.sort(tcn_rows[rows])
        center, layer_plan = _clip_noise_mean(
            U, epsilon=layer_budget[0], delta=layer_budget[1], radius=rho,
            center=center, calibration="tight", random_state=seed, n_jobs=None,
            rows=layer, shift=offset)
        layer_losses.append(zcdp_to_approx_dp(layer_plan.loss.rho, layer_budget[1]))
        centers.append(center)
    final_eps, final_delta = stages["final_budget"]
    spread_radius = stages["spread_radius"]
    tau = None
    tau_loss = []
    if n_tau > 0:
        # Private spread (pair distances of the τ group, ε-DP, its own
        # users): the final radius is the smaller of the public ρ* and τ̂.
        tau = private_tau(T, epsilon, value_range=spread_radius, gamma=TAU_GAMMA,
                          rng=generator_from(seeds[4]))
        spread_radius = min(spread_radius, tau)
        tau_loss = [PureDP(epsilon)]
    final_radius = spread_radius + (0.0 if paper else stages["center_error"])
    mean, final_plan = _clip_noise_mean(
        U, epsilon=final_eps, delta=final_delta, radius=final_radius, center=center,
        calibration="tight", random_state=seeds[3], n_jobs=None, rows=final_rows,
        shift=offset)
    loss = final_plan.loss
    final_loss = zcdp_to_approx_dp(loss.rho, final_delta)
    if paper:
        tcn_loss = (layer_losses[0] if L == 1
                    else compose_homogeneous(max(layer_losses, key=lambda x: x.epsilon),
                                             L, delta / 8))
        total = compose(coarse_loss, tcn_loss, final_loss)
    else:
        total = compose_parallel(coarse_loss, *tau_loss, *layer_losses, final_loss)
    info = dict(radii=list(radii), final_radius=final_radius, n_coarse=Y.shape[0],
                n_tau=T.shape[0], n_tcn=len(tcn_rows), n_final=len(final_rows),
                coarse_failed=n_failed, centers=centers, tau=tau)
    return mean, total, info


# ============================================================================
# Layer: Pure DP in low dimension (§5, Algorithms 5-8)
# (formerly skuserdp.mean._person_level)
# ============================================================================

#: Lattice points of the truncation window ``[p₀ − ρ, p₀ + ρ]``.
LEVELS = 2 ** 20
#: Coarse shares of the 1-D pipeline tried by ``alpha="auto"`` (the one with
#: the smallest public error bound is used).
COARSE_SHARES = (0.05, 0.1, 0.25, 0.5)
#: Refuse fine estimation with more candidate pairs than this by default.
MAX_COMPARISONS = 10 ** 6


def clip_bias_bound(radius, *, moment_bound, samples_per_user, moment_order=2.0):
    """Bound on the bias of truncating a user mean at distance ``radius`` from μ.

    ``E(|Ȳ − μ| − a)₊`` for the mean Ȳ of m i.i.d. samples (in any fixed
    direction) with k-th central moment ``≤ M^k``: the smaller of
    ``M²/(4ma)`` (from ``(y − a)₊ ≤ y²/(4a)``, variance only) and, for
    k ≥ 4, ``(27/256)·E(Ȳ − μ)⁴/a³`` with the exact fourth moment
    ``E(Ȳ − μ)⁴ ≤ M⁴(3m − 2)/m³`` (``m·μ₄ + 3m(m − 1)σ⁴`` over ``m⁴``) and
    ``(y − a)₊ ≤ (27/256) y⁴/a³``.

    Examples
    --------
    >>> from skuserdp.mean._person_level import clip_bias_bound
    >>> clip_bias_bound(1.0, moment_bound=1.0, samples_per_user=4)
    0.0625
    >>> round(clip_bias_bound(1.0, moment_bound=1.0, samples_per_user=4,
    ...                       moment_order=4), 5)
    0.01648
    """
    a, M, m = float(radius), float(moment_bound), int(samples_per_user)
    bias = M * M / (4.0 * m * a)
    if moment_order >= 4:
        bias = min(bias, 27.0 / 256.0 * M ** 4 * (3.0 * m - 2.0) / m ** 3 / a ** 3)
    return bias


# ----------------------------------------------------------------------------
# Public accuracy bound of the 1-D pipeline (the coarse step of Algorithm 8)
# ----------------------------------------------------------------------------

def _stage_error(n, epsilon, rho, inner, beta, *, moment_bound, samples_per_user,
                 moment_order):
    """Error bound of one 1-D clip-and-noise stage (failure ≤ 2β).

    ``inner``: the window contains ``μ ± inner``. Bias
    (:func:`clip_bias_bound`), Bernstein for the clipped mean (variance
    ``≤ M²/m``, range ``2ρ``) and the discrete Laplace tail ``b·ln(1/β)``,
    ``b = 2ρ/(nε)``, times 1.01 (the 0.05 % rounding widening and the lattice
    step).
    """
    M, m = float(moment_bound), int(samples_per_user)
    if inner <= 0:
        return math.inf
    bias = clip_bias_bound(inner, moment_bound=M, samples_per_user=m,
                           moment_order=moment_order)
    log_s = math.log(2.0 / beta)
    sampling = math.sqrt(2.0 * M * M / m * log_s / n) + 4.0 * rho * log_s / (3.0 * n)
    noise = 1.01 * 2.0 * rho / (n * epsilon) * math.log(1.0 / beta)
    return bias + sampling + noise


def person_level_error_bound_1d(n_users, epsilon, *, bound, moment_bound,
                                samples_per_user, moment_order=2.0, beta=0.1,
                                coarse_fraction=0.05, calibration="tight"):
    """Public error bound of the pure 1-D pipeline (``person_level_mean_1d``).

    A bound ``e`` with ``P(|μ̂ − μ| > e) ≤ β`` for *every* distribution with
    ``|μ| ≤ R`` whose samples have k-th central moment at most ``M^k``
    (k ≥ 2), for the public plan of
    :func:`~skuserdp.mean._person_level.plan_person_level_1d` with
    ``delta=0``. It uses at most the fourth moment, so it is conservative
    for large k. The terms:

    * coarse failure: a binomial tail for "more than 1/8 of the coarse users
      farther than r from μ" (each is, with probability at most
      ``M²/(m r²)`` by Chebyshev, or ``E(Ȳ − μ)⁴/r⁴`` for k ≥ 4) plus the
      exponential mechanism's
      ``l·e^{−3εn_c/16}`` over ``l`` bins;
    * the re-centring layer (when the plan has one): its window contains
      ``μ ± ρ₀,r``; its error is bounded like the fine stage's;
    * the fine stage: its window contains ``μ ± (ρ − centre error)``;
      clipping bias (:func:`clip_bias_bound`), Bernstein for the mean of the
      clipped values (variance ``≤ M²/m``, range ``2ρ``) and the discrete
      Laplace tail.

    The failure probability left after the coarse step is split evenly
    between the sampling and noise terms of the remaining stages.

    Parameters
    ----------
    n_users : int
        Users given to the pipeline.
    epsilon : float
        Its ε.
    bound : float
        Public R with ``|μ| ≤ R``.
    moment_bound : float
        M.
    samples_per_user : int
        m.
    moment_order : float, default=2.0
        k.
    beta : float, default=0.1
        Failure probability of the bound.
    coarse_fraction : float, default=0.05
        As in ``person_level_mean_1d``.
    calibration : {"tight", "paper"}, default="tight"

    Returns
    -------
    error : float
        The bound; ``inf`` when the coarse step alone may fail with
        probability ``≥ β/2``.

    Examples
    --------
    >>> from skuserdp.mean._person_level import person_level_error_bound_1d
    >>> e = person_level_error_bound_1d(4000, 1.0, bound=10.0, moment_bound=1.0,
    ...                                 samples_per_user=10)
    >>> bool(0 < e < 0.2)
    True
    """
    M, m, R = float(moment_bound), int(samples_per_user), float(bound)
    plan = plan_person_level_1d(n_users, epsilon, delta=0.0, bound=R,
                                moment_order=moment_order, moment_bound=M,
                                samples_per_user=m, beta=0.1,
                                coarse_fraction=coarse_fraction,
                                calibration=calibration)
    n_c, eps_s, r = plan["n_coarse"], plan["stage_epsilon"], plan["width"]
    outlier = M * M / (m * r * r)                   # Chebyshev
    if moment_order >= 4:                          # Markov on the 4th moment
        outlier = min(outlier, M ** 4 * (3.0 * m - 2.0) / (m ** 3 * r ** 4))
    outlier = min(1.0, outlier)
    coarse_fail = (float(stats.binom.sf(math.floor(n_c / 8.0), n_c, outlier))
                   + range_coarse_failure(n_c, eps_s, range_coarse_bins(R, r)))
    if coarse_fail >= beta / 2.0:
        return math.inf
    stages = 2 if plan["n_recenter"] > 0 else 1
    each = (beta - coarse_fail) / (2.0 * stages)  # per stage: 2 tails at β/2 each
    kw = dict(moment_bound=M, samples_per_user=m, moment_order=moment_order)
    center_error = plan["u"]
    if stages == 2:
        rho_r = plan["recenter_radius"]
        center_error = _stage_error(plan["n_recenter"], eps_s, rho_r,
                                    rho_r - plan["u"], each, **kw)
    rho = plan["radius"]
    return _stage_error(plan["n_fine"], eps_s, rho, rho - center_error, each, **kw)


# ----------------------------------------------------------------------------
# Fine estimation: plan (public), comparison, exact score, Algorithm 7
# ----------------------------------------------------------------------------

def _axis(half_width, n_points):
    return np.linspace(-half_width, half_width, n_points)


def pure_fine_plan(n_users, n_features, *, alpha, epsilon, moment_bound,
                   samples_per_user, moment_order=2.0, beta=0.1, calibration="tight"):
    """Public parameters of fine estimation (Algorithms 6–7).

    Parameters
    ----------
    n_users : int
        Users given to fine estimation.
    n_features : int
        d.
    alpha : float
        Target ℓ2 accuracy α; the candidates cover ``[−α, α]^d`` (the coarse
        step's ℓ∞ error) and the comparisons use ``α′ = 8α/9``.
    epsilon : float
        ε of the exponential mechanism.
    moment_bound, samples_per_user, moment_order : float, int, float
        M, m and k.
    beta : float, default=0.1
        Failure probability used for κ (paper) and the accuracy check.
    calibration : {"tight", "paper"}, default="tight"
        ``"paper"``: the paper's (reconstructed)
        constants — ``κ = 2⌈1.6 ln(2|J||J_p|/β)⌉ + 1``
        groups, ``ρ = max(2M√((k−1) max(1, ln m)/m),
        (2M/m)(16M/((k−1)α′))^{1/(k−1)}, 4α′)``, local cover of half-width
        ``2α′``, ``Score`` capped at n. ``"tight"``: one group (the
        truncated mean, which concentrates by Bernstein because it is
        bounded; this doubles every score), ``ρ = M√((k−1) max(1, ln m)/m) +
        2α′``, the local cover widened to ``9α′/4`` (:ref:`papers-akmmsu-pure`: the
        candidate can be that far from μ in ℓ∞). Both cap ``Score`` at the
        number of users used (a smaller public cap would keep sensitivity 1
        and save work, but flattens the scores near μ: measured 2.7–3.3×
        less accurate with a cap of twice the needed score).

    Returns
    -------
    plan : dict
        ``alpha``, ``alpha_c`` (α′), ``rho``, ``n_groups`` κ, ``group_size``,
        ``candidates`` (``J``, shape (|J|, d)), ``offsets`` (``J_p − p``,
        shape (|J_p|, d)), ``thresholds`` (integer group-sum thresholds per
        offset), ``cap``, ``comparisons`` = |J|·|J_p|, ``needed_score`` (the
        score a good candidate needs to win w.p. 1 − β/4),
        ``good_score`` (a lower bound on the score of the candidate nearest
        μ that holds w.p. 1 − β/4 under the model) and ``feasible``
        (``good_score ≥ needed_score``).

    Examples
    --------
    >>> from skuserdp.mean._person_level import pure_fine_plan
    >>> plan = pure_fine_plan(5000, 1, alpha=0.2, epsilon=1.0, moment_bound=1.0,
    ...                       samples_per_user=10)
    >>> plan["candidates"].shape, plan["offsets"].shape, plan["n_groups"]
    ((10, 1), (10, 1), 1)
    """
    n, d = int(n_users), int(n_features)
    alpha = check_positive_scalar(alpha, "alpha")
    M, m, k = float(moment_bound), int(samples_per_user), float(moment_order)
    paper = calibration == "paper"
    alpha_c = 8.0 * alpha / 9.0
    spread = M * math.sqrt((k - 1.0) * max(1.0, math.log(m)) / m)
    n_p = math.ceil(9.0 * math.sqrt(d)) + 1           # step ≤ 2α/(9√d)
    half_q = 2.0 * alpha_c if paper else 2.25 * alpha_c
    n_q = math.ceil(2.0 * half_q / (alpha_c / (4.0 * math.sqrt(d)))) + 1
    axes_p = [_axis(alpha, n_p)] * d
    candidates = np.stack(np.meshgrid(*axes_p, indexing="ij"), -1).reshape(-1, d)
    axes_q = [_axis(half_q, n_q)] * d
    offsets = np.stack(np.meshgrid(*axes_q, indexing="ij"), -1).reshape(-1, d)
    # J_p without the closed ball of radius α′ (a relative margin keeps grid
    # points on the sphere out despite rounding).
    offsets = offsets[np.linalg.norm(offsets, axis=1) > alpha_c * (1.0 + 1e-9)]
    n_cand, n_off = candidates.shape[0], offsets.shape[0]
    log_j = math.log(n_cand)
    if paper:
        rho = max(2.0 * spread,
                  2.0 * M / m * (16.0 * M / ((k - 1.0) * alpha_c)) ** (1.0 / (k - 1.0)),
                  4.0 * alpha_c)
        kappa = 2 * math.ceil(1.6 * math.log(2.0 * n_cand * n_off / beta)) + 1
    else:
        rho = spread + 2.0 * alpha_c
        kappa = 1
    kappa = max(1, min(kappa, n if n % 2 else n - 1))
    group = n // kappa
    # "Group mean ≥ midpoint": integer sum ≥ ceil(g·(ρ + ‖o‖/2)/(2ρ)·L).
    dist = np.linalg.norm(offsets, axis=1)
    thresholds = np.ceil(group * (rho + dist / 2.0) / (2.0 * rho)
                         * LEVELS).astype(np.int64)
    needed = (2.0 / epsilon) * (log_j + math.log(4.0 / beta))
    cap = group * kappa  # Definition 5.5: at most every used user

    # Good candidate (within α′/8 of μ): every comparison's truncated mean
    # stays within bias + dev of ⟨v, μ⟩, the midpoint is ≥ α′/2 away, and one
    # changed user moves a group mean by ≤ 2ρ/g. Bias ≤ M²/(4mρ_s) with
    # ρ_s = ρ − (distance of the window centre from μ) ≥ ρ − α′/8.
    rho_s = rho - alpha_c / 8.0
    bias = clip_bias_bound(rho_s, moment_bound=M, samples_per_user=m,
                           moment_order=k)
    # Bernstein for each group's truncated mean (g users), union over the
    # comparisons and the κ groups.
    log_s = math.log(2.0 * n_off * kappa * 4.0 / beta)
    dev = (math.sqrt(2.0 * M * M / m * log_s / group)
           + 4.0 * rho * log_s / (3.0 * group))
    margin = 3.0 * alpha_c / 8.0 - bias - dev
    if paper:
        # Lemma 5.3's count: (κ+1)/2 groups, each moved by margin.
        good = ((kappa + 1) // 2) * math.floor(group * max(margin, 0.0) / (2.0 * rho))
    else:
        good = math.floor(group * max(margin, 0.0) / (2.0 * rho))
    good = min(good, cap)
    return dict(alpha=alpha, alpha_c=alpha_c, rho=rho, n_groups=kappa,
                group_size=group, candidates=candidates, offsets=offsets,
                thresholds=thresholds, cap=int(cap), comparisons=n_cand * n_off,
                needed_score=needed, good_score=good, feasible=good >= needed)


def _lattice(projected, center, rho):
    """Round ``clip(projected − center, −ρ, ρ)`` to integers in ``[0, LEVELS]``."""
    z = np.clip(projected - center, -rho, rho)
    return np.rint((z + rho) * (LEVELS / (2.0 * rho))).astype(np.int64)


def binary_mean_comparison(user_means, p, q, *, rho, n_groups):
    """Algorithm 5 (BinMeanComp) on the lattice: does ``p`` win against ``q``?

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        Users are grouped by index into ``n_groups`` consecutive groups of
        ``⌊n/κ⌋``; the rest are ignored.
    p, q : array-like of shape (n_features,)
        Distinct points.
    rho : float
        Truncation radius.
    n_groups : int
        κ (odd).

    Returns
    -------
    p_wins : bool
        False when at least ``(κ + 1)/2`` groups have a truncated mean at or
        past the midpoint of ``p`` and ``q`` (projected on ``q − p``).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level import binary_mean_comparison
    >>> U = np.zeros((30, 1))
    >>> binary_mean_comparison(U, [0.0], [1.0], rho=2.0, n_groups=3)
    True
    >>> binary_mean_comparison(U + 0.9, [0.0], [1.0], rho=2.0, n_groups=3)
    False
    """
    U = np.asarray(user_means, dtype=np.float64)
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    offset = q - p
    dist = float(np.linalg.norm(offset))
    group = U.shape[0] // n_groups
    z = _lattice(U[:group * n_groups] @ (offset / dist), float(p @ offset) / dist, rho)
    sums = z.reshape(n_groups, group).sum(axis=1)
    threshold = math.ceil(group * (rho + dist / 2.0) / (2.0 * rho) * LEVELS)
    return int((sums >= threshold).sum()) < (n_groups + 1) // 2


def comparison_cost(sorted_z, thresholds, *, cap=None):
    """Least number of users to change so that ``p`` loses (exact, greedy).

    Parameters
    ----------
    sorted_z : ndarray of int64, shape (κ, g, D)
        Lattice values of each group, sorted ascending along axis 1, for D
        comparisons.
    thresholds : ndarray of int64, shape (D,)
        Integer group-sum thresholds.
    cap : int, default=None
        Return ``min(cap, cost)``; only the ``cap`` smallest values of each
        group are then needed for the counts (the result is the same as
        capping the exact cost).

    Returns
    -------
    cost : ndarray of shape (D,)
        The cost of each comparison (float; ``inf`` when no change suffices
        and ``cap`` is None): the sum of the ``(κ + 1)/2`` cheapest groups,
        a group's count being the least c with
        ``sum + Σ_{j<c}(L − z_(j)) ≥ threshold`` (raising the smallest
        values to the top of the window ``L`` is optimal).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level import comparison_cost, LEVELS
    >>> z = np.array([[[0], [0], [LEVELS]]])      # one group of 3, one comparison
    >>> comparison_cost(z, np.array([2 * LEVELS]))
    array([1.])
    """
    group = sorted_z.shape[1]
    head = group if cap is None else min(group, int(cap))
    sums = sorted_z.sum(axis=1)                                       # (κ, D)
    gains = np.cumsum(LEVELS - sorted_z[:, :head], axis=1)            # (κ, head, D)
    short = thresholds[None, :] - sums                                # (κ, D)
    # The c with sum + (first c gains) < threshold form a prefix of 0..g.
    counts = ((short > 0).astype(np.int64)
              + (gains < short[:, None, :]).sum(axis=1)).astype(np.float64)
    # A count above g means no change suffices (only possible when every
    # value of the group was examined, head == g); with a smaller head a
    # count of head + 1 only means "more than cap", which the cap absorbs.
    counts[counts > group] = np.inf
    half = (sorted_z.shape[0] + 1) // 2
    cost = np.sort(counts, axis=0)[:half].sum(axis=0)
    return cost if cap is None else np.minimum(cost, float(cap))


def _scores_chunk(sorted_proj, proj_centers, thresholds, rho, cap):
    out = np.empty(proj_centers.shape[0])
    for i, centers in enumerate(proj_centers):
        z = _lattice(sorted_proj, centers[None, None, :], rho)
        out[i] = float(comparison_cost(z, thresholds, cap=cap).min())
    return out


def candidate_scores(user_means, plan, *, n_jobs=None):
    """Exact ``Score(p)`` of every candidate (Definition 5.5, Algorithm 6).

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        Centred user means (the fine users, minus the coarse estimate).
    plan : dict
        From :func:`pure_fine_plan`.
    n_jobs : int, default=None
        Workers over chunks of candidates; results do not depend on it.

    Returns
    -------
    scores : ndarray of shape (|J|,)
        Integers in ``[0, cap]`` (as floats), sensitivity 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level import pure_fine_plan, candidate_scores
    >>> U = np.random.default_rng(0).normal(0.0, 0.3, size=(4000, 1))
    >>> plan = pure_fine_plan(4000, 1, alpha=0.3, epsilon=1.0, moment_bound=1.0,
    ...                       samples_per_user=10)
    >>> s = candidate_scores(U, plan)
    >>> int(np.argmax(s)) in (4, 5)                # the candidates next to 0
    True
    """
    U = np.asarray(user_means, dtype=np.float64)
    kappa, group = plan["n_groups"], plan["group_size"]
    offsets = plan["offsets"]
    directions = offsets / np.linalg.norm(offsets, axis=1, keepdims=True)
    proj = (U[:kappa * group] @ directions.T).reshape(kappa, group, -1)
    # Truncation and rounding are monotone, so one sort serves every p.
    proj.sort(axis=1)
    proj_centers = plan["candidates"] @ directions.T              # (|J|, D)
    chunks = np.array_split(np.arange(proj_centers.shape[0]),
                            max(1, min(proj_centers.shape[0], 4 * abs(n_jobs or 1))))
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_scores_chunk)(proj, proj_centers[idx], plan["thresholds"],
                               plan["rho"], plan["cap"])
        for idx in chunks)
    return np.concatenate(parts)


def _check_cost(plan, d, max_comparisons):
    if plan["comparisons"] > max_comparisons:
        raise ValueError(
            f"pure-DP fine estimation in {d} dimensions needs "
            f"{plan['comparisons']:,} comparisons, above max_comparisons="
            f"{max_comparisons:,}: the paper's pure estimator is exponential in "
            "the dimension (use d <= 2, or delta > 0 and the threaded estimator)."
        )


def fine_estimate(user_means, *, alpha, epsilon, moment_bound, samples_per_user,
                  moment_order=2.0, beta=0.1, calibration="tight",
                  max_comparisons=MAX_COMPARISONS, random_state=None, n_jobs=None):
    """Algorithm 7 (FineEst): the exponential mechanism over the candidate grid.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        Centred user means (μ assumed within ``α`` of 0 in ℓ∞). Not modified.
    alpha, epsilon, moment_bound, samples_per_user, moment_order, beta, calibration
        See :func:`pure_fine_plan`.
    max_comparisons : int, default=10**6
        Refuse plans with more candidate pairs (``ValueError``).
    random_state : int, RandomState, SeedSequence or None, default=None
    n_jobs : int, default=None

    Returns
    -------
    point : ndarray of shape (n_features,)
        The chosen candidate.
    loss : PureDP
        ε.
    plan : dict
        The public plan.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level import fine_estimate
    >>> U = np.random.default_rng(0).normal(0.05, 0.3, size=(4000, 1))
    >>> point, loss, plan = fine_estimate(U, alpha=0.3, epsilon=1.0, moment_bound=1.0,
    ...                                   samples_per_user=10, random_state=0)
    >>> bool(abs(point[0] - 0.05) <= 0.3), loss.epsilon
    (True, 1.0)
    """
    U = np.asarray(user_means, dtype=np.float64)
    n, d = U.shape
    epsilon = check_positive_scalar(epsilon, "epsilon")
    plan = pure_fine_plan(n, d, alpha=alpha, epsilon=epsilon, moment_bound=moment_bound,
                          samples_per_user=samples_per_user, moment_order=moment_order,
                          beta=beta, calibration=calibration)
    _check_cost(plan, d, max_comparisons)
    point = _sample_candidate(U, plan, epsilon, random_state, n_jobs)
    return point, PureDP(epsilon), plan


def _sample_candidate(U, plan, epsilon, random_state, n_jobs):
    """The exponential mechanism over the exact scores (ε-DP, sensitivity 1)."""
    scores = candidate_scores(U, plan, n_jobs=n_jobs)
    rng = generator_from(make_seed_sequence(random_state))
    return plan["candidates"][exponential_mechanism(scores, epsilon, 1.0, rng)].copy()


# ----------------------------------------------------------------------------
# Algorithm 8
# ----------------------------------------------------------------------------

def person_level_mean_pure(user_means, *, epsilon, bound, moment_bound,
                           samples_per_user, moment_order=2.0, alpha="auto", beta=0.1,
                           calibration="tight", max_comparisons=MAX_COMPARISONS,
                           random_state=None, n_jobs=None):
    """Pure ε-DP person-level mean in d ≤ 2 dimensions (AKMMSU Algorithm 8).

    :func:`plan_person_level` with ``method="pure"`` (public values only)
    followed by :func:`person_level_from_plan`, in one call. The guarantee
    is user-level: neighbouring datasets differ in the data of one user
    (replace-one, the number of users public).

    The users are halved by a data-independent permutation. The first half
    runs the pure 1-D pipeline on every coordinate with ε/d (coarse estimate,
    ℓ∞ error ≤ α w.p. 1 − β/2); the second half runs fine estimation
    (:func:`fine_estimate`, ε) on its means minus the coarse estimate.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One mean per user. Not modified.
    epsilon : float
        ε, ``> 0``.
    bound : float
        Public R with ``‖μ‖_∞ ≤ R``.
    moment_bound : float
        M: every direction's k-th central moment of the samples is ≤ ``M^k``.
    samples_per_user : int
        m.
    moment_order : float, default=2.0
        k ≥ 2.
    alpha : "auto" or float, default="auto"
        Target accuracy α (public). ``"auto"``: the larger of the public ℓ∞
        bound of the coarse step (:func:`person_level_error_bound_1d` at
        β/(2d) per coordinate, minimised over the coarse shares
        ``COARSE_SHARES`` of the 1-D pipeline; the fine grid must cover the
        coarse error)
        and the smallest α (on a 5 % geometric grid) at which the fine step
        certifies its accuracy (``pure_fine_plan(...)["feasible"]``).
    beta : float, default=0.1
        Failure probability behind ``"auto"`` and the feasibility check.
    calibration : {"tight", "paper"}, default="tight"
        Passed to both stages (see :func:`pure_fine_plan`).
    max_comparisons : int, default=10**6
        Guard on the exponential cost.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the users' split and of every mechanism.
    n_jobs : int, default=None
        Workers over chunks of candidates; results do not depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean.
    loss : PureDP
        ε.
    info : dict
        Public facts (``alpha``, ``rho``, ``n_groups``, ``n_candidates``,
        ``comparisons``, ``feasible``, ``n_coarse``, ``n_fine``) and the
        private ``coarse`` estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import person_level_mean_pure
    >>> rng = np.random.default_rng(0)
    >>> U = 1.0 + rng.standard_t(5, size=(20000, 10, 1)).mean(axis=1)
    >>> mean, loss, info = person_level_mean_pure(
    ...     U, epsilon=1.0, bound=10.0, moment_bound=2.3, samples_per_user=10,
    ...     moment_order=4, random_state=0)
    >>> bool(np.linalg.norm(mean - 1.0) <= info["alpha"]), loss.epsilon
    (True, 1.0)
    """
    U = _as_2d_float(user_means, "user_means")
    _check_finite(U, "user_means")
    plan = plan_person_level(
        U.shape[0], U.shape[1], budget=PureDP(epsilon), moment_bound=moment_bound,
        samples_per_user=samples_per_user, moment_order=moment_order, bound=bound,
        method="pure", alpha=alpha, beta=beta, calibration=calibration,
        max_comparisons=max_comparisons)
    return _run_pure(U, plan.stages, random_state, n_jobs)


def _plan_pure(n, d, epsilon, *, bound, moment_bound, samples_per_user, moment_order,
               alpha, beta, calibration, max_comparisons):
    """Public stages of Algorithm 8: the halves, α, the coarse share and the
    fine plan (whose cost is checked here, before any data are read)."""
    if n < 4:
        raise ValueError("Algorithm 8 needs at least 4 users.")
    epsilon = check_positive_scalar(epsilon, "epsilon")
    R = check_positive_scalar(bound, "bound")
    M = check_positive_scalar(moment_bound, "moment_bound")
    m = int(samples_per_user)
    _check_calibration(calibration)
    half = n // 2
    if isinstance(alpha, str):
        if alpha != "auto":
            raise ValueError(f"alpha must be 'auto' or a float, got {alpha!r}.")
        # The coarse share with the smallest certified error (public).
        coarse_fraction, coarse_alpha = min(
            ((share, person_level_error_bound_1d(
                half, epsilon / d, bound=R, moment_bound=M, samples_per_user=m,
                moment_order=moment_order, beta=beta / (2.0 * d),
                coarse_fraction=share, calibration=calibration))
             for share in COARSE_SHARES), key=lambda pair: pair[1])
        if not math.isfinite(coarse_alpha):
            coarse_alpha = 2.0 * R
            warn_at_caller(
                f"{half} users are too few for the coarse step to be reliable at "
                f"epsilon/d = {epsilon / d:g}; the fine grid covers the whole box "
                "and the estimate may be far off. Privacy is unaffected.",
                AccuracyWarning)
        # The grid must cover the coarse error, and the fine step must be able
        # to certify its target: the larger of the two (public).
        alpha = coarse_alpha
        while alpha < 2.0 * R and not pure_fine_plan(
                n - half, d, alpha=alpha, epsilon=epsilon, moment_bound=M,
                samples_per_user=m, moment_order=moment_order, beta=beta,
                calibration=calibration)["feasible"]:
            alpha *= 1.05
    else:
        alpha = check_positive_scalar(alpha, "alpha")
        coarse_fraction = COARSE_SHARES[0]
    # Check the cost before spending any time on the data.
    fine = pure_fine_plan(n - half, d, alpha=alpha, epsilon=epsilon, moment_bound=M,
                          samples_per_user=m, moment_order=moment_order, beta=beta,
                          calibration=calibration)
    _check_cost(fine, d, max_comparisons)
    if not fine["feasible"]:
        warn_at_caller(
            f"{n - half} fine users are too few for the fine step to "
            f"certify accuracy alpha={alpha:.3g} (a good candidate's score bound "
            f"{fine['good_score']} < {fine['needed_score']:.1f} needed); "
            "the estimate is still private but may be off by up to "
            f"{2 * alpha:.3g} per coordinate.", AccuracyWarning)
    return dict(epsilon=epsilon, bound=R, moment_bound=M, samples_per_user=m,
                moment_order=moment_order, calibration=calibration, n_coarse=half,
                n_fine=n - half, coarse_fraction=coarse_fraction, alpha=alpha,
                fine=fine)


def _run_pure(U, stages, random_state, n_jobs):
    """Algorithm 8 on the finite ``U`` with the public ``stages`` of
    :func:`_plan_pure`."""
    epsilon, R, plan = stages["epsilon"], stages["bound"], stages["fine"]
    seeds = make_seed_sequence(random_state).spawn(3)
    order = generator_from(seeds[0]).permutation(U.shape[0])  # data-independent
    half = stages["n_coarse"]
    coarse_users, fine_users = U[order[:half]], U[order[half:]]
    coarse, coarse_loss, _ = person_level_mean_per_feature(
        coarse_users, epsilon=epsilon, bound=R, moment_order=stages["moment_order"],
        moment_bound=stages["moment_bound"],
        samples_per_user=stages["samples_per_user"],
        coarse_fraction=stages["coarse_fraction"], calibration=stages["calibration"],
        random_state=seeds[1])
    # Post-processing: the coarse estimate is clipped to the public box.
    np.clip(coarse, -R, R, out=coarse)
    # Algorithm 7 on the re-centred fine users (ε).
    point = _sample_candidate(fine_users - coarse, plan, epsilon, seeds[2], n_jobs)
    # Disjoint halves drawn independently of the data: parallel composition.
    loss = compose_parallel(coarse_loss, PureDP(epsilon))
    info = dict(alpha=plan["alpha"], rho=plan["rho"], n_groups=plan["n_groups"],
                n_candidates=plan["candidates"].shape[0],
                comparisons=plan["comparisons"], feasible=plan["feasible"],
                n_coarse=half, n_fine=fine_users.shape[0], coarse=coarse)
    return coarse + point, loss, info


# ----------------------------------------------------------------------------
# Public plan and apply: every route of the estimator
# ----------------------------------------------------------------------------

#: Routes of :func:`plan_person_level`, as :class:`ThreadedClipNoiseEstimator`
#: runs them.
ROUTES = ("per_feature", "threaded", "pure")


@dataclass(frozen=True)
class PersonLevelPlan:
    """Every public quantity of one person-level release (Agarwal et al.).

    Computed by :func:`plan_person_level` from public values only (n, d,
    the budget, the moment assumptions k, M and m, the bound R and the
    route's knobs), never from the data; :func:`person_level_from_plan`
    runs it. Every group of users, radius and per-stage budget below is
    the same for every dataset of the public shape. The guarantee is
    user-level: two datasets are neighbours when the data of one user
    (person) are replaced; the number of users is public.

    Parameters
    ----------
    n_users, n_features : int
        Public shape of the per-user means.
    route : {"per_feature", "threaded", "pure"}
        ``"per_feature"``: the one-dimensional pipeline (§3, Theorem 3.14:
        coarse range, re-centring layer, fine clip-and-noise) on every
        feature at ``(ε/d, δ/d)``; ``"threaded"``: Algorithm 4 (coarse
        location, Threaded Clip-and-Noise layers, final clip-and-noise),
        δ > 0; ``"pure"``: Algorithm 8 (the 1-D pipeline on half of the
        users, the exponential mechanism over a grid of candidates on the
        other half), pure ε-DP, d ≤ 2 in practice.
    budget : PureDP or ApproxDP
        The target guarantee. The release never exceeds it; the loss that
        :func:`person_level_from_plan` returns is the exact one (it may be
        smaller, by lattice rounding and, on the threaded route, by a final
        radius that depends on an earlier private release).
    stages : dict
        The route's public schedule. ``"per_feature"``: the plan of the 1-D
        pipeline of one feature (``n_coarse``, ``n_recenter``, ``n_fine``,
        ``stage_epsilon``, ``width``, ``u``, ``recenter_radius``,
        ``center_error``, ``rho0``, ``radius``, ...). ``"threaded"``: group
        sizes (``n_coarse``, ``n_tau``, ``n_tcn``, ``n_final``), the
        layers' clipping ``radii``, ``layer_budget``, ``coarse_budget``,
        ``final_budget``, the public final radius ``spread_radius`` (before
        the private spread estimate) and the last layer's public
        ``center_error``. ``"pure"``: the halves (``n_coarse``,
        ``n_fine``), ``alpha``, ``coarse_fraction`` and the ``fine`` plan
        (candidate grid, truncation radius, group count, thresholds).

    Examples
    --------
    >>> from skuserdp.mean import plan_person_level
    >>> from skuserdp.privacy import PureDP
    >>> plan = plan_person_level(4000, 1, budget=PureDP(1.0), moment_bound=1.0,
    ...                          samples_per_user=10, bound=10.0)
    >>> plan.route, plan.stages["n_coarse"], plan.stages["n_fine"]
    ('per_feature', 200, 3400)
    """

    n_users: int
    n_features: int
    route: str
    budget: object
    stages: dict


def plan_person_level(n_users, n_features, *, budget, moment_bound, samples_per_user,
                      moment_order=2.0, bound=None, method="auto", n_threads="auto",
                      alpha="auto", beta=0.1, coarse_fraction=0.05, calibration="tight",
                      max_comparisons=MAX_COMPARISONS):
    """Plan a person-level release (Agarwal et al.) from public values only.

    Chooses the route as :class:`ThreadedClipNoiseEstimator` does and fixes
    every public quantity of it: the data-independent split of the users
    into disjoint groups, every clipping radius and every stage's budget.
    Public warnings (an accuracy target the users cannot meet) are raised
    here; the private step is :func:`person_level_from_plan`. Privacy holds
    for every plan; the assumptions (k, M, m, R) affect accuracy only.

    Parameters
    ----------
    n_users : int
        Number of users n (public under replace-one neighbours).
    n_features : int
        Dimension d.
    budget : PureDP or ApproxDP
        Target user-level guarantee; δ = 0 (``PureDP``) is pure ε-DP.
    moment_bound : float
        Public M: ``(E|⟨X − μ, v⟩|^k)^{1/k} ≤ M`` for every unit v.
    samples_per_user : int
        Public m: every user has at least m samples.
    moment_order : float, default=2.0
        Public k ≥ 2.
    bound : float, default=None
        Public R with ``‖μ − center‖_∞ ≤ R`` (``center`` of
        :func:`person_level_from_plan`). Required with δ = 0 (the coarse
        steps search ``[−R, R]``); with δ > 0 it lets Algorithm 4's coarse
        step search ``[−R, R]`` per coordinate (ignored when too wide for
        it), and is unused by the 1-D pipeline.
    method : {"auto", "per_feature", "threaded", "pure"}, default="auto"
        ``"auto"``: ``"per_feature"`` when d = 1 or δ = 0, else
        ``"threaded"`` (what :class:`ThreadedClipNoiseEstimator` runs with
        ``method="auto"``); the others force a route (``"threaded"`` needs
        δ > 0 and 3 users, ``"pure"`` δ = 0 and 4 users).
    n_threads : "auto" or int, default="auto"
        ``"threaded"``: number of Threaded Clip-and-Noise layers; ``"auto"``
        from the paper's recursion, an int caps it.
    alpha : "auto" or float, default="auto"
        ``"pure"``: target ℓ2 accuracy of the fine step; ``"auto"``: the
        larger of the coarse step's certified error and the least α the fine
        step can certify.
    beta : float, default=0.1
        Failure probability behind the radii and group sizes.
    coarse_fraction : float, default=0.05
        ``"per_feature"``: minimum share of users in the coarse stage (tight
        calibration), in ``(0, 1)``.
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: disjoint groups that each spend the whole budget
        (parallel composition) and the constants measured on the heavy-tail
        benchmark; ``"paper"``: the paper's split of the budget and
        constants.
    max_comparisons : int, default=10**6
        ``"pure"``: refuse (``ValueError``) fine plans with more candidate
        pairs; the cost is exponential in d.

    Returns
    -------
    plan : PersonLevelPlan
        The route and its public schedule: group sizes, radii and the
        budget of every stage.

    Examples
    --------
    >>> from skuserdp.mean import plan_person_level
    >>> from skuserdp.privacy import ApproxDP
    >>> plan = plan_person_level(6000, 8, budget=ApproxDP(1.0, 1e-6),
    ...                          moment_order=4, moment_bound=1.5,
    ...                          samples_per_user=10)
    >>> plan.route, len(plan.stages["radii"]), plan.stages["n_tcn"]
    ('threaded', 2, 1517)
    """
    if isinstance(budget, ApproxDP):
        epsilon, delta = budget.epsilon, budget.delta
    elif isinstance(budget, PureDP):
        epsilon, delta = budget.epsilon, 0.0
    else:
        raise TypeError(f"budget must be a PureDP or ApproxDP loss, got {budget!r}.")
    n, d = int(n_users), int(n_features)
    if method == "auto":
        route = "per_feature" if d == 1 or delta == 0 else "threaded"
    elif method in ROUTES:
        route = method
    else:
        raise ValueError(
            f"method must be 'auto', 'per_feature', 'threaded' or 'pure', got "
            f"{method!r}.")
    if route == "per_feature":
        stages = _plan_1d(n, epsilon / d, delta / d, bound=bound,
                          moment_order=moment_order, moment_bound=moment_bound,
                          samples_per_user=samples_per_user, beta=beta,
                          coarse_fraction=coarse_fraction, calibration=calibration)
    elif route == "threaded":
        stages = _plan_threaded(n, d, epsilon, delta, moment_order=moment_order,
                                moment_bound=moment_bound,
                                samples_per_user=samples_per_user,
                                n_threads=n_threads, bound=bound, beta=beta,
                                calibration=calibration)
    else:
        if delta != 0:
            raise ValueError(
                "method='pure' is the paper's pure ε-DP estimator: set delta=0.")
        stages = _plan_pure(n, d, epsilon, bound=bound, moment_bound=moment_bound,
                            samples_per_user=samples_per_user,
                            moment_order=moment_order, alpha=alpha, beta=beta,
                            calibration=calibration, max_comparisons=max_comparisons)
    return PersonLevelPlan(n_users=n, n_features=d, route=route, budget=budget,
                           stages=stages)


def person_level_from_plan(user_means, plan, *, center=None, random_state=None,
                           n_jobs=None):
    """Run a planned person-level release on the users' means.

    Parameters
    ----------
    user_means : array-like of shape (n_users, n_features)
        One mean per user (of at least ``samples_per_user`` samples), finite;
        the shape must match the plan. Not modified.
    plan : PersonLevelPlan
        From :func:`plan_person_level`.
    center : array-like of shape (n_features,), default=None
        Public point the data are centred at (the plan's ``bound`` R is on
        ``‖μ − center‖_∞``); ``None`` is the origin. Must not be computed
        from the private data.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the users' split and of every mechanism.
    n_jobs : int, default=None
        ``"pure"`` route: workers over chunks of candidates; results do not
        depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean, at most ``plan.budget``-DP at user level (two
        inputs are neighbours when one user's mean is replaced; the number
        of users is public).
    loss : PureDP or ApproxDP
        The exact privacy loss incurred.
    info : dict
        Public facts of the release and the private intermediate outputs it
        released on the way (e.g. the coarse centre; the threaded route's
        layer centres and spread estimate ``tau``), each already covered by
        ``loss``.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import person_level_from_plan, plan_person_level
    >>> from skuserdp.privacy import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> U = 105.0 + rng.standard_t(5, size=(6000, 10, 8)).mean(axis=1)
    >>> plan = plan_person_level(6000, 8, budget=ApproxDP(1.0, 1e-6),
    ...                          moment_order=4, moment_bound=1.5,
    ...                          samples_per_user=10, bound=10.0)
    >>> mean, loss, info = person_level_from_plan(U, plan, center=np.full(8, 100.0),
    ...                                           random_state=0)
    >>> bool(np.linalg.norm(mean - 105.0) < 0.5), loss.epsilon <= 1.0
    (True, True)
    """
    U = np.asarray(user_means, dtype=np.float64)
    _check_plan_shape("user_means", U, plan)
    _check_finite(U, "user_means")
    mid = None if center is None else check_center(center, plan.n_features)
    if plan.route == "threaded":
        mean, loss, info = _run_threaded(U, plan.stages, random_state, mid)
    else:
        if mid is not None:
            U = U - mid
        if plan.route == "pure":
            mean, loss, info = _run_pure(U, plan.stages, random_state, n_jobs)
        else:
            mean, loss, info = _run_per_feature(U, plan.stages, random_state)
    return (mean if mid is None else mid + mean), loss, info


# ============================================================================
# Layer: The estimator (ThreadedClipNoiseEstimator)
# (formerly skuserdp.mean._person_level)
# ============================================================================

@fill_doc
class ThreadedClipNoiseEstimator(UserLevelMeanEstimator):
    """User-level private mean for heavy-tailed data (bounded k-th moments).

    For data whose samples have only ``k`` bounded moments (e.g. Student-t,
    Pareto-like tails), clipping to a public bound wastes accuracy and
    clipping tightly biases the mean. This estimator (Agarwal et al. 2024)
    first locates the mean coarsely on a third of the users, then runs
    *threaded* clip-and-noise layers on disjoint blocks of users, each
    clipping around the previous layer's private output with a shrinking
    radius, and finally clips the last third of the users around that
    centre with the radius that balances the clipping bias
    (``∝ ρ^{−(k−1)}``) against the noise (``∝ ρ/(nε)``). With one feature
    the one-dimensional estimator (Theorem 3.14: a quarter of the users for
    the coarse step, the rest for one clip-and-noise) is used instead; with
    ``delta=0`` it is pure ε-DP.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    delta : float, default=1e-6
        Failure probability δ, in ``[0, 1)``. ``0`` gives pure ε-DP.
    moment_order : float, default=2.0
        Public k ≥ 2: every direction of the samples has a bounded k-th
        central moment. A larger k is a stronger assumption (less clipping
        bias); k = 2 (bounded variance) is always safe.
    moment_bound : float, default=None
        Public M: ``(E|⟨X − μ, v⟩|^k)^{1/k} ≤ M`` for every unit v.
        Required (``fit`` raises without it): it sets every clipping radius,
        and the only bound derivable from a box (its diagonal) is so loose
        that the estimate is useless.
    samples_per_user : int
        Public minimum number of rows per user m (required: it sets every
        radius and is never read off the data).
    n_threads : "auto" or int, default="auto"
        Number of threaded layers; ``"auto"`` from the paper's recursion
        (one layer unless d is very large compared with m).
    {bounds}
        The data are centred at its midpoint and the paper's bound R on
        every ``|μ_j|`` is its largest half-width: the pure-DP routes search
        ``[−R, R]``, and with ``delta > 0`` and several features Algorithm
        4's coarse step (tight calibration) searches it per coordinate with
        the exact exponential mechanism, which needs far fewer users than
        the threshold of the unbounded stability histogram (measured 1.4–1.6×
        more accurate at n = 2000, d = 10; ``benchmarks/README.md``).
        With ``delta > 0`` the box is optional and ``"auto"`` learns none
        (``bounds_`` is None): the coarse steps run the stability histogram
        on an unbounded grid and the whole budget goes to the estimate
        (a learned box took a share of ε over ``2·n_features`` releases, and
        its widest column set R for every feature: at 20 000 users × 64
        features one column came out absurdly wide in nearly every fit). A
        box too wide for the bounded coarse step (more than 1e12 buckets of
        width ``4M/√m``) is ignored with ``delta > 0`` and refused with
        ``delta=0`` (``ValueError``, before the estimator's release).
        Unlike the other box-based estimators, this one runs in the units of
        ``X``, not in the box's per-column scaled coordinates: every radius
        comes from the isotropic ``moment_bound`` M, which bounds the scaled
        coordinates only as ``M / min(half-width)`` (the narrow column's
        noise either way, and more on every wider one). With columns of
        very different scales, standardise them before fitting, with
        public scales, and declare M for the standardised data.
    {bounds_share}
        Also unused with ``delta > 0`` (no box is learned then).
    method : {"auto", "pure"}, default="auto"
        ``"auto"``: Algorithm 4 (δ > 0, several features), the 1-D estimator
        (δ > 0, one feature) or the 1-D estimator per feature with ε/d
        (δ = 0). ``"pure"``: Algorithm 8 of the paper (``delta=0``, at most
        two features; exact scores, about 10⁵ comparisons for two features,
        each a pass over the users — seconds to minutes). It is there as the
        paper's reference pure-DP estimator: with the paper's grids it was
        measured 4–6× less accurate than ``"auto"`` (``benchmarks/README.md``).
    {weighting}
    {calibration}
        ``"tight"``: every stage sees disjoint users and spends the whole
        budget (parallel composition), bucket width ``4M/√m``.
        ``"paper"``: the paper's split (ε/2, ε/4, ε/4; advanced composition
        over layers computed exactly) and constants.
    {random_state}
    {n_jobs}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private mean.
    bounds_ : tuple (lower, upper) or None
        The box (declared, or learned privately); None when none is learned
        (``delta > 0`` with ``bounds="auto"``).
    radii_ : list of float
        Public clipping radii of the threaded layers and, last, of the final
        stage (the 1-D routes: one fine radius; ``method="pure"``: the
        truncation radius of the comparisons).
    n_users_ : int
        Number of users.
    epsilon_, delta_ : float
        The (ε, δ) spent.
    rho_ : float or None
        zCDP parameter when the guarantee is pure (ε²/2), else None.
    privacy_loss_ : PureDP or ApproxDP
        The native guarantee.
    {feature_attributes}

    See Also
    --------
    ClipNoiseMeanEstimator : One clip to a public ball.
    WinsorizedMeanEstimator : Concentrated users, a loose public box.

    References
    ----------
    Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman, "Private mean
    estimation with person-level differential privacy", SODA 2025
    (arXiv:2405.20405).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import ThreadedClipNoiseEstimator
    >>> rng = np.random.default_rng(0)
    >>> n, m = 6000, 10
    >>> X = 2.0 + rng.standard_t(5, size=(n * m, 3))
    >>> groups = np.repeat(np.arange(n), m)
    >>> est = ThreadedClipNoiseEstimator(epsilon=1.0, delta=1e-6, moment_order=4,
    ...                                  moment_bound=1.5, samples_per_user=m,
    ...                                  random_state=0).fit(X, groups=groups)
    >>> est.mean_.round(1)
    array([2., 2., 2.])
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "moment_order": [Interval(Real, 2, None, closed="left")],
        "moment_bound": [None, Interval(Real, 0, None, closed="neither")],
        "samples_per_user": [Interval(Integral, 1, None, closed="left")],
        "n_threads": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        **BOUNDS_CONSTRAINTS,
        "method": [StrOptions({"auto", "pure"})],
        **WEIGHT_CONSTRAINTS,
    }
    _min_users = 3

    def __init__(self, epsilon=1.0, delta=1e-6, *, moment_order=2.0, moment_bound=None,
                 samples_per_user=1, n_threads="auto", bounds="auto", bounds_share=None,
                 method="auto", weighting="equal", estimand="user_mean", max_rows=None,
                 weights_share="auto", calibration="tight", random_state=None,
                 n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.weighting = weighting
        self.estimand = estimand
        self.max_rows = max_rows
        self.weights_share = weights_share
        self.moment_order = moment_order
        self.moment_bound = moment_bound
        self.samples_per_user = samples_per_user
        self.n_threads = n_threads
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.method = method
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _prepare(self, n_users, n_features):
        if self.moment_bound is None:
            raise ValueError(
                f"{type(self).__name__} needs a public moment_bound= (M, with "
                "moment_order= k: every direction of the rows has (E|<x - mu, "
                "v>|^k)^(1/k) <= M). It is public knowledge, never read off the "
                "data; without one, use UserMeanEstimator or CoinPressMeanEstimator.")
        if self.method == "pure":
            if self.delta != 0:
                raise ValueError(
                    "method='pure' is the paper's pure ε-DP estimator: set delta=0."
                )
            if n_features > 2:
                raise ValueError(
                    f"method='pure' is limited to 2 features (got {n_features}): its "
                    "cost grows like (16√d)^(2d) comparisons (10^8 at d = 3). Use "
                    "method='auto' (one pure 1-D estimate per feature) or delta > 0."
                )

    def _scales_box(self):
        # Not in the box's scaled coordinates: every radius is set by the
        # isotropic moment bound M in the units of X, which bounds the scaled
        # coordinates only as M / min(half_width); that is the narrow
        # column's noise either way and more on every wider one.
        return False

    def _needs_bounds(self):
        # With delta > 0 no route needs a box (the coarse steps can run the
        # stability histogram on an unbounded grid): a declared one
        # is free and used, but "auto" would spend bounds_share of ε on
        # 2·n_features releases whose worst column sets R for every feature.
        return self.delta == 0 or not (isinstance(self.bounds, str)
                                       and self.bounds == "auto")

    def _coarse_width(self):
        """Public bucket width r of the coarse step that searches [−R, R]."""
        paper = self.calibration == "paper" and self.delta == 0
        return (16.0 if paper else 4.0) * self.moment_bound / math.sqrt(
            self.samples_per_user)

    def _refuse_wide_box(self, half_width, width):
        """Refuse a box too wide for the pure coarse step (public or released
        values only; before the estimator's own release)."""
        name = type(self).__name__
        wide = [j for j, h in enumerate(half_width) if not range_coarse_fits(h, width)]
        wide = feature_labels(wide, getattr(self, "feature_names_in_", None))
        where = (f"feature(s) {wide} (half-width up to "
                 f"{float(np.max(half_width)):.3g})")
        what = (f"[-R, R] spans more than {MAX_BINS:.0e} buckets of width {width:.3g} "
                "(a multiple of moment_bound/sqrt(samples_per_user)), which the pure "
                "(delta=0) coarse step's exact exponential mechanism cannot index in "
                "float64 (R is the box's largest half-width, used for every feature)")
        if isinstance(self.bounds, str):
            raise ValueError(
                f"{name}: bounds='auto' learned a box too wide in {where}: "
                f"{what}. Either its private median or spread release failed "
                f"there (the box of {half_width.shape[0]} feature(s) is learned "
                "from a share of epsilon split over two releases per feature), or "
                "moment_bound is far too small for the data. Declare "
                "bounds=(lower, upper) in the units of the data (public knowledge, "
                "e.g. a codebook range), check moment_bound, or use delta > 0 (no "
                "box needed), more users or a larger epsilon.")
        raise ValueError(
            f"{name}: the declared bounds are too wide in {where}: {what}. "
            "Please declare tighter bounds (in the units of the data), or use "
            "delta > 0 (no box needed).")

    def _interval_unavailable(self):
        return (
                "the threaded estimator clips at radii set by the declared moment "
                "bound, and the bias of that clipping depends on the unknown moments "
                "of the users' rows: no bound on it is released, so no valid interval"
                " is offered (docs: 'Confidence intervals'). With a box, "
                "UserMeanEstimator gives one.")

    def _fit_user_means(self, U, budget):
        n, d = U.shape
        eps, delta = budget.epsilon, budget.delta
        # The paper's bound R on every |mu_j| is the box's largest half-width
        # and the data are centred at its midpoint; no box (delta > 0 with
        # bounds="auto") or one too wide for the bounded coarse step (public
        # or released values only): neither, the coarse steps need none.
        mid = bound = None
        if budget.lower is not None:
            width = self._coarse_width()
            if range_coarse_fits(float(np.max(budget.half_width)), width):
                mid, bound = budget.midpoint, float(np.max(budget.half_width))
            elif self.delta == 0:
                self._refuse_wide_box(budget.half_width, width)
        if self.method == "pure":
            route = "pure"
        elif d == 1 or self.delta == 0:
            # One feature, or pure DP: the 1-D pipeline per feature with ε/d
            # (basic composition; d = 1 spends ε).
            route = "per_feature"
        else:
            route = "threaded"
            if self.delta >= 1.0 / n:
                warn_at_caller(
                    f"delta={self.delta:g} is not below 1/n_users = {1 / n:.3g}: the "
                    "guarantee allows releasing a user's data outright.",
                    UserWarning)
        plan = plan_person_level(
            n, d, budget=PureDP(eps) if delta == 0 else ApproxDP(eps, delta),
            moment_bound=self.moment_bound, samples_per_user=self.samples_per_user,
            moment_order=self.moment_order, bound=bound, method=route,
            n_threads=self.n_threads, calibration=self.calibration)
        mean, loss, info = person_level_from_plan(
            U, plan, center=mid, random_state=budget.random_state, n_jobs=self.n_jobs)
        if route == "pure":
            self.radii_ = [info["rho"]]
        elif route == "per_feature":
            self.radii_ = [info["radius"]]
        else:
            self.radii_ = list(info["radii"]) + [info["final_radius"]]
        return mean, loss
