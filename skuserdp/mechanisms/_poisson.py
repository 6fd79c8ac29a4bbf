"""Poisson-sampled sums on the lattice: the release of DP-SGD's sampled route.

Every step includes each user independently with a public probability q,
drawn from a random stream of its own (never from the data). The sampled
users' ℓ2-clipped vectors are encoded on a power-of-two lattice
(:func:`skuserdp.mechanisms.encode_contributions`), summed exactly in int64,
and discrete Gaussian noise is added to every coordinate of the integer sum
(:func:`skuserdp.mechanisms.add_noise`); only then is the result mapped back
to floats and divided by the *public* expected count ``q·n``. No
floating-point noise is drawn.

The noise parameter and the privacy loss come from
:mod:`skuserdp.privacy._subsampled` (:func:`skuserdp.privacy.calibrate_poisson_lattice`,
:func:`skuserdp.privacy.poisson_lattice_sigma2`), which holds the analysis.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..privacy import (
    LATTICE_ROUNDING_TAU,
    calibrate_poisson_lattice,
    poisson_lattice_sigma2,
)
from ..utils._random import generator_from, make_seed_sequence
from ._additive import DiscreteGaussianNoise, _mean_noise_variance, add_noise
from ._lattice import choose_grid, encode_sum, lattice_radius
from ._samplers import round_up_fraction

__all__ = ["PoissonSumPlan", "plan_poisson_sum", "poisson_sum_from_plan"]


@dataclass(frozen=True)
class PoissonSumPlan:
    """Every public quantity of T Poisson-sampled lattice releases.

    Computed by :func:`plan_poisson_sum` from public values only.

    Parameters
    ----------
    n_users, n_features : int
        Public shape n, p of the per-user vectors.
    radius : float
        ℓ2 clip radius C of every user's vector.
    sampling_rate : float
        Public Poisson sampling probability q.
    n_steps : int
        Number T of releases the loss covers.
    grid : float
        Power-of-two lattice step.
    radius_units : float
        ℓ2 norm bound r of every encoded vector, in grid units (C/grid widened
        for rounding).
    noise_multiplier : float
        The continuous part s of the noise over r (``s = multiplier·r``).
    tau : float
        The rounding kernel's τ (grid units) included in σ².
    noise : DiscreteGaussianNoise
        Noise of every coordinate of the integer sum:
        ``σ² ≥ s² + τ²``, rounded up to a multiple of 2^-20.
    loss : ApproxDP
        The composed privacy loss of the T releases.

    Examples
    --------
    >>> from skuserdp.mechanisms import plan_poisson_sum
    >>> plan = plan_poisson_sum(1000, 3, epsilon=1.0, delta=1e-6,
    ...                         sampling_rate=0.1, n_steps=10, radius=1.0)
    >>> plan.loss.epsilon <= 1.0, plan.grid * plan.radius_units >= plan.radius
    (True, True)
    """

    n_users: int
    n_features: int
    radius: float
    sampling_rate: float
    n_steps: int
    grid: float
    radius_units: float
    noise_multiplier: float
    tau: float
    noise: DiscreteGaussianNoise
    loss: object

    @property
    def noise_variance(self):
        """Variance bound ``σ²·grid²/(q·n)²`` of one coordinate's noise."""
        return _mean_noise_variance(self.noise, self.grid,
                                    self.sampling_rate * self.n_users)


def plan_poisson_sum(n_users, n_features, *, epsilon, delta, sampling_rate, n_steps,
                     radius):
    """Plan T Poisson-sampled lattice releases of the mean of clipped vectors.

    Parameters
    ----------
    n_users, n_features : int
        Public shape of the per-user vectors.
    epsilon : float
        Total ε of the T releases, ``> 0``.
    delta : float
        Total δ in ``(0, 1)``.
    sampling_rate : float
        Public Poisson sampling probability q in ``(0, 1]``.
    n_steps : int
        Number T of releases (adaptively composed), ``>= 1``.
    radius : float
        Public ℓ2 clip radius C of every user's vector, ``> 0``.

    Returns
    -------
    plan : PoissonSumPlan
        Lattice, calibrated discrete Gaussian noise and the composed loss.

    Examples
    --------
    >>> from skuserdp.mechanisms import plan_poisson_sum
    >>> plan = plan_poisson_sum(1000, 2, epsilon=1.0, delta=1e-6,
    ...                         sampling_rate=0.2, n_steps=5, radius=1.0)
    >>> plan.loss.delta, float(plan.noise.sigma2) > plan.radius_units ** 2
    (1e-06, True)
    """
    n_users, n_features, n_steps = int(n_users), int(n_features), int(n_steps)
    radius = float(radius)
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}.")
    q = float(sampling_rate)
    grid = choose_grid(radius, n_features, n_users, "l2")
    r = lattice_radius(radius, grid, n_features, "l2")
    tau = LATTICE_ROUNDING_TAU
    multiplier, loss = calibrate_poisson_lattice(epsilon, delta, q, n_steps,
                                                 n_params=n_features, tau=tau)
    noise = DiscreteGaussianNoise(round_up_fraction(
        poisson_lattice_sigma2(multiplier, r, tau)))
    return PoissonSumPlan(n_users, n_features, radius, q, n_steps, grid, r,
                          multiplier, tau, noise, loss)


def poisson_sum_from_plan(values, plan, *, random_state=None, n_jobs=None):
    """One Poisson-sampled lattice release: ``(Σ_sampled clip(v_u) + noise)/(q·n)``.

    The mask comes from the first child of ``random_state``'s seed sequence,
    the noise from the second: neither depends on ``values``.

    Parameters
    ----------
    values : ndarray of shape (n_users, n_features)
        One vector per user (finite); each is clipped to the ℓ2 ball of
        radius ``plan.radius`` around 0 and encoded on the lattice. Not
        modified.
    plan : PoissonSumPlan
        From :func:`plan_poisson_sum`.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the mask and of the noise.
    n_jobs : int, default=None
        Workers for chunks of noise coordinates; results do not depend on it.

    Returns
    -------
    release : ndarray of shape (n_features,)
        ``grid·(S + Z)/(q·n)``: S the exact integer sum of the sampled users'
        encoded vectors, Z the discrete Gaussian noise. One of the
        ``plan.n_steps`` releases that ``plan.loss`` covers.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import plan_poisson_sum, poisson_sum_from_plan
    >>> plan = plan_poisson_sum(20000, 2, epsilon=2.0, delta=1e-6,
    ...                         sampling_rate=0.5, n_steps=1, radius=1.0)
    >>> poisson_sum_from_plan(np.full((20000, 2), 0.5), plan,
    ...                       random_state=0).round(1)
    array([0.5, 0.5])
    """
    V = np.asarray(values, dtype=np.float64)
    if V.ndim != 2 or V.shape != (plan.n_users, plan.n_features):
        raise ValueError(f"values has shape {V.shape}; the plan is for "
                         f"{(plan.n_users, plan.n_features)}.")
    mask_seed, noise_seed = make_seed_sequence(random_state).spawn(2)
    keep = generator_from(mask_seed).random(plan.n_users) < plan.sampling_rate
    total = encode_sum(V, center=0.0, radius=plan.radius, grid=plan.grid,
                       norm="l2", rows=np.flatnonzero(keep))
    noisy = add_noise(total, plan.noise, noise_seed, n_jobs=n_jobs)
    return plan.grid * (noisy.astype(np.float64)
                        / (plan.sampling_rate * plan.n_users))
