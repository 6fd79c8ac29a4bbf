"""Composition of privacy losses: basic, advanced (DRV) and zCDP (additive).

All results hold for adaptive composition and for user-level neighbouring
datasets (replace-one user). Parallel composition (disjoint sets of users
chosen independently of the data) takes the maximum.

References
----------
.. [DR14] C. Dwork and A. Roth. The Algorithmic Foundations of Differential
   Privacy, 2014. Theorem 3.16 (basic) and Theorem 3.20 (advanced).
.. [DRV10] C. Dwork, G. Rothblum and S. Vadhan. Boosting and differential
   privacy. FOCS 2010.
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016. Lemma 2.3.
"""

import math

from ._budget import ZCDP, ApproxDP, PureDP

__all__ = ["compose", "compose_parallel", "compose_advanced"]


def _kinds(losses):
    if not losses:
        raise ValueError("at least one privacy loss is required.")
    kinds = {type(loss) for loss in losses}
    unknown = kinds - {PureDP, ApproxDP, ZCDP}
    if unknown:
        names = sorted(k.__name__ for k in unknown)
        raise TypeError(f"unknown privacy-loss types: {names}")
    if ZCDP in kinds and kinds != {ZCDP}:
        raise TypeError(
            "cannot compose zCDP with (ε, δ)-DP losses directly; convert first, "
            "e.g. pure_to_zcdp(...) for pure losses or zcdp_to_approx_dp(...)."
        )
    return kinds


def compose(*losses):
    """Sequential (adaptive) composition of privacy losses.

    Pure losses add their ε (basic composition); mixing pure and approximate
    losses gives the sum of ε and of δ; zCDP losses add their ρ.

    Parameters
    ----------
    *losses : PureDP, ApproxDP or ZCDP
        The losses of the composed mechanisms. zCDP cannot be mixed with
        (ε, δ)-DP losses: convert explicitly first.

    Returns
    -------
    loss : PureDP, ApproxDP or ZCDP
        The composed loss.

    Examples
    --------
    >>> from skuserdp.privacy import compose, PureDP, ApproxDP, ZCDP
    >>> compose(PureDP(0.5), PureDP(0.25))
    PureDP(epsilon=0.75)
    >>> compose(PureDP(0.5), ApproxDP(0.5, 1e-6))
    ApproxDP(epsilon=1.0, delta=1e-06)
    >>> compose(ZCDP(0.1), ZCDP(0.2)).rho
    0.30000000000000004
    """
    kinds = _kinds(losses)
    if kinds == {ZCDP}:
        return ZCDP(math.fsum(loss.rho for loss in losses))
    eps = math.fsum(loss.epsilon for loss in losses)
    if kinds == {PureDP}:
        return PureDP(eps)
    delta = math.fsum(getattr(loss, "delta", 0.0) for loss in losses)
    return ApproxDP(eps, min(delta, 1.0))


def compose_parallel(*losses):
    """Parallel composition over disjoint sets of users.

    Valid when the users are split into disjoint parts independently of the
    data and each mechanism sees only its part (plus earlier outputs): a user
    changes exactly one part, so the loss is the worst single loss.

    Parameters
    ----------
    *losses : PureDP, ApproxDP or ZCDP
        Losses of the mechanisms run on disjoint user sets.

    Returns
    -------
    loss : PureDP, ApproxDP or ZCDP
        The maximum of the losses (coordinate-wise for (ε, δ)).

    Examples
    --------
    >>> from skuserdp.privacy import compose_parallel, ApproxDP
    >>> compose_parallel(ApproxDP(1.0, 1e-7), ApproxDP(0.5, 1e-6))
    ApproxDP(epsilon=1.0, delta=1e-06)
    """
    kinds = _kinds(losses)
    if kinds == {ZCDP}:
        return ZCDP(max(loss.rho for loss in losses))
    eps = max(loss.epsilon for loss in losses)
    if kinds == {PureDP}:
        return PureDP(eps)
    return ApproxDP(eps, max(getattr(loss, "delta", 0.0) for loss in losses))


def compose_advanced(loss, k, delta_slack):
    """Advanced composition of ``k`` copies of an (ε, δ)-DP mechanism.

    The exact Dwork–Rothblum–Vadhan bound [DRV10]_ (Theorem 3.20 of [DR14]_):
    ``ε' = ε √(2k ln(1/δ')) + k ε (e^ε − 1)`` and ``δ'' = kδ + δ'``. The bound
    is returned as is; for large ε it exceeds basic composition ``kε``, so
    callers wanting the best of both take the smaller of the two.

    Parameters
    ----------
    loss : PureDP or ApproxDP
        Loss of each composed mechanism.
    k : int
        Number of adaptively composed mechanisms, ``>= 1``.
    delta_slack : float
        The extra failure probability δ' in ``(0, 1)``.

    Returns
    -------
    loss : ApproxDP
        The composed guarantee.

    Examples
    --------
    >>> from skuserdp.privacy import compose_advanced, PureDP
    >>> round(compose_advanced(PureDP(0.1), 100, 1e-6).epsilon, 4)
    6.3082
    """
    if not isinstance(loss, (PureDP, ApproxDP)):
        raise TypeError("advanced composition takes a PureDP or ApproxDP loss.")
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}.")
    if not 0 < delta_slack < 1:
        raise ValueError(f"delta_slack must be in (0, 1), got {delta_slack!r}.")
    eps = loss.epsilon
    eps_total = eps * math.sqrt(2 * k * math.log(1 / delta_slack))
    eps_total += k * eps * math.expm1(eps)
    delta = k * getattr(loss, "delta", 0.0) + delta_slack
    return ApproxDP(eps_total, min(delta, 1.0))
