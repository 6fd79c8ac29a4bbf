"""Where the DP-SGD models read their rows: in memory or on Dask.

The private optimisers of :mod:`skuserdp.linear_model._dpsgd` touch the rows
only through per-user quantities: per-user means of a row-wise function (the
users' means for a learned box, the standardisation's centres and deviations,
the mean squared row norm, the mean target) and the per-user average
gradients. A *row source* holds the rows ``X``, the targets ``y`` and the
users, and gives exactly those:

* ``map(fn)``: the rows transformed row by row, ``fn(X, y) -> (X', y')``
  (box units, standardisation, projection, intercept column);
* ``user_means(fn)``: each user's mean of ``fn(X, y)`` (an array of one row
  per row of ``X``), one row per user;
* ``gradient_fn(loss, n_outputs)``: the ``for_users`` function of
  :func:`skuserdp.linear_model._user_gradients.user_gradient_fn`.

:class:`InMemoryRows` applies each ``map`` at once (as the in-memory code
always did). :class:`DaskRows` keeps the chain of maps and applies it inside
every partition, on Dask's scheduler, and gathers only tables of users: the
squared loss's per-user second moments once (one pass), and for the other
losses the users' gradients at every step (one pass over the partitions per
gradient step: persist ``X`` in the cluster's memory when it fits). A user
whose rows lie in one partition gets, bit for bit, the in-memory values.

Privacy is unchanged: every quantity is a per-user function of the data,
computed wherever the rows are.
"""

from functools import partial

import numpy as np

from ..users._aggregate import _means_by_code
from ._base import dask_user_columns, in_memory_user_columns
from ._user_gradients import (
    MAX_MOMENT_BYTES,
    _moments_fit,
    _MomentGradients,
    _RowGradients,
    _select_users,
    user_second_moments,
)
from ._losses import SquaredError

__all__ = ["DaskRows", "InMemoryRows"]


class InMemoryRows:
    """Rows, targets and user codes held in memory."""

    def __init__(self, X, y, codes, n_users):
        self.X, self.y, self.codes, self.n_users = X, y, codes, n_users

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def counts(self):
        """Rows per user (private: read only for ``estimand="row_mean"``'s
        per-user weights)."""
        return np.bincount(self.codes, minlength=self.n_users)

    def map(self, fn):
        X, y = fn(self.X, self.y)
        return InMemoryRows(X, y, self.codes, self.n_users)

    def user_columns(self):
        """``user_columns`` of the public-scale step (users' means of the
        features and of the target)."""
        return in_memory_user_columns(self.X, self.y, self.codes, self.n_users)

    def user_means(self, fn):
        return _means_by_code(fn(self.X, self.y), self.codes, self.n_users)[0]

    def gradient_fn(self, loss, n_outputs, factory):
        """``factory(loss, Xa, y, codes, n_users, n_outputs)`` on the rows."""
        return factory(loss, self.X, self.y, self.codes, self.n_users, n_outputs)


# ------------------------------------------------------ partition functions
def _apply(transforms, X, y):
    for fn in transforms:
        X, y = fn(X, y)
    return X, y


def _means_statistic(X, y, codes, n_users, *, transforms, fn):
    X, y = _apply(transforms, X, y)
    return _means_by_code(fn(X, y), codes, n_users)[0]


def _no_columns(X, y):
    return X[:, :0]


def _moments_statistic(X, y, codes, n_users, *, transforms):
    X, y = _apply(transforms, X, y)
    S, b = user_second_moments(X, y, codes, n_users)
    return np.hstack([S.reshape(n_users, -1), b])


def _gradient_statistic(X, y, codes, n_users, *, transforms, loss, n_outputs, theta):
    X, y = _apply(transforms, X, y)
    return _RowGradients(loss, X, y, codes, n_users, n_outputs).for_users()(theta)


class DaskRows:
    """Rows of a :class:`~skuserdp.users._dask.DaskPanel`, with a chain of
    row-wise maps applied inside every partition."""

    def __init__(self, panel, transforms=(), counts=None):
        self.panel = panel
        self.transforms = tuple(transforms)
        self._counts = [] if counts is None else counts  # shared, filled once

    def _table(self, statistic):
        _, table, counts = self.panel.user_statistics(statistic)
        if not self._counts:
            self._counts.append(counts)
        return table

    @property
    def counts(self):
        """Rows per user (one pass over the partitions the first time)."""
        if not self._counts:
            self._table(partial(_means_statistic, transforms=(), fn=_no_columns))
        return self._counts[0]

    @property
    def n_users(self):
        return int(self.counts.shape[0])

    @property
    def n_features(self):
        X, _ = _apply(self.transforms, np.zeros((1, self.panel.n_features)),
                      np.zeros(1))
        return X.shape[1]

    def map(self, fn):
        return DaskRows(self.panel, self.transforms + (fn,), self._counts)

    def user_columns(self):
        """``user_columns`` of the public-scale step, from the raw rows."""
        if self.transforms:
            raise RuntimeError("the public scale is learned from the raw rows")
        return dask_user_columns(self.panel)

    def user_means(self, fn):
        return self._table(partial(_means_statistic, transforms=self.transforms,
                                   fn=fn))

    def gradient_fn(self, loss, n_outputs, factory=None):
        """Per-user gradients: the second moments gathered once (squared loss,
        when they fit as in memory), else one pass per gradient step."""
        p = self.n_features
        n_rows = int(self.counts.sum())
        if type(loss) is SquaredError and _moments_fit(n_rows, self.n_users, p,
                                                       MAX_MOMENT_BYTES):
            table = self._table(partial(_moments_statistic,
                                        transforms=self.transforms))
            moments = _MomentGradients.from_moments(
                table[:, :p * p].reshape(-1, p, p), table[:, p * p:], n_outputs)
            return moments.for_users
        n_users = self.n_users

        def for_users(users=None):
            chosen = None if users is None else _select_users(users, n_users)

            def gradients(theta):
                table = self._table(partial(
                    _gradient_statistic, transforms=self.transforms, loss=loss,
                    n_outputs=n_outputs, theta=np.asarray(theta, dtype=np.float64)))
                return table if chosen is None else table[chosen]

            return gradients

        return for_users
