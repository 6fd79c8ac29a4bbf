"""Additive integer noise for lattice releases, with exact privacy maps.

:class:`DiscreteLaplaceNoise` and :class:`DiscreteGaussianNoise` hold an exact
rational noise parameter (rounded *up* from the calibrated value, so the noise
is never smaller than calibrated) and expose

* ``privacy(sensitivity)``: the privacy map, computed by
  :mod:`skuserdp.privacy` from the parameter actually used;
* ``sample(size, rng)``: exact samples (Canonne, Kamath & Steinke 2020).

:func:`add_noise` adds noise to an integer statistic in fixed-size chunks, one
child random stream per chunk, optionally in parallel: the result is the same
for every ``n_jobs``.
"""

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from ..privacy import (
    gaussian_privacy,
    gaussian_sigma,
    gaussian_sigma_for_rho,
    laplace_privacy,
    laplace_scale,
)
from ..utils._random import generator_from
from ._lattice import round_to_grid
from ._samplers import (
    round_up_fraction,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

__all__ = [
    "DiscreteLaplaceNoise",
    "DiscreteGaussianNoise",
    "calibrate_discrete_laplace",
    "calibrate_discrete_gaussian",
    "calibrate_discrete_gaussian_rho",
    "add_noise",
    "release_on_lattice",
]

#: number of coordinates per random stream / joblib task
CHUNK_SIZE = 2 ** 14


class _ExactNoise:
    """The exact rational parameter (field ``_parameter``) of a lattice noise,
    converted to a :class:`~fractions.Fraction` and refused unless ``> 0``."""

    _parameter = None

    def __post_init__(self):
        name = self._parameter
        object.__setattr__(self, name, Fraction(getattr(self, name)))
        if getattr(self, name) <= 0:
            raise ValueError(f"{name} must be > 0, got {getattr(self, name)}.")


@dataclass(frozen=True)
class DiscreteLaplaceNoise(_ExactNoise):
    """Discrete Laplace noise ``P[z] ∝ exp(-|z|/scale)`` on the integers.

    Parameters
    ----------
    scale : fractions.Fraction
        Exact scale, ``> 0``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from skuserdp.mechanisms import DiscreteLaplaceNoise
    >>> DiscreteLaplaceNoise(Fraction(4)).privacy(2)
    PureDP(epsilon=0.5)
    """

    scale: Fraction
    _parameter = "scale"

    def privacy(self, sensitivity):
        """Pure DP for an integer statistic of ℓ1 sensitivity ``sensitivity``."""
        return laplace_privacy(sensitivity, float(self.scale))

    @property
    def std(self):
        """Standard deviation of the noise (in grid units)."""
        q = math.exp(-1 / float(self.scale))
        # (1 - q by expm1: exact for a scale so large that q rounds to 1)
        return math.sqrt(2 * q) / -math.expm1(-1 / float(self.scale))

    def sample(self, size, rng):
        """Draw exact samples (int64) of the given ``size``."""
        return sample_discrete_laplace(self.scale, size, rng)


@dataclass(frozen=True)
class DiscreteGaussianNoise(_ExactNoise):
    """Discrete Gaussian noise ``P[z] ∝ exp(-z²/(2·sigma2))`` on the integers.

    Parameters
    ----------
    sigma2 : fractions.Fraction
        Exact variance parameter σ², ``> 0``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from skuserdp.mechanisms import DiscreteGaussianNoise
    >>> DiscreteGaussianNoise(Fraction(4)).privacy(1)
    ZCDP(rho=0.125)
    """

    sigma2: Fraction
    _parameter = "sigma2"

    def privacy(self, sensitivity):
        """ρ-zCDP for an integer statistic of ℓ2 sensitivity ``sensitivity``."""
        return gaussian_privacy(sensitivity, math.sqrt(self.sigma2))

    @property
    def std(self):
        """Upper bound σ on the noise standard deviation (in grid units)."""
        return math.sqrt(self.sigma2)

    def sample(self, size, rng):
        """Draw exact samples (int64) of the given ``size``."""
        return sample_discrete_gaussian(self.sigma2, size, rng)


def _mean_noise_variance(noise, grid, count):
    """Variance bound of one coordinate of ``grid·(S + Z)/count``: the
    integer noise ``noise`` (grid units) of a sum released as a mean over
    ``count``; ``inf`` when the square overflows (radii near the float64
    limit)."""
    sd = noise.std * grid / count
    try:
        return sd ** 2
    except OverflowError:
        return math.inf


def calibrate_discrete_laplace(sensitivity, epsilon):
    """Discrete Laplace noise giving pure ε-DP for ℓ1 sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        ℓ1 sensitivity of the integer statistic, ``> 0``.
    epsilon : float
        Target ε, ``> 0``.

    Returns
    -------
    noise : DiscreteLaplaceNoise
        Its scale is ``sensitivity / epsilon`` rounded up to a multiple of
        2^-20, so ``noise.privacy(sensitivity).epsilon <= epsilon``.

    Examples
    --------
    >>> from skuserdp.mechanisms import calibrate_discrete_laplace
    >>> noise = calibrate_discrete_laplace(3.0, 1.5)
    >>> noise.scale, noise.privacy(3.0).epsilon <= 1.5
    (Fraction(2, 1), True)
    """
    return DiscreteLaplaceNoise(round_up_fraction(laplace_scale(sensitivity, epsilon)))


def calibrate_discrete_gaussian(sensitivity, epsilon, delta, *, calibration="tight"):
    """Discrete Gaussian noise for (ε, δ)-DP at ℓ2 sensitivity ``sensitivity``.

    The guarantee of the discrete Gaussian is ρ-zCDP with ``ρ = Δ²/(2σ²)``;
    the reported (ε, δ) is its optimal conversion.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity of the integer statistic, ``> 0``.
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: the largest ρ whose optimal conversion meets (ε, δ);
        ``"paper"``: the classical σ = Δ√(2 ln(1.25/δ))/ε (ε < 1 only).

    Returns
    -------
    noise : DiscreteGaussianNoise
        σ² rounded up to a multiple of 2^-20.

    Examples
    --------
    >>> from skuserdp.mechanisms import calibrate_discrete_gaussian
    >>> from skuserdp.privacy import zcdp_to_approx_dp
    >>> noise = calibrate_discrete_gaussian(4.0, 1.0, 1e-6)
    >>> round(noise.std, 2)
    18.12
    >>> zcdp_to_approx_dp(noise.privacy(4.0), 1e-6).epsilon <= 1.0
    True
    """
    if calibration not in ("tight", "paper"):
        raise ValueError(
            "discrete Gaussian calibration must be 'tight' or 'paper', got "
            f"{calibration!r}."
        )
    return _discrete_gaussian(
        gaussian_sigma(sensitivity, epsilon, delta, calibration=calibration))


def calibrate_discrete_gaussian_rho(sensitivity, rho):
    """Discrete Gaussian noise giving ρ-zCDP at ℓ2 sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity of the integer statistic, ``> 0``.
    rho : float
        Target ρ, ``> 0``.

    Returns
    -------
    noise : DiscreteGaussianNoise
        σ² = Δ²/(2ρ) rounded up to a multiple of 2^-20, so
        ``noise.privacy(sensitivity).rho <= rho``.

    Examples
    --------
    >>> from skuserdp.mechanisms import calibrate_discrete_gaussian_rho
    >>> noise = calibrate_discrete_gaussian_rho(2.0, 0.5)
    >>> round(float(noise.sigma2), 4), noise.privacy(2.0).rho <= 0.5
    (4.0, True)
    """
    return _discrete_gaussian(gaussian_sigma_for_rho(sensitivity, rho))


def _discrete_gaussian(sigma):
    """The discrete Gaussian of a calibrated σ: σ² with a relative margin of
    1e-12 for the float round-off of ``sigma * sigma``, then rounded up to a
    multiple of 2^-20, so its variance parameter is never below σ²."""
    return DiscreteGaussianNoise(round_up_fraction(sigma * sigma * (1 + 1e-12)))


def _noise_chunk(noise, size, seed):
    return noise.sample(size, generator_from(seed))


def add_noise(values, noise, seed_sequence, *, n_jobs=None):
    """Add integer noise to an integer statistic, chunk by chunk.

    Parameters
    ----------
    values : ndarray of shape (n,), dtype int64
        The exact integer statistic (e.g. :func:`exact_sum` of contributions).
    noise : DiscreteLaplaceNoise or DiscreteGaussianNoise
        Calibrated noise.
    seed_sequence : numpy.random.SeedSequence
        Root of this release's randomness; one child stream per chunk of
        ``CHUNK_SIZE`` (2**14) coordinates.
    n_jobs : int, default=None
        Workers for the chunks (threads). The result does not depend on it.

    Returns
    -------
    noisy : ndarray of shape (n,), dtype int64

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from skuserdp.mechanisms import DiscreteGaussianNoise, add_noise
    >>> out = add_noise(np.zeros(3, dtype=np.int64), DiscreteGaussianNoise(Fraction(4)),
    ...                 np.random.SeedSequence(0))
    >>> out.shape, out.dtype
    ((3,), dtype('int64'))
    """
    values = np.asarray(values)
    if values.dtype != np.int64 or values.ndim != 1:
        raise ValueError("values must be a 1-d int64 array.")
    n = values.shape[0]
    bounds = list(range(0, n, CHUNK_SIZE)) + [n]
    seeds = seed_sequence.spawn(len(bounds) - 1)
    sizes = [b - a for a, b in zip(bounds[:-1], bounds[1:])]
    if len(sizes) == 1:
        parts = [_noise_chunk(noise, sizes[0], seeds[0])]
    else:
        parts = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_noise_chunk)(noise, size, seed) for size, seed in zip(sizes, seeds)
        )
    return values + np.concatenate(parts).astype(np.int64)


def release_on_lattice(values, grid, noise, seed_sequence, *, n_jobs=None):
    """Release a float statistic on a power-of-two lattice with integer noise.

    The statistic is rounded to the grid and integer noise is added; the
    noise must be calibrated for the *widened* sensitivity
    :func:`skuserdp.privacy.lattice_widened_sensitivity` (in grid units:
    divide by ``grid``). The caller's sensitivity must hold for the values as
    computed in floating point.

    Parameters
    ----------
    values : array-like of shape (n,)
        The statistic.
    grid : float
        Power-of-two grid step.
    noise : DiscreteLaplaceNoise or DiscreteGaussianNoise
        Calibrated noise (in grid units).
    seed_sequence : numpy.random.SeedSequence
        Root of this release's randomness.
    n_jobs : int, default=None
        Workers; the result does not depend on it.

    Returns
    -------
    released : ndarray of shape (n,)
        Multiples of ``grid``.

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from skuserdp.mechanisms import DiscreteLaplaceNoise, release_on_lattice
    >>> out = release_on_lattice([0.3, 0.7], 0.25, DiscreteLaplaceNoise(Fraction(8)),
    ...                          np.random.SeedSequence(1))
    >>> bool(np.all(out / 0.25 == np.round(out / 0.25)))
    True
    """
    units = round_to_grid(np.ravel(values), grid)
    return add_noise(units, noise, seed_sequence, n_jobs=n_jobs) * float(grid)
