"""WinsorizedMean family (Levy et al., Algorithms 1 and 2; Theorems 1, 2 and 10).

One module per algorithm family; its layers, in order:

1. Plan and apply: the release of one winsorized mean.
2. The function, adaptive queries and the estimator.

Plan and apply: the release of one winsorized mean
--------------------------------------------------

WinsorizedMean (Levy et al., Algorithms 1 and 2; Theorems 1, 2 and 10).

Implements §3 and Appendix D of "Learning with User-Level Privacy" [LSA+21]_,
docs: :ref:`papers-levy`, :ref:`papers-levy-deviations`.

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
  ``± 3τ′`` (the printed ``± 2τ′`` can clip a
  concentrated value, :ref:`papers-levy-range`);
  the composed ε is computed numerically — the better of basic and advanced
  composition — and an ε′ that would exceed the target is replaced by the
  exact split (:ref:`papers-levy-composition`);
  δ = 0 with d′ > 1 (not covered by the paper) uses
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
    the range step (:ref:`papers-levy-tight`: ``n ≳ (8/ε) log(B/τ)`` per coordinate).

  The choice depends on public values only (n, d, R, τ, γ, ε, δ), so it is
  part of the public plan; it never looks at the data.

The reported spend (``privacy_loss_``) is the composed loss actually
incurred, never more than the target.

The function, adaptive queries and the estimator
------------------------------------------------

WinsorizedMeanEstimator and adaptive queries (Levy et al., Alg. 1–2, Thm 10).

Levy et al., "Learning with User-Level Privacy" [LSA+21]_, §3 (Algorithms 1
and 2, Theorems 1 and 2, Corollaries 1 and 5) and Appendix D.6 (Theorem 10);
docs: :ref:`papers-levy`. The algorithm, its
two calibrations and the privacy proof sketch are in
:mod:`skuserdp.mean._winsorized`; the rules for τ in
:mod:`skuserdp.mean._concentration`. This module resolves τ, splits the
budget, and wraps the core as a function, an estimator and a query engine.
"""


import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..base import BOUNDS_CONSTRAINTS, WEIGHT_CONSTRAINTS
from ..exceptions import AccuracyWarning
from ..mechanisms import (
    RandomHadamardRotation,
    add_noise,
    calibrate_noise,
    choose_grid,
    lattice_sensitivity,
    padded_dimension,
    private_range_window,
)
from ..mechanisms._additive import _mean_noise_variance
from ..mechanisms._lattice import _shift_and_clip, encode_sum
from ..mechanisms._private_range import MAX_BINS, sample_bins
from ..privacy import (
    ApproxDP,
    PureDP,
    ZCDP,
    adaptive_query_budget,
    advanced_composition_step,
    bounded_range_epsilon,
    compose,
    compose_adaptive_queries,
    compose_homogeneous,
    pure_to_zcdp,
    split_off,
    zcdp_remaining,
    zcdp_rho_for,
)
from ..utils._docstrings import fill_doc
from ..utils._numeric import all_finite, stable_norm
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import (
    _as_2d_float,
    _check_plan_shape,
    check_bound,
    check_positive_scalar,
)
from ..utils._warnings import warn_at_caller
from ._base import UserLevelMeanEstimator
from ._concentration import (
    private_tau,
    private_tau_feasible,
    tau_bounded_rows,
    tau_grid,
    tau_sub_gaussian,
)

__all__ = [
    "WinsorizedPlan",
    "plan_winsorized_mean",
    "winsorized_mean_from_plan",
    "winsorized_mean",
    "answer_adaptive_queries",
    "WinsorizedMeanEstimator",
]


# ============================================================================
# Layer: Plan and apply: the release of one winsorized mean
# (formerly skuserdp.mean._winsorized)
# ============================================================================

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
        return _mean_noise_variance(self.noise, self.grid, self.n_users)

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
    # Never more bins than float64 can index (MAX_BINS): widen the bins.
    w = max(w, 2.0 * value_range / MAX_BINS * (1 + 1e-9))
    n_bins = max(1, math.ceil(2.0 * value_range / w))
    return w, private_range_window(tau_coord, w), n_bins


def _needed_range_epsilon(n_bins, n_users, n_padded, gamma):
    # l·exp(-ε_r n/4) <= γ_r/d′ with γ_r = γ/2 (module docstring).
    return 4.0 * math.log(2.0 * n_bins * n_padded / gamma) / n_users


def _pure_plan(eps_coord, eps_r, base, calibration):
    n, d_pad = base["n_users"], base["n_padded"]
    grid = choose_grid(base["halfwidth"], d_pad, n, "linf")
    sens = lattice_sensitivity(base["halfwidth"], grid, d_pad, "linf")
    noise = calibrate_noise(PureDP(eps_coord - eps_r), sens)
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
    sens = lattice_sensitivity(base["halfwidth"], grid, d_pad, "linf",
                               sensitivity_norm="l2")
    noise = calibrate_noise(rho_noise, sens)
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
    sens = lattice_sensitivity(ball, grid, d, norm)
    noise = calibrate_noise(budget, sens)
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
    there are too few users for the range step
    to succeed (:ref:`papers-levy-tight`); it is
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
    return mids, encode_sum(Yt.T, center=mids, radius=plan.halfwidth,
                            grid=plan.grid, norm="linf")


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
    _check_plan_shape("vectors", V, plan)
    return _from_plan(V, plan, random_state, n_jobs)


#: rows per block when the vectors are shifted and clipped on the fly
_BLOCK_ROWS = 2048


def _has_nan(V):
    """Whether ``V`` holds a NaN, without a table-sized mask when its sum is
    not NaN (then none is)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if not np.isnan(np.sum(V)):
            return False
    return bool(np.isnan(V).any())


def _from_plan(V, plan, random_state, n_jobs, shift=None, box=None):
    """:func:`winsorized_mean_from_plan` of ``V``, or, with a public ``shift``
    and ``box``, of ``clip(V - shift, -box, box)`` computed block by block
    (the same values, without a shifted and clipped copy of the table)."""
    moved = shift is not None
    # clip(V - shift) is finite exactly where V is not NaN
    if (_has_nan(V) if moved else not all_finite(V)):
        raise ValueError("vectors must be finite.")
    rot_seed, range_seed, noise_seed = make_seed_sequence(random_state).spawn(3)
    d, d_pad, n = plan.n_features, plan.n_padded, plan.n_users
    if plan.route.startswith("box"):
        norm = "l2" if plan.route == "box-zcdp" else "l1"
        total = encode_sum(V, center=np.zeros(d), radius=plan.halfwidth,
                           grid=plan.grid, norm=norm, shift=shift, box=box)
        noisy = add_noise(total, plan.noise, noise_seed, n_jobs=n_jobs)
        return plan.grid * (noisy.astype(np.float64) / n)
    rotation = None
    if d_pad > 1:
        rotation = RandomHadamardRotation(d, rot_seed)
        Yt = np.zeros((d_pad, n))
        if moved:
            buffer = np.empty((min(n, _BLOCK_ROWS), d))
            for start in range(0, n, _BLOCK_ROWS):
                rows = slice(start, start + _BLOCK_ROWS)
                Yt[:d, rows] = _shift_and_clip(V[rows], shift, box,
                                               buffer[:V[rows].shape[0]]).T
        else:
            Yt[:d] = V.T
        rotation.rotate_columns(Yt, inplace=True)
    elif moved:
        Yt = np.ascontiguousarray(_shift_and_clip(V, shift, box, np.empty_like(V)).T)
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


# ============================================================================
# Layer: The function, adaptive queries and the estimator
# (formerly skuserdp.mean._winsorized)
# ============================================================================

TAU_RULES = ("auto", "bounded", "sub_gaussian")


def _value_range(b):
    """ℓ2 norm of the half-widths ``b`` (overflow-safe; clear error if huge)."""
    value_range = stable_norm(b)
    if not math.isfinite(value_range):
        raise ValueError(
            "bound is too wide: the ℓ2 norm of the box's half-widths exceeds the "
            "float64 range (about 1.8e308). Declare tighter bounds.")
    return value_range


def _budget(epsilon, delta):
    return PureDP(epsilon) if delta == 0 else ApproxDP(epsilon, delta)


def _warn_if_unreliable(plan, gamma):
    bound = plan.range_failure_bound
    if bound > gamma:
        warn_at_caller(
            f"With {plan.n_users} users, the range step of this plan misses the "
            f"bulk of some of its {plan.n_padded} coordinates with probability up to "
            f"{bound:.2g} > gamma={gamma:g}: the estimate can be far off (the "
            "privacy guarantee is unaffected). calibration='tight' avoids this, "
            "or use more users or a larger epsilon.", AccuracyWarning)


def _range_step_can_win(n_users, n_features, value_range, full, rest, gamma):
    """Whether some radius :func:`private_tau` can return makes a reliable
    range-step plan on the budget ``rest`` beat the plan for ``tau = R`` on
    the ``full`` budget (public values only)."""
    without = plan_winsorized_mean(n_users, n_features, tau=value_range,
                                   value_range=value_range, budget=full, gamma=gamma)
    for tau in tau_grid(value_range):
        plan = plan_winsorized_mean(n_users, n_features, tau=tau,
                                    value_range=value_range, budget=rest, gamma=gamma,
                                    allow_box=False)
        if (plan.range_failure_bound <= gamma / 2.0 * (1 + 1e-9)
                and plan.noise_variance < without.noise_variance):
            return True
    return False


def _resolve_tau(tau, *, n_users, n_features, value_range, samples_per_user,
                 sub_gaussian_sigma, gamma, calibration):
    if not isinstance(tau, str):
        return float(tau)
    if tau not in TAU_RULES:
        raise ValueError(f"tau must be a float > 0 or one of {TAU_RULES}, got {tau!r}.")
    if samples_per_user is None:
        raise ValueError(
            f"tau={tau!r} derives the radius from the public number of rows per "
            "user: set samples_per_user (the smallest number of rows any user "
            "has, known without looking at the data)."
        )
    if tau == "bounded":
        return tau_bounded_rows(value_range, samples_per_user, n_users, gamma)
    if sub_gaussian_sigma is None:
        raise ValueError("tau='sub_gaussian' needs sub_gaussian_sigma.")
    return tau_sub_gaussian(sub_gaussian_sigma, samples_per_user, n_features, n_users,
                            gamma, calibration=calibration)


def _winsorized_mean(user_means, *, epsilon, delta, tau, bound, samples_per_user,
                     sub_gaussian_sigma, tau_share, gamma, calibration,
                     random_state, n_jobs, overwrite=False, shift=None):
    """:func:`winsorized_mean`, returning the plan (with τ and the route).

    ``overwrite=True``: the caller's float64 ``user_means`` (a temporary it
    owns) is clipped in place instead of copied. ``shift``: the estimate of
    ``user_means - shift`` (a public point), each row shifted and clipped
    where it is read, with no copy of the table (``user_means`` is not
    modified).
    """
    U = _as_2d_float(user_means, "user_means")
    n_users, n_features = U.shape
    b = check_bound(bound, n_features)
    value_range = _value_range(b)
    # per-user projection onto the public box: free
    if shift is None:
        U = np.clip(U, -b, b, out=U if overwrite and U is user_means else None)
        moved = {}
    else:  # the rows clip(U - shift, -b, b), computed where they are read
        shift = np.asarray(shift, dtype=np.float64)
        moved = dict(shift=shift, box=b)
    if not 0 < tau_share < 1:
        raise ValueError(f"tau_share must be in (0, 1), got {tau_share!r}.")
    budget = _budget(epsilon, delta)
    tau_seed, run_seed = make_seed_sequence(random_state).spawn(2)
    tau_loss = None
    if isinstance(tau, str) and tau == "auto":
        if calibration == "tight" and delta > 0:
            # Route (pure or zCDP) from public quantities only; a zCDP route
            # accounts everything in ρ.
            reference = plan_winsorized_mean(
                n_users, n_features, tau=value_range / 1024.0,
                value_range=value_range, budget=budget, gamma=gamma,
                calibration=calibration,
            )
            if reference.route.endswith("zcdp"):
                budget = ZCDP(zcdp_rho_for(epsilon, delta))
            else:
                budget = PureDP(epsilon)
        eps_tau, rest = split_off(budget, tau_share)
        if private_tau_feasible(n_users, eps_tau, gamma) and (
            calibration == "paper" or _range_step_can_win(
                n_users, n_features, value_range, _budget(epsilon, delta), rest,
                gamma)
        ):
            budget = rest
            tau_loss = (pure_to_zcdp(eps_tau, bounded_range=True)
                        if isinstance(budget, ZCDP) else PureDP(eps_tau))
            transform = (None if shift is None else
                         lambda rows: _shift_and_clip(rows, shift, b, rows))
            tau_value = private_tau(U, eps_tau, value_range=value_range, gamma=gamma,
                                    rng=generator_from(tau_seed),
                                    transform=transform)
        else:
            # Too few users to locate the spread, or no radius the estimate
            # could return would let the range step beat the box (public
            # rules): every clipped user is within R of the origin, so
            # tau = R holds for free, and the plan may use any route for the
            # whole budget.
            budget = _budget(epsilon, delta)
            tau_value = value_range
    else:
        tau_value = _resolve_tau(
            tau, n_users=n_users, n_features=n_features, value_range=value_range,
            samples_per_user=samples_per_user, sub_gaussian_sigma=sub_gaussian_sigma,
            gamma=gamma, calibration=calibration,
        )
    plan = plan_winsorized_mean(n_users, n_features, tau=tau_value,
                                value_range=value_range, budget=budget, gamma=gamma,
                                calibration=calibration)
    _warn_if_unreliable(plan, gamma)
    mean = _from_plan(U, plan, run_seed, n_jobs, **moved)
    np.clip(mean, -b, b, out=mean)  # post-processing onto the public box
    loss = plan.loss if tau_loss is None else compose(tau_loss, plan.loss)
    return mean, loss, plan


def winsorized_mean(user_means, *, epsilon, delta=0.0, tau="auto", bound=1.0,
                    samples_per_user=None, sub_gaussian_sigma=None, tau_share=0.1,
                    gamma=0.01, calibration="tight", random_state=None, n_jobs=None):
    """Levy et al.'s WinsorizedMean of per-user vectors (pure-function core).

    Parameters
    ----------
    user_means : array-like of shape (n_users, n_features)
        One vector per user (e.g. from :func:`skuserdp.users.user_means`).
        Not modified.
    epsilon : float
        Target ε, ``> 0``.
    delta : float, default=0.0
        Target δ in ``[0, 1)``.
    tau : float or {"auto", "bounded", "sub_gaussian"}, default="auto"
        Concentration radius, see :class:`WinsorizedMeanEstimator`.
    bound : float or array-like of shape (n_features,), default=1.0
        Public box ``[-bound, bound]^d`` of the user means.
    samples_per_user : int, default=None
        Public minimum number of rows per user (τ rules).
    sub_gaussian_sigma : float, default=None
        Public sub-Gaussian parameter of a row (``tau="sub_gaussian"``).
    tau_share : float, default=0.1
        Share of the budget spent on τ when ``tau="auto"``.
    gamma : float, default=0.01
        Failure probability of the accuracy guarantee.
    calibration : {"tight", "paper"}, default="tight"
        See :mod:`skuserdp.mean._winsorized`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness (``None``: fresh OS entropy).
    n_jobs : int, default=None
        Threads for coordinate blocks; results do not depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean, inside the public box.
    loss : PureDP, ApproxDP or ZCDP
        The privacy loss incurred (τ estimate included).
    tau : float
        The τ used (public, the private estimate, or the public bound when
        there are too few users to estimate it).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import winsorized_mean
    >>> U = np.random.default_rng(0).normal(0.3, 0.01, size=(5000, 4))
    >>> mean, loss, tau = winsorized_mean(U, epsilon=1.0, bound=10.0,
    ...                                   random_state=0)
    >>> mean.round(2), loss.epsilon <= 1.0
    (array([0.3, 0.3, 0.3, 0.3]), True)
    """
    mean, loss, plan = _winsorized_mean(
        user_means, epsilon=epsilon, delta=delta, tau=tau, bound=bound,
        samples_per_user=samples_per_user, sub_gaussian_sigma=sub_gaussian_sigma,
        tau_share=tau_share, gamma=gamma, calibration=calibration,
        random_state=random_state, n_jobs=n_jobs)
    return mean, loss, plan.tau


def answer_adaptive_queries(query, n_queries, *, n_users, n_features, epsilon,
                            delta, tau, bound, gamma=0.01, calibration="tight",
                            random_state=None, n_jobs=None):
    """Answer ``n_queries`` adaptively chosen vector queries (Levy et al., Thm 10).

    Each query maps every user's data to one vector; query ``k`` may depend
    on the private answers to queries ``0..k-1``. Every answer is a
    WinsorizedMean release with a fresh rotation and fresh noise at the
    per-query budget of :func:`skuserdp.privacy.adaptive_query_budget`; the
    whole sequence is (ε, δ)-DP at user level (replace-one user, n public).
    This is the engine of user-level first-order optimisation (each query is
    a per-user average gradient).

    Parameters
    ----------
    query : callable
        ``query(k, answers) -> ndarray of shape (n_users, n_features)``, one
        row per user (always in the same user order), where ``answers`` is
        the list of the previous private answers. It must only use the
        private data through its returned rows.
    n_queries : int
        Number K of queries, fixed in advance, ``>= 1``.
    n_users, n_features : int
        Public shape of every query's result.
    epsilon : float
        Total ε, ``> 0``.
    delta : float
        Total δ in ``[0, 1)``.
    tau : float
        Public uniform concentration radius of the query values (ℓ2).
    bound : float or array-like of shape (n_features,)
        Public box of the query values; rows are clipped to it.
    gamma : float, default=0.01
        Total failure probability of the utility guarantee (γ/K per query).
    calibration : {"tight", "paper"}, default="tight"
        Per-query budget rule and WinsorizedMean constants.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness.
    n_jobs : int, default=None
        Threads inside each release; results do not depend on it.

    Returns
    -------
    answers : ndarray of shape (n_queries, n_features)
        The private answers.
    loss : PureDP, ApproxDP or ZCDP
        The composed privacy loss of all answers.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import answer_adaptive_queries
    >>> Z = np.random.default_rng(0).normal(1.0, 0.01, size=(4000, 2))
    >>> def query(k, answers):  # centre on the previous answer
    ...     shift = answers[-1] if answers else 0.0
    ...     return Z - shift
    >>> answers, loss = answer_adaptive_queries(
    ...     query, 2, n_users=4000, n_features=2, epsilon=1.0, delta=1e-6,
    ...     tau=0.05, bound=5.0, random_state=0)
    >>> answers.round(1) + 0.0  # + 0.0 folds -0.0 into 0.0
    array([[1., 1.],
           [0., 0.]])
    """
    n_queries = int(n_queries)
    if n_queries < 1:
        raise ValueError(f"n_queries must be >= 1, got {n_queries}.")
    b = check_bound(bound, int(n_features))
    value_range = _value_range(b)
    per_query = adaptive_query_budget(epsilon, delta, n_queries,
                                      calibration=calibration)
    plan = plan_winsorized_mean(n_users, n_features, tau=tau, value_range=value_range,
                                budget=per_query, gamma=gamma / n_queries,
                                calibration=calibration)
    seeds = make_seed_sequence(random_state).spawn(n_queries)
    answers = []
    for k in range(n_queries):
        rows = np.clip(np.asarray(query(k, list(answers)), dtype=np.float64), -b, b)
        ans = winsorized_mean_from_plan(rows, plan, random_state=seeds[k],
                                        n_jobs=n_jobs)
        answers.append(np.clip(ans, -b, b))
    return np.array(answers), compose_adaptive_queries(plan.loss, n_queries, delta)


@fill_doc
class WinsorizedMeanEstimator(UserLevelMeanEstimator):
    """User-level private mean by private ranges and winsorization (Levy et al.).

    Each user's rows are averaged. For one feature (Algorithm 1), a private
    range of width about ``4τ`` is found with the exponential mechanism over
    all bins of ``[-bound, bound]``, the user means are clipped to it, and
    their mean is released with noise proportional to ``τ/n`` — not to the
    bound. For several features (Algorithm 2), the user means are first
    randomly rotated (random signs and a fast Walsh–Hadamard transform, after
    zero-padding to a power of two ``d′``) so that every rotated coordinate is
    concentrated at scale ``τ/√d′``; each coordinate is then treated as in one
    dimension, and the result is rotated back. This beats clipping whenever
    the users are concentrated far more tightly (``τ``) than the public bound
    says.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    delta : float, default=0.0
        Failure probability δ of the user-level guarantee, in ``[0, 1)``. The
        default 0 asks for pure ε-DP (Laplace noise, basic composition over
        coordinates); with several features a small δ > 0 (well below
        ``1 / n_users``) allows Gaussian noise and is usually far more
        accurate.
    tau : float or {{"auto", "bounded", "sub_gaussian"}}, default="auto"
        Concentration radius: every user mean is assumed within ℓ2 distance
        ``tau`` of a common point (only accuracy depends on it; users beyond
        it are pulled in).

        - float: a public value, never computed from the private data;
        - ``"bounded"``: from rows in the box and ``samples_per_user``
          (Corollary 1, corrected by McDiarmid's inequality);
        - ``"sub_gaussian"``: from ``sub_gaussian_sigma`` and
          ``samples_per_user`` (Corollary 5);
        - ``"auto"``: a private estimate from distances between randomly
          paired users, spending ``tau_share`` of the budget (included in the
          reported spend). With too few users to locate the spread
          (``⌊n/2⌋·ε_τ < 8 ln(61/γ)``, a public rule) nothing is spent on it
          and ``tau_`` is the public bound ``‖bound‖₂``.
    {bounds}
        User means outside it are clipped to it, and the released mean lies
        in it. Only enters the accuracy logarithmically (number of bins).
        With ``tau="auto"`` or ``"bounded"`` the fit runs in the box's
        coordinates scaled per column to ``[-1, 1]`` (``tau_`` is then in
        those units) and is mapped back, so each feature's noise is in
        proportion to its own half-width; with a declared ``tau`` or
        ``"sub_gaussian"`` (ℓ2 bounds in the units of ``X``, which would
        bound the scaled coordinates only as ``value / min(half-width)``) it
        runs in the units of ``X``.
    {bounds_share}
    samples_per_user : int, default=None
        Public minimum number of rows per user, for ``tau="bounded"`` or
        ``"sub_gaussian"``. Must be known without looking at the data.
    sub_gaussian_sigma : float, default=None
        Public sub-Gaussian parameter of one row, for
        ``tau="sub_gaussian"``.
    tau_share : float, default=0.1
        Share of the budget (of ε, or of ρ for the zCDP route) spent on the
        private τ when ``tau="auto"``; in ``(0, 1)``.
    gamma : float, default=0.01
        Failure probability of the accuracy guarantee (rotation bound, range
        search, τ rule). Never affects privacy.
    {weighting}
    {calibration}
        ``"paper"`` is Levy et al.'s Laplace noise with an equal split of
        each coordinate's ε′ = ε/√(8d′ ln(1/δ)), the 10√log rotation bound and
        advanced composition, with three corrections: a ±3τ′ window (the
        printed ±2τ′ can clip), a numerically checked composition, and
        McDiarmid's radius for ``tau="bounded"``. ``"tight"`` uses
        Hoeffding's rotation bound, narrower bins, a range budget sized by
        its accuracy, and the better of Laplace with basic composition or a
        discrete Gaussian with zCDP. When the range step cannot succeed with
        probability ``1 − γ/2`` (too few users for the number of bins and
        coordinates), or a plain clip-and-noise on the public box has less
        noise (``tau`` not much smaller than the box), the tight release
        skips the range step and clips to the box instead (``route_``
        starts with ``"box"``); the paper's plan is always the paper's and
        warns (:class:`~skuserdp.exceptions.AccuracyWarning`) when its range
        step is likely to fail.
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {mean_}
    {bounds_}
    tau_ : float
        The concentration radius used (public, from a rule, or the private
        estimate, which is itself a private output); in the box's scaled
        coordinates with ``tau="auto"`` or ``"bounded"`` (``bounds``).
    route_ : {"pure", "zcdp", "paper", "box-pure", "box-zcdp"}
        The release plan: Laplace with basic composition, discrete Gaussian
        with zCDP, the paper's plan, or clip-and-noise on the public box
        without a range step (see ``calibration``). A function of public
        values and ``tau_`` only.
    {noise_std_}
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_ : float
        ε actually spent (``<= epsilon``); for a zCDP release the optimal
        conversion of ``rho_`` at ``delta``.
    delta_ : float
        δ actually spent.
    rho_ : float
        zCDP parameter of the release (ε²/2 for a pure release).
    privacy_loss_ : PureDP, ApproxDP or ZCDP
        The native guarantee of the release, for composing with other fits.
    {feature_attributes}

    See Also
    --------
    ClipNoiseMeanEstimator : Clip to a public ball and add noise once.
    skuserdp.mean.winsorized_mean : The pure-function core.
    skuserdp.mechanisms.private_range : Algorithm 6.

    Notes
    -----
    When no clipping happens, the error is exactly the noise: per rotated
    coordinate, Laplace with scale ``2h/(n ε_n)`` or Gaussian with
    ``σ = 2h√d′/(n√(2ρ_n))``, where ``h ≈ 2.25τ′`` (tight) or ``3τ′``
    (paper) and ``τ′ ≈ τ√(2 ln(2d′n/γ)/d′)``. So the squared error scales as
    ``d τ² log(d n/γ)/(n² ε²)`` (Theorem 2) instead of ``d·bound²/(n² ε²)``
    for clipping to the whole box.

    References
    ----------
    Levy, Sun, Amin, Kale, Kulesza, Mohri and Suresh, "Learning with
    user-level privacy", NeurIPS 2021 ([LSA+21]_ on the privacy-model page).

    Examples
    --------
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import WinsorizedMeanEstimator
    >>> X, groups, true_mean = make_user_samples(n_users=2000, n_features=3,
    ...                                          mean=0.5, random_state=0)
    >>> est = WinsorizedMeanEstimator(epsilon=1.0, delta=1e-6, tau=3.0,
    ...                               bounds=(-100, 100), random_state=0)
    >>> est = est.fit(X, groups=groups)
    >>> est.n_users_, est.epsilon_ <= 1.0
    (2000, True)
    >>> est.mean_.round(1)
    array([0.5, 0.5, 0.5])
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "tau": [Interval(Real, 0, None, closed="neither"), StrOptions(set(TAU_RULES))],
        **BOUNDS_CONSTRAINTS,
        "samples_per_user": [None, Interval(Integral, 1, None, closed="left")],
        "sub_gaussian_sigma": [None, Interval(Real, 0, None, closed="neither")],
        "tau_share": [Interval(Real, 0, 1, closed="neither")],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        **WEIGHT_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=0.0, *, tau="auto", bounds="auto",
                 bounds_share=None, samples_per_user=None, sub_gaussian_sigma=None,
                 tau_share=0.1, gamma=0.01, weighting="equal", estimand="user_mean",
                 max_rows=None, weights_share="auto", calibration="tight",
                 random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.weighting = weighting
        self.estimand = estimand
        self.max_rows = max_rows
        self.weights_share = weights_share
        self.tau = tau
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.samples_per_user = samples_per_user
        self.sub_gaussian_sigma = sub_gaussian_sigma
        self.tau_share = tau_share
        self.gamma = gamma
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _approx_bounds_accounting(self):
        # with delta > 0 a learned box is accounted in zCDP at a share of
        # (epsilon, delta) (split_for_public_bounds): about 5x the epsilon_0
        # of basic composition at 64 features; the release below plans with
        # budget.delta
        return True

    def _scales_box(self):
        # a declared tau or sub-Gaussian parameter is an l2 / directional
        # bound in the units of X: it would map to value / min(half_width),
        # never less noise than the natural units. "auto" (estimated) and
        # "bounded" (rows in the box, which holds in the scaled box) scale.
        return isinstance(self.tau, str) and self.tau in ("auto", "bounded")

    def _interval_unavailable(self):
        return (
                "the Winsorized mean clips every coordinate to a privately placed "
                "interval whose clipping bias is not bounded by any release, so no "
                "valid interval is offered (docs: 'Confidence intervals'). With a "
                "box, UserMeanEstimator (per-column) or ClipNoiseMeanEstimator gives "
                "one.")

    def _fit_user_means(self, U, budget):
        # the box is centred at the origin for the pure core
        mid = budget.midpoint
        mean, loss, plan = _winsorized_mean(
            U, shift=mid,
            epsilon=budget.epsilon,
            delta=budget.delta,
            tau=self.tau,
            bound=budget.half_width,
            samples_per_user=self.samples_per_user,
            sub_gaussian_sigma=self.sub_gaussian_sigma,
            tau_share=self.tau_share,
            gamma=self.gamma,
            calibration=self.calibration,
            random_state=budget.random_state,
            n_jobs=self.n_jobs,
        )
        self.tau_, self.route_ = plan.tau, plan.route
        # i.i.d. noise per rotated coordinate stays i.i.d. after the rotation
        self._noise_error = math.sqrt(U.shape[1] * plan.noise_variance)
        return mid + mean, loss
