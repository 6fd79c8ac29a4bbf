"""PrivateRange: an exact exponential mechanism over every bin of [-B, B].

Implements Algorithm 6 of Levy et al. [LSA+21]_ (Appendix D.1, after the
approximate median of Feldman and Steinke), docs:
:ref:`papers-levy` and :ref:`papers-levy-range`.

``[-B, B]`` is cut into ``l = ⌈2B/w⌉`` bins of width ``w`` (the paper's
``w = 2τ``; the last bin overhangs ``B`` instead of being shortened,
:ref:`papers-levy-range`). Each value falls in
a bin (values outside ``[-B, B]`` go to the end
bins). The score of bin ``k`` is ``c(k) = max(#{values in bins < k},
#{values in bins > k})``; replacing one value changes every ``c(k)`` by at
most 1, so sampling ``P(k) ∝ exp(-ε c(k)/2)`` is ε-DP (and ε-bounded range,
hence ε²/8-zCDP). The output is the midpoint ``t`` of the sampled bin.

Exact sampling without enumerating the ``l`` bins: the score is constant on
the at most ``2r + 1`` segments cut by the ``r`` occupied bins (the gap
before the first, each occupied bin, each gap between two occupied bins, the
gap after the last). A segment of ``s`` bins and score ``c`` has
log-weight ``log s − εc/2``; a segment is drawn by the Gumbel-max trick in log
space and then a uniform bin inside it. Empty bins keep their exact
probability. Cost O(n log n) per instance, independent of ``l``.

Window (correction of the paper,
:ref:`papers-levy-range`): every bin of score ``< n`` lies
between the lowest and the highest occupied bin, so if all values lie within
``τ`` of a point, all of them lie within ``2τ + w/2`` of ``t``. The paper
returns ``t ± 2τ`` with ``w = 2τ``, which can cut off a value; this module
returns ``t ± (2τ + w/2)`` (``± 3τ`` at the paper's width). The window only
affects accuracy, never privacy. A bin of score ``< n`` is missed with
probability at most ``l · exp(-εn/4)``.
"""

import math

import numpy as np

from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_positive_scalar

__all__ = ["private_range", "private_range_window"]

# B / w beyond this loses float64 resolution in the bin index.
MAX_BINS = 10**12


def _check_layout(bound, bin_width):
    if not (np.isfinite(bound) and bound > 0):
        raise ValueError(f"bound must be a finite number > 0, got {bound!r}.")
    if not (np.isfinite(bin_width) and bin_width > 0):
        raise ValueError(f"bin_width must be a finite number > 0, got {bin_width!r}.")
    n_bins = math.ceil(2.0 * bound / bin_width)
    if n_bins > MAX_BINS:
        raise ValueError(
            f"2*bound/bin_width = {2.0 * bound / bin_width:.3g} bins exceeds "
            f"{MAX_BINS:.0e}: float64 cannot index them reliably. Use a coarser "
            "width (a larger tau) or a tighter public bound."
        )
    return max(n_bins, 1)


def bin_indices(values, bound, bin_width, n_bins):
    """Bin of every value (values outside ``[-bound, bound]`` go to the end bins)."""
    k = np.floor((np.asarray(values, dtype=np.float64) + bound) / bin_width)
    np.clip(k, 0, n_bins - 1, out=k)
    return k.astype(np.int64)


def score_segments(sorted_bins, n_bins, epsilon):
    """The constant-score segments of every instance.

    Parameters
    ----------
    sorted_bins : ndarray of shape (k, n), int64
        Bin indices of each instance, sorted along axis 1.
    n_bins : int
        Number of bins ``l``.
    epsilon : ndarray of shape (k,)
        Privacy parameter of each instance.

    Returns
    -------
    row, start, size, log_weight : ndarrays of shape (n_segments,)
        Segment ``s`` covers bins ``start[s] .. start[s] + size[s] - 1`` of
        instance ``row[s]`` with per-bin log-weight ``-ε c / 2``; the
        segment's log-weight is ``log(size) − ε c/2`` (``-inf`` if empty).
        Sorted by row.
    """
    k, n = sorted_bins.shape
    flat = sorted_bins.ravel()
    new_run = np.ones(flat.shape[0], dtype=bool)
    new_run[1:] = flat[1:] != flat[:-1]
    new_run[::n] = True
    starts = np.flatnonzero(new_run)
    run_row = starts // n
    run_bin = flat[starts]
    run_left = starts - run_row * n
    run_count = np.diff(np.append(starts, flat.shape[0]))
    run_right = n - run_left - run_count
    is_first = run_left == 0
    is_last = run_right == 0
    not_last = ~is_last

    nxt = np.flatnonzero(not_last)
    gap_left = run_left[nxt] + run_count[nxt]
    parts = [
        # each occupied bin
        (run_row, run_bin, np.ones_like(run_bin), np.maximum(run_left, run_right)),
        # gaps between consecutive occupied bins of the same instance
        (run_row[nxt], run_bin[nxt] + 1, run_bin[nxt + 1] - run_bin[nxt] - 1,
         np.maximum(gap_left, n - gap_left)),
        # gap before the first occupied bin
        (run_row[is_first], np.zeros(int(is_first.sum()), dtype=np.int64),
         run_bin[is_first], np.full(int(is_first.sum()), n)),
        # gap after the last occupied bin
        (run_row[is_last], run_bin[is_last] + 1, n_bins - 1 - run_bin[is_last],
         np.full(int(is_last.sum()), n)),
    ]
    row, start, size, cost = (np.concatenate(a) for a in zip(*parts))
    order = np.argsort(row, kind="stable")
    row, start, size, cost = row[order], start[order], size[order], cost[order]
    with np.errstate(divide="ignore"):
        log_size = np.log(size.astype(np.float64))
    log_weight = log_size - 0.5 * epsilon[row] * cost
    return row, start, size, log_weight


def sample_bins(values, epsilon, bound, bin_width, rng):
    """Sampled bin index of every instance (rows of ``values``).

    Parameters
    ----------
    values : ndarray of shape (k, n)
        One instance per row, finite.
    epsilon : ndarray of shape (k,)
        ε of each instance.
    bound, bin_width : float
        The bin layout.
    rng : numpy.random.Generator
        Source of randomness (independent of the data).

    Returns
    -------
    bins : ndarray of shape (k,), int64
        The sampled bins.
    n_bins : int
        Number of bins ``l``.
    """
    n_bins = _check_layout(bound, bin_width)
    sorted_bins = np.sort(bin_indices(values, bound, bin_width, n_bins), axis=1)
    row, start, size, log_weight = score_segments(sorted_bins, n_bins, epsilon)
    keys = log_weight + rng.gumbel(size=log_weight.shape[0])
    # Within each row (rows are contiguous), the segment with the largest key.
    order = np.lexsort((keys, row))
    last = np.cumsum(np.bincount(row, minlength=values.shape[0])) - 1
    chosen = order[last]
    offset = rng.integers(0, size[chosen])
    return start[chosen] + offset, n_bins


def private_range_window(tau, bin_width=None):
    """Half-width of the window returned around the sampled midpoint.

    Parameters
    ----------
    tau : float
        Public concentration radius of the values (all within ``tau`` of
        some point), ``> 0``.
    bin_width : float, default=None
        Bin width ``w``; ``None`` is the paper's ``2τ``.

    Returns
    -------
    halfwidth : float
        ``2τ + w/2``: with every value within ``τ`` of a point and a bin of
        score ``< n`` drawn, no value is clipped (``3τ`` at ``w = 2τ``; the
        paper's ``2τ`` can clip, :ref:`papers-levy-range`).

    Examples
    --------
    >>> from skuserdp.mechanisms import private_range_window
    >>> private_range_window(1.0), private_range_window(1.0, 0.5)
    (3.0, 2.25)
    """
    tau = float(tau)
    w = 2.0 * tau if bin_width is None else float(bin_width)
    return 2.0 * tau + 0.5 * w


def private_range(values, epsilon, *, tau, bound, bin_width=None,
                  random_state=None):
    """PrivateRange (Levy et al., Algorithm 6): a private window around the bulk.

    ε-DP (pure; ε-bounded range, so also ε²/8-zCDP) with respect to
    replacing one value of each instance — one user's value when every value
    comes from a different user. The bins, their width and ``tau`` are public
    and never depend on the data; every bin of ``[-bound, bound]``, empty or
    not, keeps its exact exponential-mechanism probability.

    Parameters
    ----------
    values : array-like of shape (n,) or (k, n)
        One value per user; each row of a 2-d array is an independent
        instance. Finite.
    epsilon : float or array-like of shape (k,)
        Privacy parameter of each instance, ``> 0``.
    tau : float
        Public concentration radius, ``> 0``.
    bound : float
        Public bound: the bins cover ``[-bound, bound]``, ``> 0``.
    bin_width : float, default=None
        Bin width; ``None`` is the paper's ``2 * tau``.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    lower, upper : float or ndarray of shape (k,)
        The window ``t ± private_range_window(tau, bin_width)`` around the
        sampled bin midpoint ``t``.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import private_range
    >>> x = np.random.default_rng(0).uniform(0.30, 0.35, size=1000)
    >>> lo, hi = private_range(x, 1.0, tau=0.05, bound=1000.0, random_state=0)
    >>> bool(lo <= x.min() and x.max() <= hi), round(hi - lo, 2)
    (True, 0.3)
    """
    V = np.asarray(values, dtype=np.float64)
    scalar = V.ndim == 1
    if scalar:
        V = V[np.newaxis]
    if V.ndim != 2 or V.shape[1] < 1:
        raise ValueError("values must be a non-empty 1-d or 2-d array.")
    if not np.isfinite(V).all():
        raise ValueError("values must be finite.")
    eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (V.shape[0],))
    if not (np.isfinite(eps).all() and (eps > 0).all()):
        raise ValueError("epsilon must be finite and > 0.")
    tau = check_positive_scalar(tau, "tau")
    bound = check_positive_scalar(bound, "bound")
    w = 2.0 * tau if bin_width is None else float(bin_width)
    rng = generator_from(make_seed_sequence(random_state))
    bins, _ = sample_bins(V, np.ascontiguousarray(eps), bound, w, rng)
    mid = -bound + (bins + 0.5) * w
    half = private_range_window(tau, w)
    lower, upper = mid - half, mid + half
    if scalar:
        return float(lower[0]), float(upper[0])
    return lower, upper
