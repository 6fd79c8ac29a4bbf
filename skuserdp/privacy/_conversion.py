"""Conversions between privacy notions.

* pure ε-DP ⇒ (ε²/2)-zCDP [BS16]_ (Proposition 1.4); an ε-DP mechanism of
  bounded range such as the exponential mechanism is (ε²/8)-zCDP [CR21]_.
* ρ-zCDP ⇒ (ε, δ)-DP with the optimal conversion of Canonne, Kamath and
  Steinke [CKS20]_ (Corollary 13), or the simpler
  ``ε = ρ + 2√(ρ ln(1/δ))`` of [BS16]_ (Proposition 1.3).
* pure ε-DP ⇒ (ε, 0)-DP.

The optimal conversion is an infimum over Rényi orders α > 1. Every order
gives a valid bound, so the value returned at the numerically best order is
always a valid (never optimistic) guarantee.

References
----------
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016.
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020.
.. [CR21] M. Cesar and R. Rogers. Bounding, concentrating, and truncating:
   unifying privacy loss composition for data analytics. ALT 2021.
"""

import functools
import math

import numpy as np
from scipy.optimize import minimize_scalar

from ._budget import ZCDP, ApproxDP, PureDP, _check_open_unit

__all__ = [
    "pure_to_zcdp",
    "pure_to_approx_dp",
    "bounded_range_epsilon",
    "zcdp_to_approx_dp",
    "zcdp_delta",
    "zcdp_rho_for",
    "rdp_curve_epsilon",
    "report_spend",
]

# Search range for log(α - 1); α from 1 + 1e-8 to 1 + 1e8 covers every
# practically relevant (ρ, δ).
_LOG_AM1_BOUNDS = (math.log(1e-8), math.log(1e8))
_GRID = np.linspace(*_LOG_AM1_BOUNDS, 161)


def _as_rho(loss):
    if isinstance(loss, ZCDP):
        return loss.rho
    return ZCDP(loss).rho


def _as_eps(loss):
    if isinstance(loss, PureDP):
        return loss.epsilon
    return PureDP(loss).epsilon


def pure_to_zcdp(epsilon, *, bounded_range=False):
    """Convert pure ε-DP to zCDP.

    Parameters
    ----------
    epsilon : float or PureDP
        The pure privacy loss.
    bounded_range : bool, default=False
        If True, the mechanism is known to have ε-bounded range (e.g. the
        exponential mechanism), which gives ρ = ε²/8 [CR21]_; otherwise
        ρ = ε²/2 [BS16]_.

    Returns
    -------
    loss : ZCDP
        The zCDP guarantee.

    Examples
    --------
    >>> from skuserdp.privacy import pure_to_zcdp
    >>> pure_to_zcdp(1.0)
    ZCDP(rho=0.5)
    >>> pure_to_zcdp(1.0, bounded_range=True)
    ZCDP(rho=0.125)
    """
    eps = _as_eps(epsilon)
    return ZCDP(eps * eps / (8.0 if bounded_range else 2.0))


def bounded_range_epsilon(rho):
    """The ε at which a bounded-range mechanism (exponential mechanism) is ρ-zCDP.

    Inverse of ``pure_to_zcdp(ε, bounded_range=True)``: ``ε = √(8ρ)`` [CR21]_.

    Parameters
    ----------
    rho : float or ZCDP
        The zCDP budget for the mechanism.

    Returns
    -------
    epsilon : float
        The largest ε whose ε-bounded-range mechanism is ρ-zCDP.

    Examples
    --------
    >>> from skuserdp.privacy import bounded_range_epsilon
    >>> bounded_range_epsilon(0.125)
    1.0
    """
    return math.sqrt(8.0 * _as_rho(rho))


def pure_to_approx_dp(epsilon):
    """View pure ε-DP as (ε, 0)-DP.

    Parameters
    ----------
    epsilon : float or PureDP
        The pure privacy loss.

    Returns
    -------
    loss : ApproxDP
        ``ApproxDP(epsilon, 0.0)``.

    Examples
    --------
    >>> from skuserdp.privacy import pure_to_approx_dp
    >>> pure_to_approx_dp(0.5)
    ApproxDP(epsilon=0.5, delta=0.0)
    """
    return ApproxDP(_as_eps(epsilon), 0.0)


# ln(1 − 1/α) = −ln(1 + 1/(α − 1)) and ln α = ln(1 + (α − 1)) are computed with
# log1p: for large α, ln(am1/α) would lose all but ~1e-16 absolute, which is
# 1e-7 of an ε near 1e-9 and made the conversion non-monotone in ρ there (a
# smaller ρ reported a larger ε, above the budget it was calibrated for).
def _eps_at_order(rho, log_inv_delta, log_am1):
    # ε(α) = αρ + (ln(1/δ) − ln α)/(α − 1) + ln(1 − 1/α)        [CKS20, Cor. 13]
    am1 = math.exp(log_am1)
    alpha = 1.0 + am1
    return (alpha * rho + (log_inv_delta - math.log1p(am1)) / am1
            - math.log1p(1.0 / am1))


def _log_delta_at_order(rho, eps, log_am1):
    # ln δ(α) = (α−1)(αρ − ε) − ln(α − 1) + α ln(1 − 1/α)       [CKS20, Cor. 13]
    am1 = math.exp(log_am1)
    alpha = 1.0 + am1
    return am1 * (alpha * rho - eps) - log_am1 - alpha * math.log1p(1.0 / am1)


def _minimise_over_orders(fun):
    values = [fun(u) for u in _GRID]
    i = int(np.argmin(values))
    lo = _GRID[max(i - 1, 0)]
    hi = _GRID[min(i + 1, len(_GRID) - 1)]
    best_u, best = _GRID[i], values[i]
    if hi > lo:
        res = minimize_scalar(fun, bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-10})
        if res.fun < best:
            best_u, best = float(res.x), float(res.fun)
    return best, best_u


def rdp_curve_epsilon(curve, delta):
    """The ε at δ of a Rényi-DP curve, optimised over the order α.

    ``ε = inf_α curve(α) + (ln(1/δ) − ln α)/(α − 1) + ln(1 − 1/α)``
    [CKS20]_ (Proposition 12, the conversion of (α, curve(α))-RDP; with
    ``curve(α) = αρ`` it is :func:`zcdp_to_approx_dp`). Every order gives a
    valid bound, so the numerically best one found is a valid guarantee.

    Parameters
    ----------
    curve : callable
        ``α ↦ ε(α)``, a Rényi-DP bound holding at every order ``α > 1``.
    delta : float
        Target δ in ``(0, 1)``.

    Returns
    -------
    epsilon : float
        The smallest ε found; ``(ε, δ)``-DP holds.

    Examples
    --------
    >>> from skuserdp.privacy import rdp_curve_epsilon, zcdp_to_approx_dp
    >>> # a ρ-zCDP curve gives the zCDP conversion; a pure ε adds ε at most
    >>> a = rdp_curve_epsilon(lambda alpha: 0.01 * alpha, 1e-6)
    >>> bool(abs(a - zcdp_to_approx_dp(0.01, 1e-6).epsilon) < 1e-9)
    True
    >>> rdp_curve_epsilon(lambda alpha: 0.5 + 0.01 * alpha, 1e-6) <= a + 0.5
    True
    """
    delta = float(delta)
    _check_open_unit("delta", delta)
    log_inv_delta = -math.log(delta)

    def eps_at(log_am1):
        am1 = math.exp(log_am1)
        alpha = 1.0 + am1
        return (curve(alpha) + (log_inv_delta - math.log1p(am1)) / am1
                - math.log1p(1.0 / am1))

    eps, _ = _minimise_over_orders(eps_at)
    return max(eps, 0.0)


def zcdp_to_approx_dp(rho, delta, *, method="optimal"):
    """Convert ρ-zCDP to (ε, δ)-DP.

    Parameters
    ----------
    rho : float or ZCDP
        The zCDP guarantee.
    delta : float
        Target δ in ``(0, 1)``.
    method : {"optimal", "bun_steinke"}, default="optimal"
        ``"optimal"`` is Corollary 13 of [CKS20]_ (an infimum over Rényi
        orders); ``"bun_steinke"`` is ``ε = ρ + 2√(ρ ln(1/δ))`` [BS16]_.

    Returns
    -------
    loss : ApproxDP
        An (ε, δ) guarantee implied by ρ-zCDP.

    Examples
    --------
    >>> from skuserdp.privacy import zcdp_to_approx_dp
    >>> round(zcdp_to_approx_dp(0.00873, 1e-6).epsilon, 3)
    0.578
    >>> round(zcdp_to_approx_dp(0.00873, 1e-6, method="bun_steinke").epsilon, 3)
    0.703
    """
    rho = _as_rho(rho)
    delta = float(delta)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) to convert zCDP, got {delta!r}.")
    if rho == 0:
        return ApproxDP(0.0, delta)
    log_inv_delta = -math.log(delta)
    if method == "bun_steinke":
        eps = rho + 2 * math.sqrt(rho * log_inv_delta)
    elif method == "optimal":
        eps, _ = _minimise_over_orders(
            lambda u: _eps_at_order(rho, log_inv_delta, u))
        # The optimal bound is never worse than Bun–Steinke's; keep the best.
        eps = min(eps, rho + 2 * math.sqrt(rho * log_inv_delta))
    else:
        raise ValueError(f"method must be 'optimal' or 'bun_steinke', got {method!r}.")
    return ApproxDP(max(eps, 0.0), delta)


def zcdp_delta(rho, epsilon):
    """Smallest δ (optimal conversion) such that ρ-zCDP implies (ε, δ)-DP.

    Parameters
    ----------
    rho : float or ZCDP
        The zCDP guarantee.
    epsilon : float
        Target ε ``>= 0``.

    Returns
    -------
    delta : float
        δ from Corollary 13 of [CKS20]_, capped at 1.

    Examples
    --------
    >>> from skuserdp.privacy import zcdp_delta
    >>> zcdp_delta(0.00873, 0.5784) <= 1e-6
    True
    """
    rho = _as_rho(rho)
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}.")
    if rho == 0:
        return 0.0
    log_delta, _ = _minimise_over_orders(lambda u: _log_delta_at_order(rho, epsilon, u))
    return float(min(1.0, math.exp(min(log_delta, 0.0))))


@functools.lru_cache(maxsize=256)
def _rho_for_cached(epsilon, delta, method):
    return _rho_for(epsilon, delta, method)


def zcdp_rho_for(epsilon, delta, *, method="optimal"):
    """Largest ρ whose conversion gives at most (ε, δ)-DP.

    Parameters
    ----------
    epsilon : float
        Target ε ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.
    method : {"optimal", "bun_steinke"}, default="optimal"
        The conversion used, as in :func:`zcdp_to_approx_dp`.

    Returns
    -------
    rho : float
        A ρ such that ``zcdp_to_approx_dp(rho, delta, method=method).epsilon
        <= epsilon`` (checked); within a relative 1e-9 of the largest such ρ.

    Examples
    --------
    >>> from skuserdp.privacy import zcdp_rho_for, zcdp_to_approx_dp
    >>> rho = zcdp_rho_for(1.0, 1e-6)
    >>> zcdp_to_approx_dp(rho, 1e-6).epsilon <= 1.0
    True
    """
    return _rho_for_cached(float(epsilon), float(delta), method)


def _rho_for(epsilon, delta, method):
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    log_inv_delta = -math.log(delta) if 0 < delta < 1 else None
    if log_inv_delta is None:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    # Bun–Steinke's ρ = (√(ε + L) − √L)², written without the cancellation
    # that cost it all precision at tiny ε (ε = 1e-11: 1e-3 relative).
    rho_bs = (epsilon / (math.sqrt(epsilon + log_inv_delta)
                         + math.sqrt(log_inv_delta))) ** 2
    if method == "bun_steinke":
        rho = rho_bs
        while rho > 0 and zcdp_to_approx_dp(rho, delta, method=method).epsilon > (
            epsilon
        ):
            rho = math.nextafter(rho, 0.0)
        return rho
    if method != "optimal":
        raise ValueError(f"method must be 'optimal' or 'bun_steinke', got {method!r}.")

    def eps_of(r):
        return zcdp_to_approx_dp(r, delta, method="optimal").epsilon

    # Bun–Steinke's ρ is feasible for the (tighter) optimal conversion (in
    # exact arithmetic; checked, as the bisection keeps lo feasible).
    lo = rho_bs
    while lo > 0 and eps_of(lo) > epsilon:
        lo *= 1.0 - 1e-9
    hi = 2 * lo
    while eps_of(hi) <= epsilon:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        if hi - lo <= 1e-10 * lo:
            break
        mid = 0.5 * (lo + hi)
        if eps_of(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def report_spend(loss, delta):
    """Express a privacy loss as the (ε, δ, ρ) triple estimators report.

    Parameters
    ----------
    loss : PureDP, ApproxDP or ZCDP
        The (composed) loss of a fit.
    delta : float
        The δ at which a zCDP loss is converted (optimal conversion); ignored
        for pure and approximate losses.

    Returns
    -------
    epsilon, delta, rho : float, float, float or None
        ``rho`` is the zCDP parameter when the loss implies one (ρ itself, or
        ε²/2 for pure DP), else ``None``.

    Examples
    --------
    >>> from skuserdp.privacy import PureDP
    >>> from skuserdp.privacy import report_spend
    >>> report_spend(PureDP(1.0), 0.0)
    (1.0, 0.0, 0.5)
    """
    if isinstance(loss, PureDP):
        return loss.epsilon, 0.0, pure_to_zcdp(loss).rho
    if isinstance(loss, ApproxDP):
        return loss.epsilon, loss.delta, None
    if isinstance(loss, ZCDP):
        if delta <= 0:
            raise ValueError("a zCDP loss needs delta > 0 to be reported as (ε, δ).")
        return zcdp_to_approx_dp(loss, delta).epsilon, float(delta), loss.rho
    raise TypeError(f"unknown privacy loss {loss!r}.")
