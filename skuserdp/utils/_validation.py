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
"""

import numbers

import numpy as np

__all__ = ["check_center", "check_bound", "check_bounds", "check_positive_scalar"]


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


def check_bounds(bounds, n_features, name="bounds"):
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
        bad = np.flatnonzero(~(lower < upper))[:10].tolist()
        raise ValueError(f"{name}: lower < upper is needed in every feature; "
                         f"it fails for feature(s) {bad}.")
    return lower, upper
