"""The coordinate-wise trimmed mean of clipped per-user vectors, on the lattice.

Mode A of the few-users note (§1.2): replace-one neighbours, n users public,
``k`` users trimmed per side in every coordinate (``2k < n``).

1. Clip every user's vector ``v_u - center`` to the ball of radius r (ℓ2
   for zCDP or (ε, δ), ℓ1 of radius ``r·√d`` for pure ε-DP) and round it to
   the power-of-two lattice (:func:`~skuserdp.mechanisms.encode_contributions`):
   integer vectors of norm at most R (grid units).
2. In every coordinate, sort the n integers and sum the middle ``n - 2k``:
   the trimmed sum ``S`` (exact, int64).
3. ``S`` moves by at most ``2R`` when one user is replaced
   (:func:`skuserdp.privacy.replace_one_trimmed_sum_sensitivity`: the
   trimmed sum is 1-Lipschitz in each user's coordinate): the same noise as
   the plain clip-and-noise sum.
4. ``mean = center + grid·(S + Z)/(n - 2k)``: the noise of the *mean* is
   ``n/(n - 2k)`` times the plain mean's. Trimming buys robustness to up to
   ``k`` arbitrary users per coordinate, not privacy.
"""

from dataclasses import dataclass

import numpy as np

from ..privacy import PureDP, replace_one_trimmed_sum_sensitivity
from ..utils._random import make_seed_sequence
from ..utils._validation import check_center, check_positive_scalar
from ._additive import _mean_noise_variance, add_noise
from ._calibrate import calibrate_noise
from ._lattice import choose_grid, encode_contributions, lattice_radius

__all__ = ["TrimmedMeanPlan", "plan_trimmed_mean", "trimmed_mean_from_plan",
           "trimmed_sum"]


@dataclass(frozen=True)
class TrimmedMeanPlan:
    """Every public quantity of one trimmed-mean release.

    Computed by :func:`plan_trimmed_mean` from public values only.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    n_trim : int
        Users dropped per side in every coordinate.
    radius : float
        ℓ2 radius r of the contributions around the centre.
    norm : {"l2", "l1"}
        Clipping norm (ℓ1 ball of radius ``r·√d`` for pure DP).
    ball : float
        Radius of the clipping ball in ``norm``.
    grid : float
        Power-of-two lattice step.
    noise : DiscreteGaussianNoise or DiscreteLaplaceNoise
        Noise of the integer trimmed sum (grid units).
    sensitivity : float
        Replace-one sensitivity of the integer trimmed sum (grid units).
    loss : PureDP or ZCDP
        The privacy loss of the release.

    Examples
    --------
    >>> from skuserdp.mechanisms import plan_trimmed_mean
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_trimmed_mean(48, 2, n_trim=8, budget=ZCDP(0.5), radius=1.0)
    >>> plan.n_kept, plan.loss.rho <= 0.5
    (32, True)
    """

    n_users: int
    n_features: int
    n_trim: int
    radius: float
    norm: str
    ball: float
    grid: float
    noise: object
    sensitivity: float
    loss: object

    @property
    def n_kept(self):
        """Users kept in every coordinate, ``n - 2k``."""
        return self.n_users - 2 * self.n_trim

    @property
    def noise_variance(self):
        """Variance bound of the noise of one coordinate of the mean."""
        return _mean_noise_variance(self.noise, self.grid, self.n_kept)


def plan_trimmed_mean(n_users, n_features, *, n_trim, budget, radius,
                      calibration="tight", resolution=None):
    """Plan one trimmed-mean release of per-user vectors.

    Parameters
    ----------
    n_users, n_features : int
        Public shape of the per-user vectors.
    n_trim : int
        Users dropped per side in every coordinate, ``2·n_trim < n_users``.
    budget : PureDP, ApproxDP or ZCDP
        Budget of the release (as :func:`skuserdp.mean.plan_clip_noise`).
    radius : float
        Public ℓ2 radius of the contributions around the centre, ``> 0``.
    calibration : {"tight", "paper"}, default="tight"
        Gaussian calibration for an (ε, δ) budget.
    resolution : float, default=None
        Lattice points per radius (:func:`choose_grid`).

    Returns
    -------
    plan : TrimmedMeanPlan
        The release's public plan: lattice, noise and privacy loss.

    Examples
    --------
    >>> from skuserdp.mechanisms import plan_trimmed_mean
    >>> from skuserdp.privacy import PureDP
    >>> plan = plan_trimmed_mean(100, 2, n_trim=10, budget=PureDP(1.0),
    ...                          radius=1.0)
    >>> plan.norm, plan.n_kept
    ('l1', 80)
    """
    n_users, n_features = int(n_users), int(n_features)
    radius = check_positive_scalar(radius, "radius")
    if isinstance(budget, PureDP):
        norm, ball = "l1", radius * float(np.sqrt(n_features))
        if not np.isfinite(ball):
            raise ValueError(f"radius={radius:.3g} is too large for pure DP.")
    else:
        norm, ball = "l2", radius
    grid = choose_grid(ball, n_features, n_users, norm, resolution=resolution)
    sensitivity = replace_one_trimmed_sum_sensitivity(
        lattice_radius(ball, grid, n_features, norm), n_users, n_trim)
    noise = calibrate_noise(budget, sensitivity, calibration=calibration)
    return TrimmedMeanPlan(n_users, n_features, int(n_trim), radius, norm, ball,
                           grid, noise, sensitivity, noise.privacy(sensitivity))


def trimmed_sum(contributions, n_trim):
    """Coordinate-wise trimmed sum of integer contributions (exact).

    Parameters
    ----------
    contributions : ndarray of shape (n_users, n_features), dtype int64
        Lattice contributions (:func:`encode_contributions`).
    n_trim : int
        Values dropped per side in every column, ``2·n_trim < n_users``.

    Returns
    -------
    total : ndarray of shape (n_features,), dtype int64
        Per coordinate, the exact sum of the encoded values kept after
        dropping the ``n_trim`` smallest and largest.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import trimmed_sum
    >>> trimmed_sum(np.array([[1, 9], [2, -5], [100, 3]]), 1).tolist()
    [2, 3]
    """
    K = np.sort(np.asarray(contributions, dtype=np.int64), axis=0)
    n = K.shape[0]
    return K[n_trim:n - n_trim].sum(axis=0, dtype=np.int64)


def trimmed_mean_from_plan(user_means, plan, *, center=None, random_state=None,
                           n_jobs=None):
    """Run a planned trimmed-mean release.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One row per user; the shape must match the plan. Not modified.
    plan : TrimmedMeanPlan
        From :func:`plan_trimmed_mean`.
    center : float or array-like of shape (n_features,), default=None
        Public centre of the clipping ball; ``None`` is the origin.
    random_state : int, RandomState, SeedSequence or None, default=None
        Noise source.
    n_jobs : int, default=None
        Workers for chunks of coordinates of the noise; results do not
        depend on it.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private trimmed mean, ``plan.loss``-DP at user level.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import (plan_trimmed_mean,
    ...                                  trimmed_mean_from_plan)
    >>> from skuserdp.privacy import ZCDP
    >>> U = np.full((5000, 2), 0.5)
    >>> U[:500] = 1e6  # 10 % of the users far away: trimmed
    >>> plan = plan_trimmed_mean(5000, 2, n_trim=600, budget=ZCDP(1.0),
    ...                          radius=1.0)
    >>> trimmed_mean_from_plan(U, plan, random_state=0).round(2)
    array([0.5, 0.5])
    """
    U = np.asarray(user_means, dtype=np.float64)
    if U.ndim != 2 or U.shape != (plan.n_users, plan.n_features):
        raise ValueError(f"user_means has shape {U.shape}; the plan is for "
                         f"{(plan.n_users, plan.n_features)}.")
    center = check_center(center, plan.n_features)
    K = encode_contributions(U, center=center, radius=plan.ball, grid=plan.grid,
                             norm=plan.norm)
    total = trimmed_sum(K, plan.n_trim)
    noisy = add_noise(total, plan.noise, make_seed_sequence(random_state),
                      n_jobs=n_jobs)
    return center + plan.grid * (noisy.astype(np.float64) / plan.n_kept)
