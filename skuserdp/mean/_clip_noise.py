"""ClipNoiseMeanEstimator: the clip-and-noise baseline for user-level means.

Not from one of the three papers: this is the standard baseline every later
estimator is benchmarked against (per-user pre-aggregation, one clip, one
vector release), the recommended practice
("pre-aggregate per user, clip
jointly in L2, add one vector Gaussian, account in zCDP").

Algorithm (replace-one user neighbours, n users public):

1. ``x̄_u`` = mean of user u's rows (a per-user function of the data).
2. Clip ``x̄_u - center`` to the ℓ2 ball of radius r (δ > 0) or to the ℓ1 ball
   of radius ``r·√d`` (δ = 0; it contains the ℓ2 ball of radius r), then round
   it to a power-of-two lattice: an integer vector ``k_u`` of provably bounded
   norm R (:func:`skuserdp.mechanisms.encode_contributions`).
3. ``S = Σ_u k_u`` exactly in int64. Replacing one user moves S by at most
   ``2R`` (:func:`skuserdp.privacy.replace_one_sum_sensitivity`).
4. Add discrete Gaussian noise (zCDP, δ > 0) or discrete Laplace noise
   (pure ε-DP, δ = 0) calibrated to ``2R``.
5. ``mean_ = center + grid · (S + Z) / n`` (post-processing).
"""

import math
from dataclasses import dataclass

import numpy as np
from sklearn.utils._param_validation import Interval, Real

from ..base import (
    BOUNDS_CONSTRAINTS,
    CI_CONSTRAINTS,
    WEIGHT_CONSTRAINTS,
    _box_half_width,
    _box_midpoint,
)
from ..mechanisms import add_noise, calibrate_noise, choose_grid, lattice_sensitivity
from ..mechanisms._additive import _mean_noise_variance
from ..mechanisms._lattice import encode_sum
from ..privacy import ApproxDP, PureDP
from ..utils._docstrings import fill_doc
from ..utils._random import make_seed_sequence
from ..utils._validation import check_center, check_positive_scalar
from ._base import UserLevelMeanEstimator

__all__ = [
    "clip_noise_mean",
    "plan_clip_noise",
    "clip_noise_from_plan",
    "ClipNoisePlan",
    "ClipNoiseMeanEstimator",
]


def clip_noise_mean(user_means, *, epsilon, delta, radius, center=None,
                    calibration="tight", random_state=None, n_jobs=None):
    """Clip-and-noise mean of per-user statistics (pure-function core).

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One row per user (e.g. from :func:`skuserdp.users.user_means`).
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``[0, 1)``; ``0`` gives pure ε-DP with discrete Laplace
        noise and ℓ1 clipping, ``> 0`` discrete Gaussian noise and ℓ2
        clipping.
    radius : float
        Public ℓ2 radius of the per-user means around ``center``.
    center : float or array-like of shape (n_features,), default=None
        Public centre; ``None`` is the origin.
    calibration : {"tight", "paper"}, default="tight"
        Gaussian calibration, see
        :func:`skuserdp.mechanisms.calibrate_discrete_gaussian`.
        Ignored when ``delta == 0`` (the Laplace calibration is exact).
    random_state : int, RandomState, SeedSequence or None, default=None
        Noise source.
    n_jobs : int, default=None
        Workers for chunks of coordinates; results do not depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean.
    loss : PureDP or ZCDP
        The privacy loss actually incurred.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import clip_noise_mean
    >>> U = np.zeros((1000, 3))
    >>> mean, loss = clip_noise_mean(U, epsilon=1.0, delta=0.0, radius=1.0,
    ...                              random_state=0)
    >>> mean.shape, loss.epsilon <= 1.0
    ((3,), True)
    """
    mean, plan = _clip_noise_mean(
        user_means, epsilon=epsilon, delta=delta, radius=radius, center=center,
        calibration=calibration, random_state=random_state, n_jobs=n_jobs)
    return mean, plan.loss


def _clip_noise_mean(user_means, *, epsilon, delta, radius, center, calibration,
                     random_state, n_jobs, rows=None, shift=None):
    """:func:`clip_noise_mean`, returning the plan instead of its loss.

    ``rows``, ``shift``: release the mean of ``user_means[rows] - shift``
    (public row indices and point), without copying those rows.
    """
    U = np.asarray(user_means, dtype=np.float64)
    n_users = U.shape[0] if rows is None else len(rows)
    budget = ApproxDP(epsilon, delta) if delta > 0 else PureDP(epsilon)
    plan = plan_clip_noise(n_users, U.shape[1], budget=budget, radius=radius,
                           calibration=calibration)
    center = check_center(center, plan.n_features)
    mean = _release(U, plan, center, random_state, n_jobs, rows=rows, shift=shift)
    return mean, plan


@dataclass(frozen=True)
class ClipNoisePlan:
    """Every public quantity of one clip-and-noise release.

    Computed by :func:`plan_clip_noise` from public values only.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    radius : float
        ℓ2 radius r of the contributions around the centre.
    norm : {"l2", "l1"}
        Clipping norm (ℓ1 ball of radius ``r·√d`` for pure DP).
    ball : float
        Radius of the clipping ball in ``norm``.
    grid : float
        Power-of-two lattice step.
    noise : DiscreteGaussianNoise or DiscreteLaplaceNoise
        Noise of the integer sum (grid units).
    sensitivity : float
        Replace-one sensitivity of the integer sum (grid units).
    loss : PureDP or ZCDP
        The privacy loss of the release.

    Examples
    --------
    >>> from skuserdp.mean import plan_clip_noise
    >>> from skuserdp.privacy import PureDP
    >>> plan = plan_clip_noise(100, 2, budget=PureDP(1.0), radius=1.0)
    >>> plan.norm, round(plan.ball, 4)
    ('l1', 1.4142)
    """

    n_users: int
    n_features: int
    radius: float
    norm: str
    ball: float
    grid: float
    noise: object
    sensitivity: float
    loss: object

    @property
    def noise_variance(self):
        """Variance bound of the noise of one coordinate of the mean."""
        return _mean_noise_variance(self.noise, self.grid, self.n_users)


def plan_clip_noise(n_users, n_features, *, budget, radius, calibration="tight",
                    resolution=None):
    """Plan one clip-and-noise release of a mean of per-user vectors.

    Parameters
    ----------
    n_users, n_features : int
        Public shape of the per-user vectors.
    budget : PureDP, ApproxDP or ZCDP
        Budget of the release: pure ε (ℓ1 clipping, discrete Laplace noise),
        (ε, δ) (ℓ2 clipping, discrete Gaussian calibrated by ``calibration``)
        or ρ-zCDP (ℓ2 clipping, discrete Gaussian at exactly ρ).
    radius : float
        Public ℓ2 radius of the contributions around the centre, ``> 0``.
    calibration : {"tight", "paper"}, default="tight"
        Gaussian calibration for an (ε, δ) budget.
    resolution : float, default=None
        Lattice points per radius (:func:`skuserdp.mechanisms.choose_grid`).

    Returns
    -------
    plan : ClipNoisePlan
        Clipping ball, lattice, calibrated noise and privacy loss.

    Examples
    --------
    >>> from skuserdp.mean import plan_clip_noise
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_clip_noise(1000, 3, budget=ZCDP(0.5), radius=1.0)
    >>> plan.norm, plan.loss.rho <= 0.5
    ('l2', True)
    """
    n_users, n_features = int(n_users), int(n_features)
    radius = check_positive_scalar(radius, "radius")
    if isinstance(budget, PureDP):
        norm, ball = "l1", radius * math.sqrt(n_features)
        if not math.isfinite(ball):
            raise ValueError(
                f"radius={radius:.3g} is too large for pure DP in {n_features} "
                "dimension(s): its ℓ1 clipping ball, of radius radius·√n_features, "
                "exceeds the float64 range (about 1.8e308). Use a smaller radius.")
    else:
        norm, ball = "l2", radius
    grid = choose_grid(ball, n_features, n_users, norm, resolution=resolution)
    sensitivity = lattice_sensitivity(ball, grid, n_features, norm)
    noise = calibrate_noise(budget, sensitivity, calibration=calibration)
    return ClipNoisePlan(n_users, n_features, radius, norm, ball, grid, noise,
                         sensitivity, noise.privacy(sensitivity))


def clip_noise_from_plan(user_means, plan, *, center=None, rows=None,
                         random_state=None, n_jobs=None):
    """Run a planned clip-and-noise release.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One row per user; the shape must match the plan. Not modified.
    plan : ClipNoisePlan
        From :func:`plan_clip_noise`.
    center : float or array-like of shape (n_features,), default=None
        Public centre; ``None`` is the origin.
    rows : ndarray of int, default=None
        Release the mean of the users ``user_means[rows]`` only (the plan is
        then for ``len(rows)`` users), gathered block by block. They must be
        chosen independently of the data, e.g. by
        :func:`skuserdp.utils._random.random_subset`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Noise source.
    n_jobs : int, default=None
        Workers for chunks of coordinates; results do not depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean, ``plan.loss``-DP at user level.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import clip_noise_from_plan, plan_clip_noise
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_clip_noise(5000, 2, budget=ZCDP(1.0), radius=1.0)
    >>> clip_noise_from_plan(np.full((5000, 2), 0.5), plan,
    ...                      random_state=0).round(2)
    array([0.5, 0.5])
    """
    U = np.asarray(user_means, dtype=np.float64)
    shape = U.shape if rows is None else (len(rows), U.shape[-1])
    if U.ndim != 2 or shape != (plan.n_users, plan.n_features):
        raise ValueError(
            f"user_means has shape {U.shape}"
            f"{'' if rows is None else f' ({len(rows)} rows selected)'}; the plan "
            f"is for {(plan.n_users, plan.n_features)}."
        )
    center = check_center(center, plan.n_features)
    return _release(U, plan, center, random_state, n_jobs, rows=rows)


def _release(U, plan, center, random_state, n_jobs, rows=None, shift=None):
    """The release of :func:`clip_noise_from_plan` (arguments checked), of
    ``U[rows] - shift`` when given."""
    # exact_sum(encode_contributions(...)), block by block
    total = encode_sum(U, center=center, radius=plan.ball, grid=plan.grid,
                       norm=plan.norm, rows=rows, shift=shift)
    seed_sequence = make_seed_sequence(random_state)
    noisy = add_noise(total, plan.noise, seed_sequence, n_jobs=n_jobs)
    return center + plan.grid * (noisy.astype(np.float64) / plan.n_users)


@fill_doc
class ClipNoiseMeanEstimator(UserLevelMeanEstimator):
    """User-level private mean by per-user clipping and one noisy release.

    Each user's rows are averaged; the per-user mean is clipped to a public
    ball of radius ``radius`` around ``center``; the clipped means are summed
    exactly on a power-of-two lattice, and one draw of discrete noise is added:
    discrete Gaussian (δ > 0, ℓ2 clipping) or discrete Laplace (δ = 0, ℓ1
    clipping to radius ``radius·√n_features``, which keeps every user within ℓ2
    distance ``radius`` unchanged). This is the baseline every other skuserdp
    mean estimator is compared with.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    {delta}
    {bounds}
        Used for what is not declared below: ``center`` defaults to the
        box's midpoint and ``radius`` to its half-diagonal. With both
        ``radius`` and ``center`` declared, no box is needed or learned.
        Without a declared ``radius`` the fit runs in the box's coordinates
        scaled per column to ``[-1, 1]`` (a declared ``center`` is mapped
        there too), so the clipping ball is the ellipsoid through the box's
        corners and each feature's noise is proportional to its own
        half-width; with a declared ``radius`` (an ℓ2 radius in the units of
        ``X``, which would bound the scaled coordinates only as
        ``radius / min(half-width)``) the fit stays in the units of ``X``.
    {bounds_share}
    radius : float, default=None
        Public ℓ2 radius of the per-user means around ``center``: users whose
        mean lies farther away are pulled onto the ball (bias, no privacy
        cost). Noise grows linearly with it. ``None``: the half-diagonal of
        ``bounds``. Must not be computed from the private data.
    center : float or array-like of shape (n_features,), default=None
        Public centre of the clipping ball; ``None``: the midpoint of
        ``bounds``. Must not be computed from the private data.
    {ci_share}
    {weighting}
    {calibration}
        Here ``"paper"`` is the classical Gaussian mechanism
        σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1), proven only for
        ε < 1; with δ = 0 both settings give the same exact Laplace noise.
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {mean_}
    bounds_ : tuple (lower, upper) or None
        The box used (declared, or learned privately); ``None`` when a
        clipping ball was declared.
    {noise_std_}
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_ : float
        ε actually spent (``<= epsilon``), the bounds step included. For
        δ > 0 it is the optimal conversion of ``rho_`` at ``delta_``.
    delta_ : float
        δ actually spent.
    rho_ : float
        zCDP parameter of the release (for δ = 0: ε²/2, implied by pure DP).
    privacy_loss_ : PureDP or ZCDP
        The native guarantee of the release, for composing with other fits.
    {feature_attributes}

    See Also
    --------
    skuserdp.users.user_means : The per-user aggregation used in ``fit``.

    Notes
    -----
    Noise standard deviation per coordinate (before the rounding widening of
    about 0.05 %): ``σ = 2·radius·c(ε, δ)/n_users`` with ``c`` the Gaussian
    calibration factor, or ``√2·2·radius·√d/(ε·n_users)`` for Laplace. Without
    a declared ``radius`` the coordinates are the box's scaled ones
    (``radius = √d``), so feature j gets ``half_width_j`` times that.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import ClipNoiseMeanEstimator
    >>> X, groups, true_mean = make_user_samples(n_users=2000, n_features=3,
    ...                                          mean=0.5, random_state=0)
    >>> est = ClipNoiseMeanEstimator(epsilon=1.0, delta=1e-6, radius=3.0,
    ...                              center=0.0, random_state=0)
    >>> est = est.fit(X, groups=groups)
    >>> est.n_users_, est.epsilon_ <= 1.0
    (2000, True)
    >>> est.mean_.round(1)
    array([0.5, 0.5, 0.5])

    With nothing declared, the box is learned privately (part of the budget):

    >>> est = ClipNoiseMeanEstimator(random_state=0).fit(100 + X, groups=groups)
    >>> bool(np.abs(est.mean_ - 100.5).max() < 1.0), est.epsilon_ <= 1.0
    (True, True)
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        **BOUNDS_CONSTRAINTS,
        "radius": [None, Interval(Real, 0, None, closed="neither")],
        "center": [None, Real, "array-like"],
        **CI_CONSTRAINTS,
        **WEIGHT_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, bounds="auto", bounds_share=None,
                 radius=None, center=None, ci_share="auto", weighting="equal",
                 estimand="user_mean", max_rows=None, weights_share="auto",
                 calibration="tight", random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.weighting = weighting
        self.estimand = estimand
        self.max_rows = max_rows
        self.weights_share = weights_share
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.radius = radius
        self.center = center
        self.ci_share = ci_share
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _needs_bounds(self):
        # users weighted by their row counts need the box for the weights'
        # statistics, even with a declared ball
        weighted = self.weighting == "auto" or self.estimand == "row_mean"
        return self.radius is None or self.center is None or weighted

    def _scales_box(self):
        # a declared radius is an l2 bound in the units of X: it would map to
        # radius / min(half_width), never less noise than the natural units
        return self.radius is None

    def _zcdp_accounting(self, n_users, n_features):
        return self.delta > 0

    def _fit_user_means(self, U, budget):
        d = U.shape[1]
        center = (budget.midpoint if self.center is None
                  else check_center(self.center, d))
        if self.center is not None and budget.natural_lower is not None:
            # the declared centre, a point in the units of X, in the scaled
            # coordinates of the box (the same public map as the users')
            lo, hi = budget.natural_bounds
            center = (center - _box_midpoint(lo, hi)) / _box_half_width(lo, hi)
        radius = budget.half_diagonal if self.radius is None else self.radius
        mean, plan = _clip_noise_mean(
            U,
            epsilon=budget.epsilon,
            delta=budget.delta,
            radius=radius,
            center=center,
            calibration=self.calibration,
            random_state=budget.random_state,
            n_jobs=self.n_jobs,
        )
        self._noise_error = math.sqrt(d * plan.noise_variance)
        self._clip_ball = (center, plan.ball, plan.norm)
        return mean, plan.loss

    def _interval_geometry(self, budget):
        # the ball of the release (ℓ1 under pure DP), in its coordinates; the
        # users of the box it may cut (a declared radius or centre) bound
        # the clipping bias
        center, radius, norm = self.__dict__.pop("_clip_ball")
        outer = None
        if budget.lower is not None:
            corner = np.maximum(np.abs(budget.upper - center),
                                np.abs(center - budget.lower))
            outer = float(np.sqrt(corner @ corner) if norm == "l2"
                          else corner.sum())
        return {"geometry": "ball", "ball": (center, radius, norm), "outer": outer}
