"""Validation of the public knowledge every estimator declares.

skuserdp has one vocabulary for public knowledge, used by every estimator:

``bounds``
    ``(lower, upper)``: a public box in the units of ``X`` (scalars
    broadcast to every feature). Estimators clip to it; ``"auto"`` learns it
    privately from a documented share of the budget, charged to the fit.
``bound``
    (pure functions only) public bound on every coordinate:
    ``[-bound, bound]^d``.
``radius``
    An ℓ2 radius. Each estimator's docstring says of what (e.g. of per-user
    means around ``center``).
``center``
    A public point (default: the origin).
``samples_per_user``
    Public number of rows per user assumed by a theorem or a rule.
``moment_order`` and ``moment_bound``
    A public bound ``moment_bound`` on the ``moment_order``-th central moment.

None of these is ever filled in from the data without privacy: a value
computed from private data would silently void the guarantee, so the only
data-dependent box is the privately learned ``bounds="auto"``.

The data themselves are validated by :func:`validate_rows` (every public
estimator's ``X`` and ``y``): scikit-learn's ``validate_data`` with messages
that never show a data value, and skuserdp's own message for NaN or infinity.
Messages name features by :func:`feature_labels`: by name when ``X`` had
column names.
"""

import numbers
import re

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.validation import column_or_1d, validate_data

__all__ = ["check_center", "check_bound", "check_bounds", "check_positive_scalar",
           "check_rows", "check_targets", "error_without_values", "feature_labels",
           "validate_rows"]

#: how many features a message names at most
MAX_LABELS = 10


def feature_labels(indices, names=None):
    """The features at ``indices`` as a message shows them: by name when
    ``names`` (e.g. an estimator's ``feature_names_in_``) are known, else by
    index; at most :data:`MAX_LABELS`, then how many more.

    Parameters
    ----------
    indices : array-like of int
        Column indices.
    names : sequence or None, default=None
        The name of every column (entries that are not strings, e.g. the
        index itself, are shown as ints).

    Returns
    -------
    text : str

    Examples
    --------
    >>> from skuserdp.utils._validation import feature_labels
    >>> feature_labels([0, 2], ["age", "income", "score"])
    "['age', 'score']"
    >>> feature_labels(range(12))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9] (and 2 more)'
    """
    indices = [int(i) for i in np.ravel(np.asarray(indices))]
    shown = indices[:MAX_LABELS]
    if names is not None:
        shown = [str(names[i]) if isinstance(names[i], str) else int(i)
                 for i in shown]
    text = repr(shown)
    if len(indices) > MAX_LABELS:
        text += f" (and {len(indices) - MAX_LABELS} more)"
    return text


def _as_2d_float(values, name):
    """``values`` as a float64 array (no copy when it is one), refused unless
    2-d; ``name`` names it in the message."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"{name} must be 2-d, got shape {values.shape}.")
    return values


def _check_plan_shape(name, array, plan):
    """Refuse an ``array`` (named ``name`` in the message) whose shape is not
    the plan's ``(n_users, n_features)``."""
    if array.shape != (plan.n_users, plan.n_features):
        raise ValueError(
            f"{name} must have shape ({plan.n_users}, {plan.n_features}) to match "
            f"the plan, got {array.shape}.")


def _column_names(X):
    """The column names of a DataFrame-like ``X``, else None."""
    columns = getattr(X, "columns", None)
    return None if columns is None else list(columns)


def _bad_columns(X):
    """``(text, huge)``: the indices of the columns of ``X`` that do not
    convert to float64 -- because of a non-numeric cell, resp. only because
    of a number beyond the float64 range (e.g. a huge Python int). Checked
    only after a conversion failed (the message names them); never raises."""
    try:
        if hasattr(X, "iloc") and hasattr(X, "columns"):
            columns = [X.iloc[:, j] for j in range(X.shape[1])]
        else:
            array = np.asarray(X)
            if array.ndim == 1:
                array = array[:, None]
            if array.ndim != 2 or array.dtype.kind in "biufc":
                return [], []
            columns = [array[:, j] for j in range(array.shape[1])]
    except Exception:  # noqa: BLE001 -- (a shape we cannot read: no names)
        return [], []
    text, huge = [], []
    for j, column in enumerate(columns):
        if getattr(column.dtype, "kind", "O") in "biufc":
            continue
        try:
            np.asarray(column, dtype=np.float64)
        except OverflowError:
            huge.append(j)
        except Exception:  # noqa: BLE001 -- any failure: not a number
            text.append(j)
    return text, huge


#: numpy's message for a cell of a non-numeric type: it names the type, no value
_TYPE_MESSAGE = re.compile(r"float\(\) argument must be a string or a (real )?number, "
                           r"not '\w+'")


def _scrubbed(message):
    """``message`` without the data values scikit-learn and numpy print."""
    # check_array's 1-D and scalar X: "...instead:\narray=[...].\nReshape ..."
    message = re.sub(r":\s*array=.*?\.\s*\n\s*(?=Reshape)", ". ", message,
                     flags=re.S)
    lines = message.split("\n")
    if lines[0].startswith("Complex data not supported"):
        return ("Complex data not supported (a complex dtype): skuserdp needs "
                "real numbers.")
    # any other printed array or quoted value
    kept = [line for line in lines if not re.match(r"\s*(\[|array\()", line)]
    message = "\n".join(kept)
    return re.sub(r"(: |: b)(['\"]).*\2\s*$", ": (the value is not shown)", message)


def _safe_error(exc, X, y, names, y_name="y"):
    """The error to raise instead of ``exc``: its message without data values.
    ``X`` may be None (only ``y``, named ``y_name`` in the message, was
    validated)."""
    kind = TypeError if isinstance(exc, TypeError) else ValueError
    text, huge = ([], []) if X is None else _bad_columns(X)
    if text:
        message = (
            f"X has non-numeric values (e.g. text) in column(s) "
            f"{feature_labels(text, names)}: skuserdp estimators need numbers. "
            "Encode such columns first, e.g. with a OneHotEncoder in a Pipeline "
            "(a per-row step, which keeps the user-level guarantee).")
        found = _TYPE_MESSAGE.search(str(exc))
        if found:  # (scikit-learn's checks expect numpy's wording)
            message += f" ({found.group(0)}.)"
        return kind(message)
    if huge:
        return ValueError(
            f"X has numbers beyond the float64 range (e.g. huge Python ints) in "
            f"column(s) {feature_labels(huge, names)}: skuserdp estimators need "
            "float64 values.")
    y_text, y_huge = ([], []) if y is None or isinstance(y, str) else _bad_columns(y)
    if y_text:
        return kind(f"{y_name} has non-numeric values (e.g. text): this "
                    "estimator needs numeric values there.")
    if y_huge:
        return ValueError(f"{y_name} has numbers beyond the float64 range (e.g. "
                          "huge Python ints): this estimator needs float64 "
                          "values there.")
    return kind(_scrubbed(str(exc)))


def _error_without_values(exc, X, y, names, y_name="y"):
    """:func:`_safe_error`, which never raises: should building the message
    fail, a generic one (never ``exc``'s, which may show a value)."""
    try:
        return _safe_error(exc, X, y, names, y_name)
    except Exception:  # noqa: BLE001 -- any failure: the generic message
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        return kind(f"the input could not be validated ({type(exc).__name__}; "
                    "the message is not shown: it may contain data values).")


def check_finite_rows(X, names=None):
    """Refuse NaN or infinity in the (float) rows ``X``, naming the columns.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    names : sequence or None, default=None
        Column names for the message.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(X)):  # (a sum of large finite values may overflow)
            return
        bad = np.flatnonzero(~np.isfinite(X).all(axis=0))
    if bad.size:
        raise ValueError(
            f"X contains NaN or infinity in column(s) {feature_labels(bad, names)}; "
            "skuserdp estimators need finite values. Impute them with a public "
            "value first, e.g. SimpleImputer(strategy='constant', fill_value=..., "
            "keep_empty_features=True) in a Pipeline (a per-row step keeps the "
            "user-level guarantee, and PrivateGridSearch accepts it; a mean or "
            "median imputer would read the private data without noise).")


def validate_rows(estimator, X, y="no_validation", *, reset=True, finite=True,
                  **check_params):
    """scikit-learn's ``validate_data``, with messages that show no data value.

    scikit-learn and numpy print the data in some messages (a 1-D or complex
    ``X``, a text cell that does not convert to float). Here every
    ``ValueError`` or ``TypeError`` of the validation is raised again, of the
    same kind (an ``OverflowError``, e.g. of a huge Python int, as a
    ``ValueError``), with those values removed (the shape, dtype and the columns
    concerned are kept), and without the original as its context (a printed
    traceback would show it). With ``finite=True``, NaN or infinity in ``X``
    is refused with skuserdp's message, which names the columns.

    Parameters
    ----------
    estimator : estimator instance
    X : array-like
    y : array-like, None or "no_validation", default="no_validation"
        As for ``validate_data``.
    reset : bool, default=True
        As for ``validate_data``.
    finite : bool, default=True
        Whether ``X`` must be finite (needs a float ``dtype``); with
        ``False`` NaN and infinity are accepted.
    **check_params
        Passed on to ``validate_data``.

    Returns
    -------
    X or (X, y)
        As ``validate_data`` returns them.
    """
    names = _column_names(X)
    if names is None and not reset:
        names = getattr(estimator, "feature_names_in_", None)
    check_params["ensure_all_finite"] = False  # (finite: skuserdp's message)
    out = _without_values(
        lambda: validate_data(estimator, X, y, reset=reset, **check_params),
        X, y, names)
    if finite:
        check_finite_rows(out[0] if isinstance(out, tuple) else out, names)
    return out


def check_targets(y, *, numeric=True, name="y"):
    """Held-out targets (or weights) for ``score``: a 1-D array, float64 when
    ``numeric``, with messages that show no data value (as
    :func:`validate_rows`).

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 1)
    numeric : bool, default=True
        Whether the values must be numbers (a regressor's targets, weights);
        ``False`` keeps labels of any type (a classifier's).
    name : str, default="y"
        The argument's name, for the messages.

    Returns
    -------
    y : ndarray of shape (n_samples,)
    """
    def check():
        return column_or_1d(check_array(
            y, ensure_2d=False, dtype=np.float64 if numeric else None,
            ensure_all_finite=False, ensure_min_samples=0, input_name=name))
    return _without_values(check, None, y, None, name)


def check_rows(X, **check_params):
    """scikit-learn's ``check_array`` (for functions, without an estimator),
    with messages that show no data value, as :func:`validate_rows`."""
    return _without_values(lambda: check_array(X, **check_params), X, None,
                           _column_names(X))


#: the messages of a failed conversion to numbers (the cell's value at the end)
_CONVERSION = re.compile(r"could not convert|too large to convert|invalid literal|"
                         r"must be a string or a (real )?number|Unable to convert")


def error_without_values(exc, X=None, names=None):
    """An error to raise instead of ``exc`` (raised by some step that read
    ``X``), of the same kind (``TypeError``, else ``ValueError``), whose
    message shows no data value: a failed conversion to numbers names the
    columns of ``X`` that do not convert (as :func:`validate_rows` does);
    any other message loses the arrays and quoted values scikit-learn and
    NumPy print. Never raises. Raise the result outside the ``except``
    clause (or ``from None``), so that ``exc`` is not in its chain.

    Parameters
    ----------
    exc : Exception
    X : array-like or None, default=None
        The input of the step that raised ``exc``.
    names : sequence or None, default=None
        The column names of ``X``, for the message.

    Returns
    -------
    error : TypeError or ValueError
    """
    if X is not None and _CONVERSION.search(str(exc)):
        return _error_without_values(exc, X, None, names)
    kind = TypeError if isinstance(exc, TypeError) else ValueError
    try:
        return kind(_scrubbed(str(exc)))
    except Exception:  # noqa: BLE001 -- any failure: the generic message
        return kind(f"{type(exc).__name__} (the message is not shown: it may "
                    "contain data values).")


def _without_values(validate, X, y, names, y_name="y"):
    """``validate()``; its ``ValueError``, ``TypeError`` or ``ArithmeticError``
    (e.g. the ``OverflowError`` of a huge Python int) raised again without data
    values (:func:`_safe_error`) and without the original, nor any exception
    raised while building the message, in its chain (``__cause__`` and
    ``__context__`` are None: a printed traceback shows no value)."""
    try:
        return validate()
    except (TypeError, ValueError, ArithmeticError) as exc:
        error = _error_without_values(exc, X, y, names, y_name)
    raise error  # (outside the except clause: no context to print)


def check_positive_scalar(value, name):
    """Return ``value`` as a float after checking it is finite and ``> 0``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


def check_center(center, n_features, name="center"):
    """Validate a public ``center``.

    Parameters
    ----------
    center : None, float or array-like of shape (n_features,)
        ``None`` means the origin; a float is used for every coordinate.
    n_features : int
        Number of features of ``X``.
    name : str, default="center"
        Parameter name used in error messages.

    Returns
    -------
    center : ndarray of shape (n_features,)
        Finite float64 centre (a new array, never the caller's).
    """
    if center is None:
        return np.zeros(n_features)
    try:
        c = np.array(center, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a float or an array-like of floats; got {center!r}."
        ) from exc
    if c.ndim == 0:
        c = np.full(n_features, float(c))
    if c.shape != (n_features,):
        raise ValueError(
            f"{name} must be a float or have shape (n_features,) = ({n_features},); "
            f"got shape {c.shape}."
        )
    if not np.isfinite(c).all():
        raise ValueError(f"{name} must be finite.")
    return c


def check_bound(bound, n_features):
    """Validate a public coordinate ``bound`` (scalar or one per feature).

    Parameters
    ----------
    bound : float or array-like of shape (n_features,)
        Rows are assumed to lie in ``[-bound, bound]^d``; every entry ``> 0``.
    n_features : int
        Number of features of ``X``.

    Returns
    -------
    bound : ndarray of shape (n_features,)
    """
    b = np.asarray(bound, dtype=np.float64)
    if b.ndim == 0:
        b = np.full(n_features, float(b))
    if b.shape != (n_features,):
        raise ValueError(
            f"bound must be a float or have shape ({n_features},), got shape {b.shape}."
        )
    if not (np.isfinite(b).all() and (b > 0).all()):
        raise ValueError("bound must be finite and > 0 in every coordinate.")
    return b


def check_bounds(bounds, n_features, name="bounds", feature_names=None):
    """Validate a public box ``(lower, upper)`` (scalars broadcast).

    Parameters
    ----------
    bounds : tuple of (float or array-like of shape (n_features,))
        The box in the units of ``X``; ``lower < upper`` in every
        coordinate, both finite.
    n_features : int
        Number of features of ``X``.
    name : str, default="bounds"
        Parameter name used in error messages.
    feature_names : sequence or None, default=None
        The names of the features, for the messages (e.g.
        ``feature_names_in_``).

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
        New float64 arrays (never the caller's).

    Examples
    --------
    >>> from skuserdp.utils._validation import check_bounds
    >>> check_bounds((0, [1.0, 2.0]), 2)
    (array([0., 0.]), array([1., 2.]))
    """
    msg = (f"{name} must be 'auto' or a pair (lower, upper) of floats or arrays "
           f"of shape ({n_features},) in the units of X")
    if isinstance(bounds, str) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ValueError(f"{msg}; got {bounds!r}.")
    out = []
    for part in bounds:
        try:
            a = np.array(part, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{msg}; got {bounds!r}.") from exc
        if a.ndim == 0:
            a = np.full(n_features, float(a))
        if a.shape != (n_features,):
            raise ValueError(f"{msg}; got a part of shape {a.shape}.")
        out.append(a)
    lower, upper = out
    if not (np.isfinite(lower).all() and np.isfinite(upper).all()):
        raise ValueError(f"{name} must be finite.")
    if not (lower < upper).all():
        bad = feature_labels(np.flatnonzero(~(lower < upper)), feature_names)
        raise ValueError(f"{name}: lower < upper is needed in every feature; "
                         f"it fails for feature(s) {bad}.")
    return lower, upper
