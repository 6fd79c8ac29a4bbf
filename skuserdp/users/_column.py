"""``groups`` as the name of a column of a pandas ``X`` (the user-id column).

One helper for every ``fit`` (and every ``score`` that takes ``groups``):
``groups="idcode"`` takes the column ``idcode`` out of a pandas DataFrame
``X`` -- it is the unit of privacy, not a feature, so ``feature_names_in_``
does not list it -- as the Dask path does for a Dask DataFrame
(:mod:`skuserdp.users._dask`, which reads the column inside the partitions).
"""

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
        column (or more than one) of that name.

    Examples
    --------
    >>> import pandas as pd
    >>> from skuserdp.users._column import split_groups_column
    >>> df = pd.DataFrame({"idcode": [1, 1, 2], "wage": [3.0, 4.0, 5.0]})
    >>> X, groups = split_groups_column(df, "idcode")
    >>> list(X.columns), groups.tolist()
    (['wage'], [1, 1, 2])
    """
    if not isinstance(groups, str) or is_dask_collection(X):
        return X, groups
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
