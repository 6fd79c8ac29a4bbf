"""Person-level means under bounded k-th moments, one dimension (AKMMSU 2024, §3).

Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman, "Private Mean
Estimation with Person-Level Differential Privacy" [AKM+24]_, §3.3
(Algorithm 1, Theorem 3.10), §3.2 (clip-and-noise, Theorem 3.9) and §3.4
(Theorem 3.14); spec ``akmmsu2024_person_level.md`` §2.1–2.3, §1.7, §6.

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
output, so by (adaptive) parallel composition (spec §1.7) the pipeline is
ε-DP (resp. (ε, δ)) when each stage is (``calibration="tight"``).
``calibration="paper"`` runs the paper's constants instead: halves of the
users, ``r = 16M/√m`` and ε/2 per stage with basic composition.
"""

import math
import warnings

import numpy as np

from ..exceptions import AccuracyWarning
from ..mechanisms import private_range, stability_histogram_argmax
from ..privacy import (
    PureDP,
    advanced_composition_step,
    compose,
    compose_homogeneous,
    compose_parallel,
    stability_histogram_threshold,
    zcdp_to_approx_dp,
)
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_positive_scalar
from ._clip_noise import clip_noise_mean
from ._concentration import private_tau, private_tau_min_users

__all__ = ["person_level_mean_1d", "person_level_mean_per_feature",
           "plan_person_level_1d", "fine_radius_1d",
           "coarse_estimate", "tcn_radii", "person_level_mean"]

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


def range_coarse_bins(bound, width):
    """Bins of the pure coarse step: width r over ``[−R − 2r, R + 2r]``."""
    bound, width = float(bound), float(width)
    if not math.isfinite(width):
        raise ValueError(
            f"the coarse step's bin width is {width!r}: moment_bound is too large "
            "for float64 arithmetic. Rescale the data (and its bounds).")
    bins = 2.0 * (bound + 2.0 * width) / width
    if not math.isfinite(bins):
        raise ValueError(
            f"the public bound {bound:.3g} spans more than 1e308 coarse bins of width "
            f"{width:.3g}: declare tighter bounds (in the units of the data).")
    return math.ceil(bins)


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
    >>> from skuserdp.mean._person_level import person_level_mean_1d
    >>> rng = np.random.default_rng(0)
    >>> S = 3.0 + rng.standard_t(5, size=(4000, 20)).mean(axis=1)
    >>> mean, loss, info = person_level_mean_1d(
    ...     S, epsilon=1.0, bound=100.0, moment_order=4, moment_bound=1.3,
    ...     samples_per_user=20, random_state=0)
    >>> round(mean, 1), loss.epsilon
    (3.0, 1.0)
    """
    S = np.asarray(values, dtype=np.float64).ravel()
    n = S.size
    if n < 2:
        raise ValueError("the person-level estimator needs at least 2 users.")
    if not np.isfinite(S).all():
        raise ValueError("values must be finite.")
    epsilon = check_positive_scalar(epsilon, "epsilon")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
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
    if calibration not in ("tight", "paper"):
        raise ValueError(
            f"calibration must be 'tight' or 'paper', got {calibration!r}."
        )
    if calibration == "tight" and not 0 < coarse_fraction < 1:
        raise ValueError(
            f"coarse_fraction must be in (0, 1), got {coarse_fraction!r}."
        )
    plan = plan_person_level_1d(n, epsilon, delta=delta, bound=bound,
                                moment_order=moment_order, moment_bound=M,
                                samples_per_user=m, beta=beta,
                                coarse_fraction=coarse_fraction,
                                calibration=calibration)
    n_c, n_r, r, u = plan["n_coarse"], plan["n_recenter"], plan["width"], plan["u"]
    stage_eps = plan["stage_epsilon"]
    split_seed, coarse_seed, fine_seed, recenter_seed = (
        make_seed_sequence(random_state).spawn(4))
    order = generator_from(split_seed).permutation(n)  # independent of the data
    coarse = S[order[:n_c]]
    recenter = S[order[n_c:n_c + n_r]]
    fine = S[order[n_c + n_r:]]
    if delta == 0:
        lower, upper = private_range(coarse, stage_eps, tau=r, bound=R + 2.0 * r,
                                     bin_width=r, random_state=coarse_seed)
        center = 0.5 * (lower + upper)
        coarse_loss = PureDP(stage_eps)
    else:
        stage_delta = delta / 2.0 if calibration == "paper" else delta
        center, coarse_loss = stability_histogram_argmax(
            coarse, epsilon=stage_eps, delta=stage_delta, width=r,
            random_state=coarse_seed)
        if math.isnan(center):
            warnings.warn(
                "the coarse step released no bucket; the centre falls back to 0 "
                "(a public default). Privacy is unaffected; use more users or a "
                "larger epsilon or delta.", AccuracyWarning, stacklevel=2)
            center = 0.0
    coarse_center, losses = center, [coarse_loss]
    if n_r > 0:
        # Re-centring layer: clip-and-noise around the coarse centre on its
        # own users; its public 95 % error bound replaces u in the final
        # radius.
        c, recenter_loss = clip_noise_mean(recenter[:, None], epsilon=stage_eps,
                                           delta=0.0, radius=plan["recenter_radius"],
                                           center=center, random_state=recenter_seed)
        center = float(c[0])
        losses.append(recenter_loss)
    rho = plan["radius"]
    mean, fine_loss = clip_noise_mean(fine[:, None], epsilon=stage_eps, delta=0.0,
                                      radius=rho, center=center,
                                      random_state=fine_seed)
    losses.append(fine_loss)
    if calibration == "paper":
        loss = compose(coarse_loss, fine_loss)
    else:
        # Disjoint users, split independently of the data (spec §1.7).
        loss = compose_parallel(*losses)
    info = dict(coarse_width=r, coarse_error=u, radius=rho, n_coarse=n_c,
                n_recenter=n_r, n_fine=fine.size, coarse_center=coarse_center,
                recenter_radius=plan["recenter_radius"], center=center)
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
    d = U.shape[1]
    seeds = make_seed_sequence(random_state).spawn(d)
    means, losses = np.empty(d), []
    for j in range(d):
        means[j], loss_j, info = person_level_mean_1d(
            U[:, j], epsilon=epsilon / d, delta=delta / d, bound=bound,
            moment_order=moment_order, moment_bound=moment_bound,
            samples_per_user=samples_per_user, coarse_fraction=coarse_fraction,
            calibration=calibration, random_state=seeds[j])
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
    """(ε, δ)-DP coordinate-wise coarse location (AKMMSU Thm 4.19, spec §2.6).

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
        warnings.warn(
            f"{U.shape[0]} users are too few for the coarse step: a bucket needs "
            f"a noisy count of at least {threshold} to be released at this "
            "per-coordinate budget, so every coordinate falls back to 0 (a public "
            "default). Privacy is unaffected; use more users, a larger epsilon "
            "or delta.", AccuracyWarning, stacklevel=3)
    mids, step_loss = stability_histogram_argmax(U.T, epsilon=eps0, delta=delta0,
                                                 width=width, random_state=random_state)
    failed = np.isnan(mids)
    mids[failed] = 0.0
    if failed.any() and U.shape[0] >= threshold:
        # "No bucket kept" is part of the private output: warning on it is
        # post-processing.
        warnings.warn(
            f"the coarse step released no bucket for {int(failed.sum())} of {d} "
            "coordinates; they fall back to 0 (a public default) and the estimate "
            "may be far off there. Privacy is unaffected; use more users, a larger "
            "epsilon or delta.", AccuracyWarning, stacklevel=3)
    if d == 1:
        loss = step_loss
    elif (eps0, delta0) == basic:
        loss = compose(*([step_loss] * d))
    else:
        loss = compose_homogeneous(step_loss, d, delta / 2.0)
    return mids, loss, int(failed.sum())


def tcn_radii(n_features, *, moment_order, moment_bound, samples_per_user,
              max_layers=64):
    """Clipping radii of the Threaded Clip-and-Noise layers (spec §2.5 OUR CHOICE).

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
                      bound=None, beta=0.1, calibration="tight", random_state=None):
    """(ε, δ)-DP person-level mean in d dimensions (AKMMSU Algorithm 4).

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
    composition, spec §1.7). Paper
    calibration: (ε/2, δ/2) for the coarse step (bucket width ``16M/√m``),
    (ε/4, δ/4) for TCN split over its layers by advanced composition
    (computed exactly, not the paper's √6 form, spec §1.4), (ε/4, δ/4) for
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
        k ≥ 2.
    moment_bound : float, default=1.0
        M: every direction's k-th central moment is at most ``M^k``.
    samples_per_user : int
        m.
    n_threads : "auto" or int, default="auto"
        Number of TCN layers T: ``"auto"`` from :func:`tcn_radii`; an int
        caps it (the last layer always uses the floor radius).
    bound : float, default=None
        Public R with ``‖μ‖_∞ ≤ R`` (tight calibration only). When given, the
        coarse step is Algorithm 1 on every coordinate over ``[−R, R]``
        (:func:`~skuserdp.mechanisms.private_range`, pure ε₀ per coordinate,
        composed to (ε, δ)), which needs ``16 ln(l·d/β)/(3ε₀)`` users
        instead of three times the stability histogram's threshold.
    beta : float, default=0.1
        Failure probability behind the bounded coarse step's group size.
    calibration : {"tight", "paper"}, default="tight"
        See above.
    random_state : int, RandomState, SeedSequence or None, default=None

    Returns
    -------
    mean : ndarray of shape (n_features,)
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
    >>> from skuserdp.mean._person_level import person_level_mean
    >>> rng = np.random.default_rng(0)
    >>> U = 5.0 + rng.standard_t(5, size=(6000, 10, 8)).mean(axis=1)
    >>> mean, loss, info = person_level_mean(U, epsilon=1.0, delta=1e-6,
    ...                                      moment_order=4, moment_bound=1.5,
    ...                                      samples_per_user=10, random_state=0)
    >>> bool(np.linalg.norm(mean - 5.0) < 0.5), len(info["radii"])
    (True, 2)
    """
    U = np.asarray(user_means, dtype=np.float64)
    if U.ndim != 2:
        raise ValueError(f"user_means must be 2-d, got shape {U.shape}.")
    n, d = U.shape
    if n < 3:
        raise ValueError("Algorithm 4 needs at least 3 users.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    k, M, m = float(moment_order), float(moment_bound), int(samples_per_user)
    paper = calibration == "paper"
    if calibration not in ("tight", "paper"):
        raise ValueError(
            f"calibration must be 'tight' or 'paper', got {calibration!r}."
        )
    seeds = make_seed_sequence(random_state).spawn(5)
    order = generator_from(seeds[0]).permutation(n)  # independent of the data
    third = n // 3
    radii = tcn_radii(d, moment_order=k, moment_bound=M, samples_per_user=m)
    if n_threads != "auto":
        radii = radii[:min(max(int(n_threads), 1), len(radii)) - 1] + radii[-1:]
    if paper:
        n_c, n_tau, n_t = third, 0, third
        refine = False
    else:
        # Public group sizes: functions of (n, d, ε, δ, R) only.
        if bound is None:
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
    Y = U[order[:n_c]]
    T = U[order[n_c:n_c + n_tau]]
    P = U[order[n_c + n_tau:n_c + n_tau + n_t]]
    V = U[order[n_c + n_tau + n_t:]]
    coarse_budget = (epsilon / 2, delta / 2) if paper else (epsilon, delta)
    if bound is not None and not paper:
        center, coarse_loss = _bounded_coarse(Y, epsilon, delta, bound, M, m,
                                              random_state=seeds[1])
        n_failed = 0
    else:
        center, coarse_loss, n_failed = coarse_estimate(
            Y, epsilon=coarse_budget[0], delta=coarse_budget[1], moment_bound=M,
            samples_per_user=m, width_factor=16.0 if paper else 4.0,
            random_state=seeds[1])
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
    blocks = np.array_split(np.arange(P.shape[0]), L)
    layer_seeds = seeds[2].spawn(L)
    layer_losses = []
    centers = [center]
    center_error = None
    for i, (rows, seed) in enumerate(zip(blocks, layer_seeds)):
        rho = radii[i] if i < len(radii) else center_error + spread
        if i >= len(radii):
            radii = radii + [rho]
        center, layer_zcdp = clip_noise_mean(P[rows], epsilon=layer_budget[0],
                                             delta=layer_budget[1], radius=rho,
                                             center=center, random_state=seed)
        layer_losses.append(zcdp_to_approx_dp(layer_zcdp.rho, layer_budget[1]))
        centers.append(center)
        # Public bound on this layer's noise (Gaussian of per-coordinate sd
        # ≈ (2ρ/n_l)/√(2ρ_zCDP), norm ≤ sd(√d + √(2 ln 20)) w.p. 0.95).
        noise_sd = 2.0 * rho / len(rows) / math.sqrt(2.0 * layer_zcdp.rho)
        center_error = noise_sd * (math.sqrt(d) + math.sqrt(2.0 * math.log(20.0)))
    final_eps, final_delta = (epsilon / 4, delta / 4) if paper else (epsilon, delta)
    balance = (M * (V.shape[0] * final_eps) ** (1 / k) * d ** (0.5 - 1 / k)
               / (math.log(1 / final_delta) ** (1 / (2 * k)) * m ** (1 - 1 / k)))
    # Paper: ρ* ≥ M√(d/m). Tight: M√(d max(1, ln m)/m) (the scale of
    # Cor 4.13's t₁) plus the public noise bound of the TCN centre; the
    # spec's suggestion ρ_T (≥ 12M√(d/m), sized for the *coarse* centre's
    # error) was measured 4-5× less accurate with many users.
    floor = M * math.sqrt(d * (1.0 if paper else max(1.0, math.log(m))) / m)
    spread_radius = max(floor, balance)
    tau = None
    tau_loss = []
    if n_tau > 0:
        # Private spread (pair distances of the τ group, ε-DP, its own
        # users): the final radius is the smaller of the public ρ* and τ̂.
        tau = private_tau(T, epsilon, value_range=spread_radius, gamma=TAU_GAMMA,
                          rng=generator_from(seeds[4]))
        spread_radius = min(spread_radius, tau)
        tau_loss = [PureDP(epsilon)]
    final_radius = spread_radius + (0.0 if paper else center_error)
    mean, loss = clip_noise_mean(V, epsilon=final_eps, delta=final_delta,
                                 radius=final_radius, center=center,
                                 random_state=seeds[3])
    final_loss = zcdp_to_approx_dp(loss.rho, final_delta)
    if paper:
        tcn_loss = (layer_losses[0] if L == 1
                    else compose_homogeneous(max(layer_losses, key=lambda x: x.epsilon),
                                             L, delta / 8))
        total = compose(coarse_loss, tcn_loss, final_loss)
    else:
        total = compose_parallel(coarse_loss, *tau_loss, *layer_losses, final_loss)
    info = dict(radii=radii, final_radius=final_radius, n_coarse=Y.shape[0],
                n_tau=T.shape[0], n_tcn=P.shape[0], n_final=V.shape[0],
                coarse_failed=n_failed, centers=centers, tau=tau)
    return mean, total, info
