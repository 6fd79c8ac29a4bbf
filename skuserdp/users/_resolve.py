"""From an estimator's ``fit(X, y, groups=...)`` to its users.

What every estimator does before any private computation: refuse sparse
input, validate ``X`` against the estimator (``n_features_in_``, names),
map ``groups`` to user codes -- warning loudly when ``groups`` is missing
(``fit(X, user_ids)`` binds the ids to ``y``), since every row then counts as
its own user and the guarantee is item-level -- refuse too few users, and
aggregate each user's rows in memory or on Dask. The unit of privacy is the
user: all rows with the same ``groups`` label are one user's data.

``stacklevel`` arguments count frames from the function that receives them,
so that the warnings point at the line that called ``fit``.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

from ..exceptions import ItemLevelPrivacyWarning, YIgnoredWarning
from ..utils._validation import validate_rows
from ._aggregate import _means_by_code
from ._column import split_groups_column
from ._dask import dask_user_table, is_dask_collection
from ._groups import check_groups, check_groups_alignment

__all__ = ["check_not_sparse", "check_min_users", "warn_item_level", "warn_y_ignored",
           "resolve_user_codes", "resolve_groups", "estimator_dask_table",
           "fit_user_means", "held_out_user_means"]


def check_not_sparse(X):
    """Refuse a sparse ``X`` (per-user means of sparse rows are dense)."""
    if sp.issparse(X):
        raise ValueError(
            "sparse input is not supported: per-user means of sparse rows are dense; "
            "convert X with X.toarray() if it fits in memory."
        )


def check_min_users(estimator, n_users, n_samples):
    """Refuse a fit with fewer users than ``estimator._min_users``."""
    if n_users < estimator._min_users:
        raise ValueError(
            f"{type(estimator).__name__} needs at least {estimator._min_users} "
            f"users, got {n_users} user(s) (n_samples = {n_samples}). With one "
            "user the output would be pure noise."
        )


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


def resolve_groups(estimator, y, groups, n_samples):
    """:func:`resolve_user_codes` for an estimator that ignores ``y`` (a mean
    estimator): ``y`` without ``groups`` (``fit(X, user_ids)``) warns that
    ``y`` is ignored instead. Called two frames below ``fit``."""
    if groups is None and y is not None:
        warn_y_ignored(estimator, stacklevel=5)
        return resolve_user_codes(estimator, None, n_samples, warn=False)
    return resolve_user_codes(estimator, groups, n_samples, stacklevel=6)


def estimator_dask_table(estimator, X, y, groups, *, classes=None, check_meta=None,
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
    table, meta = dask_user_table(X, groups, classes=classes, check_meta=check_meta)
    validate_data(estimator, meta, reset=reset, skip_check_array=True)
    if reset:
        check_min_users(estimator, table.means.shape[0], int(table.counts.sum()))
    return table, meta


def _float_rows(estimator, X, groups, *, reset):
    """In-memory ``X`` as validated float64 rows (not sparse, aligned with a
    pandas ``groups``); ``reset`` sets ``n_features_in_``, else checks it."""
    check_not_sparse(X)
    check_groups_alignment(groups, X)
    return validate_rows(estimator, X, reset=reset, dtype=np.float64, order="C")


def fit_user_means(estimator, X, y, groups):
    """The users' means of a mean estimator's ``fit`` (called by ``fit``).

    ``groups`` may name ``X``'s user-id column; Dask input is aggregated on
    Dask. Validates ``X`` (float, finite, setting ``n_features_in_``),
    warns without ``groups`` and refuses too few users.

    Returns
    -------
    means : ndarray of shape (n_users, n_features)
        One row per user, ordered by sorted user id.
    n_users : int
    """
    X, groups = split_groups_column(X, groups)  # groups='column name'
    if is_dask_collection(X) or is_dask_collection(groups):
        means = estimator_dask_table(estimator, X, y, groups, stacklevel=5)[0].means
        return means, means.shape[0]
    X = _float_rows(estimator, X, groups, reset=True)
    codes, n_users = resolve_groups(estimator, y, groups, X.shape[0])
    return _means_by_code(X, codes, n_users)[0], n_users


def fit_user_table(estimator, X, y, groups):
    """:func:`fit_user_means` with the users' row counts, and the rows.

    Returns
    -------
    means : ndarray of shape (n_users, n_features)
    n_users : int
    counts : ndarray of shape (n_users,)
        Row count of every user (private).
    rows, codes : ndarray or None
        The validated rows and their user codes (``None`` for Dask input).
    """
    X, groups = split_groups_column(X, groups)  # groups='column name'
    if is_dask_collection(X) or is_dask_collection(groups):
        table = estimator_dask_table(estimator, X, y, groups, stacklevel=5)[0]
        return table.means, table.means.shape[0], table.counts, None, None
    X = _float_rows(estimator, X, groups, reset=True)
    codes, n_users = resolve_groups(estimator, y, groups, X.shape[0])
    means, counts = _means_by_code(X, codes, n_users)
    return means, n_users, counts, X, codes


def held_out_user_means(estimator, X, groups):
    """The mean of the held-out users' means (a mean estimator's ``score``).

    ``groups=None`` treats every row as a user (no warning: scoring reads
    held-out data, it releases nothing). ``X`` is checked against the fitted
    ``n_features_in_``.

    Returns
    -------
    target : ndarray of shape (n_features,)
    """
    X, groups = split_groups_column(X, groups)  # groups='column name'
    if is_dask_collection(X) or is_dask_collection(groups):
        table = estimator_dask_table(estimator, X, None, groups, reset=False,
                                     warn=False)[0]
        return table.means.mean(axis=0)
    X = _float_rows(estimator, X, groups, reset=False)
    if groups is None:
        return X.mean(axis=0)
    codes, labels = check_groups(groups, X.shape[0])
    return _means_by_code(X, codes, labels.shape[0])[0].mean(axis=0)
