"""User handling: ``groups`` validation and per-user aggregation."""

from ._aggregate import UserMeans, user_means
from ._groups import check_groups

__all__ = ["UserMeans", "check_groups", "user_means"]
