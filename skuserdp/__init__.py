"""skuserdp: scikit-learn compatible estimators with user-level differential privacy.

Every estimator protects each *user's* entire contribution: two datasets are
neighbours when they differ in all rows of one user (identified by
``groups``), with the number of users public.

Every public estimator (and the model-selection meta-estimators, the budget
accountant, the data helpers and the warnings) can be imported from here as
well as from its submodule: ``from skuserdp import UserMeanEstimator`` and
``from skuserdp.mean import UserMeanEstimator`` give the same class. The
functions and plans of the algorithm cores stay in their submodules.
"""

from .datasets import make_user_samples
from .exceptions import (
    AccuracyWarning,
    BudgetExceededError,
    DetachedAccountantError,
    ItemLevelPrivacyWarning,
    YIgnoredWarning,
)
from .linear_model import (
    UserDPLinearRegression,
    UserDPSGDClassifier,
    UserDPSGDRegressor,
)
from .mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    DiscreteDistributionEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
)
from .model_selection import BudgetedEstimator, PrivateGridSearch
from .privacy import BudgetAccountant
from .users import user_means

__version__ = "0.1.0.dev0"

__all__ = [
    # mean estimation
    "UserMeanEstimator",
    "ClipNoiseMeanEstimator",
    "CoinPressMeanEstimator",
    "WinsorizedMeanEstimator",
    "FewUsersBallEstimator",
    "ThreadedClipNoiseEstimator",
    "DiscreteDistributionEstimator",
    # linear models
    "UserDPSGDRegressor",
    "UserDPSGDClassifier",
    "UserDPLinearRegression",
    # model selection and budgets
    "BudgetedEstimator",
    "PrivateGridSearch",
    "BudgetAccountant",
    # data
    "make_user_samples",
    "user_means",
    # warnings and errors
    "AccuracyWarning",
    "BudgetExceededError",
    "DetachedAccountantError",
    "ItemLevelPrivacyWarning",
    "YIgnoredWarning",
    "__version__",
]
