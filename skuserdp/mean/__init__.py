"""User-level differentially private mean estimators."""

from ._auto import UserMeanEstimator, choose_mean_method, coinpress_shrink_ratio
from ._clip_noise import (
    ClipNoiseMeanEstimator,
    ClipNoisePlan,
    clip_noise_from_plan,
    clip_noise_mean,
    plan_clip_noise,
)
from ._coinpress import (
    CoinPressMeanEstimator,
    CoinPressPlan,
    auto_steps,
    coinpress_mean,
    plan_coinpress,
)
from ._concentration import tau_bounded_rows, tau_sub_gaussian
from ._column_scaled import ColumnScaledMeanEstimator
from ._discrete import DiscreteDistributionEstimator
from ._few_users import (
    FewUsersBallEstimator,
    FewUsersPlan,
    few_users_from_plan,
    few_users_mean,
    min_users_for_ball_sampler,
    plan_few_users,
    user_radius,
)
from ._person_level import (
    PersonLevelPlan,
    ThreadedClipNoiseEstimator,
    person_level_from_plan,
    person_level_mean,
    person_level_mean_1d,
    person_level_mean_pure,
    plan_person_level,
)
from ._trimmed import TrimmedMeanEstimator
from ._winsorized import (
    WinsorizedMeanEstimator,
    WinsorizedPlan,
    answer_adaptive_queries,
    plan_winsorized_mean,
    winsorized_mean,
    winsorized_mean_from_plan,
)

__all__ = [
    "UserMeanEstimator",
    "choose_mean_method",
    "coinpress_shrink_ratio",
    "ClipNoiseMeanEstimator",
    "WinsorizedMeanEstimator",
    "FewUsersBallEstimator",
    "DiscreteDistributionEstimator",
    "ThreadedClipNoiseEstimator",
    "plan_person_level",
    "person_level_from_plan",
    "PersonLevelPlan",
    "person_level_mean",
    "person_level_mean_1d",
    "person_level_mean_pure",
    "CoinPressMeanEstimator",
    "TrimmedMeanEstimator",
    "ColumnScaledMeanEstimator",
    "clip_noise_mean",
    "plan_clip_noise",
    "clip_noise_from_plan",
    "ClipNoisePlan",
    "few_users_mean",
    "plan_few_users",
    "few_users_from_plan",
    "FewUsersPlan",
    "user_radius",
    "min_users_for_ball_sampler",
    "winsorized_mean",
    "answer_adaptive_queries",
    "WinsorizedPlan",
    "plan_winsorized_mean",
    "winsorized_mean_from_plan",
    "coinpress_mean",
    "plan_coinpress",
    "CoinPressPlan",
    "auto_steps",
    "tau_bounded_rows",
    "tau_sub_gaussian",
]
