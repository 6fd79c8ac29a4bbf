"""The exponential mechanism in log space (Gumbel-max trick).

McSherry & Talwar (2007): choose candidate ``i`` with probability
``∝ exp(ε·score_i/(2Δ))`` where Δ bounds how much any score changes between
neighbouring datasets (one user replaced). It is ε-DP, and ε-bounded-range,
hence (ε²/8)-zCDP (Cesar & Rogers 2021; see
:func:`skuserdp.privacy.pure_to_zcdp`). When every score can only move in the
same direction between neighbours (``monotonic=True``) the factor 2 drops.

Sampling uses the Gumbel-max trick: ``argmax_i (log w_i + G_i)`` with i.i.d.
standard Gumbel ``G_i`` is an exact draw from ``softmax(log w)`` in real
arithmetic, never forms ``exp`` (no overflow or underflow for large ``nε``)
and is vectorised over independent instances. The Gumbel draws are floating
point, so this is not hardened against floating-point attacks the way the
lattice releases are; the output is a discrete index, and the deviation of
its distribution from the ideal one is of the order of the float64 rounding
error of the scores.
"""

import numpy as np

__all__ = ["exponential_mechanism", "gumbel_max"]


def gumbel_max(log_weights, rng):
    """Sample indices with probabilities ``softmax(log_weights)`` along the last axis.

    Parameters
    ----------
    log_weights : array-like of shape (..., n_candidates)
        Unnormalised log-probabilities; ``-inf`` excludes a candidate.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    index : int or ndarray of shape (...)
        The sampled candidate of every instance.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import gumbel_max
    >>> int(gumbel_max([0.0, -np.inf, -np.inf], np.random.default_rng(0)))
    0
    """
    logw = _check_log_weights(log_weights)
    return _argmax_keys(logw, rng.gumbel(size=logw.shape))


def _check_log_weights(log_weights):
    logw = np.asarray(log_weights, dtype=np.float64)
    if logw.ndim == 0 or logw.shape[-1] == 0:
        raise ValueError("log_weights needs at least one candidate.")
    if np.isnan(logw).any() or np.isposinf(logw).any():
        raise ValueError("log_weights must not contain NaN or +inf.")
    if np.isneginf(logw).all(axis=-1).any():
        raise ValueError(
            "every instance needs at least one candidate with finite weight."
        )
    return logw


def _argmax_keys(logw, gumbels):
    keys = logw + gumbels
    out = np.argmax(keys, axis=-1)
    return int(out) if out.ndim == 0 else out


def exponential_mechanism(scores, epsilon, sensitivity, rng, *, monotonic=False):
    """Pick a candidate with probability ``∝ exp(ε·score/(2Δ))``.

    Parameters
    ----------
    scores : array-like of shape (..., n_candidates)
        Utility of each candidate (higher is better), computed on the private
        data; leading axes are independent instances.
    epsilon : float
        Privacy parameter ε of each instance, ``> 0``.
    sensitivity : float
        Bound Δ on the change of any score when one user's data is replaced,
        ``> 0``.
    rng : numpy.random.Generator
        Source of randomness.
    monotonic : bool, default=False
        If all scores move in the same direction between neighbours, the
        probabilities ``∝ exp(ε·score/Δ)`` are still ε-DP.

    Returns
    -------
    index : int or ndarray of shape (...)
        The selected candidate(s). Each instance is ε-DP
        (:class:`skuserdp.privacy.PureDP`) and (ε²/8)-zCDP.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import exponential_mechanism
    >>> rng = np.random.default_rng(0)
    >>> exponential_mechanism([0.0, 100.0, 0.0], 1.0, 1.0, rng)
    1
    """
    return gumbel_max(_log_weights(scores, epsilon, sensitivity, monotonic), rng)


def _log_weights(scores, epsilon, sensitivity, monotonic):
    epsilon = float(epsilon)
    sensitivity = float(sensitivity)
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(
            f"sensitivity must be a finite number > 0, got {sensitivity!r}."
        )
    factor = epsilon / (sensitivity if monotonic else 2.0 * sensitivity)
    return factor * np.asarray(scores, dtype=np.float64)


def _exponential_mechanism_from_noise(scores, epsilon, sensitivity, gumbels, *,
                                      monotonic=False):
    """:func:`exponential_mechanism` with its Gumbel draws passed in.

    ``exponential_mechanism(scores, ε, Δ, rng)`` draws
    ``rng.gumbel(size=scores.shape)`` and nothing else; given those draws as
    ``gumbels``, this returns the same index. The number of draws does not
    depend on the data, so a caller running several releases may draw all
    their noise up front, in the order of the releases, and get the outputs
    (and the random stream) of running them one after another -- while
    computing their scores in one pass over the data.

    Parameters
    ----------
    scores : array-like of shape (..., n_candidates)
        As in :func:`exponential_mechanism`.
    epsilon, sensitivity : float
        As in :func:`exponential_mechanism`.
    gumbels : ndarray of the shape of ``scores``
        Independent standard Gumbel draws, independent of the data.
    monotonic : bool, default=False
        As in :func:`exponential_mechanism`.

    Returns
    -------
    index : int or ndarray of shape (...)
    """
    logw = _check_log_weights(_log_weights(scores, epsilon, sensitivity, monotonic))
    gumbels = np.asarray(gumbels, dtype=np.float64)
    if gumbels.shape != logw.shape:
        raise ValueError(f"gumbels must have shape {logw.shape}, got {gumbels.shape}.")
    return _argmax_keys(logw, gumbels)
