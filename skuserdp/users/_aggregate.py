"""Per-user aggregation: the first step of every user-level estimator.

Each user is reduced to one per-user statistic (here the mean of the user's
rows) before any mechanism runs. Every later privacy argument relies on this:
one user's data changes exactly one row of the per-user table.

The implementation streams through ``X`` once: a sparse user-indicator matrix
in compressed-column form (one non-zero per row of ``X``) is multiplied with
``X``, which scatters each row into its user's sum without sorting or copying
``X``. Cost O(n_rows · n_features) plus the factorisation of ``groups``.
Each user's sum depends only on that user's rows (in their order), so the
per-user means are a per-user function of the data.

A sum can overflow although every row is finite (a user with rows of 1e308).
The mean of finite numbers is finite, so the (user, feature) entries whose sum
overflowed are recomputed from the rows scaled by the exact power of two
``2^-64``: one user's finite values never make a mean infinite (which would
make a fit fail, a side channel). The recomputation is exact up to rounding,
is a per-user function of the data, and leaves every entry that did not
overflow bit for bit unchanged.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..utils._validation import check_rows
from ._groups import check_groups, check_groups_alignment

__all__ = ["UserMeans", "user_means", "user_class_counts"]


class UserMeans(NamedTuple):
    """Result of :func:`user_means`.

    Attributes
    ----------
    means : ndarray of shape (n_users, n_features)
        Mean of each user's rows.
    counts : ndarray of shape (n_users,)
        Number of rows of each user.
    labels : ndarray of shape (n_users,)
        User id of each row of ``means``.

    Examples
    --------
    >>> from skuserdp.users import user_means
    >>> result = user_means([[1.0], [2.0]], groups=["a", "a"])
    >>> result.counts.tolist(), result.means.ravel().tolist()
    ([2], [1.5])
    """

    means: np.ndarray
    counts: np.ndarray
    labels: np.ndarray


def _sums_by_code(X, codes, n_users):
    """Per-user column sums of ``X`` (float64, C-contiguous) by user code."""
    n_rows = X.shape[0]
    indicator = sp.csc_array(
        (np.ones(n_rows), codes, np.arange(n_rows + 1)), shape=(n_users, n_rows)
    )
    return np.asarray(indicator @ X)


#: exact power-of-two scale of the rows when a user's sum overflows: the
#: scaled sum of fewer than 2^63 finite rows is below 2^(1024-64+63)
_OVERFLOW_SCALE = 2.0 ** -64


def _means_from_sums(sums, counts, scaled_sums, finite=None):
    """Per-user means ``sums / counts``, finite whenever the rows are finite.

    ``sums`` (float64, one row of column sums per user) is divided in place
    when it is writeable. A non-finite mean of finite rows comes from an
    overflowing sum: those entries are recomputed from
    ``scaled_sums(_OVERFLOW_SCALE)``, each user's sums of its rows times that
    scale. ``finite()`` tells whether the rows are finite (called only when a
    mean is not); ``None``: they are (validated).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        means = np.divide(sums, counts[:, None],
                          out=sums if sums.flags.writeable else None)
        if np.isfinite(means).all() or not (finite is None or finite()):
            return means
        bad = ~np.isfinite(means)
        scaled = scaled_sums(_OVERFLOW_SCALE)
        big = np.finfo(np.float64).max
        means[bad] = np.clip(
            scaled[bad] / counts.repeat(bad.sum(axis=1)) / _OVERFLOW_SCALE,
            -big, big)
    return means


def _means_by_code(X, codes, n_users):
    """Per-user means and row counts; finite whenever ``X`` is finite."""
    counts = np.bincount(codes, minlength=n_users)
    with np.errstate(over="ignore", invalid="ignore"):
        sums = _sums_by_code(X, codes, n_users)
    means = _means_from_sums(
        sums, counts, lambda scale: _sums_by_code(X * scale, codes, n_users),
        finite=lambda: np.isfinite(X).all())
    return means, counts


def _class_codes(values, classes):
    lookup = {c: k for k, c in enumerate(classes.tolist())}
    try:
        uniq, inverse = np.unique(values, return_inverse=True)
        mapped = np.array([lookup.get(u, -1) for u in uniq.tolist()], dtype=np.intp)
        return mapped[inverse.ravel()]
    except TypeError:  # mixed types cannot be sorted
        return np.array([lookup.get(v, -1) for v in values.tolist()], dtype=np.intp)


def user_class_counts(values, classes, codes, n_users):
    """Each user's count of every class (rows of other values count in no
    class): an ``(n_users, n_classes)`` float array, a per-user function of
    the data (the categorical counterpart of :func:`_means_by_code`)."""
    d = classes.shape[0]
    cls = _class_codes(values, classes)
    valid = cls >= 0
    cells = codes[valid] * d + cls[valid]
    # float64 counts straight from the bincount (sums of ones: exact), with
    # no int64 table to convert (but for no cell at all: bincount then
    # returns int64 zeros)
    counts = np.bincount(cells, weights=np.ones(cells.size), minlength=n_users * d)
    return counts.astype(np.float64, copy=False).reshape(n_users, d)


def user_means(X, groups=None):
    """Mean of every user's rows, with row counts and user labels.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The rows, any number per user (unequal counts are fine). A pandas
        DataFrame is accepted, and so are a Dask array or Dask DataFrame:
        then the aggregation runs on Dask's scheduler (e.g. a
        ``dask.distributed`` cluster) and only the per-user table is
        gathered (see the user guide, "Data larger than memory"). Must be
        finite.
    groups : array-like of shape (n_samples,), str or dask collection, default=None
        User id of every row (any hashable labels, e.g. a pandas Series).
        ``None`` makes every row its own user. With a pandas DataFrame
        ``X``, the name of its user-id column (which is then not a feature).
        With a Dask DataFrame ``X``, that name or a Dask Series partitioned
        like ``X``; with a Dask array ``X``, a Dask array or an in-memory
        array.

    Returns
    -------
    result : UserMeans
        Named tuple ``(means, counts, labels)``: ``means[k]`` is the mean of
        the rows of user ``labels[k]``, who has ``counts[k]`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.users import user_means
    >>> X = np.array([[1.0], [3.0], [10.0]])
    >>> means, counts, labels = user_means(X, groups=["u", "u", "v"])
    >>> means.ravel().tolist(), counts.tolist(), labels.tolist()
    ([2.0, 10.0], [2, 1], ['u', 'v'])
    """
    from ._column import split_groups_column
    from ._dask import dask_user_table, is_dask_collection

    X, groups = split_groups_column(X, groups)  # groups='column name'
    if is_dask_collection(X) or is_dask_collection(groups):
        if not is_dask_collection(X):
            raise ValueError("groups is a Dask collection but X is not: pass X "
                             "as a Dask array or DataFrame too.")
        return dask_user_table(X, groups)[0]
    check_groups_alignment(groups, X)
    X = check_rows(X, dtype=np.float64, order="C", input_name="X")
    n_rows = X.shape[0]
    if groups is None:
        return UserMeans(X.copy(), np.ones(n_rows, dtype=np.intp), np.arange(n_rows))
    codes, labels = check_groups(groups, n_rows)
    means, counts = _means_by_code(X, codes, labels.shape[0])
    return UserMeans(means, counts, labels)
