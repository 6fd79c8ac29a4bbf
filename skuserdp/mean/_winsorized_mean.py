"""WinsorizedMeanEstimator and adaptive queries (Levy et al., Alg. 1–2, Thm 10).

Levy et al., "Learning with User-Level Privacy" [LSA+21]_, §3 (Algorithms 1
and 2, Theorems 1 and 2, Corollaries 1 and 5) and Appendix D.6 (Theorem 10);
spec ``levy2021_user_level_learning.md`` §3.2–3.6, §6.2. The algorithm, its
two calibrations and the privacy proof sketch are in
:mod:`skuserdp.mean._winsorized`; the rules for τ in
:mod:`skuserdp.mean._concentration`. This module resolves τ, splits the
budget, and wraps the core as a function, an estimator and a query engine.
"""

import math
import warnings

import numpy as np
from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..base import BOUNDS_CONSTRAINTS, UserLevelMeanEstimator
from ..exceptions import AccuracyWarning
from ..privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    adaptive_query_budget,
    compose,
    compose_adaptive_queries,
    pure_to_zcdp,
    split_off,
    zcdp_rho_for,
)
from ..utils._docstrings import fill_doc
from ..utils._numeric import stable_norm
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_bound
from ._concentration import (
    private_tau,
    private_tau_feasible,
    tau_bounded_rows,
    tau_grid,
    tau_sub_gaussian,
)
from ._winsorized import plan_winsorized_mean, winsorized_mean_from_plan

__all__ = ["winsorized_mean", "answer_adaptive_queries", "WinsorizedMeanEstimator"]

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
        warnings.warn(
            f"With {plan.n_users} users, the range step of this plan misses the "
            f"bulk of some of its {plan.n_padded} coordinates with probability up to "
            f"{bound:.2g} > gamma={gamma:g}: the estimate can be far off (the "
            "privacy guarantee is unaffected). calibration='tight' avoids this, "
            "or use more users or a larger epsilon.",
            AccuracyWarning, stacklevel=3,
        )


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
                     random_state, n_jobs):
    """:func:`winsorized_mean`, returning the plan (with τ and the route)."""
    U = np.asarray(user_means, dtype=np.float64)
    if U.ndim != 2:
        raise ValueError(f"user_means must be 2-d, got shape {U.shape}.")
    n_users, n_features = U.shape
    b = check_bound(bound, n_features)
    value_range = _value_range(b)
    U = np.clip(U, -b, b)  # per-user projection onto the public box: free
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
            tau_value = private_tau(U, eps_tau, value_range=value_range, gamma=gamma,
                                    rng=generator_from(tau_seed))
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
    mean = winsorized_mean_from_plan(U, plan, random_state=run_seed, n_jobs=n_jobs)
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
    mean_ : ndarray of shape (n_features,)
        The private user-level mean.
    bounds_ : tuple (lower, upper)
        The box used (declared, or learned privately).
    tau_ : float
        The concentration radius used (public, from a rule, or the private
        estimate, which is itself a private output).
    route_ : {"pure", "zcdp", "paper", "box-pure", "box-zcdp"}
        The release plan: Laplace with basic composition, discrete Gaussian
        with zCDP, the paper's plan, or clip-and-noise on the public box
        without a range step (see ``calibration``). A function of public
        values and ``tau_`` only.
    noise_std_ : float
        Standard deviation of the release's noise on each feature of
        ``mean_``, from the public plan (no privacy cost; clipping bias not
        included): ``mean_ ± 1.96·noise_std_`` is the noise's 95 % range.
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
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``. Defined only when ``X`` has
        feature names that are all strings.

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
    }

    def __init__(self, epsilon=1.0, delta=0.0, *, tau="auto", bounds="auto",
                 bounds_share=None, samples_per_user=None, sub_gaussian_sigma=None,
                 tau_share=0.1,
                 gamma=0.01, calibration="tight", random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
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

    def _fit_user_means(self, U, budget):
        # the box is centred at the origin for the pure core
        mid = budget.midpoint
        mean, loss, plan = _winsorized_mean(
            U - mid,
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
