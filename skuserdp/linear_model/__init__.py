"""User-level private linear models (Levy et al., Algorithms 3–4) and baselines.

Every estimator is differentially private at the level of users: two
datasets are neighbours when they differ in all rows of one user (identified
by ``groups``), with the number of users public.
"""

from ._dpsgd import UserDPSGDClassifier, UserDPSGDRegressor
from ._linear_regression import UserDPLinearRegression
from ._sgd import (
    GradientPlan,
    PhasedPlan,
    phased_erm,
    plan_gradient_descent,
    plan_phased_erm,
    private_gradient_descent,
)

__all__ = [
    "UserDPSGDRegressor",
    "UserDPSGDClassifier",
    "UserDPLinearRegression",
    "GradientPlan",
    "plan_gradient_descent",
    "private_gradient_descent",
    "PhasedPlan",
    "plan_phased_erm",
    "phased_erm",
]
