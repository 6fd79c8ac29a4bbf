"""Threshold of the stability-based histogram (approximate DP, unbounded grid).

A histogram over an unbounded set of buckets cannot add noise to every
bucket. The stability-based histogram (Bun, Nissim and Stemmer; used by
Agarwal et al. [AKM+24]_, Lemma 2.8, docs:
:ref:`papers-akmmsu`) adds noise only to
*occupied* buckets and releases a bucket only if
its noisy count exceeds a threshold. Replacing one user moves one unit of
count from one bucket to another: on the buckets occupied in both datasets
the count vector has ℓ1 sensitivity 2, so discrete Laplace noise of scale
``2/ε`` makes it ε-DP; a bucket occupied in only one dataset holds exactly
that user (count 1) and is released with probability
``P[Z ≥ T − 1]``, where ``T`` is the integer threshold (a bucket is kept
when ``count + Z ≥ T``). For the discrete Laplace,
``P[Z ≥ k] = e^{−k/s}/(1 + e^{−1/s})`` (scale s), so
``T = 1 + ⌈s·ln(1/((1 + e^{−1/s})δ))⌉`` makes it at most δ: the release is
(ε, δ)-DP for replace-one user neighbours.
"""

import math
from fractions import Fraction

from ._budget import ApproxDP, _check_open_unit, _check_positive_finite

__all__ = ["stability_histogram_threshold", "stability_histogram_privacy"]


def stability_histogram_threshold(epsilon, delta):
    """Noise scale and integer threshold of an (ε, δ)-DP stability histogram.

    Parameters
    ----------
    epsilon : float
        ε, ``> 0``.
    delta : float
        δ in ``(0, 1)``.

    Returns
    -------
    scale : fractions.Fraction
        Discrete Laplace scale ``2/ε`` (rounded up to a fraction with a
        2^20 denominator, so never smaller).
    threshold : int
        Keep a bucket iff ``count + noise >= threshold``.

    Examples
    --------
    >>> from skuserdp.privacy import stability_histogram_threshold
    >>> scale, T = stability_histogram_threshold(1.0, 1e-6)
    >>> float(scale), T
    (2.0, 28)
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    _check_open_unit("delta", delta)
    den = 1 << 20
    scale = Fraction(math.ceil(2.0 / epsilon * den), den)
    s = float(scale)
    k = math.ceil(s * math.log(1.0 / ((1.0 + math.exp(-1.0 / s)) * delta)))
    return scale, 1 + max(k, 0)


def stability_histogram_privacy(scale, threshold):
    """Guarantee of the stability histogram with a given scale and threshold.

    Parameters
    ----------
    scale : float or Fraction
        Discrete Laplace scale s.
    threshold : int
        Integer threshold T.

    Returns
    -------
    loss : ApproxDP
        ``(2/s, P[Z ≥ T − 1])`` with ``P[Z ≥ k] = e^{−k/s}/(1 + e^{−1/s})``.

    Examples
    --------
    >>> from skuserdp.privacy import stability_histogram_privacy
    >>> loss = stability_histogram_privacy(2.0, 28)
    >>> loss.epsilon, loss.delta <= 1e-6
    (1.0, True)
    """
    s = float(scale)
    k = int(threshold) - 1
    tail = math.exp(-max(k, 0) / s) / (1.0 + math.exp(-1.0 / s)) if k > 0 else 1.0
    return ApproxDP(2.0 / s, min(1.0, tail))
