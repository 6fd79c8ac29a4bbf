"""Poisson-subsampled Gaussian mechanism: accounting by privacy loss distributions.

User-level DP-SGD with Poisson user sampling (each step includes every user
independently with a public probability q, independently of the data) sums
the ℓ2-clipped contributions of the sampled users, adds Gaussian noise and
divides by the *public* expected count ``q·n``.

**The continuous analysis** (:func:`poisson_gaussian_epsilon`): with noise
``N(0, s²I)``, ``s = multiplier · C`` and every contribution in the ℓ2 ball
of radius C, the replaced user's contribution moves from ``x`` to ``x′``.
Conditionally on the other users (whose sampling and contributions are the
same on both sides; the hockey-stick divergence is jointly convex, so the
mixture over them does no worse), the pair of output laws is
``A_x = (1−q)·N(0, s²I) + q·N(x, s²I)`` against ``A_x′``. It is dominated,
for every ``e^ε = α ≥ 0``, by the one-dimensional pair
``A_{−C}``, ``A_{+C}`` that dp-accounting's privacy loss distribution (PLD)
analyses for the ``REPLACE_ONE`` relation (``from_gaussian_mechanism`` with
``sampling_prob``; Zhu, Dong & Wang 2022):

* ``H_α(A_x‖A_x′) = E[(1−q)(1−α) + q·e^{U − ‖x‖²/2s²} − αq·e^{V − ‖x′‖²/2s²}]₊``
  with ``(U, V) = (⟨x, Y⟩, ⟨x′, Y⟩)/s²``, ``Y ~ N(0, s²I)``: a centred
  Gaussian pair whose variances depend on ‖x‖, ‖x′‖ only. The integrand is a
  convex function of (an increasing function of U) minus (an increasing
  function of V), hence submodular in (U, V), so its expectation does not
  decrease as the covariance ⟨x, x′⟩/s² decreases (Plackett's identity,
  ``∂E f/∂c = E ∂²f/∂u∂v ≤ 0``): ``x′ = −(‖x′‖/‖x‖)·x`` is the worst
  direction, a one-dimensional pair ``A_a``, ``A_{−b}`` with ``a, b ∈ [0, C]``;
* that pair has a monotone likelihood ratio (the derivative of its log is
  ``(a·w_a + b·w_{−b})/s² ≥ 0``, with w the posterior weights of the sampled
  components), so half-lines are optimal tests, and the mass of every
  half-line grows with a and shrinks with b: ``a = b = C`` is the worst case.

The dominating pairs compose adaptively over the steps (Zhu, Dong & Wang
2022); the PLD is computed with a pessimistic discretisation, so
the reported ε is an upper bound.

**The lattice route** (:func:`poisson_lattice_epsilon`,
:func:`calibrate_poisson_lattice`), the one the estimators run: no
floating-point noise is drawn. Each sampled user's clipped contribution is
encoded on a power-of-two lattice (ℓ2 norm at most r grid units, r from
:func:`skuserdp.privacy.lattice_contribution_radius`), the integer sum S is
exact, and discrete Gaussian noise ``N_Z(0, σ²)`` with
``σ² ≥ s² + τ²`` (``s = multiplier · r``, τ = :data:`LATTICE_ROUNDING_TAU`
grid units) is added to every coordinate. Its analysis is by approximate
post-processing of the continuous route:

* rounding ``S + Y`` (``Y ~ N(0, s²I)``) with the data-independent kernel
  ``K(k | y) = e^{−(k−y)²/2τ²}/Θ(y)``, ``Θ(y) = Σ_j e^{−(j−y)²/2τ²}`` (an
  exact partition of unity) is post-processing: it has the continuous
  route's loss for multiplier ``s/r``, composed over the T steps;
* by Poisson summation ``Θ(y) = τ√(2π)(1 + 2Σ_{m≥1} e^{−2π²τ²m²}
  cos 2πmy)``, so for integer S the rounded output has the pmf
  ``φ_σ(k − S)·[1/(1+2E), 1/(1−2E)]`` with ``σ² = s² + τ²`` and
  ``E = Σ_{m≥1} e^{−2π²τ²m²}``, while the discrete Gaussian's is
  ``φ_σ(k − S)/(1 + 2E_σ)`` with ``0 ≤ E_σ ≤ E``: per coordinate the two
  pmfs are within a factor ``e^{±η}``, ``η = ln((1+2E)/(1−2E))``
  (:func:`lattice_rounding_gap` bounds it by ``4/(e^{2π²τ²} − 3)``);
* over p coordinates and T adaptive steps (products of conditionals, and
  mixtures over the same Poisson masks) the joint pmfs are within
  ``e^{±pTη}`` on every dataset, so an ``(ε_c, δ_c)`` continuous guarantee
  gives ``(ε_c + 2pTη, e^{pTη}·δ_c)`` for the discrete route;
* a larger σ² than ``s² + τ²`` is the continuous route with more noise
  (adding independent Gaussian noise is post-processing).

At τ = 2 grid units η < 2.1e-34: the charge is made, but is invisible, and
τ² = 4 is at most 2^-12 of s² whenever r ≥ 2^10 grid units (the usual
resolution of :func:`skuserdp.mechanisms.choose_grid`) and the multiplier is
at least 1/8 (the calibration's floor).

This is the only module that imports dp-accounting (an optional extra:
``pip install "skuserdp[accounting]"``).
"""

import math
from fractions import Fraction

from ._budget import (
    ApproxDP,
    _check_count,
    _check_open_unit,
    _check_positive_finite,
)

__all__ = [
    "LATTICE_ROUNDING_TAU",
    "poisson_gaussian_epsilon",
    "calibrate_poisson_gaussian",
    "lattice_rounding_gap",
    "poisson_lattice_sigma2",
    "poisson_lattice_epsilon",
    "calibrate_poisson_lattice",
]

#: PLD discretisation of the privacy loss (smaller is tighter and slower)
PLD_DISCRETISATION = 1e-4
#: smallest noise multiplier the calibration tries
MIN_MULTIPLIER = 0.125
#: τ (grid units) of the rounding kernel in the analysis of the lattice route
LATTICE_ROUNDING_TAU = 2.0


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
    steps = _check_count("steps", steps)
    _check_open_unit("delta", delta)
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


def lattice_rounding_gap(tau=LATTICE_ROUNDING_TAU):
    """Bound η on the log-ratio of the discrete Gaussian to rounded Gaussian noise.

    Rounding a real ``y`` to the integer k with probability
    ``e^{−(k−y)²/2τ²}/Θ(y)`` (``Θ(y) = Σ_j e^{−(j−y)²/2τ²}``) turns
    ``S + N(0, s²)``, S an integer, into a pmf within a factor ``e^{±η}`` of
    the discrete Gaussian ``N_Z(S, s² + τ²)`` at every integer, with
    ``η = ln((1 + 2E)/(1 − 2E))`` and ``E = Σ_{m≥1} e^{−2π²τ²m²}`` (Poisson
    summation; see the module docstring). With ``E ≤ 1/(e^c − 1)``,
    ``c = 2π²τ²`` (``m² ≥ m``) and ``ln(1 + x) ≤ x``,

    ``η ≤ 4E/(1 − 2E) ≤ 4/(e^c − 3)``,

    returned with a relative margin of 1e-9 over the floating-point error.

    Parameters
    ----------
    tau : float, default=2.0
        Standard deviation τ of the rounding kernel, in grid units;
        ``e^{2π²τ²} > 3`` (τ > 0.24).

    Returns
    -------
    gap : float
        An upper bound on η.

    Examples
    --------
    >>> from skuserdp.privacy import lattice_rounding_gap
    >>> print(f"{lattice_rounding_gap(2.0):.3g}")
    2.05e-34
    >>> print(f"{lattice_rounding_gap(0.5):.3g}")
    0.0294
    """
    tau = _check_positive_finite("tau", tau)
    c = 2.0 * math.pi ** 2 * tau * tau * (1.0 - 1e-12)
    denominator = math.expm1(c) - 2.0
    if not denominator > 0:
        raise ValueError(f"tau must be above 0.24 grid units, got {tau!r}.")
    return 4.0 / denominator * (1.0 + 1e-9)


def poisson_lattice_sigma2(noise_multiplier, radius_units, tau=LATTICE_ROUNDING_TAU):
    """Smallest σ² of the discrete Gaussian of the lattice route, exactly.

    The lattice route's analysis needs ``σ² ≥ s² + τ²`` with ``s`` the
    continuous route's noise: ``s = noise_multiplier · r``, r the ℓ2 radius
    of the encoded contributions in grid units (from
    :func:`skuserdp.privacy.lattice_contribution_radius`). Computed in exact
    rational arithmetic from the floats given; round it *up* (more noise is
    post-processing of the continuous route with more noise).

    Parameters
    ----------
    noise_multiplier : float
        Continuous multiplier ``s/r``, ``> 0``.
    radius_units : float
        The ℓ2 norm bound r of every encoded contribution, in grid units.
    tau : float, default=2.0
        Rounding kernel's τ (grid units).

    Returns
    -------
    sigma2 : fractions.Fraction
        ``(noise_multiplier·radius_units)² + τ²``.

    Examples
    --------
    >>> from skuserdp.privacy import poisson_lattice_sigma2
    >>> poisson_lattice_sigma2(1.5, 1024.0)
    Fraction(2359300, 1)
    """
    z = Fraction(_check_positive_finite("noise_multiplier", noise_multiplier))
    r = Fraction(_check_positive_finite("radius_units", radius_units))
    tau = Fraction(_check_positive_finite("tau", tau))
    return (z * r) ** 2 + tau ** 2


def _lattice_terms(delta, steps, n_params, tau):
    """``(2pTη̄, δ_c)``: the ε charge of the lattice route and the δ left to
    the continuous analysis, with ``e^{pTη̄}·δ_c ≤ δ`` in exact arithmetic."""
    steps = _check_count("steps", steps)
    n_params = _check_count("n_params", n_params)
    _check_open_unit("delta", delta)
    x = n_params * steps * lattice_rounding_gap(tau) * (1.0 + 2.0 ** -40)
    # δ_c = δ(1 − x − 2^-50) <= δ(1 − x) <= δe^{−x}, the product's rounding
    # (at most 2^-52 relative) absorbed by the 2^-50
    delta_c = delta * (1.0 - (x + 2.0 ** -50))
    if not delta_c > 0:
        raise ValueError("the rounding gap p·T·η leaves no δ: use a larger tau.")
    return 2.0 * x, delta_c


def _add_up(a, b):
    """The smallest float ``>= a + b`` (exact sum of the floats)."""
    exact = Fraction(a) + Fraction(b)
    out = float(exact)
    return out if Fraction(out) >= exact else math.nextafter(out, math.inf)


def _subtract_down(a, b):
    """The largest float ``<= a − b`` (exact difference of the floats)."""
    exact = Fraction(a) - Fraction(b)
    out = float(exact)
    return out if Fraction(out) <= exact else math.nextafter(out, -math.inf)


def poisson_lattice_epsilon(noise_multiplier, sampling_rate, steps, delta, *,
                            n_params, tau=LATTICE_ROUNDING_TAU):
    """ε of ``steps`` Poisson-sampled lattice releases with discrete Gaussian noise.

    The privacy map of the lattice route (module docstring): a discrete
    Gaussian of ``σ² ≥ (noise_multiplier·r)² + τ²`` on every one of
    ``n_params`` coordinates (see :func:`poisson_lattice_sigma2`) is
    ``(ε_c + 2pTη, δ)``-DP, with ε_c the continuous route's ε
    (:func:`poisson_gaussian_epsilon`) at ``δ_c = δ·e^{−pTη}`` (rounded down)
    and η from :func:`lattice_rounding_gap`.

    Parameters
    ----------
    noise_multiplier : float
        ``s/r``: the continuous part of the noise over the contribution radius
        (replace-one moves one contribution by at most ``2r``), ``> 0``.
    sampling_rate : float
        Public Poisson sampling probability q in ``(0, 1]``.
    steps : int
        Number T of composed releases, ``>= 1``.
    delta : float
        Target δ in ``(0, 1)``.
    n_params : int
        Number p of noisy coordinates of every release, ``>= 1``.
    tau : float, default=2.0
        The rounding kernel's τ (grid units) that σ² includes.

    Returns
    -------
    loss : ApproxDP
        An upper bound on the composed (ε, δ).

    Examples
    --------
    >>> from skuserdp.privacy import poisson_gaussian_epsilon, poisson_lattice_epsilon
    >>> loss = poisson_lattice_epsilon(2.0, 0.1, 10, 1e-6, n_params=5)
    >>> loss.delta, loss.epsilon >= poisson_gaussian_epsilon(2.0, 0.1, 10, 1e-6).epsilon
    (1e-06, True)
    """
    charge, delta_c = _lattice_terms(delta, steps, n_params, tau)
    continuous = poisson_gaussian_epsilon(noise_multiplier, sampling_rate, steps,
                                          delta_c)
    return ApproxDP(_add_up(continuous.epsilon, charge), delta)


def calibrate_poisson_lattice(epsilon, delta, sampling_rate, steps, *, n_params,
                              tau=LATTICE_ROUNDING_TAU, rtol=1e-3):
    """Smallest noise multiplier of the lattice route meeting (ε, δ).

    :func:`calibrate_poisson_gaussian` at ``ε − 2pTη`` (rounded down) and
    ``δ_c = δ·e^{−pTη}``: the returned loss is
    :func:`poisson_lattice_epsilon` at the returned multiplier.

    Parameters
    ----------
    epsilon : float
        Target ε, ``> 0``.
    delta : float
        Target δ in ``(0, 1)``.
    sampling_rate : float
        Public Poisson sampling probability q in ``(0, 1]``.
    steps : int
        Number T of releases, ``>= 1``.
    n_params : int
        Number p of noisy coordinates of every release, ``>= 1``.
    tau : float, default=2.0
        The rounding kernel's τ (grid units).
    rtol : float, default=1e-3
        Relative precision of the bisection on the multiplier.

    Returns
    -------
    noise_multiplier : float
        ``s/r``; the discrete Gaussian's σ² is then at least
        :func:`poisson_lattice_sigma2` of it.
    loss : ApproxDP
        The composed loss (ε ≤ ``epsilon``, δ = ``delta``).

    Examples
    --------
    >>> from skuserdp.privacy import calibrate_poisson_lattice
    >>> z, loss = calibrate_poisson_lattice(1.0, 1e-6, 0.1, 10, n_params=3)
    >>> loss.epsilon <= 1.0, loss.delta
    (True, 1e-06)
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    charge, delta_c = _lattice_terms(delta, steps, n_params, tau)
    target = _subtract_down(epsilon, charge)
    if not target > 0:
        raise ValueError(
            f"epsilon={epsilon!r} does not cover the rounding gap 2pTη={charge:.3g}.")
    multiplier, continuous = calibrate_poisson_gaussian(target, delta_c,
                                                        sampling_rate, steps,
                                                        rtol=rtol)
    return multiplier, ApproxDP(_add_up(continuous.epsilon, charge), delta)
