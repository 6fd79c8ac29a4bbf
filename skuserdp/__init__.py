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
from . import linear_model, mean
from .model_selection import BudgetedEstimator, PrivateGridSearch
from .privacy import BudgetAccountant
from .users import user_means

__version__ = "0.1.0.dev0"


def _public_estimators(*modules):
    """The estimator classes among the modules' ``__all__``, by name: a new
    estimator exported by its subpackage is exported here too."""
    from sklearn.base import BaseEstimator

    found = {}
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseEstimator):
                found[name] = obj
    return found


_ESTIMATORS = _public_estimators(mean, linear_model)
globals().update(_ESTIMATORS)

__all__ = [
    # mean estimation and linear models (every estimator class of
    # skuserdp.mean.__all__ and skuserdp.linear_model.__all__)
    *_ESTIMATORS,
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
