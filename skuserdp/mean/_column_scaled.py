"""Per-column clip-and-noise mean in the box's own units.

Not from the papers: the simplest honest baseline on tables whose columns
have different units. Each user's mean is clipped to the public box (declared,
or learned privately) and mapped to ``[-1, 1]`` per column, the scaled means
are averaged with noise of the same size in every column, and the result is
mapped back: a column in ``[0, 1]`` is never drowned by a column in
``[0, 20000]``. With ``delta=0`` this is Laplace noise with ε/d per column;
with ``delta > 0`` the public plan picks Laplace (pure ε, per column) or the
joint Gaussian (one release of all columns, zCDP) by which has the smaller
noise: Laplace's variance grows as d², the Gaussian's as d, so the Gaussian
wins from about 9 to 11 columns at ε = 1, δ = 1e-6 (spec
``real_data_means.md`` §1.3; measured in ``tests/mean/test_column_scaled.py``).

The unit of privacy is the user: two datasets are neighbours when they
differ in all rows of one user, with the number of users public.
"""

import math

from sklearn.utils._param_validation import StrOptions

from ..base import BOUNDS_CONSTRAINTS
from ..privacy import ApproxDP, PureDP
from ._base import UserLevelMeanEstimator
from ._clip_noise import clip_noise_from_plan, plan_clip_noise

__all__ = ["ColumnScaledMeanEstimator"]


class ColumnScaledMeanEstimator(UserLevelMeanEstimator):
    """User-level private mean, with noise scaled to each column's box.

    Each user's mean is clipped to the box ``bounds`` and mapped to
    ``[-1, 1]`` per column; the mean of the scaled users' means is released
    with discrete Laplace (``delta=0``) or discrete Gaussian noise on an
    exact lattice, equal in every scaled column, and mapped back to the
    units of ``X``. With ``delta > 0`` and ``noise="auto"`` the public plan
    (``n_users``, ``n_features``, ε, δ: never the data) picks whichever of the
    two has the smaller noise variance; the pure-ε Laplace release then
    spends only ε (its δ is 0). Two datasets are neighbours when they differ in all rows
    of one user (replace-one, number of users public).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter ε, ``> 0``.
    delta : float, default=1e-6
        Privacy parameter δ in ``[0, 1)``; ``0`` gives pure ε-DP.
    bounds : "auto" or (lower, upper), default="auto"
        The public box of the users' means, in the units of ``X``; ``"auto"``
        learns it privately from a ``bounds_share`` of the budget.
    bounds_share : float, default=None
        Share of the budget for ``bounds="auto"``.
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        The noise: discrete Laplace with ε/d per column (pure ε-DP), or one
        discrete Gaussian release of all columns (``delta > 0`` only);
        ``"auto"`` picks the one with the smaller variance from the public
        plan (Laplace when ``delta == 0``).
    calibration : {"tight", "paper"}, default="tight"
        Calibration of the Gaussian noise for ``delta > 0``.
    random_state : int, RandomState, SeedSequence or None, default=None
        ``None`` draws fresh OS entropy; an int is for tests.
    n_jobs : int, default=None
        Parallel jobs (unused: the release is one vector).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private mean of the users' means.
    bounds_ : tuple of ndarray
        The box used (declared, or released).
    noise_ : {"laplace", "gaussian"}
        The noise used.
    n_users_ : int
        Number of users.
    privacy_loss_ : PureDP, ApproxDP or ZCDP
        The privacy spent; ``epsilon_``, ``delta_``, ``rho_`` report it.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import ColumnScaledMeanEstimator
    >>> rng = np.random.default_rng(0)
    >>> users = np.repeat(np.arange(4000), 5)
    >>> X = np.column_stack([rng.uniform(0, 1, users.size),
    ...                      rng.uniform(0, 20000, users.size)])
    >>> est = ColumnScaledMeanEstimator(bounds=([0, 0], [1, 20000]),
    ...                                 random_state=0).fit(X, groups=users)
    >>> bool(np.abs(est.mean_ / [0.5, 10000] - 1).max() < 0.01)
    True
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        **BOUNDS_CONSTRAINTS,
        "noise": [StrOptions({"auto", "laplace", "gaussian"})],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, bounds="auto", bounds_share=None,
                 noise="auto", calibration="tight", random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.noise = noise
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit_user_means(self, U, budget):
        n, d = U.shape
        mid, half = budget.midpoint, budget.half_width
        scaled = (U - mid) / half  # the box is [-1, 1] in every column
        self.noise_, plan = choose_column_noise(
            n, d, budget.epsilon, budget.delta, noise=self.noise,
            calibration=self.calibration)
        z = clip_noise_from_plan(scaled.clip(-1.0, 1.0), plan,
                                 random_state=budget.random_state)
        return mid + half * z, plan.loss


#: lattice points per radius of the per-column release: the deterministic
#: rounding of a user's scaled mean then moves it by about 2^-24 of its box,
#: so a column whose mean sits near a box edge (a count of 30 in [0, 5000])
#: is not biased by the rounding (the default 2^10 gave -1.9 % at ε = 1000 on
#: such a column of bench_real_means.py)
RESOLUTION = 2.0 ** 24


def choose_column_noise(n_users, n_features, epsilon, delta, *, noise="auto",
                        calibration="tight"):
    """The per-column release's noise and plan, from public values only.

    In the box scaled to ``[-1, 1]`` per column: discrete Laplace with ε/d per
    column (pure ε, ℓ1 ball of radius d around the centre: the box) or one
    discrete Gaussian release of all columns at (ε, δ) (ℓ2 ball of radius
    √d: the box's corners). ``"auto"`` takes the smaller noise variance.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    epsilon, delta : float
        The budget of the release.
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        ``"gaussian"`` needs ``delta > 0``.
    calibration : {"tight", "paper"}, default="tight"
        Gaussian calibration.

    Returns
    -------
    noise : {"laplace", "gaussian"}
        The noise chosen.
    plan : ClipNoisePlan
        Its plan (radius √d in the scaled box).

    Examples
    --------
    >>> from skuserdp.mean._column_scaled import choose_column_noise
    >>> choose_column_noise(1000, 2, 1.0, 1e-6)[0]
    'laplace'
    >>> choose_column_noise(1000, 20, 1.0, 1e-6)[0]
    'gaussian'
    """
    radius = math.sqrt(n_features)
    if noise == "gaussian" and delta == 0:
        raise ValueError("noise='gaussian' needs delta > 0; with delta=0 the "
                         "release is pure ε-DP (noise='laplace').")
    plans = {}
    if noise in ("auto", "laplace"):
        plans["laplace"] = plan_clip_noise(n_users, n_features,
                                           budget=PureDP(epsilon), radius=radius,
                                           resolution=RESOLUTION)
    if noise in ("auto", "gaussian") and delta > 0:
        plans["gaussian"] = plan_clip_noise(
            n_users, n_features, budget=ApproxDP(epsilon, delta), radius=radius,
            calibration=calibration, resolution=RESOLUTION)
    name = min(plans, key=lambda k: plans[k].noise_variance)
    return name, plans[name]
