"""The privacy core: the only place where skuserdp does privacy arithmetic.

Budgets (:class:`PureDP`, :class:`ApproxDP`, :class:`ZCDP`), composition,
conversion, noise calibration and sensitivities. Every quantity is for
user-level neighbouring datasets: two datasets are neighbours when they differ
in the entire data of one user (replace-one; the number of users is public).
"""

from ._ball_sampler import (
    BALL_SAMPLER_MAX_EPSILON,
    ball_sampler_max_rounds,
    ball_sampler_privacy,
    calibrate_ball_sampler,
)
from ._budget import ZCDP, ApproxDP, PureDP
from ._accountant import BudgetAccountant
from ._subsampled import (
    LATTICE_ROUNDING_TAU,
    calibrate_poisson_gaussian,
    calibrate_poisson_lattice,
    lattice_rounding_gap,
    poisson_gaussian_epsilon,
    poisson_lattice_epsilon,
    poisson_lattice_sigma2,
)
from ._selection import (
    random_stopping_call_budget,
    random_stopping_max_iter,
    random_stopping_privacy,
)
from ._repeat_select import (
    RUN_DISTRIBUTIONS,
    repeat_select_privacy,
    repeat_select_rdp,
    repeat_select_rho_for,
    run_distribution_shape,
    tnb_gamma,
    tnb_mean,
)
from ._public_bounds import split_for_log_ranges, split_for_public_bounds
from ._range_threshold import histogram_pass_threshold
from ._stability import stability_histogram_privacy, stability_histogram_threshold
from ._composition import (
    adaptive_query_budget,
    advanced_composition_step,
    compose,
    compose_adaptive_queries,
    compose_advanced,
    compose_homogeneous,
    compose_parallel,
    compose_spend,
    split_for_fits,
    split_off,
    split_zcdp,
    split_zcdp_shares,
    zcdp_remaining,
)
from ._calibration import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_privacy,
    gaussian_sigma,
    gaussian_sigma_for_rho,
    laplace_privacy,
    laplace_scale,
)
from ._conversion import (
    bounded_range_epsilon,
    pure_to_approx_dp,
    pure_to_zcdp,
    rdp_curve_epsilon,
    report_spend,
    zcdp_delta,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)
from ._sensitivity import (
    NORMS,
    lattice_contribution_radius,
    lattice_widened_sensitivity,
    linf_ball_l2_radius,
    replace_one_histogram_sensitivity,
    replace_one_mean_sensitivity,
    rank_one_psd_sum_sensitivity,
    replace_one_count_sensitivity,
    replace_one_sum_sensitivity,
    squared_deviation_ball,
)
from ._spectral import psd_min_eigenvalue_sensitivity, second_moment_bounds

__all__ = [
    "PureDP",
    "ApproxDP",
    "ZCDP",
    "BudgetAccountant",
    "compose",
    "compose_parallel",
    "compose_advanced",
    "compose_homogeneous",
    "advanced_composition_step",
    "zcdp_remaining",
    "split_off",
    "split_zcdp",
    "split_zcdp_shares",
    "split_for_public_bounds",
    "split_for_log_ranges",
    "histogram_pass_threshold",
    "adaptive_query_budget",
    "compose_adaptive_queries",
    "compose_spend",
    "split_for_fits",
    "bounded_range_epsilon",
    "pure_to_zcdp",
    "pure_to_approx_dp",
    "zcdp_to_approx_dp",
    "zcdp_delta",
    "report_spend",
    "zcdp_rho_for",
    "rdp_curve_epsilon",
    "laplace_privacy",
    "laplace_scale",
    "gaussian_privacy",
    "gaussian_sigma_for_rho",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_sigma",
    "NORMS",
    "replace_one_sum_sensitivity",
    "replace_one_count_sensitivity",
    "squared_deviation_ball",
    "rank_one_psd_sum_sensitivity",
    "replace_one_mean_sensitivity",
    "replace_one_histogram_sensitivity",
    "lattice_contribution_radius",
    "lattice_widened_sensitivity",
    "linf_ball_l2_radius",
    "BALL_SAMPLER_MAX_EPSILON",
    "ball_sampler_privacy",
    "calibrate_ball_sampler",
    "ball_sampler_max_rounds",
    "stability_histogram_threshold",
    "stability_histogram_privacy",
    "random_stopping_call_budget",
    "random_stopping_privacy",
    "random_stopping_max_iter",
    "RUN_DISTRIBUTIONS",
    "run_distribution_shape",
    "tnb_mean",
    "tnb_gamma",
    "repeat_select_rdp",
    "repeat_select_privacy",
    "repeat_select_rho_for",
    "poisson_gaussian_epsilon",
    "calibrate_poisson_gaussian",
    "LATTICE_ROUNDING_TAU",
    "lattice_rounding_gap",
    "poisson_lattice_sigma2",
    "poisson_lattice_epsilon",
    "calibrate_poisson_lattice",
    "second_moment_bounds",
    "psd_min_eigenvalue_sensitivity",
]
