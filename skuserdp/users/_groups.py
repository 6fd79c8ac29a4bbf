"""Validation and factorisation of ``groups`` (one user id per row).

``groups`` defines the unit of privacy: all rows with the same label belong to
one user, and every guarantee in skuserdp protects a user's entire data.
"""

import numpy as np

__all__ = ["check_groups", "check_groups_alignment", "check_y_alignment"]

#: type names of pandas' missing-value singletons (pd.NA, pd.NaT), recognised
#: without importing pandas
_MISSING_TYPE_NAMES = frozenset({"NAType", "NaTType"})


def _is_missing(value):
    """Whether one label is a missing value: None, any NaN (Python, NumPy or
    Decimal), NaT, or pandas' ``pd.NA``."""
    if value is None or type(value).__name__ in _MISSING_TYPE_NAMES:
        return True
    try:
        unequal = value != value  # NaN-like values are unequal to themselves
    except Exception:  # noqa: BLE001 -- a label whose comparison fails is not NaN
        return False
    return isinstance(unequal, (bool, np.bool_)) and bool(unequal)


def _has_missing(values):
    if values.dtype.kind == "f":
        return bool(np.isnan(values).any())
    if values.dtype.kind == "O":
        return any(_is_missing(v) for v in values)
    return False


def check_groups_alignment(groups, X):
    """Refuse a pandas ``groups`` whose index disagrees with ``X``'s index.

    Rows are matched to user ids by position. When both ``X`` and ``groups``
    are pandas objects with different indexes (e.g. ``groups`` was taken from
    another frame or re-sorted), matching by position would silently assign
    rows to the wrong users -- and the unit of privacy would be wrong.

    Parameters
    ----------
    groups : array-like or None
        The user ids.
    X : array-like
        The data, before validation.

    Raises
    ------
    ValueError
        If both have an ``index`` and the two indexes differ.
    """
    _check_same_index(
        groups, X,
        "groups is a pandas Series whose index differs from the index of X; "
        "rows are matched to user ids by position, so this would assign rows "
        "to the wrong users. Pass groups aligned to X, e.g. "
        "groups.loc[X.index] (or reset both indexes).")


def check_y_alignment(y, X):
    """Refuse a pandas ``y`` whose index disagrees with ``X``'s index.

    As :func:`check_groups_alignment`: targets are matched to rows by
    position, so a ``y`` taken from another frame or re-sorted would pair
    rows with other rows' targets.

    Raises
    ------
    ValueError
        If both have an ``index`` and the two indexes differ.
    """
    _check_same_index(
        y, X,
        "y is a pandas Series whose index differs from the index of X; rows "
        "are matched to targets by position, so this would pair rows with "
        "other rows' targets. Pass y aligned to X, e.g. y.loc[X.index] (or "
        "reset both indexes).")


def _check_same_index(values, X, message):
    """Raise ``ValueError(message)`` if ``values`` and ``X`` are both pandas
    objects (an ``index`` with ``equals``) whose indexes differ."""
    v_index = getattr(values, "index", None)
    x_index = getattr(X, "index", None)
    # lists have an .index() method, not a pandas Index with .equals
    if not (hasattr(v_index, "equals") and hasattr(x_index, "equals")):
        return
    if not v_index.equals(x_index):
        raise ValueError(message)


def _factorize_ints(values):
    """Codes of integer (or bool) ids spanning a small range, else None.

    The offsets from the smallest id are computed in Python integers and an
    upcast dtype: ``values - lo`` in the ids' own dtype would wrap around
    (int8 ids -100 and 100 differ by 200), and whether it did would depend
    on the ids -- private data.
    """
    lo, hi = int(values.min()), int(values.max())
    if hi - lo > 4 * values.shape[0] + 1024:
        return None
    if values.dtype.kind == "u":  # (lo >= 0: no wrap-around in uint64)
        shifted = (values.astype(np.uint64) - np.uint64(lo)).astype(np.intp)
    else:  # int64 holds every signed or bool id, and hi - lo is small
        shifted = (values.astype(np.int64) - lo).astype(np.intp, copy=False)
    present = np.bincount(shifted, minlength=hi - lo + 1) > 0
    lookup = np.cumsum(present) - 1
    codes = lookup[shifted].astype(np.intp, copy=False)
    # each user's id, taken from one of its rows (exact in the ids' dtype)
    labels = np.empty(int(lookup[-1]) + 1, dtype=values.dtype)
    labels[codes] = values
    return codes, labels


def _factorize_by_first_appearance(values):
    index = {}
    codes = np.empty(values.shape[0], dtype=np.intp)
    try:
        for i, v in enumerate(values):
            codes[i] = index.setdefault(v, len(index))
    except TypeError as exc:
        raise ValueError(f"groups labels must be hashable: {exc}") from None
    labels = np.empty(len(index), dtype=object)
    for v, k in index.items():
        labels[k] = v
    return codes, labels


def check_groups(groups, n_samples):
    """Validate ``groups`` and map user ids to codes ``0..n_users-1``.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        One user id per row; any hashable labels (ints, strings, ...). A pandas
        Series or Categorical is accepted. Missing labels (None, NaN, NaT,
        ``pd.NA``) are an error: a row without a user cannot be protected.
    n_samples : int
        Number of rows of ``X``.

    Returns
    -------
    codes : ndarray of shape (n_samples,), dtype intp
        User index of every row.
    labels : ndarray of shape (n_users,)
        The user ids, sorted when they are mutually comparable, otherwise in
        order of first appearance. ``labels[codes]`` reproduces ``groups``.

    Raises
    ------
    ValueError
        If ``groups`` is not 1-d, does not have ``n_samples`` entries, is
        empty, or contains missing or unhashable labels.

    Examples
    --------
    >>> from skuserdp.users import check_groups
    >>> codes, labels = check_groups(["b", "a", "b"], 3)
    >>> codes.tolist(), labels.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    if hasattr(groups, "to_numpy"):  # pandas Series / Index / Categorical
        groups = groups.to_numpy()
    values = np.asarray(groups)
    if values.dtype.kind in "US" and not hasattr(groups, "dtype"):
        # a list of ids of several types: NumPy would turn 1 into "1" and
        # merge two users; keep the labels as they are (1 and "1" differ)
        as_objects = np.asarray(groups, dtype=object)
        if as_objects.ndim == 1 and not all(
                type(v) is type(as_objects[0]) for v in as_objects):
            values = as_objects
    if values.ndim != 1:
        raise ValueError(
            f"groups should be a 1d array with one user id per row, got an array of "
            f"shape {values.shape} instead."
        )
    if values.shape[0] != n_samples:
        raise ValueError(
            f"groups has {values.shape[0]} elements but X has {n_samples} samples; "
            "pass exactly one user id per row."
        )
    if n_samples == 0:
        raise ValueError("groups is empty: at least one row is required.")
    if values.dtype.kind in "cmMV":
        raise ValueError(f"groups has an unsupported dtype {values.dtype}.")
    if _has_missing(values):
        raise ValueError(
            "groups contains missing values (None, NaN, NaT or pd.NA); every row "
            "needs a user id."
        )
    if values.dtype.kind in "iub":
        result = _factorize_ints(values)
        if result is not None:
            return result
    try:
        labels, codes = np.unique(values, return_inverse=True)
    except TypeError:
        return _factorize_by_first_appearance(values)
    return codes.astype(np.intp, copy=False).reshape(-1), labels
