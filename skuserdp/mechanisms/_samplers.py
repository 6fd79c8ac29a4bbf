"""Exact samplers for the discrete Laplace and discrete Gaussian distributions.

The discrete samplers implement the algorithms of

    C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020 (arXiv:2004.00010),

namely Algorithm 1 (Bernoulli(exp(-gamma)) for a rational ``gamma``),
Algorithm 2 (discrete Laplace with a rational scale ``t/s``) and Algorithm 3
(discrete Gaussian with a rational variance parameter ``sigma2``).

Every random decision is a Bernoulli draw whose success probability is an
exact rational number: parameters are integers or :class:`fractions.Fraction`
objects, arithmetic is done on ``int64`` arrays when the values provably fit
and on NumPy ``object`` arrays of Python integers otherwise, and no
floating-point probability is ever formed. Exactness is therefore relative to
one assumption only: that the generator's uniform integers
(:meth:`numpy.random.Generator.integers`) are uniform. The bit generator used
by skuserdp (PCG64) is statistically sound but not cryptographically secure;
see the "Privacy model" page of the documentation.

All samplers are vectorised: a rejection loop runs on the still-pending
elements only, never on one sample at a time in Python.

:func:`sample_laplace` and :func:`sample_gaussian` are thin wrappers around
NumPy's continuous samplers. They are kept for analysis and simulation; they
are *not* safe for releasing private outputs because floating-point noise
leaks information through the low-order bits (Mironov, CCS 2012).
"""

import math
import numbers
from fractions import Fraction

import numpy as np

__all__ = [
    "bernoulli_rational",
    "bernoulli_exp",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "round_up_fraction",
    "sample_laplace",
    "sample_gaussian",
]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# Largest a with a * a <= _INT64_MAX.
_SQRT_INT64_MAX = math.isqrt(_INT64_MAX)
# Digit size (in bits) of the lazy comparison used on Python-int arrays.
_DIGIT_BITS = 62
_DIGIT = 2**_DIGIT_BITS


# ---------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}."
        )


def _shape_from_size(size):
    """Return ``(shape, n)`` for a ``size`` argument (None, int or tuple)."""
    if size is None:
        return (), 1
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = (size,)
    try:
        shape = tuple(size)
    except TypeError:
        raise TypeError(
            f"size must be None, an int or a tuple of ints, got {size!r}."
        ) from None
    for dim in shape:
        if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
            raise TypeError(f"size must contain ints only, got {size!r}.")
        if dim < 0:
            raise ValueError(f"size must be non-negative, got {size!r}.")
    shape = tuple(int(dim) for dim in shape)
    return shape, math.prod(shape)


def _to_fraction(value, name):
    """Convert a positive Fraction, int or float to a Fraction, exactly."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a Fraction, an int or a float, got a bool.")
    if isinstance(value, numbers.Rational):
        frac = Fraction(int(value.numerator), int(value.denominator))
    elif isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}.")
        frac = Fraction(value)
    else:
        raise TypeError(
            f"{name} must be a Fraction, an int or a float, got "
            f"{type(value).__name__}."
        )
    if frac <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}.")
    return frac


def _narrow(arr):
    """Return ``arr`` as int64 if all its (integer) values fit, else unchanged."""
    if arr.dtype != object:
        return arr
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.min() >= _INT64_MIN and arr.max() <= _INT64_MAX:
        return arr.astype(np.int64)
    return arr


def _to_int_array(value, name):
    """Convert integers to an int64 array or an object array of Python ints."""
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "i":
        return arr.astype(np.int64, copy=False)
    if kind == "u":
        if arr.size == 0 or int(arr.max()) <= _INT64_MAX:
            return arr.astype(np.int64)
        return arr.astype(object)
    if kind == "O":
        flat = arr.ravel()
        for item in flat:
            if not isinstance(item, numbers.Integral) or isinstance(item, bool):
                raise TypeError(
                    f"{name} must contain integers only, found {type(item).__name__}."
                )
        converted = np.empty(arr.shape, dtype=object)
        converted.ravel()[:] = [int(item) for item in flat]
        return _narrow(converted)
    raise TypeError(f"{name} must be an integer or an array of integers, got {kind!r}.")


def _absmax(value):
    """Largest absolute value of an integer array or Python int, as a Python int."""
    if isinstance(value, int):
        return abs(value)
    if value.size == 0:
        return 0
    return max(abs(int(value.max())), abs(int(value.min())))


def _mul_add(x, mul, add):
    """Exact ``x * mul + add`` (``mul`` a Python int, ``add`` an array or int).

    Computed in int64 when every operand and the result provably fit, with
    Python ints otherwise.
    """
    add_is_int = isinstance(add, int)
    fits = (
        x.dtype != object
        and (add_is_int or add.dtype != object)
        and abs(mul) <= _INT64_MAX
        and _absmax(add) <= _INT64_MAX
        and _absmax(x) * abs(mul) + _absmax(add) <= _INT64_MAX
    )
    if fits:
        return x * np.int64(mul) + (np.int64(add) if add_is_int else add)
    x_obj = x.astype(object)
    add_obj = add if add_is_int else add.astype(object)
    return x_obj * mul + add_obj


def _floordiv(x, d):
    """Exact ``x // d`` for an integer array ``x`` and a positive Python int."""
    if x.dtype != object and d <= _INT64_MAX:
        return x // np.int64(d)
    return _narrow(x.astype(object) // d)


def _narrow_pair(a, b):
    """Return both arrays as int64 if both fit, else both as object arrays."""
    if a.dtype != object and b.dtype != object:
        return a, b
    a_n, b_n = _narrow(a), _narrow(b)
    if a_n.dtype != object and b_n.dtype != object:
        return a_n, b_n
    return a.astype(object), b.astype(object)


def _take(value, idx):
    return value if isinstance(value, int) else value[idx]


def _scale(value, k):
    """Exact ``value * k`` for a Python int or an integer array ``value``."""
    if isinstance(value, int):
        return value * k
    return _mul_add(value, k, 0)


# ---------------------------------------------------------------------------
# Core samplers on flat arrays (no validation)
# ---------------------------------------------------------------------------


def _uniform_below(high, n, rng):
    """``n`` uniform integers in ``{0, ..., high - 1}``, ``high`` a Python int."""
    if high <= _INT64_MAX:
        return rng.integers(0, high, size=n, dtype=np.int64)
    # Rejection sampling on Python ints built from 62-bit chunks.
    nbits = high.bit_length()
    nchunks = -(-nbits // _DIGIT_BITS)
    drop = 2 ** (nchunks * _DIGIT_BITS - nbits)
    out = np.empty(n, dtype=object)
    idx = np.arange(n)
    while idx.size:
        value = np.zeros(idx.size, dtype=object)
        for _ in range(nchunks):
            chunk = rng.integers(0, _DIGIT, size=idx.size, dtype=np.int64)
            value = value * _DIGIT + chunk.astype(object)
        value = value // drop
        ok = value < high
        out[idx[ok]] = value[ok]
        idx = idx[~ok]
    return out


def _bernoulli_rational_object(num, den, rng):
    """Exact Bernoulli(num / den) for object arrays of Python ints.

    Lazy comparison of a uniform U in [0, 1) with p = num / den, one base
    ``2**62`` digit at a time: the digits of U are uniform integers, the digits
    of p are computed exactly by long division. Stops at the first digit where
    they differ (after one round except with probability about ``2**-62``).
    """
    n = num.size
    out = np.zeros(n, dtype=bool)
    out[num >= den] = True
    idx = np.flatnonzero((num > 0) & (num < den))
    rem = num[idx]
    den = den[idx]
    while idx.size:
        rem = rem * _DIGIT
        digit = rem // den
        rem = rem - digit * den
        digit = digit.astype(np.int64)
        u = rng.integers(0, _DIGIT, size=idx.size, dtype=np.int64)
        below = u < digit
        out[idx[below]] = True
        undecided = u == digit
        idx = idx[undecided]
        rem = rem[undecided]
        den = den[undecided]
    return out


def _bernoulli_rational_flat(num, den, n, rng):
    """Exact Bernoulli(num / den), ``n`` draws; ``num``/``den`` ints or 1-d arrays.

    Assumes ``0 <= num <= den`` and ``den >= 1`` (not checked).
    """
    if not isinstance(num, int):
        num = _narrow(num)
    if not isinstance(den, int):
        den = _narrow(den)
    den_fits = den <= _INT64_MAX if isinstance(den, int) else den.dtype != object
    if den_fits:
        # 0 <= num <= den, so num fits in int64 as well (and was narrowed).
        # One uniform integer U in [0, den) per element: U < num w.p. num / den.
        return rng.integers(0, den, size=n, dtype=np.int64) < num
    if isinstance(num, int):
        num = np.full(n, num, dtype=object)
    if isinstance(den, int):
        den = np.full(n, den, dtype=object)
    return _bernoulli_rational_object(num.astype(object), den.astype(object), rng)


def _bernoulli_exp_unit(num, den, n, rng):
    """Exact Bernoulli(exp(-num / den)) for ``0 <= num <= den`` (CKS Algorithm 1).

    Draws A_K ~ Bernoulli(gamma / K) for K = 1, 2, ... until the first failure
    and returns whether that K is odd; P[K odd] = exp(-gamma).
    """
    out = np.empty(n, dtype=bool)
    idx = np.arange(n)
    k = 1
    while idx.size:
        success = _bernoulli_rational_flat(
            _take(num, idx), _scale(_take(den, idx), k), idx.size, rng
        )
        out[idx[~success]] = k % 2 == 1
        idx = idx[success]
        k += 1
    return out


def _bernoulli_exp_split(whole, rem, den, n, rng):
    """Exact Bernoulli(exp(-(whole + rem / den))) with ``0 <= rem < den``.

    ``whole`` independent Bernoulli(exp(-1)) draws must all succeed, then one
    Bernoulli(exp(-rem / den)). The first part loops over rounds j = 1, 2, ...
    on the elements that are still alive and have ``whole >= j``; each round
    kills an element with probability 1 - 1/e, so huge ``whole`` values cost
    only a few rounds.
    """
    alive = np.ones(n, dtype=bool)
    if isinstance(whole, int):
        cand = np.arange(n) if whole >= 1 else np.arange(0)
    else:
        cand = np.flatnonzero(whole >= 1)
    j = 1
    while cand.size:
        success = _bernoulli_exp_unit(1, 1, cand.size, rng)
        alive[cand[~success]] = False
        cand = cand[success]
        j += 1
        if isinstance(whole, int):
            cand = cand if whole >= j else cand[:0]
        else:
            cand = cand[whole[cand] >= j]
    idx = np.flatnonzero(alive)
    if idx.size:
        alive[idx] = _bernoulli_exp_unit(
            _take(rem, idx), _take(den, idx), idx.size, rng
        )
    return alive


def _geometric_exp1(n, rng):
    """Number of successes of Bernoulli(exp(-1)) before the first failure."""
    out = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        success = _bernoulli_exp_unit(1, 1, idx.size, rng)
        idx = idx[success]
        out[idx] += 1
    return out


def _discrete_laplace_flat(t, s, n, rng):
    """``n`` draws of the discrete Laplace with scale t / s (CKS Algorithm 2)."""
    out = np.empty(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        u = _uniform_below(t, idx.size, rng)
        if t > 1:
            # D ~ Bernoulli(exp(-U / t)); U / t < 1. Reject where D == 0.
            keep = _bernoulli_exp_unit(u, t, idx.size, rng)
            rejected = idx[~keep]
            idx = idx[keep]
            u = u[keep]
        else:
            rejected = idx[:0]
        v = _geometric_exp1(idx.size, rng)
        x = _mul_add(v, t, u)  # X = U + t * V
        y = _floordiv(x, s)
        if y.dtype == object:
            raise OverflowError(
                "A discrete Laplace sample does not fit in int64; the scale is "
                "too large."
            )
        b = rng.integers(0, 2, size=idx.size, dtype=np.int64).astype(bool)
        accept = ~(b & (y == 0))
        out[idx[accept]] = np.where(b, -y, y)[accept]
        idx = np.concatenate([rejected, idx[~accept]])
    return out


def _square_divmod(a, den):
    """Exact ``divmod(a * a, den)`` elementwise, ``den`` a positive Python int.

    Uses int64 for the elements whose square fits, Python ints for the rest.
    Returns narrowed arrays (int64 where all values fit).
    """
    if a.dtype != object and den <= _INT64_MAX:
        small = np.abs(a) <= _SQRT_INT64_MAX
        if small.all():
            sq = a * a
            return sq // den, sq % den
        whole = np.empty(a.size, dtype=np.int64)
        rem = np.empty(a.size, dtype=np.int64)
        sq = a[small] * a[small]
        whole[small] = sq // den
        rem[small] = sq % den
        big = ~small
        a_big = a[big].astype(object)
        sq_big = a_big * a_big
        whole_big = _narrow(sq_big // den)
        if whole_big.dtype == object:
            whole = whole.astype(object)
        whole[big] = whole_big
        rem[big] = (sq_big % den).astype(np.int64)  # < den <= int64 max
        return whole, rem
    a_obj = a.astype(object)
    sq = a_obj * a_obj
    return _narrow(sq // den), _narrow(sq % den)


def _discrete_gaussian_flat(sigma2, n, rng):
    """``n`` draws of the discrete Gaussian (CKS Algorithm 3)."""
    p, q = sigma2.numerator, sigma2.denominator
    t = math.isqrt(p // q) + 1  # floor(sqrt(sigma2)) + 1, exactly
    # Acceptance exponent (|Y| - sigma2 / t)**2 / (2 sigma2)
    #   = (|Y| q t - p)**2 / (2 p q t**2).
    qt = q * t
    den = 2 * p * q * t * t
    out = np.empty(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        y = _discrete_laplace_flat(t, 1, idx.size, rng)
        a = _mul_add(np.abs(y), qt, -p)
        whole, rem = _square_divmod(a, den)
        accept = _bernoulli_exp_split(whole, rem, den, idx.size, rng)
        out[idx[accept]] = y[accept]
        idx = idx[~accept]
    return out


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def _broadcast_int_pair(num, den, size):
    num = _to_int_array(num, "num")
    den = _to_int_array(den, "den")
    if size is None:
        shape = np.broadcast_shapes(num.shape, den.shape)
    else:
        shape, _ = _shape_from_size(size)
    num, den = _narrow_pair(num, den)
    num = np.broadcast_to(num, shape).ravel()
    den = np.broadcast_to(den, shape).ravel()
    if np.any(den < 1):
        raise ValueError("den must be >= 1 everywhere.")
    if np.any(num < 0):
        raise ValueError("num must be >= 0 everywhere.")
    return num, den, shape


def bernoulli_rational(num, den, rng, size=None):
    """Draw exact Bernoulli(num / den) variables.

    Parameters
    ----------
    num : int or array-like of int
        Numerators, ``0 <= num <= den``. Python ints of any size are allowed
        (use an object array to mix them in an array).
    den : int or array-like of int
        Denominators, ``den >= 1``. Broadcast against ``num``.
    rng : numpy.random.Generator
        Source of uniform integers.
    size : None, int or tuple of ints, optional
        Output shape; ``num`` and ``den`` are broadcast to it. By default the
        broadcast shape of ``num`` and ``den``.

    Returns
    -------
    out : numpy.ndarray of bool
        ``True`` with probability exactly ``num / den``, independently.

    Notes
    -----
    When all denominators fit in int64, each draw is ``U < num`` for one
    uniform integer ``U`` in ``{0, ..., den - 1}``. Otherwise the values are
    kept as Python ints and a uniform ``U`` in [0, 1) is compared lazily with
    ``num / den``, one base ``2**62`` digit at a time (expected rounds:
    ``1 + 2**-62``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> draws = bernoulli_rational(1, 3, rng, size=(2, 5))
    >>> draws.shape, draws.dtype
    ((2, 5), dtype('bool'))
    >>> bool(bernoulli_rational(10**30, 10**30, rng))
    True
    """
    _check_rng(rng)
    num, den, shape = _broadcast_int_pair(num, den, size)
    if np.any(num > den):
        raise ValueError("num must be <= den everywhere.")
    out = _bernoulli_rational_flat(num, den, num.size, rng)
    return out.reshape(shape)


def bernoulli_exp(num, den, rng, size=None):
    """Draw exact Bernoulli(exp(-num / den)) variables (CKS Algorithm 1).

    Parameters
    ----------
    num : int or array-like of int
        Numerators of ``gamma = num / den``, ``num >= 0``. Python ints of any
        size are allowed.
    den : int or array-like of int
        Denominators, ``den >= 1``. Broadcast against ``num``.
    rng : numpy.random.Generator
        Source of uniform integers.
    size : None, int or tuple of ints, optional
        Output shape; ``num`` and ``den`` are broadcast to it. By default the
        broadcast shape of ``num`` and ``den``.

    Returns
    -------
    out : numpy.ndarray of bool
        ``True`` with probability exactly ``exp(-num / den)``, independently.

    Notes
    -----
    For ``gamma <= 1``: draw ``A_K ~ Bernoulli(gamma / K)`` for
    ``K = 1, 2, ...`` until the first failure and return whether ``K`` is odd.
    For ``gamma > 1``: ``floor(gamma)`` independent Bernoulli(exp(-1)) draws
    must all succeed, followed by one Bernoulli(exp(-(gamma - floor(gamma)))).
    The ``floor(gamma)`` draws run as rounds over the still-alive elements only,
    so the cost does not grow with ``floor(gamma)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> draws = bernoulli_exp(1, 2, rng, size=1000)
    >>> draws.shape, draws.dtype
    ((1000,), dtype('bool'))
    >>> bool(bernoulli_exp(0, 1, rng))
    True
    """
    _check_rng(rng)
    num, den, shape = _broadcast_int_pair(num, den, size)
    whole = _narrow(num // den)
    rem = _narrow(num % den)  # 0 <= rem < den
    out = _bernoulli_exp_split(whole, rem, den, num.size, rng)
    return out.reshape(shape)


def _finish(out, shape, size):
    if size is None:
        return out[0]
    return out.reshape(shape)


def sample_discrete_laplace(scale, size, rng):
    """Sample the discrete Laplace distribution exactly (CKS Algorithm 2).

    ``P[X = x]`` is proportional to ``exp(-|x| / scale)`` for every integer
    ``x``.

    Parameters
    ----------
    scale : Fraction, int or float
        Positive scale. Pass a :class:`fractions.Fraction` (or an int): a float
        is converted exactly with ``Fraction(scale)``, so ``0.1`` means the
        binary number nearest to 0.1, not 1/10. Use :func:`round_up_fraction`
        to turn a computed float scale into a short Fraction that is no
        smaller.
    size : None, int or tuple of ints
        Output shape. ``None`` returns a single ``numpy.int64``.
    rng : numpy.random.Generator
        Source of uniform integers.

    Returns
    -------
    samples : numpy.ndarray of int64
        Independent samples, of shape ``size``.

    Raises
    ------
    OverflowError
        If a sample does not fit in int64 (only possible for astronomically
        large scales).

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = sample_discrete_laplace(Fraction(5, 2), (3, 4), rng)
    >>> x.shape, x.dtype
    ((3, 4), dtype('int64'))
    """
    _check_rng(rng)
    scale = _to_fraction(scale, "scale")
    shape, n = _shape_from_size(size)
    out = _discrete_laplace_flat(scale.numerator, scale.denominator, n, rng)
    return _finish(out, shape, size)


def sample_discrete_gaussian(sigma2, size, rng):
    """Sample the discrete Gaussian distribution exactly (CKS Algorithm 3).

    ``P[X = x]`` is proportional to ``exp(-x**2 / (2 * sigma2))`` for every
    integer ``x``.

    Parameters
    ----------
    sigma2 : Fraction, int or float
        Positive variance parameter (the variance of the discrete Gaussian is
        slightly below ``sigma2``). Pass a :class:`fractions.Fraction` or an
        int; a float is converted exactly with ``Fraction(sigma2)``.
    size : None, int or tuple of ints
        Output shape. ``None`` returns a single ``numpy.int64``.
    rng : numpy.random.Generator
        Source of uniform integers.

    Returns
    -------
    samples : numpy.ndarray of int64
        Independent samples, of shape ``size``.

    Notes
    -----
    With ``t = floor(sqrt(sigma2)) + 1`` (computed with integers only), draw a
    discrete Laplace ``Y`` of scale ``t`` and accept it with probability
    ``exp(-(|Y| - sigma2 / t)**2 / (2 * sigma2))``, an exact rational exponent
    evaluated with int64 where the squares fit and Python ints otherwise.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = sample_discrete_gaussian(Fraction(9, 2), 1000, rng)
    >>> x.shape, x.dtype
    ((1000,), dtype('int64'))
    """
    _check_rng(rng)
    sigma2 = _to_fraction(sigma2, "sigma2")
    shape, n = _shape_from_size(size)
    out = _discrete_gaussian_flat(sigma2, n, rng)
    return _finish(out, shape, size)


def round_up_fraction(x, denominator_bits=20):
    """Round a positive number up to a multiple of ``2**-denominator_bits``.

    Parameters
    ----------
    x : float, int or Fraction
        Positive, finite value (a float is read exactly).
    denominator_bits : int, default=20
        The result is ``k / 2**denominator_bits`` for an integer ``k``.

    Returns
    -------
    rounded : fractions.Fraction
        The smallest ``k / 2**denominator_bits`` that is ``>= x``. Use it to
        turn a calibrated noise scale into an exact rational one without
        reducing it: more noise never hurts privacy.

    Examples
    --------
    >>> round_up_fraction(0.1, denominator_bits=4)
    Fraction(1, 8)
    >>> round_up_fraction(3)
    Fraction(3, 1)
    """
    value = _to_fraction(x, "x")
    if not isinstance(denominator_bits, numbers.Integral) or isinstance(
        denominator_bits, bool
    ):
        raise TypeError("denominator_bits must be an int.")
    if denominator_bits < 0:
        raise ValueError(
            f"denominator_bits must be non-negative, got {denominator_bits}."
        )
    den = 2 ** int(denominator_bits)
    k = -((-value.numerator * den) // value.denominator)
    return Fraction(k, den)


def _positive_float(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}.")
    return value


def sample_laplace(scale, size, rng):
    """Sample the continuous Laplace distribution (NOT floating-point safe).

    A thin wrapper around :meth:`numpy.random.Generator.laplace`, kept for
    analysis and simulation. Floating-point Laplace noise is not differentially
    private as implemented (Mironov, CCS 2012); releases must use
    :func:`sample_discrete_laplace`.

    Parameters
    ----------
    scale : float
        Positive scale ``b`` of the density ``exp(-|x| / b) / (2 b)``.
    size : None, int or tuple of ints
        Output shape.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    samples : numpy.ndarray of float64 or float

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sample_laplace(2.0, (2, 3), rng).shape
    (2, 3)
    """
    _check_rng(rng)
    scale = _positive_float(scale, "scale")
    return rng.laplace(0.0, scale, size)


def sample_gaussian(sigma, size, rng):
    """Sample the continuous Gaussian distribution (NOT floating-point safe).

    A thin wrapper around :meth:`numpy.random.Generator.normal`, kept for
    analysis and simulation. Releases must use
    :func:`sample_discrete_gaussian`.

    Parameters
    ----------
    sigma : float
        Positive standard deviation.
    size : None, int or tuple of ints
        Output shape.
    rng : numpy.random.Generator
        Random generator.

    Returns
    -------
    samples : numpy.ndarray of float64 or float

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sample_gaussian(1.5, 4, rng).dtype
    dtype('float64')
    """
    _check_rng(rng)
    sigma = _positive_float(sigma, "sigma")
    return rng.normal(0.0, sigma, size)
