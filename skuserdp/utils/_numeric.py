"""Overflow-safe floating-point helpers (numerics only, no privacy logic)."""

import math

import numpy as np

__all__ = ["all_finite", "stable_norm", "quiet_floating_point"]

#: norms below this may have lost precision to underflowing squares
TINY_NORM = 2.0 ** -500


def stable_norm(vector):
    """ℓ2 norm of a vector whose squares may overflow or underflow.

    ``np.linalg.norm`` squares the entries, so the norm of ``(1e200, 1e200)``
    comes out as ``inf``. Here such vectors are divided by their largest
    absolute entry first. Wherever ``np.linalg.norm`` is accurate its result is
    returned unchanged (bit for bit).

    Parameters
    ----------
    vector : array-like of shape (n,)
        Finite entries.

    Returns
    -------
    norm : float
        The ℓ2 norm; ``inf`` only when the norm itself exceeds the float64
        range.

    Examples
    --------
    >>> from skuserdp.utils._numeric import stable_norm
    >>> stable_norm([3.0, 4.0]), stable_norm([3e300, 4e300])
    (5.0, 5e+300)
    """
    v = np.asarray(vector, dtype=np.float64).ravel()
    with np.errstate(over="ignore", under="ignore"):
        norm = float(np.linalg.norm(v))
    if math.isfinite(norm) and norm >= TINY_NORM:
        return norm
    top = float(np.abs(v).max(initial=0.0))
    if top == 0.0 or not math.isfinite(top):
        return norm
    with np.errstate(over="ignore"):
        return float(top * np.linalg.norm(v / top))


def all_finite(array):
    """``np.isfinite(array).all()``, without an array-sized temporary when the
    sum of the entries is finite (then none is infinite or NaN).

    Parameters
    ----------
    array : array-like of floats

    Returns
    -------
    finite : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.utils._numeric import all_finite
    >>> all_finite([1.0, 2.0]), all_finite([1e308, 1e308]), all_finite([1.0, np.nan])
    (True, True, False)
    """
    A = np.asarray(array)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(A)):
            return True
    return bool(np.isfinite(A).all())


def quiet_floating_point():
    """A context in which NumPy's floating-point warnings are off.

    A warning (or a raised ``FloatingPointError``) is an output of a fit: an
    overflow warning that appears only when some user's values exceed about
    1e154 (their squares overflow) tells whoever reads the log that such a
    user exists, beyond what is released. The releases do not need those
    warnings: every per-user value is clipped before a mechanism sees it (an
    infinite distance is clipped to the radius like a large one), and the
    outputs are checked to be finite. Every ``fit`` that reads private data
    runs its body in this context (a context, not a decorator: a wrapper
    frame would move the warnings that point at the caller of ``fit``).
    Worker threads do not inherit NumPy's error state, so the code they run
    avoids such warnings itself.

    Returns
    -------
    context : numpy.errstate

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.utils._numeric import quiet_floating_point
    >>> with quiet_floating_point():
    ...     np.square(np.array([1e200]))
    array([inf])
    """
    return np.errstate(all="ignore")
