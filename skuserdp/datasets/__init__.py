"""Synthetic datasets for user-level differential privacy.

Generators return ``X``, the ``groups`` array (one user id per row) and the
known ground truth, so that private estimators can be checked against it.

- :func:`make_user_samples`: many rows per user around a known population
  mean, with Gaussian, bounded, Student-t or symmetric Pareto noise and
  optional corrupted users.
"""

from ._synthetic import make_user_samples

__all__ = ["make_user_samples"]
