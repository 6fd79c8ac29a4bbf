"""The noise of a release: one choice of noise for a budget, one sensitivity.

Every lattice release of skuserdp (an exact integer statistic plus integer
noise) takes its noise from :func:`calibrate_noise` and, when the statistic is
a sum of per-user contributions encoded on the lattice, its sensitivity from
:func:`lattice_sensitivity`. The choice is fixed by the budget type:

* :class:`~skuserdp.privacy.PureDP` -- discrete Laplace noise, for an ℓ1
  sensitivity;
* :class:`~skuserdp.privacy.ZCDP` -- discrete Gaussian noise at exactly ρ,
  for an ℓ2 sensitivity;
* :class:`~skuserdp.privacy.ApproxDP` -- discrete Gaussian noise for (ε, δ)
  (the ρ whose optimal conversion meets (ε, δ), or the classical σ with
  ``calibration="paper"``), for an ℓ2 sensitivity.

The noise is always lattice noise (exact integer samplers, rational
parameters rounded up). The privacy arithmetic -- the scale or σ for a
budget, the widening of a radius by rounding, the replace-one sensitivity --
is computed by :mod:`skuserdp.privacy`; this module only chooses which and
builds the noise object from it.
"""

from ..privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    linf_ball_l2_radius,
    replace_one_sum_sensitivity,
)
from ._additive import (
    calibrate_discrete_gaussian,
    calibrate_discrete_gaussian_rho,
    calibrate_discrete_laplace,
)
from ._lattice import lattice_radius

__all__ = ["calibrate_noise", "lattice_sensitivity"]


def calibrate_noise(budget, sensitivity, *, calibration="tight"):
    """The lattice noise giving a budget at a sensitivity.

    Parameters
    ----------
    budget : PureDP, ZCDP or ApproxDP
        Budget of the release. Pure ε gives discrete Laplace noise; ρ-zCDP
        and (ε, δ) with ``δ > 0`` give discrete Gaussian noise.
    sensitivity : float
        Sensitivity of the integer statistic in the units of the noise (grid
        units), ``> 0``: in ℓ1 for a pure budget, in ℓ2 otherwise.
    calibration : {"tight", "paper"}, default="tight"
        Gaussian calibration of an (ε, δ) budget
        (:func:`calibrate_discrete_gaussian`); ignored for the others.

    Returns
    -------
    noise : DiscreteLaplaceNoise or DiscreteGaussianNoise
        Its parameter is the calibrated one rounded *up* to a multiple of
        2^-20 (for σ², after a relative margin of 1e-12), so its own privacy
        map ``noise.privacy(sensitivity)`` is at most the budget: ε for a pure
        budget, ρ for zCDP, and for (ε, δ) with ``calibration="tight"`` a ρ
        whose optimal conversion at δ is at most ε. It falls short of the
        budget by a relative ``2^-20/scale`` (Laplace) or ``1e-12 +
        2^-20/σ²`` (Gaussian) at most, up to float round-off.

    Raises
    ------
    TypeError
        If ``budget`` is not one of the three loss types.
    ValueError
        For an (ε, δ) budget with ``δ = 0`` (pass :class:`PureDP` for pure
        DP: its noise needs an ℓ1 sensitivity) or an invalid ``calibration``.

    Examples
    --------
    >>> from skuserdp.mechanisms import calibrate_noise
    >>> from skuserdp.privacy import ApproxDP, PureDP, ZCDP
    >>> calibrate_noise(PureDP(1.5), 3.0)
    DiscreteLaplaceNoise(scale=Fraction(2, 1))
    >>> calibrate_noise(ZCDP(0.5), 2.0)
    DiscreteGaussianNoise(sigma2=Fraction(4194305, 1048576))
    >>> noise = calibrate_noise(ApproxDP(1.0, 1e-6), 4.0)
    >>> round(noise.std, 2)
    18.12
    """
    if isinstance(budget, PureDP):
        return calibrate_discrete_laplace(sensitivity, budget.epsilon)
    if isinstance(budget, ZCDP):
        return calibrate_discrete_gaussian_rho(sensitivity, budget.rho)
    if isinstance(budget, ApproxDP):
        return calibrate_discrete_gaussian(sensitivity, budget.epsilon, budget.delta,
                                           calibration=calibration)
    raise TypeError(
        "budget must be a PureDP, ZCDP or ApproxDP loss, got an object of type "
        f"{type(budget).__name__}."
    )


def lattice_sensitivity(radius, grid, dim, norm="l2", *, sensitivity_norm=None):
    """Replace-one sensitivity, in grid units, of a sum of lattice contributions.

    Every user contributes one vector of norm ``<= radius`` (around a public
    centre), encoded on the lattice of step ``grid``: its norm bound in grid
    units, widened for the rounding, is :func:`lattice_radius
    <skuserdp.mechanisms._lattice.lattice_radius>`; replacing one user moves
    the exact integer sum by at most twice that
    (:func:`skuserdp.privacy.replace_one_sum_sensitivity`).

    Parameters
    ----------
    radius : float
        The contributions' public norm bound, in their own units.
    grid : float
        The power-of-two grid step (from :func:`choose_grid`).
    dim : int
        The number of coordinates.
    norm : {"l1", "l2", "linf"}, default="l2"
        The norm of the bound (the encoding's clipping norm).
    sensitivity_norm : {None, "l2"}, default=None
        Norm of the sensitivity: ``None`` for ``norm`` itself; ``"l2"`` with
        ``norm="linf"`` for the ℓ2 sensitivity of ℓ∞-bounded contributions
        (:func:`skuserdp.privacy.linf_ball_l2_radius`).

    Returns
    -------
    sensitivity : float
        In grid units: pass it to :func:`calibrate_noise`.

    Examples
    --------
    >>> from skuserdp.mechanisms import lattice_sensitivity
    >>> lattice_sensitivity(1.0, 2.0 ** -10, 4)
    2050.0
    >>> lattice_sensitivity(1.0, 2.0 ** -10, 4, "linf", sensitivity_norm="l2")
    4098.0
    """
    radius_units = lattice_radius(radius, grid, dim, norm)
    if sensitivity_norm not in (None, norm):
        if (norm, sensitivity_norm) != ("linf", "l2"):
            raise ValueError(
                "sensitivity_norm must be None, the norm itself, or 'l2' for "
                f"norm='linf'; got norm={norm!r}, sensitivity_norm="
                f"{sensitivity_norm!r}."
            )
        radius_units = linf_ball_l2_radius(radius_units, dim)
    return replace_one_sum_sensitivity(radius_units)
