"""TrimmedMeanEstimator: a robust user-level mean (coordinate-wise trimming).

Not from one of the papers: the few-users note's Mode A trimmed mean
(:func:`skuserdp.mechanisms.trimmed_mean_from_plan`) inside a shrinking ball
whose radius corrupted users cannot drag. Replace-one user neighbours, n
users public, ``k = ⌈αn⌉`` users trimmed per side in every
coordinate (α = ``corrupted_fraction``).

Algorithm (all in zCDP, the parts composed):

1. Start at the box's midpoint ``c``.
2. ``n_steps`` times, then once more for the last release: release the
   median ``s`` of the users' distances ``‖x̄_u − c‖`` (one exponential
   mechanism on a log grid, :func:`skuserdp.mechanisms.private_quantile`);
   clip every user's mean to the ℓ2 ball of radius ``widen·s`` (``1.2·s``
   at the last release) around ``c``, and release their coordinate-wise
   trimmed mean there: the new ``c``.

Why the adversary cannot drag it: with at most ``αn < n/2`` corrupted
users the median distance lies between two quantiles of the honest users'
distances (shifted by at most the exponential mechanism's rank error), so
the radius follows the honest users only; a corrupted user clipped to the
ball moves every coordinate by at most the ball's radius and is among the
``k ≥ αn`` trimmed values of every coordinate where it is extreme. The
error therefore does not grow with the adversary's distance
(``benchmarks/bench_robust.py``). It keeps a bias of the order of α times
the honest users' spread in the coordinates the adversary pushes
(coordinate-wise trimming: a √d factor worse than filter-type estimators).
"""

import math
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..base import BOUNDS_CONSTRAINTS
from ..mechanisms import plan_trimmed_mean, private_quantile, trimmed_mean_from_plan
from ..privacy import (
    ZCDP,
    bounded_range_epsilon,
    compose,
    pure_to_zcdp,
    split_zcdp_shares,
    zcdp_rho_for,
)
from ..utils._docstrings import fill_doc
from ..utils._random import make_seed_sequence
from ._base import UserLevelMeanEstimator

__all__ = ["TrimmedMeanEstimator", "robust_trim"]

#: shares of the budget: each median release, each shrinking step (the last
#: release gets the rest)
QUANTILE_SHARE = 0.033
STEP_SHARE = 0.07
N_STEPS = 4
#: ball radius / released median distance: shrinking steps, last release
WIDEN = 1.5
FINAL_WIDEN = 1.2


def robust_trim(n_users, corrupted_fraction):
    """Users trimmed per side: ``⌈αn⌉``, capped so that one is kept.

    No margin beyond ``⌈αn⌉``: with at most ``αn`` corrupted users every kept
    value of a coordinate lies between two honest users' values, and each
    extra trimmed user costs noise (the sensitivity is ``2C/(n − 2k)``; at
    α = 1/4 the noise is already twice the untrimmed mean's).

    Parameters
    ----------
    n_users : int
        Public number of users.
    corrupted_fraction : float
        α, the declared fraction of adversarial users, in ``[0, 1/2)``.

    Returns
    -------
    n_trim : int

    Examples
    --------
    >>> from skuserdp.mean._trimmed import robust_trim
    >>> robust_trim(1000, 0.25)
    250
    """
    k = math.ceil(corrupted_fraction * n_users)
    return int(min(k, (n_users - 1) // 2))


@fill_doc
class TrimmedMeanEstimator(UserLevelMeanEstimator):
    """Robust user-level private mean: trimmed means in a shrinking ball.

    Up to a fraction ``corrupted_fraction`` of the users may be adversarial
    (any values, chosen with knowledge of the others): the error stays
    bounded however far they are. Every release is a coordinate-wise
    trimmed mean of the users' means clipped to an ℓ2 ball, with ``k =
    ⌈αn⌉`` users trimmed per side; the ball is centred at the
    previous release and its radius is a private *median* of the users'
    distances to that centre, which the adversary cannot move past the
    honest users' quantiles (module docstring).

    Trimming buys robustness, not privacy: the sensitivity of the trimmed
    mean is ``2r/(n − 2k)``, more than the clipped mean's ``2r/n``
    (:func:`skuserdp.privacy.replace_one_trimmed_mean_sensitivity`).

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    delta : float, default=1e-6
        Failure probability δ of the user-level guarantee, in ``(0, 1)``
        (the releases compose in zCDP). Choose δ well below ``1 / n_users``.
    {bounds}
        Only the start: the first ball is centred at its midpoint and passes
        through its corners. The estimator runs in the units of ``X``.
    {bounds_share}
    corrupted_fraction : float, default=0.0
        Declared upper bound α on the fraction of adversarial users, in
        ``[0, 1/2)``; ``⌈αn⌉`` users are trimmed per side.
    calibration : {{"tight"}}, default="tight"
        zCDP accounting with the optimal conversion (the design is ours:
        there is no paper setting).
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {mean_}
    {bounds_}
    n_trim_ : int
        Users trimmed per side in every coordinate.
    radii_ : ndarray of shape (5,)
        The clipping radius of every release (private medians, released).
    {noise_std_}
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_ : float
        ε actually spent (``<= epsilon``).
    delta_ : float
        δ actually spent.
    rho_ : float
        zCDP parameter of all releases together.
    privacy_loss_ : ZCDP
        The native guarantee, for composing with other fits.
    {feature_attributes}

    See Also
    --------
    CoinPressMeanEstimator : More accurate without corrupted users, dragged
        by far ones.
    FewUsersBallEstimator : Robust with very few users, far noisier.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import TrimmedMeanEstimator
    >>> X, groups, true_mean = make_user_samples(
    ...     n_users=2000, n_features=3, mean=0.5, corrupted_fraction=0.2,
    ...     corruption_distance=1000.0, random_state=0)
    >>> est = TrimmedMeanEstimator(epsilon=1.0, bounds=(-2000, 2000),
    ...                            corrupted_fraction=0.2,
    ...                            random_state=0).fit(X, groups=groups)
    >>> bool(np.linalg.norm(est.mean_ - true_mean) < 1.0)
    True
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        **BOUNDS_CONSTRAINTS,
        "corrupted_fraction": [Interval(Real, 0, 0.5, closed="left")],
        "calibration": [StrOptions({"tight"})],
    }

    _min_users = 3

    def __init__(self, epsilon=1.0, delta=1e-6, *, bounds="auto", bounds_share=None,
                 corrupted_fraction=0.0, calibration="tight",
                 random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.corrupted_fraction = corrupted_fraction
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _zcdp_accounting(self, n_users, n_features):
        return True

    def _scales_box(self):
        # an isotropic ball in the units of X: a box widened by the adversary
        # in one column must not scale that column's noise
        return False

    def _fit_user_means(self, U, budget):
        n, d = U.shape
        k = robust_trim(n, self.corrupted_fraction)
        rho = ZCDP(zcdp_rho_for(budget.epsilon, budget.delta))
        final = 1.0 - (N_STEPS + 1) * QUANTILE_SHARE - N_STEPS * STEP_SHARE
        shares = [QUANTILE_SHARE, STEP_SHARE] * N_STEPS + [QUANTILE_SHARE, final]
        parts = split_zcdp_shares(rho, shares)
        seeds = iter(make_seed_sequence(budget.random_state).spawn(len(parts)))
        center = np.asarray(budget.midpoint, dtype=np.float64)
        r_max = 2.0 * float(np.linalg.norm(budget.half_width))
        radii, losses = [], []
        for t in range(N_STEPS + 1):
            q_part, r_part = parts[2 * t], parts[2 * t + 1]
            eps_q = bounded_range_epsilon(q_part)
            dist = _distances(U, center)
            s = private_quantile(dist, 0.5, eps_q, random_state=next(seeds))
            losses.append(pure_to_zcdp(eps_q, bounded_range=True))
            # the released median is a point of a fixed wide log grid: at few
            # users or a small share it can land far outside the data
            # (measured: 3e44 for data in a box of diameter 35, whose noise
            # then swamped every later step); no user's mean clipped to the
            # box is farther than the box's diameter from a centre in it
            r = min((FINAL_WIDEN if t == N_STEPS else WIDEN) * s, r_max)
            plan = plan_trimmed_mean(n, d, n_trim=k, budget=r_part, radius=r)
            center = trimmed_mean_from_plan(U, plan, center=center,
                                            random_state=next(seeds),
                                            n_jobs=self.n_jobs)
            losses.append(plan.loss)
            radii.append(r)
        self.n_trim_ = k
        self.radii_ = np.array(radii)
        self._noise_error = math.sqrt(d * plan.noise_variance)
        return center, compose(*losses)


def _distances(U, center):
    """ℓ2 distances of the rows of ``U`` to ``center``, finite even where the
    squares overflow (rows divided by their largest entry first; capped at
    the largest float)."""
    with np.errstate(over="ignore", invalid="ignore"):
        D = np.subtract(U, center)
        D = np.nan_to_num(D, posinf=np.finfo(np.float64).max,
                          neginf=-np.finfo(np.float64).max)
        scale = np.max(np.abs(D), axis=1)
        scale[scale == 0] = 1.0
        dist = scale * np.linalg.norm(D / scale[:, None], axis=1)
    return np.minimum(dist, np.finfo(np.float64).max)
