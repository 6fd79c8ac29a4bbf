"""UserDPSGDRegressor and UserDPSGDClassifier (Levy et al., Algorithms 3 and 4).

Levy et al., "Learning with User-Level Privacy" [LSA+21]_ §4 (Algorithm 3,
Theorem 3), §5.1 (Algorithm 4, Theorem 4); spec
``levy2021_user_level_learning.md`` §3.7–3.9, §6. The optimisation core is
:mod:`skuserdp.linear_model._sgd`; this module turns rows, targets and user
ids into per-user average gradients and public constants.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets

from ..exceptions import ClassesFromDataWarning
from ..mean._concentration import tau_gradients
from ..privacy import ZCDP, compose, split_zcdp
from ..utils._docstrings import fill_doc
from ..utils._random import make_seed_sequence
from ._base import _UserDPLinearModel, project_rows, user_averaging_matrix
from ._losses import get_loss
from ._sgd import (
    phased_erm,
    plan_gradient_descent,
    plan_phased_erm,
    private_gradient_descent,
)
from ._standardize import (
    check_standardize_bounds,
    private_standardization,
    standardized_row_bound,
)

__all__ = ["UserDPSGDRegressor", "UserDPSGDClassifier"]


def _user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs):
    """``users -> (theta -> per-user average gradients)`` of the data term."""
    A_all = user_averaging_matrix(codes, n_users)

    def for_users(users=None):
        if users is None:
            A, rows = A_all, slice(None)
        else:
            rows = np.flatnonzero(np.isin(codes, users))
            A = A_all[users][:, rows]
        Xr, yr = Xa[rows], y[rows]

        def gradients(theta):
            W = theta.reshape(n_outputs, -1)
            F = loss.residual_factor(Xr @ W.T, yr)  # (rows, n_outputs)
            return np.hstack([A @ (F[:, [k]] * Xr) for k in range(n_outputs)])

        return gradients

    return for_users


class _BaseUserDPSGD(_UserDPLinearModel):
    """Shared fit logic of the DP-SGD regressor and classifier."""

    _parameter_constraints: dict = {
        **_UserDPLinearModel._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "radius": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "aggregator": [StrOptions({"clip", "winsorized"})],
        "clip_norm": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions({"gd", "phased_erm"})],
        "learning_rate": [StrOptions({"auto"}),
                          Interval(Real, 0, None, closed="neither")],
        "sampling_rate": [None, Interval(Real, 0, 1, closed="right")],
        "tau": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "samples_per_user": [None, Interval(Integral, 1, None, closed="left")],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        "standardize": ["boolean"],
        "standardize_share": [Interval(Real, 0, 1, closed="neither")],
        "standardize_bounds": [None, "array-like"],
        "verbose": ["verbose"],
    }

    def _public_constants(self, loss, target_bound, row_bound):
        b = row_bound
        G = loss.gradient_bound(b, target_bound, self.radius)
        H = loss.smoothness(b) + self.alpha
        return G, H

    def _tau(self, G, H, n_params):
        """The public τ of the per-user gradients (winsorized aggregator)."""
        if self.aggregator != "winsorized":
            return None
        if self.tau != "auto":
            return float(self.tau)
        if self.samples_per_user is None:
            raise ValueError(
                "aggregator='winsorized' with tau='auto' derives the concentration "
                "radius of user gradients from the public number of rows per user: "
                "set samples_per_user (the smallest number of rows any user has, "
                "known without looking at the data) or a float tau."
            )

        def tau(n_users):
            # α = γ/3 as in the proof of Theorem 3 ([E13]).
            return tau_gradients(G, H, self.radius, n_params, self.samples_per_user,
                                 n_users, self.gamma / 3.0)

        return tau

    def _check_sampling(self):
        if self.sampling_rate is not None and self.sampling_rate < 1:
            if self.aggregator != "clip" or self.solver != "gd":
                raise ValueError(
                    "Poisson user sampling (sampling_rate) is available with "
                    "aggregator='clip' and solver='gd' only."
                )
            if self.delta == 0:
                raise ValueError("Poisson user sampling needs delta > 0.")
            return float(self.sampling_rate)
        return None

    def _check_standardize(self):
        problems = [text for bad, text in (
            (not self.fit_intercept, "fit_intercept=True (the centring moves "
                                     "into the intercept)"),
            (self.delta == 0, "delta > 0 (the budget is split in zCDP)"),
            (self.calibration != "tight", "calibration='tight' (zCDP accounting)"),
            (self.sampling_rate is not None and self.sampling_rate < 1,
             "no Poisson user sampling (its accounting is not zCDP)"),
        ) if bad]
        if problems:
            raise ValueError("standardize=True needs " + "; ".join(problems) + ".")

    def _fit_model(self, loss, X, y, codes, n_users, n_outputs, target_bound):
        """Fit on the public-bounded rows (optionally privately standardised);
        return ``(coef, intercept)`` of shapes ``(n_outputs, n_features)`` and
        ``(n_outputs,)`` on the scale of ``X``."""
        if not self.standardize:
            W = self._fit_parameters(loss, self._augment(X), y, codes, n_users,
                                     n_outputs, target_bound)
            return self._set_coef(W)
        self._check_standardize()
        X = project_rows(X, self.feature_bound)
        lower, upper = check_standardize_bounds(self.standardize_bounds, X.shape[1],
                                                self.feature_bound)
        pre_budget, eps_rest = split_zcdp(self.epsilon, self.delta,
                                          self.standardize_share)
        seed_scale, seed_fit = make_seed_sequence(self.random_state).spawn(2)
        center, scale, pre_loss = private_standardization(
            X, codes, n_users, budget=pre_budget, lower=lower, upper=upper,
            random_state=seed_scale, n_jobs=self.n_jobs)
        bound = standardized_row_bound(X.shape[1])
        Z = project_rows((np.clip(X, lower, upper) - center) / scale, bound)
        Za = np.hstack([Z, np.ones((Z.shape[0], 1))])
        W = self._fit_parameters(loss, Za, y, codes, n_users, n_outputs,
                                 target_bound, epsilon=eps_rest,
                                 row_bound=float(np.hypot(bound, 1.0)),
                                 random_state=seed_fit, pre_loss=pre_loss)
        coef = W[:, :-1] / scale
        self.feature_center_, self.feature_scale_ = center, scale
        return coef, W[:, -1] - coef @ center

    def _fit_parameters(self, loss, Xa, y, codes, n_users, n_outputs, target_bound,
                        *, epsilon=None, row_bound=None, random_state=None,
                        pre_loss=None):
        """Plan and run the private optimisation; return the parameter matrix.

        ``epsilon``, ``row_bound`` and ``random_state`` override the
        estimator's (after a private standardisation whose loss ``pre_loss``
        is composed into the spend).
        """
        epsilon = self.epsilon if epsilon is None else epsilon
        row_bound = self._row_bound if row_bound is None else row_bound
        random_state = self.random_state if random_state is None else random_state
        n_params = n_outputs * Xa.shape[1]
        G, H = self._public_constants(loss, target_bound, row_bound)
        tau = self._tau(G, H, n_params)
        sampling_rate = self._check_sampling()
        clip = None if self.clip_norm == "auto" else float(self.clip_norm)
        lr = None if self.learning_rate == "auto" else float(self.learning_rate)
        users_fn = _user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs)
        penalty = self._penalty_gradient(n_outputs, Xa.shape[1])
        theta0 = np.zeros(n_params)
        if self.solver == "gd":
            plan = plan_gradient_descent(
                n_users, n_params, epsilon=epsilon, delta=self.delta,
                n_steps=self.max_iter, aggregator=self.aggregator,
                gradient_bound=G, smoothness=H, radius=self.radius, clip_norm=clip,
                tau=tau(n_users) if callable(tau) else tau, gamma=self.gamma,
                sampling_rate=sampling_rate, learning_rate=lr,
                calibration=self.calibration)
            self._check_plan_loss(plan, pre_loss)
            theta = private_gradient_descent(
                users_fn(), plan, theta0=theta0, penalty_gradient=penalty,
                random_state=random_state, n_jobs=self.n_jobs,
                verbose=self.verbose, label=type(self).__name__)
        else:
            if lr is not None:
                raise ValueError("solver='phased_erm' sets its own step sizes: use "
                                 "learning_rate='auto'.")
            plan = plan_phased_erm(
                n_users, n_params, epsilon=epsilon, delta=self.delta,
                aggregator=self.aggregator, gradient_bound=G, smoothness=H,
                radius=self.radius, samples_per_user=self.samples_per_user or 1,
                max_iter=self.max_iter, clip_norm=clip, tau=tau, gamma=self.gamma,
                calibration=self.calibration)
            self._check_plan_loss(plan, pre_loss)
            theta = phased_erm(users_fn, plan, theta0=theta0,
                               penalty_gradient=penalty,
                               random_state=random_state, n_jobs=self.n_jobs,
                               verbose=self.verbose)
        self.n_iter_ = plan.n_steps
        self.n_users_ = n_users
        self._set_spend(plan.loss if pre_loss is None
                        else compose(pre_loss, plan.loss))
        return theta.reshape(n_outputs, -1)

    @staticmethod
    def _check_plan_loss(plan, pre_loss):
        if pre_loss is not None and not isinstance(plan.loss, ZCDP):
            raise ValueError(
                "standardize=True composes in zCDP, but this configuration plans "
                f"a {type(plan.loss).__name__} loss; use aggregator='clip'.")

    def _penalty_gradient(self, n_outputs, n_cols):
        if self.alpha == 0:
            return None
        mask = np.ones((n_outputs, n_cols))
        if self.fit_intercept:
            mask[:, -1] = 0.0  # the intercept is not penalised
        mask = mask.ravel()
        alpha = float(self.alpha)
        return lambda theta: alpha * mask * theta


_COMMON_PARAMS = """\
    alpha : float, default=0.0
        Strength of the L2 penalty ``alpha/2·‖coef‖²`` (the intercept is not
        penalised). Its gradient is public and added after each private
        release.
    fit_intercept : bool, default=True
        Whether to fit an intercept (the model then acts on ``(x, 1)``).
    feature_bound : float, default=1.0
        Public bound on the ℓ2 norm of every row of ``X``; rows are projected
        onto this ball at fit and predict time. Scale features with *public*
        ranges first (see the Notes).
    radius : float, default=5.0
        Radius R of the public parameter ball ``‖(coef, intercept)‖₂ ≤ R``;
        every iterate is projected onto it.
    max_iter : int, default=100
        Number T of gradient steps (a public choice, never a data-driven
        stopping rule); with ``solver="phased_erm"`` the cap per phase.
    aggregator : {"clip", "winsorized"}, default="clip"
        How each step's mean of the per-user average gradients is released:
        ``"clip"`` clips them to ``clip_norm`` and adds discrete Gaussian
        noise (user-level DP-SGD); ``"winsorized"`` is Levy et al.'s
        Algorithm 3 (WinsorizedMean with a fresh random rotation per step),
        whose noise scales with the concentration radius ``tau`` of user
        gradients instead of the clip norm — it pays off when users have
        many rows.
    clip_norm : float or "auto", default="auto"
        ``aggregator="clip"``: public ℓ2 clip radius C of the per-user average
        gradients. ``"auto"`` is the public gradient bound G (no clipping
        bias, but G is often far larger than typical gradients; a smaller C
        trades bias for much less noise).
    solver : {"gd", "phased_erm"}, default="gd"
        ``"gd"``: projected gradient descent with the step sizes of spec
        §3.7 and averaged iterates. ``"phased_erm"``: Levy et al.'s
        Algorithm 4 (disjoint user blocks of halving size, regularised
        towards the previous phase with ``λ_t = 4^t·λ``; each phase uses the
        whole budget by parallel composition).
    learning_rate : float or "auto", default="auto"
        ``"auto"``: ``η = 1/(H + ν√T/R)`` from the public smoothness H and
        the data-independent noise level ν of the released gradients, with
        the average of the last half of the iterates. A float is a constant
        step size (same averaging).
    sampling_rate : float, default=None
        Poisson user sampling (``aggregator="clip"``, ``solver="gd"``): each
        step uses every user independently with this public probability and
        divides by the public expected count. Accounted with privacy loss
        distributions by the optional dp-accounting package
        (``pip install "skuserdp[accounting]"``); the noise of this route is
        floating-point Gaussian. ``None`` uses all users in every step.
    tau : float or "auto", default="auto"
        ``aggregator="winsorized"``: public concentration radius of the
        per-user average gradients. ``"auto"`` uses Proposition 1's radius
        (spec §3.8), which needs ``samples_per_user``.
    samples_per_user : int, default=None
        Public minimum number of rows per user (``tau="auto"`` and Phased
        ERM's constants). Never read it off the data.
    gamma : float, default=0.01
        ``aggregator="winsorized"``: failure probability of the accuracy
        guarantee (utility only).
    standardize : bool, default=False
        Privately centre and scale every feature before the optimisation
        (see "Private standardisation" in the Notes): two clip-and-noise
        releases, of the users' feature means and of their mean absolute
        deviations, spend ``standardize_share`` of the budget (in zCDP); the
        model is fitted on the standardised rows and mapped back, so
        ``coef_`` and ``intercept_`` act on ``X`` as given. Worth it when
        the public bounds are loose and the features' spreads differ a lot.
        Needs ``fit_intercept=True``, ``delta > 0``, ``calibration="tight"``
        and no ``sampling_rate``.
    standardize_share : float, default=0.2
        Fraction in (0, 1) of the zCDP budget ``ρ(ε, δ)`` spent on the
        standardisation (half on the centres, half on the spreads).
    standardize_bounds : (lower, upper), default=None
        Public per-feature bounds used by the standardisation (floats or
        arrays of shape ``(n_features,)``); values outside are clipped.
        ``None`` is ``[−feature_bound, feature_bound]`` for every feature;
        tighter public per-feature ranges make the releases more accurate.
    {calibration}
    {random_state}
    {n_jobs}
    verbose : int, default=0
        ``> 0`` prints the step number of every step (no private values)."""

_COMMON_ATTRS = """\
    n_iter_ : int
        Number of gradient steps run (public: fixed by the parameters, never
        by a convergence test).
    n_users_ : int
        Number of users.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.
    privacy_loss_ : ZCDP, ApproxDP or PureDP
        The composed privacy loss of the fit.
    epsilon_, delta_ : float
        That loss as (ε, δ) (zCDP converted at ``delta``); at most the
        targets.
    rho_ : float or None
        The zCDP ρ spent, when the loss is zCDP or pure.
    feature_center_, feature_scale_ : ndarray of shape (`n_features_in_`,)
        With ``standardize=True`` only: the private centres and spreads
        (user-level DP releases, part of the spend)."""

_NOTES = """\
    The fit sees the data only through one private mean of the users'
    average gradients per step; projections, step sizes, averaging and the
    penalty are post-processing. Nothing non-private is stored: no loss
    curve, no count of clipped users.

    **Scaling without leaking.** ``feature_bound`` and ``target_bound`` must
    be public. Fitting a ``StandardScaler`` or ``MinMaxScaler`` on the private
    data is itself a leak (its means, variances or extremes are published in
    the scaler and shape the model). Scale by *public* ranges instead — from
    a codebook, a survey design or domain knowledge — e.g. ``x ↦ (x −
    mid)/halfrange`` per feature, then divide by ``√n_features`` so that
    every row has norm at most 1 (``feature_bound=1``). A
    ``FunctionTransformer`` with those constants does it inside a Pipeline.

    **Private standardisation** (``standardize=True``, an OUR CHOICE step,
    not from the papers). Clipped isotropic noise is only as good as the
    geometry of the features: with loose public ranges the small-spread
    features drown in it. The estimator then releases per-feature centres
    ``m̂`` (mean of the users' means, rows clipped to the public box) and
    spreads ``ŝ = √(π/2)·`` mean of the users' mean absolute deviations from
    ``m̂``, each at half of ``standardize_share·ρ``. A released deviation is
    floored at two standard deviations of its own (public) noise, and the
    spread at 5% of the public half-range: an under-estimated spread would
    inflate the feature's curvature past the step size. It then fits on
    ``z = (x − m̂)/ŝ`` with rows projected onto the ball of radius
    ``3√n_features`` (``radius``, ``alpha`` and ``clip_norm`` then act on the
    standardised scale) with the remaining ``(1 − standardize_share)·ρ``, and
    maps the model back. On the wage panel (545 persons) at ε = 1 it lifts the
    median R² from 0.07 to 0.156 (OLS 0.187; ``benchmarks/README.md``).

    Repeated fits on the same users (grid search, cross-validation) compose:
    their privacy losses add up. To choose hyper-parameters privately use
    :func:`skuserdp.model_selection.select_model_privately` on held-out
    users."""


@fill_doc
class UserDPSGDRegressor(RegressorMixin, _BaseUserDPSGD):
    __doc__ = """User-level private linear regression by gradient descent.

    Projected (full-batch) gradient descent on the squared or Huber loss
    whose every step releases a private mean of the users' average
    gradients (Levy et al., Algorithm 3, or clipped user-level DP-SGD), and
    optionally Phased ERM (Algorithm 4).

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    {delta}
    loss : {"squared_error", "huber"}, default="squared_error"
        ``0.5·(xᵀw + b − y)²`` or the Huber loss with threshold
        ``huber_delta``.
    huber_delta : float, default=1.35
        Threshold of the Huber loss (in target units).
    target_bound : float, default=1.0
        Public bound on ``|y|``; targets are clipped to it.
""" + _COMMON_PARAMS + """

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The private coefficients.
    intercept_ : float
        The private intercept (0.0 when ``fit_intercept=False``).
""" + _COMMON_ATTRS + """

    See Also
    --------
    UserDPLinearRegression : One-shot sufficient-statistics regression.
    UserDPSGDClassifier : The logistic counterpart.

    Notes
    -----
""" + _NOTES + """

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.linear_model import UserDPSGDRegressor
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(2000), 10)
    >>> X = rng.uniform(-0.5, 0.5, size=(20000, 2))
    >>> y = X @ [0.8, -0.4] + 0.1 + 0.05 * rng.normal(size=20000)
    >>> reg = UserDPSGDRegressor(epsilon=1.0, clip_norm=0.5, max_iter=200,
    ...                          random_state=0).fit(X, y, groups=groups)
    >>> reg.coef_.round(1), round(reg.intercept_, 1)
    (array([ 0.8, -0.4]), 0.1)
    >>> reg.epsilon_ <= 1.0
    True
    """

    _parameter_constraints: dict = {
        **_BaseUserDPSGD._parameter_constraints,
        "loss": [StrOptions({"squared_error", "huber"})],
        "huber_delta": [Interval(Real, 0, None, closed="neither")],
        "target_bound": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, loss="squared_error",
                 huber_delta=1.35, target_bound=1.0, alpha=0.0, fit_intercept=True,
                 feature_bound=1.0, radius=5.0, max_iter=100, aggregator="clip",
                 clip_norm="auto", solver="gd", learning_rate="auto",
                 sampling_rate=None, tau="auto", samples_per_user=None, gamma=0.01,
                 standardize=False, standardize_share=0.2, standardize_bounds=None,
                 calibration="tight", random_state=None, n_jobs=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.loss = loss
        self.huber_delta = huber_delta
        self.target_bound = target_bound
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.feature_bound = feature_bound
        self.radius = radius
        self.max_iter = max_iter
        self.aggregator = aggregator
        self.clip_norm = clip_norm
        self.solver = solver
        self.learning_rate = learning_rate
        self.sampling_rate = sampling_rate
        self.tau = tau
        self.samples_per_user = samples_per_user
        self.gamma = gamma
        self.standardize = standardize
        self.standardize_share = standardize_share
        self.standardize_bounds = standardize_bounds
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, groups=None):
        """Fit the private linear model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of all users. Not modified.
        y : array-like of shape (n_samples,)
            Targets. Not modified.
        groups : array-like of shape (n_samples,), default=None
            User id of every row; the unit of privacy. ``None`` treats every
            row as its own user and emits an
            :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y, codes, n_users = self._validate_supervised(X, y, groups)
        loss = get_loss(self.loss, huber_delta=self.huber_delta)
        yc = np.clip(y.astype(np.float64), -self.target_bound, self.target_bound)
        coef, intercept = self._fit_model(loss, X, yc, codes, n_users, 1,
                                          self.target_bound)
        self.coef_ = coef[0]
        self.intercept_ = float(intercept[0])
        return self

    def predict(self, X):
        """Predict with the private model (rows projected onto the feature ball).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predictions.
        """
        return self._decision(X)[:, 0]

    def score(self, X, y, sample_weight=None, *, groups=None):
        """R² of the predictions on held-out rows.

        The score uses the held-out data without noise: it is for evaluation
        on synthetic, public or held-out data; choosing hyper-parameters with
        it on private data is not differentially private.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Held-out rows.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.
        groups : array-like of shape (n_samples,), default=None
            Ignored (R² is a row-level score); accepted so that metadata
            routing, which sends ``groups`` to ``score``, works.

        Returns
        -------
        score : float
            The coefficient of determination.
        """
        return RegressorMixin.score(self, X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


@fill_doc
class UserDPSGDClassifier(ClassifierMixin, _BaseUserDPSGD):
    __doc__ = """User-level private logistic regression by gradient descent.

    Binary logistic or multinomial (softmax) regression trained by projected
    gradient descent whose every step releases a private mean of the users'
    average gradients (Levy et al., Algorithm 3, or clipped user-level
    DP-SGD), optionally by Phased ERM (Algorithm 4).

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    {delta}
    classes : array-like, default=None
        The public set of labels. ``None`` reads it from ``y``, which
        publishes the label set without privacy and emits a
        :class:`~skuserdp.exceptions.ClassesFromDataWarning`.
""" + _COMMON_PARAMS + """

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        The private coefficients (one row for two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        The private intercepts.
""" + _COMMON_ATTRS + """

    See Also
    --------
    UserDPSGDRegressor : The regression counterpart.

    Notes
    -----
    The per-row loss is the logistic loss (gradient bound ``‖x̃‖``,
    smoothness ``‖x̃‖²/4``) or, for more than two classes, the softmax
    cross-entropy (``√2‖x̃‖`` and ``‖x̃‖²/2``).

""" + _NOTES + """

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.linear_model import UserDPSGDClassifier
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(2000), 10)
    >>> X = rng.uniform(-0.7, 0.7, size=(20000, 2))
    >>> y = (X @ [3.0, -3.0] + rng.logistic(size=20000) > 0).astype(int)
    >>> clf = UserDPSGDClassifier(epsilon=1.0, classes=[0, 1], max_iter=200,
    ...                           random_state=0).fit(X, y, groups=groups)
    >>> clf.score(X, y) > 0.75
    True
    """

    _parameter_constraints: dict = {
        **_BaseUserDPSGD._parameter_constraints,
        "classes": [None, "array-like"],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, classes=None, alpha=0.0,
                 fit_intercept=True, feature_bound=1.0, radius=5.0, max_iter=100,
                 aggregator="clip", clip_norm="auto", solver="gd",
                 learning_rate="auto", sampling_rate=None, tau="auto",
                 samples_per_user=None, gamma=0.01, standardize=False,
                 standardize_share=0.2, standardize_bounds=None, calibration="tight",
                 random_state=None, n_jobs=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.feature_bound = feature_bound
        self.radius = radius
        self.max_iter = max_iter
        self.aggregator = aggregator
        self.clip_norm = clip_norm
        self.solver = solver
        self.learning_rate = learning_rate
        self.sampling_rate = sampling_rate
        self.tau = tau
        self.samples_per_user = samples_per_user
        self.gamma = gamma
        self.standardize = standardize
        self.standardize_share = standardize_share
        self.standardize_bounds = standardize_bounds
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _classes(self, y):
        if self.classes is not None:
            classes = np.unique(np.asarray(self.classes))
            unknown = ~np.isin(y, classes)
            if unknown.any():
                raise ValueError(
                    "y contains labels that are not in the declared classes "
                    f"{classes.tolist()}.")
            return classes
        warnings.warn(
            f"{type(self).__name__}: classes=None, so the set of labels was read "
            "from y and is published in classes_ without privacy (a label held by "
            "a single user reveals that user). Declare the public label set with "
            "classes=[...].",
            ClassesFromDataWarning, stacklevel=4)
        return np.unique(y)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, groups=None):
        """Fit the private classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of all users. Not modified.
        y : array-like of shape (n_samples,)
            Labels. Not modified.
        groups : array-like of shape (n_samples,), default=None
            User id of every row; the unit of privacy. ``None`` treats every
            row as its own user and emits an
            :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y, codes, n_users = self._validate_supervised(X, y, groups,
                                                         y_numeric=False)
        check_classification_targets(y)
        classes = self._classes(y)
        if classes.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 classes; got "
                f"{classes.shape[0]} class.")
        self.classes_ = classes
        y_code = np.searchsorted(classes, y).astype(np.float64)
        loss = get_loss("log_loss", n_classes=classes.shape[0])
        n_outputs = loss.n_outputs(classes.shape[0])
        self.coef_, self.intercept_ = self._fit_model(loss, X, y_code, codes,
                                                      n_users, n_outputs, 1.0)
        return self

    def decision_function(self, X):
        """Confidence scores (rows projected onto the feature ball).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``xᵀw + b`` (one column for two classes).
        """
        scores = self._decision(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the classes in the order of ``classes_``.
        """
        scores = self._decision(X)
        if scores.shape[1] == 1:
            p = expit(scores[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predictions.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y, sample_weight=None, *, groups=None):
        """Accuracy of the predictions on held-out rows.

        The score uses the held-out data without noise: it is for evaluation
        on synthetic, public or held-out data; choosing hyper-parameters with
        it on private data is not differentially private.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Held-out rows.
        y : array-like of shape (n_samples,)
            Their labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.
        groups : array-like of shape (n_samples,), default=None
            Ignored (accuracy is a row-level score); accepted so that
            metadata routing, which sends ``groups`` to ``score``, works.

        Returns
        -------
        score : float
            The fraction of correctly classified rows.
        """
        return ClassifierMixin.score(self, X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
