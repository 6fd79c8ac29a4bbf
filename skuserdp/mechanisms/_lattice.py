"""The lattice path: per-user contributions as exact integers on a 2^k grid.

Floating-point releases leak (Mironov 2012: the low-order bits of
``x + noise`` reveal ``x``) and floating-point sums can exceed their nominal
sensitivity (Casacuberta et al. 2022). skuserdp avoids both:

1. each user's statistic is centred on a public point, clipped to a public
   ball, divided by a power-of-two grid step (exact in binary) and rounded to
   an integer vector: ``encode_contributions``. The norm bound of the rounded
   vector is *verified exactly in integer arithmetic*; the rare vector that
   fails (it cannot, up to float round-off in the clipping) is shrunk towards
   zero until it passes. So every contribution provably lies in the ball of
   :func:`skuserdp.privacy.lattice_contribution_radius`.
2. contributions are summed exactly in int64 (:func:`exact_sum`); the grid is
   chosen so that no sum can overflow or lose float exactness (< 2^52).
3. integer noise (discrete Laplace or discrete Gaussian) is added to the
   integer sum, and only then is the result mapped back to floats — a
   post-processing step that cannot leak.

The grid depends only on public quantities (radius, dimension, number of
users), never on the data.
"""

import functools
import math

import numpy as np

from ..privacy import lattice_contribution_radius
from ..privacy._sensitivity import _check_norm, _rounding_term
from ..utils._numeric import TINY_NORM
from ..utils._validation import _as_2d_float

__all__ = ["choose_grid", "lattice_radius", "encode_contributions", "exact_sum",
           "round_to_grid"]

_EXACT = 2.0 ** 52
# Target relative widening of the radius by rounding: 2^-11 (about 0.05 %).
_RESOLUTION = 2.0 ** 10


def choose_grid(radius, dim, n_users, norm="l2", *, resolution=None):
    """Power-of-two grid step for contributions of norm ``<= radius``.

    The step is as coarse as possible while rounding widens the radius by at
    most about 2^-11 relative, and fine enough never to overflow: the sum of
    ``n_users`` contributions stays below 2^52 in absolute value per
    coordinate. It depends only on public quantities.

    Parameters
    ----------
    radius : float
        Public norm bound of every centred contribution, ``> 0``.
    dim : int
        Number of coordinates.
    n_users : int
        Number of users (public under replace-one), ``>= 1``.
    norm : {"l1", "l2", "linf"}, default="l2"
        Norm of the bound.
    resolution : float, default=None
        Lattice points per radius (times the rounding term), ``2^10`` when
        None: the rounding of one contribution moves it by at most about
        ``radius / resolution`` per coordinate. A release whose estimand may
        sit close to a box edge (a per-column mean in the box's units) asks
        for a finer lattice, so that deterministic rounding cannot bias it
        (e.g. ``2^24``); the overflow limit still applies.

    Returns
    -------
    grid : float
        A power of two.

    Examples
    --------
    >>> from skuserdp.mechanisms import choose_grid
    >>> choose_grid(1.0, 4, 1000)
    0.00048828125
    """
    _check_norm(norm)
    radius = float(radius)
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}.")
    n_users = int(n_users)
    if n_users < 1:
        raise ValueError(f"n_users must be >= 1, got {n_users}.")
    term = _rounding_term(dim, norm)
    u_min = (_RESOLUTION if resolution is None else float(resolution)) * term
    u_max = _EXACT / n_users - term
    if u_max < 1:
        raise ValueError(
            f"cannot place {n_users} users in {dim} dimensions on an exact int64 "
            "lattice; the problem is too large for the lattice path."
        )
    k = math.floor(math.log2(radius / min(u_min, u_max)))
    grid = math.ldexp(1.0, k)
    while radius / grid > u_max:
        grid *= 2.0
    return grid


def lattice_radius(radius, grid, dim, norm="l2"):
    """Norm bound, in grid units, of every contribution the lattice encodes.

    A contribution of norm ``<= radius`` divided by the power-of-two ``grid``
    and rounded to the integer lattice; the widening for the rounding is
    :func:`skuserdp.privacy.lattice_contribution_radius`. This is the bound
    :func:`encode_contributions` verifies for every row, and the one noise is
    calibrated for (:func:`skuserdp.mechanisms.lattice_sensitivity`).

    Parameters
    ----------
    radius : float
        Public norm bound of every centred contribution, in its own units.
    grid : float
        Power-of-two grid step (from :func:`choose_grid`).
    dim : int
        Number of coordinates.
    norm : {"l1", "l2", "linf"}, default="l2"
        Norm of the bound.

    Returns
    -------
    radius_units : float
        ``radius / grid`` plus ``√d/2`` (ℓ2), ``d/2`` (ℓ1) or ``1/2`` (ℓ∞).

    Examples
    --------
    >>> from skuserdp.mechanisms._lattice import lattice_radius
    >>> lattice_radius(1.0, 2.0 ** -10, 4)
    1025.0
    """
    return lattice_contribution_radius(radius / grid, dim, norm)


def _check_grid(grid):
    grid = float(grid)
    if not (grid > 0 and math.frexp(grid)[0] == 0.5):
        raise ValueError(f"grid must be a positive power of two, got {grid!r}.")
    return grid


def _clip_rescaled(D, radius, norm):
    """Radial clip of the finite rows ``D`` without overflow or underflow.

    Each row is divided by its largest absolute coordinate before its norm is
    taken, so its direction is kept and the clipped row has norm ``radius``
    (up to rounding) or its own, whatever its magnitude.
    """
    m = np.abs(D).max(axis=1)
    out = np.zeros_like(D)
    nonzero = m > 0
    U = D[nonzero] / m[nonzero, None]
    n_u = (np.sqrt(np.einsum("ij,ij->i", U, U)) if norm == "l2"
           else np.abs(U).sum(axis=1))
    out[nonzero] = U * np.minimum(m[nonzero], radius / n_u)[:, None]
    return out


def _clip(D, radius, norm):
    """Clip the finite rows ``D`` to the ball of ``radius`` in ``norm``."""
    if norm == "linf":
        return np.clip(D, -radius, radius)
    with np.errstate(over="ignore", under="ignore"):
        if norm == "l2":
            norms = np.sqrt(np.einsum("ij,ij->i", D, D))
            fragile = ~np.isfinite(norms) | ((norms < TINY_NORM)
                                             & (np.abs(D).max(axis=1) > 0))
        else:
            norms = np.abs(D).sum(axis=1)
            fragile = ~np.isfinite(norms)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        scale = np.minimum(1.0, radius / norms)
    out = D * scale[:, None]
    if fragile.any():  # squares or sums out of float range: rescale first
        out[fragile] = _clip_rescaled(D[fragile], radius, norm)
    return out


def _clip_centred(values, center, radius, norm):
    """``_clip(values - center)``, also when the difference overflows.

    A row whose difference overflows lies farther than any finite radius:
    it is clipped at half scale (``2 · clip(values/2 - center/2, radius/2)``,
    exact powers of two).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        D = values - center
    out = _clip(D, radius, norm) if np.isfinite(D).all() else None
    if out is not None:
        return out
    huge = ~np.isfinite(D).all(axis=1)
    out = np.empty_like(D)
    out[~huge] = _clip(D[~huge], radius, norm)
    half = 0.5 * values[huge] - 0.5 * np.broadcast_to(center, values.shape)[huge]
    out[huge] = 2.0 * _clip(half, 0.5 * radius, norm)
    return out


def _row_norm_ok(K, bound, norm):
    if norm == "linf":
        return np.abs(K).max(axis=1) <= math.floor(bound)
    if norm == "l1":
        return np.abs(K).sum(axis=1) <= math.floor(bound)
    max_abs = int(np.abs(K).max(initial=0))
    if K.shape[1] * max_abs * max_abs < 2 ** 62:
        sq = np.einsum("ij,ij->i", K, K)
    else:  # exact Python integers for gigantic rows
        sq = np.array([sum(int(v) * int(v) for v in row) for row in K], dtype=object)
    return sq <= math.floor(bound * bound * (1 - 1e-12))


def _row_norms_float(K, norm):
    Kf = K.astype(np.float64)
    if norm == "l2":
        return np.sqrt(np.einsum("ij,ij->i", Kf, Kf))
    if norm == "l1":
        return np.abs(Kf).sum(axis=1)
    return np.abs(Kf).max(axis=1)


def encode_contributions(values, *, center, radius, grid, norm="l2"):
    """Clip per-user statistics to a public ball and round them to the lattice.

    Parameters
    ----------
    values : ndarray of shape (n_users, n_features)
        One statistic per user (e.g. per-user means), finite floats.
    center : float or ndarray of shape (n_features,)
        Public centre of the ball.
    radius : float
        Public radius of the ball in ``norm``, ``> 0``. ``"linf"`` clips each
        coordinate to ``[center - radius, center + radius]``; ``"l1"`` and
        ``"l2"`` scale the centred vector radially onto the ball.
    grid : float
        Power-of-two grid step from :func:`choose_grid`.
    norm : {"l1", "l2", "linf"}, default="l2"
        Norm of the ball.

    Returns
    -------
    contributions : ndarray of shape (n_users, n_features), dtype int64
        ``round((clip(values) - center) / grid)``. Every row provably has
        norm ``<= lattice_radius(radius, grid, n_features, norm)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import encode_contributions
    >>> encode_contributions(np.array([[3.0, 4.0], [0.3, 0.0]]), center=0.0,
    ...                      radius=1.0, grid=0.25).tolist()
    [[2, 3], [1, 0]]
    """
    _check_norm(norm)
    values = _as_2d_float(values, "values")
    if not np.isfinite(values).all():
        raise ValueError("values must be finite.")
    grid = _check_grid(grid)
    center = np.asarray(center, dtype=np.float64)
    return _encode(values, center, float(radius), grid, norm)


def _encode(values, center, radius, grid, norm):
    """:func:`encode_contributions` on finite ``values`` (arguments checked)."""
    Y = _clip_centred(values, center, radius, norm) / grid
    K = np.rint(Y).astype(np.int64)
    bound = lattice_radius(radius, grid, values.shape[1], norm)
    return _shrink_failing_rows(K, bound, norm)


def _shrink_failing_rows(K, bound, norm):
    """Shrink every row of ``K`` whose exact norm exceeds ``bound`` (in place)."""
    ok = _row_norm_ok(K, bound, norm)
    while not ok.all():
        bad = ~ok
        factor = 0.999 * bound / _row_norms_float(K[bad], norm)
        K[bad] = np.trunc(K[bad] * factor[:, None]).astype(np.int64)
        ok = _row_norm_ok(K, bound, norm)
    return K


#: values per block of :func:`encode_sum` (1 MB per temporary: 2048 rows of
#: 64 features)
_BLOCK_VALUES = 1 << 17


def encode_sum(values, *, center, radius, grid, norm="l2", rows=None, shift=None,
               box=None):
    """``exact_sum(encode_contributions(values, ...))`` without the integer table.

    Every row is encoded independently of the others, so the rows are
    encoded and summed in blocks: the same exact int64 sums, in memory and
    time proportional to one pass over ``values``, with no ``n_users ×
    n_features`` temporaries. When the rounded vectors and all partial sums
    are provably below 2^53 (public: the norm bound of a contribution, the
    number of rows and the grid), the integers are held in float64, where
    they are exact, and their norms are checked in float64 (exact for such
    integers) before the rows that fail are shrunk in int64 exactly as in
    :func:`encode_contributions`.

    Parameters
    ----------
    values : ndarray of shape (n_users, n_features)
        One statistic per user, finite floats.
    center : float or ndarray of shape (n_features,)
        Public centre of the ball.
    radius : float
        Public radius of the ball in ``norm``, ``> 0``.
    grid : float
        Power-of-two grid step from :func:`choose_grid`.
    norm : {"l1", "l2", "linf"}, default="l2"
        Norm of the ball.
    rows : ndarray of int, default=None
        Encode only ``values[rows]`` (their sum does not depend on the
        order), gathered block by block.
    shift : ndarray of shape (n_features,), default=None
        Encode ``values - shift`` (a public point, e.g. the centre of a
        public box), shifted block by block.
    box : ndarray of shape (n_features,), default=None
        Encode ``clip(values - shift, -box, box)``: the rows projected onto a
        public box, block by block.

    Returns
    -------
    total : ndarray of shape (n_features,), dtype int64
        ``exact_sum(encode_contributions(V, center=center, radius=radius,
        grid=grid, norm=norm))`` with ``V = values[rows]``, then shifted and
        clipped: the rows as the caller sees them, without a copy of the
        table.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._lattice import encode_sum
    >>> encode_sum(np.array([[3.0, 4.0], [0.3, 0.0]]), center=0.0, radius=1.0,
    ...            grid=0.25).tolist()
    [3, 3]
    """
    _check_norm(norm)
    values = _as_2d_float(values, "values")
    grid = _check_grid(grid)
    center = np.asarray(center, dtype=np.float64)
    radius = float(radius)
    n, d = values.shape if rows is None else (len(rows), values.shape[1])
    bound = lattice_radius(radius, grid, d, norm)
    # float64 holds every rounded entry, row norm and partial column sum
    # exactly when they stay below 2^53 (a row failing the check exceeds the
    # bound by float round-off only, hence the margin); multiplying by
    # 1/grid or by scale/grid equals dividing by the power of two grid, up
    # to results that round to 0 either way, for 2^-1000 <= grid <= 2^1000
    fast = ((n + 1) * bound < 2.0 ** 52
            and 1.01 * (bound * bound if norm == "l2" else bound) < 2.0 ** 53
            and 2.0 ** -1000 <= grid <= 2.0 ** 1000)
    limit = None
    if fast:  # the exact check of _row_norm_ok, on integers held in floats
        limit = (math.floor(bound * bound * (1 - 1e-12)) if norm == "l2"
                 else math.floor(bound))
    total = np.zeros(d, dtype=np.int64)
    float_total = np.zeros(d)
    step = max(1, _BLOCK_VALUES // d)
    size = min(n, step)
    buffers = (np.empty((size, d)), np.empty((size, d)) if norm == "l1" else None)
    ones = np.ones(size)
    moved = np.empty((size, d)) if shift is not None or box is not None else None
    for start in range(0, n, step):
        block = (values[start:start + step] if rows is None
                 else values[rows[start:start + step]])
        if moved is not None:
            block = _shift_and_clip(block, shift, box, moved[:block.shape[0]])
        Y = (_FAST_BLOCKS[norm](block, center, radius, grid, buffers) if fast
             else None)
        if Y is None:  # the general path, on this block
            if not np.isfinite(block).all():
                raise ValueError("values must be finite.")
            total += exact_sum(_encode(block, center, radius, grid, norm))
        elif (_float_row_norms(Y, norm, buffers[1]) <= limit).all():
            float_total += ones[:Y.shape[0]] @ Y  # exact in any order
        else:
            K = _shrink_failing_rows(Y.astype(np.int64), bound, norm)
            total += exact_sum(K)
    return total + float_total.astype(np.int64)


def _shift_and_clip(block, shift, box, out):
    """``clip(block - shift, -box, box)`` (either step optional) into ``out``."""
    if shift is None:
        out[...] = block
    else:
        with np.errstate(over="ignore"):
            np.subtract(block, shift, out=out)
    if box is not None:  # np.clip(out, -box, box), in two faster ufuncs
        np.maximum(out, -box, out=out)
        np.minimum(out, box, out=out)
    return out


def _float_row_norms(Y, norm, scratch):
    """Row norms (squared for ℓ2) of integer-valued floats, as _row_norm_ok
    computes them in int64 (exact here: every value is below 2^53)."""
    if norm == "l2":
        return np.einsum("ij,ij->i", Y, Y)
    A = np.abs(Y, out=scratch[:Y.shape[0]] if scratch is not None else None)
    return A.sum(axis=1) if norm == "l1" else A.max(axis=1)


def _fast_radial_block(block, center, radius, grid, buffers, norm):
    """``rint(_clip(block - center) / grid)`` as floats for ``norm`` ℓ2 or ℓ1,
    as in :func:`encode_contributions`, or None when a row needs the general
    path (a difference or a norm out of float range, a nonzero ℓ2 row whose
    norm is below :data:`TINY_NORM`, a subnormal scale)."""
    D = buffers[0][:block.shape[0]]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        np.subtract(block, center, out=D)
        if norm == "l2":
            norms = np.sqrt(np.einsum("ij,ij->i", D, D))
        else:
            norms = np.abs(D, out=buffers[1][:block.shape[0]]).sum(axis=1)
    if not np.isfinite(norms).all():
        return None
    if norm == "l2":
        tiny = norms < TINY_NORM
        if tiny.any() and np.abs(D[tiny]).max() > 0:
            return None
    # _clip's scale = min(1, radius / norm), then / grid, in one product
    with np.errstate(divide="ignore", over="ignore"):
        factor = np.minimum(1.0, radius / norms) / grid
    if factor.min() < 2.0 ** -1022:
        return None
    np.multiply(D, factor[:, None], out=D)
    return np.rint(D, out=D)


def _fast_linf_block(block, center, radius, grid, buffers):
    """``rint(clip(block - center, ±radius) / grid)`` as floats, or None when
    a difference is not finite (the general path)."""
    D = buffers[0][:block.shape[0]]
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(block, center, out=D)
        if not np.isfinite(np.sum(D)):  # an overflowing sum only costs time
            return None
    np.clip(D, -radius, radius, out=D)
    np.multiply(D, 1.0 / grid, out=D)
    return np.rint(D, out=D)


_FAST_BLOCKS = {
    "l2": functools.partial(_fast_radial_block, norm="l2"),
    "l1": functools.partial(_fast_radial_block, norm="l1"),
    "linf": _fast_linf_block,
}


def exact_sum(contributions):
    """Exact column sums of int64 lattice contributions.

    Parameters
    ----------
    contributions : ndarray of shape (n_users, n_features), dtype int64
        Output of :func:`encode_contributions` with a grid from
        :func:`choose_grid` (which rules out overflow).

    Returns
    -------
    total : ndarray of shape (n_features,), dtype int64

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import exact_sum
    >>> exact_sum(np.array([[1, -2], [3, 4]], dtype=np.int64)).tolist()
    [4, 2]
    """
    K = np.asarray(contributions)
    if K.dtype != np.int64:
        raise ValueError(f"contributions must be int64, got {K.dtype}.")
    return K.sum(axis=0, dtype=np.int64)


def round_to_grid(values, grid):
    """Round a statistic to integer multiples of a power-of-two ``grid``.

    Use with :func:`skuserdp.privacy.lattice_widened_sensitivity` when a whole
    statistic (not a sum of contributions) is released on the lattice.

    Parameters
    ----------
    values : array-like
        Finite floats.
    grid : float
        Power-of-two grid step.

    Returns
    -------
    units : ndarray, dtype int64
        ``rint(values / grid)``.

    Examples
    --------
    >>> from skuserdp.mechanisms import round_to_grid
    >>> round_to_grid([0.3, -1.2], 0.5).tolist()
    [1, -2]
    """
    values = np.asarray(values, dtype=np.float64)
    grid = _check_grid(grid)
    if not np.isfinite(values).all():
        raise ValueError("values must be finite.")
    units = np.rint(values / grid)
    if np.abs(units).max(initial=0) >= _EXACT:
        raise ValueError("values are too large for this grid (>= 2^52 grid steps).")
    return units.astype(np.int64)
