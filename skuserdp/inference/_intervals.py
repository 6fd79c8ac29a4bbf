"""User-level confidence intervals: the post-processing shared by every estimator.

An estimator that offers intervals releases, inside its fit and charged to its
budget, the private statistics its interval needs (a private variance of the
users' means, a private cluster-robust "meat", or K private fits on disjoint
groups of users) and records an :class:`IntervalState`: every number the
interval is computed from, all of them released values or public plan
quantities. :meth:`ConfidenceIntervalMixin.conf_int` is then pure
post-processing: it never touches the data, so ``alpha`` may change after the
fit at no privacy cost (spec ``intervals_and_weights.md`` §1).

The two kinds of interval:

* **Wald** (means, sufficient-statistics regression): the estimate is
  ``θ + S + G + L + b`` with ``S`` the sampling error of the users
  (asymptotically normal, variance from a private release), ``G`` Gaussian
  privacy noise and ``L`` Laplace privacy noise of known laws from the public
  plan, and ``b`` a bias of known bound ``|b| ≤ B``. The half-width ``h``
  solves ``P(|N(B, s² + g²) + Laplace(ℓ)| ≤ h) = 1 − α``: the bias-aware
  critical value (Armstrong & Kolesár), which has coverage exactly ``1 − α``
  at the worst bias ``±B`` and more at any smaller one. With ``df`` the
  Gaussian part is a Student t (K group estimates: ``t_{K−1}``).
* **Percentile** (parametric bootstrap): ``B`` draws of the estimator's law,
  simulated from released values with randomness independent of the
  mechanisms'; the interval is their ``α/2`` and ``1 − α/2`` quantiles.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special, stats
from sklearn.utils.validation import check_is_fitted

from ..exceptions import AccuracyWarning
from ..utils._warnings import warn_at_caller

__all__ = ["IntervalState", "wald_half_width", "ConfidenceIntervalMixin"]


def _check_alpha(alpha):
    if isinstance(alpha, (bool, np.bool_)) \
            or not isinstance(alpha, (int, float, np.number)) \
            or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}.")
    return float(alpha)


def _scaled_tail(x, sd, laplace):
    """``e^{s²/2ℓ² − x/ℓ}·Φ(x/s − s/ℓ)`` without overflow.

    With ``t = s/ℓ − x/s ≥ 0`` it equals ``½e^{−x²/2s²}·erfcx(t/√2)`` (the
    exponents cancel exactly: ``Φ(−t) = ½e^{−t²/2}erfcx(t/√2)``), finite
    however small ``ℓ`` is against ``s``; otherwise the product is taken in
    log space, where the exponent is then at most ``−s²/2ℓ² + log Φ``."""
    t = sd / laplace - x / sd
    if t >= 0:
        return (0.5 * math.exp(-0.5 * (x / sd) ** 2)
                * float(special.erfcx(t / math.sqrt(2))))
    a = 0.5 * (sd / laplace) ** 2
    return math.exp(a - x / laplace + special.log_ndtr(-t))


def _normal_laplace_cdf(x, sd, laplace):
    """CDF at ``x`` of ``N(0, sd²) + Laplace(laplace)`` (both ``> 0``), in
    closed form: ``Φ(x/s) − ½e^{s²/2ℓ² − x/ℓ}Φ(x/s − s/ℓ) + ½e^{s²/2ℓ² +
    x/ℓ}Φ(−x/s − s/ℓ)`` (:func:`_scaled_tail`: no overflow when ``ℓ ≪ s``)."""
    minus = _scaled_tail(x, sd, laplace)
    plus = _scaled_tail(-x, sd, laplace)
    return float(special.ndtr(x / sd) - 0.5 * minus + 0.5 * plus)


def _coverage(h, sd, laplace, bias, df):
    """``P(|X| ≤ h)`` for ``X = bias + sd·T + Laplace(laplace)`` (T normal, or
    Student t with ``df`` degrees of freedom)."""
    if df is None:
        cdf = special.ndtr
    else:
        def cdf(x):
            return stats.t.cdf(x, df)

    def gauss(c):  # P(|bias + sd·T + c| <= h)
        if sd == 0.0:
            return float(abs(bias + c) <= h)
        return float(cdf((h - bias - c) / sd) - cdf((-h - bias - c) / sd))

    if laplace == 0.0:
        return gauss(0.0)
    if sd == 0.0:  # the Laplace CDF at the ends of [-h - bias, h - bias]
        def lap_cdf(x):
            if x >= 0:
                return 1 - 0.5 * math.exp(-x / laplace)
            return 0.5 * math.exp(x / laplace)
        return lap_cdf(h - bias) - lap_cdf(-h - bias)
    if df is None:
        return (_normal_laplace_cdf(h - bias, sd, laplace)
                - _normal_laplace_cdf(-h - bias, sd, laplace))

    # E over the Laplace noise: density exp(-|c|/l)/(2l); substitute c = ±l·u
    def f(u):
        return 0.5 * math.exp(-u) * (gauss(laplace * u) + gauss(-laplace * u))
    return integrate.quad(f, 0.0, math.inf, limit=200, epsabs=1e-12, epsrel=1e-10)[0]


def wald_half_width(alpha, sd, laplace=0.0, bias=0.0, df=None):
    """Half-width of the interval ``estimate ± h`` with coverage ``1 − alpha``.

    The estimate's error is ``b + sd·T + L``: ``T`` standard normal (or
    Student t with ``df`` degrees of freedom), ``L`` Laplace of scale
    ``laplace``, and a bias ``|b| ≤ bias``. ``h`` solves
    ``P(|bias + sd·T + L| ≤ h) = 1 − alpha`` (the worst bias; any smaller bias
    covers more): with ``laplace = bias = 0`` and no ``df`` this is
    ``sd·z_{1−α/2}``.

    Parameters
    ----------
    alpha : float
        In ``(0, 1)``.
    sd : float
        Scale of the normal (or t) part, ``>= 0``.
    laplace : float, default=0.0
        Scale of the Laplace part, ``>= 0``.
    bias : float, default=0.0
        Bound on the absolute bias, ``>= 0``.
    df : float, default=None
        Degrees of freedom of the t part; ``None`` is normal.

    Returns
    -------
    h : float

    Examples
    --------
    >>> from skuserdp.inference import wald_half_width
    >>> round(wald_half_width(0.05, 1.0), 4)
    1.96
    >>> round(wald_half_width(0.05, 0.0, laplace=1.0), 4)  # -ln(0.05)
    2.9957
    >>> round(wald_half_width(0.05, 1.0, df=9), 4)
    2.2622
    """
    alpha = _check_alpha(alpha)
    sd, laplace, bias = float(sd), float(laplace), float(bias)
    if not (sd >= 0 and laplace >= 0 and bias >= 0) or not all(
            map(math.isfinite, (sd, laplace, bias))):
        raise ValueError("sd, laplace and bias must be finite and >= 0.")
    if sd == 0.0 and laplace == 0.0:
        return bias
    if laplace == 0.0 and bias == 0.0:
        q = (special.ndtri(1 - alpha / 2) if df is None
             else stats.t.ppf(1 - alpha / 2, df))
        return float(sd * q)
    # the half-width is at most bias + the sum of the parts' quantiles
    z = special.ndtri(1 - alpha / 4) if df is None else stats.t.ppf(1 - alpha / 4, df)
    hi = bias + sd * z + laplace * math.log(4.0 / alpha) + 1e-300
    return float(optimize.brentq(
        lambda h: _coverage(h, sd, laplace, bias, df) - (1 - alpha), 0.0, hi,
        xtol=1e-12 * hi, rtol=1e-12))


@dataclass(frozen=True)
class IntervalState:
    """Everything a fitted estimator's confidence interval is computed from.

    Released values and public plan quantities only (never the data), one
    entry per interval row (``mean_``'s features; ``coef_`` then
    ``intercept_``), in the units of the estimate.

    Attributes
    ----------
    estimate : ndarray of shape (k,)
        The released estimate.
    sampling_std : ndarray of shape (k,)
        Standard deviation of the sampling error of the users (from a private
        release), the normal (or t) part.
    noise_std : ndarray of shape (k,)
        Standard deviation of the Gaussian privacy noise (public plan).
    laplace_scale : ndarray of shape (k,)
        Scale of the Laplace privacy noise (public plan); 0 without.
    bias_bound : ndarray of shape (k,)
        Bound on the absolute clipping bias (from a private count); 0 when
        none is allowed for.
    caveat : str
        A warning :meth:`ConfidenceIntervalMixin.conf_int` raises
        (:class:`~skuserdp.exceptions.AccuracyWarning`) every time, when the
        interval covers less than the population quantity (e.g. the clipped
        mean of a learned box); empty otherwise.
    bias_level : float
        Probability that ``bias_bound`` fails (it came from a noisy count):
        the Wald part is then computed at ``alpha − bias_level``.
    df : float or None
        Degrees of freedom of a t interval (K group estimates), else None.
    draws : ndarray of shape (B, k) or None
        Bootstrap draws: with them the interval is their percentiles.
    method : str
        A short name of the construction (``"wald"``, ``"groups"``,
        ``"bootstrap"``), reported by the docs and the report.
    estimand : str
        The population quantity covered, in words.
    """

    estimate: np.ndarray
    sampling_std: np.ndarray
    noise_std: np.ndarray
    laplace_scale: np.ndarray
    bias_bound: np.ndarray
    df: object = None
    draws: object = None
    method: str = "wald"
    estimand: str = "the mean of the users' means"
    bias_level: float = 0.0
    caveat: str = ""

    @property
    def std(self):
        """Total standard deviation: sampling and privacy noise (Laplace
        variance ``2ℓ²``), without the bias."""
        if self.draws is not None:
            return self.draws.std(axis=0, ddof=1)
        return np.sqrt(self.sampling_std ** 2 + self.noise_std ** 2
                       + 2.0 * self.laplace_scale ** 2)

    def bounds(self, alpha):
        """Lower and upper bounds, arrays of shape (k,), at level ``1 − alpha``."""
        alpha = _check_alpha(alpha)
        if self.draws is not None:
            lo, hi = np.quantile(self.draws, [alpha / 2, 1 - alpha / 2], axis=0)
            return lo, hi
        if alpha <= self.bias_level:
            raise ValueError(
                f"alpha={alpha!r} must exceed {self.bias_level!r}, the probability "
                "that this fit's bound on the clipping bias fails.")
        alpha = alpha - self.bias_level
        sd = np.sqrt(self.sampling_std ** 2 + self.noise_std ** 2)
        h = np.array([wald_half_width(alpha, s, ell, b, self.df) for s, ell, b
                      in zip(sd, self.laplace_scale, self.bias_bound)])
        return self.estimate - h, self.estimate + h

    def scaled(self, center, scale):
        """The state of ``center + scale·θ`` (a public affine map, per entry)."""
        scale = np.abs(np.asarray(scale, dtype=np.float64))
        draws = None if self.draws is None else center + self.draws * scale
        return IntervalState(center + scale * self.estimate, scale * self.sampling_std,
                             scale * self.noise_std, scale * self.laplace_scale,
                             scale * self.bias_bound, self.df, draws, self.method,
                             self.estimand, self.bias_level, self.caveat)


class ConfidenceIntervalMixin:
    """``conf_int(alpha)`` and ``bse_`` from the fit's :class:`IntervalState`.

    The estimator stores ``_interval_state`` in ``fit`` (or not, when it
    released no interval statistics: ``conf_int`` then says why, from
    ``_no_interval_reason``) and names the rows by ``_interval_labels()``.
    """

    def _interval_labels(self):
        names = getattr(self, "feature_names_in_", None)
        return None if names is None else [str(n) for n in names]

    def _state(self):
        check_is_fitted(self)
        state = self.__dict__.get("_interval_state")
        if state is None:
            raise AttributeError(
                f"{type(self).__name__} has no confidence interval for this fit: "
                + getattr(self, "_no_interval_reason",
                          "it released no interval statistics."))
        return state

    @property
    def bse_(self):
        """Standard errors of the estimate, one per row of :meth:`conf_int`.

        The standard deviation of the estimate's error from the sampling of
        users and the privacy noise (the bias bound, when there is one,
        widens :meth:`conf_int` but is not in ``bse_``).
        """
        return self._state().std

    def conf_int(self, alpha=0.05):
        """User-level confidence intervals at level ``1 − alpha``.

        Pure post-processing of values released by ``fit`` (charged to its
        budget): the data are not used again, and ``alpha`` may change after
        the fit at no privacy cost. The interval covers the population
        quantity named in the class docstring's "Confidence intervals"
        section: the sampling variability of the users, the privacy noise
        and, where one is allowed for, a bound on the clipping bias.

        Parameters
        ----------
        alpha : float, default=0.05
            One minus the coverage, in ``(0, 1)``.

        Returns
        -------
        ci : ndarray of shape (n_rows, 2) or pandas.DataFrame
            Lower and upper bounds, one row per estimated quantity (the
            features of ``mean_``; the entries of ``coef_`` in its order, then
            the intercept when fitted). A DataFrame indexed by the feature
            names, with columns ``"lower"`` and ``"upper"``, when the
            estimator was fitted on a DataFrame.
        """
        state = self._state()
        lo, hi = state.bounds(alpha)
        if state.caveat:
            warn_at_caller(f"{type(self).__name__}: {state.caveat}", AccuracyWarning)
        ci = np.column_stack([lo, hi])
        labels = self._interval_labels()
        if labels is None or not hasattr(self, "feature_names_in_"):
            return ci
        import pandas as pd

        return pd.DataFrame(ci, index=labels, columns=["lower", "upper"])
