"""Top passing bin of a private log2 histogram of non-negative values.

One value per user (e.g. the distance of the user's mean to a released
centre) falls in exactly one cell of a public log2 grid:

* cell 0: ``[0, base]``;
* cell p (``1 <= p < n_bins``): ``(base·2^(p−1), base·2^p]``; values above
  the top edge ``base·2^(n_bins−1)`` are clamped into the last cell.

The integer counts get discrete Gaussian noise (exact lattice sampler,
:func:`~skuserdp.mechanisms.calibrate_noise` at the replace-one ℓ2
sensitivity ``√2`` of a histogram in which each user is in one cell:
:func:`~skuserdp.privacy.replace_one_histogram_sensitivity`), so the release
is ``rho``-zCDP at the user level (replace-one, the number of users public).
Everything after the noisy counts is post-processing: the upper edge of the
highest cell ``p >= 1`` whose noisy count reaches the public threshold
``k = σ·√(2 ln((n_bins − 1)/β))`` (σ the noise's standard deviation bound;
the discrete Gaussian is σ²-sub-Gaussian, so every empty cell stays below
``k`` with probability ``>= 1 − β``, union bound). Users above the returned
edge are then ``O(k)``, ``k ∝ 1/√ρ``: the clipped count falls as the budget
grows, and once ``k < 1`` the edge covers the largest value (the top-bin
rule of Google's ApproxBounds, in zCDP; spec ``real_data_means.md`` §2.1,
§2.3).
"""

import math

import numpy as np

from ..privacy import (
    PureDP,
    ZCDP,
    histogram_pass_threshold,
    replace_one_histogram_sensitivity,
)
from ..utils._random import make_seed_sequence
from ._additive import add_noise
from ._calibrate import calibrate_noise

__all__ = ["top_bin_threshold", "top_bin_edge", "top_bin_edges", "top_bin_edges_plan",
           "top_bin_noise"]


def top_bin_noise(rho):
    """The discrete Gaussian noise of the counts at ``rho``-zCDP.

    Parameters
    ----------
    rho : float
        zCDP budget of the histogram, ``> 0``.

    Returns
    -------
    noise : DiscreteGaussianNoise
        Calibrated to the replace-one ℓ2 sensitivity ``√2`` of the counts;
        ``noise.privacy(√2).rho <= rho``.

    Examples
    --------
    >>> import math
    >>> from skuserdp.mechanisms._top_bin import top_bin_noise
    >>> noise = top_bin_noise(0.5)
    >>> noise.privacy(math.sqrt(2)).rho <= 0.5, round(noise.std, 3)
    (True, 1.414)
    """
    return calibrate_noise(ZCDP(rho), replace_one_histogram_sensitivity(1, "l2"))


def top_bin_threshold(noise, n_bins, beta):
    """Public threshold ``k = σ·√(2 ln((n_bins − 1)/β))`` of a passing cell.

    Parameters
    ----------
    noise : DiscreteGaussianNoise
        The counts' noise (:func:`top_bin_noise`).
    n_bins : int
        Number of cells, ``>= 2`` (cell 0 never passes).
    beta : float
        Probability, in ``(0, 1)``, that some empty cell passes.

    Returns
    -------
    k : float

    Examples
    --------
    >>> from skuserdp.mechanisms._top_bin import top_bin_noise, top_bin_threshold
    >>> round(top_bin_threshold(top_bin_noise(0.5), 11, 0.01), 3)
    5.257
    """
    if n_bins < 2:
        raise ValueError(f"n_bins must be >= 2, got {n_bins}.")
    if not 0 < beta < 1:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}.")
    return noise.std * math.sqrt(2.0 * math.log((n_bins - 1) / beta))


def top_bin_edge(values, rho, *, base, n_bins, beta=0.01, random_state=None):
    """Upper edge of the highest passing cell of a private log2 histogram.

    Parameters
    ----------
    values : array-like of shape (n_users,)
        One non-negative value per user (``inf`` allowed: the last cell).
        Not modified.
    rho : float
        zCDP budget, ``> 0``; the release is ``rho``-zCDP at the user level
        (replace-one, the number of users public).
    base : float
        Public upper edge of cell 0, ``> 0``.
    n_bins : int
        Public number of cells, ``>= 2``.
    beta : float, default=0.01
        Probability that some empty cell passes (accuracy only).
    random_state : int, SeedSequence or None, default=None
        Noise source.

    Returns
    -------
    edge : float or None
        ``base·2^p`` for the highest cell ``p >= 1`` whose noisy count is at
        least :func:`top_bin_threshold`; ``None`` when none is.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._top_bin import top_bin_edge
    >>> v = np.concatenate([np.full(500, 0.5), np.full(200, 5.0)])
    >>> top_bin_edge(v, 10.0, base=1.0, n_bins=8, random_state=0)
    8.0
    >>> top_bin_edge(np.full(700, 0.5), 10.0, base=1.0, n_bins=8,
    ...              random_state=0) is None
    True
    """
    base = float(base)
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a finite float > 0, got {base!r}.")
    n_bins = int(n_bins)
    noise = top_bin_noise(rho)
    k = top_bin_threshold(noise, n_bins, beta)
    v = np.asarray(values, dtype=np.float64).ravel()
    # upper edges of cells 0..n_bins-2; searchsorted(side="left") puts a
    # value equal to an edge in the cell it closes; above the top: the last
    edges = base * np.exp2(np.arange(n_bins - 1, dtype=np.float64))
    cell = np.searchsorted(edges, v, side="left")
    counts = np.bincount(cell, minlength=n_bins).astype(np.int64)
    noisy = add_noise(counts, noise, make_seed_sequence(random_state))
    passing = np.flatnonzero(noisy[1:] >= k)
    if passing.size == 0:
        return None
    return base * 2.0 ** int(passing[-1] + 1)


def top_bin_edges_plan(budget, n_columns, n_bins, beta):
    """Noise and pass threshold of :func:`top_bin_edges` (public values only).

    The ``d`` histograms have replace-one sensitivity ``2d`` (ℓ1) or
    ``√(2d)`` (ℓ2) (:func:`~skuserdp.privacy.replace_one_histogram_sensitivity`):
    discrete Laplace noise at a pure ε, discrete Gaussian noise at ρ; the
    threshold (:func:`~skuserdp.privacy.histogram_pass_threshold`) is over the
    ``d·(n_bins − 1)`` cells that may pass.

    Parameters
    ----------
    budget : ZCDP or PureDP
        The release's budget.
    n_columns : int
        Number of histograms ``d``.
    n_bins : int
        Cells per histogram, ``>= 2``.
    beta : float
        Probability that some empty cell passes.

    Returns
    -------
    noise : DiscreteLaplaceNoise or DiscreteGaussianNoise
    threshold : int

    Examples
    --------
    >>> from skuserdp.mechanisms._top_bin import top_bin_edges_plan
    >>> from skuserdp.privacy import PureDP
    >>> top_bin_edges_plan(PureDP(1.0), 1, 11, 0.01)[1]
    13
    """
    if int(n_bins) < 2:
        raise ValueError(f"n_bins must be >= 2, got {n_bins}.")
    cells = int(n_columns) * (int(n_bins) - 1)
    if isinstance(budget, PureDP):
        noise = calibrate_noise(budget,
                                replace_one_histogram_sensitivity(n_columns, "l1"))
        return noise, histogram_pass_threshold(float(noise.scale), cells, beta,
                                               kind="laplace")
    noise = calibrate_noise(budget, replace_one_histogram_sensitivity(n_columns, "l2"))
    return noise, histogram_pass_threshold(noise.std, cells, beta, kind="gaussian")


def top_bin_edges(values, budget, *, base, n_bins, beta=0.01, random_state=None):
    """:func:`top_bin_edge` of every column at once: ``d`` histograms.

    Each user lies in one cell of each column's histogram; the ``d``
    histograms are one release with the noise and threshold of
    :func:`top_bin_edges_plan` (pure ε or ρ-zCDP).

    Parameters
    ----------
    values : array-like of shape (n_users, n_columns)
        Non-negative values. Not modified.
    budget : ZCDP or PureDP
        The release's budget, at the user level (replace-one, number of
        users public).
    base : float
        Public upper edge of cell 0 of every column, ``> 0``.
    n_bins : int
        Public number of cells per column, ``>= 2``.
    beta : float, default=0.01
        Probability that some empty cell passes.
    random_state : int, SeedSequence or None, default=None
        Noise source.

    Returns
    -------
    edges : ndarray of shape (n_columns,)
        Per column, ``base·2^p`` of its highest passing cell ``p >= 1``;
        ``nan`` where none passes.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._top_bin import top_bin_edges
    >>> from skuserdp.privacy import ZCDP
    >>> v = np.column_stack([np.full(2000, 0.3), np.full(2000, 3.0)])
    >>> top_bin_edges(v, ZCDP(1.0), base=2.0 ** -4, n_bins=8, random_state=0)
    array([0.5, 4. ])
    """
    base = float(base)
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a finite float > 0, got {base!r}.")
    n_bins = int(n_bins)
    v = np.asarray(values, dtype=np.float64)
    d = v.shape[1]
    noise, k = top_bin_edges_plan(budget, d, n_bins, beta)
    edges = base * np.exp2(np.arange(n_bins - 1, dtype=np.float64))
    cell = np.searchsorted(edges, v, side="left")  # (n, d)
    counts = np.stack([np.bincount(cell[:, j], minlength=n_bins) for j in range(d)])
    noisy = add_noise(counts.astype(np.int64).ravel(), noise,
                      make_seed_sequence(random_state)).reshape(d, n_bins)
    out = np.full(d, np.nan)
    for j in range(d):
        passing = np.flatnonzero(noisy[j, 1:] >= k)
        if passing.size:
            out[j] = base * 2.0 ** int(passing[-1] + 1)
    return out
