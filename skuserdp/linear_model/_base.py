"""What the user-level linear models share: inputs, public boxes, spend.

One vocabulary for the public domain. ``bounds=(lower, upper)``
per feature of ``X`` and, for regressors, ``target_bounds=(lower, upper)``,
in the units of the data; ``"auto"`` learns the box privately at user level
(:func:`skuserdp.mechanisms.learn_box_for_fit` on the users' means, charged to
the fit). Rows and targets are then clipped to their boxes and mapped to
``[-1, 1]`` per coordinate (``z = (x − mid)/half``): a per-row, hence
per-user, operation. The optimisation runs on ``z`` (rows of ℓ2 norm at most
``√n_features``; with an intercept the augmented row ``(z, 1)``), and the
fitted model is mapped back to the units of ``X`` and ``y``.
"""

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import (
    BOUNDS_CONSTRAINTS,
    BUDGET_CONSTRAINTS,
    UserLevelMixin,
    _box_half_width,
    _box_midpoint,
)
from ..inference import ConfidenceIntervalMixin
from ..mechanisms import learn_box_for_fit
from ..users._aggregate import _means_by_code
from ..users._dask import DaskPanel, is_dask_collection, refuse_dask
from ..users._groups import check_groups_alignment, check_y_alignment
from ..users._column import split_groups_column
from ..users._resolve import check_not_sparse, resolve_user_codes, warn_item_level
from ..utils._random import fit_random_state
from ..utils._validation import check_bounds, check_targets, validate_rows

__all__ = ["project_rows", "row_mean_weights", "user_averaging_matrix",
           "weighted_users_fn"]


def project_rows(X, bound):
    """Project every row of ``X`` onto the ℓ2 ball of radius ``bound`` (a copy).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    bound : float

    Returns
    -------
    X_proj : ndarray of shape (n_samples, n_features)
    """
    norms = np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return X * scale[:, None]


def radial_clip_factors(v, clip_radius, norm):
    """Per-row factors ``min(1, clip_radius/‖v_i‖)`` (ℓ2 or ℓ1 norm) of the
    radial clip of the users' sufficient-statistics vectors ``v`` (one row
    per user; a zero row gets 1)."""
    if norm == "l2":
        norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    else:
        norms = np.abs(v).sum(axis=1)
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, clip_radius / norms)


def user_averaging_matrix(codes, n_users):
    """Sparse ``A`` with ``(A @ V)[u]`` the mean of user ``u``'s rows of ``V``.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        User code of every row.
    n_users : int

    Returns
    -------
    A : scipy.sparse.csr_array of shape (n_users, n_samples)
    """
    counts = np.bincount(codes, minlength=n_users).astype(np.float64)
    n_rows = codes.shape[0]
    return sp.csr_array((1.0 / counts[codes], (codes, np.arange(n_rows))),
                        shape=(n_users, n_rows))


def row_mean_weights(counts, max_rows):
    """Per-user weights ``w_i = min(m_i, k)/k`` of ``estimand="row_mean"``.

    ``counts`` holds every user's row count ``m_i`` (private: user ``i``'s
    weight is a function of user ``i``'s own data only) and ``max_rows``
    the public cap ``k``. Every weight lies in ``[0, 1]`` (0 only for a
    code without rows, whose statistics are zeros anyway).

    Privacy: the weight multiplies the user's own statistic *before* the
    estimator's per-user clipping, which bounds every user's contribution
    whatever that user's data (weight included): the replace-one
    sensitivity, hence every plan and its calibration, is unchanged. Since
    ``w_i <= 1`` the weight never enlarges a contribution either, so the
    public bounds of the unclipped statistics (gradient bound, second-moment
    bounds) still hold.
    """
    counts = np.asarray(counts, dtype=np.float64)
    k = float(max_rows)
    return np.minimum(counts, k) / k


def weighted_users_fn(for_users, weights):
    """A ``for_users`` gradient function (see
    :func:`skuserdp.linear_model._user_gradients.user_gradient_fn`) whose
    user rows are multiplied by their ``weights`` (:func:`row_mean_weights`),
    before the release clips them (the weighting is a per-user function of
    the user's data; see :func:`row_mean_weights` for why the sensitivity is
    unchanged)."""
    weights = np.asarray(weights, dtype=np.float64)

    def weighted_for_users(users=None):
        inner = for_users(users)
        w = (weights if users is None
             else weights[np.asarray(users, dtype=np.intp)])[:, None]

        def gradients(theta):
            return inner(theta) * w

        return gradients

    return weighted_for_users


@dataclass(frozen=True)
class PublicScale:
    """The boxes of a fit and the affine map to ``[-1, 1]`` per coordinate.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_features,)
        The box of the rows.
    y_lower, y_upper : float or None
        The box of the targets (regressors), else None.
    """

    lower: np.ndarray
    upper: np.ndarray
    y_lower: object = None
    y_upper: object = None

    @property
    def mid(self):
        return _box_midpoint(self.lower, self.upper)

    @property
    def half(self):
        return _box_half_width(self.lower, self.upper)

    @property
    def y_mid(self):
        if self.y_lower is None:
            return 0.0
        return _box_midpoint(self.y_lower, self.y_upper)

    @property
    def y_half(self):
        if self.y_lower is None:
            return 1.0
        return float(_box_half_width(self.y_lower, self.y_upper))

    def rows(self, X):
        """Rows clipped to the box, in box units ``[-1, 1]`` (a new array)."""
        Z = np.clip(X, self.lower, self.upper)
        Z -= self.mid
        Z /= self.half
        return Z

    def targets(self, y):
        """Targets clipped to their box, in box units (a new array)."""
        if self.y_lower is None:
            return np.asarray(y, dtype=np.float64).copy()
        return (np.clip(y, self.y_lower, self.y_upper) - self.y_mid) / self.y_half

    def unscale(self, coef_z, intercept_z):
        """Map a model on ``(z, y_z)`` back to ``(x, y)``.

        ``y = y_mid + y_half·(w·z + b)`` with ``z = (x − mid)/half`` gives
        ``coef = y_half·w/half`` and ``intercept = y_mid + y_half·(b −
        Σ w·mid/half)``.
        """
        w = np.atleast_2d(coef_z) / self.half
        coef = self.y_half * w
        intercept = self.y_mid + self.y_half * (np.asarray(intercept_z) - w @ self.mid)
        return coef, intercept


BOX_PARAMS_DOC = """\
    bounds : "auto" or tuple (lower, upper), default="auto"
        Public box of the rows, in the units of ``X``: ``lower`` and
        ``upper`` are floats (broadcast) or arrays of shape (n_features,),
        e.g. a codebook's ranges. Rows are clipped to it and the model is
        fitted on ``(x − mid)/half`` (every coordinate in ``[-1, 1]``), then
        mapped back: ``coef_`` acts on ``X`` as given. ``"auto"`` learns it
        privately (one joint noisy log2 histogram of the users' means, with
        the target's when ``target_bounds="auto"``; the box spans the
        outermost well-filled cells plus one octave; see
        :func:`skuserdp.mechanisms.plan_log_ranges`) from ``bounds_share``
        of the budget, included in ``epsilon_``. Rows outside the box are
        clipped (a bias, never a privacy cost); a feature shared by most
        users at one value (a rare binary feature) gets a flat box: declare
        its bounds.
    bounds_share : float, default=None
        Share of the budget spent learning the ``"auto"`` boxes (of ρ when
        the fit is accounted in zCDP, of ε otherwise); ``None`` picks it
        from the number of users and columns (public): 0.05 to 0.5."""


def estimand_params_doc(statistic):
    """The docstring of ``estimand`` and ``max_rows``; ``statistic`` says
    what the weight multiplies in this estimator (a sentence)."""
    return ESTIMAND_PARAMS_DOC.replace("STATISTIC", statistic)


ESTIMAND_PARAMS_DOC = """\
    estimand : {"user_mean", "row_mean"}, default="user_mean"
        What the fit estimates (see "Estimand: users or rows" in the Notes).
        The unit of privacy is the user in both. ``"user_mean"``: every user
        weighs the same -- the loss is the mean over users of each user's
        mean row loss (rows weighted ``1/m_i``, ``m_i`` the user's rows).
        ``"row_mean"``: the row-level loss with each user's contribution
        capped at ``max_rows`` rows -- user ``i``'s mean statistic is
        multiplied by ``w_i = min(m_i, k)/k`` before the per-user clipping
        (rows weighted ``min(m_i, k)/m_i``; with ``k`` at least every
        user's row count, the ordinary row-level fit). The weights are at
        most 1 and applied before the clipping, so the replace-one
        sensitivity and the privacy guarantee are unchanged. STATISTIC
    max_rows : int >= 1 or None, default=None
        The public cap ``k`` of ``estimand="row_mean"`` (required there);
        choose it without looking at the data. Must be None with
        ``estimand="user_mean"`` (a ValueError otherwise)."""


ESTIMAND_NOTES_DOC = """\
    **Estimand: users or rows.** ``estimand="user_mean"`` (the default)
    fits the model of the *typical user*: the objective is
    ``(1/n) Σ_i L_i(θ)`` with ``L_i`` user ``i``'s mean row loss, i.e. a
    row-level fit with row weights ``1/m_i``. ``estimand="row_mean"`` with
    cap ``k = max_rows`` fits the model of the *rows*, each user counting
    for at most ``k`` of them: ``(1/n) Σ_i w_i L_i(θ) = (1/(nk)) Σ_i
    min(m_i, k) L_i(θ)``, ``w_i = min(m_i, k)/k``, a row-level fit with row
    weights ``min(m_i, k)/m_i`` (the Rao-Blackwellised form of truncating
    every user to ``k`` random rows, as OpenDP and Tumult do: the same
    estimand, less variance). Prefer ``"user_mean"`` when each user is one
    unit of interest (a person, a firm) and heavy users should not dominate;
    prefer ``"row_mean"`` when the rows are the population (transactions,
    visits) and users are only the unit of privacy. Truncation bias: the
    ``"row_mean"`` estimand with cap ``k`` equals the row-level estimand
    only when no user has more than ``k`` rows, or when the number of rows
    is unrelated to the user's data. A larger ``k`` removes that bias, but
    a light user's weight ``m_i/k`` shrinks, and with it the data term
    against the same noise. Privacy is unchanged: ``w_i <= 1`` is a
    function of user ``i``'s own data, applied before the per-user
    clipping, so no sensitivity, plan or calibration changes (the row counts
    are read for the weights only). With a penalty (``alpha``) the relative
    strength of the penalty changes: the data term is ``(1/n)Σ w_i L_i``,
    whose scale is ``Σ w_i / n <= 1`` times that of ``"user_mean"``, so the
    same ``alpha`` regularises ``n/Σ w_i`` times more strongly."""


#: extra octaves of a learned box (:func:`skuserdp.mechanisms.plan_log_ranges`):
#: it is learned from the users' means but clips their rows, which spread more
ROW_BOX_MARGIN = 1


def in_memory_user_columns(X, y, codes, n_users):
    """``user_columns`` of :meth:`_UserDPLinearModel._public_scale` for
    in-memory rows: the per-user means of the features (``auto_x``) and of
    the target (``auto_y``), side by side."""
    def user_columns(auto_x, auto_y):
        cols = []
        if auto_x:
            cols.append(_means_by_code(X, codes, n_users)[0])
        if auto_y:
            cols.append(_means_by_code(np.asarray(y, dtype=np.float64)[:, None],
                                       codes, n_users)[0])
        return np.hstack(cols)
    return user_columns


def dask_user_columns(panel, check=None):
    """``user_columns`` of :meth:`_UserDPLinearModel._public_scale` for a
    :class:`~skuserdp.users._dask.DaskPanel` (one pass over the partitions);
    ``check(table)`` runs on the gathered table first."""
    def user_columns(auto_x, auto_y):
        table = panel.user_means(with_target=auto_y)
        if check is not None:  # e.g. too few users: before any release
            check(table)
        means = table.means
        return means if auto_x else means[:, -1:]
    return user_columns


class _UserDPLinearModel(ConfidenceIntervalMixin, UserLevelMixin, BaseEstimator):
    """Base class: validation, public boxes and the fitted spend.

    ``conf_int``/``bse_`` (:class:`~skuserdp.inference.ConfidenceIntervalMixin`)
    work for the models whose fit records an interval state; the others say
    why not (``_no_interval_reason``).
    """

    #: why a fit has no confidence interval (a model may set it per fit)
    _no_interval_reason = ("this model has no interval construction (docs: "
                           "'Confidence intervals').")

    _parameter_constraints: dict = {
        **BUDGET_CONSTRAINTS,
        "fit_intercept": ["boolean"],
        **BOUNDS_CONSTRAINTS,
    }

    _min_users = 2

    def _validate_supervised(self, X, y, groups, *, y_numeric=True, stacklevel=5):
        """Validate X, y and groups; return (X, y, codes, n_users).
        ``stacklevel`` of the warning without groups, from this frame (5:
        called by ``fit``)."""
        refuse_dask(type(self).__name__, X, y, groups)
        check_not_sparse(X)
        check_groups_alignment(groups, X)
        check_y_alignment(y, X)
        X, y = validate_rows(self, X, y, dtype=np.float64, order="C",
                             y_numeric=y_numeric, multi_output=False)
        codes, n_users = resolve_user_codes(self, groups, X.shape[0],
                                            stacklevel=stacklevel)
        return X, y, codes, n_users

    def _dask_panel(self, X, y, groups, target_map=None, stacklevel=4):
        """Validate Dask input (metadata only) as :meth:`_validate_supervised`
        does in memory; return its :class:`~skuserdp.users._dask.DaskPanel`.
        ``stacklevel`` of the warning without groups, from the caller's frame
        (4: called by ``fit``)."""
        if not is_dask_collection(X):
            raise ValueError("y or groups is a Dask collection but X is not: pass "
                             "X as a Dask array or DataFrame too, or all in memory.")
        if groups is None:
            warn_item_level(self, stacklevel=stacklevel)
        panel = DaskPanel(X, groups, y, target_map=target_map)
        validate_data(self, panel.meta, skip_check_array=True)
        return panel

    def _r2_score(self, X, y, sample_weight):
        """``score`` of the regressors: R², with ``y`` (and the weights)
        validated first, so that no message shows a held-out value."""
        y = check_targets(y)
        if sample_weight is not None:
            sample_weight = check_targets(sample_weight, name="sample_weight")
        return float(r2_score(y, self.predict(X), sample_weight=sample_weight))

    def _accuracy(self, X, y, sample_weight):
        """``score`` of the classifiers: the fraction (weighted) of rows whose
        label is predicted, computed here: scikit-learn's ``accuracy_score``
        prints the labels when their types differ from the classes'. A label
        outside ``classes`` counts as a wrong prediction."""
        y = check_targets(y, numeric=False)
        pred = self.predict(X)
        if y.shape[0] != pred.shape[0]:
            raise ValueError(f"X has {pred.shape[0]} rows but y has {y.shape[0]}: "
                             "pass one label per row.")
        right = np.fromiter((bool(p == t) for p, t in zip(pred.tolist(), y.tolist())),
                            dtype=bool, count=y.shape[0])
        if sample_weight is not None:
            sample_weight = check_targets(sample_weight, name="sample_weight")
            if sample_weight.shape != right.shape:
                raise ValueError(f"sample_weight has {sample_weight.shape[0]} "
                                 f"values but X has {right.shape[0]} rows.")
        return float(np.average(right, weights=sample_weight))

    def _augment(self, Z):
        """Rows in box units, with a column of ones for the intercept."""
        if self.fit_intercept:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
        return Z

    @property
    def _feature_bound(self):
        """ℓ2 bound of rows in box units: ``√n_features``."""
        return math.sqrt(self.n_features_in_)

    @property
    def _row_bound(self):
        b = self._feature_bound
        return math.sqrt(b * b + 1.0) if self.fit_intercept else b

    def _zcdp_accounting(self):
        """Whether the fit's own releases are accounted in zCDP."""
        return self.delta > 0 and self.calibration == "tight"

    def _public_scale(self, p, user_columns, *, target_bounds=None):
        """Resolve the boxes of the rows (and targets): declared or learned.

        ``p`` is the number of features; ``user_columns(auto_x, auto_y)``
        returns the per-user means of the columns whose box is learned (the
        features' then the target's, one row per user), see
        :func:`in_memory_user_columns`.

        Returns ``(scale, loss, epsilon, random_state)``: the
        :class:`PublicScale`, the loss of the private bounds step (None when
        everything was declared), the ε left for the fit (at the same δ) and
        the seed of the rest of the fit.
        """
        regress = target_bounds is not None
        auto_x = isinstance(self.bounds, str)
        auto_y = regress and isinstance(target_bounds, str)
        names = getattr(self, "feature_names_in_", None)
        if not auto_x:
            lower, upper = check_bounds(self.bounds, p, feature_names=names)
        if regress and not auto_y:
            yl, yu = check_bounds(target_bounds, 1, name="target_bounds")
            y_box = (float(yl[0]), float(yu[0]))
        k = p * auto_x + auto_y
        if k == 0:
            scale = PublicScale(lower, upper, *(y_box if regress else (None, None)))
            return scale, None, self.epsilon, fit_random_state(self.random_state)
        # the columns of the learned box: the features', then the target's
        columns = (list(range(p) if names is None else names) if auto_x else [])
        lo, hi, loss, eps_rest, _, seed_rest = learn_box_for_fit(
            type(self).__name__, user_columns(auto_x, auto_y), epsilon=self.epsilon,
            delta=self.delta, share=self.bounds_share, zcdp=self._zcdp_accounting(),
            random_state=fit_random_state(self.random_state),
            feature_names=columns + (["y"] if auto_y else []),
            # rows, not user means, are clipped to it: one octave more
            margin=ROW_BOX_MARGIN)
        if auto_x:
            lower, upper = lo[:p], hi[:p]
        if auto_y:
            y_box = (float(lo[-1]), float(hi[-1]))
        scale = PublicScale(lower, upper, *(y_box if regress else (None, None)))
        return scale, loss, eps_rest, seed_rest

    def _record_scale(self, scale):
        """Fitted boxes (declared, or private releases that were charged)."""
        self.bounds_ = (scale.lower, scale.upper)
        if scale.y_lower is not None:
            self.target_bounds_ = (scale.y_lower, scale.y_upper)

    def _set_coef(self, W):
        """Split the parameter matrix ``(n_outputs, p)`` into coef_/intercept_."""
        if self.fit_intercept:
            coef, intercept = W[:, :-1], W[:, -1]
        else:
            coef, intercept = W, np.zeros(W.shape[0])
        return coef, intercept

    def _decision(self, X):
        check_is_fitted(self)
        if is_dask_collection(X):
            raise NotImplementedError(
                f"{type(self).__name__} predicts on in-memory rows: for Dask "
                "data, map it over the partitions, e.g. "
                "X.map_partitions(est.predict) or "
                "X.map_blocks(est.predict, drop_axis=1).")
        check_not_sparse(X)
        X = validate_rows(self, X, reset=False, dtype=np.float64, order="C")
        X = np.clip(X, *self.bounds_)
        coef = np.atleast_2d(self.coef_)
        return X @ coef.T + self.intercept_


class UserDPRegressorMixin(RegressorMixin):
    """``predict``, ``score`` and tags of the user-level private regressors
    (listed first among a regressor's bases, before its
    :class:`_UserDPLinearModel`)."""

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
            routing, which sends ``groups`` to ``score``, works. A string
            names ``X``'s user-id column, which is taken out of ``X``.

        Returns
        -------
        score : float
            The coefficient of determination.
        """
        X, _ = split_groups_column(X, groups)
        return self._r2_score(X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
