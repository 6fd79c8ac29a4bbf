"""Noise calibration and the privacy maps of additive-noise mechanisms.

A *privacy map* turns a mechanism's noise parameter and the sensitivity of
the released statistic into a privacy loss; *calibration* inverts it for a
target budget. Both directions live here and only here.

* Laplace / discrete Laplace with scale b and ℓ1 sensitivity Δ₁: pure
  (Δ₁/b)-DP. For the discrete Laplace this needs an integer-valued statistic
  (so that neighbouring outputs differ by an integer vector).
* Gaussian / discrete Gaussian with variance σ² per coordinate and ℓ2
  sensitivity Δ₂: (Δ₂²/(2σ²))-zCDP ([BS16]_ Prop. 1.6; for the discrete
  Gaussian on integer-valued statistics, [CKS20]_ Theorem 14).
* The analytic Gaussian mechanism [BW18]_ (Theorem 8): the continuous Gaussian
  is (ε, δ)-DP iff ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ``. It is the
  exact privacy profile of the *continuous* Gaussian and is used for analysis
  and for the continuous path; lattice releases are accounted in zCDP.
* The classical Gaussian mechanism ``σ = Δ √(2 ln(1.25/δ))/ε`` of [DR14]_
  (Theorem A.1), valid only for ε < 1, kept for ``calibration="paper"``.

References
----------
.. [BW18] B. Balle and Y.-X. Wang. Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising.
   ICML 2018.
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy. TCC 2016.
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020.
.. [DR14] C. Dwork and A. Roth. The Algorithmic Foundations of Differential
   Privacy, 2014.
"""

import math

from scipy.special import log_ndtr, ndtr

from ._budget import ZCDP, PureDP
from ._budget import _check_nonneg_finite as _nonneg
from ._budget import _check_open_unit
from ._budget import _check_positive_finite as _positive
from ._conversion import zcdp_rho_for

__all__ = [
    "laplace_privacy",
    "laplace_scale",
    "gaussian_privacy",
    "gaussian_sigma_for_rho",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_sigma",
]


def _gaussian_target(sensitivity, epsilon, delta):
    """The checked ``(Δ, ε, δ)`` of an (ε, δ) calibration of Gaussian noise."""
    return (_positive("sensitivity", sensitivity), _positive("epsilon", epsilon),
            _check_open_unit("delta", float(delta)))


def laplace_privacy(sensitivity, scale):
    """Privacy map of (discrete) Laplace noise: pure (Δ₁/b)-DP.

    Parameters
    ----------
    sensitivity : float
        ℓ1 sensitivity Δ₁ of the released statistic (``>= 0``), in the units
        of the noise.
    scale : float
        Scale b of the Laplace noise (density ∝ exp(−|x|/b)), ``> 0``.

    Returns
    -------
    loss : PureDP

    Examples
    --------
    >>> from skuserdp.privacy import laplace_privacy
    >>> laplace_privacy(2.0, 4.0)
    PureDP(epsilon=0.5)
    """
    return PureDP(_nonneg("sensitivity", sensitivity) / _positive("scale", scale))


def laplace_scale(sensitivity, epsilon):
    """Laplace scale b = Δ₁/ε for pure ε-DP.

    Parameters
    ----------
    sensitivity : float
        ℓ1 sensitivity, ``> 0``.
    epsilon : float
        Target ε, ``> 0``.

    Returns
    -------
    scale : float

    Examples
    --------
    >>> from skuserdp.privacy import laplace_scale
    >>> laplace_scale(2.0, 0.5)
    4.0
    """
    return _positive("sensitivity", sensitivity) / _positive("epsilon", epsilon)


def gaussian_privacy(sensitivity, sigma):
    """Privacy map of (discrete) Gaussian noise: (Δ₂²/(2σ²))-zCDP.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ₂ (``>= 0``), in the units of the noise.
    sigma : float
        Standard deviation parameter σ of the noise per coordinate, ``> 0``.

    Returns
    -------
    loss : ZCDP

    Examples
    --------
    >>> from skuserdp.privacy import gaussian_privacy
    >>> gaussian_privacy(1.0, 2.0)
    ZCDP(rho=0.125)
    """
    delta2 = _nonneg("sensitivity", sensitivity)
    sigma = _positive("sigma", sigma)
    return ZCDP(delta2 * delta2 / (2 * sigma * sigma))


def gaussian_sigma_for_rho(sensitivity, rho):
    """σ = Δ₂/√(2ρ): the Gaussian noise giving exactly ρ-zCDP.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity, ``> 0``.
    rho : float
        Target ρ, ``> 0``.

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> from skuserdp.privacy import gaussian_sigma_for_rho
    >>> gaussian_sigma_for_rho(1.0, 0.125)
    2.0
    """
    return _positive("sensitivity", sensitivity) / math.sqrt(2 * _positive("rho", rho))


def analytic_gaussian_delta(sensitivity, sigma, epsilon):
    """Exact δ(ε) of the continuous Gaussian mechanism [BW18]_ (Theorem 8).

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ, ``> 0``.
    sigma : float
        Noise standard deviation, ``> 0``.
    epsilon : float
        ε ``>= 0``.

    Returns
    -------
    delta : float
        ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)``.

    Examples
    --------
    >>> from skuserdp.privacy import analytic_gaussian_delta
    >>> round(analytic_gaussian_delta(1.0, 1.0, 0.0), 4)  # TV of N(0,1), N(1,1)
    0.3829
    """
    d = _positive("sensitivity", sensitivity)
    s = _positive("sigma", sigma)
    eps = _nonneg("epsilon", epsilon)
    a, b = d / (2 * s), eps * s / d
    value = float(ndtr(a - b) - math.exp(eps + float(log_ndtr(-a - b))))
    return max(value, 0.0)


def analytic_gaussian_sigma(sensitivity, epsilon, delta):
    """Smallest σ for which the continuous Gaussian is (ε, δ)-DP [BW18]_.

    Found by bisection on the exact δ(σ) of :func:`analytic_gaussian_delta`;
    the returned σ is on the feasible side (``δ(σ) <= delta``) and within a
    relative 1e-12 of the optimum.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ, ``> 0``.
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> from skuserdp.privacy import analytic_gaussian_sigma
    >>> round(analytic_gaussian_sigma(4.0, 1.0, 1e-6), 2)
    16.9
    """
    d, eps, delta = _gaussian_target(sensitivity, epsilon, delta)
    lo, hi = d * 1e-3, d
    while analytic_gaussian_delta(d, lo, eps) <= delta:
        lo /= 2
    while analytic_gaussian_delta(d, hi, eps) > delta:
        hi *= 2
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if analytic_gaussian_delta(d, mid, eps) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def classical_gaussian_sigma(sensitivity, epsilon, delta):
    """Classical Gaussian mechanism σ = Δ √(2 ln(1.25/δ))/ε [DR14]_.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ, ``> 0``.
    epsilon : float
        Target ε in ``(0, 1)``: the theorem is proven only for ε < 1.
    delta : float
        Target δ in ``(0, 1)``.

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> from skuserdp.privacy import classical_gaussian_sigma
    >>> round(classical_gaussian_sigma(1.0, 0.5, 1e-5), 3)
    9.69
    """
    d, eps, delta = _gaussian_target(sensitivity, epsilon, delta)
    if eps >= 1:
        raise ValueError(
            "the classical Gaussian mechanism (Dwork & Roth 2014, Thm A.1) is proven "
            f"only for epsilon < 1, got {eps!r}; use calibration='tight'."
        )
    return d * math.sqrt(2 * math.log(1.25 / delta)) / eps


def gaussian_sigma(sensitivity, epsilon, delta, *, calibration="tight"):
    """Gaussian noise σ for a target (ε, δ), by calibration rule.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ, ``> 0``.
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.
    calibration : {"tight", "analytic", "paper"}, default="tight"
        ``"tight"``: the σ whose zCDP guarantee ``Δ²/(2σ²)`` converts to
        (ε, δ) with the optimal conversion — valid for the discrete Gaussian
        and composable; ``"analytic"``: the analytic Gaussian mechanism (valid
        for continuous Gaussian noise only); ``"paper"``: the classical
        mechanism (ε < 1 only).

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> from skuserdp.privacy import gaussian_sigma
    >>> round(gaussian_sigma(4.0, 1.0, 1e-6, calibration="analytic"), 2)
    16.9
    >>> round(gaussian_sigma(4.0, 1.0, 1e-6), 2)
    18.12
    """
    if calibration == "tight":
        return gaussian_sigma_for_rho(sensitivity, zcdp_rho_for(epsilon, delta))
    if calibration == "analytic":
        return analytic_gaussian_sigma(sensitivity, epsilon, delta)
    if calibration == "paper":
        return classical_gaussian_sigma(sensitivity, epsilon, delta)
    raise ValueError(
        f"calibration must be 'tight', 'analytic' or 'paper', got {calibration!r}."
    )
