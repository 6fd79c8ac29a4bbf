"""Budget of learning public bounds privately.

When an estimator is asked for ``bounds="auto"`` it spends a public share of
its budget on ``n_releases`` exponential-mechanism releases (each ε₀-DP and
ε₀-bounded range, hence ε₀²/8-zCDP) before its own release. This module is
the only place that turns (ε, δ, share) into ε₀, the loss of that step and
what is left for the estimator:

* an estimator that accounts in zCDP (δ > 0): the target (ε, δ) becomes
  ``ρ = zcdp_rho_for(ε, δ)``; the bounds step gets ``share·ρ`` split evenly
  over its releases; the estimator plans with the ε that ``(1 − share)·ρ``
  reaches at the same δ (:func:`~skuserdp.privacy.split_zcdp`);
* an estimator whose own release is (ε, δ)-DP with δ > 0, when it asks for
  it (``approx=True``; WinsorizedMean): the bounds step is accounted in
  zCDP at ``(share·ε, share·δ)``, i.e. ``ρ_b = zcdp_rho_for(share·ε,
  share·δ)`` split evenly over its releases, and the estimator plans with
  ``((1 − share)·ε, (1 − share)·δ)``; the two compose by
  :func:`~skuserdp.privacy.compose_spend` (ρ_b converted at the δ the
  estimator leaves, ``share·δ``), within (ε, δ). Each release then gets an
  ε₀ that falls like ``1/√k`` for ``k`` releases instead of ``1/k`` (5×
  larger at 64 features, ε = 1, δ = 1e-6); used only when that ε₀ beats
  basic composition's (not for one feature, say);
* any other estimator (pure ε-DP, or (ε, δ)-DP without ``approx``): basic
  composition, the bounds step gets ``share·ε`` split evenly and the
  estimator ``(1 − share)·ε`` at the same δ.

:func:`split_for_log_ranges` does the same for the *one* joint release of
the log-histogram range finder (:mod:`skuserdp.mechanisms._log_ranges`):
it returns the budget of that release (``ZCDP`` for discrete Gaussian
noise, ``PureDP`` for discrete Laplace) instead of a per-release ε₀.

Both parts are shrunk by a relative ``4·k`` machine epsilons (as
:func:`~skuserdp.privacy.split_zcdp_shares` does) so that composing them in
floating point never exceeds the target.
"""

import math

import numpy as np

from ._budget import ZCDP, ApproxDP, PureDP, _check_open_unit
from ._composition import compose, compose_spend, split_zcdp
from ._conversion import bounded_range_epsilon, pure_to_zcdp, zcdp_rho_for

__all__ = ["split_for_public_bounds", "split_for_log_ranges"]

_SLACK = 1.0 - 8.0 * float(np.finfo(float).eps)


def split_for_public_bounds(epsilon, delta, share, n_releases, *, zcdp,
                            approx=False):
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
    approx : bool, default=False
        With ``zcdp=False`` and ``δ > 0``: the estimator's own release is
        (ε, δ)-DP and the bounds step is accounted in zCDP at a share of
        both ε and δ (module docstring). Ignored otherwise.

    Returns
    -------
    release_epsilon : float
        ε₀ of each release.
    loss : ZCDP or PureDP
        The loss of the whole bounds step (all releases composed).
    rest_epsilon, rest_delta : float
        The budget the estimator plans with; composing ``loss`` with the
        estimator's loss (zCDP with zCDP, pure with pure or approximate;
        zCDP with approximate by :func:`~skuserdp.privacy.compose_spend` at
        ``delta``) stays within (``epsilon``, ``delta``).

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
    _check_open_unit("share", share)
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
    if approx and delta > 0:
        eps_b, delta_b = float(share * epsilon * _SLACK), share * delta
        rho_b = zcdp_rho_for(eps_b, delta_b) * _SLACK
        eps0 = bounded_range_epsilon(rho_b / n_releases)
        loss = ZCDP(n_releases * pure_to_zcdp(eps0, bounded_range=True).rho)
        rest_eps, rest_delta = float((epsilon - eps_b) * _SLACK), delta - delta_b
        total = compose_spend([loss, ApproxDP(rest_eps, rest_delta)], delta)
        if total.epsilon > epsilon or total.delta > delta:  # cannot happen
            raise ArithmeticError("split_for_public_bounds: the parts exceed the "
                                  "budget.")
        # only when it beats basic composition (not for one or two releases)
        if eps0 > share * epsilon * _SLACK / n_releases:
            return eps0, loss, rest_eps, rest_delta
    eps_bounds = float(share * epsilon * _SLACK)
    eps0 = eps_bounds / n_releases
    loss = compose(*([PureDP(eps0)] * n_releases))
    rest_eps = float((epsilon - eps_bounds) * _SLACK)
    if loss.epsilon + rest_eps > epsilon:  # cannot happen with the slack above
        raise ArithmeticError("split_for_public_bounds: the parts exceed the budget.")
    return eps0, loss, rest_eps, delta


def split_for_log_ranges(epsilon, delta, share, *, zcdp, approx=False):
    """Budget of the joint log-histogram range release and what is left.

    One release (all columns' histograms together) takes a public ``share``
    of the fit's budget (module docstring):

    * ``zcdp=True`` (``0 < δ < 1``): ``ZCDP(share·ρ)`` with
      ``ρ = zcdp_rho_for(ε, δ)``; the estimator plans with the ε that
      ``(1 − share)·ρ`` reaches at δ (:func:`~skuserdp.privacy.split_zcdp`);
    * ``approx=True`` and ``δ > 0`` (an (ε, δ)-DP release such as
      WinsorizedMean's): ``ZCDP(zcdp_rho_for(share·ε, share·δ))``; the
      estimator plans with ``((1 − share)·ε, (1 − share)·δ)`` and the two
      compose by :func:`~skuserdp.privacy.compose_spend` at ``share·δ``
      within (ε, δ);
    * otherwise ``PureDP(share·ε)`` and ``(1 − share)·ε`` at the same δ
      (basic composition).

    Parameters
    ----------
    epsilon : float
        The estimator's total ε, ``> 0``.
    delta : float
        The estimator's total δ; ``zcdp=True`` needs ``0 < δ < 1``.
    share : float
        Public fraction in ``(0, 1)`` of the budget spent on the ranges.
    zcdp : bool
        Whether the estimator's own release is accounted in zCDP.
    approx : bool, default=False
        With ``zcdp=False`` and ``δ > 0``: account the ranges in zCDP at a
        share of both ε and δ. Ignored otherwise.

    Returns
    -------
    budget : ZCDP or PureDP
        The most the range release may spend (its noise is calibrated to it).
    rest_epsilon, rest_delta : float
        The budget the estimator plans with; composing ``budget`` with the
        estimator's loss stays within (``epsilon``, ``delta``).

    Examples
    --------
    >>> from skuserdp.privacy import split_for_log_ranges
    >>> budget, rest_eps, rest_delta = split_for_log_ranges(1.0, 0.0, 0.3,
    ...                                                     zcdp=False)
    >>> round(budget.epsilon, 6), round(rest_eps, 6), rest_delta
    (0.3, 0.7, 0.0)
    >>> budget, rest_eps, _ = split_for_log_ranges(1.0, 1e-6, 0.3, zcdp=True)
    >>> type(budget).__name__, rest_eps < 1.0
    ('ZCDP', True)
    """
    epsilon = float(epsilon)
    delta = float(delta)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    _check_open_unit("share", share)
    if zcdp:
        first, rest_eps = split_zcdp(epsilon, delta, share)
        return ZCDP(float(first.rho * _SLACK)), rest_eps, delta
    if approx and delta > 0:
        eps_b, delta_b = float(share * epsilon * _SLACK), share * delta
        budget = ZCDP(zcdp_rho_for(eps_b, delta_b) * _SLACK)
        rest_eps, rest_delta = float((epsilon - eps_b) * _SLACK), delta - delta_b
        total = compose_spend([budget, ApproxDP(rest_eps, rest_delta)], delta)
        if total.epsilon > epsilon or total.delta > delta:  # cannot happen
            raise ArithmeticError("split_for_log_ranges: the parts exceed the "
                                  "budget.")
        return budget, rest_eps, rest_delta
    eps_b = float(share * epsilon * _SLACK)
    rest_eps = float((epsilon - eps_b) * _SLACK)
    if eps_b + rest_eps > epsilon:  # cannot happen with the slack above
        raise ArithmeticError("split_for_log_ranges: the parts exceed the budget.")
    return PureDP(eps_b), rest_eps, delta
