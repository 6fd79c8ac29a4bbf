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

Privacy: the aggregation is a per-user function of the data, as in memory;
which partition a row is in, the number of partitions and the scheduler are
public. Nothing here releases anything.

Dask is an optional dependency (``pip install 'skuserdp[dask]'``); it is only
imported when a Dask collection is passed.
"""

import sys

import numpy as np
from sklearn.utils import check_array

from ._aggregate import _OVERFLOW_SCALE, UserMeans, _sums_by_code
from ._groups import check_groups

__all__ = ["dask_user_table", "is_dask_collection", "refuse_dask"]

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
            f"{name} does not take Dask input yet (the mean estimators and "
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
    pandas_pair = hasattr(getattr(ids, "index", None), "equals") and hasattr(
        getattr(part, "index", None), "equals")
    if pandas_pair:
        if not ids.index.equals(part.index):
            raise ValueError(
                "a partition of groups has another index than the matching "
                "partition of X: pass groups as a column name of X, or a Dask "
                "Series partitioned like X (e.g. X[user_column]).")
    return part, ids


def _partial_means(part, ids, feature_columns, scale):
    """Per-user sums and row counts of one partition.

    Returns ``(labels, sums, counts)`` with ``labels`` sorted as
    :func:`~skuserdp.users.check_groups` sorts them. ``scale`` multiplies the
    rows first (the exact power of two of the overflow recomputation).
    """
    rows, ids = _rows_and_ids(part, ids, feature_columns)
    X = check_array(rows, dtype=np.float64, order="C", ensure_min_samples=0,
                    input_name="X")
    if X.shape[0] == 0:
        return _empty_partial(X.shape[1])
    codes, labels = check_groups(ids, X.shape[0])
    if scale != 1.0:
        X = X * scale
    with np.errstate(over="ignore", invalid="ignore"):
        sums = _sums_by_code(X, codes, labels.shape[0])
    return labels, sums, np.bincount(codes, minlength=labels.shape[0])


def _partial_classes(part, ids, feature_columns, classes):
    """Per-user class counts (as sums of one-hot rows) of one partition."""
    from ..mean._discrete import _user_class_counts  # the in-memory counts

    rows, ids = _rows_and_ids(part, ids, feature_columns)
    values = np.asarray(rows)
    values = values.reshape(values.shape[0], -1)
    if values.shape[1] != 1:
        raise ValueError(f"expected one categorical column, got {values.shape[1]}.")
    d = classes.shape[0]
    if values.shape[0] == 0:
        return _empty_partial(d)
    codes, labels = check_groups(ids, values.shape[0])
    n = labels.shape[0]
    return (labels, _user_class_counts(values[:, 0], classes, codes, n),
            np.bincount(codes, minlength=n))


def _sorted_union(labels):
    try:
        return np.unique(labels, return_inverse=True)
    except TypeError:
        raise ValueError(
            "with Dask input the user ids must be mutually comparable (all "
            "numbers or all strings): the users' order comes from sorting them."
        ) from None


def _merge(*partials):
    """Merge partial ``(labels, sums, counts)`` tables, in the order given."""
    partials = [p for p in partials if p[0].shape[0]] or partials[:1]
    if len(partials) == 1:
        return partials[0]
    labels = np.concatenate([p[0] for p in partials])
    uniq, inverse = _sorted_union(labels)
    inverse = inverse.reshape(-1).astype(np.intp, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        sums = _sums_by_code(np.vstack([p[1] for p in partials]), inverse,
                             uniq.shape[0])
    counts = np.zeros(uniq.shape[0], dtype=np.intp)
    np.add.at(counts, inverse, np.concatenate([p[2] for p in partials]))
    return uniq, sums, counts


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


def _reduce(dask, partials):
    merge = dask.delayed(_merge, pure=True)
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
    dask = _dask()
    x_parts, g_parts, features, meta = _blocks(X, groups)
    kind = "means" if classes is None else "classes"
    n_features = _check_meta(meta, kind)
    if check_meta is not None:
        check_meta(meta)
    if g_parts is None:  # every row its own user: the table is X itself
        (rows,) = dask.compute(X)
        if kind == "classes":
            values = np.asarray(rows, dtype=object).reshape(-1, 1)
            return _item_level_classes(values, classes), meta
        U = check_array(rows, dtype=np.float64, order="C", input_name="X")
        return UserMeans(U, np.ones(U.shape[0], dtype=np.intp),
                         np.arange(U.shape[0])), meta

    def table(scale):
        if kind == "classes":
            part = dask.delayed(_partial_classes, pure=True)
            parts = [part(x, g, features, classes) for x, g in zip(x_parts, g_parts)]
        else:
            part = dask.delayed(_partial_means, pure=True)
            parts = [part(x, g, features, scale) for x, g in zip(x_parts, g_parts)]
        (result,) = dask.compute(_reduce(dask, parts))
        return result

    labels, sums, counts = table(1.0)
    if labels.shape[0] == 0:
        raise ValueError("X is empty: at least one row is required.")
    if sums.shape[1] != (n_features if classes is None else classes.shape[0]):
        raise ValueError(f"X has {sums.shape[1]} features but its metadata "
                         f"says {n_features}.")
    with np.errstate(over="ignore", invalid="ignore"):
        means = sums / counts[:, None]
    bad = ~np.isfinite(means)
    if bad.any():  # overflowing sums of finite rows: as in memory, rescaled
        scaled = table(_OVERFLOW_SCALE)[1]
        big = np.finfo(np.float64).max
        means[bad] = np.clip(
            scaled[bad] / counts.repeat(bad.sum(axis=1)) / _OVERFLOW_SCALE, -big, big)
    return UserMeans(means, counts, labels), meta


def _item_level_classes(values, classes):
    from ..mean._discrete import _user_class_counts

    n = values.shape[0]
    freqs = _user_class_counts(values[:, 0], classes, np.arange(n), n)
    return UserMeans(freqs, np.ones(n, dtype=np.intp), np.arange(n))
