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
from dataclasses import dataclass

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..base import BOUNDS_CONSTRAINTS, CI_CONSTRAINTS, WEIGHT_CONSTRAINTS
from ..exceptions import AccuracyWarning
from ..mechanisms import add_noise, calibrate_noise
from ..privacy import (
    ApproxDP,
    ZCDP,
    PureDP,
    compose,
    histogram_pass_threshold,
    replace_one_count_sensitivity,
    split_off,
    split_zcdp,
)
from ..utils._docstrings import fill_doc
from ..utils._random import make_seed_sequence
from ..utils._validation import feature_labels
from ..utils._warnings import warn_at_caller
from ._base import UserLevelMeanEstimator
from ._clip_noise import clip_noise_from_plan, plan_clip_noise

__all__ = ["ColumnScaledMeanEstimator"]


@fill_doc
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
    check_clipping : bool, default=True
        With a declared box and enough users for the count to be informative
        (its noise's tail at most ``CLIP_CHECK_MAX_SD`` of the users), spend
        ``CLIP_CHECK_SHARE`` of the budget on a private count, per column, of
        the users whose mean lies outside the box, and warn
        (:class:`~skuserdp.exceptions.AccuracyWarning`, naming the columns)
        where their clipping may bias the estimate by more than its noise.
        Never run on a learned box (its edges are placed by the data).
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        The noise: discrete Laplace with ε/d per column (pure ε-DP), or one
        discrete Gaussian release of all columns (``delta > 0`` only);
        ``"auto"`` picks the one with the smaller variance from the public
        plan (Laplace when ``delta == 0``).
    ci_share : "auto" or float, default="auto"
        Share of the budget (of ρ under zCDP accounting, of ε otherwise)
        spent in ``fit`` on the private statistics of :meth:`conf_int` and
        ``bse_`` (a private scale and variance of the users' clipped means).
        ``"auto"`` picks it from public values: the smallest share in
        [0.05, 0.25] whose scale step can pass a quarter of the users. ``0``
        releases none: the whole budget goes to the mean and ``conf_int`` is
        unavailable. The interval covers the mean of the users' means
        clipped to the box: the population mean when the declared box is the
        data's public range (with ``bounds="auto"``, ``conf_int`` warns that
        it covers only the clipped mean).
    {weighting}
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
    noise_std_ : ndarray of shape (n_features,)
        Standard deviation of the release's noise in each feature, in the
        units of ``X``, from the public plan. It covers the privacy noise
        only: not the clipping bias (see ``clipped_users_``) nor the sampling
        of the users.
    clipped_users_ : ndarray of shape (n_features,)
        Released (noisy) count of users whose mean lies outside the declared
        box, per feature; only when the check ran.
    clipped_users_std_ : float
        Standard deviation of the noise of each of those counts.
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
        "check_clipping": ["boolean"],
        **CI_CONSTRAINTS,
        **WEIGHT_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, bounds="auto", bounds_share=None,
                 check_clipping=True, noise="auto", ci_share="auto", weighting="equal",
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
        self.check_clipping = check_clipping
        self.noise = noise
        self.ci_share = ci_share
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _zcdp_accounting(self, n_users, n_features):
        # with delta > 0 a learned box and the release are one zCDP pipeline
        # (the Gaussian histogram at a share of rho, then the Gaussian
        # release): splitting (epsilon, delta) instead, for a Laplace release,
        # leaves the histogram a rho quadratically smaller in its share (T-M1
        # with no bounds then refused in 5 of 10 fits); with a declared box
        # the release picks its noise alone
        if self.delta == 0 or self.noise == "laplace":
            return False
        return self._learns_box() or choose_column_noise(
            n_users, n_features, self.epsilon, self.delta, noise=self.noise,
            calibration=self.calibration)[0] == "gaussian"

    def _approx_bounds_accounting(self):
        # noise="laplace" with delta > 0 and a learned box: the box is a zCDP
        # release at a share of (epsilon, delta), the release pure
        return self.delta > 0

    def _learns_box(self):
        return isinstance(self.bounds, str) and self.bounds == "auto"

    def _fit_user_means(self, U, budget):
        # the base runs this in the box's coordinates scaled to [-1, 1] per
        # column (UserLevelMeanEstimator._scaled_user_means) and maps the result back
        n, d = U.shape
        scaled = U
        declared = budget.bounds_loss is None
        noise = self.noise
        if isinstance(budget.bounds_loss, ZCDP):
            noise = "gaussian"  # one zCDP pipeline (see _zcdp_accounting)
        plan = plan_column_scaled(
            n, d, budget.epsilon, budget.delta, noise=noise,
            calibration=self.calibration,
            check_clipping=declared and self.check_clipping)
        self.noise_ = plan.noise
        seed = budget.random_state
        if plan.check is not None:
            seed, seed_check = make_seed_sequence(seed).spawn(2)
            outside = np.count_nonzero(np.abs(scaled) > 1.0, axis=0)
            noisy = add_noise(outside.astype(np.int64), plan.check, seed_check)
            self._warn_clipped(noisy, plan, n)
        else:
            self.__dict__.pop("clipped_users_", None)
            self.__dict__.pop("clipped_users_std_", None)
        z = clip_noise_from_plan(scaled.clip(-1.0, 1.0), plan.release,
                                 random_state=seed)
        self._noise_error = math.sqrt(d * plan.release.noise_variance)
        return z, plan.loss

    def _interval_geometry(self, budget):
        # every user's mean is clipped to the box, [-1, 1]^d here
        return {"geometry": "box"}

    def _warn_clipped(self, noisy, plan, n):
        """Record the released counts of users outside the declared box, and
        warn where the count exceeds ``plan.clip_warn_users`` by more than its
        noise's tail ``plan.clip_noise_tail`` (a false warning in some column
        with probability at most ``CLIP_CHECK_BETA``): if those users lie a
        box's width outside on average, the clipping bias of the column
        exceeds its noise."""
        self.clipped_users_ = noisy.astype(np.float64)
        self.clipped_users_std_ = float(plan.check.std)
        low = self.clipped_users_ - plan.clip_noise_tail
        cut = np.flatnonzero(low > plan.clip_warn_users)
        if cut.size:
            names = getattr(self, "feature_names_in_", None)
            shares = ", ".join(f"{100 * max(c, 0.0) / n:.0f} %"
                               for c in self.clipped_users_[cut])
            warn_at_caller(
                f"{type(self).__name__}: the declared bounds cut the users' means "
                f"of feature(s) {feature_labels(cut, names)}: about {shares} of "
                "the users lie outside (a private count, clipped_users_), enough "
                "for the clipping bias to exceed the noise there. Widen those "
                "bounds (in the units of X) or use bounds='auto'.", AccuracyWarning)


#: lattice points per radius of the per-column release: the deterministic
#: rounding of a user's scaled mean then moves it by about 2^-24 of its box,
#: so a column whose mean sits near a box edge (a count of 30 in [0, 5000])
#: is not biased by the rounding (the default 2^10 gave -1.9 % at ε = 1000 on
#: such a column of bench_real_means.py)
RESOLUTION = 2.0 ** 24


#: share of the budget of the clipped-users check (when it runs)
CLIP_CHECK_SHARE = 0.05

#: the check runs when its noise's tail (in users, over the d counts at
#: ``CLIP_CHECK_BETA``) is at most this fraction of the users: it can then
#: see about a tenth of them clipped
CLIP_CHECK_MAX_SD = 0.1

#: probability that the check warns about some column no user is outside of
CLIP_CHECK_BETA = 1e-3


@dataclass(frozen=True)
class ColumnScaledPlan:
    """Every public quantity of one per-column release.

    Attributes
    ----------
    noise : {"laplace", "gaussian"}
        The noise of the release.
    release : ClipNoisePlan
        The mean's release in the box scaled to ``[-1, 1]``.
    check : DiscreteLaplaceNoise, DiscreteGaussianNoise or None
        The noise of the clipped-users counts (None: no check).
    clip_warn_users : float
        ``max(1, n·s/2)`` users outside (``s`` the scaled noise standard
        deviation; half the width is 1): if they lie a box width outside on
        average, their clipping bias exceeds the noise.
    clip_noise_tail : int
        The count's noise exceeds this in some column with probability at most
        ``CLIP_CHECK_BETA`` (:func:`skuserdp.privacy.histogram_pass_threshold`
        over the d counts): the warning needs the released count to exceed
        ``clip_warn_users`` by this much, so it is false at most that often.
    loss : PureDP or ZCDP
        The privacy loss of the whole release.
    """

    noise: str
    release: object
    check: object
    clip_warn_users: float
    clip_noise_tail: int
    loss: object


def plan_column_scaled(n_users, n_features, epsilon, delta, *, noise="auto",
                       calibration="tight", check_clipping=True):
    """Plan the per-column release (and its clipped-users check) from public values.

    The noise is chosen on the whole budget (:func:`choose_column_noise`).
    The check, when asked for and informative (its count noise at most
    ``CLIP_CHECK_MAX_SD·n_users``), takes ``CLIP_CHECK_SHARE`` of it: of ε
    with Laplace (discrete Laplace on the counts, ℓ1 sensitivity d), of ρ
    with the Gaussian (discrete Gaussian, ℓ2 sensitivity √d:
    :func:`skuserdp.privacy.replace_one_count_sensitivity`); the release
    gets the rest. Replace-one user level, number of users public.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    epsilon, delta : float
        The budget of the whole release.
    noise : {"auto", "laplace", "gaussian"}, default="auto"
    calibration : {"tight", "paper"}, default="tight"
    check_clipping : bool, default=True

    Returns
    -------
    plan : ColumnScaledPlan

    Examples
    --------
    >>> from skuserdp.mean._column_scaled import plan_column_scaled
    >>> plan = plan_column_scaled(10000, 4, 1.0, 1e-6)
    >>> plan.noise, plan.check is not None, round(plan.loss.epsilon, 9)
    ('laplace', True, 1.0)
    >>> plan_column_scaled(2000, 4, 1.0, 1e-6).check is None  # too few users
    True
    """
    name, full = choose_column_noise(n_users, n_features, epsilon, delta,
                                     noise=noise, calibration=calibration)
    check = None
    if check_clipping:
        try:
            check, release, sens, tail = _plan_check(n_users, n_features, epsilon,
                                                     delta, name, calibration)
        except (ValueError, OverflowError):  # e.g. ε so small that a part is 0
            check = None
    if check is None:
        release, tail, loss = full, None, full.loss
    else:
        loss = compose(check.privacy(sens), release.loss)
    warn_users = max(1.0, n_users * math.sqrt(release.noise_variance) / 2.0)
    return ColumnScaledPlan(name, release, check, warn_users, tail, loss)


def _noise_tail(noise, n_counts):
    """What the noise of one of ``n_counts`` counts exceeds in some count with
    probability at most ``CLIP_CHECK_BETA``."""
    if hasattr(noise, "sigma2"):
        return histogram_pass_threshold(math.sqrt(noise.sigma2), n_counts,
                                        CLIP_CHECK_BETA, kind="gaussian")
    return histogram_pass_threshold(float(noise.scale), n_counts, CLIP_CHECK_BETA,
                                    kind="laplace")


def _plan_check(n_users, n_features, epsilon, delta, name, calibration):
    """The check's noise, the release's plan on the rest, the count's
    sensitivity and the noise's tail; all ``None`` when the check would not
    be informative."""
    if name == "laplace":
        eps_check, rest = split_off(PureDP(epsilon), CLIP_CHECK_SHARE)
        check_budget = PureDP(eps_check)
        sens = replace_one_count_sensitivity(n_features, "l1")
    else:
        check_budget, rest_eps = split_zcdp(epsilon, delta, CLIP_CHECK_SHARE)
        rest = ApproxDP(rest_eps, delta)
        sens = replace_one_count_sensitivity(n_features, "l2")
    check = calibrate_noise(check_budget, sens)
    tail = _noise_tail(check, n_features)
    if tail > CLIP_CHECK_MAX_SD * n_users:
        return None, None, None, None
    return check, _plan_release(n_users, n_features, rest, calibration), sens, tail


def _plan_release(n_users, n_features, budget, calibration):
    """The release in the scaled box on the fine lattice, or on the default
    one when the noise in fine-lattice units would not fit int64 sums (tiny
    ε): the rounding is then far below the noise anyway."""
    kw = dict(budget=budget, radius=math.sqrt(n_features), calibration=calibration)
    plan = plan_clip_noise(n_users, n_features, resolution=RESOLUTION, **kw)
    if plan.noise.std > 2.0 ** 40:
        plan = plan_clip_noise(n_users, n_features, **kw)
    return plan


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
    check_clipping : bool, default=True
        With a declared box and enough users for the count to be informative
        (its noise's tail at most ``CLIP_CHECK_MAX_SD`` of the users), spend
        ``CLIP_CHECK_SHARE`` of the budget on a private count, per column, of
        the users whose mean lies outside the box, and warn
        (:class:`~skuserdp.exceptions.AccuracyWarning`, naming the columns)
        where their clipping may bias the estimate by more than its noise.
        Never run on a learned box (its edges are placed by the data).
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
    if noise == "gaussian" and delta == 0:
        raise ValueError("noise='gaussian' needs delta > 0; with delta=0 the "
                         "release is pure ε-DP (noise='laplace').")
    plans = {}
    if noise in ("auto", "laplace"):
        plans["laplace"] = _plan_release(n_users, n_features, PureDP(epsilon),
                                         calibration)
    if noise in ("auto", "gaussian") and delta > 0:
        plans["gaussian"] = _plan_release(n_users, n_features,
                                          ApproxDP(epsilon, delta), calibration)
    name = min(plans, key=lambda k: plans[k].noise_variance)
    return name, plans[name]
