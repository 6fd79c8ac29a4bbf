"""Budget of learning public bounds privately (issue 15).

When an estimator is asked for ``bounds="auto"`` it spends a public share of
its budget on ``n_releases`` exponential-mechanism releases (each ε₀-DP and
ε₀-bounded range, hence ε₀²/8-zCDP) before its own release. This module is
the only place that turns (ε, δ, share) into ε₀, the loss of that step and
what is left for the estimator:

* an estimator that accounts in zCDP (δ > 0): the target (ε, δ) becomes
  ``ρ = zcdp_rho_for(ε, δ)``; the bounds step gets ``share·ρ`` split evenly
  over its releases; the estimator plans with the ε that ``(1 − share)·ρ``
  reaches at the same δ (:func:`~skuserdp.privacy.split_zcdp`);
* any other estimator (pure ε-DP or (ε, δ)-DP): basic composition, the
  bounds step gets ``share·ε`` split evenly and the estimator ``(1 − share)·ε``
  at the same δ.

Both parts are shrunk by a relative ``4·k`` machine epsilons (as
:func:`~skuserdp.privacy.split_zcdp_shares` does) so that composing them in
floating point never exceeds the target.
"""

import math

import numpy as np

from ._budget import ZCDP, PureDP
from ._composition import compose, split_zcdp
from ._conversion import bounded_range_epsilon, pure_to_zcdp

__all__ = ["split_for_public_bounds"]

_SLACK = 1.0 - 8.0 * float(np.finfo(float).eps)


def split_for_public_bounds(epsilon, delta, share, n_releases, *, zcdp):
    """Budget of a private-bounds step and the budget left for the estimator.

    Parameters
    ----------
    epsilon : float
        The estimator's total ε, ``> 0``.
    delta : float
        The estimator's total δ; ``zcdp=True`` needs ``0 < δ < 1``.
    share : float
        Public fraction in ``(0, 1)`` of the budget spent on the bounds.
    n_releases : int
        Number of ε₀-DP bounded-range releases of the bounds step, ``>= 1``.
    zcdp : bool
        Whether the estimator's own release is accounted in zCDP.

    Returns
    -------
    release_epsilon : float
        ε₀ of each release.
    loss : ZCDP or PureDP
        The loss of the whole bounds step (all releases composed).
    rest_epsilon, rest_delta : float
        The budget the estimator plans with; composing ``loss`` with the
        estimator's loss (zCDP with zCDP, pure with pure or approximate)
        stays within (``epsilon``, ``delta``).

    Examples
    --------
    >>> from skuserdp.privacy import split_for_public_bounds
    >>> eps0, loss, rest_eps, rest_delta = split_for_public_bounds(
    ...     1.0, 0.0, 0.1, 4, zcdp=False)
    >>> round(eps0, 6), round(loss.epsilon, 6), round(rest_eps, 6), rest_delta
    (0.025, 0.1, 0.9, 0.0)
    >>> eps0, loss, rest_eps, _ = split_for_public_bounds(1.0, 1e-6, 0.1, 6,
    ...                                                   zcdp=True)
    >>> type(loss).__name__, rest_eps < 1.0
    ('ZCDP', True)
    """
    epsilon = float(epsilon)
    delta = float(delta)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1), got {share!r}.")
    n_releases = int(n_releases)
    if n_releases < 1:
        raise ValueError(f"n_releases must be >= 1, got {n_releases!r}.")
    if zcdp:
        first, rest_eps = split_zcdp(epsilon, delta, share)
        eps0 = bounded_range_epsilon(float(first.rho * _SLACK) / n_releases)
        loss = ZCDP(n_releases * pure_to_zcdp(eps0, bounded_range=True).rho)
        if loss.rho > first.rho:  # cannot happen with the slack above
            raise ArithmeticError("split_for_public_bounds: the releases exceed "
                                  "their share.")
        return eps0, loss, rest_eps, delta
    eps_bounds = float(share * epsilon * _SLACK)
    eps0 = eps_bounds / n_releases
    loss = compose(*([PureDP(eps0)] * n_releases))
    rest_eps = float((epsilon - eps_bounds) * _SLACK)
    if loss.epsilon + rest_eps > epsilon:  # cannot happen with the slack above
        raise ArithmeticError("split_for_public_bounds: the parts exceed the budget.")
    return eps0, loss, rest_eps, delta
