"""DiscreteDistributionEstimator: a user-level private distribution over classes.

Esfandiari, Mirrokni and Narayanan [EMN22]_, Corollary 8 (docs:
:ref:`papers-emn-discrete`): every row is one-hot encoded over the
public classes (a row outside them is the zero vector, a per-user map), each
user is reduced to its class frequencies, and their mean — the
distribution — is estimated by

* the few-users ball sampler (:class:`FewUsersBallEstimator`'s core) with
  the per-row radius 1 (``E‖e_X − p‖² = 1 − ‖p‖² ≤ 1``), for few users; or
* Levy et al.'s WinsorizedMean with Corollary 1's McDiarmid radius for rows
  of ℓ2 norm 1, for many users (the paper's "large-n regime").

``route="auto"`` compares the two from public values only: the few-users
error bound ``(max(√d, 2) + 1)·10/√m`` against three times the
WinsorizedMean plan's noise RMSE (its no-failure error); the smaller wins.
The estimate is projected onto the probability simplex (post-processing; it
never moves farther from a distribution in ℓ2).

The unit of privacy is the user (replace-one, n public).
"""

import math

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Integral, Interval, Real, StrOptions

from ..base import BUDGET_CONSTRAINTS, UserLevelMixin
from ..inference import ConfidenceIntervalMixin
from ..privacy import ApproxDP
from ..users._aggregate import user_class_counts
from ..users._column import split_groups_column
from ..users._dask import is_dask_collection
from ..users._groups import _has_missing, check_groups_alignment
from ..users._resolve import check_not_sparse, estimator_dask_table, resolve_groups
from ..utils._docstrings import fill_doc
from ..utils._numeric import quiet_floating_point
from ..utils._random import fit_random_state
from ..utils._validation import validate_rows
from ._concentration import tau_bounded_rows
from ._few_users import few_users_mean, user_radius
from ._winsorized import _winsorized_mean, plan_winsorized_mean

__all__ = ["DiscreteDistributionEstimator", "project_to_simplex"]


def project_to_simplex(v):
    """Euclidean projection of a vector onto the probability simplex.

    Parameters
    ----------
    v : array-like of shape (d,)

    Returns
    -------
    p : ndarray of shape (d,)
        ``argmin_{p ≥ 0, Σp = 1} ‖p − v‖``.

    Examples
    --------
    >>> from skuserdp.mean._discrete import project_to_simplex
    >>> project_to_simplex([0.5, 0.7, -0.2]).round(2)
    array([0.4, 0.6, 0. ])
    """
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1.0), 0.0)


def _check_classes_match_column(classes, column_dtype, name):
    """Refuse classes of another kind than the column (strings vs numbers).

    ``classes=['0', '1']`` on an integer column (or ``[0, 1]`` on a string
    column) matches no row at all, and the estimate would silently be the
    uniform distribution. Decided from the column's dtype, which is part of
    the schema, never from the values (an ``object`` column is not checked).
    """
    kind = column_dtype.kind
    # pandas' string dtypes (Dask converts object columns to them) are strings
    column_is_str = kind in "US" or type(column_dtype).__name__ == "StringDtype"
    if kind == "O" and not column_is_str:
        return
    is_str = [isinstance(c, (str, bytes, np.str_, np.bytes_)) for c in classes.tolist()]
    if column_is_str and not any(is_str) or not column_is_str and all(is_str):
        raise ValueError(
            f"{name}: classes {classes.tolist()!r} are "
            f"{'numbers' if column_is_str else 'strings'} but X holds "
            f"{'strings' if column_is_str else 'numbers'} (dtype {column_dtype}): "
            "no row would match a class and the estimate would be meaningless. "
            "Declare classes of the same type as the column.")


def _column_dtype(meta):
    """The dtype of the one column of a Dask collection's metadata."""
    dtypes = getattr(meta, "dtypes", None)
    return meta.dtype if dtypes is None else dtypes.iloc[0]


@fill_doc
class DiscreteDistributionEstimator(ConfidenceIntervalMixin, UserLevelMixin,
                                    BaseEstimator):
    """User-level private distribution of one categorical column (EMN Cor. 8).

    Each user's rows give that user's class frequencies; the estimate is a
    private mean of those frequency vectors, projected onto the probability
    simplex. With few users the few-users ball sampler is used (accurate from
    about ``8 ln(1/δ)/ε`` users on, for any number of classes), with many
    users Levy et al.'s WinsorizedMean; ``route="auto"`` picks from public
    values only.

    {user_level_note}

    Parameters
    ----------
    classes : array-like of shape (n_classes,)
        The public categories, in the order of ``probabilities_`` (required;
        the default None only exists for scikit-learn's cloning and raises in
        ``fit``). They must not be read off the private data (that would
        reveal which rare categories occur). Rows with a value outside
        ``classes`` count for their user as "no class" (a zero vector).
    {epsilon}
    delta : float, default=1e-6
        Failure probability δ, in ``(0, 1)``.
    samples_per_user : int, default=1
        Public minimum number of rows per user m; the accuracy radius of a
        user's frequencies is ``10/√m``.
    route : {{"auto", "few_users", "winsorized"}}, default="auto"
        Which estimator of the mean frequencies (see above).
    alpha : float, default=0.1
        Failure probability of the few-users route's accuracy guarantee (and
        γ of the WinsorizedMean route).
    {calibration}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    probabilities_ : ndarray of shape (n_classes,)
        The private distribution (non-negative, sums to 1).
    classes_ : ndarray of shape (n_classes,)
        The public classes.
    route_ : {{"few_users", "winsorized"}}
        The route taken.
    garbage_ : bool
        Whether the few-users sampler released its garbage bucket (then
        ``probabilities_`` is uniform).
    n_users_ : int
        Number of users.
    epsilon_, delta_ : float
        The (ε, δ) spent.
    rho_ : float or None
        zCDP parameter if the release has one, else None.
    privacy_loss_ : PureDP, ApproxDP or ZCDP
        Native guarantee of the release.
    n_features_in_ : int
        Always 1.
    feature_names_in_ : ndarray of shape (1,)
        Name of the column, if ``X`` had one.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import DiscreteDistributionEstimator
    >>> rng = np.random.default_rng(0)
    >>> users = np.repeat(np.arange(3000), 20)
    >>> labels = rng.choice(["a", "b", "c"], p=[0.5, 0.3, 0.2], size=users.size)
    >>> est = DiscreteDistributionEstimator(classes=["a", "b", "c"],
    ...                                     samples_per_user=20, random_state=0)
    >>> est.fit(labels.reshape(-1, 1), groups=users).probabilities_.round(1)
    array([0.5, 0.3, 0.2])
    """

    _parameter_constraints: dict = {
        "classes": [None, "array-like"],
        **BUDGET_CONSTRAINTS,
        # (the few-users route needs delta > 0)
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "samples_per_user": [Interval(Integral, 1, None, closed="left")],
        "route": [StrOptions({"auto", "few_users", "winsorized"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
    }
    _min_users = 2

    #: why conf_int refuses (ConfidenceIntervalMixin)
    _no_interval_reason = (
        "its estimate is projected onto the probability simplex after the "
        "few-users or Winsorized release, neither of which has an interval "
        "(docs: 'Confidence intervals'); the per-class frequencies as columns "
        "of UserMeanEstimator with bounds (0, 1) give intervals.")

    def __init__(self, classes=None, epsilon=1.0, delta=1e-6, *, samples_per_user=1,
                 route="auto", alpha=0.1, calibration="tight", random_state=None,
                 n_jobs=None):
        self.classes = classes
        self.epsilon = epsilon
        self.delta = delta
        self.samples_per_user = samples_per_user
        self.route = route
        self.alpha = alpha
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _choose_route(self, n_users, n_classes):
        if self.route != "auto":
            return self.route
        m = self.samples_per_user
        few = (max(math.sqrt(n_classes), 2.0) + 1.0) * user_radius(1.0, m, n_users)[0]
        tau = tau_bounded_rows(1.0, m, n_users, self.alpha)
        plan = plan_winsorized_mean(
            n_users, n_classes, tau=tau, value_range=math.sqrt(n_classes),
            budget=ApproxDP(self.epsilon, self.delta), gamma=self.alpha,
            calibration=self.calibration)
        levy = 3.0 * math.sqrt(n_classes * plan.noise_variance)
        return "winsorized" if levy < few else "few_users"

    def _check_classes(self):
        if self.classes is None:
            raise ValueError(
                "classes must be given: the categories are public knowledge and "
                "are never read off the private data."
            )
        classes = np.asarray(self.classes)
        if classes.ndim != 1 or classes.size < 2:
            raise ValueError("classes must be a 1-d array-like of at least 2 labels.")
        if _has_missing(classes):
            raise ValueError(
                "classes contains a missing value (None or NaN): no row equals "
                "NaN, so that class would always be empty. Declare the public "
                "categories only (rows outside them count as no class).")
        if len(set(classes.tolist())) != classes.size:
            raise ValueError("classes must not repeat a label.")
        return classes

    def _check_column(self, n_columns, dtype, classes):
        if n_columns != 1:
            raise ValueError(
                f"{type(self).__name__} expects one categorical column, got "
                f"{n_columns} columns."
            )
        _check_classes_match_column(classes, dtype, type(self).__name__)

    def _in_memory_frequencies(self, X, y, groups):
        """Each user's class frequencies: ``(freqs, n_users, classes)``."""
        check_not_sparse(X)
        if np.ndim(X) == 1:
            raise ValueError(
                "Expected a 2-d X with one column, got a 1-d array: use "
                "X.reshape(-1, 1) (or series.to_frame() for a pandas Series)."
            )
        check_groups_alignment(groups, X)
        # the column's own dtype (a pandas string column becomes object)
        dtypes = getattr(X, "dtypes", None)
        X = validate_rows(self, X, dtype=None, finite=False)
        classes = self._check_classes()
        self._check_column(X.shape[1], X.dtype if dtypes is None or len(dtypes) != 1
                           else dtypes.iloc[0], classes)
        codes, n_users = resolve_groups(self, y, groups, X.shape[0])
        freqs = user_class_counts(X[:, 0], classes, codes, n_users)
        rows = np.bincount(codes, minlength=n_users)
        np.divide(freqs, rows[:, None], out=freqs)  # (no second table)
        return freqs, n_users, classes

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, groups=None):
        """Fit the private distribution of the classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            One categorical value per row (strings, ints, ...), as a single
            column (e.g. a one-column DataFrame). Not modified.
        y : None
            Ignored (a :class:`~skuserdp.exceptions.YIgnoredWarning` is
            raised if given without ``groups``).
        {groups}

        Returns
        -------
        self : object
            The fitted estimator.
        """
        with quiet_floating_point():  # no warning may depend on the data
            X, groups = split_groups_column(X, groups)  # groups='column name'
            if is_dask_collection(X) or is_dask_collection(groups):
                classes = self._check_classes()
                table = estimator_dask_table(
                    self, X, y, groups, classes=classes,
                    check_meta=lambda meta: self._check_column(
                        meta.shape[1], _column_dtype(meta), classes))[0]
                freqs, n_users, d = table.means, table.means.shape[0], classes.size
            else:
                freqs, n_users, classes = self._in_memory_frequencies(X, y, groups)
                d = classes.size
            route = self._choose_route(n_users, d)
            self.garbage_ = False
            if route == "few_users":
                location, loss, _ = few_users_mean(
                    freqs, epsilon=self.epsilon, delta=self.delta, radius=1.0,
                    samples_per_user=self.samples_per_user, alpha=self.alpha,
                    calibration=self.calibration,
                    random_state=fit_random_state(self.random_state),
                    n_jobs=self.n_jobs)
                if location is None:
                    self.garbage_ = True
                    location = np.full(d, 1.0 / d)
            else:
                tau = tau_bounded_rows(1.0, self.samples_per_user, n_users, self.alpha)
                location, loss, _ = _winsorized_mean(
                    freqs, epsilon=self.epsilon, delta=self.delta, tau=tau, bound=1.0,
                    samples_per_user=None, sub_gaussian_sigma=None, tau_share=0.1,
                    gamma=self.alpha, calibration=self.calibration,
                    random_state=fit_random_state(self.random_state),
                    n_jobs=self.n_jobs, overwrite=True)
            self.probabilities_ = project_to_simplex(location)
            self.classes_ = classes.copy()
            self.route_ = route
            self.n_users_ = n_users
            self._set_spend(loss)
            return self
