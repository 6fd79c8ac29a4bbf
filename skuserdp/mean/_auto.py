"""UserMeanEstimator: one entry point that picks a mean estimator.

Not from the papers (:ref:`papers-auto`): a dispatcher over skuserdp's user-level
mean estimators. The choice uses public information only -- the number of
users ``n`` (public under replace-one), the number of features ``d``, ε, δ
and whatever public knowledge is declared (``bounds``, ``radius``,
``center``, ``samples_per_user``, ``moment_order``/``moment_bound``) -- and
never the data, so it costs no privacy. The rule and the measurements behind
it are in the user guide (``docs/mean_estimation.rst``) and
``benchmarks/README.md`` (``bench_means.py``).

The rule (``method="auto"``), issue 28:

1. δ = 0 with a declared moment bound and rows per user:
   :class:`ThreadedClipNoiseEstimator` (the heavy-tail estimator's pure path).
2. A declared clipping ball (``radius`` with ``center``) whose isotropic
   noise is at most the per-column release's in every column:
   :class:`ClipNoiseMeanEstimator`.
3. With δ > 0 and few users for the dimension
   (:func:`coinpress_shrink_ratio` ``> SHRINK_RATIO_MAX``) and a declared
   ``radius``: the ball (:class:`ClipNoiseMeanEstimator` with a ``center``,
   :class:`FewUsersBallEstimator` without).
4. Otherwise, with a box (declared, or ``"auto"``: learned privately):
   :class:`ColumnScaledMeanEstimator`, per-column clip-and-noise in the box's
   own units. It is unbiased whenever the box holds the users' means, its
   bias vanishes as the learned box widens with nε, and its noise is scaled
   to each column. The vector estimators (CoinPress, Winsorized) clip to
   a radius fitted to concentrated users: on real tables -- skewed columns,
   columns in different units -- they lost to it (``bench_real_means.py``).
   They stay one ``method=`` away.
"""

import math
from numbers import Integral, Real

import numpy as np

from sklearn.utils._param_validation import Interval, StrOptions

from ..base import BOUNDS_CONSTRAINTS, CI_CONSTRAINTS, WEIGHT_CONSTRAINTS
from ..privacy import ZCDP, zcdp_rho_for
from ..utils._docstrings import fill_doc
from ..utils._validation import check_center
from ._base import UserLevelMeanEstimator
from ._clip_noise import ClipNoiseMeanEstimator, plan_clip_noise
from ._column_scaled import ColumnScaledMeanEstimator
from ._coinpress import DECLARED_BOX_STEPS, CoinPressMeanEstimator, plan_coinpress
from ._few_users import FewUsersBallEstimator
from ._person_level import ThreadedClipNoiseEstimator
from ._trimmed import TrimmedMeanEstimator
from ._winsorized import WinsorizedMeanEstimator

__all__ = ["UserMeanEstimator", "coinpress_shrink_ratio", "choose_mean_method"]

#: Above this shrink ratio CoinPress's ball cannot shrink reliably.
SHRINK_RATIO_MAX = 0.5

#: the few-users estimator's default robustness (a quarter of the users)
FEW_USERS_ROBUSTNESS = 0.25

_METHODS = {
    "column_scaled": ColumnScaledMeanEstimator,
    "coinpress": CoinPressMeanEstimator,
    "clip_noise": ClipNoiseMeanEstimator,
    "winsorized": WinsorizedMeanEstimator,
    "few_users": FewUsersBallEstimator,
    "threaded": ThreadedClipNoiseEstimator,
    "trimmed": TrimmedMeanEstimator,
}


def coinpress_shrink_ratio(n_users, n_features, epsilon, delta):
    """Noise of one shrinking step relative to the ball, from public values.

    ``a = √(d·v)`` with ``v`` the per-coordinate noise variance of one
    shrinking step of :class:`CoinPressMeanEstimator`'s 8-step plan (its
    default with a declared box) clipped to radius 1 (from
    :func:`plan_clip_noise`; about ``2√d/(n·√(2ρ_step))`` before the lattice
    widening): a step clipped to radius ``r`` releases a centre whose noise
    has norm about ``a·r``, so the ball shrinks by about ``1/(1.2·a)`` per
    step. With a learned box around 0 CoinPress makes 3 releases, whose
    steps get more of the budget each and so shrink at least as well.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    epsilon, delta : float
        The budget (δ in ``(0, 1)``).

    Returns
    -------
    ratio : float
        The noise norm of one step per unit of clipping radius.

    Examples
    --------
    >>> from skuserdp.mean import coinpress_shrink_ratio
    >>> round(coinpress_shrink_ratio(1000, 10, 1.0, 1e-6), 3)
    0.181
    >>> coinpress_shrink_ratio(100, 100, 1.0, 1e-6) > 1
    True
    """
    plan = plan_coinpress(n_users, n_features,
                          budget=ZCDP(zcdp_rho_for(epsilon, delta)),
                          n_steps=DECLARED_BOX_STEPS)
    # the noise of a step clipped to radius 1, from its own plan
    step = plan_clip_noise(n_users, n_features, budget=plan.center_budgets[0],
                           radius=1.0)
    return math.sqrt(n_features * step.noise_variance)


def choose_mean_method(n_users, n_features, epsilon, delta, *, bounds=None,
                       radius=None, center=None, samples_per_user=None,
                       moment_order=None, moment_bound=None, weighted=False):
    """The estimator ``method="auto"`` picks, from public values only.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    epsilon, delta : float
        The budget.
    bounds : "auto", tuple (lower, upper) or None, default=None
        The public box of the users' means, declared or ``"auto"`` (learned
        privately before the release); only whether there is one matters.
    radius : float or None, default=None
        Declared public ℓ2 radius of the users' means (around ``center`` if
        one is declared).
    center : float, array-like or None, default=None
        Declared public location of the users.
    samples_per_user : int or None, default=None
        Declared public number of rows per user.
    moment_order : float or None, default=None
        Declared moment order ``k`` of the rows.
    moment_bound : float or None, default=None
        Declared bound ``M`` on the ``k``-th moment.
    weighted : bool, default=False
        Whether the fit weighs users by their row counts
        (``weighting="auto"`` or ``estimand="row_mean"``): the weights'
        statistics live in the box, so with a box the few-users estimator
        (which has none) is not chosen.

    Returns
    -------
    method : str
        One of ``"column_scaled"``, ``"clip_noise"``,
        ``"few_users"``, ``"threaded"``.
    reason : str
        Why, in one sentence.

    Examples
    --------
    >>> from skuserdp.mean import choose_mean_method
    >>> choose_mean_method(1000, 10, 1.0, 1e-6, bounds=(-100, 100))[0]
    'column_scaled'
    >>> choose_mean_method(100, 100, 1.0, 1e-6, bounds="auto", radius=7.0)[0]
    'few_users'
    """
    bound = bounds
    if bound is None and radius is None:
        raise ValueError("UserMeanEstimator needs public knowledge: declare at least "
                         "bounds= (a box containing the users' means, or 'auto') or "
                         "radius=.")
    if delta == 0:
        if (bound is not None and moment_bound is not None
                and samples_per_user is not None):
            return "threaded", ("pure DP with a declared moment bound and rows per "
                                "user: the heavy-tail estimator's pure path")
        if radius is not None and center is not None and _ball_beats_box(
                radius, bound, n_features):
            return "clip_noise", "pure DP with a declared clipping ball"
        if bound is not None:
            return "column_scaled", "a box: " + COLUMN_SCALED_REASON
        raise ValueError("with delta=0, declare bounds= (or radius= with center=): "
                         "the few-users and CoinPress estimators need delta > 0.")
    ratio = coinpress_shrink_ratio(n_users, n_features, epsilon, delta)
    few = ratio > SHRINK_RATIO_MAX
    size = (f"few users for the dimension (shrink ratio {ratio:.2g} > "
            f"{SHRINK_RATIO_MAX})" if few else
            f"enough users for the dimension (shrink ratio {ratio:.2g} <= "
            f"{SHRINK_RATIO_MAX})")
    if radius is not None and (bound is None or few):
        if center is not None:
            return "clip_noise", size + "; a clipping ball is declared"
        if not (weighted and bound is not None):
            return "few_users", size + "; a radius without a location is declared"
        return "column_scaled", (size + "; but the users are weighted by their "
                                 "row counts, whose statistics need the box "
                                 "(the few-users estimator has none)")
    if radius is not None and center is not None and _ball_beats_box(
            radius, bound, n_features):
        return "clip_noise", (size + "; the declared clipping ball is smaller than "
                              "the box in every column")
    return "column_scaled", "a box: " + COLUMN_SCALED_REASON


#: why a box leads to :class:`ColumnScaledMeanEstimator`
COLUMN_SCALED_REASON = (
    "per-column clip-and-noise in the box's own units, unbiased whenever the "
    "box holds the users' means, with noise scaled to each column's width (on "
    "real tables the vector estimators, whose clipping assumes concentrated "
    "users, lost to it: benchmarks/README.md, bench_real_means.py)")


def _ball_beats_box(radius, bounds, n_features):
    """Whether a declared ball's noise (isotropic, ∝ 2·radius) is at most the
    per-column release's in every column (∝ √d·width_j): public values only."""
    if bounds is None:
        return True
    if isinstance(bounds, str):  # a learned box: its widths are not known yet
        return False
    lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), (n_features,))
                    for b in bounds)
    return bool(2.0 * radius <= math.sqrt(n_features) * float(np.min(upper - lower)))


@fill_doc
class UserMeanEstimator(UserLevelMeanEstimator):
    """User-level private mean that picks the estimator for you.

    Declare what you know publicly -- ``bounds`` (a box containing
    the users' means, as loose as you like) or ``radius`` -- and
    ``method="auto"`` chooses among :class:`ColumnScaledMeanEstimator`,
    :class:`ClipNoiseMeanEstimator`, :class:`FewUsersBallEstimator` and
    :class:`ThreadedClipNoiseEstimator` (:class:`CoinPressMeanEstimator` and
    :class:`WinsorizedMeanEstimator` are one ``method=`` away)
    from public values only (``n_users``, ``n_features``, ε, δ and the
    declared knowledge), so the choice costs no privacy. The rule, and the
    measurements it rests on, are in the user guide ("Choosing a mean
    estimator").

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    {delta}
    method : {{"auto", "column_scaled", "coinpress", "clip_noise", "winsorized", \
"few_users", "threaded", "trimmed"}}, default="auto"
        The estimator, or ``"auto"`` for the rule.
    {bounds}
    {bounds_share}
    radius : float, default=None
        Public ℓ2 radius of the users' means: around ``center`` if one is
        declared (a clipping ball), else around their unknown mean.
    center : float or array-like of shape (n_features,), default=None
        Public centre of a declared clipping ball (with ``radius``);
        ``None``: the midpoint of the box. Must not be computed from the
        private data.
    samples_per_user : int, default=None
        Public number of rows per user (the heavy-tail and Winsorized
        estimators use it; the few-users estimator does not: its ``radius``
        here is already the users' means', not a per-row radius).
    moment_order, moment_bound : float, default=None
        Public bound ``M`` on the ``k``-th moment of the rows around the mean
        (the heavy-tail estimator).
    corrupted_fraction : float, default=0.0
        Public upper bound, in ``[0, 1/2)``, on the fraction of users whose
        data may be arbitrary (adversarial or broken devices); the error is
        then measured to the clean users' mean. With ``method="auto"`` and
        ``corrupted_fraction > 0`` the rule picks
        :class:`TrimmedMeanEstimator` (trimming ``⌈αn⌉`` users per
        side: its error does not grow with the adversary's distance,
        ``benchmarks/bench_robust.py``), except where it picks the few-users
        estimator, which is then run with this robustness (at least its
        default 1/4). ``0`` leaves the rule unchanged.
    {ci_share}
    {weighting}
    calibration : {{"tight"}}, default="tight"
        zCDP accounting with optimal conversions, passed to the estimator
        chosen (CoinPress has no ``"paper"`` setting).
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {mean_}
    method_ : str
        The estimator used.
    reason_ : str
        Why it was chosen.
    estimator_ : estimator
        The fitted estimator it delegated to, with its own attributes (e.g.
        ``radii_`` of CoinPress, ``garbage_`` of the few-users estimator).
    {noise_std_}
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_, delta_, rho_ : float
        The privacy spent (``rho_`` None for a pure (ε, δ) loss).
    privacy_loss_ : PureDP, ApproxDP or ZCDP
        The native guarantee of the chosen estimator.
    {feature_attributes}

    See Also
    --------
    choose_mean_method : The rule, as a function of public values.

    Examples
    --------
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import UserMeanEstimator
    >>> X, groups, true_mean = make_user_samples(n_users=2000, n_features=3,
    ...                                          mean=0.5, random_state=0)
    >>> est = UserMeanEstimator(epsilon=1.0, delta=1e-6, bounds=(-5, 5),
    ...                         random_state=0).fit(X, groups=groups)
    >>> est.method_, bool(np.abs(est.mean_ - 0.5).max() < 0.25)
    ('column_scaled', True)
    >>> est.conf_int().shape  # 95 % user-level intervals, one row per feature
    (3, 2)
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "method": [StrOptions({"auto", *_METHODS})],
        **BOUNDS_CONSTRAINTS,
        "radius": [None, Interval(Real, 0, None, closed="neither")],
        "center": [None, Real, "array-like"],
        "samples_per_user": [None, Interval(Integral, 1, None, closed="left")],
        "moment_order": [None, Interval(Real, 2, None, closed="left")],
        "moment_bound": [None, Interval(Real, 0, None, closed="neither")],
        "corrupted_fraction": [Interval(Real, 0, 0.5, closed="left")],
        "calibration": [StrOptions({"tight"})],
        **CI_CONSTRAINTS,
        **WEIGHT_CONSTRAINTS,
    }

    #: the largest minimum of the estimators it may delegate to
    _min_users = max(cls._min_users for cls in _METHODS.values())

    def __init__(self, epsilon=1.0, delta=1e-6, *, method="auto", bounds="auto",
                 bounds_share=None, radius=None, center=None, samples_per_user=None,
                 moment_order=None, moment_bound=None, corrupted_fraction=0.0,
                 ci_share="auto", weighting="equal", estimand="user_mean",
                 max_rows=None, weights_share="auto", calibration="tight",
                 random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.weighting = weighting
        self.estimand = estimand
        self.max_rows = max_rows
        self.weights_share = weights_share
        self.method = method
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.radius = radius
        self.center = center
        self.samples_per_user = samples_per_user
        self.moment_order = moment_order
        self.moment_bound = moment_bound
        self.corrupted_fraction = corrupted_fraction
        self.ci_share = ci_share
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _delegate(self, name):
        """The chosen estimator, built from the declared knowledge."""
        common = dict(epsilon=self.epsilon, delta=self.delta, bounds=self.bounds,
                      bounds_share=self.bounds_share,
                      random_state=self.random_state, n_jobs=self.n_jobs)
        if name == "column_scaled":
            kw = {}
        elif name == "coinpress":
            kw = dict(radius=None)
        elif name == "clip_noise":
            kw = dict(radius=self.radius, center=self.center)
        elif name == "winsorized":
            kw = dict(samples_per_user=self.samples_per_user)
        elif name == "trimmed":
            kw = dict(corrupted_fraction=self.corrupted_fraction)
        elif name == "few_users":
            # no box: the few-users estimator needs no location. Its radius
            # is the users' means' (not per row), so samples_per_user, which
            # would make it a per-row radius, is not passed.
            del common["bounds"], common["bounds_share"]
            kw = dict(radius=self.radius,
                      robustness=max(FEW_USERS_ROBUSTNESS, self.corrupted_fraction))
        else:
            kw = dict(moment_order=self.moment_order or 2.0,
                      moment_bound=self.moment_bound,
                      samples_per_user=self.samples_per_user or 1)
        if "weighting" in _METHODS[name]._parameter_constraints:
            kw.update(weighting=self.weighting, estimand=self.estimand,
                      max_rows=self.max_rows, weights_share=self.weights_share)
        if "ci_share" in _METHODS[name]._parameter_constraints:
            # the delegate reports the interval this fit's ci_share released
            kw["ci_share"] = self.ci_share
        est = _METHODS[name](**common, **kw)
        est._validate_params()
        return est

    def _prepare(self, n_users, n_features):
        """Choose the method (public values only) and build the delegate."""
        if self.center is not None:  # (refused even where the method ignores it)
            check_center(self.center, n_features)
        if self.method == "auto":
            method, reason = choose_mean_method(
                n_users, n_features, self.epsilon, self.delta, bounds=self.bounds,
                radius=self.radius, center=self.center,
                samples_per_user=self.samples_per_user,
                moment_order=self.moment_order, moment_bound=self.moment_bound,
                weighted=self.weighting == "auto" or self.estimand == "row_mean")
            if self.corrupted_fraction > 0 and method != "few_users":
                method, reason = "trimmed", (
                    f"corrupted_fraction={self.corrupted_fraction:g} > 0: the "
                    "robust trimmed mean (its error does not grow with the "
                    "corrupted users' distance)")
        else:
            method, reason = self.method, "chosen by the user"
        self._delegate_, self._method, self._reason = (self._delegate(method), method,
                                                       reason)

    def _needs_bounds(self):
        return self._delegate_._needs_bounds()

    def _offers_interval(self):
        return self._delegate_._offers_interval()

    def _interval_unavailable(self):
        return self._delegate_._interval_unavailable()

    def _interval_geometry(self, budget):
        return self.estimator_._interval_geometry(budget)

    def _set_fitted(self, mean, n_users, loss):
        super()._set_fitted(mean, n_users, loss)
        # the delegate reports the whole fit too: its spend and its interval
        est = self.estimator_
        est._set_spend(loss)
        # the whole fit's estimate (mapped back from the weighted users when
        # the users were weighted) and its weighting
        est.mean_ = self.mean_
        for name in ("weighting_", "weights_share_", "weighting_reason_",
                     "bucket_weights_", "weighting_status_"):
            if name in self.__dict__:
                setattr(est, name, getattr(self, name))
        est._interval_state = self._interval_state
        if hasattr(self, "ci_share_"):
            est.ci_share_ = self.ci_share_
        if hasattr(self, "_no_interval_reason"):
            est._no_interval_reason = self._no_interval_reason
        return self

    def _zcdp_accounting(self, n_users, n_features):
        return self._delegate_._zcdp_accounting(n_users, n_features)

    def _scales_box(self):
        return self._delegate_._scales_box()

    def _approx_bounds_accounting(self):
        return self._delegate_._approx_bounds_accounting()

    def _fit_user_means(self, U, budget):
        n, d = U.shape
        est = self._delegate_
        del self._delegate_
        if hasattr(self, "feature_names_in_"):  # its warnings name the columns
            est.feature_names_in_ = self.feature_names_in_
        mean, loss = est._fit_user_means(U, budget)
        noise_error = est.__dict__.pop("_noise_error", None)
        if noise_error is not None:
            self._noise_error = noise_error
        # the delegate, fitted (its own attributes: radii_, garbage_, tau_...)
        est.n_features_in_ = d
        full = budget.total_loss(loss)
        est._set_fitted(budget.to_natural(mean), n, full)
        est.bounds_ = budget.natural_bounds
        self.estimator_, self.method_, self.reason_ = est, self._method, self._reason
        return mean, loss
