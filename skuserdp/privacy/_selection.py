"""Privacy of private selection with random stopping (Liu & Talwar, 2019).

The *random-stopping* selection of Liu and Talwar [LT19]_ (Theorem 3.2)
repeatedly runs a base mechanism ``Q`` with fresh randomness on the same data,
stops after each run with probability γ (independently of the data), and
outputs the best result seen under a fixed total order. If ``Q`` is pure
ε₀-DP, the selection is pure 3ε₀-DP, whatever γ ∈ (0, 1]. Levy et al.'s
Algorithm 5 uses it with ``Q`` = "draw a candidate uniformly, release its
loss with WinsorizedMean at ε/3", so the whole selection is ε-DP.

The guarantee is for the *uncapped* loop. A loop capped at ``L`` runs
(``min(T, L)`` with ``T`` geometric) differs from the uncapped one only on the
event ``T > L``, of probability ``η = (1 − γ)^L``; so the two output laws
are within total variation η of each other and, for every event ``O`` and
neighbours ``S, S'``::

    P[M_L(S) ∈ O] <= P[M(S) ∈ O] + η <= e^ε P[M(S') ∈ O] + η
                  <= e^ε (P[M_L(S') ∈ O] + η) + η,

i.e. the capped selection is (ε, (1 + e^ε)(1 − γ)^L)-DP.

All functions are for user-level neighbours (replace-one user, n public).

References
----------
.. [LT19] J. Liu and K. Talwar. Private selection from private candidates.
   STOC 2019. Theorem 3.2 (random stopping).
"""

import math

from ._budget import (
    ApproxDP,
    PureDP,
    _check_count,
    _check_open_unit,
    _check_positive_finite,
)

__all__ = [
    "random_stopping_call_budget",
    "random_stopping_max_iter",
    "random_stopping_privacy",
]

#: Liu & Talwar's factor: an ε₀-DP base mechanism gives a 3ε₀-DP selection.
_FACTOR = 3


def _check_stop_probability(stop_probability):
    gamma = float(stop_probability)
    if not 0 < gamma <= 1:
        raise ValueError(
            f"stop_probability must be in (0, 1], got {stop_probability!r}."
        )
    return gamma


def _log1p_exp(x):
    """``ln(1 + e^x)`` without overflow (``e^x`` overflows from x ≈ 709.8)."""
    if x > 700.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


def _capped_delta(epsilon, gamma, max_iter):
    """``min(1, (1 + e^ε)(1 − γ)^L)``, computed in log space."""
    log_tv = max_iter * math.log1p(-gamma) if gamma < 1 else -math.inf
    return math.exp(min(0.0, _log1p_exp(epsilon) + log_tv))


def random_stopping_call_budget(epsilon):
    """Budget of each base-mechanism run of a random-stopping selection.

    Liu & Talwar's Theorem 3.2: an ε₀-DP base mechanism gives a 3ε₀-DP
    selection, so a total ε allows ``ε₀ = ε/3`` per run (rounded down, if
    needed, so that ``3·ε₀ <= ε`` in floating point).

    Parameters
    ----------
    epsilon : float
        Total ε of the selection, ``> 0``.

    Returns
    -------
    budget : PureDP
        The pure budget of every run.

    Examples
    --------
    >>> from skuserdp.privacy import random_stopping_call_budget
    >>> random_stopping_call_budget(0.75)
    PureDP(epsilon=0.25)
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    eps0 = epsilon / _FACTOR
    while _FACTOR * eps0 > epsilon:
        eps0 = math.nextafter(eps0, 0.0)
    return PureDP(eps0)


def random_stopping_privacy(call_loss, stop_probability, max_iter=None):
    """Privacy loss of a random-stopping selection (Liu & Talwar, Thm 3.2).

    Parameters
    ----------
    call_loss : PureDP or float
        The pure loss ε₀ of one run of the base mechanism (a candidate drawn
        independently of the data, then released by an ε₀-DP mechanism).
    stop_probability : float
        Probability γ in ``(0, 1]`` of stopping after each run, independent
        of the data.
    max_iter : int or None, default=None
        Cap ``L >= 1`` on the number of runs; ``None`` for the uncapped loop.

    Returns
    -------
    loss : PureDP or ApproxDP
        ``PureDP(3ε₀)`` uncapped; capped, ``ApproxDP(3ε₀, δ)`` with
        ``δ = min(1, (1 + e^{3ε₀})(1 − γ)^L)``: the capped output is within
        total variation ``(1 − γ)^L`` of the uncapped one (module docstring).

    Examples
    --------
    >>> from skuserdp.privacy import random_stopping_privacy, PureDP
    >>> random_stopping_privacy(PureDP(0.25), 0.5)
    PureDP(epsilon=0.75)
    >>> loss = random_stopping_privacy(PureDP(0.25), 0.5, max_iter=40)
    >>> loss.epsilon, f"{loss.delta:.3e}"
    (0.75, '2.835e-12')
    """
    if isinstance(call_loss, PureDP):
        eps0 = call_loss.epsilon
    elif isinstance(call_loss, ApproxDP):
        raise TypeError("random stopping needs a pure (PureDP) base mechanism.")
    else:
        eps0 = PureDP(call_loss).epsilon
    gamma = _check_stop_probability(stop_probability)
    epsilon = _FACTOR * eps0
    if max_iter is None:
        return PureDP(epsilon)
    max_iter = _check_count("max_iter", max_iter)
    return ApproxDP(epsilon, _capped_delta(epsilon, gamma, max_iter))


def random_stopping_max_iter(epsilon, stop_probability, delta):
    """Smallest cap on a random-stopping loop that costs at most δ.

    The smallest ``L`` with ``(1 + e^ε)(1 − γ)^L <= δ`` (see
    :func:`random_stopping_privacy`); about ``ln((1 + e^ε)/δ)/γ``.

    Parameters
    ----------
    epsilon : float
        ε of the uncapped selection (``3ε₀``), ``> 0``.
    stop_probability : float
        Stopping probability γ in ``(0, 1]``.
    delta : float
        Largest δ the cap may cost, in ``(0, 1)``.

    Returns
    -------
    max_iter : int
        The cap ``L >= 1``.

    Examples
    --------
    >>> from skuserdp.privacy import random_stopping_max_iter
    >>> random_stopping_max_iter(1.0, 0.01, 1e-12)
    2880
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    gamma = _check_stop_probability(stop_probability)
    delta = float(delta)
    _check_open_unit("delta", delta)
    if gamma == 1:
        return 1
    need = _log1p_exp(epsilon) - math.log(delta)  # > 0
    max_iter = max(1, math.ceil(need / -math.log1p(-gamma)))
    # Guard the rounding of the logarithms: the cap must meet δ exactly.
    while _capped_delta(epsilon, gamma, max_iter) > delta:
        max_iter += 1
    return max_iter
