"""UserDPSGDRegressor and UserDPSGDClassifier (Levy et al., Algorithms 3 and 4).

Levy et al., "Learning with User-Level Privacy" [LSA+21]_ §4 (Algorithm 3,
Theorem 3), §5.1 (Algorithm 4, Theorem 4); docs:
:ref:`papers-levy`, :ref:`papers-levy-deviations`. The optimisation core is
:mod:`skuserdp.linear_model._sgd`; this module turns rows, targets and user
ids into per-user average gradients and public constants.
"""

import math
import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, _fit_context, clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets

from ..base import ESTIMAND_CONSTRAINTS, check_estimand
from ..exceptions import AccuracyWarning
from ..mean._concentration import tau_gradients
from ..mean._clip_noise import clip_noise_from_plan, plan_clip_noise
from ..mean._trimmed import robust_trim
from ..mechanisms._private_bounds import _positive_grid, private_quantile
from ..privacy import (
    ZCDP,
    compose,
    compose_parallel,
    split_for_public_bounds,
    split_zcdp,
)
from ..utils._docstrings import fill_doc
from ..utils._numeric import quiet_floating_point
from ..users._column import split_groups_column
from ..users._dask import is_dask_collection
from ..users._groups import _has_missing
from ..users._resolve import check_min_users
from ..utils._random import fit_random_state, make_seed_sequence
from ..utils._warnings import warn_at_caller
from ._base import (
    BOX_PARAMS_DOC,
    ESTIMAND_NOTES_DOC,
    UserDPRegressorMixin,
    _UserDPLinearModel,
    estimand_params_doc,
    project_rows,
    row_mean_weights,
    weighted_users_fn,
)
from ._dpsgd_groups import auto_n_groups, group_assignment, groups_interval_state
from ._losses import get_loss
from ._sgd import (
    PhasedPlan,
    phased_erm,
    plan_gradient_descent,
    plan_phased_erm,
    private_gradient_descent,
)
from ._rows import DaskRows, InMemoryRows
from ._standardize import standardization_from_user_means, standardized_row_bound
from ._user_gradients import user_gradient_fn

__all__ = ["UserDPSGDRegressor", "UserDPSGDClassifier"]

#: share of the zCDP budget of clip_norm="auto" (the private median of the
#: users' gradient norms at the starting point)
CLIP_SHARE = 0.05
#: share of the zCDP budget of learning_rate="auto" (the private smoothness of
#: the average loss: the users' mean squared row norm)
SMOOTH_SHARE = 0.05
#: share of the zCDP budget of the starting intercept (regression with
#: clip_norm="auto"): the users' mean target
INTERCEPT_SHARE = 0.02
#: share of the zCDP budget of the target's spread (regression with
#: clip_norm="auto" and an intercept; the same share as the clip norm's and
#: the smoothness'): the users' means of the capped parts of the target
#: around a released centre (``_private_target_spread``)
TARGET_SPREAD_SHARE = 0.05
#: the parts' public cap, in units of the plan's prediction-noise bound
SPREAD_CAP = 4.0
#: noise standard deviations of the spread's lower confidence bound
SPREAD_Z = 2.0


def few_users_clip_threshold(eps0):
    """The fewest users with which the private median of the clip norm is
    informative: ``⌈4·ln(K)/ε₀⌉`` (``K`` the size of the public grid of
    :func:`~skuserdp.mechanisms.private_quantile`; see
    ``_BaseUserDPSGD._check_clip_users``). Public."""
    return math.ceil(4.0 * math.log(_positive_grid().size) / float(eps0))


def _user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs):
    """``users -> (theta -> per-user average gradients)`` of the data term
    (:func:`skuserdp.linear_model._user_gradients.user_gradient_fn`)."""
    return user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs)


# ---------------------------------------------- row-wise maps (picklable)
def _label_codes(classes, y):
    """Class codes (float) of the labels ``y``; refuses undeclared labels."""
    if np.isin(y, classes, invert=True).any():
        raise ValueError("y contains labels that are not in the declared classes "
                         f"{classes.tolist()}.")
    return np.searchsorted(classes, y).astype(np.float64)


def _checked_label_codes(classes, y):
    """:func:`_label_codes` of one Dask partition of labels, which must be
    class labels (as ``check_classification_targets`` requires in memory)."""
    check_classification_targets(y)
    return _label_codes(classes, y)


def _box_units(scale, X, y):
    """Rows and targets clipped to their boxes, in box units."""
    return scale.rows(X), scale.targets(y)


def _augment_rows(fit_intercept, Z, y):
    """Rows with a column of ones for the intercept."""
    if fit_intercept:
        Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
    return Z, y


def _standardize_rows(center, spread, bound, Z, y):
    """Standardised rows projected onto the ball of radius ``bound``, with a
    column of ones (the intercept of the standardised model)."""
    S = project_rows((Z - center) / spread, bound)
    return np.hstack([S, np.ones((S.shape[0], 1))]), y


def _squared_row_norms(X, y):
    return np.einsum("ij,ij->i", X, X)[:, None]


def _target_column(X, y):
    return np.asarray(y, dtype=np.float64)[:, None]


def _capped_parts(center, cap, X, y):
    """``(min((y − c)⁺, cap), min((c − y)⁺, cap))`` per row (box units)."""
    z = np.asarray(y, dtype=np.float64) - center
    return np.column_stack([np.minimum(np.maximum(z, 0.0), cap),
                            np.minimum(np.maximum(-z, 0.0), cap)])


def prediction_noise_bound(plan):
    """Public bound of the root mean squared noise of the predictions of a
    gradient-descent plan with steps ``η_t·λ_max ≤ 1`` (box units):
    ``√(p · max_t η_t · σ²)``.

    For a quadratic loss with Hessian ``A`` (eigenvalues
    ``0 ≤ λ_k ≤ 1/η``), the noise part of the iterates follows
    ``e_{t+1} = (I − ηA)e_t + ηξ_t`` (``ξ_t`` the release's noise, variance
    ``σ²`` per coordinate, ``plan.release.noise_variance``; ``e_0 = 0``).
    Along the eigenvector ``k`` its variance is at most
    ``η²σ² Σ_j (1 − ηλ_k)^{2j} ≤ ησ²/(λ_k(2 − ηλ_k))``, so its mean
    squared contribution to the predictions, ``λ_k`` times that, is at most
    ``ησ²``, whatever ``λ_k``; summed over the ``p`` directions,
    ``p·ησ²``. A weighted average of the iterates has at most the largest
    variance (Cauchy–Schwarz). The planned step sizes of the default
    schedule are at most ``1/H`` with ``H`` (public, or an upper confidence
    bound of a released value) at least the trace of ``A``, so
    ``ηλ_max ≤ 1``; the projections onto the parameter ball are
    non-expansive and ignored.

    Examples
    --------
    >>> from skuserdp.linear_model._dpsgd import prediction_noise_bound
    >>> from skuserdp.linear_model._sgd import plan_gradient_descent
    >>> plan = plan_gradient_descent(1000, 2, epsilon=1.0, delta=1e-6,
    ...                              n_steps=4, aggregator="clip",
    ...                              gradient_bound=1.0, smoothness=1.0,
    ...                              radius=1.0, learning_rate=0.5)
    >>> round(prediction_noise_bound(plan), 4)
    0.0181
    """
    eta = float(np.max(plan.learning_rates))
    return math.sqrt(int(plan.n_params) * eta * float(plan.release.noise_variance))


def target_spread_lower_bound(released, noise_variance):
    """Lower confidence bound of the target's standard deviation from the
    released capped parts ``(u₊, u₋)`` of ``ỹ − c`` (post-processing).

    With ``Z = clip(ỹ − c, −cap, cap)`` (``c`` any released centre), a
    1-Lipschitz map of ``ỹ``:
    ``sd(ỹ) ≥ sd(Z) ≥ E|Z − EZ| ≥ E|Z| − |EZ| = 2·min(u₊, u₋)``
    (contraction, Jensen, triangle inequality; ``u₊ = E Z⁺``,
    ``u₋ = E Z⁻``, expectations over the users' mean of their rows). Each
    released part is lowered by ``SPREAD_Z`` standard deviations of its
    noise (public, from the release plan).

    Examples
    --------
    >>> from skuserdp.linear_model._dpsgd import target_spread_lower_bound
    >>> round(target_spread_lower_bound([0.3, 0.2], 0.01 ** 2), 6)
    0.36
    """
    u = np.asarray(released, dtype=np.float64) - SPREAD_Z * math.sqrt(
        float(noise_variance))
    return 2.0 * float(np.min(u))


def _user_means_of_rows(rows, fn):
    """Each user's mean of ``fn(X)`` over the rows of the row source."""
    return rows.user_means(partial(_features_only, fn))


def _features_only(fn, X, y):
    return fn(X)


#: attributes of an ``interval="groups"`` fit (removed by a fit without)
_GROUP_ATTRS = ("n_groups_", "group_estimators_", "_interval_state")

#: estimand of the groups interval, per estimator (``estimand="user_mean"``)
_ESTIMANDS = {
    "regressor": ("the coefficients the estimator converges to on a group of "
                  "n/K users: the population minimiser of the users' mean of "
                  "their average (squared or Huber) loss, i.e. the coefficients "
                  "of the per-user-mean-weighted model (rows weighted 1/m_i) of "
                  "the rows and targets clipped to their boxes, within the "
                  "parameter ball, with the L2 penalty alpha"),
    "classifier": ("the coefficients the estimator converges to on a group of "
                   "n/K users: the population minimiser of the users' mean of "
                   "their average log loss (rows weighted 1/m_i), rows clipped "
                   "to their box, within the parameter ball, with the L2 "
                   "penalty alpha"),
}

#: the same with ``estimand="row_mean"`` (``{k}``: ``max_rows``)
_ROW_MEAN_ESTIMANDS = {
    "regressor": ("the coefficients the estimator converges to on a group of "
                  "n/K users: the population minimiser of the users' mean of "
                  "their average (squared or Huber) loss times min(m_i, k)/k "
                  "(k = max_rows = {k}), i.e. the coefficients of the row-level "
                  "model with each user capped at k rows (rows weighted "
                  "min(m_i, k)/m_i) of the rows and targets clipped to their "
                  "boxes, within the parameter ball, with the L2 penalty alpha"),
    "classifier": ("the coefficients the estimator converges to on a group of "
                   "n/K users: the population minimiser of the users' mean of "
                   "their average log loss times min(m_i, k)/k (k = max_rows = "
                   "{k}; rows weighted min(m_i, k)/m_i: the row-level model "
                   "with each user capped at k rows), rows clipped to their "
                   "box, within the parameter ball, with the L2 penalty alpha"),
}


def _spawn_group_seeds(root, n_groups):
    """The seeds of ``interval="groups"``: child 0 draws the partition,
    children ``1..K`` the K fits' noise (distinct streams)."""
    partition, *fits = root.spawn(n_groups + 1)
    return partition, fits


class _BaseUserDPSGD(_UserDPLinearModel):
    """Shared fit logic of the DP-SGD regressor and classifier."""

    _no_interval_reason = (
        "it was fitted with interval=None (the default), which releases one "
        "model and no interval statistics. Refit with interval='groups': K "
        "disjoint groups of users, one fit per group at the full budget "
        "(parallel composition), coef_ their mean and a t interval from "
        "their spread.")

    _parameter_constraints: dict = {
        **_UserDPLinearModel._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "radius": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "aggregator": [StrOptions({"clip", "winsorized", "trimmed"})],
        "corrupted_fraction": [Interval(Real, 0, 0.5, closed="left")],
        "clip_norm": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions({"gd", "phased_erm"})],
        "learning_rate": [StrOptions({"auto"}),
                          Interval(Real, 0, None, closed="neither")],
        "sampling_rate": [None, Interval(Real, 0, 1, closed="right")],
        "tau": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "samples_per_user": [None, Interval(Integral, 1, None, closed="left")],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        "standardize": ["boolean", StrOptions({"auto"})],
        "standardize_share": [Interval(Real, 0, 1, closed="neither")],
        "interval": [None, StrOptions({"groups"})],
        "n_groups": [StrOptions({"auto"}), Interval(Integral, 2, None, closed="left")],
        **ESTIMAND_CONSTRAINTS,
        "verbose": ["verbose"],
    }

    # ------------------------------------------------ interval="groups"
    def _forget_groups(self):
        """A fit without groups: no stale group fits, no interval."""
        for name in _GROUP_ATTRS:
            self.__dict__.pop(name, None)

    def _interval_labels(self):
        """``"feature"`` then ``"intercept"`` (regressor); ``"class:feature"``
        then ``"class:intercept"`` (classifier: one row, the positive class,
        for two classes)."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return None
        names = [str(n) for n in names] + (["intercept"] if self.fit_intercept else [])
        classes = getattr(self, "classes_", None)
        if classes is None:
            return names
        rows = classes[1:] if np.ndim(self.coef_) == 2 and self.coef_.shape[0] == 1 \
            else classes
        coef = [f"{c}:{n}" for c in rows for n in names[:self.n_features_in_]]
        icpt = [f"{c}:intercept" for c in rows] if self.fit_intercept else []
        return coef + icpt

    def _resolve_n_groups(self, n_users):
        """K: the declared int (each group keeps ``_min_users`` users) or
        :func:`~skuserdp.linear_model._dpsgd_groups.auto_n_groups`."""
        if self.n_groups == "auto":
            return auto_n_groups(n_users, self.epsilon, self.delta, self._min_users)
        k = int(self.n_groups)
        if n_users // k < self._min_users:
            raise ValueError(
                f"{type(self).__name__}: n_groups={k} leaves groups of fewer than "
                f"{self._min_users} users ({n_users} users); use fewer groups.")
        return k

    def _fit_groups(self, X, y, groups, *, y_numeric):
        """``interval="groups"``: fit a copy (``interval=None``) on each of K
        disjoint groups of users at the full budget; ``coef_`` and
        ``intercept_`` are their means. Returns the K fitted copies."""
        if any(is_dask_collection(v) for v in (X, y, groups)):
            raise ValueError(
                f"{type(self).__name__}: interval='groups' needs the data in "
                "memory (the groups are subsets of the users' rows); fit Dask "
                "data with interval=None.")
        X, y, codes, n_users = self._validate_supervised(
            X, y, groups, y_numeric=y_numeric, stacklevel=6)
        check_min_users(self, n_users, X.shape[0])
        if not y_numeric:
            check_classification_targets(y)
            self._classes(y)
        k = self._resolve_n_groups(n_users)
        # data-independent: the permutation's seed and the fits' seeds are
        # distinct children of the fit's root seed
        root = make_seed_sequence(fit_random_state(self.random_state))
        partition_seed, fit_seeds = _spawn_group_seeds(root, k)
        group = group_assignment(n_users, k, partition_seed)[codes]
        names = getattr(self, "feature_names_in_", None)
        template = clone(self).set_params(interval=None)
        fits, caught = [], []
        for j in range(k):
            rows = group == j
            Xj = X[rows]
            if names is not None:
                import pandas as pd

                Xj = pd.DataFrame(Xj, columns=names)
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                fits.append(clone(template).set_params(random_state=fit_seeds[j]).fit(
                    Xj, y[rows], groups=codes[rows]))
            caught.extend(record)
        seen = set()
        for w in caught:  # each public warning once, at the caller's line
            key = (w.category, str(w.message))
            if key not in seen:
                seen.add(key)
                warn_at_caller(str(w.message), w.category)
        self.n_groups_ = k
        self.group_estimators_ = fits
        self.n_users_ = n_users
        self.n_iter_ = fits[0].n_iter_
        self.bounds_ = (np.min([f.bounds_[0] for f in fits], axis=0),
                        np.max([f.bounds_[1] for f in fits], axis=0))
        if hasattr(fits[0], "target_bounds_"):
            self.target_bounds_ = (min(f.target_bounds_[0] for f in fits),
                                   max(f.target_bounds_[1] for f in fits))
        self._set_spend(compose_parallel(*(f.privacy_loss_ for f in fits)))
        return fits

    def _group_interval(self, fits, kind):
        """Interval state of the K group fits: rows ``coef_`` (C order), then
        the intercepts when fitted."""
        rows = [np.ravel(f.coef_) for f in fits]
        if self.fit_intercept:
            rows = [np.r_[r, np.ravel(f.intercept_)] for r, f in zip(rows, fits)]
        self._interval_state = groups_interval_state(
            np.stack(rows), _ESTIMANDS[kind] if self.estimand == "user_mean"
            else _ROW_MEAN_ESTIMANDS[kind].format(k=self.max_rows))

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
            # α = γ/3 as in the proof of Theorem 3 (docs: papers-levy-gradients-radius).
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

    def _standardize_problems(self):
        return [text for bad, text in (
            (not self.fit_intercept, "fit_intercept=True (the centring moves "
                                     "into the intercept)"),
            (self.delta == 0, "delta > 0 (the budget is split in zCDP)"),
            (self.calibration != "tight", "calibration='tight' (zCDP accounting)"),
            (self.sampling_rate is not None and self.sampling_rate < 1,
             "no Poisson user sampling (its accounting is not zCDP)"),
            (self.aggregator == "winsorized" and self.calibration != "tight",
             "a zCDP plan (aggregator='clip' or 'trimmed', or "
             "calibration='tight')"),
        ) if bad]

    def _use_standardize(self):
        """``standardize`` resolved: ``"auto"`` is True whenever it applies."""
        problems = self._standardize_problems()
        if self.standardize == "auto":
            return not problems
        if self.standardize and problems:
            raise ValueError("standardize=True needs " + "; ".join(problems) + ".")
        return bool(self.standardize)

    def _zcdp_accounting(self):
        # with delta > 0 the releases compose in zCDP (the clip aggregator
        # also with the paper's calibration), except under Poisson sampling
        return (self.delta > 0
                and (self.aggregator != "winsorized"
                     or self.calibration == "tight")
                and (self.sampling_rate is None or self.sampling_rate >= 1))

    def _rows(self, X, y, groups, *, y_numeric=True):
        """The row source of a fit (validated): in memory or on Dask.

        Returns ``(rows, y)``; ``y`` is the validated in-memory target array
        (``None`` for Dask input, whose targets stay in the partitions).
        """
        if any(is_dask_collection(v) for v in (X, y, groups)):
            # a classifier's labels become class codes inside the partitions
            target_map = None if y_numeric else partial(_checked_label_codes,
                                                        self._classes(None))
            rows = DaskRows(self._dask_panel(X, y, groups, target_map, stacklevel=5))
            # one pass counts the users' rows, before any release
            check_min_users(self, rows.n_users, int(rows.counts.sum()))
            return rows, None
        X, y, codes, n_users = self._validate_supervised(
            X, y, groups, y_numeric=y_numeric, stacklevel=6)
        targets = y.astype(np.float64) if y_numeric else y
        return InMemoryRows(X, targets, codes, n_users), y

    def _fit_model(self, make_loss, rows, n_outputs, target_bounds=None):
        """Fit on the rows clipped to their box in box units (optionally
        privately standardised); return ``(coef, intercept)`` of shapes
        ``(n_outputs, n_features)`` and ``(n_outputs,)`` in the units of
        ``X`` and ``y``. ``rows`` is a row source
        (:mod:`skuserdp.linear_model._rows`); ``make_loss(y_half)`` builds
        the loss on the scaled targets."""
        standardize = self._use_standardize()
        scale, pre_loss, epsilon, seed = self._public_scale(
            rows.n_features, rows.user_columns(), target_bounds=target_bounds)
        self._record_scale(scale)
        loss = make_loss(scale.y_half)
        few = self._few_users(rows.n_users, epsilon, loss, standardize)
        if few is not None and self.standardize == "auto":
            standardize = False  # few users: no private standardisation
        Z = rows.map(partial(_box_units, scale))
        if not standardize:
            W = self._fit_parameters(loss, Z.map(partial(_augment_rows,
                                                         bool(self.fit_intercept))),
                                     n_outputs, epsilon=epsilon, random_state=seed,
                                     pre_loss=pre_loss, few_users=few)
            return scale.unscale(*self._set_coef(W))
        pre_budget, eps_rest = split_zcdp(epsilon, self.delta, self.standardize_share)
        seed_scale, seed_fit = make_seed_sequence(seed).spawn(2)
        ones = np.ones(Z.n_features)
        center, spread, std_loss = standardization_from_user_means(
            partial(_user_means_of_rows, Z), Z.n_users, Z.n_features,
            budget=pre_budget, lower=-ones, upper=ones,
            random_state=seed_scale, n_jobs=self.n_jobs)
        bound = standardized_row_bound(Z.n_features)
        W = self._fit_parameters(
            loss, Z.map(partial(_standardize_rows, center, spread, bound)), n_outputs,
            epsilon=eps_rest, row_bound=float(np.hypot(bound, 1.0)),
            random_state=seed_fit, few_users=few, centered_rows=True,
            pre_loss=std_loss if pre_loss is None else compose(pre_loss, std_loss))
        coef = W[:, :-1] / spread
        self.feature_center_ = scale.mid + scale.half * center
        self.feature_scale_ = scale.half * spread
        return scale.unscale(coef, W[:, -1] - coef @ center)

    def _private_smoothness(self, loss, rows, row_bound, epsilon, seed):
        """``learning_rate="auto"``: the smoothness of the *average* loss.

        Its Hessian is at most ``c·mean_u mean_i x̃x̃ᵀ`` (``c`` the loss's
        curvature constant), whose largest eigenvalue is at most its trace,
        the users' mean of ``mean_i ‖x̃‖²`` — often far below the worst-case
        ``row_bound²``. One clip-and-noise release of that mean (each user's
        value lies in ``[0, row_bound²]``) from ``SMOOTH_SHARE`` of the zCDP
        budget, charged; ``H`` uses its upper confidence bound (+2 noise
        SDs). Returns ``(H, loss, epsilon_rest, seed_rest)``.
        """
        first, eps_rest = split_zcdp(epsilon, self.delta, SMOOTH_SHARE)
        seed_h, seed_rest = make_seed_sequence(seed).spawn(2)
        b2 = float(row_bound) ** 2
        per_user = rows.user_means(_squared_row_norms)
        plan = plan_clip_noise(rows.n_users, 1, budget=first, radius=0.5 * b2)
        released = clip_noise_from_plan(per_user, plan, center=np.array([0.5 * b2]),
                                        random_state=seed_h)[0]
        upper = min(b2, max(released, 0.0) + 2.0 * math.sqrt(plan.noise_variance))
        self.mean_squared_row_norm_ = float(released)
        H = loss.smoothness(math.sqrt(upper)) + float(self.alpha)
        return H, plan.loss, eps_rest, seed_rest

    def _private_intercept(self, rows, epsilon, seed):
        """The starting intercept of ``clip_norm="auto"`` (regression): the
        users' mean target in box units (each user's mean lies in
        ``[-1, 1]``), one clip-and-noise release from ``INTERCEPT_SHARE`` of
        the zCDP budget, charged. Starting there, the gradient norms whose
        median sets the clip norm reflect the slopes, not the offset of the
        target's box. Returns ``(b0, loss, epsilon_rest, seed_rest)``."""
        first, eps_rest = split_zcdp(epsilon, self.delta, INTERCEPT_SHARE)
        seed_b, seed_rest = make_seed_sequence(seed).spawn(2)
        per_user = rows.user_means(_target_column)
        plan = plan_clip_noise(rows.n_users, 1, budget=first, radius=1.0)
        b0 = float(np.clip(clip_noise_from_plan(per_user, plan, random_state=seed_b)[0],
                           -1.0, 1.0))
        return b0, plan.loss, eps_rest, seed_rest

    def _private_target_spread(self, rows, center, plan, budget, seed):
        """The target's spread, for :meth:`_check_target_spread`.

        ``N`` = :func:`prediction_noise_bound` of the plan (public). One
        clip-and-noise release (``budget``: ``TARGET_SPREAD_SHARE`` of the
        zCDP budget, charged) of the users' means of the two capped parts
        ``(min((ỹ − c)⁺, cap), min((c − ỹ)⁺, cap))``, ``cap =
        SPREAD_CAP·N`` (``c`` a released centre, box units: the fitted
        intercept of standardised rows, else the starting intercept):
        each user's pair lies in the square ``[0, cap]²``, so the noise is
        on the scale of ``N``, not of the target's box. Returns
        ``((N, released, noise_variance), loss)``."""
        N = prediction_noise_bound(plan)
        cap = SPREAD_CAP * N
        if not cap > 0.0:  # no noise: nothing to check, nothing released
            return None, ZCDP(0.0)
        per_user = rows.user_means(partial(_capped_parts, float(center), cap))
        sp = plan_clip_noise(rows.n_users, 2, budget=budget,
                             radius=cap / math.sqrt(2.0))
        released = clip_noise_from_plan(per_user, sp,
                                        center=np.full(2, 0.5 * cap),
                                        random_state=seed)
        return (N, released, sp.noise_variance), sp.loss

    def _check_target_spread(self, N, released, noise_variance):
        """Warn when the target's standard deviation cannot be shown to
        exceed the plan's bound of the prediction noise (post-processing of
        a released value and public values; no further cost).

        The fit's predictions carry noise of root mean square at most ``N``
        (:func:`prediction_noise_bound`); predicting the mean costs the
        target's variance. Unless a lower confidence bound of the target's
        standard deviation (:func:`target_spread_lower_bound`) exceeds ``N``,
        the noise may be as large as the target's spread and the fit worse
        than the mean. (The converse does not hold: a fit whose noise is
        below the spread can still lose to the mean when the features
        explain less of the variance than the noise adds.)"""
        lower = target_spread_lower_bound(released, noise_variance)
        if lower < N:
            warn_at_caller(
                f"{type(self).__name__} may be worse than predicting the mean: "
                "the target's spread cannot be shown to exceed the noise of "
                "its predictions at this budget (a lower confidence bound of "
                f"the target's standard deviation is {lower:.3g}, the plan's "
                f"bound of the prediction noise {N:.3g}, in the box units of "
                "target_bounds). "
                "Use tighter target_bounds, more users, or a larger epsilon.",
                AccuracyWarning)

    def _private_clip_norm(self, users_fn, theta0, epsilon, seed):
        """``clip_norm="auto"``: the private median of the users' gradient
        norms at the starting point, from ``CLIP_SHARE`` of the zCDP budget.

        Returns ``(C, loss, epsilon_rest, seed_rest)``."""
        # one bounded-range release: the privacy core splits and charges it
        eps0, loss, eps_rest, _ = split_for_public_bounds(
            epsilon, self.delta, CLIP_SHARE, 1, zcdp=True)
        seed_clip, seed_rest = make_seed_sequence(seed).spawn(2)
        norms = np.linalg.norm(users_fn()(theta0), axis=1)
        C = private_quantile(norms, 0.5, eps0, random_state=seed_clip)
        return C, loss, eps_rest, seed_rest

    def _few_users(self, n_users, epsilon, loss, standardize):
        """``(n_min, ε₀)`` when ``clip_norm="auto"`` has too few users for
        its private median, else ``None`` (public: n, the budget and the
        shares only; no privacy cost).

        ε₀ is the budget the clip release would get after the
        standardisation, smoothness and intercept shares (the same splits
        as the fit). The exponential mechanism of :func:`private_quantile`
        picks a point of its public grid (``K`` points) with probability
        ``∝ exp(−ε₀·cost/2)``; the median's point has cost 0, a point
        outside the users' norms cost about ``n/2``. Unless
        ``ε₀·n/4 ≥ ln K`` the points outside the data together weigh more
        than the median: the clip norm lands almost anywhere in
        ``[G/1000, G]`` (measured: a 1000-fold spread between seeds at 38
        users, ε = 4), and so does the noise of every step.
        """
        if not (self.clip_norm == "auto" and self.aggregator == "clip"
                and self._zcdp_accounting()):
            return None
        rest = epsilon
        if standardize:
            rest = split_zcdp(rest, self.delta, self.standardize_share)[1]
        if self.learning_rate == "auto":
            rest = split_zcdp(rest, self.delta, SMOOTH_SHARE)[1]
        if self.fit_intercept and not loss.is_classification:
            rest = split_zcdp(rest, self.delta, INTERCEPT_SHARE)[1]
        eps0 = split_for_public_bounds(rest, self.delta, CLIP_SHARE, 1, zcdp=True)[0]
        n_min = few_users_clip_threshold(eps0)
        return (n_min, eps0) if n_users < n_min else None

    def _warn_few_users(self, n_users, few, clip):
        warn_at_caller(
            f"{type(self).__name__}: {n_users} users are too few for the "
            f"private clip norm (clip_norm='auto') at this budget: its private "
            f"median needs about {few[0]} users (ε₀ = {few[1]:.3g}). The fit "
            f"uses the public rule clip_norm = radius·H/max_iter = {clip:.3g} "
            "(box units) without private standardisation; with so few users "
            "expect a large loss of accuracy, and a fit that can be worse "
            "than predicting the mean. Use more users or a larger epsilon.",
            AccuracyWarning)

    def _fit_parameters(self, loss, rows, n_outputs, *, epsilon=None,
                        row_bound=None, random_state=None, pre_loss=None,
                        few_users=None, centered_rows=False):
        """Plan and run the private optimisation on the augmented rows of the
        row source ``rows``; return the parameter matrix.

        ``epsilon``, ``row_bound`` and ``random_state`` override the
        estimator's (after a private standardisation whose loss ``pre_loss``
        is composed into the spend); ``centered_rows``: the rows are
        privately standardised (centred), so the fitted intercept is the
        model's mean prediction.
        """
        epsilon = self.epsilon if epsilon is None else epsilon
        row_bound = self._row_bound if row_bound is None else row_bound
        if random_state is None:
            random_state = fit_random_state(self.random_state)
        n_params = n_outputs * rows.n_features
        n_users = rows.n_users
        # targets are in box units: |y| <= 1 (regression; labels for classifiers)
        G, H = self._public_constants(loss, 1.0, row_bound)
        if self.learning_rate == "auto" and self._zcdp_accounting():
            H, smooth_loss, epsilon, random_state = self._private_smoothness(
                loss, rows, row_bound, epsilon, random_state)
            pre_loss = (smooth_loss if pre_loss is None
                        else compose(pre_loss, smooth_loss))
        tau = self._tau(G, H, n_params)
        sampling_rate = self._check_sampling()
        clip = None if self.clip_norm == "auto" else float(self.clip_norm)
        lr = None if self.learning_rate == "auto" else float(self.learning_rate)
        users_fn = rows.gradient_fn(loss, n_outputs, _user_gradient_fn)
        if self.estimand == "row_mean":
            # w_u = min(m_u, k)/k <= 1 times user u's average gradient,
            # BEFORE the release clips it (and before the private clip
            # norm's median of the norms): the replace-one sensitivity is
            # the clip's (or the winsorization's), unchanged -- no privacy
            # quantity changes; the counts are read here only
            users_fn = weighted_users_fn(
                users_fn, row_mean_weights(rows.counts, self.max_rows))
        penalty = self._penalty_gradient(n_outputs, rows.n_features)
        theta0 = np.zeros(n_params)
        learn_clip = (clip is None and self.aggregator in ("clip", "trimmed")
                      and self._zcdp_accounting())
        if learn_clip and self.fit_intercept and not loss.is_classification:
            # start at a private intercept (the users' mean target, box units)
            theta0[-1], icpt_loss, epsilon, random_state = self._private_intercept(
                rows, epsilon, random_state)
            pre_loss = icpt_loss if pre_loss is None else compose(pre_loss, icpt_loss)
        if learn_clip and few_users is not None:
            # few users (public): the clip with which T steps of length C/H
            # (step size 1/H) span the radius of the parameter ball
            clip = min(float(self.radius) * H / self.max_iter, G)
            self._warn_few_users(n_users, few_users, clip)
        elif learn_clip:
            clip, clip_loss, epsilon, random_state = self._private_clip_norm(
                users_fn, theta0, epsilon, random_state)
            # never above G (no clipping bias), never below G/1000 (a median
            # of vanishing gradients would freeze the fit)
            clip = min(max(clip, 1e-3 * G), G)
            pre_loss = clip_loss if pre_loss is None else compose(pre_loss, clip_loss)
        self.clip_norm_ = G if clip is None else clip
        spread = None
        if (learn_clip and few_users is None and self.fit_intercept
                and not loss.is_classification and self.solver == "gd"):
            # the target's spread (checked against the plan's noise below);
            # not with few users, whose fits already warn
            spread, epsilon = split_zcdp(epsilon, self.delta, TARGET_SPREAD_SHARE)
            seed_spread, random_state = make_seed_sequence(random_state).spawn(2)
        if self.solver == "gd":
            plan = plan_gradient_descent(
                n_users, n_params, epsilon=epsilon, delta=self.delta,
                n_steps=self.max_iter, aggregator=self.aggregator,
                gradient_bound=G, smoothness=H, radius=self.radius, clip_norm=clip,
                tau=tau(n_users) if callable(tau) else tau, gamma=self.gamma,
                sampling_rate=sampling_rate, learning_rate=lr,
                calibration=self.calibration,
                n_trim=(robust_trim(n_users, self.corrupted_fraction)
                        if self.aggregator == "trimmed" else 0))
            self._check_plan_loss(plan, pre_loss)
            theta = private_gradient_descent(
                users_fn(), plan, theta0=theta0, penalty_gradient=penalty,
                random_state=random_state, n_jobs=self.n_jobs,
                verbose=self.verbose, label=type(self).__name__)
            if spread is not None:
                # centre: the fitted intercept of centred (standardised)
                # rows, else the released starting intercept (box units)
                spread, spread_loss = self._private_target_spread(
                    rows, theta[-1] if centered_rows else theta0[-1], plan,
                    spread, seed_spread)
                pre_loss = (spread_loss if pre_loss is None
                            else compose(pre_loss, spread_loss))
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
        self._check_plan_accuracy(plan, loss, n_outputs)
        if spread is not None:
            self._check_target_spread(*spread)
        self.n_iter_ = plan.n_steps
        self.n_users_ = n_users
        self._set_spend(plan.loss if pre_loss is None
                        else compose(pre_loss, plan.loss))
        return theta.reshape(n_outputs, -1)

    def _check_plan_accuracy(self, plan, loss, n_outputs):
        """Warn when the plan's own public error bound is vacuous
        (post-processing of public values; no privacy cost).

        The excess-risk bound of noisy projected gradient descent with
        averaged iterates has the noise term ``ν·R/√T`` (ν² the total noise
        variance of one released gradient, R the radius of the parameter
        ball, T the steps; :ref:`papers-levy-step-sizes`),
        a lower bound on the whole bound. When
        it exceeds the largest loss of the zero model (targets and rows in
        box units), the plan cannot promise anything better than predicting
        zero. For Phased ERM the first phase, which carries the estimate, is
        checked.
        """
        step_plan = plan.phases[0] if isinstance(plan, PhasedPlan) else plan
        noise_term = (math.sqrt(step_plan.noise_variance / step_plan.n_steps)
                      * step_plan.radius)
        scale = loss.loss_at_zero(1.0, n_outputs)
        if noise_term > scale:
            warn_at_caller(
                f"{type(self).__name__}: the noise term of this plan's public "
                f"excess-risk bound ({noise_term:.3g}, in the box units of the "
                f"data) exceeds the largest loss of the zero model ({scale:.3g}): "
                "the fit is likely dominated by noise. Use more users, a larger "
                "epsilon, aggregator='clip' with calibration='tight' (the "
                "defaults), or tighter declared bounds.", AccuracyWarning)

    @staticmethod
    def _check_plan_loss(plan, pre_loss):
        """The earlier releases (boxes, clip norm, standardisation) compose
        with the plan: both zCDP, or both (ε, δ)-DP."""
        if pre_loss is not None and (isinstance(pre_loss, ZCDP)
                                     != isinstance(plan.loss, ZCDP)):
            raise ValueError(
                f"the preliminary releases spend a {type(pre_loss).__name__} loss "
                f"and this configuration plans a {type(plan.loss).__name__} loss; "
                "they do not compose directly (standardize=True needs "
                "aggregator='clip').")

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
""" + BOX_PARAMS_DOC + """
    radius : float, default=5.0
        Radius R of the public parameter ball ``‖(w, b)‖₂ ≤ R`` of the model
        on the box-scaled rows and targets (every coordinate in ``[-1, 1]``);
        every iterate is projected onto it.
    max_iter : int, default=100
        Number T of gradient steps (a public choice, never a data-driven
        stopping rule); with ``solver="phased_erm"`` the cap per phase.
    aggregator : {"clip", "winsorized", "trimmed"}, default="clip"
        How each step's mean of the per-user average gradients is released:
        ``"clip"`` clips them to ``clip_norm`` and adds discrete Gaussian
        noise (user-level DP-SGD); ``"winsorized"`` is Levy et al.'s
        Algorithm 3 (WinsorizedMean with a fresh random rotation per step),
        whose noise scales with the concentration radius ``tau`` of user
        gradients instead of the clip norm — it pays off when users have
        many rows. ``"trimmed"``: the coordinate-wise trimmed mean of the
        clipped gradients, ``k = ⌈αn⌉`` users dropped per side in
        every coordinate (α = ``corrupted_fraction``), with noise at
        ``2C/(n − 2k)``. It buys robustness to up to k arbitrary users,
        *not* privacy: its noise is ``n/(n − 2k)`` times the clip
        aggregator's (solver ``"gd"`` only).
    clip_norm : float or "auto", default="auto"
        ``aggregator="clip"`` or ``"trimmed"``: ℓ2 clip radius C of the
        per-user average gradients (on the box-scaled problem). ``"auto"``: with zCDP
        accounting (``delta > 0``, ``calibration="tight"``, no Poisson
        sampling), the private median of the users' gradient norms at the
        starting point (one exponential-mechanism release,
        :func:`skuserdp.mechanisms.private_quantile`, from 5% of ρ, charged;
        kept within ``[G/1000, G]``); for a regressor with an intercept the
        starting intercept is then first set to a private mean of the
        targets (2% of ρ), so that the median reflects the slopes rather
        than the offset of ``target_bounds``, and (unless too few users
        warn already) 5% of ρ goes to the target's spread, released after
        the fit and checked against the plan's noise (an
        ``AccuracyWarning`` when the fit may be worse than predicting the
        mean; :ref:`linear_models`). Otherwise the public gradient bound G
        (no clipping bias, much more noise). The value used is
        ``clip_norm_``.
    solver : {"gd", "phased_erm"}, default="gd"
        ``"gd"``: projected gradient descent with the step sizes of
        :ref:`papers-levy-step-sizes` and averaged
        iterates. ``"phased_erm"``: Levy et al.'s
        Algorithm 4 (disjoint user blocks of halving size, regularised
        towards the previous phase with ``λ_t = 4^t·λ``; each phase uses the
        whole budget by parallel composition).
    learning_rate : float or "auto", default="auto"
        ``"auto"``: ``η = 1/(H + ν√T/R)`` from the smoothness H and the
        data-independent noise level ν of the released gradients, with the
        average of the last half of the iterates. With zCDP accounting H is
        the smoothness of the *average* loss, bounded by the users' mean
        squared row norm (released privately from 5% of ρ, charged, upper
        confidence bound: ``mean_squared_row_norm_``), often far below the
        worst-case ``row_bound²`` used otherwise. A float is a constant step
        size (same averaging).
    sampling_rate : float, default=None
        Poisson user sampling (``aggregator="clip"``, ``solver="gd"``): each
        step uses every user independently with this public probability and
        divides by the public expected count. Accounted with privacy loss
        distributions by the optional dp-accounting package
        (``pip install "skuserdp[accounting]"``); the noise is discrete
        Gaussian on the lattice, like every other release.
        ``None`` uses all users in every step.
    tau : float or "auto", default="auto"
        ``aggregator="winsorized"``: public concentration radius of the
        per-user average gradients. ``"auto"`` uses Proposition 1's radius
        (:ref:`papers-levy-gradients-radius`), which needs ``samples_per_user``.
    samples_per_user : int, default=None
        Public minimum number of rows per user (``tau="auto"`` and Phased
        ERM's constants). Never read it off the data.
    gamma : float, default=0.01
        ``aggregator="winsorized"``: failure probability of the accuracy
        guarantee (utility only).
    corrupted_fraction : float, default=0.0
        ``aggregator="trimmed"``: public upper bound α, in ``[0, 1/2)``, on
        the fraction of users whose data may be arbitrary; ignored by the
        other aggregators.
    standardize : bool or "auto", default="auto"
        Privately centre and scale every feature before the optimisation
        (see "Private standardisation" in the Notes): two clip-and-noise
        releases, of the users' feature means and of their mean absolute
        deviations, spend ``standardize_share`` of the budget (in zCDP); the
        model is fitted on the standardised rows and mapped back, so
        ``coef_`` and ``intercept_`` act on ``X`` as given. Worth it when
        the boxes are loose and the features' spreads differ a lot (wage
        panel at ε = 1: median R² 0.13 against 0.08 without;
        ``benchmarks/README.md``). Needs ``fit_intercept=True``,
        ``delta > 0``, ``calibration="tight"``, no ``sampling_rate`` and a
        zCDP plan; ``"auto"`` standardises exactly when these hold.
    standardize_share : float, default=0.2
        Fraction in (0, 1) of the zCDP budget ``ρ(ε, δ)`` spent on the
        standardisation (half on the centres, half on the spreads).
    {calibration}
    interval : {None, "groups"}, default=None
        ``None``: one fit on all users, no interval (:meth:`conf_int`
        raises ``AttributeError``). ``"groups"``: subsample and aggregate
        for :meth:`conf_int` and ``bse_`` (see "Confidence intervals" in the
        Notes): the users are split into ``n_groups`` disjoint groups by a
        random permutation that depends only on their number, the same
        configuration is fitted on every group at the **full** budget
        (parallel composition: the fit spends what one group's fit spends),
        and ``coef_``/``intercept_`` are the mean of the group fits. This
        changes the point estimate: its privacy noise is about ``√K`` times
        that of one fit on all users.
    n_groups : int >= 2 or "auto", default="auto"
        K of ``interval="groups"``. ``"auto"`` uses public quantities only:
        ``K = min(30, max(5, round(√n/2)), ⌊n/n_g⌋)`` with
        ``n_g = ⌈100/√ρ⌉`` users (ρ the zCDP budget of ``(epsilon,
        delta)``, ``ε²/2`` for ``delta=0``): below about ``n_g`` users a
        group's private clip norm fails too often (measured: about 640
        users at ε = 1, 180 at ε = 4) and that group's fit is lost in noise.
        ``"auto"`` refuses fewer than ``2·n_g`` users. Ignored with
        ``interval=None``.
""" + estimand_params_doc(
        "Here the weight\n"
        "        multiplies the user's average gradient (every step, and at the\n"
        "        starting point of ``clip_norm=\"auto\"``).") + """
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
    {feature_attributes}
    privacy_loss_ : ZCDP, ApproxDP or PureDP
        The composed privacy loss of the fit.
    epsilon_, delta_ : float
        That loss as (ε, δ) (zCDP converted at ``delta``); at most the
        targets.
    rho_ : float or None
        The zCDP ρ spent, when the loss is zCDP or pure.
    bounds_ : tuple (lower, upper)
        The box of the rows (declared, or learned privately).
    clip_norm_ : float
        The clip norm used (on the box-scaled problem; a private release
        when ``clip_norm="auto"``).
    mean_squared_row_norm_ : float
        With ``learning_rate="auto"`` and zCDP accounting: the private
        users' mean squared row norm behind the step size (box units).
    feature_center_, feature_scale_ : ndarray of shape (`n_features_in_`,)
        With ``standardize=True`` only: the private centres and spreads in
        the units of ``X`` (user-level DP releases, part of the spend).
    n_groups_ : int
        With ``interval="groups"`` only: K, the number of groups.
    group_estimators_ : list of estimators
        With ``interval="groups"`` only: the K fits (``interval=None``), one
        per group of users, each a release at the full budget. Their
        private knobs (``clip_norm_``, ``mean_squared_row_norm_``,
        ``feature_center_``, learned boxes) are per group and are not set on
        the grouped estimator; its ``bounds_`` (and ``target_bounds_``) are
        the smallest box holding every group's box (``predict`` clips to
        it)."""

_NOTES = """\
    The fit sees the data only through one private mean of the users'
    average gradients per step; projections, step sizes, averaging and the
    penalty are post-processing. Nothing non-private is stored: no loss
    curve, no count of clipped users.

    **Confidence intervals** (``interval="groups"``, subsample and
    aggregate; spec ``intervals_and_weights.md`` §2.7). The noise of DP-SGD
    has no closed-form law after projections, clipping and averaging, so
    the estimator measures it: K disjoint groups of users, drawn by a
    permutation of the user codes from a child seed (data-independent), are
    fitted separately, each with its own noise stream and its own private
    knobs (boxes with ``"auto"``, clip norm, step size, standardisation),
    at the full budget. Replacing one user changes one group's fit only, so
    the K fits together cost the largest single loss
    (:func:`skuserdp.privacy.compose_parallel`): ``privacy_loss_`` is one
    group's loss, at most the budget. ``coef_`` and ``intercept_`` are the
    means of the K fits and :meth:`conf_int` is ``mean ± t_{{K−1}}·sd_K/√K``
    (``sd_K`` the standard deviation of the K estimates): the spread across
    groups measures the sampling of users and the privacy noise together
    (``bse_ = sd_K/√K``). Rows of :meth:`conf_int`: ``coef_`` flattened in
    C order, then the intercept(s); with a DataFrame they are labelled by
    the feature names (``"class:feature"`` for a classifier, the positive
    class for two classes) and ``"intercept"``. The interval covers the
    coefficients the estimator converges to on ``n/K`` users: for correctly
    specified models with data inside the boxes and the parameter ball,
    no penalty and enough users per group, the population coefficients of
    the per-user-mean-weighted model (rows weighted ``1/m_i``). Biases that
    do not average out (clipping of rows to the boxes and of gradients to
    the clip norm, the projection onto the ball, the penalty, and the
    small-group bias of order K/n) are not in the interval: K stays far below
    ``√n`` for that reason. The t interval is valid when the group estimates
    are close to independent Gaussians of equal mean (Ibragimov & Müller;
    conservative at α ≤ 5% for unequal variances).

    **Scaling without leaking.** Fitting a ``StandardScaler`` or
    ``MinMaxScaler`` on the private data is itself a leak (its means,
    variances or extremes are published in the scaler and shape the model).
    Pass raw units: the estimator scales by the public boxes ``bounds`` (and
    ``target_bounds``), declared from a codebook, a survey design or domain
    knowledge, or learned privately with ``"auto"``.

    **Private standardisation** (``standardize=True``, a step of ours,
    not from the papers). Clipped isotropic noise is only as good as the
    geometry of the features: with loose public ranges the small-spread
    features drown in it. The estimator then releases per-feature centres
    ``m̂`` (mean of the users' means, rows clipped to the box ``bounds``) and
    spreads ``ŝ = √(π/2)·`` mean of the users' mean absolute deviations from
    ``m̂``, each at half of ``standardize_share·ρ``. A released deviation is
    floored at two standard deviations of its own (public) noise, and the
    spread at 5% of the box's half-range: an under-estimated spread would
    inflate the feature's curvature past the step size. It then fits on
    ``z = (x − m̂)/ŝ`` with rows projected onto the ball of radius
    ``3√n_features`` (``radius``, ``alpha`` and ``clip_norm`` then act on the
    standardised scale) with the remaining ``(1 − standardize_share)·ρ``, and
    maps the model back. On the wage panel (545 persons) at ε = 1 it lifts the
    median R² from 0.07 to 0.156 (OLS 0.187; ``benchmarks/README.md``).

    Repeated fits on the same users (grid search, cross-validation) compose:
    their privacy losses add up. To choose hyper-parameters privately use
    :func:`skuserdp.model_selection.select_model_privately` on held-out
    users.

""" + ESTIMAND_NOTES_DOC + """

    The groups interval covers the chosen estimand (each group's fit weighs
    its users the same way). With ``aggregator="winsorized"`` the
    concentration radius ``tau`` is about the users' average gradients; the
    weights spread them further (privacy is unaffected: the winsorization
    bounds every contribution)."""


@fill_doc
class UserDPSGDRegressor(UserDPRegressorMixin, _BaseUserDPSGD):
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
    target_bounds : "auto" or tuple (lower, upper), default="auto"
        Public range of ``y`` (floats), e.g. from a codebook; targets are
        clipped to it and scaled to ``[-1, 1]``. ``"auto"`` learns it
        privately with the feature boxes (same share of the budget).
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
    >>> reg = UserDPSGDRegressor(epsilon=1.0, bounds=(-0.5, 0.5),
    ...                          target_bounds=(-1.0, 1.0),
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
        "target_bounds": [StrOptions({"auto"}), "array-like"],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, loss="squared_error",
                 huber_delta=1.35, target_bounds="auto", alpha=0.0,
                 fit_intercept=True, bounds="auto", bounds_share=None, radius=5.0,
                 max_iter=100, aggregator="clip", clip_norm="auto", solver="gd",
                 learning_rate="auto", sampling_rate=None, tau="auto",
                 samples_per_user=None, gamma=0.01, corrupted_fraction=0.0,
                 standardize="auto",
                 standardize_share=0.2, calibration="tight", interval=None,
                 n_groups="auto", estimand="user_mean", max_rows=None,
                 random_state=None, n_jobs=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.loss = loss
        self.huber_delta = huber_delta
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.bounds_share = bounds_share
        self.alpha = alpha
        self.fit_intercept = fit_intercept
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
        self.corrupted_fraction = corrupted_fraction
        self.standardize = standardize
        self.standardize_share = standardize_share
        self.calibration = calibration
        self.interval = interval
        self.n_groups = n_groups
        self.estimand = estimand
        self.max_rows = max_rows
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, groups=None):
        """Fit the private linear model.

        Parameters
        ----------
        {X_supervised}
        y : array-like of shape (n_samples,)
            Targets. Not modified.
        {groups}

        Returns
        -------
        self : object
            The fitted estimator.
        """
        with quiet_floating_point():  # no warning may depend on the data
            check_estimand(self)
            X, groups = split_groups_column(X, groups)  # groups='column name'
            if self.interval == "groups":
                fits = self._fit_groups(X, y, groups, y_numeric=True)
                self.coef_ = np.mean([f.coef_ for f in fits], axis=0)
                self.intercept_ = float(np.mean([f.intercept_ for f in fits]))
                self._group_interval(fits, "regressor")
                return self
            self._forget_groups()
            rows, _ = self._rows(X, y, groups)

            def make_loss(y_half):  # the Huber threshold in box units of y
                return get_loss(self.loss, huber_delta=self.huber_delta / y_half)

            coef, intercept = self._fit_model(make_loss, rows, 1, self.target_bounds)
            self.coef_ = coef[0]
            self.intercept_ = float(intercept[0])
            return self


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
    classes : array-like
        The public set of labels (required; ``None``, the default only so that
        the estimator can be constructed without arguments, makes ``fit``
        raise). It is never read off ``y``: the label set of the private data
        is itself private (a label held by a single user would reveal that
        user). ``y`` may hold only labels from ``classes``; declared labels
        absent from ``y`` are fine.
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
                 fit_intercept=True, bounds="auto", bounds_share=None, radius=5.0,
                 max_iter=100, aggregator="clip", clip_norm="auto", solver="gd",
                 learning_rate="auto", sampling_rate=None, tau="auto",
                 samples_per_user=None, gamma=0.01, corrupted_fraction=0.0,
                 standardize="auto",
                 standardize_share=0.2, calibration="tight", interval=None,
                 n_groups="auto", estimand="user_mean", max_rows=None,
                 random_state=None, n_jobs=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.alpha = alpha
        self.fit_intercept = fit_intercept
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
        self.corrupted_fraction = corrupted_fraction
        self.standardize = standardize
        self.standardize_share = standardize_share
        self.calibration = calibration
        self.interval = interval
        self.n_groups = n_groups
        self.estimand = estimand
        self.max_rows = max_rows
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _classes(self, y):
        """The declared classes (sorted); ``y`` (if not None) must hold no
        other label."""
        if self.classes is not None:
            classes = np.unique(np.asarray(self.classes))
            if classes.shape[0] < 2:
                raise ValueError(
                    f"{type(self).__name__} needs at least 2 classes; got "
                    f"{classes.shape[0]} class.")
            if _has_missing(classes):
                raise ValueError(
                    f"{type(self).__name__}: classes contains a missing value "
                    "(None or NaN), which no label equals. Declare the public "
                    "labels only.")
            if y is not None:
                _label_codes(classes, y)
            return classes
        raise ValueError(
            f"{type(self).__name__} needs classes=[...], the public set of labels: "
            "reading it from y would publish which labels occur in the private "
            "data (a label held by a single user reveals that user).")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, groups=None):
        """Fit the private classifier.

        Parameters
        ----------
        {X_supervised}
        y : array-like of shape (n_samples,)
            Labels. Not modified.
        {groups}

        Returns
        -------
        self : object
            The fitted estimator.
        """
        with quiet_floating_point():  # no warning may depend on the data
            check_estimand(self)
            X, groups = split_groups_column(X, groups)  # groups='column name'
            if self.interval == "groups":
                fits = self._fit_groups(X, y, groups, y_numeric=False)
                self.classes_ = fits[0].classes_
                self.coef_ = np.mean([f.coef_ for f in fits], axis=0)
                self.intercept_ = np.mean([f.intercept_ for f in fits], axis=0)
                self._group_interval(fits, "classifier")
                return self
            self._forget_groups()
            rows, y = self._rows(X, y, groups, y_numeric=False)
            if y is not None:  # in memory (Dask labels are checked in the partitions)
                check_classification_targets(y)
            classes = self._classes(y)
            self.classes_ = classes
            loss = get_loss("log_loss", n_classes=classes.shape[0])
            n_outputs = loss.n_outputs(classes.shape[0])
            if y is not None:
                rows = InMemoryRows(rows.X, _label_codes(classes, y), rows.codes,
                                    rows.n_users)
            self.coef_, self.intercept_ = self._fit_model(lambda _: loss, rows,
                                                          n_outputs)
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
            metadata routing, which sends ``groups`` to ``score``, works. A
            string names ``X``'s user-id column, which is taken out of ``X``.

        Returns
        -------
        score : float
            The fraction of correctly classified rows.
        """
        X, _ = split_groups_column(X, groups)
        return self._accuracy(X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
