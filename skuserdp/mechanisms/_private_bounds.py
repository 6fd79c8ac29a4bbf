"""Private per-feature bounds at user level, with no public scale.

Not from the papers (:ref:`papers-private-bounds`),
used by every estimator's ``bounds="auto"``.
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
releases are accounted by :func:`skuserdp.privacy.split_for_public_bounds`:
``2d·ε₀`` (pure) or ``2d·ε₀²/8`` (zCDP) for the whole step.

Above 2^17 users, every release runs on one uniformly random subset of the
users, drawn independently of the data, just large enough for a 2 % rank
resolution (:func:`bounds_sample_size`). For each subset the whole step has
the loss above, so it has it on all users too (a mixture of neighbouring
releases, :func:`skuserdp.utils._random.random_subset`); each release is
then ε₀-DP, but no longer bounded range on its own, so only the whole
step's ``2d·ε₀`` or ``2d·ε₀²/8`` may be used to compose it.

The costs only need, for every grid point, how many values lie at or below
it: every value's bin is found in O(1) (:class:`_GridIndex`) and counted,
in one pass over the users for the medians and one for the spreads (no
sort). The Gumbel noise of all ``2·d`` releases is drawn first,
in the order median, spread, next column, so the output and the random
stream are those of releasing the columns one after another.
"""

import functools
import math
import warnings

import numpy as np

from ..exceptions import AccuracyWarning
from ..privacy import ZCDP, PureDP, split_for_log_ranges
from ..utils._random import (SUBSET_MIN_USERS, generator_from, make_seed_sequence,
                             random_subset)
from ..utils._validation import feature_labels
from ._exponential import _exponential_mechanism_from_noise, exponential_mechanism
from ._log_ranges import log_ranges_from_plan, plan_log_ranges

__all__ = ["bounds_grid", "private_bounds", "private_quantile",
           "bounds_failure_probability", "learn_box", "learn_box_for_fit",
           "BOUNDS_QUANTILE", "BOUNDS_SCALE"]

#: above this public bound on the probability that the box of some column
#: fails (a candidate outside the data: the estimate is then garbage, e.g.
#: 1e32), ``bounds="auto"`` warns; below it, a failure is rarer than one fit
#: in a thousand (at the former 0.05, 1-3 fits in 2000 returned garbage with
#: no warning)
BOUNDS_FAILURE_WARN = 1e-3
#: above this bound, bounds="auto" refuses to fit (ValueError)
BOUNDS_FAILURE_REFUSE = 0.5
#: candidate default shares of the budget for bounds="auto" (of ρ when the box
#: is accounted in zCDP, of ε otherwise): the smallest one whose public plan
#: has ``n_users >= SHARE_USERS_FACTOR · n_min``, else the largest
#: (:func:`default_bounds_share`)
BOUNDS_SHARES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
SHARE_USERS_FACTOR = 5

#: quantile of the distances to the private median used as the spread
BOUNDS_QUANTILE = 0.75
#: the box is the median ± BOUNDS_SCALE · spread
BOUNDS_SCALE = 4.0
#: with too few users for the 0.75 quantile (its failure bound above
#: SPREAD_FAILURE_MAX), the spread is the median distance (a cost gap of n/2
#: instead of n/4) and the box the median ± FALLBACK_SCALE · spread. A
#: failed spread release picks a candidate above every distance, up to
#: 2^256: the box, and the noise of every column, are then garbage. At 0.05
#: it was the main cause of garbage boxes (3000 users, 5 features,
#: epsilon 1: one fit in 1000 returned 1.5e32); at 1e-9 the spread fails
#: about as rarely as the median release
FALLBACK_QUANTILE, FALLBACK_SCALE = 0.5, 6.0
SPREAD_FAILURE_MAX = 1e-9
#: a box learned on a subset of the users (:func:`bounds_sample_size`)
#: misses each target rank by at most this fraction of them w.p. 1 - SUBSET_BETA
SUBSET_RANK_ERROR = 0.02
SUBSET_BETA = 1e-6
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
    return _median_costs(np.searchsorted(sorted_values, grid, side="right"), n)


def _median_costs(le, n):
    """:func:`median_costs` from ``le[k] = #{v ≤ g[k]}``."""
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
    return _quantile_costs(np.searchsorted(sorted_values, grid, side="right"), n,
                           quantile)


def _quantile_costs(b, n, quantile):
    """:func:`quantile_costs` from ``b[k] = #{v ≤ g[k]}``."""
    r = max(math.ceil(quantile * n), 1)
    a = np.concatenate([[0], b[:-1]])
    return np.maximum(np.maximum(r - b, a - r + 1), 0)


#: the sign, the exponent and the first 3 bits of the mantissa of a float64
#: (its bit pattern shifted right by 49): a bucket of 1/8 of an octave
_KEY_SHIFT = 49
#: rows per block of the counting passes (a few hundred kB per temporary)
_BLOCK_ROWS = 2048
#: blocks whose indices are counted by one ``np.bincount``
_BLOCKS_PER_COUNT = 8


class _GridIndex:
    """``np.searchsorted(grid, x, side="left")`` in O(1) per float64 ``x``.

    Finite floats are ordered like their bit patterns read as sign-magnitude
    integers, so the top bits of the pattern (``bits >> 49``: sign, exponent
    and 3 mantissa bits) put every float in a bucket of consecutive floats,
    1/8 of an octave wide. A table gives, for every bucket, the number ``S``
    of grid points below all of its floats; when at most one grid point lies
    in any bucket (checked here: true for grids with at most 4 points per
    octave away from 0, like :func:`bounds_grid`), the count of grid points
    below ``x`` is ``S + (grid[S] < x)``: exact, with no sort and no search.
    Non-finite values get the index ``grid.size + 1``.

    Parameters
    ----------
    grid : ndarray of shape (K,)
        Strictly increasing finite floats (public).
    """

    def __init__(self, grid):
        grid = np.asarray(grid, dtype=np.float64)
        half = 1 << (63 - _KEY_SHIFT)
        keys = np.arange(-half, half, dtype=np.int64)
        first = (keys << _KEY_SHIFT).view(np.float64)
        last = ((keys << _KEY_SHIFT) + ((1 << _KEY_SHIFT) - 1)).view(np.float64)
        lowest, highest = np.minimum(first, last), np.maximum(first, last)
        finite = np.isfinite(lowest) & np.isfinite(highest)
        below = np.searchsorted(grid, lowest, side="left")
        if np.any(np.searchsorted(grid, highest[finite], side="left")
                  - below[finite] > 1):
            raise ValueError("the grid has two points in one bucket of 1/8 octave.")
        below[~finite] = grid.size + 1
        self.size = grid.size
        self.table = np.empty(2 * half, dtype=np.intp)
        self.table[keys] = below  # negative keys index from the end
        self.points = np.concatenate([grid, [np.inf, np.inf]])

    def indices(self, block, out, buffers):
        """Write the grid index of every entry of ``block`` to ``out``.

        ``block``: a C-contiguous float64 array of shape (b, d); ``out``: an
        intp array of the same shape, which gets ``0..K`` for finite values
        (``K + 1`` for the others); ``buffers``: uint64, float64 and bool
        arrays of at least b rows and d columns.
        """
        b = block.shape[0]
        key, points, above = (x[:b] for x in buffers)
        # the unsigned key is the table's (negative keys index from its end)
        np.right_shift(block.view(np.uint64), _KEY_SHIFT, out=key)
        np.take(self.table, key.view(np.int64), out=out, mode="clip")
        np.take(self.points, out, out=points, mode="clip")
        np.less(points, block, out=above)
        out += above


def _grid_counts(blocks, index, n_rows, n_features):
    """``le[j, k] = #{rows i: x[i, j] ≤ grid[k]}`` for every column ``j``.

    ``blocks`` yields C-contiguous float64 blocks of rows (at most
    ``_BLOCK_ROWS`` each, ``n_rows`` in all). One bincount of the exact grid
    indices (:class:`_GridIndex`) per ``_BLOCKS_PER_COUNT`` blocks: O(1) per
    value, no sort. Returns ``le`` of shape (n_features, K) and the number
    of non-finite values of every column.
    """
    width = index.size + 2
    total = np.zeros(n_features * width, dtype=np.intp)
    offsets = np.arange(n_features, dtype=np.intp) * width
    rows = min(n_rows, _BLOCK_ROWS)
    idx = np.empty((min(n_rows, _BLOCK_ROWS * _BLOCKS_PER_COUNT), n_features),
                   dtype=np.intp)
    buffers = (np.empty((rows, n_features), dtype=np.uint64),
               np.empty((rows, n_features), dtype=np.float64),
               np.empty((rows, n_features), dtype=bool))
    fill = 0
    for block in blocks:
        b = block.shape[0]
        out = idx[fill:fill + b]
        index.indices(block, out, buffers)
        out += offsets
        fill += b
        if fill + _BLOCK_ROWS > idx.shape[0]:
            total += np.bincount(idx[:fill].ravel(), minlength=total.size)
            fill = 0
    if fill:
        total += np.bincount(idx[:fill].ravel(), minlength=total.size)
    counts = total.reshape(n_features, width)
    # x <= grid[k] iff fewer than k + 1 grid points lie below x
    return np.cumsum(counts[:, :index.size], axis=1), counts[:, -1]


def _row_blocks(V, rows=None):
    """Blocks of the rows of ``V`` (of ``V[rows]``, gathered into a buffer)."""
    if rows is None:
        for start in range(0, V.shape[0], _BLOCK_ROWS):
            yield V[start:start + _BLOCK_ROWS]
        return
    buffer = np.empty((min(rows.size, _BLOCK_ROWS), V.shape[1]))
    for start in range(0, rows.size, _BLOCK_ROWS):
        index = rows[start:start + _BLOCK_ROWS]
        yield np.take(V, index, axis=0, out=buffer[:index.size])


def _check_finite(V):
    """Refuse non-finite values, block by block (no table-sized temporary)."""
    buffer = np.empty((min(V.shape[0], _BLOCK_ROWS), V.shape[1]), dtype=bool)
    for block in _row_blocks(V):
        if not np.isfinite(block, out=buffer[:block.shape[0]]).all():
            raise ValueError("values must be finite.")


def _distance_blocks(V, t, rows=None):
    buffer = np.empty((min(V.shape[0] if rows is None else rows.size, _BLOCK_ROWS),
                       V.shape[1]))
    for block in _row_blocks(V, rows):
        out = buffer[:block.shape[0]]
        with np.errstate(over="ignore"):
            np.subtract(block, t, out=out)
        np.abs(out, out=out)
        yield out


@functools.lru_cache(maxsize=None)
def _grid_indices():
    return _GridIndex(bounds_grid()), _GridIndex(_positive_grid())


def bounds_sample_size(n_users, release_epsilon):
    """How many users the box is learned from (public values only).

    All of them up to :data:`~skuserdp.utils._random.SUBSET_MIN_USERS`
    (2^17); above, a uniformly random subset (drawn independently of the
    data, :func:`~skuserdp.utils._random.random_subset`) just large enough
    that each release misses its target rank by at most
    ``SUBSET_RANK_ERROR`` (2 %) of the users w.p. ``1 - SUBSET_BETA``
    (1e-6): an exponential-mechanism release on a grid of ``K`` candidates
    lands within ``2 ln(K/β)/ε₀`` ranks of the best one. The sampling error
    of a quantile of 2^17 users (about 0.14 % of the ranks) is far smaller.
    The privacy loss is the same as on all users (no amplification is
    claimed); the box costs two passes over the subset instead of over the
    whole table. Not from the papers: :ref:`papers-random-subset`.

    Parameters
    ----------
    n_users : int
        Number of users (public).
    release_epsilon : float
        ε₀ of each release.

    Returns
    -------
    m : int
        ``n_users`` or fewer.

    Examples
    --------
    >>> from skuserdp.mechanisms._private_bounds import bounds_sample_size
    >>> bounds_sample_size(50_000, 0.01), bounds_sample_size(10 ** 6, 0.05)
    (50000, 131072)
    >>> bounds_sample_size(10 ** 6, 0.01)
    221341
    """
    n = int(n_users)
    eps0 = float(release_epsilon)
    if not eps0 > 0:  # (and NaN) no subset; the callers refuse or warn
        return n
    users = 2.0 * math.log(bounds_grid().size / SUBSET_BETA) / eps0 / SUBSET_RANK_ERROR
    if not users < n:  # (and inf, for a tiny eps0)
        return n
    return min(n, max(SUBSET_MIN_USERS, math.ceil(users)))


def spread_rule(n_users, release_epsilon):
    """The spread quantile and box scale, chosen from public values.

    The 0.75 quantile of the distances (scale 4, about ±4.6σ for Gaussian
    users' means) when its failure bound is at most ``SPREAD_FAILURE_MAX``
    (1e-9); otherwise the median distance (scale 6, about ±4σ), whose
    failure bound is that of the median. Rare values (a binary feature with
    less than half the users at its minority value) then get a flat box.

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
    >>> spread_rule(10000, 0.05), spread_rule(2000, 0.05)
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
    >>> m < 1e-6, s < 1e-6
    (True, True)
    """
    eps0 = float(release_epsilon)
    n = bounds_sample_size(n_users, eps0)
    log_m = math.log(bounds_grid().size) - 0.5 * eps0 * (n / 2.0 - 1.0)
    q = spread_rule(n, eps0)[0]
    return (min(1.0, math.exp(min(log_m, 0.0))), _spread_failure(n, eps0, q))


def private_bounds(values, release_epsilon, *, scale=None, random_state=None):
    """Private box ``median ± scale·spread`` of every column, at user level.

    Two ε₀-DP exponential-mechanism releases per column (module docstring):
    ``2·n_features`` releases in all, each ε₀-bounded range, so the whole
    step is ``2·n_features·ε₀``-DP and ``2·n_features·ε₀²/8``-zCDP. Rows are
    users (one value per user and feature); replacing one row is the
    neighbouring relation. Nothing about the scale of the data is assumed.
    Above 2^17 users the releases run on a uniformly random subset of
    :func:`bounds_sample_size` users, with the same guarantee for the whole
    step (but not bounded range release by release) and two passes over the
    subset only.

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
    V = np.ascontiguousarray(values, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] < 1:
        raise ValueError("values must be a non-empty 2-d array (users x features).")
    eps0 = float(release_epsilon)
    if not (math.isfinite(eps0) and eps0 > 0):
        raise ValueError(f"release_epsilon must be a finite number > 0, got {eps0!r}.")
    n_all, d = V.shape
    n = bounds_sample_size(n_all, eps0)
    quantile, rule_scale = spread_rule(n, eps0)
    scale = rule_scale if scale is None else float(scale)
    if not 0 < scale <= 2.0 ** 64:
        raise ValueError(f"scale must be in (0, 2**64], got {scale!r}.")
    grid_index, pos_index = _grid_indices()
    rng = generator_from(make_seed_sequence(random_state))
    # Per column, a median release then a spread release: draw their Gumbel
    # noise (sizes fixed by the grids, never by the data) up front in that
    # order, so that every column's counts come from one pass over V and the
    # random stream is that of releasing them one after another.
    noise = [(rng.gumbel(size=grid_index.size - 1), rng.gumbel(size=pos_index.size))
             for _ in range(d)]
    rows = None
    if n < n_all:  # a random subset of the users: the same stream, after the noise
        rows = random_subset(n_all, n, rng)
        _check_finite(V)
    le, non_finite = _grid_counts(_row_blocks(V, rows), grid_index, n, d)
    if non_finite.any():
        raise ValueError("values must be finite.")
    grid, pos = bounds_grid(), _positive_grid()
    t = np.empty(d)
    for j in range(d):
        k = _exponential_mechanism_from_noise(-_median_costs(le[j], n), eps0, 1.0,
                                              noise[j][0])
        t[j] = 0.5 * grid[k] + 0.5 * grid[k + 1]
    # b[j, k] = #{users: |v - t_j| <= pos[k]} (an overflowing |v - t| is inf,
    # above every grid point, as in a sort)
    b, _ = _grid_counts(_distance_blocks(V, t, rows), pos_index, n, d)
    lower, upper = np.empty(d), np.empty(d)
    for j in range(d):
        s = pos[_exponential_mechanism_from_noise(
            -_quantile_costs(b[j], n, quantile), eps0, 1.0, noise[j][1])]
        lower[j], upper[j] = t[j] - scale * s, t[j] + scale * s
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


def _budget_text(budget):
    return (f"rho {budget.rho:.3g}" if isinstance(budget, ZCDP)
            else f"epsilon {budget.epsilon:.3g}")


def learn_box(name, U, budget, random_state, stacklevel=5, feature_names=None,
              total_epsilon=None, margin=0):
    """``bounds="auto"``: the private box of the columns of ``U``, one row per user.

    With the refusals and warnings a user needs.

    One joint log2-histogram release of all columns at ``budget``
    (:func:`~skuserdp.mechanisms.plan_log_ranges`,
    :func:`~skuserdp.mechanisms.log_ranges_from_plan`: top-bin edges, spec
    §3.5). Replacing one user (one row of ``U``) changes the loss as the
    plan says (user level, number of users public). The public plan gives
    ``n_min``, the fewest users with which the release could keep any cell:
    below it a ``ValueError`` (no range can be found: the estimate would be
    garbage). A column in which no cell is kept (the users spread too thin
    over its cells) is refused the same way, after the release. A flat
    learned box (a value shared by most users, e.g. a rare binary feature)
    warns.

    Parameters
    ----------
    name : str
        The estimator's name, for the messages.
    U : ndarray of shape (n_users, n_columns)
        One row per user (e.g. the users' means). Not modified.
    budget : ZCDP or PureDP or float
        What the release may spend (a float is ``PureDP(budget)``).
    random_state : int, RandomState, SeedSequence or None
        Source of randomness of the release.
    stacklevel : int, default=5
        Of the warnings, counted from this function's frame.
    feature_names : sequence of str, default=None
        One name per column of ``U``, for the messages.
    total_epsilon : float, default=None
        The whole fit's ε, for the messages.
    margin : int, default=0
        Extra octaves on both sides (:func:`plan_log_ranges`).

    Returns
    -------
    lower, upper : ndarray of shape (n_columns,)
        The released box.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import learn_box
    >>> from skuserdp.privacy import ZCDP
    >>> U = np.random.default_rng(0).normal(5.0, 1.0, size=(2000, 1))
    >>> lower, upper = learn_box("demo", U, ZCDP(0.01), random_state=0)
    >>> lower.tolist(), upper.tolist()
    ([0.0], [8.0])
    """
    return _learn_box(name, U, budget, random_state, stacklevel + 1, feature_names,
                      total_epsilon, margin)[:2]


def _learn_box(name, U, budget, random_state, stacklevel, feature_names,
               total_epsilon, margin):
    """:func:`learn_box`, also returning the loss of the release."""
    if not isinstance(budget, (ZCDP, PureDP)):
        budget = PureDP(float(budget))
    n, d = U.shape
    plan = plan_log_ranges(n, d, budget=budget, margin=margin)
    eps_text = "" if total_epsilon is None else f"epsilon {float(total_epsilon):.3g}, "
    advice = (
        "Declare bounds=(lower, upper) (and target_bounds for a regressor) in "
        "the units of the data -- public knowledge such as a codebook range -- "
        "or use more users, fewer columns or a larger epsilon (or a larger "
        "bounds_share).")
    if not plan.feasible:
        raise ValueError(
            f"{name}: bounds='auto' cannot learn the box of {d} column(s) from "
            f"{n} users at this budget ({eps_text}{_budget_text(budget)} for the "
            f"box): the noisy log2 histogram needs at least n_min = {plan.n_min} "
            f"users (threshold {plan.threshold}, noise std "
            f"{plan.count_std:.3g} per cell) even if every user of a column "
            f"shared one cell, and several times that when they spread over "
            f"several. {advice}")
    res = log_ranges_from_plan(U, plan, random_state=random_state)
    if res.missing.any():
        raise ValueError(
            f"{name}: bounds='auto' found no range for column(s) "
            f"{feature_labels(np.flatnonzero(res.missing), feature_names)} "
            f"from {n} users and {d} column(s) ({eps_text}"
            f"{_budget_text(budget)} for the box): no cell of their log2 "
            f"histogram reached the threshold {plan.threshold} (n_min = "
            f"{plan.n_min} users if all shared one cell; their users spread "
            f"over several). {advice}")
    lower, upper = res.lower, res.upper
    width = 0.5 * upper - 0.5 * lower
    flat = np.flatnonzero(width <= 2.0 ** -240
                          + 1e-12 * np.maximum(np.abs(lower), np.abs(upper)))
    if flat.size:
        warnings.warn(
            f"{name}: bounds='auto' learned a flat box for column(s) "
            f"{feature_labels(flat, feature_names)}: most users share one value "
            "there (e.g. a rare binary feature), and the others are clipped to "
            "it. Declare their bounds (for a 0/1 feature: (0, 1)).", AccuracyWarning,
            stacklevel=stacklevel)
    return lower, upper, res.loss


def default_bounds_share(n_users, n_features, *, epsilon, delta, zcdp,
                         approx=False):
    """Default share of the budget for ``bounds="auto"``, from public values.

    The smallest of ``BOUNDS_SHARES`` (0.05 … 0.5) at which the public plan
    of the joint log-histogram release (:func:`plan_log_ranges`, budget from
    :func:`~skuserdp.privacy.split_for_log_ranges`) has at least
    ``SHARE_USERS_FACTOR · n_min`` users (5×: a column's users spread over
    several cells; measured in ``benchmarks/bench_ranges.py``), else the
    largest. Many users get a small share, a few hundred the largest.

    Parameters
    ----------
    n_users, n_features : int
        Public sizes of the table of user means.
    epsilon, delta : float
        The whole fit's budget.
    zcdp, approx : bool
        As for :func:`learn_box_for_fit`.

    Returns
    -------
    share : float

    Examples
    --------
    >>> from skuserdp.mechanisms._private_bounds import default_bounds_share
    >>> default_bounds_share(1000, 10, epsilon=1.0, delta=1e-6, zcdp=True)
    0.5
    >>> default_bounds_share(100_000, 10, epsilon=1.0, delta=1e-6, zcdp=True)
    0.05
    """
    for share in BOUNDS_SHARES:
        budget = split_for_log_ranges(epsilon, delta, share, zcdp=zcdp,
                                      approx=approx)[0]
        if n_users >= SHARE_USERS_FACTOR * plan_log_ranges(
                n_users, n_features, budget=budget).n_min:
            return share
    return BOUNDS_SHARES[-1]


def learn_box_for_fit(name, U, *, epsilon, delta, share, zcdp, random_state,
                      approx=False, feature_names=None, stacklevel=5, margin=0):
    """``bounds="auto"`` of one fit: a share of its budget and the learned box.

    And what is left for the estimator's own release.

    The share of ``(epsilon, delta)`` and its accounting come from
    :func:`skuserdp.privacy.split_for_log_ranges` (one joint release of
    :func:`learn_box`: ``ZCDP`` when the estimator accounts in zCDP or asks
    for ``approx`` with δ > 0, else ``PureDP``); the box's seed and the rest
    of the fit's are two independent children of ``random_state``. The loss
    is that of the noise actually used (never above the share).

    Parameters
    ----------
    name : str
        The estimator's name, for the messages.
    U : ndarray of shape (n_users, n_columns)
        One row per user (the columns whose box is learned).
    epsilon, delta : float
        The whole fit's budget.
    share : float or None
        Share of the budget for the box; ``None``:
        :func:`default_bounds_share` (from public values only).
    zcdp : bool
        Whether the estimator's own release is accounted in zCDP.
    random_state : int, RandomState, SeedSequence or None
        The fit's seed.
    approx : bool, default=False
        Whether the box is accounted in zCDP at a share of δ when the release
        is (ε, δ)-DP (see :func:`~skuserdp.privacy.split_for_log_ranges`).
    feature_names : sequence of str, default=None
        One name per column of ``U``, for the messages.
    stacklevel : int, default=5
        Of the warnings, counted from the caller's frame.
    margin : int, default=0
        Extra octaves on both sides (:func:`plan_log_ranges`; the linear
        models clip rows, not user means, to the box and ask for 1).

    Returns
    -------
    lower, upper : ndarray of shape (n_columns,)
        The released box.
    loss : PureDP or ZCDP
        The loss of the box step.
    rest_epsilon, rest_delta : float
        The budget the estimator plans its release with.
    rest_seed : SeedSequence
        The seed of the rest of the fit.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import learn_box_for_fit
    >>> U = np.random.default_rng(0).normal(5.0, 1.0, size=(2000, 2))
    >>> lower, upper, loss, eps, delta, _ = learn_box_for_fit(
    ...     "demo", U, epsilon=1.0, delta=0.0, share=None, zcdp=False,
    ...     random_state=0)
    >>> loss.epsilon <= 0.2, round(eps, 6)
    (True, 0.8)
    """
    if share is None:
        share = default_bounds_share(U.shape[0], U.shape[1], epsilon=epsilon,
                                     delta=delta, zcdp=zcdp, approx=approx)
    budget, rest_epsilon, rest_delta = split_for_log_ranges(
        epsilon, delta, share, zcdp=zcdp, approx=approx)
    seed_box, rest_seed = make_seed_sequence(random_state).spawn(2)
    lower, upper, loss = _learn_box(name, U, budget, seed_box, stacklevel + 1,
                                    feature_names, epsilon, margin)
    return lower, upper, loss, rest_epsilon, rest_delta, rest_seed
