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
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from ._groups import check_groups

__all__ = ["UserMeans", "user_means"]


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


def _means_by_code(X, codes, n_users):
    counts = np.bincount(codes, minlength=n_users)
    sums = _sums_by_code(X, codes, n_users)
    return sums / counts[:, None], counts


def user_means(X, groups=None):
    """Mean of every user's rows, with row counts and user labels.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The rows, any number per user (unequal counts are fine). A pandas
        DataFrame is accepted. Must be finite.
    groups : array-like of shape (n_samples,), default=None
        User id of every row (any hashable labels, e.g. a pandas Series).
        ``None`` makes every row its own user.

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
    X = check_array(X, dtype=np.float64, order="C", input_name="X")
    n_rows = X.shape[0]
    if groups is None:
        return UserMeans(X.copy(), np.ones(n_rows, dtype=np.intp), np.arange(n_rows))
    codes, labels = check_groups(groups, n_rows)
    means, counts = _means_by_code(X, codes, labels.shape[0])
    return UserMeans(means, counts, labels)
