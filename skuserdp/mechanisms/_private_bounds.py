"""Private per-feature bounds at user level, with no public scale (issue 15).

Not from the papers: OUR CHOICE, used by every estimator's ``bounds="auto"``.
Each user contributes one value per feature (e.g. its mean), so replacing one
user changes every count below by at most 1 (replace-one, user level).

For every feature, two exponential-mechanism releases on a public grid that
spans 154 orders of magnitude with no scale assumed (``0`` and ``±2^(k/4)``
for ``2^-256 ≤ 2^(k/4) ≤ 2^256``, about ``1e-77`` to ``1e77``,
:func:`bounds_grid`; the limit keeps squared radii finite downstream):

1. a **median** bin: the bin ``(g[k-1], g[k]]`` between two grid points
   costs ``max(#{v ≤ g[k-1]}, #{v > g[k]})`` (as in Levy et al.'s
   PrivateRange, Algorithm 6, on a geometric grid); sampling
   ``∝ exp(-ε₀·cost/2)`` is ε₀-DP and ``t`` is the bin's midpoint. A bin
   outside the data costs ``n`` against at most about ``n/2`` for the
   median's, so the mass of the far bins is at most
   ``|T|·exp(-ε₀(n/2 - 1)/2)``. Bins rather than points: data concentrated
   inside one grid cell still has a unique best candidate;
2. a **spread** ``s``: the bin holding the ``q = 0.75`` quantile (the
   median, ``q = 0.5``, when the users are too few for 0.75:
   :func:`spread_rule`) of the
   distances ``|v - t|`` (``t`` is public once released) costs 0, others
   the number of ranks they miss it by (:func:`quantile_costs`,
   sensitivity 1); ``s`` is the bin's upper edge. A bin above every
   distance costs about ``n/4``; this is the step that needs the most users
   (:func:`bounds_failure_probability`).

The box is ``t ± scale·s`` (``scale = 4`` at ``q = 0.75``, 6 at ``q = 0.5``:
about ``±4.6σ`` and ``±4σ`` for Gaussian user means, so essentially nobody is
clipped). A failed spread release (a
candidate above the data) only makes the box looser; a failed median can
miss the data, which is why estimators warn when the median's failure
bound is large. A feature where at least a fraction ``q`` of the users share
one value (a rare binary feature, say) gets a flat box (width about
``2^-250`` or a grid step of the value): declare its bounds.

Each release is ε₀-DP and ε₀-bounded range (ε₀²/8-zCDP); the ``2·d``
releases are accounted by :func:`skuserdp.privacy.split_for_public_bounds`.
"""

import math

import numpy as np

from ..utils._random import generator_from, make_seed_sequence
from ._exponential import exponential_mechanism

__all__ = ["bounds_grid", "private_bounds", "private_quantile",
           "bounds_failure_probability", "BOUNDS_QUANTILE", "BOUNDS_SCALE"]

#: quantile of the distances to the private median used as the spread
BOUNDS_QUANTILE = 0.75
#: the box is the median ± BOUNDS_SCALE · spread
BOUNDS_SCALE = 4.0
#: with too few users for the 0.75 quantile (its failure bound above
#: SPREAD_FAILURE_MAX), the spread is the median distance (a cost gap of n/2
#: instead of n/4) and the box the median ± FALLBACK_SCALE · spread
FALLBACK_QUANTILE, FALLBACK_SCALE = 0.5, 6.0
SPREAD_FAILURE_MAX = 0.05
#: grid points per octave
_STEPS = 4
#: the grid spans 2^-_MAX_OCTAVE .. 2^_MAX_OCTAVE in magnitude
_MAX_OCTAVE = 256


def bounds_grid():
    """The public candidates: ``0`` and ``±2^(k/4)`` for ``|k/4| ≤ 256``.

    Returns
    -------
    grid : ndarray of shape (4099,)
        Sorted, symmetric about 0, independent of any data.

    Examples
    --------
    >>> from skuserdp.mechanisms import bounds_grid
    >>> g = bounds_grid()
    >>> g.shape, float(g[g.size // 2]), float(g[-1]) == 2.0 ** 256
    ((4099,), 0.0, True)
    """
    pos = np.exp2(np.arange(-_MAX_OCTAVE * _STEPS, _MAX_OCTAVE * _STEPS + 1) / _STEPS)
    return np.concatenate([-pos[::-1], [0.0], pos])


def _positive_grid():
    g = bounds_grid()
    return g[g.size // 2:]


def median_costs(sorted_values, grid):
    """Cost of every bin ``(g[k-1], g[k]]`` of the grid as the median's bin.

    ``max(#{v ≤ g[k-1]}, #{v > g[k]})``: 0 for a bin holding all values, at
    most about ``n/2`` for the median's bin, ``n`` for a bin outside the
    data. Replacing one value changes each count, hence the cost, by at
    most 1. Bins, not points: data inside one grid cell still has a unique
    best candidate.
    """
    n = sorted_values.shape[0]
    le = np.searchsorted(sorted_values, grid, side="right")
    return np.maximum(le[:-1], n - le[1:])


def quantile_costs(sorted_values, grid, quantile):
    """Cost of every bin ``(g[k-1], g[k]]`` (``g[-1] = -inf``) as the q-quantile's.

    With ``a = #{v ≤ g[k-1]}``, ``b = #{v ≤ g[k]}`` and ``r = ⌈q·n⌉``:
    ``max(r - b, a - r + 1, 0)``, 0 exactly when the ``r``-th smallest value
    lies in the bin. ``a`` and ``b`` move by at most 1 when one value is
    replaced, so the cost has sensitivity 1. The release is the bin's upper
    edge ``g[k]`` (at least ``r`` values lie at or below it).
    """
    n = sorted_values.shape[0]
    r = max(math.ceil(quantile * n), 1)
    b = np.searchsorted(sorted_values, grid, side="right")
    a = np.concatenate([[0], b[:-1]])
    return np.maximum(np.maximum(r - b, a - r + 1), 0)


def spread_rule(n_users, release_epsilon):
    """The spread quantile and box scale, chosen from public values.

    The 0.75 quantile of the distances (scale 4, about ±4.6σ for Gaussian
    users' means) when its failure bound is at most 5 %; otherwise the
    median distance (scale 6, about ±4σ), whose failure bound is that of the
    median. Rare values (a binary feature with less than half the users at
    its minority value) then get a flat box.

    Parameters
    ----------
    n_users : int
        Number of users (public).
    release_epsilon : float
        ε₀ of each release.

    Returns
    -------
    quantile, scale : float

    Examples
    --------
    >>> from skuserdp.mechanisms._private_bounds import spread_rule
    >>> spread_rule(2000, 0.05), spread_rule(2000, 0.02)
    ((0.75, 4.0), (0.5, 6.0))
    """
    if _spread_failure(n_users, release_epsilon, BOUNDS_QUANTILE) <= SPREAD_FAILURE_MAX:
        return BOUNDS_QUANTILE, BOUNDS_SCALE
    return FALLBACK_QUANTILE, FALLBACK_SCALE


def _spread_failure(n_users, release_epsilon, quantile):
    n = int(n_users)
    gap = n - math.ceil(quantile * n) - 1.0
    log_s = math.log(_positive_grid().size) - 0.5 * float(release_epsilon) * gap
    return min(1.0, math.exp(min(log_s, 0.0)))


def bounds_failure_probability(n_users, release_epsilon):
    """Public bounds on the failure of each release (per feature).

    Parameters
    ----------
    n_users : int
        Number of users (public).
    release_epsilon : float
        ε₀ of each release.

    Returns
    -------
    median, spread : float
        Upper bounds (capped at 1) on the probability that the median
        release picks a candidate outside the data (``|T|·exp(-ε₀(n/2 -
        1)/2)``), and that the spread release (at the quantile ``q`` of
        :func:`spread_rule`) picks one above every distance
        (``|T₊|·exp(-ε₀(n - ⌈qn⌉ - 1)/2)``; this loosens the box).

    Examples
    --------
    >>> from skuserdp.mechanisms import bounds_failure_probability
    >>> m, s = bounds_failure_probability(2000, 0.05)
    >>> m < 1e-6, round(s, 3)
    (True, 0.008)
    """
    n = int(n_users)
    eps0 = float(release_epsilon)
    log_m = math.log(bounds_grid().size) - 0.5 * eps0 * (n / 2.0 - 1.0)
    q = spread_rule(n, eps0)[0]
    return (min(1.0, math.exp(min(log_m, 0.0))), _spread_failure(n, eps0, q))


def private_bounds(values, release_epsilon, *, scale=None, random_state=None):
    """Private box ``median ± scale·spread`` of every column, at user level.

    Two ε₀-DP exponential-mechanism releases per column (module docstring):
    ``2·n_features`` releases in all, each ε₀-bounded range. Rows are users
    (one value per user and feature); replacing one row is the neighbouring
    relation. Nothing about the scale of the data is assumed.

    Parameters
    ----------
    values : array-like of shape (n_users, n_features)
        One row per user, finite.
    release_epsilon : float
        ε₀ of each release, ``> 0``.
    scale : float, default=None
        Public half-width of the box in units of the released spread,
        ``> 0`` and at most ``2^64``; ``None`` follows :func:`spread_rule`
        (which also picks the spread's quantile from ``n_users`` and ε₀).
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
        The box (finite; ``lower <= upper``).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import private_bounds
    >>> U = np.random.default_rng(0).normal([40.0, 70.0], [5.0, 10.0],
    ...                                     size=(2000, 2))
    >>> lo, hi = private_bounds(U, 0.1, random_state=0)
    >>> bool(np.all(lo < U.min(axis=0) + 5) and np.all(hi > U.max(axis=0) - 5))
    True
    """
    V = np.asarray(values, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] < 1:
        raise ValueError("values must be a non-empty 2-d array (users x features).")
    if not np.isfinite(V).all():
        raise ValueError("values must be finite.")
    eps0 = float(release_epsilon)
    if not (math.isfinite(eps0) and eps0 > 0):
        raise ValueError(f"release_epsilon must be a finite number > 0, got {eps0!r}.")
    quantile, rule_scale = spread_rule(V.shape[0], eps0)
    scale = rule_scale if scale is None else float(scale)
    if not 0 < scale <= 2.0 ** 64:
        raise ValueError(f"scale must be in (0, 2**64], got {scale!r}.")
    rng = generator_from(make_seed_sequence(random_state))
    grid, pos = bounds_grid(), _positive_grid()
    d = V.shape[1]
    lower, upper = np.empty(d), np.empty(d)
    for j in range(d):
        v = np.sort(V[:, j])
        k = exponential_mechanism(-median_costs(v, grid), eps0, 1.0, rng)
        t = 0.5 * grid[k] + 0.5 * grid[k + 1]
        w = np.sort(np.abs(v - t))
        s = pos[exponential_mechanism(-quantile_costs(w, pos, quantile),
                                      eps0, 1.0, rng)]
        lower[j], upper[j] = t - scale * s, t + scale * s
    return lower, upper


def private_quantile(values, quantile, release_epsilon, *, random_state=None):
    """Private ``quantile`` of non-negative values, one per user, on the grid.

    One ε₀-DP (ε₀-bounded range) exponential-mechanism release with the cost
    of :func:`quantile_costs` on ``0`` and ``2^(k/4)``, ``|k/4| ≤ 256``
    (sensitivity 1 under replace-one): the upper edge of the sampled bin,
    at least ``2^-256``. Used for the clip norm of the linear models
    (``clip_norm="auto"``: the median of the users' gradient norms).

    Parameters
    ----------
    values : array-like of shape (n_users,)
        One non-negative finite value per user.
    quantile : float
        In ``(0, 1)``.
    release_epsilon : float
        ε₀ of the release, ``> 0``.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    value : float
        The released quantile (a grid point ``> 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import private_quantile
    >>> v = np.random.default_rng(0).uniform(0, 2, size=5000)
    >>> q = private_quantile(v, 0.5, 1.0, random_state=0)
    >>> bool(0.8 < q < 1.2)
    True
    """
    v = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if v.size < 1 or not np.isfinite(v).all() or (v < 0).any():
        raise ValueError("values must be a non-empty array of finite numbers >= 0.")
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}.")
    eps0 = float(release_epsilon)
    if not (math.isfinite(eps0) and eps0 > 0):
        raise ValueError(f"release_epsilon must be a finite number > 0, got {eps0!r}.")
    rng = generator_from(make_seed_sequence(random_state))
    pos = _positive_grid()
    k = exponential_mechanism(-quantile_costs(v, pos, quantile), eps0, 1.0, rng)
    return float(max(pos[k], pos[1]))
