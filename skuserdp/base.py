"""Base classes shared by all skuserdp estimators.

* :class:`UserLevelMixin` requests ``groups`` for ``fit`` and ``score`` by
  default, so that Pipeline, GridSearchCV and cross_validate route the user
  ids to the estimator when metadata routing is enabled — with no
  ``set_fit_request`` call. This mirrors scikit-learn's own
  ``GroupsConsumerMixin`` for splitters: for user-level privacy the user id is
  the unit of privacy, not optional metadata.
* :class:`UserLevelMeanEstimator` holds what every mean estimator shares:
  validation of ``X`` and ``groups``, the loud warnings when ``groups`` is
  missing, per-user aggregation, the fitted spend attributes and ``score``.
"""

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
)
from sklearn.utils.validation import check_is_fitted, validate_data

from .exceptions import AccuracyWarning, ItemLevelPrivacyWarning, YIgnoredWarning
from .mechanisms._private_bounds import bounds_failure_probability, private_bounds
from .privacy import compose, compose_spend, split_for_public_bounds
from .privacy._conversion import report_spend
from .users import check_groups
from .users._groups import check_groups_alignment
from .users._aggregate import _means_by_code
from .users._column import split_groups_column
from .users._dask import dask_user_table as _dask_user_table
from .users._dask import is_dask_collection
from .utils._numeric import quiet_floating_point, stable_norm
from .utils._random import fit_random_state, make_seed_sequence
from .utils._validation import check_bounds, feature_labels, validate_rows

#: above this public bound on the probability that the box of some column
#: fails (a candidate outside the data: the estimate is then garbage, e.g.
#: 1e32), ``bounds="auto"`` warns; below it, a failure is rarer than one fit
#: in a thousand (at the former 0.05, 1-3 fits in 2000 returned garbage with
#: no warning)
BOUNDS_FAILURE_WARN = 1e-3
#: above this bound, bounds="auto" refuses to fit (ValueError)
BOUNDS_FAILURE_REFUSE = 0.5
#: default share of the budget for bounds="auto": of ρ (zCDP accounting), of ε
#: (basic composition of the 2d pure releases, which needs a larger share)
BOUNDS_SHARE_ZCDP, BOUNDS_SHARE_PURE = 0.1, 0.25

__all__ = ["UserLevelMixin", "UserLevelMeanEstimator", "resolve_user_codes"]


def accepts_bool(constraints):
    """Whether a parameter's scikit-learn constraints allow a bool value
    (``"boolean"``, ``"verbose"`` or ``bool``); numeric ones never do here."""
    return any(c in ("boolean", "verbose") or c is bool
               for c in constraints if isinstance(c, (str, type)))


class UserLevelMixin:
    """Request ``groups`` in ``fit`` and ``score`` by default (metadata routing),
    and validate parameters more strictly than scikit-learn does.

    scikit-learn's ``Interval`` constraints accept ``True`` as the number 1
    (``bool`` is an ``int``), and ``n_jobs=0`` passes ``[None, Integral]``
    (joblib only rejects it once a parallel section runs, so small inputs
    would accept it). ``epsilon=True`` is a bug in the caller's code, never a
    budget: both are refused before every fit.
    """

    __metadata_request__fit = {"groups": True}
    __metadata_request__score = {"groups": True}

    def _validate_params(self):
        name = type(self).__name__
        for param, constraints in self._parameter_constraints.items():
            value = getattr(self, param, None)
            if isinstance(value, (bool, np.bool_)) and not accepts_bool(constraints):
                raise InvalidParameterError(
                    f"The {param!r} parameter of {name} must be a number, not the "
                    f"bool {value!r}.")
        # (a bool n_jobs was refused above: its constraints take no bool)
        if "n_jobs" in self._parameter_constraints and self.n_jobs == 0:
            raise InvalidParameterError(
                f"The 'n_jobs' parameter of {name} must be None, a positive int or "
                "a negative int (-1 = all cores); got 0.")
        super()._validate_params()


def _check_not_sparse(X):
    if sp.issparse(X):
        raise ValueError(
            "sparse input is not supported: per-user means of sparse rows are dense; "
            "convert X with X.toarray() if it fits in memory."
        )


def resolve_user_codes(estimator, groups, n_samples, *, warn=True, stacklevel=5):
    """User code of every row and the number of users of a fit.

    ``groups=None`` makes every row its own user and (with ``warn``) emits an
    :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`. Raises when there
    are fewer users than ``estimator._min_users``.

    Parameters
    ----------
    estimator : estimator instance
        For the messages and ``_min_users``.
    groups : array-like of shape (n_samples,) or None
        User id of every row.
    n_samples : int
        Number of rows.
    warn : bool, default=True
        Whether ``groups=None`` warns.
    stacklevel : int, default=5
        Of the warning (it should point at the caller of ``fit``).

    Returns
    -------
    codes : ndarray of shape (n_samples,)
        User code ``0..n_users-1`` of every row.
    n_users : int
    """
    if groups is None:
        if warn:
            warn_item_level(estimator, stacklevel=stacklevel)
        codes = np.arange(n_samples, dtype=np.intp)
        n_users = n_samples
    else:
        codes, labels = check_groups(groups, n_samples)
        n_users = labels.shape[0]
    check_min_users(estimator, n_users, n_samples)
    return codes, n_users


def warn_item_level(estimator, stacklevel=5):
    """The loud :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning` of a
    fit without ``groups``; ``stacklevel`` counts from the caller's frame."""
    warnings.warn(
        f"{type(estimator).__name__}.fit got no groups: every row is treated as "
        "its own user, so the guarantee is item-level, not user-level. Pass "
        "groups=user_ids (and enable metadata routing inside "
        "Pipeline/GridSearchCV).",
        ItemLevelPrivacyWarning,
        stacklevel=stacklevel + 1,
    )


def warn_y_ignored(estimator, stacklevel=5):
    """The loud :class:`~skuserdp.exceptions.YIgnoredWarning` of a mean
    estimator given ``y`` but no ``groups`` (``fit(X, user_ids)``)."""
    warnings.warn(
        f"{type(estimator).__name__}.fit received y but no groups. Mean "
        "estimators ignore y; if y holds user ids, call "
        "fit(X, groups=user_ids). Each row is now treated as its own "
        "user, so the guarantee is item-level, not user-level.",
        YIgnoredWarning,
        stacklevel=stacklevel + 1,
    )


def check_min_users(estimator, n_users, n_samples):
    """Refuse a fit with fewer users than ``estimator._min_users``."""
    if n_users < estimator._min_users:
        raise ValueError(
            f"{type(estimator).__name__} needs at least {estimator._min_users} "
            f"users, got {n_users} user(s) (n_samples = {n_samples}). With one "
            "user the output would be pure noise."
        )


def dask_user_table(estimator, X, y, groups, *, classes=None, check_meta=None,
                    reset=True, warn=True, stacklevel=4):
    """The per-user table of Dask input, with the checks of in-memory input.

    Warns (``warn``) as in memory without ``groups`` (``stacklevel`` counts
    from this function's frame; 4 points at the caller of ``fit``), sets
    (``reset``) or checks ``n_features_in_``/``feature_names_in_`` from the
    feature columns, and refuses too few users. See
    :mod:`skuserdp.users._dask`.

    Returns
    -------
    table : UserMeans
        ``(means, counts, labels)`` in memory.
    meta : object
        Empty array or DataFrame of the feature columns (names, dtypes).
    """
    if not is_dask_collection(X):
        raise ValueError(
            "groups is a Dask collection but X is not: pass X as a Dask array "
            "or DataFrame too, or both in memory.")
    if groups is None and warn:
        if y is not None:
            warn_y_ignored(estimator, stacklevel)
        else:
            warn_item_level(estimator, stacklevel)
    table, meta = _dask_user_table(X, groups, classes=classes,
                                   check_meta=check_meta)
    validate_data(estimator, meta, reset=reset, skip_check_array=True)
    if reset:
        check_min_users(estimator, table.means.shape[0], int(table.counts.sum()))
    return table, meta


def learn_box(name, U, release_epsilon, random_state, stacklevel=5,
              feature_names=None):
    """``bounds="auto"``: the private box of the columns of ``U`` (one row per
    user), with the warnings a user needs.

    A ``ValueError`` when the public bound on the probability that the
    median or the spread release of *some* column fails (the per-column
    bound times the number of columns, capped at 1) exceeds 1/2 (the box
    would likely miss the data or be absurdly wide somewhere, and the fit
    would be garbage: refuse rather than return it); an
    :class:`~skuserdp.exceptions.AccuracyWarning` when it exceeds
    ``BOUNDS_FAILURE_WARN`` (1e-3: a failed column makes the estimate
    garbage), and
    when a learned box is flat (a value shared by most users, e.g. a rare
    binary feature). ``feature_names`` (one per column of ``U``) name the
    columns in the messages.
    """
    n, d = U.shape
    fail = min(1.0, d * max(bounds_failure_probability(n, release_epsilon)))
    if fail > BOUNDS_FAILURE_REFUSE:
        raise ValueError(
            f"{name}: bounds='auto' cannot learn the box of {d} column(s) from {n} "
            f"users at this budget (epsilon {release_epsilon:.3g} per release; "
            f"probability up to {fail:.2g} that some column fails): the "
            "estimate would be garbage. Declare bounds=(lower, upper) (and "
            "target_bounds for a regressor) in the units of the data -- public "
            "knowledge such as a codebook range -- or use more users, fewer "
            "columns or a larger epsilon (or bounds_share, or delta > 0 where "
            "the estimator then accounts the box in zCDP).")
    if fail > BOUNDS_FAILURE_WARN:
        warnings.warn(
            f"{name}: bounds='auto' learns the box of {d} column(s) from {n} users "
            f"with epsilon {release_epsilon:.3g} per release; the learned box may "
            f"miss the data or be far too wide in some column (probability up "
            f"to {fail:.2g}), so the estimate may be far off. Declare "
            "bounds=(lower, upper) in the units of the data (public knowledge, "
            "e.g. from a codebook), or use more users or a larger epsilon.",
            AccuracyWarning, stacklevel=stacklevel)
    lower, upper = private_bounds(U, release_epsilon, random_state=random_state)
    width = upper - lower
    flat = np.flatnonzero(width <= 2.0 ** -240
                          + 1e-12 * np.maximum(np.abs(lower), np.abs(upper)))
    if flat.size:
        warnings.warn(
            f"{name}: bounds='auto' learned a flat box for column(s) "
            f"{feature_labels(flat, feature_names)}: most users share one value "
            "there (e.g. a rare binary feature), and the others are clipped to "
            "it. Declare their bounds (for a 0/1 feature: (0, 1)).", AccuracyWarning,
            stacklevel=stacklevel)
    return lower, upper


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
        return 0.5 * self.lower + 0.5 * self.upper

    @property
    def half_width(self):
        """Half-width of the box in every coordinate (at least ``2^-256``, the
        grid's smallest step, so that norms and squares stay positive)."""
        return np.maximum(0.5 * self.upper - 0.5 * self.lower, 2.0 ** -256)

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


#: parameter constraints of the public box shared by the mean estimators
BOUNDS_CONSTRAINTS = {
    "bounds": [StrOptions({"auto"}), "array-like"],
    "bounds_share": [None, Interval(Real, 0, 1, closed="neither")],
}


class UserLevelMeanEstimator(UserLevelMixin, BaseEstimator):
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
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "calibration": [StrOptions({"tight", "paper"})],
        "random_state": ["random_state", np.random.SeedSequence],
        "n_jobs": [None, Integral],
    }

    #: smallest number of users a fit accepts
    _min_users = 2

    def _validate_fit_input(self, X, y, groups):
        """Validate X and groups; return (X, codes, n_users)."""
        _check_not_sparse(X)
        check_groups_alignment(groups, X)
        X = validate_rows(self, X, dtype=np.float64, order="C")
        codes, n_users = self._resolve_groups(y, groups, X.shape[0])
        return X, codes, n_users

    def _resolve_groups(self, y, groups, n_samples):
        """Map ``groups`` to user codes (warning loudly without them)."""
        if groups is None and y is not None:
            warn_y_ignored(self, stacklevel=5)
            return resolve_user_codes(self, None, n_samples, warn=False)
        return resolve_user_codes(self, groups, n_samples, stacklevel=6)

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
            X, groups = split_groups_column(X, groups)  # groups='column name'
            if is_dask_collection(X) or is_dask_collection(groups):
                U = dask_user_table(self, X, y, groups)[0].means
                n_users = U.shape[0]
            else:
                X, codes, n_users = self._validate_fit_input(X, y, groups)
                U = _means_by_code(X, codes, n_users)[0]
            budget = self._resolve_bounds(U)
            mean, loss = self._fit_user_means(U, budget)
            loss = budget.total_loss(loss)
            self._set_fitted(mean, n_users, loss)
            self._check_box(budget)
            self._check_noise(budget)
            return self

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
        zcdp = self._zcdp_accounting(n, d)
        share = self.bounds_share
        if share is None:
            share = BOUNDS_SHARE_ZCDP if zcdp else BOUNDS_SHARE_PURE
        eps0, loss, rest_eps, rest_delta = split_for_public_bounds(
            self.epsilon, self.delta, share, 2 * d, zcdp=zcdp,
            approx=self._approx_bounds_accounting())
        seed_bounds, seed_rest = make_seed_sequence(
            fit_random_state(self.random_state)).spawn(2)
        lower, upper = learn_box(type(self).__name__, U, eps0, seed_bounds,
                                 feature_names=names)
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
            warnings.warn(
                f"{type(self).__name__}: the estimate of feature(s) "
                f"{feature_labels(edge, getattr(self, 'feature_names_in_', None))} "
                "lies on or outside the public box "
                f"bounds_: the users' means are probably clipped there and the "
                "estimate is biased. Check bounds (in the units of X)"
                + (" or use bounds='auto'." if not isinstance(self.bounds, str)
                   else "; declare them if you know them."),
                AccuracyWarning, stacklevel=3)

    def _check_noise(self, budget):
        """Warn when the plan's noise alone exceeds the box (post-processing).

        ``_fit_user_means`` may leave ``_noise_error``: the root mean squared
        ℓ2 error of its last release's noise, a function of the public plan
        (and of earlier private releases, such as CoinPress's radii). The
        noise is i.i.d. over the coordinates, with standard deviation
        ``noise_std_`` in each. In every feature where that exceeds half the
        width of the box (declared, or released), the box's midpoint -- free
        of charge -- is expected to be closer to the truth than the estimate:
        those features are named (with equal widths this is the rule "the
        ℓ2 noise exceeds the box's half-diagonal"; with a learned box, one
        column whose box is far too wide makes the others' noise swamp
        them).
        """
        err = self.__dict__.pop("_noise_error", None)
        if err is not None:
            # the noise is i.i.d. over the coordinates: its per-feature SD
            self.noise_std_ = err / math.sqrt(self.mean_.shape[0])
        else:
            self.__dict__.pop("noise_std_", None)  # unknown for this plan
        if err is None or budget.lower is None:
            return
        noisy = np.flatnonzero(self.noise_std_ > budget.half_width)
        if noisy.size:
            names = getattr(self, "feature_names_in_", None)
            warnings.warn(
                f"{type(self).__name__}: the noise of this release alone is "
                f"expected to move the estimate of feature(s) "
                f"{feature_labels(noisy, names)} by {self.noise_std_:.3g} "
                "(standard deviation, from the public plan), more than half the "
                "width of their box bounds_: the box's midpoint would likely be "
                "closer to the truth there. Use more users, a larger epsilon or "
                "tighter declared bounds.",
                AccuracyWarning, stacklevel=3)

    def _set_fitted(self, mean, n_users, loss):
        """Record the fitted mean, the number of users and the spend."""
        self.mean_ = mean
        self.n_users_ = n_users
        self._set_spend(loss)
        return self

    def _set_spend(self, loss):
        """Record the privacy spent as fitted attributes."""
        eps, delta, rho = report_spend(loss, self.delta)
        self.privacy_loss_ = loss
        self.epsilon_ = eps
        self.delta_ = delta
        self.rho_ = rho

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
        X, groups = split_groups_column(X, groups)  # groups='column name'
        if is_dask_collection(X) or is_dask_collection(groups):
            # the held-out users' table; groups=None: every row its own user
            table = dask_user_table(self, X, None, groups, reset=False,
                                    warn=False)[0]
            target = table.means.mean(axis=0)
            return -float(np.sum((self.mean_ - target) ** 2))
        _check_not_sparse(X)
        check_groups_alignment(groups, X)
        X = validate_rows(self, X, reset=False, dtype=np.float64, order="C")
        if groups is None:
            target = X.mean(axis=0)
        else:
            codes, labels = check_groups(groups, X.shape[0])
            target = _means_by_code(X, codes, labels.shape[0])[0].mean(axis=0)
        return -float(np.sum((self.mean_ - target) ** 2))
