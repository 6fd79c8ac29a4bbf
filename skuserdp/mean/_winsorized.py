"""WinsorizedMean (Levy et al., Algorithms 1 and 2; Theorems 1, 2 and 10).

Implements §3 and Appendix D of "Learning with User-Level Privacy" [LSA+21]_,
spec ``levy2021_user_level_learning.md`` §3.2–3.6, §6 and §9.

Algorithm (replace-one user neighbours, n users public). Each user u is
reduced to one vector ``x_u`` (the mean of its rows), clipped to the public
box ``[-bound, bound]^d`` (a per-user step: no privacy cost).

1. d > 1: draw random signs ``D`` (independent of the data), zero-pad to
   ``d′ = 2^⌈log₂ d⌉`` and rotate ``y_u = H D x_u / √d′`` with the fast
   Walsh–Hadamard transform (:class:`~skuserdp.mechanisms.RandomHadamardRotation`).
   Every rotated coordinate lies in ``[-R, R]`` with ``R = ‖bound‖₂`` and, if
   the users are within ``τ`` of a point in ℓ2, within ``τ′`` of the rotated
   point with high probability (Lemma 2). For d = 1 there is no rotation and
   ``τ′ = τ`` (Algorithm 1).
2. Each of the d′ coordinates independently: PrivateRange (Algorithm 6,
   :func:`~skuserdp.mechanisms.private_range`) picks a bin midpoint ``t_j``
   with the exponential mechanism at ``ε_r``; every ``y_uj`` is clipped to
   ``[t_j − h, t_j + h]`` with ``h = 2τ′ + w/2`` (``w`` the bin width).
3. The clipped values, centred at ``t_j``, are rounded to a power-of-two
   lattice and summed exactly; integer noise is added once per coordinate:
   discrete Laplace (pure ε-DP) or discrete Gaussian (zCDP).
4. ``ȳ_j = t_j + (sum_j + noise_j)/n``; ``x̄ = Dᵀ Hᵀ ȳ/√d′`` (first d
   coordinates), clipped to the public box (post-processing; the mean of box
   data lies in the box).

Every quantity that reaches a mechanism — d′, τ′, w, h, the number of bins,
the budget split, the grid — is a function of public values only
(n, d, bound, τ, γ, ε, δ), computed in :func:`plan_winsorized_mean` before the
data are touched. All privacy arithmetic is delegated to
:mod:`skuserdp.privacy`.

Privacy proof sketch (both calibrations). For a *fixed* rotation, replacing
one user changes one value in each coordinate's PrivateRange instance (score
sensitivity 1, so ε_r-DP and ε_r-bounded-range, i.e. ε_r²/8-zCDP [CR21]_), and
changes each clipped sum by at most ``2h`` — after lattice rounding at most
``2(h/g + ½)`` grid units. So the vector of the d′ sums has ℓ1 sensitivity
``2R∞`` per coordinate and ℓ2 sensitivity ``2R∞√d′`` with ``R∞ = h/g + ½``.
The rotation is drawn independently of the data, so the guarantee for every
fixed ``D`` holds for the mixture. The window ``t_j ± h`` is itself a private
output, and adaptive composition covers its use.

* ``calibration="paper"``: the paper's constants. ``w = 2τ′`` and
  ``τ′ = min(τ, 10τ√(log(d′n/γ)/d′))`` (Lemma 2); each coordinate spends ε′
  split equally between PrivateRange and Laplace noise; for δ > 0 and d′ > 1,
  ``ε′ = ε/√(8d′ ln(1/δ))`` and the d′ coordinates compose by advanced
  composition (Theorem 2). Corrections, each documented in
  :func:`skuserdp.privacy.advanced_composition_step` or here: the window is
  ``± 3τ′`` (the printed ``± 2τ′`` can clip a concentrated value, spec [E3]);
  the composed ε is computed numerically — the better of basic and advanced
  composition — and an ε′ that would exceed the target is replaced by the
  exact split (spec [E6]); δ = 0 with d′ > 1 (not covered by the paper) uses
  basic composition, ``ε′ = ε/d′``.
* ``calibration="tight"`` (default): the rotation bound is Hoeffding's
  ``τ′ = min(τ, τ√(2 ln(2d′n/γ_rot)/d′))`` (each rotated coordinate of a
  vector z is a Rademacher sum with variance proxy ``‖z‖²/d′``, so a union
  bound over n·d′ entries gives failure ``γ_rot = γ/2``), the bins are
  narrower (``w = τ′/2``, so ``h = 2.25τ′`` instead of ``3τ′``), and the
  PrivateRange budget is only what its accuracy needs: ``ε_r =
  4 ln(l d′/γ_r)/n`` makes every coordinate miss the bulk with probability at
  most ``γ_r/d′`` (``γ_r = γ/2``), capped at 90% of the budget; a plan
  whose PrivateRange would need more is *unreliable* (its failure bound
  ``d′·l·exp(−ε_r n/4)`` exceeds γ/2) and is not chosen. The rest goes to
  noise, by whichever reliable route gives the smaller noise variance:

  - pure (always when δ = 0): discrete Laplace at ``ε/d′ − ε_r`` per
    coordinate; basic composition gives ε;
  - zCDP (δ > 0): ``ρ = zcdp_rho_for(ε, δ)`` (the largest ρ whose optimal
    conversion [CKS20]_ meets (ε, δ)); PrivateRange costs ``d′ε_r²/8``; one
    discrete Gaussian on the d′-vector of sums with ℓ2 sensitivity ``2R∞√d′``
    uses the remainder. zCDP composition is additive;
  - box (pure or zCDP; not in the paper): Algorithm 1 with a single bin
    — no rotation, no PrivateRange; the per-user vectors, which lie in the
    ℓ2 ball of radius R, are clipped to it (ℓ2, or the ℓ1 ball of radius
    ``R√d`` that contains it, for Laplace), summed on a lattice and released
    with one noise vector calibrated to the sum's replace-one sensitivity
    (as :func:`~skuserdp.mean.clip_noise_mean`). It is always reliable and
    wins when τ is not much smaller than R or there are too few users for
    the range step (spec §6.4: ``n ≳ (8/ε) log(B/τ)`` per coordinate).

  The choice depends on public values only (n, d, R, τ, γ, ε, δ), so it is
  part of the public plan; it never looks at the data.

The reported spend (``privacy_loss_``) is the composed loss actually
incurred, never more than the target.
"""

import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from ..mechanisms import (
    DiscreteGaussianNoise,
    RandomHadamardRotation,
    add_noise,
    calibrate_discrete_laplace,
    choose_grid,
    encode_contributions,
    exact_sum,
    padded_dimension,
    private_range_window,
    round_up_fraction,
)
from ..mechanisms._private_range import MAX_BINS, sample_bins
from ..privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    advanced_composition_step,
    bounded_range_epsilon,
    compose,
    compose_homogeneous,
    gaussian_sigma_for_rho,
    lattice_contribution_radius,
    linf_ball_l2_radius,
    pure_to_zcdp,
    replace_one_sum_sensitivity,
    zcdp_remaining,
    zcdp_rho_for,
)
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_positive_scalar

__all__ = ["WinsorizedPlan", "plan_winsorized_mean", "winsorized_mean_from_plan"]

# Coordinates handled by one task (and one random stream) of PrivateRange and
# clipping; fixed, so results do not depend on n_jobs.
COORD_CHUNK = 256
# Tight mode: bin width in units of τ′ (window h = 2τ′ + w/2 = 2.25τ′).
TIGHT_BIN_WIDTH = 0.5
# Tight mode: PrivateRange never takes more than this share of the budget; a
# plan whose PrivateRange would need more is unreliable and not chosen.
MAX_RANGE_SHARE = 0.9


@dataclass(frozen=True)
class WinsorizedPlan:
    """Every public quantity of one WinsorizedMean release.

    Computed by :func:`plan_winsorized_mean` from public values only; two
    datasets of the same public shape get the same plan.

    Parameters
    ----------
    n_users, n_features, n_padded : int
        n, d and d′ (d′ = 1 when d = 1: no rotation).
    value_range : float
        ``R``: every (rotated) coordinate lies in ``[-R, R]``.
    tau, tau_coord : float
        τ (ℓ2, user means) and τ′ (per rotated coordinate).
    bin_width, halfwidth : float
        Bin width ``w`` and clipping half-width ``h = 2τ′ + w/2``.
    n_bins : int
        Number of PrivateRange bins per coordinate.
    range_epsilon : float
        ε of each coordinate's PrivateRange.
    grid : float
        Lattice step of the clipped sums.
    noise : DiscreteLaplaceNoise or DiscreteGaussianNoise
        Noise of the integer sums (grid units).
    route : {"pure", "zcdp", "paper", "box-pure", "box-zcdp"}
        Which accounting produced the plan; the ``"box-*"`` routes skip the
        range step (see :func:`plan_winsorized_mean`).
    loss : PureDP, ApproxDP or ZCDP
        The privacy loss of the release.

    Examples
    --------
    >>> from skuserdp.mean import plan_winsorized_mean
    >>> from skuserdp.privacy import PureDP
    >>> plan = plan_winsorized_mean(500, 1, tau=0.5, value_range=4.0,
    ...                             budget=PureDP(1.0))
    >>> plan.n_bins, plan.halfwidth, plan.loss.epsilon <= 1.0
    (32, 1.125, True)
    """

    n_users: int
    n_features: int
    n_padded: int
    value_range: float
    tau: float
    tau_coord: float
    bin_width: float
    halfwidth: float
    n_bins: int
    range_epsilon: float
    grid: float
    noise: object
    route: str
    loss: object

    @property
    def noise_variance(self):
        """Variance of the noise of one (rotated) coordinate of the mean."""
        sd = self.noise.std * self.grid / self.n_users
        try:
            return sd ** 2
        except OverflowError:  # radii near the float64 limit
            return math.inf

    @property
    def range_failure_bound(self):
        """Bound on the probability that some PrivateRange misses the bulk.

        ``d′·l·exp(−ε_r n/4)`` (union over the d′ coordinates; ``l`` bins),
        for users within ``τ′`` of a point in every rotated coordinate; 0
        when there is no range step or a single bin.
        """
        if self.route.startswith("box") or self.n_bins == 1:
            return 0.0
        log_bound = (math.log(self.n_padded * self.n_bins)
                     - self.range_epsilon * self.n_users / 4.0)
        return math.exp(min(0.0, log_bound))


def _coordinate_scale(tau, n_users, n_padded, gamma, calibration):
    if n_padded == 1:
        return tau
    if calibration == "paper":
        factor = 10.0 * math.sqrt(math.log(n_padded * n_users / gamma) / n_padded)
    else:
        factor = math.sqrt(2.0 * math.log(4.0 * n_padded * n_users / gamma) / n_padded)
    return tau * min(1.0, factor)


def _layout(tau_coord, value_range, calibration):
    w = (2.0 if calibration == "paper" else TIGHT_BIN_WIDTH) * tau_coord
    # Never more bins than float64 can index (spec §6.4): widen the bins.
    w = max(w, 2.0 * value_range / MAX_BINS * (1 + 1e-9))
    n_bins = max(1, math.ceil(2.0 * value_range / w))
    return w, private_range_window(tau_coord, w), n_bins


def _needed_range_epsilon(n_bins, n_users, n_padded, gamma):
    # l·exp(-ε_r n/4) <= γ_r/d′ with γ_r = γ/2 (module docstring).
    return 4.0 * math.log(2.0 * n_bins * n_padded / gamma) / n_users


def _pure_plan(eps_coord, eps_r, base, calibration):
    n, d_pad = base["n_users"], base["n_padded"]
    grid = choose_grid(base["halfwidth"], d_pad, n, "linf")
    r_units = lattice_contribution_radius(base["halfwidth"] / grid, d_pad, "linf")
    noise = calibrate_discrete_laplace(
        replace_one_sum_sensitivity(r_units), eps_coord - eps_r
    )
    sens = replace_one_sum_sensitivity(r_units)
    per_coord = compose(PureDP(eps_r), noise.privacy(sens))
    return dict(base, grid=grid, noise=noise, range_epsilon=eps_r,
                route="pure" if calibration == "tight" else "paper",
                per_coord=per_coord)


def _zcdp_plan(rho, base):
    n, d_pad, l = base["n_users"], base["n_padded"], base["n_bins"]
    if l == 1:
        eps_r = 0.0
    else:
        eps_r = min(
            _needed_range_epsilon(l, n, d_pad, base["gamma"]),
            bounded_range_epsilon(MAX_RANGE_SHARE * rho / d_pad),
        )
    rho_range = ZCDP(d_pad * pure_to_zcdp(eps_r, bounded_range=True).rho)
    rho_noise = zcdp_remaining(rho, rho_range)
    grid = choose_grid(base["halfwidth"], d_pad, n, "linf")
    r_units = lattice_contribution_radius(base["halfwidth"] / grid, d_pad, "linf")
    sens = replace_one_sum_sensitivity(linf_ball_l2_radius(r_units, d_pad))
    sigma = gaussian_sigma_for_rho(sens, rho_noise.rho)
    noise = DiscreteGaussianNoise(round_up_fraction(sigma * sigma * (1 + 1e-12)))
    loss = compose(rho_range, noise.privacy(sens))
    return dict(base, grid=grid, noise=noise, range_epsilon=eps_r, route="zcdp",
                loss=loss)


def _box_plan(budget, base):
    """No range step: clip-and-noise on the public ℓ2 ball of radius R."""
    n, d, R = base["n_users"], base["n_features"], base["value_range"]
    if isinstance(budget, ZCDP):
        norm, ball = "l2", R
    else:
        norm, ball = "l1", R * math.sqrt(d)  # contains the ℓ2 ball
    grid = choose_grid(ball, d, n, norm)
    sens = replace_one_sum_sensitivity(
        lattice_contribution_radius(ball / grid, d, norm))
    if isinstance(budget, ZCDP):
        sigma = gaussian_sigma_for_rho(sens, budget.rho)
        noise = DiscreteGaussianNoise(round_up_fraction(sigma * sigma * (1 + 1e-12)))
    else:
        noise = calibrate_discrete_laplace(sens, budget.epsilon)
    return dict(base, n_padded=d, tau_coord=R, bin_width=2.0 * R, halfwidth=ball,
                n_bins=1, range_epsilon=0.0, grid=grid, noise=noise,
                route="box-zcdp" if isinstance(budget, ZCDP) else "box-pure",
                loss=noise.privacy(sens))


def plan_winsorized_mean(n_users, n_features, *, tau, value_range, budget,
                         gamma=0.01, calibration="tight", allow_box=True):
    """Plan a WinsorizedMean release from public quantities only.

    With ``calibration="tight"`` the plan is the one of least noise variance
    among the *reliable* candidates: the range step's failure bound
    (:attr:`WinsorizedPlan.range_failure_bound`) is at most γ/2. Candidates
    are the pure and zCDP routes of Algorithms 1–2 and, if ``allow_box``,
    the *box* routes: no range step, clip-and-noise of the per-user vectors
    on the public ball of radius ``value_range`` (Algorithm 1 with a single
    bin). The box wins when τ is not much smaller than the public range or
    there are too few users for the range step to succeed (spec §6.4); it is
    always reliable. ``calibration="paper"`` is the paper's plan, whatever
    its failure bound.

    Parameters
    ----------
    n_users : int
        Number of users n (public under replace-one), ``>= 1``.
    n_features : int
        Dimension d, ``>= 1``.
    tau : float
        Public ℓ2 concentration radius of the per-user vectors, ``> 0``.
    value_range : float
        Public bound R on the ℓ2 norm of every per-user vector (``‖bound‖₂``
        for the box ``[-bound, bound]^d``), ``> 0``.
    budget : PureDP, ApproxDP or ZCDP
        Privacy budget of the release. ``ZCDP`` needs
        ``calibration="tight"``.
    gamma : float, default=0.01
        Failure probability of the utility guarantee (utility only).
    calibration : {"tight", "paper"}, default="tight"
        Constants and accounting, see the module docstring.
    allow_box : bool, default=True
        Whether the tight plan may skip the range step (see above). With
        ``False`` and no reliable candidate the least unreliable plan is
        returned.

    Returns
    -------
    plan : WinsorizedPlan
        The release's public parameters; ``plan.loss`` never exceeds the
        budget.

    Examples
    --------
    >>> from skuserdp.mean import plan_winsorized_mean
    >>> from skuserdp.privacy import ApproxDP
    >>> plan = plan_winsorized_mean(100_000, 100, tau=0.1, value_range=10.0,
    ...                             budget=ApproxDP(1.0, 1e-6))
    >>> plan.n_padded, plan.route, round(plan.range_failure_bound, 9)
    (128, 'zcdp', 0.005)

    With 1000 users the range step cannot find 128 coordinates reliably:

    >>> plan_winsorized_mean(1000, 100, tau=0.1, value_range=10.0,
    ...                      budget=ApproxDP(1.0, 1e-6)).route
    'box-zcdp'
    """
    n_users, n_features = int(n_users), int(n_features)
    if n_users < 1 or n_features < 1:
        raise ValueError("n_users and n_features must be >= 1.")
    if calibration not in ("tight", "paper"):
        raise ValueError(
            f"calibration must be 'tight' or 'paper', got {calibration!r}."
        )
    if not 0 < gamma < 1:
        raise ValueError(f"gamma must be in (0, 1), got {gamma!r}.")
    tau = check_positive_scalar(tau, "tau")
    value_range = check_positive_scalar(value_range, "value_range")
    d_pad = 1 if n_features == 1 else padded_dimension(n_features)
    tau_coord = _coordinate_scale(tau, n_users, d_pad, gamma, calibration)
    w, h, n_bins = _layout(tau_coord, value_range, calibration)
    if not (math.isfinite(w) and math.isfinite(h)):
        raise ValueError(
            f"tau={tau:.3g} is too large: the release window (a few times tau per "
            "coordinate) exceeds the float64 range (about 1.8e308). Use a smaller "
            "tau.")
    base = dict(n_users=n_users, n_features=n_features, n_padded=d_pad,
                value_range=value_range, tau=tau, tau_coord=tau_coord,
                bin_width=w, halfwidth=h, n_bins=n_bins, gamma=gamma)

    def pure(eps_total):
        eps_coord = eps_total / d_pad
        if calibration == "paper":
            eps_r = eps_coord / 2.0
        elif n_bins == 1:
            eps_r = 0.0
        else:
            eps_r = min(_needed_range_epsilon(n_bins, n_users, d_pad, gamma),
                        MAX_RANGE_SHARE * eps_coord)
        p = _pure_plan(eps_coord, eps_r, base, calibration)
        p["loss"] = compose(*([p.pop("per_coord")] * d_pad))
        return p

    if isinstance(budget, ApproxDP) and budget.delta == 0:
        budget = PureDP(budget.epsilon)
    if isinstance(budget, ZCDP):
        if calibration == "paper":
            raise ValueError("a zCDP budget needs calibration='tight'.")
        candidates = [_zcdp_plan(budget.rho, base)]
        if allow_box:
            candidates.append(_box_plan(budget, base))
    elif isinstance(budget, PureDP):
        candidates = [pure(budget.epsilon)]
        if calibration == "tight" and allow_box:
            candidates.append(_box_plan(budget, base))
    elif isinstance(budget, ApproxDP):
        if calibration == "paper":
            if d_pad == 1:
                candidates = [pure(budget.epsilon)]
            else:
                eps_c = advanced_composition_step(budget.epsilon, budget.delta, d_pad,
                                                  rule="paper")
                p = _pure_plan(eps_c, eps_c / 2.0, base, "paper")
                p["loss"] = compose_homogeneous(p.pop("per_coord"), d_pad, budget.delta)
                candidates = [p]
        else:
            rho = ZCDP(zcdp_rho_for(budget.epsilon, budget.delta))
            candidates = [pure(budget.epsilon), _zcdp_plan(rho.rho, base)]
            if allow_box:
                candidates += [_box_plan(PureDP(budget.epsilon), base),
                               _box_plan(rho, base)]
    else:
        raise TypeError("budget must be a PureDP, ApproxDP or ZCDP loss.")
    plans = [WinsorizedPlan(**{k: c[k] for k in WinsorizedPlan.__dataclass_fields__})
             for c in candidates]
    if calibration == "paper":
        return plans[0]
    # Tight: the reliable plan (range step fails with probability <= γ/2) of
    # least noise; the box plans are always reliable.
    reliable = [p for p in plans if p.range_failure_bound <= gamma / 2.0 * (1 + 1e-9)]
    if not reliable:
        return min(plans, key=lambda p: (p.range_failure_bound, p.noise_variance))
    return min(reliable, key=lambda p: p.noise_variance)


def _winsorize_chunk(Yt, plan, range_seed):
    """PrivateRange, clipping and exact sums for a block of coordinates."""
    rng = generator_from(range_seed)
    eps = np.full(Yt.shape[0], plan.range_epsilon)
    bins, _ = sample_bins(Yt, eps, plan.value_range, plan.bin_width, rng)
    mids = -plan.value_range + (bins + 0.5) * plan.bin_width
    K = encode_contributions(Yt.T, center=mids, radius=plan.halfwidth,
                             grid=plan.grid, norm="linf")
    return mids, exact_sum(K)


def winsorized_mean_from_plan(vectors, plan, *, random_state=None, n_jobs=None):
    """Run a planned WinsorizedMean release on per-user vectors.

    Parameters
    ----------
    vectors : ndarray of shape (n_users, n_features)
        One vector per user, each of ℓ2 norm at most ``plan.value_range``
        (callers clip to their public domain first; a larger norm only
        changes which bin it falls in, never the privacy). Not modified.
    plan : WinsorizedPlan
        From :func:`plan_winsorized_mean` with matching ``n_users`` and
        ``n_features``.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the rotation, PrivateRange and noise randomness.
    n_jobs : int, default=None
        Threads for blocks of coordinates; results do not depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean (not yet projected onto any domain).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import plan_winsorized_mean, winsorized_mean_from_plan
    >>> from skuserdp.privacy import PureDP
    >>> V = np.full((5000, 2), 0.25)
    >>> plan = plan_winsorized_mean(5000, 2, tau=0.01, value_range=1.0,
    ...                             budget=PureDP(1.0))
    >>> winsorized_mean_from_plan(V, plan, random_state=0).round(2)
    array([0.25, 0.25])
    """
    V = np.asarray(vectors, dtype=np.float64)
    if V.shape != (plan.n_users, plan.n_features):
        raise ValueError(
            f"vectors must have shape ({plan.n_users}, {plan.n_features}) to match "
            f"the plan, got {V.shape}."
        )
    if not np.isfinite(V).all():
        raise ValueError("vectors must be finite.")
    rot_seed, range_seed, noise_seed = make_seed_sequence(random_state).spawn(3)
    d, d_pad, n = plan.n_features, plan.n_padded, plan.n_users
    if plan.route.startswith("box"):
        norm = "l2" if plan.route == "box-zcdp" else "l1"
        K = encode_contributions(V, center=np.zeros(d), radius=plan.halfwidth,
                                 grid=plan.grid, norm=norm)
        noisy = add_noise(exact_sum(K), plan.noise, noise_seed, n_jobs=n_jobs)
        return plan.grid * (noisy.astype(np.float64) / n)
    rotation = None
    if d_pad > 1:
        rotation = RandomHadamardRotation(d, rot_seed)
        Yt = np.zeros((d_pad, n))
        Yt[:d] = V.T
        rotation.rotate_columns(Yt, inplace=True)
    else:
        Yt = np.ascontiguousarray(V.T)
    bounds = list(range(0, d_pad, COORD_CHUNK)) + [d_pad]
    seeds = range_seed.spawn(len(bounds) - 1)
    blocks = [(a, b, s) for a, b, s in zip(bounds[:-1], bounds[1:], seeds)]
    if len(blocks) == 1 or n_jobs in (None, 1):
        parts = [_winsorize_chunk(Yt[a:b], plan, s) for a, b, s in blocks]
    else:
        parts = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_winsorize_chunk)(Yt[a:b], plan, s) for a, b, s in blocks
        )
    mids = np.concatenate([p[0] for p in parts])
    sums = np.concatenate([p[1] for p in parts])
    noisy = add_noise(sums, plan.noise, noise_seed, n_jobs=n_jobs)
    est = mids + plan.grid * (noisy.astype(np.float64) / n)
    if rotation is None:
        return est
    return rotation.unrotate_columns(est, inplace=True)[:d].copy()
