"""Privacy of repeat-and-select with a random number of runs (Papernot & Steinke).

A base mechanism ``Q`` (one run: a candidate drawn independently of the data,
fitted and scored privately) is run ``K`` times with fresh randomness, ``K``
drawn independently of the data, and only the best run's output is released
[PS22]_. With a ρ-zCDP run (Rényi curve ``ε(λ) = ρλ``) the selection is
Rényi-DP with the curve ``ε'(λ)`` below, for every order ``λ > 1``:

* ``K`` truncated negative binomial ``TNB(η, γ)`` (η = 0: logarithmic, η = 1:
  geometric), Theorem 2 of [PS22]_::

      ε'(λ) = ε(λ) + (1 + η)·min_{λ̂ ≥ 1} [(1 − 1/λ̂)·ε(λ̂) + ln(1/γ)/λ̂]
              + ln(E[K])/(λ − 1).

  For ``ε(λ̂) = ρλ̂`` the minimum is ``ρ(λ̂ − 1) + ln(1/γ)/λ̂``, at
  ``λ̂ = √(ln(1/γ)/ρ)`` when that is ``>= 1``: ``2√(ρ ln(1/γ)) − ρ``;
  otherwise at ``λ̂ = 1``: ``ln(1/γ)``.
* ``K`` Poisson(μ), Theorem 6 of [PS22]_::

      ε'(λ) = ε(λ) + μ·δ̂ + ln(μ)/(λ − 1),

  with ``δ̂`` the run's δ at ``ε̂ = ln(1 + 1/(λ − 1))``, here the optimal
  zCDP conversion [CKS20]_ (minimised over its orders) or, when smaller, the
  Bretagnolle–Huber bound ``√(1 − e^{−ρ})`` (the run's total variation).
  Both are valid for *every* ρ-zCDP run (not only an unsubsampled Gaussian).

These are the formulas of ``dp_accounting``'s
``_compute_rdp_repeat_and_select`` (``RepeatAndSelectDpEvent``), there on a
finite set of orders; here the inner minimum is in closed form and the outer
curve is monotone-enveloped (Rényi divergence grows with the order, so
``ε'(λ) <= min_{λ' >= λ} ε'(λ')`` holds too). The curve is converted to
(ε, δ) by :func:`~skuserdp.privacy.rdp_curve_epsilon` (the conversion of every
other Rényi curve of the package).

**Zero runs (Poisson).** ``K = 0`` has probability ``e^{−μ}``; the tuner then
redraws ``K`` (a zero-truncated Poisson). Conditioning on ``K >= 1`` keeps the
curve: the event ``K = 0`` outputs a fixed ⊥ with the same probability ``p``
under both neighbours, so with ``X = Σ_{o≠⊥} P(o)^λ Q(o)^{1−λ}`` the
conditioned divergence is ``ln((X − p)/(1 − p))/(λ − 1) <= ln(X)/(λ − 1)``
whenever ``X >= 1`` (and when ``X < 1`` its exponent is < 0 <= ε'(λ)).

References
----------
.. [PS22] N. Papernot and T. Steinke. Hyperparameter tuning with Renyi
   differential privacy. ICLR 2022 (arXiv:2110.03620), Theorems 2 and 6.
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020.
"""

import functools
import math

import numpy as np

from ._bisection import _largest
from ._budget import ZCDP, ApproxDP, _check_open_unit, _check_positive_finite
from ._conversion import rdp_curve_epsilon, zcdp_rho_for

__all__ = [
    "RUN_DISTRIBUTIONS",
    "run_distribution_shape",
    "tnb_mean",
    "tnb_gamma",
    "repeat_select_rdp",
    "repeat_select_privacy",
    "repeat_select_rho_for",
]

#: the named distributions of the number of runs and their shape η
#: (``inf``: Poisson)
RUN_DISTRIBUTIONS = {"logarithmic": 0.0, "geometric": 1.0, "poisson": math.inf}

# orders of the Poisson δ̂: log(α − 1) on a coarse grid, then refined
_U_COARSE = np.linspace(math.log(1e-8), math.log(1e8), 737)
_U_FINE = np.linspace(-1.0, 1.0, 401)


def run_distribution_shape(distribution):
    """The shape η of a distribution of the number of runs.

    Parameters
    ----------
    distribution : {"logarithmic", "geometric", "poisson"} or float
        A name of :data:`RUN_DISTRIBUTIONS`, or a shape η ``>= 0`` (``inf``:
        Poisson; else a truncated negative binomial).

    Returns
    -------
    shape : float

    Examples
    --------
    >>> from skuserdp.privacy import run_distribution_shape
    >>> run_distribution_shape("geometric"), run_distribution_shape(0.5)
    (1.0, 0.5)
    """
    if isinstance(distribution, str):
        if distribution not in RUN_DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of {sorted(RUN_DISTRIBUTIONS)} or a "
                f"shape >= 0, got {distribution!r}.")
        return RUN_DISTRIBUTIONS[distribution]
    shape = float(distribution)
    if not shape >= 0:
        raise ValueError(f"the shape must be >= 0, got {distribution!r}.")
    return shape


def _check_mean(mean):
    mean = float(mean)
    if not (math.isfinite(mean) and mean >= 1):
        raise ValueError(f"the mean number of runs must be a finite number >= 1, "
                         f"got {mean!r}.")
    return mean


def tnb_mean(gamma, shape):
    """Mean of the truncated negative binomial ``TNB(η, γ)``.

    ``P[K = k] ∝ binom(k + η − 1, k)·(1 − γ)^k`` for ``k >= 1``
    ([PS22]_, Definition 1); η = 0 is the logarithmic distribution
    (``P[K = k] ∝ (1 − γ)^k/k``) and η = 1 the geometric one.

    Parameters
    ----------
    gamma : float
        γ in ``(0, 1]``.
    shape : float
        η ``>= 0``, finite.

    Returns
    -------
    mean : float
        ``η(1/γ − 1)/(1 − γ^η)``; ``1/γ`` (η = 1); ``(1/γ − 1)/ln(1/γ)``
        (η = 0); 1 when γ = 1.

    Examples
    --------
    >>> from skuserdp.privacy import tnb_mean
    >>> tnb_mean(0.25, 1.0)
    4.0
    >>> round(tnb_mean(0.25, 0.0), 4)
    2.164
    """
    gamma, shape = float(gamma), float(shape)
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}.")
    if not (math.isfinite(shape) and shape >= 0):
        raise ValueError(f"shape must be finite and >= 0, got {shape!r}.")
    if gamma == 1:
        return 1.0
    if shape == 1:
        return 1.0 / gamma
    if shape == 0:
        return (1.0 / gamma - 1.0) / -math.log(gamma)
    return shape * (1.0 / gamma - 1.0) / -math.expm1(shape * math.log(gamma))


@functools.lru_cache(maxsize=256)
def tnb_gamma(shape, mean):
    """The γ of ``TNB(η, γ)`` with a given mean.

    Parameters
    ----------
    shape : float
        η ``>= 0``, finite.
    mean : float
        ``E[K] >= 1``.

    Returns
    -------
    gamma : float
        ``1/mean`` for η = 1; else the largest γ (bisection to a relative
        1e-15) with ``tnb_mean(γ, η) >= mean`` (the mean decreases in γ).
        The accounting uses ``tnb_mean`` of the γ returned, the exact mean of
        the distribution sampled.

    Examples
    --------
    >>> from skuserdp.privacy import tnb_gamma, tnb_mean
    >>> tnb_gamma(1.0, 8.0)
    0.125
    >>> g = tnb_gamma(0.0, 8.0)
    >>> tnb_mean(g, 0.0) >= 8.0 > tnb_mean(g * (1 + 1e-12), 0.0)
    True
    """
    shape, mean = float(shape), _check_mean(mean)
    if shape == 1:
        return 1.0 / mean
    if mean == 1:
        return 1.0
    # mean <= 2(η + 1)/γ, so γ <= 2(η + 1)/mean (dp_accounting's bracket)
    hi = min(1.0, 2.0 * (shape + 1.0) / mean)
    return _largest(lambda g: g > 0 and tnb_mean(g, shape) >= mean, hi,
                    lo=0.0)


def _tnb_constant(rho, shape, gamma):
    """``(1 + η)·min_{λ̂>=1}[ρ(λ̂ − 1) + ln(1/γ)/λ̂]`` in closed form."""
    log_inv_gamma = -math.log(gamma)
    if log_inv_gamma >= rho:  # the minimiser √(ln(1/γ)/ρ) is >= 1
        inner = 2.0 * math.sqrt(rho * log_inv_gamma) - rho
    else:
        inner = log_inv_gamma
    return (1.0 + shape) * inner


def _poisson_base_delta(rho, eps_hat):
    """δ̂ of a ρ-zCDP run at ε̂: the optimal conversion [CKS20, Cor. 13],
    minimised over the orders (a coarse then a fine grid of log(α − 1); every
    order gives a valid δ), or Bretagnolle–Huber's √(1 − e^{−ρ})."""
    def log_delta(u):
        am1 = np.exp(u)
        alpha = 1.0 + am1
        return (am1 * (alpha * rho - eps_hat) - u
                - alpha * np.log1p(1.0 / am1))

    coarse = log_delta(_U_COARSE)
    i = int(np.argmin(coarse))
    step = _U_COARSE[1] - _U_COARSE[0]
    fine = log_delta(_U_COARSE[i] + step * _U_FINE)
    best = min(float(coarse[i]), float(np.min(fine)))
    bh = 0.5 * math.log(-math.expm1(-rho)) if rho > 0 else -math.inf
    return math.exp(min(best, bh, 0.0))


def _as_rho(run_loss):
    if isinstance(run_loss, ZCDP):
        return run_loss.rho
    if isinstance(run_loss, bool) or not isinstance(run_loss, (int, float)):
        raise TypeError("repeat-and-select accounting needs a zCDP run (a ZCDP "
                        f"loss or its rho), got {run_loss!r}.")
    return ZCDP(run_loss).rho


def repeat_select_rdp(run_loss, mean, distribution="geometric"):
    """Rényi curve of the best of a random number of ρ-zCDP runs [PS22]_.

    Parameters
    ----------
    run_loss : ZCDP or float
        ρ of one run (its Rényi curve is ``ε(λ) = ρλ``).
    mean : float
        ``E[K]`` for a truncated negative binomial (its γ from
        :func:`tnb_gamma`); ``μ`` for Poisson.
    distribution : {"logarithmic", "geometric", "poisson"} or float
        The distribution of ``K`` (:func:`run_distribution_shape`).

    Returns
    -------
    curve : callable
        ``λ ↦ ε'(λ)`` for ``λ > 1`` (module docstring); for a truncated
        negative binomial it also maps an array of orders elementwise.

    Examples
    --------
    >>> from skuserdp.privacy import repeat_select_rdp
    >>> curve = repeat_select_rdp(0.01, 1.0, "geometric")  # one run
    >>> curve(5.0)
    0.05
    >>> curve = repeat_select_rdp(0.01, 8.0, "geometric")
    >>> round(curve(20.0), 4)  # 0.2 + ln 8/19 + 2(2√(0.01 ln 8) − 0.01)
    0.8663
    """
    rho = _as_rho(run_loss)
    shape = run_distribution_shape(distribution)
    mean = _check_mean(mean)
    if math.isinf(shape):
        log_mu = math.log(mean)

        def poisson(lam):
            lam = float(lam)
            eps_hat = math.log1p(1.0 / (lam - 1.0))
            return (rho * lam + mean * _poisson_base_delta(rho, eps_hat)
                    + log_mu / (lam - 1.0))
        return poisson
    gamma = tnb_gamma(shape, mean)
    log_mean = math.log(tnb_mean(gamma, shape))
    const = _tnb_constant(rho, shape, gamma)
    # ρλ + ln(E[K])/(λ − 1) is convex in λ > 1, least at 1 + √(ln E[K]/ρ):
    # below it, the value there bounds the curve (monotone in the order)
    knee = 1.0 + math.sqrt(log_mean / rho) if rho > 0 else math.inf

    def tnb(lam):  # (also elementwise on an array of orders)
        if math.isinf(knee):  # ρ = 0: the curve tends to its constant
            return const + 0.0 * np.asarray(lam, dtype=float)
        lam = np.maximum(lam, knee)
        out = rho * lam + log_mean / (lam - 1.0) + const
        return float(out) if np.ndim(out) == 0 else out
    return tnb


def repeat_select_privacy(run_loss, mean, distribution="geometric", *, delta):
    """(ε, δ) of the best of a random number of ρ-zCDP runs [PS22]_.

    Parameters
    ----------
    run_loss : ZCDP or float
        ρ of one run.
    mean : float
        ``E[K]`` (truncated negative binomial) or μ (Poisson), ``>= 1``.
    distribution : {"logarithmic", "geometric", "poisson"} or float
        The distribution of ``K``.
    delta : float
        Target δ in ``(0, 1)``.

    Returns
    -------
    loss : ApproxDP
        ``(ε, δ)`` with ε from :func:`~skuserdp.privacy.rdp_curve_epsilon` of
        :func:`repeat_select_rdp`.

    Examples
    --------
    >>> from skuserdp.privacy import repeat_select_privacy, zcdp_to_approx_dp
    >>> loss = repeat_select_privacy(0.01, 16.0, "geometric", delta=1e-6)
    >>> round(loss.epsilon, 3)
    1.349
    >>> round(zcdp_to_approx_dp(0.01, 1e-6).epsilon, 3)  # a single run
    0.622
    """
    delta = float(delta)
    _check_open_unit("delta", delta)
    curve = repeat_select_rdp(run_loss, mean, distribution)
    return ApproxDP(rdp_curve_epsilon(curve, delta), delta)


@functools.lru_cache(maxsize=256)
def _rho_for(epsilon, delta, mean, shape):
    def fits(rho):
        return repeat_select_privacy(rho, mean, shape, delta=delta).epsilon <= epsilon

    # a repeated run costs at least one run: the single run's ρ bounds it
    hi = zcdp_rho_for(epsilon, delta)
    rho = _largest(fits, hi, lo=0.0)
    if rho <= 0 or not fits(rho):
        raise ValueError(
            f"no run budget meets epsilon={epsilon} at delta={delta} with "
            f"{mean} runs on average: the number of runs alone costs more.")
    return rho


def repeat_select_rho_for(epsilon, delta, mean, distribution="geometric"):
    """Largest ρ per run whose repeat-and-select meets (ε, δ).

    Parameters
    ----------
    epsilon : float
        Target ε ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.
    mean : float
        ``E[K]`` (truncated negative binomial) or μ (Poisson), ``>= 1``.
    distribution : {"logarithmic", "geometric", "poisson"} or float
        The distribution of ``K``.

    Returns
    -------
    rho : float
        ``repeat_select_privacy(rho, ...).epsilon <= epsilon`` (checked),
        within a relative 1e-15 of the largest such ρ (bisection).

    Raises
    ------
    ValueError
        When no ρ > 0 meets the target.

    Examples
    --------
    >>> from skuserdp.privacy import repeat_select_rho_for, zcdp_rho_for
    >>> rho = repeat_select_rho_for(1.0, 1e-5, 16.0, "geometric")
    >>> round(rho / (zcdp_rho_for(1.0, 1e-5) / 8), 2)  # against an 8-way split
    1.61
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    delta = float(delta)
    _check_open_unit("delta", delta)
    return _rho_for(epsilon, delta, _check_mean(mean),
                    run_distribution_shape(distribution))
