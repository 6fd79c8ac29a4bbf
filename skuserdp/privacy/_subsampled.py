"""Poisson-subsampled Gaussian mechanism: accounting by privacy loss distributions.

User-level DP-SGD with Poisson user sampling (each step includes every user
independently with a public probability q, independently of the data) sums
the ℓ2-clipped contributions of the sampled users and adds Gaussian noise of
standard deviation ``σ = multiplier · C`` (C the clip radius), then divides by
the *public* expected count ``q·n``. Under replace-one neighbours the
contribution of the replaced user moves from ``x`` to ``x′`` with
``‖x‖, ‖x′‖ ≤ C``: the pair of output distributions is the mixture pair
``(1−q)·N(0, σ²) + q·N(±C, σ²)`` that dp-accounting's privacy loss
distribution (PLD) accountant analyses exactly for the ``REPLACE_ONE``
relation (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy
via characteristic function"; dp-accounting's ``from_gaussian_mechanism`` with
``sampling_prob`` and ``NeighboringRelation.REPLACE_ONE``), composed over the
steps.

This is the only module that imports dp-accounting (an optional extra:
``pip install "skuserdp[accounting]"``). The PLD is computed with a
pessimistic discretisation, so the reported ε is an upper bound.

The analysis is for *continuous* Gaussian noise: the Poisson-sampling route of
:class:`skuserdp.linear_model.UserDPSGDRegressor` releases floating-point
Gaussian noise (it is off by default); the default full-batch route uses
lattice noise.
"""

import math

from ._budget import ApproxDP, _check_positive_finite

__all__ = [
    "poisson_gaussian_epsilon",
    "calibrate_poisson_gaussian",
]

#: PLD discretisation of the privacy loss (smaller is tighter and slower)
PLD_DISCRETISATION = 1e-4
#: smallest noise multiplier the calibration tries
MIN_MULTIPLIER = 0.125


def _dp_accounting():
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "Poisson user sampling is accounted with dp-accounting, which is not "
            'installed: pip install "skuserdp[accounting]" (or dp-accounting>=0.4), '
            "or use sampling_rate=None (full batch, no extra needed)."
        ) from exc
    return dp_accounting


def _check_rate(sampling_rate):
    q = float(sampling_rate)
    if not 0 < q <= 1:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}.")
    return q


def poisson_gaussian_epsilon(noise_multiplier, sampling_rate, steps, delta):
    """ε of ``steps`` Poisson-subsampled Gaussian releases (replace-one user).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by the ℓ2 clip radius C, ``> 0``
        (replace-one moves one contribution by at most ``2C``).
    sampling_rate : float
        Public Poisson sampling probability q in ``(0, 1]``.
    steps : int
        Number of composed releases, ``>= 1``.
    delta : float
        Target δ in ``(0, 1)``.

    Returns
    -------
    loss : ApproxDP
        An upper bound on the composed (ε, δ) (pessimistic PLD).

    Examples
    --------
    >>> from skuserdp.privacy import poisson_gaussian_epsilon
    >>> loss = poisson_gaussian_epsilon(2.0, 1.0, 1, 1e-6)  # σ = 2C, shift 2C
    >>> round(loss.epsilon, 2)
    4.89
    """
    dpa = _dp_accounting()
    multiplier = _check_positive_finite("noise_multiplier", noise_multiplier)
    q = _check_rate(sampling_rate)
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    pld = dpa.pld.privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=multiplier,
        sensitivity=1.0,
        sampling_prob=q,
        value_discretization_interval=PLD_DISCRETISATION,
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE,
    )
    composed = pld.self_compose(steps)
    epsilon = float(composed.get_epsilon_for_delta(delta))
    return ApproxDP(max(epsilon, 0.0), delta)


def calibrate_poisson_gaussian(epsilon, delta, sampling_rate, steps, *,
                               rtol=1e-3):
    """Smallest noise multiplier meeting (ε, δ) over ``steps`` sampled releases.

    Bisection on :func:`poisson_gaussian_epsilon` (monotone in the
    multiplier), returning a multiplier whose composed ε is ``<= epsilon``.
    Multipliers below 1/8 are never tried (their privacy loss distributions
    are huge); when even 1/8 meets the target, a multiplier between 1/8 and
    1/4 is returned (more noise than needed, never less).

    Parameters
    ----------
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.
    sampling_rate : float
        Public Poisson sampling probability q in ``(0, 1]``.
    steps : int
        Number of releases, ``>= 1``.
    rtol : float, default=1e-3
        Relative precision of the bisection on the multiplier.

    Returns
    -------
    noise_multiplier : float
        σ/C.
    loss : ApproxDP
        The composed loss at that multiplier (ε ≤ ``epsilon``).

    Examples
    --------
    >>> from skuserdp.privacy import calibrate_poisson_gaussian
    >>> z, loss = calibrate_poisson_gaussian(1.0, 1e-6, 0.1, 10)
    >>> loss.epsilon <= 1.0
    True
    """
    epsilon = _check_positive_finite("epsilon", epsilon)

    def eps_of(z):
        return poisson_gaussian_epsilon(z, sampling_rate, steps, delta).epsilon

    # Bracket [lo, hi] with eps_of(lo) > ε >= eps_of(hi), never evaluating
    # multipliers below MIN_MULTIPLIER (their PLDs need huge supports; such
    # small noise is only enough for very large ε, and more noise is safe).
    hi = 1.0
    while eps_of(hi) > epsilon:
        hi *= 2.0
        if hi > 1e9:
            raise ValueError("no noise multiplier up to 1e9 meets the target.")
    lo = hi / 2.0
    while lo >= MIN_MULTIPLIER and eps_of(lo) <= epsilon:
        hi, lo = lo, lo / 2.0
    if lo >= MIN_MULTIPLIER:
        while hi - lo > rtol * hi:
            mid = math.sqrt(lo * hi)
            if eps_of(mid) > epsilon:
                lo = mid
            else:
                hi = mid
    return hi, poisson_gaussian_epsilon(hi, sampling_rate, steps, delta)
