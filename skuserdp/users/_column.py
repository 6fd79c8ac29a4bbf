"""``groups`` as the name of a column of a pandas ``X`` (the user-id column).

One helper for every ``fit`` (and every ``score`` that takes ``groups``):
``groups="idcode"`` takes the column ``idcode`` out of a pandas DataFrame
``X`` -- it is the unit of privacy, not a feature, so ``feature_names_in_``
does not list it -- as the Dask path does for a Dask DataFrame
(:mod:`skuserdp.users._dask`, which reads the column inside the partitions).

The column must be taken out of ``X`` *as the user gave it*, before any
step sees it. So a name is refused when the call comes from a
scikit-learn ``Pipeline`` whose steps before its last one transform ``X``
(they saw the id column as a feature, and may have changed it row by row:
a ``Normalizer`` mixed it with the other features, so that one user's rows
became many "users"); the ids must then be passed themselves, with ``X``
without the column. And ids passed themselves must not also be a column
of ``X`` (``fit(df, groups=df["uid"])`` would make the id a feature).
"""

import sys

import numpy as np

from ._dask import is_dask_collection

__all__ = ["split_groups_column"]


def split_groups_column(X, groups):
    """``(X, groups)`` with the user-id column named by ``groups`` taken out.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The rows. When ``groups`` is a string, a pandas DataFrame with a
        column of that name (a Dask collection is returned unchanged: the
        Dask path reads the column itself).
    groups : str, array-like or None
        A string names the user-id column of ``X``; anything else is
        returned unchanged.

    Returns
    -------
    X : array-like
        ``X`` without that column (a new DataFrame; the caller's is not
        modified).
    groups : array-like or None
        The column (a pandas Series aligned with ``X``), or ``groups`` as
        given.

    Raises
    ------
    ValueError
        If ``groups`` is a string and ``X`` is not a DataFrame, or has no
        column (or more than one) of that name, or the call comes from a
        scikit-learn ``Pipeline`` whose earlier steps transform ``X``; or if
        ``groups`` is a pandas Series equal to a column of ``X`` of its name.

    Examples
    --------
    >>> import pandas as pd
    >>> from skuserdp.users._column import split_groups_column
    >>> df = pd.DataFrame({"idcode": [1, 1, 2], "wage": [3.0, 4.0, 5.0]})
    >>> X, groups = split_groups_column(df, "idcode")
    >>> list(X.columns), groups.tolist()
    (['wage'], [1, 1, 2])
    """
    if is_dask_collection(X):
        return X, groups
    if not isinstance(groups, str):
        _refuse_ids_also_in_X(X, groups)
        return X, groups
    pipeline = _transforming_pipeline()
    if pipeline is not None:
        steps = [name for name, step in pipeline.steps[:-1]
                 if not _is_passthrough(step)]
        raise ValueError(
            f"groups={groups!r} names a column of X, but X reaches this "
            f"estimator through the step(s) {steps} of a Pipeline, which saw "
            "the id column as a feature and may have changed it row by row "
            "(the users would no longer be yours). Take the column out before "
            f"the pipeline and pass the ids themselves: pipe.fit(X.drop(columns="
            f"{groups!r}), y, groups=X[{groups!r}]) (with metadata routing), or "
            f"search with PrivateGridSearch(pipe, ...).fit(X, y, groups={groups!r}), "
            "which takes the column out before any step.")
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "drop"):
        raise ValueError(
            f"groups={groups!r} is a column name, but X is a {type(X).__name__}, "
            "not a pandas DataFrame with named columns: pass the user ids "
            "themselves, one per row (groups=user_ids, an array or a Series), "
            "or X as a DataFrame that has this column.")
    count = sum(1 for name in columns if isinstance(name, str) and name == groups)
    if count == 0:
        shown = ", ".join(repr(c) for c in list(columns)[:10])
        more = ", ..." if len(columns) > 10 else ""
        raise ValueError(
            f"groups={groups!r} is not a column of X (its columns: {shown}{more}). "
            "Pass the name of X's user-id column, or the user ids themselves "
            "(groups=user_ids, one per row).")
    if count > 1:
        raise ValueError(f"X has {count} columns named {groups!r}: the user-id "
                         "column must be one column.")
    return X.drop(columns=groups), X[groups]


def _is_passthrough(step):
    return step is None or (isinstance(step, str) and step == "passthrough")


def _transforming_pipeline():
    """The scikit-learn ``Pipeline`` on the call stack (a method of it is
    running) with a step before its last one that is not ``"passthrough"``,
    or None: then ``X`` has been through that step before reaching the
    estimator that resolves ``groups`` by name."""
    from sklearn.pipeline import Pipeline

    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == "sklearn.pipeline":
            owner = frame.f_locals.get("self")
            if isinstance(owner, Pipeline) and any(
                    not _is_passthrough(step) for _, step in owner.steps[:-1]):
                return owner
        frame = frame.f_back
    return None


def _refuse_ids_also_in_X(X, groups):
    """Refuse a pandas Series of ids that is also a column of ``X`` (same
    name, same values): the ids would be a feature."""
    name = getattr(groups, "name", None)
    columns = getattr(X, "columns", None)
    if name is None or columns is None or not hasattr(groups, "to_numpy") \
            or not hasattr(X, "iloc"):
        return
    try:
        positions = [j for j, column in enumerate(columns) if column == name]
        same = any(np.array_equal(X.iloc[:, j].to_numpy(), groups.to_numpy())
                   for j in positions)
    except Exception:  # noqa: BLE001 -- (uncomparable: not the same column)
        return
    if same:
        raise ValueError(
            f"groups is the column {name!r} of X: the user ids would also be a "
            f"feature. Pass groups={name!r} (the column is then taken out of X), "
            f"or X without the column: X.drop(columns={name!r}).")
