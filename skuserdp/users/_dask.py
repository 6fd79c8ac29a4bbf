"""Per-user aggregation of Dask collections (out-of-core and distributed data).

The per-user aggregation is the only pass over the rows in a mean estimator:
the private release works on the ``n_users x n_features`` table of per-user
means. For a Dask array or Dask DataFrame this pass runs where the data lives
(a ``dask.distributed`` cluster, or Dask's local schedulers): every partition
is reduced to the per-user sums and row counts of the users it holds, the
partial tables are merged in a tree (fan-in :data:`FAN_IN`) in partition
order, and only the merged table of users is gathered. The private step then
runs in memory on that table, exactly as for in-memory data.

Same data, same result: a partition is reduced with the in-memory kernel
(:func:`skuserdp.users._aggregate._sums_by_code`, rows added in their order),
users are ordered by their sorted ids as in memory, and an overflowing sum
gets the in-memory rescaling. When each user's rows lie in one partition (data
sorted or partitioned by user, the usual layout of a panel on disk), the
per-user means -- hence every estimate with the same ``random_state`` -- are
bit for bit those of the in-memory path. A user whose rows are spread over
several partitions has their partial sums added in partition order instead of
row order: the mean may differ from the in-memory one in the last bits (float
rounding of a different summation order), still a per-user function of the
data.

Privacy: with each user's rows in one partition (or partition boundaries
that do not depend on the data), the aggregation is a per-user function of
the data, as in memory, and the layout and the scheduler are public. A user
split over data-dependent boundaries (fixed row counts) can see other users'
rows move between partitions when one user changes, which changes their
means in the last bit (summation order): partition by user (user guide).
Nothing here releases anything.

Dask is an optional dependency (``pip install 'skuserdp[dask]'``); it is only
imported when a Dask collection is passed.
"""

import sys

import numpy as np

from ..utils._validation import check_rows
from ._aggregate import UserMeans, _means_from_sums, _sums_by_code, user_class_counts
from ._groups import _check_same_index, check_groups

__all__ = ["DaskPanel", "dask_user_table", "is_dask_collection", "refuse_dask"]

#: partial tables merged per node of the reduction tree
FAN_IN = 8


def is_dask_collection(obj):
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series, ...).

    Never imports Dask: an object can only be a Dask collection if Dask has
    been imported already.
    """
    if "dask" not in sys.modules:
        return False
    import dask

    return bool(dask.is_dask_collection(obj))


def refuse_dask(name, *values):
    """Refuse Dask input where it is not supported, instead of loading it all.

    NumPy would turn a Dask collection into one in-memory array silently
    (``np.asarray`` computes it): on data larger than memory, a crash long
    after the call.
    """
    if any(is_dask_collection(v) for v in values):
        raise NotImplementedError(
            f"{name} does not take Dask input yet (the estimators and "
            "skuserdp.users.user_means do): converting it would load all rows "
            "into memory. Pass in-memory arrays, e.g. X.compute(), if they fit.")


def _dask():
    try:
        import dask
        import dask.array  # noqa: F401 -- registers the collection types
    except ImportError as exc:  # pragma: no cover - dask passes its own objects
        raise ImportError(
            "Dask input needs dask: pip install 'skuserdp[dask]'") from exc
    return dask


# ------------------------------------------------------------- partition side
def _empty_partial(n_columns, labels_dtype=object):
    return (np.empty(0, dtype=labels_dtype), np.zeros((0, n_columns)),
            np.zeros(0, dtype=np.intp))


def _rows_and_ids(part, ids, feature_columns):
    """The feature rows and user ids of one partition (numpy / pandas)."""
    if isinstance(ids, str):  # a column of a DataFrame partition
        return part[feature_columns], part[ids]
    _check_same_index(
        ids, part,
        "a partition of groups has another index than the matching partition "
        "of X: pass groups as a column name of X, or a Dask Series partitioned "
        "like X (e.g. X[user_column]).")
    return part, ids


def _partition_rows(part, ids, target, feature_columns, offset, target_map=None):
    """Validated float64 rows (and targets) of a partition, codes and labels.

    ``ids`` ``None`` makes every row its own user, labelled ``offset + i``.
    ``target_map`` (e.g. class labels to codes) maps the raw targets first.
    """
    rows, ids = _rows_and_ids(part, ids, feature_columns)
    X = check_rows(rows, dtype=np.float64, order="C", ensure_min_samples=0,
                   input_name="X")
    y = None
    if target is not None:
        _check_same_index(
            target, part,
            "a partition of y has another index than the matching partition of "
            "X: pass y partitioned like X (e.g. frame['target']).")
        if target_map is not None:
            target = target_map(np.asarray(target))
        y = check_rows(np.asarray(target), dtype=np.float64, ensure_2d=False,
                       ensure_min_samples=0, input_name="y")
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"a partition of y has shape {y.shape} but its partition of X "
                f"has {X.shape[0]} rows: pass y partitioned like X.")
    if X.shape[0] == 0:
        return X, y, None, None
    if ids is None:
        n = X.shape[0]
        return X, y, np.arange(n, dtype=np.intp), offset + np.arange(n, dtype=np.int64)
    codes, labels = check_groups(ids, X.shape[0])
    return X, y, codes, labels


def _partial_means(part, ids, feature_columns, scale, target=None, offset=0,
                   target_map=None):
    """Per-user sums and row counts of one partition.

    Returns ``(labels, sums, counts)`` with ``labels`` sorted as
    :func:`~skuserdp.users.check_groups` sorts them. ``scale`` multiplies the
    rows first (the exact power of two of the overflow recomputation). A
    ``target`` partition is appended to the rows as a last column.
    """
    X, y, codes, labels = _partition_rows(part, ids, target, feature_columns, offset,
                                          target_map)
    if y is not None:
        X = np.column_stack([X, y])
    if codes is None:
        return _empty_partial(X.shape[1])
    if scale != 1.0:
        X = X * scale
    with np.errstate(over="ignore", invalid="ignore"):
        sums = _sums_by_code(X, codes, labels.shape[0])
    return labels, sums, np.bincount(codes, minlength=labels.shape[0])


def _partial_classes(part, ids, feature_columns, classes, offset=0):
    """Per-user class counts (as sums of one-hot rows) of one partition."""
    rows, ids = _rows_and_ids(part, ids, feature_columns)
    values = np.asarray(rows)
    values = values.reshape(values.shape[0], -1)
    if values.shape[1] != 1:
        raise ValueError(f"expected one categorical column, got {values.shape[1]}.")
    if values.shape[0] == 0:
        return _empty_partial(classes.shape[0])
    if ids is None:
        codes = np.arange(values.shape[0], dtype=np.intp)
        labels = offset + np.arange(values.shape[0], dtype=np.int64)
    else:
        codes, labels = check_groups(ids, values.shape[0])
    n = labels.shape[0]
    return (labels, user_class_counts(values[:, 0], classes, codes, n),
            np.bincount(codes, minlength=n))


def _partial_statistics(part, ids, target, feature_columns, offset, statistics,
                        target_map=None):
    """Per-user statistics ``statistics(X, y, codes, n_users)`` (each user's
    mean of a function of its rows) of one partition, with row counts."""
    X, y, codes, labels = _partition_rows(part, ids, target, feature_columns, offset,
                                          target_map)
    if codes is None:
        width = statistics(np.zeros((1, X.shape[1])), np.zeros(1),
                           np.zeros(1, dtype=np.intp), 1).shape[1]
        return _empty_partial(width)
    n = labels.shape[0]
    return labels, statistics(X, y, codes, n), np.bincount(codes, minlength=n)


def _sorted_union(labels):
    try:
        return np.unique(labels, return_inverse=True)
    except TypeError:
        raise ValueError(
            "with Dask input the user ids must be mutually comparable (all "
            "numbers or all strings): the users' order comes from sorting them."
        ) from None


def _union(partials):
    """The users of partial ``(labels, table, counts)`` tables, merged.

    Returns the sorted union of the labels, the user of every partial row
    (``inverse``, in the order of the partials), each user's summed count, and
    the partial rows' counts (concatenated).
    """
    labels = np.concatenate([p[0] for p in partials])
    uniq, inverse = _sorted_union(labels)
    inverse = inverse.reshape(-1).astype(np.intp, copy=False)
    weights = np.concatenate([p[2] for p in partials])
    counts = np.zeros(uniq.shape[0], dtype=np.intp)
    np.add.at(counts, inverse, weights)
    return uniq, inverse, counts, weights


def _merged(partials, combine):
    """Merge partial ``(labels, table, counts)`` tables, in the order given:
    the empty ones dropped, one left as it is, else
    ``combine(table, uniq, inverse, counts, weights)`` over their union
    (:func:`_union`) and the stacked rows of their tables."""
    partials = [p for p in partials if p[0].shape[0]] or partials[:1]
    if len(partials) == 1:
        return partials[0]
    uniq, inverse, counts, weights = _union(partials)
    table = np.vstack([p[1] for p in partials])
    return uniq, combine(table, uniq, inverse, counts, weights), counts


def _merge(*partials):
    """Merge partial ``(labels, sums, counts)`` tables, in the order given."""
    return _merged(partials, _add_sums)


def _add_sums(sums, uniq, inverse, counts, weights):
    with np.errstate(over="ignore", invalid="ignore"):
        return _sums_by_code(sums, inverse, uniq.shape[0])


def _merge_means(*partials):
    """Merge partial ``(labels, means, counts)`` tables of per-user means.

    A user in one partial keeps that partial's row bit for bit; a user in
    several gets the count-weighted mean of its partial rows.
    """
    return _merged(partials, _average_means)


def _average_means(means, uniq, inverse, counts, weights):
    pieces = np.bincount(inverse, minlength=uniq.shape[0])
    out = np.empty((uniq.shape[0], means.shape[1]))
    single = pieces[inverse] == 1
    out[inverse[single]] = means[single]
    if not single.all():
        many = ~single
        sums = _sums_by_code(means[many] * weights[many, None], inverse[many],
                             uniq.shape[0])
        spread = np.flatnonzero(pieces > 1)
        out[spread] = sums[spread] / counts[spread, None]
    return out


# ---------------------------------------------------------------- graph side
def _blocks(X, groups):
    """Matching delayed ``(rows, ids, feature_columns)`` of every partition.

    Also returns the feature metadata (``meta``: an empty object with the
    feature columns' dtypes and names, for validation and feature names).
    """
    _dask()
    import dask.array as da

    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2-d Dask array X, got {X.ndim} dimension(s).")
        if any(np.isnan(c) for c in X.chunks[0]) and not (
                groups is None or isinstance(groups, da.Array)):
            raise ValueError(
                "X is a Dask array with unknown chunk sizes (e.g. from "
                "to_dask_array()): its rows cannot be matched with groups; use "
                "to_dask_array(lengths=True), or pass the Dask DataFrame itself.")
        X = X.rechunk({1: -1})  # one chunk across the features
        x_parts = X.to_delayed().ravel().tolist()
        meta = np.empty((0, X.shape[1]), dtype=X.dtype)
        if groups is None:
            return x_parts, None, None, meta
        if isinstance(groups, str):
            raise ValueError("groups can be a column name only when X is a "
                             "Dask DataFrame.")
        if not is_dask_collection(groups):
            groups = np.asarray(getattr(groups, "to_numpy", lambda: groups)())
            if groups.ndim != 1 or groups.shape[0] != X.shape[0]:
                raise ValueError(
                    f"groups has shape {groups.shape} but X has {X.shape[0]} "
                    "rows; pass exactly one user id per row.")
            groups = da.from_array(groups, chunks=(X.chunks[0],))
        if isinstance(groups, da.Array):
            if groups.ndim != 1:
                raise ValueError("groups should be a 1d array with one user id "
                                 "per row.")
            if groups.shape[0] != X.shape[0] and not np.isnan(groups.shape[0]):
                raise ValueError(
                    f"groups has {groups.shape[0]} elements but X has "
                    f"{X.shape[0]} rows; pass exactly one user id per row.")
            groups = groups.rechunk((X.chunks[0],))
            return x_parts, groups.to_delayed().ravel().tolist(), None, meta
        raise ValueError("with a Dask array X, groups must be a Dask array or "
                         "an in-memory array of one user id per row.")

    import dask.dataframe as dd

    if isinstance(X, dd.Series):
        X = X.to_frame()
    if not isinstance(X, dd.DataFrame):
        raise ValueError(f"unsupported Dask collection {type(X).__name__} for X.")
    columns = list(X.columns)
    if isinstance(groups, str):
        if groups not in columns:
            raise ValueError(f"groups={groups!r} is not a column of X.")
        features = [c for c in columns if c != groups]
        return (X.to_delayed(), [groups] * X.npartitions, features,
                X._meta[features])
    if groups is None:
        return X.to_delayed(), None, None, X._meta
    if isinstance(groups, dd.DataFrame):
        if len(groups.columns) != 1:
            raise ValueError("groups must be one column of user ids.")
        groups = groups[groups.columns[0]]
    if not isinstance(groups, dd.Series):
        raise ValueError(
            "with a Dask DataFrame X, pass groups as the name of its user-id "
            "column (recommended) or as a Dask Series partitioned like X.")
    if groups.npartitions != X.npartitions:
        raise ValueError(
            f"groups has {groups.npartitions} partitions but X has "
            f"{X.npartitions}: pass groups as a column name of X, or a Dask "
            "Series partitioned like X.")
    if X.known_divisions and groups.known_divisions and \
            tuple(X.divisions) != tuple(groups.divisions):
        raise ValueError("groups is partitioned differently from X (other "
                         "divisions): pass groups as a column name of X.")
    return X.to_delayed(), groups.to_delayed(), None, X._meta


def _reduce(dask, partials, merge=_merge):
    merge = dask.delayed(merge, pure=True)
    while len(partials) > 1:
        partials = [merge(*partials[i:i + FAN_IN])
                    for i in range(0, len(partials), FAN_IN)]
    return partials[0]


def _check_meta(meta, kind):
    """Number of features, from the metadata; refuses non-numeric columns."""
    n_features = meta.shape[1]
    if n_features < 1:
        raise ValueError("X has 0 feature(s) (shape=(?, 0)) while a minimum of 1 "
                         "is required.")
    if kind == "means":
        dtypes = list(meta.dtypes) if hasattr(meta, "dtypes") else [meta.dtype]
        bad = [str(t) for t in dtypes if getattr(t, "kind", "O") not in "biuf"]
        if bad:
            raise ValueError(f"X has non-numeric column(s) of dtype {bad}; the "
                             "rows must be numbers.")
    return n_features


def _target_parts(X, y, n_parts, numeric=True):
    """Delayed partitions of the targets ``y``, matching those of ``X``."""
    import dask.array as da

    if isinstance(X, da.Array):
        if not is_dask_collection(y):
            y = np.asarray(getattr(y, "to_numpy", lambda: y)())
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError(f"y has shape {y.shape} but X has {X.shape[0]} "
                                 "rows; pass one target per row.")
            y = da.from_array(y, chunks=(X.chunks[0],))
        if not isinstance(y, da.Array) or y.ndim != 1:
            raise ValueError("with a Dask array X, y must be a 1-d Dask array or "
                             "an in-memory array of one target per row.")
        return y.rechunk((X.chunks[0],)).to_delayed().ravel().tolist()
    if not is_dask_collection(y) or not hasattr(y, "npartitions"):
        raise ValueError("with a Dask DataFrame X, y must be a Dask Series "
                         "partitioned like X (e.g. frame['target']).")
    if y.npartitions != n_parts:
        raise ValueError(f"y has {y.npartitions} partitions but X has {n_parts}: "
                         "pass y partitioned like X (e.g. frame['target']).")
    kind = getattr(getattr(y, "dtype", None), "kind", "O")
    if numeric and kind not in "biuf":
        raise ValueError(f"y must be numeric, got dtype {y.dtype}.")
    return y.to_delayed()


class DaskPanel:
    """Matching partitions of a Dask ``X``, its user ids and its targets.

    Every reduction runs on Dask's scheduler and gathers one table of users,
    ordered by sorted user id as in memory. ``groups=None`` makes every row
    its own user (labelled in row order).
    """

    def __init__(self, X, groups, y=None, *, kind="means", target_map=None):
        self.dask = _dask()
        self.x_parts, self.g_parts, self.features, self.meta = _blocks(X, groups)
        self.n_features = _check_meta(self.meta, kind)
        self.target_map = target_map
        self.y_parts = None if y is None else _target_parts(
            X, y, len(self.x_parts), numeric=target_map is None)
        self.item_level = self.g_parts is None

    def _parts(self, with_target):
        for i, x in enumerate(self.x_parts):
            g = None if self.item_level else self.g_parts[i]
            t = self.y_parts[i] if with_target else None
            yield x, g, t, i << 32  # item level: row labels in row order

    def _compute(self, partials, merge=_merge):
        (result,) = self.dask.compute(_reduce(self.dask, partials, merge))
        labels, table, counts = result
        if labels.shape[0] == 0:
            raise ValueError("X is empty: at least one row is required.")
        if self.item_level:
            labels = np.arange(labels.shape[0])
        return labels, table, counts

    def user_means(self, with_target=False):
        """Each user's mean of its rows (and target, as a last column)."""
        part = self.dask.delayed(_partial_means, pure=True)

        def sums(scale):
            return self._compute([part(x, g, self.features, scale, t, off,
                                       self.target_map)
                                  for x, g, t, off in self._parts(with_target)])

        labels, total, counts = sums(1.0)
        # overflowing sums of finite rows: as in memory, rescaled
        means = _means_from_sums(total, counts, lambda scale: sums(scale)[1])
        return UserMeans(means, counts, labels)

    def class_frequencies(self, classes):
        """Each user's frequencies of ``classes`` in the one column of ``X``."""
        part = self.dask.delayed(_partial_classes, pure=True)
        labels, total, counts = self._compute(
            [part(x, g, self.features, classes, off)
             for x, g, _, off in self._parts(False)])
        return UserMeans(total / counts[:, None], counts, labels)

    def user_statistics(self, statistics):
        """``statistics(X, y, codes, n_users)`` (per-user means of a function
        of the rows and targets) over all partitions, merged by user."""
        part = self.dask.delayed(_partial_statistics, pure=True)
        return self._compute([part(x, g, t, self.features, off, statistics,
                                   self.target_map)
                              for x, g, t, off in self._parts(True)],
                             merge=_merge_means)


def dask_user_table(X, groups, *, classes=None, check_meta=None):
    """The per-user table of a Dask collection, gathered in memory.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        The rows. With a DataFrame, ``groups`` may name its user-id column
        (which is then not a feature).
    groups : str, dask collection, array-like or None
        The user ids: a column name of ``X``, a Dask Series or array
        partitioned like ``X``, or (for a Dask array ``X``) an in-memory array
        of one id per row. ``None`` makes every row its own user.
    classes : ndarray, default=None
        When given, the table holds each user's class frequencies of the one
        categorical column of ``X`` instead of the means of its rows.
    check_meta : callable, default=None
        Called with the feature metadata before any data is read.

    Returns
    -------
    result : UserMeans
        ``(means, counts, labels)``, ordered by sorted user id as in memory.
    meta : object
        Empty array or DataFrame with the feature columns (names and dtypes).
    """
    panel = DaskPanel(X, groups, kind="means" if classes is None else "classes")
    if check_meta is not None:
        check_meta(panel.meta)
    if classes is None:
        return panel.user_means(), panel.meta
    return panel.class_frequencies(classes), panel.meta
