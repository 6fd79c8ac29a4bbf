"""Joint log2-histogram range finder with top-bin edges, at user level.

Not from the papers: Google differential-privacy's ApproxBounds rule (the
range is the outer edge of the outermost log-scale bin whose noisy count
reaches a threshold) applied to *one joint* release of all columns'
histograms with Gaussian noise (spec ``real_data_means.md`` §3.5), used by
every estimator's ``bounds="auto"`` (:func:`learn_box_for_fit`).

Unit of privacy: the user (replace-one: one user's whole data changes, the
number of users ``n`` is public). Every user is binned on its *user mean*
(one row of ``U`` per user, never the raw rows), and falls in exactly one
cell of every column's histogram, so replacing a user moves one unit
between two cells per column: ℓ2 sensitivity ``√(2d)`` and ℓ1 sensitivity
``2d`` over the ``d`` columns
(:func:`~skuserdp.privacy.replace_one_histogram_sensitivity`). The counts
are integers, so exact integer noise is added to every cell of the public
grid (no cell is skipped; the data never chooses the grid):

* ``ZCDP(ρ)`` budget: discrete Gaussian noise with ``σ² = 2d/(2ρ)`` rounded
  up (ρ-zCDP, Canonne, Kamath & Steinke 2020);
* ``PureDP(ε)`` budget: discrete Laplace noise of scale ``2d/ε`` rounded up
  (ε-DP).

A cell is *kept* when its noisy count reaches the public threshold
:func:`~skuserdp.privacy.histogram_pass_threshold` (probability ``β`` that
some empty cell anywhere is kept; ``BETA = 1e-3`` by default: a kept empty
cell far from the data makes that column's box, and the later noise, absurd,
so this is a garbage-fit rate of at most one in a thousand, as the previous
route's warning level). Everything after the noisy counts is
post-processing.

**Grid** (per column, ordered from the most negative to the most positive
value). Cells are magnitude bins ``(h·2^(o-1), h·2^o]`` of ``|x − c|`` on
each side of an origin ``c``, and one zero cell ``{x = c}``:

* no window (``bounds="auto"``): ``c = 0``, ``h = 1``, ``o = -255 … 256``,
  i.e. magnitudes from ``2^-256`` to ``2^256`` (the same span as the former
  grid: squared radii stay finite downstream); nonzero magnitudes below
  ``2^-256`` are clamped into the innermost bin (whose inner edge is then
  the origin) and magnitudes above ``2^256`` into the outermost one (the
  range then ends at ``±2^256`` and such users are clipped there: declare
  bounds for data that large). 1,025 cells per column;
* ``window=(lo, hi)`` (a declared box to refine): ``c`` the box's midpoint,
  ``h`` its half-width, ``o = -59 … 0`` (magnitudes ``h·2^-60`` to ``h``,
  the innermost bin clamped down to the origin), plus one *overflow* cell
  per side for users outside the declared box (``x < lo`` or ``x > hi``):
  their noisy counts (``outside_lower``, ``outside_upper``) estimate how
  many users the declared box cuts. 123 cells per column.

**Edges** (ApproxBounds' top-bin rule, plus three measured changes; all
post-processing of the noisy counts). On each side of the origin the edge
is the outer edge ``c ± h·2^o`` of the outermost *kept* magnitude, where

* a magnitude is kept on a side when its cell there is kept, or on *both*
  sides when neither of its two cells is kept but their summed noisy counts
  reach ``merged_threshold`` (a column spread across the origin, e.g. user
  means N(0.1, 0.5²), has too few users in every signed cell; half of β is
  spent on each family of tests);
* **extension**: the box reaches one cell further out (and, for the inner
  edge below, one cell further in) when that neighbour's noisy count
  reaches the lenient ``extend_threshold`` (probability ``EXTEND_BETA =
  0.2`` of a false extension somewhere, which at most doubles one side):
  the top-bin rule alone leaves up to about ``threshold`` users in the cell
  beyond it (hundreds at n = 1,000, d = 10), a clipping bias that swamps
  the noise;
* **spread**: a column in which nothing above is kept (users spread over
  too many cells, e.g. a target N(0, 0.8²) from 800 users) gets the
  symmetric box ``±`` the outer edge of the ``SPREAD_OCTAVES = 6``
  consecutive magnitudes whose summed noisy counts (both sides and the zero
  cell) are the largest, when that sum reaches ``spread_threshold``
  (``SPREAD_BETA = 1e-3``); without it the column refused;
* a side with no kept magnitude **mirrors** the other side's edge when its
  noisy counts over the other side's top ``MIRROR_OCTAVES = 8`` magnitudes
  sum to ``mirror_threshold`` (``MIRROR_BETA = 0.02``: a false
  mirror at most doubles the width, a missed one clips that whole side);
  otherwise it ends at the inner edge of the other side's innermost kept
  cell (ApproxBounds' rule: all data on one side), or at the origin when the
  zero cell or the innermost magnitude is kept, or when the other side's
  kept cells span at least ``ORIGIN_OCTAVES = 3`` octaves (skewed data:
  the inner edge clipped the low tail of lognormal columns, at most 1/7
  more width). Narrow one-signed data (e.g. 2020 ± 1) keeps the inner
  edge, so its box does not contain 0.

``margin`` (default 0) adds octaves on both sides for boxes that clip rows
rather than user means (the linear models ask for 1). Without a window the
edges stay within ``±2^256``. With a window the box is intersected with
the declared one, a kept overflow cell keeps the declared edge, and a
column with no kept cell keeps the declared box; without a window such a
column is reported in ``missing`` (the caller refuses).

The public plan (:func:`plan_log_ranges`) gives ``n_min``, the users needed
for even a single cell holding every user to be kept with probability
97.7 % (threshold plus two noise standard deviations): below it the release
cannot find any range. Real columns spread over several cells: the
benchmark ``benchmarks/bench_ranges.py`` measures what is needed.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..privacy import (
    ZCDP,
    PureDP,
    histogram_pass_threshold,
    replace_one_histogram_sensitivity,
)
from ..utils._random import make_seed_sequence
from ._additive import (add_noise, calibrate_discrete_gaussian_rho,
                        calibrate_discrete_laplace)

__all__ = ["LogRangesPlan", "LogRanges", "plan_log_ranges", "log_ranges_from_plan"]

#: probability that some empty cell of the release is kept (see module docstring)
BETA = 1e-3
#: outer exponents of the magnitude bins without a window: 2^-256 .. 2^256
_FREE_EXPONENTS = (-255, 256)
#: outer exponents of the magnitude bins inside a window: h·2^-60 .. h
_WINDOW_EXPONENTS = (-59, 0)
#: probability that some empty cell next to a kept one extends the box (four
#: tests per column: a false extension at most doubles one side's reach)
EXTEND_BETA = 0.2
#: a side with no kept cell ends at the origin (not at the other side's inner
#: edge) when the other side's kept cells span at least this many octaves
ORIGIN_OCTAVES = 3
#: magnitudes summed by the mirror test of a side with no kept cell
MIRROR_OCTAVES = 8
#: probability that some empty side is mirrored: a false mirror at most
#: doubles one column's width (a missed one clips that whole side), so the
#: test is lenient
MIRROR_BETA = 0.02
#: octaves summed (both sides and the zero cell) by the spread test of a
#: column in which nothing else is kept
SPREAD_OCTAVES = 6
#: probability that some column with nothing kept gets a false spread box
SPREAD_BETA = 1e-3
#: noise standard deviations above the threshold for ``n_min``
_N_MIN_Z = 2.0


@dataclass(frozen=True)
class LogRangesPlan:
    """Public plan of a joint log2-histogram range release.

    Parameters
    ----------
    n_users, n_features : int
        Public sizes.
    window : tuple of two ndarrays of shape (n_features,) or None
        The declared box refined, or None (origin 0, the whole grid).
    exponents : ndarray of int
        Outer exponents ``o`` of the magnitude bins ``(h·2^(o-1), h·2^o]``
        on each side (increasing).
    cells_per_feature : int
        ``2·len(exponents) + 1`` (zero cell), ``+ 2`` overflow cells with a
        window.
    n_cells : int
        ``n_features · cells_per_feature``: every one is noised.
    sensitivity : float
        ``√(2d)`` (ℓ2, Gaussian) or ``2d`` (ℓ1, Laplace), replace-one.
    noise : DiscreteGaussianNoise or DiscreteLaplaceNoise
        Noise of every cell.
    count_std : float
        Standard deviation (bound) of the noise of one cell.
    threshold : int
        A cell is kept iff its noisy count is ``>= threshold``.
    merged_threshold : int
        A magnitude whose two cells (either side of the origin) are not kept
        is kept on both sides iff their summed noisy counts reach this.
    mirror_threshold, mirror_octaves : int
        A side with no kept magnitude mirrors the other side's edge iff its
        noisy counts over the other side's top ``mirror_octaves``
        magnitudes sum to at least ``mirror_threshold``.
    extend_threshold : int
        The box reaches one more cell beyond the outermost (and inside the
        innermost) kept cell when that cell's noisy count reaches this.
    spread_threshold, spread_octaves : int
        A column in which no cell is kept (its users spread over too many
        cells, e.g. N(0, 0.8²) from 800 users) gets the symmetric box
        ``±`` the outer edge of the run of ``spread_octaves`` consecutive
        magnitudes whose noisy counts, both sides and the zero cell
        together, are the largest, if that reaches ``spread_threshold``.
    margin : int
        Extra octaves on both sides.
    beta : float
        Probability that some empty cell is kept.
    n_min : int
        ``⌈threshold + 2·count_std⌉``: fewer users cannot fill a kept cell.
    loss : ZCDP or PureDP
        The loss of the release (from the noise actually used), within the
        budget.

    Examples
    --------
    >>> from skuserdp.mechanisms import plan_log_ranges
    >>> from skuserdp.privacy import PureDP
    >>> plan = plan_log_ranges(300, 2, budget=PureDP(0.5))
    >>> plan.cells_per_feature, plan.sensitivity, plan.loss.epsilon <= 0.5
    (1025, 4.0, True)
    """

    n_users: int
    n_features: int
    window: object
    exponents: np.ndarray
    cells_per_feature: int
    n_cells: int
    sensitivity: float
    noise: object
    count_std: float
    threshold: int
    merged_threshold: int
    mirror_threshold: int
    mirror_octaves: int
    extend_threshold: int
    spread_threshold: int
    spread_octaves: int
    margin: int
    beta: float
    n_min: int
    loss: object

    @property
    def feasible(self):
        """Whether ``n_users >= n_min`` (else no range can be found)."""
        return self.n_users >= self.n_min


@dataclass(frozen=True)
class LogRanges:
    """Result of :func:`log_ranges_from_plan`.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_features,)
        The released range of every column (NaN where ``missing``).
    missing : ndarray of bool, shape (n_features,)
        Columns without any kept cell (no window: no range found; with a
        window they keep the declared box and are not missing).
    outside_lower, outside_upper : ndarray of shape (n_features,) or None
        With a window: the noisy counts of users below ``lo`` / above ``hi``
        (users the declared box cuts), each with standard deviation
        ``count_std``; None without a window.
    counts : ndarray of shape (n_features, cells_per_feature)
        All noisy counts (int64), cells ordered from the most negative value
        to the most positive.
    count_std : float
        Standard deviation (bound) of one noisy count.
    loss : ZCDP or PureDP
        Privacy loss of the release.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import plan_log_ranges, log_ranges_from_plan
    >>> from skuserdp.privacy import ZCDP
    >>> U = np.random.default_rng(0).normal(0.0, 1.0, size=(2000, 1))
    >>> plan = plan_log_ranges(2000, 1, budget=ZCDP(0.05), window=(-1.0, 10.0))
    >>> res = log_ranges_from_plan(U, plan, random_state=0)
    >>> res.upper.tolist(), bool(abs(res.outside_lower[0] - (U < -1).sum()) < 40)
    ([3.125], True)
    """

    lower: np.ndarray
    upper: np.ndarray
    missing: np.ndarray
    outside_lower: object
    outside_upper: object
    counts: np.ndarray
    count_std: float
    loss: object


def _check_window(window, d):
    lo, hi = (np.broadcast_to(np.asarray(w, dtype=np.float64), (d,)).copy()
              for w in window)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo < hi).all()):
        raise ValueError("window must be finite with lower < upper in every column.")
    return lo, hi


def plan_log_ranges(n_users, n_features, *, budget, window=None, beta=BETA,
                    margin=0):
    """Public plan of the joint log2-histogram range release.

    Parameters
    ----------
    n_users : int
        Number of users (public; replace-one neighbours), ``>= 1``.
    n_features : int
        Number of columns ``d``, ``>= 1``.
    budget : ZCDP or PureDP
        What the release may spend: discrete Gaussian noise for ``ZCDP``,
        discrete Laplace for ``PureDP`` (module docstring).
    window : tuple (lower, upper) or None, default=None
        A declared box (scalars or arrays of shape (n_features,)) to refine;
        None covers ``±2^256`` around 0.
    beta : float, default=1e-3
        Probability that some empty cell is kept, in ``(0, 1)``.
    margin : int, default=0
        Extra octaves added on both sides (outer edges times ``2^margin``
        from the origin, inner edges divided by it), ``>= 0``: for a box
        applied to rows rather than to user means (the linear models).

    Returns
    -------
    plan : LogRangesPlan
        Its grid, noise, thresholds, ``n_min`` and loss (public values only).

    Examples
    --------
    >>> from skuserdp.mechanisms import plan_log_ranges
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_log_ranges(1000, 10, budget=ZCDP(0.0073))
    >>> plan.n_cells, plan.threshold, plan.n_min, plan.loss.rho <= 0.0073
    (10250, 198, 273, True)
    """
    n = int(n_users)
    d = int(n_features)
    margin = int(margin)
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}.")
    if n < 1 or d < 1:
        raise ValueError(f"n_users and n_features must be >= 1, got {n}, {d}.")
    if window is None:
        lo_o, hi_o = _FREE_EXPONENTS
        extra = 0
    else:
        window = _check_window(window, d)
        lo_o, hi_o = _WINDOW_EXPONENTS
        extra = 2
    exponents = np.arange(lo_o, hi_o + 1)
    per = 2 * exponents.size + 1 + extra
    n_cells = d * per
    if isinstance(budget, ZCDP):
        sensitivity = replace_one_histogram_sensitivity(d, "l2")
        noise = calibrate_discrete_gaussian_rho(sensitivity, budget.rho)
        kind = "gaussian"
    elif isinstance(budget, PureDP):
        sensitivity = replace_one_histogram_sensitivity(d, "l1")
        noise = calibrate_discrete_laplace(sensitivity, budget.epsilon)
        kind = "laplace"
    else:
        raise TypeError(f"budget must be ZCDP or PureDP, got {budget!r}.")
    scale = math.sqrt(noise.sigma2) if kind == "gaussian" else float(noise.scale)
    # half of beta each for the signed cells and the merged magnitudes; the
    # mirror tests (two per column) at their own MIRROR_BETA
    threshold = histogram_pass_threshold(scale, n_cells, beta / 2, kind=kind)
    extend = histogram_pass_threshold(scale, 4 * d, EXTEND_BETA, kind=kind)
    merged = histogram_pass_threshold(scale, d * exponents.size, beta / 2, kind=kind,
                                      n_summed=2)
    mirror = histogram_pass_threshold(scale, 2 * d, MIRROR_BETA, kind=kind,
                                      n_summed=MIRROR_OCTAVES)
    spread = histogram_pass_threshold(scale, d * exponents.size, SPREAD_BETA,
                                      kind=kind, n_summed=2 * SPREAD_OCTAVES + 1)
    std = noise.std
    return LogRangesPlan(
        n_users=n, n_features=d, window=window, exponents=exponents,
        cells_per_feature=per, n_cells=n_cells, sensitivity=sensitivity,
        noise=noise, count_std=std, threshold=threshold, merged_threshold=merged,
        mirror_threshold=mirror, mirror_octaves=MIRROR_OCTAVES,
        extend_threshold=extend, spread_threshold=spread,
        spread_octaves=SPREAD_OCTAVES, margin=margin,
        beta=float(beta),
        n_min=math.ceil(threshold + _N_MIN_Z * std), loss=noise.privacy(sensitivity))


def _outer_exponents(r, lo_o, hi_o):
    """``o`` with ``r ∈ (2^(o-1), 2^o]`` for ``r > 0``, clamped to ``[lo_o, hi_o]``."""
    m, e = np.frexp(r)
    o = e.astype(np.int64) - (m == 0.5)
    return np.clip(o, lo_o, hi_o)


def _cell_indices(U, plan, lo, hi):
    """Cell of every (user, column), ordered from most negative to most positive."""
    e_lo, e_hi = int(plan.exponents[0]), int(plan.exponents[-1])
    k = plan.exponents.size
    if lo is None:
        c = np.zeros(U.shape[1])
        r = np.abs(U)
    else:
        c = 0.5 * lo + 0.5 * hi
        h = 0.5 * hi - 0.5 * lo
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.abs(U - c) / h
    side = np.sign(U - c) if lo is None else np.where(U > c, 1, np.where(U < c, -1, 0))
    o = _outer_exponents(np.where(r > 0, r, 1.0), e_lo, e_hi) - e_lo  # 0 .. k-1
    off = 0 if lo is None else 1
    zero = off + k
    idx = np.where(side > 0, zero + 1 + o, np.where(side < 0, zero - 1 - o, zero))
    if lo is not None:
        idx = np.where(U > hi, plan.cells_per_feature - 1, np.where(U < lo, 0, idx))
    return idx.astype(np.intp)


#: rows per block of the counting pass (a few hundred kB per temporary)
_BLOCK_ROWS = 4096
_MANTISSA = np.uint64((1 << 52) - 1)
_MAGNITUDE = np.uint64((1 << 63) - 1)


def _free_cell_indices(block, plan):
    """:func:`_cell_indices` without a window, from the float64 bit patterns:
    the biased exponent ``e`` and whether the mantissa is nonzero give the
    outer exponent ``o = e - 1023 + (mantissa != 0)`` of ``(2^(o-1), 2^o]``
    (subnormals fall below the grid and are clamped into its first bin)."""
    e_lo, e_hi = int(plan.exponents[0]), int(plan.exponents[-1])
    k = plan.exponents.size
    mag = np.ascontiguousarray(block).view(np.uint64) & _MAGNITUDE
    o = (mag >> np.uint64(52)).astype(np.intp)
    o += (mag & _MANTISSA) != 0
    o -= 1023 + e_lo
    np.clip(o, 0, e_hi - e_lo, out=o)
    idx = np.where(np.signbit(block), k - 1 - o, k + 1 + o)
    idx[mag == 0] = k
    return idx


def _exact_counts(V, plan, lo, hi):
    """Exact cell counts (int64, all columns flattened), block by block; also
    refuses non-finite values."""
    n, d = V.shape
    per = plan.cells_per_feature
    offsets = np.arange(d, dtype=np.intp) * per
    total = np.zeros(d * per, dtype=np.int64)
    for start in range(0, n, _BLOCK_ROWS):
        block = V[start:start + _BLOCK_ROWS]
        if not np.isfinite(block).all():
            raise ValueError("values must be finite.")
        idx = (_free_cell_indices(block, plan) if lo is None
               else _cell_indices(block, plan, lo, hi))
        idx += offsets
        total += np.bincount(idx.ravel(), minlength=d * per)
    return total


def _last(mask):
    """Index of the last True of every row (0 where none)."""
    return mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)


def _extended(kept, counts, plan):
    """Outermost and innermost kept index per row, each moved one cell out
    (in) when that neighbour reaches ``plan.extend_threshold``."""
    k = kept.shape[1]
    rows = np.arange(kept.shape[0])
    top = _last(kept)
    up = np.minimum(top + 1, k - 1)
    top = np.where((top + 1 < k) & (counts[rows, up] >= plan.extend_threshold), up, top)
    first = np.argmax(kept, axis=1)
    down = np.maximum(first - 1, 0)
    first = np.where((first > 0) & (counts[rows, down] >= plan.extend_threshold),
                     down, first)
    return top, first


def _side(kept, counts, other_kept, other_counts, plan, kz, outer):
    """Offset (from the origin, signed as this side) of one side's edge.

    ``kept``/``counts``: this side's kept magnitudes and noisy counts
    (innermost first); ``other_*``: the other side's.
    """
    has, has_other = kept.any(axis=1), other_kept.any(axis=1)
    top, _ = _extended(kept, counts, plan)
    other_top, other_first = _extended(other_kept, other_counts, plan)
    # nothing kept here: mirror the other side when this side's cells over
    # the other's top MIRROR_OCTAVES magnitudes hold enough users together
    cum = np.concatenate([np.zeros((counts.shape[0], 1), np.int64),
                          np.cumsum(counts, axis=1)], axis=1)
    rows = np.arange(counts.shape[0])
    lo_idx = np.maximum(other_top + 1 - plan.mirror_octaves, 0)
    mirror = has_other & (cum[rows, other_top + 1] - cum[rows, lo_idx]
                          >= plan.mirror_threshold)
    # else the inner edge of the other side's innermost kept cell (negative:
    # it lies on the other side), or the origin (zero cell kept, innermost
    # cell, nothing kept)
    inner = np.concatenate([[0.0], outer[:-1]]) * 0.25 ** plan.margin
    # ... or the origin when the other side's kept span is wide (at least
    # ORIGIN_OCTAVES octaves: skewed data, whose low tail the inner edge would
    # clip, for at most 1/7 more width)
    wide = outer[other_top] >= np.ldexp(inner[other_first], ORIGIN_OCTAVES)
    inward = np.where(kz | ~has_other | wide, 0.0, -inner[other_first])
    return np.where(has, outer[top], np.where(mirror, outer[other_top], inward))


def _edges(noisy, plan, lo, hi):
    """The released box from the noisy counts (module docstring: top-bin rule,
    merged magnitudes, mirrored sides, extension); post-processing only."""
    d, per = noisy.shape
    k = plan.exponents.size
    off = 0 if lo is None else 1
    z = off + k
    # innermost first on both sides: index i <-> outer exponent exponents[i]
    neg = noisy[:, off:off + k][:, ::-1]
    pos = noisy[:, z + 1:z + 1 + k]
    kp, kn = pos >= plan.threshold, neg >= plan.threshold
    km = (pos + neg >= plan.merged_threshold) & ~kp & ~kn
    kz = noisy[:, z] >= plan.threshold
    outer = np.ldexp(1.0, np.minimum(plan.exponents + plan.margin,
                                     _FREE_EXPONENTS[1] if lo is None else 60))
    up = _side(kp | km, pos, kn | km, neg, plan, kz, outer)
    down = _side(kn | km, neg, kp | km, pos, plan, kz, outer)
    if lo is None:
        c, h = np.zeros(d), np.ones(d)
        over_lo = over_hi = np.zeros(d, dtype=bool)
    else:
        c, h = 0.5 * lo + 0.5 * hi, 0.5 * hi - 0.5 * lo
        over_lo, over_hi = noisy[:, 0] >= plan.threshold, noisy[:, -1] >= plan.threshold
    any_kept = (kp | kn | km).any(axis=1) | kz | over_lo | over_hi
    # a column with nothing kept: the run of spread_octaves magnitudes (both
    # sides and the zero cell) holding the most users, if enough, gives the
    # symmetric box (post-processing of the same counts)
    both = np.cumsum(np.concatenate([np.zeros((d, 1), np.int64), pos + neg], axis=1),
                     axis=1)
    w = min(plan.spread_octaves, k)
    runs = both[:, w:] - both[:, :-w] + noisy[:, z][:, None]  # run ending at i
    passing = runs >= plan.spread_threshold
    spread = ~any_kept & passing.any(axis=1)
    if spread.any():
        # the run holding the most users (the outermost passing one would
        # reach up to 2^(w-1) times too far through empty cells)
        top = np.argmax(np.where(passing, runs, -np.inf), axis=1) + w - 1
        up = np.where(spread, outer[top], up)
        down = np.where(spread, outer[top], down)
        any_kept = any_kept | spread
    upper, lower = c + h * up, c - h * down
    if lo is None:
        return (np.where(any_kept, lower, np.nan), np.where(any_kept, upper, np.nan),
                ~any_kept)
    # an overflow cell kept on one side only: the box reaches the declared edge
    upper = np.where(over_hi, hi, np.minimum(upper, hi))
    lower = np.where(over_lo, lo, np.maximum(lower, lo))
    return (np.where(any_kept, lower, lo), np.where(any_kept, upper, hi),
            np.zeros(d, dtype=bool))


def log_ranges_from_plan(U, plan, *, window=None, random_state=None):
    """Release the range of every column of ``U`` (one row per user).

    Bins every user's row (its user mean) in every column's log2 histogram
    (module docstring), adds the plan's integer noise to every cell in one
    joint release, and keeps the outermost cells whose noisy count reaches
    ``plan.threshold`` (top-bin rule). The loss is ``plan.loss`` whatever
    the data (replace-one, user level). ``U`` is not modified.

    Parameters
    ----------
    U : array-like of shape (n_users, n_features)
        One finite row per user (e.g. the users' means).
    plan : LogRangesPlan
        From :func:`plan_log_ranges` for this ``n_users`` and ``n_features``.
    window : tuple (lower, upper) or None, default=None
        The declared box; None uses ``plan.window``. Needed iff the plan was
        made with a window.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the noise; None draws fresh OS entropy.

    Returns
    -------
    result : LogRanges
        The released box, the noisy counts and the loss.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import plan_log_ranges, log_ranges_from_plan
    >>> from skuserdp.privacy import ZCDP
    >>> U = np.random.default_rng(0).normal([0.5, -300.0], [0.07, 20.0],
    ...                                     size=(1000, 2))
    >>> plan = plan_log_ranges(1000, 2, budget=ZCDP(0.01))
    >>> res = log_ranges_from_plan(U, plan, random_state=0)
    >>> res.lower.tolist(), res.upper.tolist()
    ([0.0, -512.0], [1.0, -256.0])
    """
    V = np.asarray(U, dtype=np.float64)
    if V.ndim != 2 or V.shape != (plan.n_users, plan.n_features):
        raise ValueError(f"U must have shape ({plan.n_users}, {plan.n_features}), "
                         f"got {np.shape(U)}.")
    if window is not None and plan.window is None:
        raise ValueError("the plan was made without a window: plan with one.")
    window = plan.window if window is None else window
    lo = hi = None
    if window is not None:
        lo, hi = _check_window(window, plan.n_features)
    n, d = V.shape
    per = plan.cells_per_feature
    exact = _exact_counts(V, plan, lo, hi)
    seed = make_seed_sequence(random_state)
    noisy = add_noise(exact, plan.noise, seed).reshape(d, per)
    lower, upper, missing = _edges(noisy, plan, lo, hi)
    outside_lower = outside_upper = None
    if lo is not None:
        outside_lower = noisy[:, 0].astype(np.float64)
        outside_upper = noisy[:, -1].astype(np.float64)
    return LogRanges(lower=lower, upper=upper, missing=missing,
                     outside_lower=outside_lower, outside_upper=outside_upper,
                     counts=noisy, count_std=plan.count_std, loss=plan.loss)
