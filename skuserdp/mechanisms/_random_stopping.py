"""The random draws of private selection by random stopping (Liu & Talwar 2019).

Private selection among K candidates runs an ε/3-DP base mechanism on a
uniformly drawn candidate, again and again, and stops after each run with
probability γ (Liu & Talwar, "Private selection from private candidates",
STOC 2019, Theorem 3.2). The stopping time and the candidates are drawn from
a stream of their own, independently of the data: this module draws them.
The privacy map (and the cap ``max_iter``) is
:func:`skuserdp.privacy.random_stopping_privacy`; the selection itself is
:func:`skuserdp.model_selection.private_selection`.
"""

__all__ = ["random_stopping_schedule"]


def random_stopping_schedule(stop_probability, n_candidates, rng, *, max_iter=None):
    """The number of runs and the candidate of each run.

    Parameters
    ----------
    stop_probability : float
        γ in ``(0, 1]``: the probability of stopping after each run.
    n_candidates : int
        K, ``>= 1``.
    rng : numpy.random.Generator
        A stream of its own, independent of the data.
    max_iter : int, default=None
        Cap on the number of runs (None: no cap).

    Returns
    -------
    n_iterations : int
        ``min(Geometric(γ), max_iter)``, drawn first.
    candidates : iterator of int
        ``n_iterations`` uniform draws from ``{0, ..., K − 1}``, drawn from
        ``rng`` one at a time as the iterator is consumed.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._random_stopping import random_stopping_schedule
    >>> n, runs = random_stopping_schedule(0.2, 3, np.random.default_rng(0),
    ...                                    max_iter=10)
    >>> runs = list(runs)
    >>> 1 <= n <= 10, len(runs) == n, set(runs) <= {0, 1, 2}
    (True, True, True)
    """
    n_iterations = int(rng.geometric(stop_probability))
    if max_iter is not None:
        n_iterations = min(n_iterations, max_iter)
    return n_iterations, (int(rng.integers(n_candidates)) for _ in range(n_iterations))
