"""skuserdp: scikit-learn compatible estimators with user-level differential privacy.

Every estimator protects each *user's* entire contribution: two datasets are
neighbours when they differ in all rows of one user (identified by
``groups``), with the number of users public.
"""

from .datasets import make_user_samples
from .exceptions import ItemLevelPrivacyWarning, YIgnoredWarning
from .mean import ClipNoiseMeanEstimator, FewUsersBallEstimator, WinsorizedMeanEstimator
from .users import user_means

__version__ = "0.1.0.dev0"

__all__ = [
    "ClipNoiseMeanEstimator",
    "WinsorizedMeanEstimator",
    "FewUsersBallEstimator",
    "ItemLevelPrivacyWarning",
    "YIgnoredWarning",
    "make_user_samples",
    "user_means",
    "__version__",
]
