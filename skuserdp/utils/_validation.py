"""Validation of the public knowledge every estimator declares.

skuserdp has one vocabulary for public knowledge, used by every estimator:

``bound``
    Public bound on every coordinate of a row: rows live in
    ``[-bound, bound]^d``; rows outside are clipped to it.
``radius``
    An ℓ2 radius. Each estimator's docstring says of what (e.g. of per-user
    means around ``center``).
``center``
    A public point (default: the origin).
``samples_per_user``
    Public number of rows per user assumed by a theorem or a rule.
``moment_order`` and ``moment_bound``
    A public bound ``moment_bound`` on the ``moment_order``-th central moment.

None of these is ever filled in from the data: a value computed from private
data would silently void the privacy guarantee.
"""

import numbers

import numpy as np

__all__ = ["check_center", "check_bound", "check_positive_scalar"]


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
