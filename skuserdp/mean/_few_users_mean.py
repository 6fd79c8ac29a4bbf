"""FewUsersBallEstimator: user-level means from few users (EMN Algorithms 1, 2, 4).

Esfandiari, Mirrokni and Narayanan, "Tight and Robust Private Mean
Estimation with Few Users" [EMN22]_, §3.2, Corollary 5 and §4 (Theorem 7);
spec ``emn2021_few_users.md`` §2.2–2.6, §2.11, §6. The sampler, its public
plan and the accuracy bounds are in :mod:`skuserdp.mean._few_users`; its
privacy map in :mod:`skuserdp.privacy._ball_sampler`. This module turns the
declared public knowledge into the sampler's radius, picks the method, and
wraps it as a function and an estimator.
"""

import math
import warnings

import numpy as np
from scipy import stats
from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..base import UserLevelMeanEstimator
from ..exceptions import AccuracyWarning
from ..utils._docstrings import fill_doc
from ..utils._validation import check_center, check_positive_scalar
from ._few_users import (
    ball_sampler,
    interpolated_balls,
    median_of_balls,
    plan_ball_sampler,
    plan_interpolation,
    plan_median_of_balls,
    robust_cap,
)

__all__ = ["few_users_mean", "user_radius", "FewUsersBallEstimator"]

#: "auto" runs a single sampler unless its mean number of rounds exceeds this
AUTO_MAX_ROUNDS = 1e5


def user_radius(radius, samples_per_user, n_users, robustness=0.25):
    """Radius of the user means and the probability that too few are inside.

    With ``m`` rows per user and ``E‖X − μ‖² ≤ r²`` per row (rows of one
    user may be correlated, but ``E⟨X_j − μ, X_k − μ⟩ ≤ r²/m``), a user mean
    is within ``r′ = t·r/√m`` of μ except with probability ``2/t²`` (Markov).
    The algorithm needs a β fraction of all users within ``r′`` after the
    adversary replaced a κ fraction, i.e. a ``1 − η`` fraction before.

    Parameters
    ----------
    radius : float
        Public per-row radius r.
    samples_per_user : int
        Public minimum number of rows per user m.
    n_users : int
        Number of users n.
    robustness : float, default=0.25
        κ (see :func:`skuserdp.mean._few_users.robust_cap`).

    Returns
    -------
    r_user : float
        ``t·r/√m`` (``t = 10`` at κ = 1/4, as in the paper).
    failure : float
        ``P[Bin(n, 1 − 2/t²) < (1 − η)n]``.

    Examples
    --------
    >>> from skuserdp.mean._few_users_mean import user_radius
    >>> r, fail = user_radius(1.0, 10_000, 104)
    >>> r, bool(fail < 0.01)
    (0.1, True)
    """
    _, eta, t = robust_cap(robustness)
    m = int(samples_per_user)
    p_bad = 2.0 / (t * t)
    need = math.ceil((1.0 - eta) * n_users - 1e-9)
    failure = float(stats.binom.cdf(need - 1, int(n_users), 1.0 - p_bad))
    return t * float(radius) / math.sqrt(m), failure


def _plans(n, d, r, epsilon, delta, alpha, robustness, calibration, method):
    """(name, plan) of the method to run; public values only."""
    kwargs = dict(radius=r, epsilon=epsilon, delta=delta, alpha=alpha,
                  robustness=robustness, calibration=calibration)
    if method == "ball":
        return "ball", plan_ball_sampler(n, d, **kwargs)
    if method == "median":
        return "median", plan_median_of_balls(n, d, **kwargs)
    if method == "interpolate":
        return "interpolate", plan_interpolation(n, d, **kwargs)
    # auto: the least error bound among plans meeting alpha (Algorithm 3's
    # k = 1 is Algorithm 1); Algorithm 2 when Algorithm 1 would need more
    # than AUTO_MAX_ROUNDS rounds; else the least failure bound.
    interp = plan_interpolation(n, d, **kwargs)
    if interp.n_blocks_side > 1 and interp.failure_bound <= alpha:
        return "interpolate", interp
    # interp.block is Algorithm 1's plan only when k = 1.
    ball = (interp.block if interp.n_blocks_side == 1
            else plan_ball_sampler(n, d, **kwargs))
    if ball.failure_bound <= alpha and ball.n_rounds <= AUTO_MAX_ROUNDS:
        return "ball", ball
    median = plan_median_of_balls(n, d, **kwargs)
    if median.n_copies > 1 and (median.failure_bound <= alpha
                                or median.failure_bound < ball.failure_bound):
        return "median", median
    return "ball", ball


def few_users_mean(user_means, *, epsilon, delta, radius, samples_per_user=None,
                   alpha=0.1, robustness=0.25, method="auto", calibration="tight",
                   random_state=None, n_jobs=None):
    """Estimate the location of per-user vectors from few users (EMN).

    Parameters
    ----------
    user_means : array-like of shape (n_users, n_features)
        One vector per user. Not modified. Non-finite rows are replaced by
        the origin (a per-user map: that user becomes an outlier).
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)`` (the method needs δ > 0).
    radius : float
        Public radius: per row if ``samples_per_user`` is given (``E‖X −
        μ‖² ≤ r²``), else of the user means (a β fraction within it of an
        unknown point).
    samples_per_user : int, default=None
        Public minimum number of rows per user.
    alpha : float, default=0.1
        Target failure probability.
    robustness : float, default=0.25
        κ: fraction of users an adversary may replace, in ``(0, 1/2)``.
    method : {"auto", "ball", "median", "interpolate"}, default="auto"
        Algorithm 1, 2 or 3; ``"auto"``: Algorithm 3 with ``k > 1`` blocks
        if its error bound is smaller and it meets α, else Algorithm 1,
        unless that needs more than ``AUTO_MAX_ROUNDS`` rounds (then
        Algorithm 2).
    calibration : {"tight", "paper"}, default="tight"
        See :func:`skuserdp.mean._few_users.plan_ball_sampler`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness.
    n_jobs : int, default=None
        Workers over the copies of Algorithm 2 or the blocks of Algorithm 3.

    Returns
    -------
    location : ndarray of shape (n_features,) or None
        The estimate, or None when the mechanism released a garbage bucket.
    loss : ApproxDP
        The user-level privacy loss.
    info : dict
        Public facts of the release: ``method``, ``error_bound`` (radius
        around μ), ``failure_probability`` (bound on the probability of a
        larger error or garbage), ``n_garbage`` (garbage copies, a private
        output).

    Notes
    -----
    The run time depends on the data (few rounds on concentrated data, about
    N on spread data); pad it if the adversary can observe it. Centre the
    data by a *public* reference point when ``|x|/R`` is huge (beyond about
    2^32 the offsets within a ball are no longer representable finely; at
    2^51 the sampler degenerates to the float grid).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import few_users_mean
    >>> U = np.random.default_rng(0).normal(50.0, 0.01, size=(200, 5))
    >>> loc, loss, info = few_users_mean(U, epsilon=1.0, delta=1e-6, radius=0.1,
    ...                                  random_state=0)
    >>> bool(np.linalg.norm(loc - 50.0) <= info["error_bound"])
    True
    """
    if method not in ("auto", "ball", "median", "interpolate"):
        raise ValueError(
            "method must be 'auto', 'ball', 'median' or 'interpolate', got "
            f"{method!r}."
        )
    U = np.array(user_means, dtype=np.float64)  # a copy: rows may be sanitised
    if U.ndim != 2:
        raise ValueError(f"user_means must be 2-d, got shape {U.shape}.")
    if not 0 < delta < 1:
        raise ValueError(
            f"the few-users estimator needs delta in (0, 1), got {delta!r}: its "
            "garbage bucket has mass 4/delta."
        )
    U[~np.isfinite(U).all(axis=1)] = 0.0
    n, d = U.shape
    radius = check_positive_scalar(radius, "radius")
    if samples_per_user is None:
        r, concentration_failure, alpha_item = radius, 0.0, alpha
    else:
        # Spec §2.5: half of α for the sampler, half for the users'
        # concentration (Markov + binomial).
        r, concentration_failure = user_radius(radius, samples_per_user, n, robustness)
        alpha_item = alpha / 2.0
        if not math.isfinite(r):
            raise ValueError(
                f"radius={radius:.3g} is too large: the users' radius 10·radius/"
                "√samples_per_user exceeds the float64 range (about 1.8e308). "
                "Rescale the data (and the radius).")
    name, plan = _plans(n, d, r, epsilon, delta, alpha_item, robustness, calibration,
                        method)
    if name == "ball":
        location, _ = ball_sampler(U, plan, random_state=random_state)
        n_garbage = int(location is None)
    elif name == "interpolate":
        location, n_garbage = interpolated_balls(U, plan, random_state=random_state,
                                                 n_jobs=n_jobs)
    else:
        location, n_garbage = median_of_balls(U, plan, random_state=random_state,
                                              n_jobs=n_jobs)
    failure = min(1.0, plan.failure_bound + concentration_failure)
    info = dict(method=name, error_bound=plan.error_bound,
                failure_probability=failure, n_garbage=n_garbage)
    return location, plan.loss, info


@fill_doc
class FewUsersBallEstimator(UserLevelMeanEstimator):
    """User-level private mean from few users (Esfandiari, Mirrokni, Narayanan).

    Accurate with only ``O(log(1/δ)/ε)`` users, whatever the dimension, and
    robust to a quarter of the users being adversarial. Each user is reduced
    to the mean of its rows. Around every user mean lies a ball of radius
    ``R = max(√d, 2)·r′``; the release is a random point drawn with density
    ``∝ exp(ε_a·min(#balls containing it, βn))`` — or a *garbage bucket* — by
    rejection sampling (Algorithm 1), or the coordinate-wise median of
    several such points (Algorithm 2). No bound on where the mean lies is
    needed, only the concentration radius.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    delta : float, default=1e-6
        Failure probability δ of the user-level guarantee, in ``(0, 1)``; the
        method needs δ > 0 and about ``8 ln(1/δ)/ε`` users.
    radius : float, default=None
        Public concentration radius, required (``fit`` raises without it:
        there is no safe default, and a radius learned from a box would make
        the error bound as large as the box). With ``samples_per_user`` it is the
        per-row radius r (``E‖X − μ‖² ≤ r²``, e.g. ``σ√d`` for Gaussian rows
        or the support radius) and the user means are promised within
        ``10r/√m``; without it, ``radius`` is directly the radius around an
        unknown point containing a β fraction (2/3 at κ = 1/4) of the user
        means. Only accuracy depends on it; never estimate it from the data.
    samples_per_user : int, default=None
        Public minimum number of rows per user m.
    alpha : float, default=0.1
        Target failure probability; sets the mean number of rounds (run
        time) and the number of copies of Algorithm 2. Privacy never depends
        on it. A plan whose mean rounds × users × features exceed
        ``MAX_SAMPLER_WORK`` (1e11, :mod:`skuserdp.mean._few_users`) is
        refused with a ``ValueError`` before sampling.
    robustness : float, default=0.25
        κ in ``(0, 1/2)``: the fraction of users an adversary may replace
        (after seeing the data) without breaking the accuracy guarantee. The
        paper's 1/4 gives the cap 2n/3; κ close to 1/2 needs about
        ``1/(1 − 2κ)`` times more users.
    method : {{"auto", "ball", "median", "interpolate"}}, default="auto"
        ``"ball"``: one run of Algorithm 1 (error ``R + r′``); ``"median"``:
        Algorithm 2, the median of ``k = O(log 1/α)`` runs at a split budget
        (fewer rounds for small α, error ``≈ √6 (R + r′)``, more users
        needed); ``"interpolate"``: Algorithm 3, a random rotation and one
        sampler in each of ``k²`` blocks of coordinates (error
        ``≈ r′√(2 ln(2d′n/α))(1 + √d′/k)``: better than Algorithm 1 once
        ``n ≳ √d·ln(1/δ)^{{3/2}}/ε``); ``"auto"``: the least error bound that
        meets α, with Algorithm 2 instead of 1 when 1 would need more than
        10⁵ rounds.
    {calibration}
        ``"tight"`` uses the exact privacy map of the sampler (about
        ``ε_a = ε/3``) and a number of rounds from a rigorous volume bound;
        ``"paper"`` uses ``ε_a = ε/4`` and the paper's
        ``N = 18e^{{10√ln n}}/α``, clamped to what privacy allows. Both
        correct the paper's δ (the sampler is about ``(3ε_a, 4.25δ_a)``-DP,
        not ``(4ε_a, 4δ_a)``).
    fallback : float or array-like of shape (n_features,), default=None
        Public point reported as ``mean_`` when the mechanism releases a
        garbage bucket; ``None`` is the origin.
    {random_state}
    {n_jobs}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private estimate, or ``fallback`` if ``garbage_``.
    garbage_ : bool
        Whether the mechanism released a garbage bucket (a private output);
        ``fit`` then warns with :class:`~skuserdp.exceptions.AccuracyWarning`.
    error_bound_ : float
        Public radius: with probability at least
        ``1 − failure_probability_`` (under the model), ``mean_`` is within
        ``error_bound_`` of the population mean.
    failure_probability_ : float
        Explicit bound on the probability of a larger error or garbage,
        computed from public values only (with ``samples_per_user``: α/2 is
        planned for the sampler and the users' concentration failure is
        added).
    method_ : {{"ball", "median", "interpolate"}}
        The algorithm run.
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_, delta_ : float
        The (ε, δ) actually spent (``<=`` the targets).
    rho_ : None
        This mechanism has no zCDP guarantee.
    privacy_loss_ : ApproxDP
        The native guarantee of the release.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``. Defined only when ``X`` has
        feature names that are all strings.

    See Also
    --------
    WinsorizedMeanEstimator : Many users, a public box.
    ClipNoiseMeanEstimator : A public ball around a public centre.

    Notes
    -----
    The number of sampler rounds is random and depends on the data (few
    rounds when the users are concentrated, about N when they are spread):
    the *run time* of ``fit`` reveals how concentrated the data are. The
    released values are private; if the time is observable by the adversary,
    pad it (e.g. to a fixed deadline).

    The sampler is private for every n, but accurate only from about
    ``8 ln(1/δ)/ε`` users on (e.g. about 100 at ε = 1, δ = 1e-5, for any d);
    below that ``fit`` warns (:class:`~skuserdp.exceptions.AccuracyWarning`)
    and usually returns the fallback. Algorithms 1 and 2 have the error
    bound ``(max(√d, 2) + 1)·r′``, which does not shrink with n;
    Algorithm 3 (chosen by ``"auto"`` once it is better) shrinks it by up to
    ``√d`` for ``n ≳ √d·ln(1/δ)^{{3/2}}/ε``. This estimator is for few users
    and an unknown location, where clip-and-noise methods need a public
    centre or fail. Centre the data by a public point if ``|x|`` is huge
    compared with ``r′`` (floating point).

    References
    ----------
    Esfandiari, Mirrokni and Narayanan, "Tight and robust private mean
    estimation with few users", ICML 2022 (arXiv:2110.11876).

    Examples
    --------
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import FewUsersBallEstimator
    >>> X, groups, true_mean = make_user_samples(
    ...     n_users=150, n_features=20, samples_per_user=400, mean=700.0,
    ...     user_spread=0.0, sample_spread=1.0, random_state=0)
    >>> est = FewUsersBallEstimator(epsilon=1.0, delta=1e-6,
    ...                             radius=20 ** 0.5, samples_per_user=400,
    ...                             random_state=0).fit(X, groups=groups)
    >>> est.garbage_, bool(np.linalg.norm(est.mean_ - true_mean) <= est.error_bound_)
    (False, True)
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "radius": [None, Interval(Real, 0, None, closed="neither")],
        "samples_per_user": [None, Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "robustness": [Interval(Real, 0, 0.5, closed="neither")],
        "method": [StrOptions({"auto", "ball", "median", "interpolate"})],
        "fallback": [None, Real, "array-like"],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, radius=None, samples_per_user=None,
                 alpha=0.1, robustness=0.25, method="auto", calibration="tight",
                 fallback=None, random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.samples_per_user = samples_per_user
        self.alpha = alpha
        self.robustness = robustness
        self.method = method
        self.calibration = calibration
        self.fallback = fallback
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit_user_means(self, U, budget):
        if self.radius is None:
            raise ValueError(
                f"{type(self).__name__} needs a public radius= of the users' means "
                "(or, with samples_per_user=, of the rows): it is public knowledge "
                "(a physical limit, a codebook range), never read off the data. "
                "Without one, use UserMeanEstimator (it learns a box privately).")
        fallback = check_center(self.fallback, U.shape[1], name="fallback")
        location, loss, info = few_users_mean(
            U, epsilon=budget.epsilon, delta=budget.delta, radius=self.radius,
            samples_per_user=self.samples_per_user, alpha=self.alpha,
            robustness=self.robustness, method=self.method,
            calibration=self.calibration, random_state=budget.random_state,
            n_jobs=self.n_jobs,
        )
        self.garbage_ = location is None
        self.error_bound_ = info["error_bound"]
        self.failure_probability_ = info["failure_probability"]
        self.method_ = info["method"]
        if self.failure_probability_ > self.alpha:
            warnings.warn(
                f"{type(self).__name__}: with {U.shape[0]} users the accuracy "
                f"guarantee holds only with probability "
                f"{1 - self.failure_probability_:.3g} (< 1 - alpha); use more users, "
                "a larger epsilon or delta (the privacy guarantee is unaffected).",
                AccuracyWarning, stacklevel=3,
            )
        if self.garbage_:
            warnings.warn(
                f"{type(self).__name__}: the mechanism released its garbage bucket "
                "(the data were too spread for the radius, or bad luck); mean_ is "
                "the public fallback and garbage_ is True.",
                AccuracyWarning, stacklevel=3,
            )
            return np.array(fallback, dtype=np.float64), loss
        return location, loss
