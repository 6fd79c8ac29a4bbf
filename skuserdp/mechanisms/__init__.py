"""Mechanisms: exact discrete noise, the lattice path and the exponential mechanism.

Privacy *arithmetic* (sensitivities, calibration, composition) lives in
:mod:`skuserdp.privacy`; this package samples noise and shapes releases. It is
the only home of noise: every release chooses its noise by
:func:`calibrate_noise` (from the budget type and the sensitivity, for a sum of
lattice contributions :func:`lattice_sensitivity`), and no module outside it
draws a random value for a release (tests/mechanisms/test_noise_home.py).
"""

from ._additive import (
    DiscreteGaussianNoise,
    DiscreteLaplaceNoise,
    add_noise,
    calibrate_discrete_gaussian,
    calibrate_discrete_gaussian_rho,
    calibrate_discrete_laplace,
    release_on_lattice,
)
from ._calibrate import calibrate_noise, lattice_sensitivity
from ._exponential import exponential_mechanism, gumbel_max
from ._private_bounds import (
    bounds_failure_probability,
    bounds_grid,
    learn_box,
    learn_box_for_fit,
    private_bounds,
    private_quantile,
)
from ._log_ranges import (
    LogRanges,
    LogRangesPlan,
    log_ranges_from_plan,
    plan_log_ranges,
)
from ._private_range import private_range, private_range_window
from ._rotation import RandomHadamardRotation, fwht, padded_dimension
from ._stability_histogram import stability_histogram_argmax
from ._trimmed import (
    TrimmedMeanPlan,
    plan_trimmed_mean,
    trimmed_mean_from_plan,
    trimmed_sum,
)
from ._lattice import choose_grid, encode_contributions, exact_sum, round_to_grid
from ._poisson import PoissonSumPlan, plan_poisson_sum, poisson_sum_from_plan
from ._samplers import (
    round_up_fraction,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)

__all__ = [
    "DiscreteGaussianNoise",
    "DiscreteLaplaceNoise",
    "add_noise",
    "calibrate_discrete_gaussian",
    "calibrate_discrete_gaussian_rho",
    "calibrate_discrete_laplace",
    "calibrate_noise",
    "lattice_sensitivity",
    "release_on_lattice",
    "exponential_mechanism",
    "gumbel_max",
    "choose_grid",
    "encode_contributions",
    "exact_sum",
    "round_to_grid",
    "PoissonSumPlan",
    "plan_poisson_sum",
    "poisson_sum_from_plan",
    "private_range",
    "LogRanges",
    "LogRangesPlan",
    "plan_log_ranges",
    "log_ranges_from_plan",
    "private_bounds",
    "private_quantile",
    "bounds_grid",
    "bounds_failure_probability",
    "learn_box",
    "learn_box_for_fit",
    "private_range_window",
    "stability_histogram_argmax",
    "TrimmedMeanPlan",
    "plan_trimmed_mean",
    "trimmed_mean_from_plan",
    "trimmed_sum",
    "fwht",
    "padded_dimension",
    "RandomHadamardRotation",
    "round_up_fraction",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_gaussian",
    "sample_laplace",
]
