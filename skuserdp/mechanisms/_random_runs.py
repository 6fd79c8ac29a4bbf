"""The random draws of repeat-and-select tuning (Papernot & Steinke, 2022).

The tuner runs a uniformly drawn candidate ``K`` times and releases the best
run; ``K`` and the candidates are drawn here, from a stream of their own,
independently of the data. ``K`` follows a truncated negative binomial
``TNB(η, γ)`` (η = 0 logarithmic, η = 1 geometric) or a Poisson(μ) law
redrawn while it is 0 (a zero-truncated Poisson, covered by the Poisson
accounting: :mod:`skuserdp.privacy._repeat_select`). The privacy map is
:func:`skuserdp.privacy.repeat_select_privacy`.
"""

import math

import numpy as np

from ..privacy import run_distribution_shape, tnb_gamma

__all__ = ["draw_num_runs", "random_runs_schedule", "num_runs_pmf"]


def draw_num_runs(mean, distribution, rng, size=None):
    """Draw the number of runs ``K >= 1``.

    Parameters
    ----------
    mean : float
        ``E[K]`` of the truncated negative binomial (its γ from
        :func:`skuserdp.privacy.tnb_gamma`), or μ of the Poisson law.
    distribution : {"logarithmic", "geometric", "poisson"} or float
        The law of ``K`` (a shape η >= 0, ``inf`` for Poisson).
    rng : numpy.random.Generator
        A stream of its own, independent of the data.
    size : int, default=None
        Number of draws (None: one int).

    Returns
    -------
    K : int or ndarray of int

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._random_runs import draw_num_runs
    >>> k = draw_num_runs(8.0, "geometric", np.random.default_rng(0), size=1000)
    >>> bool(k.min() >= 1), bool(6 < k.mean() < 10)
    (True, True)
    """
    shape = run_distribution_shape(distribution)
    n = 1 if size is None else int(size)
    if math.isinf(shape):
        k = _redraw_zeros(lambda m: rng.poisson(float(mean), m), n)
    else:
        gamma = tnb_gamma(shape, float(mean))
        if gamma == 1:
            k = np.ones(n, dtype=np.int64)
        elif shape == 1:
            k = rng.geometric(gamma, n)
        elif shape == 0:
            k = rng.logseries(1.0 - gamma, n)
        else:  # failures before η successes, redrawn while 0
            k = _redraw_zeros(lambda m: rng.negative_binomial(shape, gamma, m), n)
    k = np.asarray(k, dtype=np.int64)
    return int(k[0]) if size is None else k


def _redraw_zeros(draw, n):
    k = np.asarray(draw(n), dtype=np.int64)
    while True:
        zero = k == 0
        if not zero.any():
            return k
        k[zero] = draw(int(zero.sum()))


def num_runs_pmf(k, mean, distribution):
    """``P[K = k]`` of :func:`draw_num_runs` (for the goodness-of-fit tests).

    Parameters
    ----------
    k : array-like of int
        Values ``>= 1``.
    mean : float
        As in :func:`draw_num_runs`.
    distribution : {"logarithmic", "geometric", "poisson"} or float
        As in :func:`draw_num_runs`.

    Returns
    -------
    pmf : ndarray

    Examples
    --------
    >>> from skuserdp.mechanisms._random_runs import num_runs_pmf
    >>> num_runs_pmf([1, 2], 2.0, "geometric")
    array([0.5 , 0.25])
    """
    from scipy import stats

    k = np.asarray(k)
    shape = run_distribution_shape(distribution)
    if math.isinf(shape):
        mu = float(mean)
        return stats.poisson.pmf(k, mu) / -math.expm1(-mu)
    gamma = tnb_gamma(shape, float(mean))
    if gamma == 1:
        return (k == 1).astype(float)
    if shape == 0:
        return stats.logser.pmf(k, 1.0 - gamma)
    return stats.nbinom.pmf(k, shape, gamma) / (1.0 - gamma ** shape)


def random_runs_schedule(mean, distribution, n_candidates, rng):
    """The number of runs and the candidate of every run.

    Parameters
    ----------
    mean : float
        ``E[K]`` (truncated negative binomial) or μ (Poisson).
    distribution : {"logarithmic", "geometric", "poisson"} or float
        The law of ``K``.
    n_candidates : int
        The size of the grid, ``>= 1``.
    rng : numpy.random.Generator
        A stream of its own, independent of the data.

    Returns
    -------
    candidates : ndarray of int
        ``K`` i.i.d. uniform draws from ``{0, ..., n_candidates − 1}``
        (``K`` drawn first). Never to be released: only the winner is.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._random_runs import random_runs_schedule
    >>> runs = random_runs_schedule(6.0, "geometric", 3, np.random.default_rng(0))
    >>> bool(len(runs) >= 1), set(runs.tolist()) <= {0, 1, 2}
    (True, True)
    """
    n_runs = draw_num_runs(mean, distribution, rng)
    return rng.integers(int(n_candidates), size=n_runs)
