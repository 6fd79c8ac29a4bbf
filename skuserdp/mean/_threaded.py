"""ThreadedClipNoiseEstimator: person-level means under bounded k-th moments.

Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman [AKM+24]_: the 1-D pure
ε-DP estimator (§3, Theorem 3.14) and the (ε, δ) estimator of Algorithm 4
(coordinate-wise coarse estimation, Threaded Clip-and-Noise, final
clip-and-noise; §4); spec ``akmmsu2024_person_level.md`` §2.1–2.7. The
algorithms are in :mod:`skuserdp.mean._person_level`; this module is the
estimator.
"""

import warnings

import numpy as np

from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..base import BOUNDS_CONSTRAINTS, UserLevelMeanEstimator
from ..utils._docstrings import fill_doc
from ._person_level import person_level_mean, person_level_mean_per_feature
from ._person_level_pure import person_level_mean_pure

__all__ = ["ThreadedClipNoiseEstimator"]


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
    {bounds_share}
    method : {"auto", "pure"}, default="auto"
        ``"auto"``: Algorithm 4 (δ > 0, several features), the 1-D estimator
        (δ > 0, one feature) or the 1-D estimator per feature with ε/d
        (δ = 0). ``"pure"``: Algorithm 8 of the paper (``delta=0``, at most
        two features; exact scores, about 10⁵ comparisons for two features,
        each a pass over the users — seconds to minutes). It is there as the
        paper's reference pure-DP estimator: with the paper's grids it was
        measured 4–6× less accurate than ``"auto"`` (``benchmarks/README.md``).
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
    bounds_ : tuple (lower, upper)
        The box used (declared, or learned privately).
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
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string names only).

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
    }
    _min_users = 3

    def __init__(self, epsilon=1.0, delta=1e-6, *, moment_order=2.0,
                 moment_bound=None, samples_per_user=1, n_threads="auto",
                 bounds="auto", bounds_share=None, method="auto", calibration="tight",
                 random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
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

    def _fit_user_means(self, U, budget):
        n, d = U.shape
        eps, delta = budget.epsilon, budget.delta
        # centre the data at the box's midpoint: the paper's bound R on |mu_j|
        mid = budget.midpoint
        bound = float(np.max(budget.half_width))
        U = U - mid
        moment_bound = self.moment_bound
        if self.method == "pure":
            if self.delta != 0:
                raise ValueError(
                    "method='pure' is the paper's pure ε-DP estimator: set delta=0."
                )
            if d > 2:
                raise ValueError(
                    f"method='pure' is limited to 2 features (got {d}): its cost "
                    "grows like (16√d)^(2d) comparisons (10^8 at d = 3). Use "
                    "method='auto' (one pure 1-D estimate per feature) or delta > 0."
                )
            mean, loss, info = person_level_mean_pure(
                U, epsilon=eps, bound=bound,
                moment_bound=moment_bound, samples_per_user=self.samples_per_user,
                moment_order=self.moment_order, calibration=self.calibration,
                random_state=budget.random_state, n_jobs=self.n_jobs)
            self.radii_ = [info["rho"]]
            return mid + mean, loss
        if d == 1 or self.delta == 0:
            # One feature, or pure DP: the 1-D pipeline per feature with ε/d
            # (basic composition; d = 1 spends ε).
            mean, loss, info = person_level_mean_per_feature(
                U, epsilon=eps, delta=delta, bound=bound,
                moment_order=self.moment_order, moment_bound=moment_bound,
                samples_per_user=self.samples_per_user, calibration=self.calibration,
                random_state=budget.random_state)
            self.radii_ = [info["radius"]]
            return mid + mean, loss
        if self.delta >= 1.0 / n:
            warnings.warn(
                f"delta={self.delta:g} is not below 1/n_users = {1 / n:.3g}: the "
                "guarantee allows releasing a user's data outright.",
                UserWarning, stacklevel=3)
        mean, loss, info = person_level_mean(
            U, epsilon=eps, delta=delta, moment_order=self.moment_order,
            moment_bound=moment_bound, samples_per_user=self.samples_per_user,
            n_threads=self.n_threads, bound=bound, calibration=self.calibration,
            random_state=budget.random_state)
        self.radii_ = list(info["radii"]) + [info["final_radius"]]
        return mid + mean, loss
