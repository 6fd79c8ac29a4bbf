"""The template of every user-level mean estimator.

:class:`UserLevelMeanEstimator` holds what every mean estimator shares: the
users' means of ``fit``'s input (:func:`skuserdp.users._resolve.fit_user_means`:
validation, the loud warnings when ``groups`` is missing, per-user
aggregation in memory or on Dask), the public box (declared, or learned
privately and charged: :func:`skuserdp.mechanisms.learn_box_for_fit`), the
fitted spend attributes, the post-processing warnings and ``score``. A
subclass implements ``_fit_user_means(U, budget)`` only (the docs' page
"Adding an estimator" walks through one).

The unit of privacy is the user: two datasets are neighbours when they
differ in all rows of one user, with the number of users public.
"""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils.validation import check_is_fitted

from ..base import (
    BUDGET_CONSTRAINTS,
    UserLevelMixin,
    _box_half_width,
    _box_midpoint,
    check_estimand,
)
from ..exceptions import AccuracyWarning
from ..mechanisms import learn_box_for_fit
from ..inference import ConfidenceIntervalMixin
from ..privacy import ApproxDP, PureDP, compose, compose_spend, split_off, split_zcdp
from ..users._resolve import fit_user_table, held_out_user_means
from ..utils._numeric import quiet_floating_point, stable_norm
from ..utils._random import fit_random_state, make_seed_sequence
from ..utils._validation import check_bounds, feature_labels
from ..utils._warnings import warn_at_caller

__all__ = ["FitBudget", "UserLevelMeanEstimator"]


@dataclass(frozen=True)
class FitBudget:
    """What one fit's release may use once the public bounds are resolved.

    Attributes
    ----------
    epsilon, delta : float
        The budget left for the estimator's own release.
    lower, upper : ndarray of shape (n_features,) or None
        The box of the users' means: declared, or learned privately (then
        charged in ``bounds_loss``); ``None`` when the estimator needs none.
    random_state : object
        The seed of the estimator's own release (independent of the bounds
        step's seed).
    bounds_loss : PureDP, ZCDP or None
        The privacy loss of learning the box, ``None`` when it was declared.
    total_delta : float
        The δ of the whole fit (the estimator's ``delta``).
    """

    epsilon: float
    delta: float
    lower: object = None
    upper: object = None
    random_state: object = None
    bounds_loss: object = None
    total_delta: float = 0.0
    natural_lower: object = None
    natural_upper: object = None

    @property
    def natural_bounds(self):
        """The box in the units of ``X`` (declared or released), ``None``
        without one: ``(lower, upper)`` unless this budget is the scaled one
        of :meth:`UserLevelMeanEstimator._scaled_user_means`, whose box is
        ``[-1, 1]^d`` and whose natural box is kept here."""
        if self.natural_lower is not None:
            return self.natural_lower, self.natural_upper
        return None if self.lower is None else (self.lower, self.upper)

    def to_natural(self, z):
        """A point of this budget's coordinates in the units of ``X``:
        ``mid + half·z`` for the scaled budget (post-processing with the
        public box), ``z`` itself otherwise."""
        if self.natural_lower is None:
            return z
        lo, hi = self.natural_lower, self.natural_upper
        return _box_midpoint(lo, hi) + _box_half_width(lo, hi) * np.asarray(z)

    def total_loss(self, loss):
        """The loss of the whole fit: the bounds step's composed with ``loss``.

        ``compose`` when the two kinds compose directly; otherwise (a pure
        bounds step before an estimator whose plan, from public values, chose
        a zCDP route) :func:`~skuserdp.privacy.compose_spend`, an (ε, δ) at
        the fit's δ that never exceeds the pure ε plus the zCDP release's
        conversion, so it stays within the requested budget.

        Parameters
        ----------
        loss : PureDP, ApproxDP or ZCDP
            The estimator's own release.

        Returns
        -------
        loss : PureDP, ApproxDP or ZCDP
        """
        if self.bounds_loss is None:
            return loss
        try:
            return compose(self.bounds_loss, loss)
        except TypeError:  # pure and zCDP: no direct composition
            return compose_spend([self.bounds_loss, loss], self.total_delta)

    @property
    def midpoint(self):
        """Centre of the box."""
        return _box_midpoint(self.lower, self.upper)

    @property
    def half_width(self):
        """Half-width of the box in every coordinate (at least ``2^-256``, the
        grid's smallest step, so that norms and squares stay positive)."""
        return _box_half_width(self.lower, self.upper)

    @property
    def half_diagonal(self):
        """ℓ2 norm of :attr:`half_width`, the radius of the ball through the
        box's corners (without overflow: boxes as wide as ``±1e300`` work).

        Raises a ``ValueError`` when it exceeds the float64 range."""
        radius = stable_norm(self.half_width)
        if not math.isfinite(radius):
            raise ValueError(
                "bounds are too wide: the half-diagonal of the box (the radius "
                "of the ball through its corners) exceeds the float64 range "
                f"(about 1.8e308) in {self.half_width.shape[0]} dimension(s). "
                "Declare tighter bounds (or a radius and center).")
        return radius


def split_fit_budget(epsilon, delta, share, zcdp):
    """``(part, rest)``: ``share`` of an (ε, δ) budget, as every fit splits
    off a share (the interval's, the weights'): of ρ in zCDP
    (:func:`~skuserdp.privacy.split_zcdp`; ``rest`` the (ε, δ) of the rest),
    else of ε as a pure release (:func:`~skuserdp.privacy.split_off`);
    ``(None, None)`` when a zCDP part would be worth ε 0."""
    if zcdp:
        try:
            part, rest_eps = split_zcdp(epsilon, delta, share)
        except ValueError:
            return None, None
        return part, ApproxDP(rest_eps, delta)
    eps_part, rest = split_off(PureDP(epsilon) if delta == 0
                               else ApproxDP(epsilon, delta), share)
    return PureDP(eps_part), rest


def _compose_any(a, b, delta):
    """``compose(a, b)``, or :func:`~skuserdp.privacy.compose_spend` at ``delta``
    when the two kinds do not compose directly (pure with zCDP)."""
    try:
        return compose(a, b)
    except TypeError:
        return compose_spend([a, b], delta)


#: conf_int's warning after a fit whose box was learned (bounds="auto")
LEARNED_BOX_CAVEAT = (
    "the box was learned privately (bounds='auto'), so the interval covers the "
    "mean of the users' means clipped to bounds_, not the population mean: the "
    "users outside the learned box (a few per column, more on heavy-tailed "
    "columns) are clipped by an amount no release bounds. Declare bounds (in "
    "the units of X) to cover the population mean.")


class UserLevelMeanEstimator(ConfidenceIntervalMixin, UserLevelMixin, BaseEstimator):
    """Base class for user-level differentially private mean estimators.

    Subclasses implement ``_fit_user_means(U, budget)``: it receives the
    per-user means (one row per user) and a :class:`FitBudget` and returns
    ``(mean, privacy_loss)``; it may set further fitted attributes. They may
    extend ``_parameter_constraints``.

    Estimators with a ``bounds`` parameter (``(lower, upper)`` in the units
    of ``X``, or ``"auto"``) get the box resolved here: a declared box is
    validated; ``"auto"`` learns it privately from a ``bounds_share`` of the
    budget (:func:`skuserdp.mechanisms.private_bounds`), and the spend is
    composed with the estimator's own. ``_needs_bounds()`` says whether the
    estimator uses the box at all (e.g. not when a clipping ball is declared)
    and ``_zcdp_accounting(n, d)`` whether its own release is accounted in
    zCDP (which decides how the bounds step is charged).

    *Per-column geometry.* When the estimator uses a box and
    ``_scales_box()`` is true (the default), ``_fit_user_means`` runs in
    coordinates scaled per column to the box, ``z = (u − mid)/half``: it
    sees the box ``[-1, 1]^d`` (:attr:`FitBudget.natural_bounds` keeps the
    box in the units of ``X``) and its estimate is mapped back,
    ``mid + half·ẑ`` (:meth:`_scaled_user_means`). Clipping balls and noise are
    then round in units of each column's width, i.e. ellipsoids in the
    units of ``X``: a column in ``[0, 1]`` next to one in ``[0, 20000]``
    gets noise in proportion to its own width. The box is public (declared
    or a charged DP release), so the map is a public per-user bijection and
    the privacy guarantee is unchanged; ``noise_std_`` is per feature, in
    the units of ``X``.
    """

    _parameter_constraints: dict = {**BUDGET_CONSTRAINTS}

    #: smallest number of users a fit accepts
    _min_users = 2

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, groups=None):
        """Fit the private mean of the per-user means.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of all users, finite. Not modified. A Dask array or
            DataFrame is accepted: the per-user aggregation then runs on
            Dask (user guide, "Data larger than memory").
        y : None
            Ignored. If ``y`` is given without ``groups`` a
            :class:`~skuserdp.exceptions.YIgnoredWarning` is raised: user ids
            must be passed as ``groups=``.
        groups : array-like of shape (n_samples,), default=None
            User id of every row (any hashable labels; a pandas Series is
            fine). This defines the unit of privacy. ``None`` treats every
            row as its own user and emits an
            :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`. With a
            pandas or Dask DataFrame ``X``, the name of its user-id column
            (not a feature then), or with a Dask ``X`` a Dask Series
            partitioned like ``X``.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        with quiet_floating_point():  # no warning may depend on the data
            U, n_users, counts, rows, codes = fit_user_table(self, X, y, groups)
            budget = self._resolve_bounds(U)
            budget, ci_budget = self._split_interval_budget(budget, *U.shape)
            before = budget
            budget, wt_budget = self._split_weights_budget(budget, *U.shape,
                                                           has_rows=rows is not None)
            scale = (budget.half_width if budget.lower is not None
                     and self._scales_box() else None)
            weights, wt_loss = None, None
            if wt_budget is not None:
                share = self.weights_share_
                weights, wt_loss, spent = self._release_weights(
                    U, counts, rows, codes, budget, wt_budget, scaled=scale is not None)
                if spent < 1.0:
                    # releases not made: their share goes back to the estimate
                    # (the same split at the share spent, decided from the
                    # released values: adaptive composition; the estimate's
                    # seed is the same child as in the first split)
                    budget, part = self._split_share(before, share * spent,
                                                     wt_budget[3])
                    if part is None:  # (cannot happen: a smaller part than before)
                        raise RuntimeError("the weights' share could not be split")
            if scale is None:
                W, working = U, budget
            else:
                W, working = self._scaled_user_means(U, budget)
            if weights is not None:
                W = weights.transform(W, counts)
            mean_w, loss = self._fit_user_means(W, working)
            delta = budget.total_delta or self.delta
            if wt_loss is not None:
                loss = _compose_any(wt_loss, loss, delta)
            state = None
            if ci_budget is not None:
                state, ci_loss = self._interval_release(W, mean_w, working, ci_budget,
                                                        loss)
                loss = _compose_any(loss, ci_loss, delta)
            if weights is not None and weights.kind != "equal":
                # θ̂ = c + (n/W̃)∘(mean(z')~ − c): post-processing
                g = weights.scale(n_users)
                mean_w = weights.center + g * (np.asarray(mean_w) - weights.center)
                self._weight_scale = g
                if state is not None:
                    # (the released W̃'s own error, (θ_w − c)(W − W̃)/W, is of
                    # second order and not in the interval)
                    state = dataclasses.replace(
                        state.scaled(weights.center * (1.0 - g), g),
                        estimand=(f"the row-level mean, each user's rows capped at "
                                  f"max_rows={self.max_rows}"
                                  if weights.kind == "row_mean" else
                                  "the weighted mean of the users' means "
                                  "(weighting='auto': equal to the mean of the "
                                  "users' means when row counts are unrelated to "
                                  "the values)"))
            mean = working.to_natural(mean_w)
            loss = budget.total_loss(loss)
            if state is not None and scale is not None:
                state = state.scaled(budget.midpoint, budget.half_width)
            if state is not None:
                state = dataclasses.replace(
                    state, estimate=np.asarray(mean, float),
                    caveat=LEARNED_BOX_CAVEAT if budget.bounds_loss is not None else "")
            self._interval_state = state
            self._set_fitted(mean, n_users, loss)
            self._check_box(budget)
            self._check_noise(budget, scale)
            return self

    def _ci_share(self, budget, n_users, n_features, zcdp):
        """The share of the budget for :meth:`conf_int`'s releases: the
        ``ci_share`` parameter where the estimator has one (``"auto"``:
        :func:`~skuserdp.mean._intervals.choose_ci_share`, public values),
        else 0."""
        share = getattr(self, "ci_share", 0.0)
        if isinstance(share, str):  # "auto"
            from ._intervals import choose_ci_share

            return choose_ci_share(n_users, n_features, budget.epsilon, budget.delta,
                                   zcdp=zcdp)
        return 0.0 if share is None else float(share)

    def _split_interval_budget(self, budget, n_users, n_features):
        """Take the interval's share off the estimator's budget (public values).

        With zCDP accounting (δ > 0, ``calibration="tight"``) the interval gets
        ``ci_share`` of ρ
        (:func:`skuserdp.privacy.split_zcdp`); otherwise ``ci_share`` of ε as a
        pure release (:func:`skuserdp.privacy.split_off`). Returns the
        estimator's budget and the interval's (``None`` without interval).
        """
        zcdp = (budget.delta > 0 and self._zcdp_accounting(n_users, n_features)
                and self.calibration == "tight")
        share = self._ci_share(budget, n_users, n_features, zcdp)
        if "ci_share" in self._parameter_constraints:
            self.ci_share_ = share  # public: from n_users, n_features, ε, δ
        if share == 0.0 or not self._offers_interval():
            self._no_interval_reason = (
                "it was fitted with ci_share=0 (no interval statistics released)."
                if share == 0.0 and self._offers_interval() else
                self._interval_unavailable())
            return budget, None
        rest, part = self._split_share(budget, share, zcdp)
        if part is None:  # ε far below δ: a part would be worth ε 0
            self._no_interval_reason = (
                f"epsilon={self.epsilon!r} is too small for delta={self.delta!r} "
                "to split off the interval's share in zCDP (a part would be "
                "worth epsilon 0); the whole budget went to the estimate.")
        return rest, part

    def _weights_kind(self, budget, has_rows):
        """``"row_mean"``, ``"auto"`` or ``None`` (equal weights, nothing
        spent) for this fit, from public values; sets ``weighting_`` for the
        equal case with its reason."""
        if "weighting" not in self._parameter_constraints:
            return None
        check_estimand(self)
        if self.estimand == "row_mean":
            if self.max_rows == 1:
                self.weighting_reason_ = ("max_rows=1: every user counts once (the "
                                          "mean of the users' means)")
                return None
            if budget.lower is None:
                raise ValueError(
                    f"{type(self).__name__}: estimand='row_mean' needs the box of the "
                    "users' means (bounds=, declared or 'auto'): its weighted total "
                    "is released within it. This configuration uses none.")
            return "row_mean"
        if self.weighting == "equal":
            self.weighting_reason_ = "weighting='equal'"
            return None
        if budget.lower is None:
            self.weighting_reason_ = ("no box: the weights' statistics need the "
                                      "public box of the users' means")
            return None
        if not has_rows:
            self.weighting_reason_ = ("Dask input: the users' row spreads are not "
                                      "aggregated on Dask")
            return None
        return "auto"

    def _split_weights_budget(self, budget, n_users, n_features, *, has_rows):
        """Take the weights' share off the estimator's budget (public values):
        like the interval's (:meth:`_split_interval_budget`). Returns the
        estimator's budget and ``(kind, budget, seed)`` or ``None``."""
        for name in ("weighting_reason_", "bucket_weights_", "weighting_status_"):
            self.__dict__.pop(name, None)
        kind = self._weights_kind(budget, has_rows)
        if "weighting" in self._parameter_constraints:
            self.weighting_, self.weights_share_ = "equal", 0.0
        if kind is None:
            return budget, None
        zcdp = (budget.delta > 0 and self._zcdp_accounting(n_users, n_features)
                and self.calibration == "tight")
        share = self.weights_share
        if isinstance(share, str):  # "auto": from public values
            from ._weights import choose_weights_share

            share = choose_weights_share(
                n_users, n_features, budget.epsilon, budget.delta, zcdp=zcdp,
                estimand=self.estimand, max_rows=self.max_rows,
                calibration=self.calibration)
            if share is None:
                self.weighting_reason_ = (
                    "too few users for this budget: at every share up to 0.3 the "
                    "weights' statistics would be too noisy to help (public plan; "
                    "nothing spent on them)")
                return budget, None
        self.weights_share_ = float(share)
        rest, part = self._split_share(budget, share, zcdp)
        if part is None:
            self.weights_share_ = 0.0
            self.weighting_reason_ = (
                f"epsilon={self.epsilon!r} is too small for delta={self.delta!r} to "
                "split off the weights' share in zCDP")
            return budget, None
        return rest, (kind,) + part + (zcdp,)

    def _split_share(self, budget, share, zcdp):
        """``(rest, (part_budget, seed))``: ``share`` of ρ (zCDP) or of ε (pure
        release) off ``budget``, with independent seeds; ``(budget, None)``
        when a zCDP part would be worth ε 0."""
        seed_fit, seed_part = make_seed_sequence(budget.random_state).spawn(2)
        part, rest = split_fit_budget(budget.epsilon, budget.delta, share, zcdp)
        if part is None:
            return budget, None
        rest = dataclasses.replace(budget, epsilon=rest.epsilon, random_state=seed_fit)
        return rest, (part, seed_part)

    def _release_weights(self, U, counts, rows, codes, budget, wt, *, scaled):
        """The weights' releases (:mod:`skuserdp.mean._weights`) on the users'
        means in the box's scaled coordinates; the weights in the coordinates
        the estimator runs in and their privacy loss."""
        from ._weights import plan_weights, release_user_weights, user_row_spreads

        kind, wt_budget, seed, _ = wt
        n, d = U.shape
        mid, half = budget.midpoint, budget.half_width
        Z = np.clip((U - mid) / half, -1.0, 1.0)
        # (a pass over the rows, made only when the counts call for it)
        spreads = ((lambda: user_row_spreads(rows, codes, U, counts, half))
                   if kind == "auto" else None)
        estimate = (ApproxDP(budget.epsilon, budget.delta) if budget.delta > 0
                    else PureDP(budget.epsilon))
        plan = plan_weights(n, d, wt_budget, estimate_budget=estimate,
                            estimand="row_mean" if kind == "row_mean" else "user_mean",
                            max_rows=self.max_rows, calibration=self.calibration)
        weights, made = release_user_weights(Z, counts, spreads, plan, seed)
        self.weighting_ = {"auto": "inverse_variance"}.get(weights.kind, weights.kind)
        spent = plan.spent_share(made)
        self.weights_share_ *= spent
        if made == 1 and kind == "auto":
            self.weighting_reason_ = (
                "the released row counts show one bucket of row counts, too few "
                "users with two rows or more, or nearly all users in the bucket "
                "with the most rows: nothing to weight (only the counts were "
                "spent)")
            return weights, plan.spent(1), spent
        if weights.kind == "auto" or weights.status:
            self.weighting_status_ = np.array(weights.status, dtype=object)
        if weights.kind == "equal":
            kinds = set(weights.status)
            self.weighting_reason_ = (
                "in every column the released statistics "
                + " or ".join(
                    {"informative": "showed the row counts related to the users' "
                                    "means (weighting would change the estimand)",
                     "no gain": "predicted no gain from weighting",
                     "equal": "gave (nearly) equal weights"}[k] for k in sorted(kinds)))
        if weights.kind == "auto":
            self.bucket_weights_ = weights.bucket_weights
        if not scaled:  # the estimator runs in the units of X
            weights = dataclasses.replace(weights, center=mid + half * weights.center)
        return weights, plan.spent(made), spent

    def _offers_interval(self):
        """Whether this configuration can release a confidence interval."""
        base = UserLevelMeanEstimator._interval_geometry
        return type(self)._interval_geometry is not base

    def _interval_unavailable(self):
        """Why this configuration has no confidence interval (for the error)."""
        return (f"{type(self).__name__} has no interval construction "
                "(docs: 'Confidence intervals').")

    def _interval_geometry(self, budget):
        """The clipping set of the release just made, in its working
        coordinates: ``{"geometry": "box"}`` (clipped to ``[-1, 1]^d``) or
        ``{"geometry": "ball", "ball": (c, r), "outer": R_max or None}``."""
        raise NotImplementedError

    def _interval_noise_law(self, loss):
        """The law of the release's noise: Laplace under pure DP."""
        return "laplace" if isinstance(loss, PureDP) else "gaussian"

    def _interval_release(self, W, mean_w, budget, ci, loss):
        """The interval's releases after the estimate's (``ci``: its budget
        and seed; ``loss``: the estimate's); returns the
        :class:`~skuserdp.inference.IntervalState` in
        the working coordinates and the loss."""
        from ._intervals import mean_interval_from_plan, plan_mean_interval

        ci_budget, seed = ci
        err = self.__dict__.get("_noise_error")
        if err is None:  # (an estimator offering intervals always plans it)
            raise RuntimeError(f"{type(self).__name__} left no _noise_error.")
        n, d = W.shape
        geometry = self._interval_geometry(budget)
        outer = geometry.get("outer")
        ball = geometry.get("ball")
        count = outer is not None and outer > ball[1]
        plan = plan_mean_interval(n, d, ci_budget, geometry=geometry["geometry"],
                                  count=count, calibration=self.calibration)
        noise_std = np.full(d, err / math.sqrt(d))
        state = mean_interval_from_plan(
            W, mean_w, plan, noise_std=noise_std,
            noise_law=self._interval_noise_law(loss),
            ball=ball, outer=outer if count else None, random_state=seed)
        return state, plan.loss

    def _scaled_user_means(self, U, budget):
        """The users' means in coordinates scaled per column by the box, and
        the budget there.

        ``z = (u − mid) / half`` per column (``mid``, ``half`` the box's
        midpoint and half-width), so the box becomes ``[-1, 1]^d`` and a
        narrow column gets noise in proportion to its own width instead of
        the widest column's; the estimate is mapped back,
        ``mean = mid + half·ẑ``. The box is public (declared, or a DP
        release charged in ``bounds_loss``), so the map is a public,
        per-user bijection: the subclass's release on ``z`` has the same
        user-level guarantee (replace-one, number of users public), and the
        map back is post-processing. ``U`` is not modified.
        """
        mid, half = budget.midpoint, budget.half_width
        d = U.shape[1]
        Z = np.subtract(U, mid)
        np.divide(Z, half, out=Z)
        np.clip(Z, -self._SCALED_LIMIT, self._SCALED_LIMIT, out=Z)  # inf (overflow)
        scaled = FitBudget(budget.epsilon, budget.delta, -np.ones(d), np.ones(d),
                           budget.random_state, budget.bounds_loss, budget.total_delta,
                           budget.lower, budget.upper)
        return Z, scaled

    def _scales_box(self):
        """Whether this configuration works in the box's per-column scaled
        coordinates (:meth:`_scaled_user_means`) when it uses a box.

        True by default. A subclass returns False where a declared parameter
        in the units of ``X`` sets the clipping geometry (an ℓ2 radius, a
        spread, a moment bound): such a bound maps to the scaled coordinates
        only as ``value / min_j half_width_j``, which is never less noise
        than the natural coordinates (its class docstring says which)."""
        return True

    #: scaled users' means are clipped to ``±_SCALED_LIMIT`` (finite; a user
    #: that far out is clipped by every ball and box anyway)
    _SCALED_LIMIT = 1e300

    def _prepare(self, n_users, n_features):
        """Hook run before the box is resolved (public values only)."""

    def _needs_bounds(self):
        """Whether this configuration uses the box ``bounds`` at all."""
        return "bounds" in self._parameter_constraints

    def _zcdp_accounting(self, n_users, n_features):
        """Whether the estimator's own release is accounted in zCDP."""
        return False

    def _approx_bounds_accounting(self):
        """Whether a learned box is accounted in zCDP at a share of δ when the
        estimator's own release is (ε, δ)-DP with δ > 0 (it must then plan
        with the ``delta`` of its :class:`FitBudget`)."""
        return False

    def _resolve_bounds(self, U):
        """The :class:`FitBudget` of this fit: declared or privately learned box."""
        n, d = U.shape
        self._prepare(n, d)
        if not self._needs_bounds():
            return FitBudget(self.epsilon, self.delta,
                             random_state=fit_random_state(self.random_state))
        names = getattr(self, "feature_names_in_", None)
        if not (isinstance(self.bounds, str) and self.bounds == "auto"):
            lower, upper = check_bounds(self.bounds, d, feature_names=names)
            return FitBudget(self.epsilon, self.delta, lower, upper,
                             fit_random_state(self.random_state))
        lower, upper, loss, rest_eps, rest_delta, seed_rest = learn_box_for_fit(
            type(self).__name__, U, epsilon=self.epsilon, delta=self.delta,
            share=self.bounds_share, zcdp=self._zcdp_accounting(n, d),
            approx=self._approx_bounds_accounting(),
            random_state=fit_random_state(self.random_state), feature_names=names)
        return FitBudget(rest_eps, rest_delta, lower, upper, seed_rest, loss,
                         self.delta)

    def _check_box(self, budget):
        """Warn when the estimate sits on or outside the box (post-processing)."""
        if "bounds" not in self._parameter_constraints:
            return
        if budget.lower is None:
            self.bounds_ = None
            return
        self.bounds_ = (budget.lower, budget.upper)
        # (half-widths: upper - lower overflows for a box as wide as ±1.7e308)
        tol = 2e-9 * np.maximum(0.5 * budget.upper - 0.5 * budget.lower, 0.0)
        edge = np.flatnonzero((self.mean_ <= budget.lower + tol)
                              | (self.mean_ >= budget.upper - tol))
        if edge.size:
            warn_at_caller(
                f"{type(self).__name__}: the estimate of feature(s) "
                f"{feature_labels(edge, getattr(self, 'feature_names_in_', None))} "
                "lies on or outside the public box "
                f"bounds_: the users' means are probably clipped there and the "
                "estimate is biased. Check bounds (in the units of X)"
                + (" or use bounds='auto'." if not isinstance(self.bounds, str)
                   else "; declare them if you know them."), AccuracyWarning)

    def _check_noise(self, budget, scale=None):
        """Warn when the plan's noise alone exceeds the box (post-processing).

        ``_fit_user_means`` may leave ``_noise_error``: the root mean squared
        ℓ2 error of its last release's noise, a function of the public plan
        (and of earlier private releases, such as CoinPress's radii), in the
        coordinates it ran in. The noise is i.i.d. over those coordinates;
        ``noise_std_`` (shape ``(n_features,)``, in the units of ``X``) is
        its standard deviation per feature: ``err/√d`` in every feature, times
        the box's half-width ``scale`` of each feature when the fit ran in
        the box's scaled coordinates (:meth:`_scaled_user_means`). In every feature
        where that exceeds half the
        width of the box (declared, or released), the box's midpoint -- free
        of charge -- is expected to be closer to the truth than the estimate:
        those features are named (with equal widths this is the rule "the
        ℓ2 noise exceeds the box's half-diagonal"; with a learned box, one
        column whose box is far too wide makes the others' noise swamp
        them).
        """
        err = self.__dict__.pop("_noise_error", None)
        wscale = self.__dict__.pop("_weight_scale", 1.0)
        if err is not None:
            # the noise is i.i.d. over the coordinates: its per-feature SD
            d = self.mean_.shape[0]
            sd = np.full(d, err / math.sqrt(d))
            sd = sd * wscale  # weighted (mean._weights): the noise times n/W̃
            self.noise_std_ = sd if scale is None else sd * scale
        else:
            self.__dict__.pop("noise_std_", None)  # unknown for this plan
        if err is None or budget.lower is None:
            return
        noisy = np.flatnonzero(self.noise_std_ > budget.half_width)
        if noisy.size:
            names = getattr(self, "feature_names_in_", None)
            warn_at_caller(
                f"{type(self).__name__}: the noise of this release alone is "
                f"expected to move the estimate of feature(s) "
                f"{feature_labels(noisy, names)} by "
                f"{', '.join(f'{v:.3g}' for v in self.noise_std_[noisy])} "
                "(standard deviation, from the public plan), more than half the "
                "width of their box bounds_: the box's midpoint would likely be "
                "closer to the truth there. Use more users, a larger epsilon or "
                "tighter declared bounds.", AccuracyWarning)

    def _set_fitted(self, mean, n_users, loss):
        """Record the fitted mean, the number of users and the spend."""
        self.mean_ = mean
        self.n_users_ = n_users
        self._set_spend(loss)
        return self

    def score(self, X, y=None, *, groups=None, sample_weight=None):
        """Negative squared error to the mean of the held-out users' means.

        ``-||mean_ - mean_u(x̄_u)||²`` where ``x̄_u`` are the per-user means of
        ``X`` grouped by ``groups``. Higher is better, as model selection
        expects; use a group-aware splitter such as ``GroupKFold`` so that the
        held-out users were not seen by ``fit``.

        The score uses the held-out data without noise. It is for evaluation
        on synthetic or public data: choosing hyper-parameters with it on
        private data is not differentially private.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Held-out rows.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,) or str, default=None
            User id of every held-out row (or the name of ``X``'s user-id
            column); ``None`` treats rows as users.
        sample_weight : None
            Ignored; present so that ``Pipeline.score`` works under metadata
            routing.

        Returns
        -------
        score : float
            Negative squared ℓ2 error.
        """
        check_is_fitted(self)
        target = held_out_user_means(self, X, groups)
        return -float(np.sum((self.mean_ - target) ** 2))
