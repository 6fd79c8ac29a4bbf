"""skuserdp: scikit-learn compatible estimators with user-level differential privacy."""

__version__ = "0.1.0.dev0"
