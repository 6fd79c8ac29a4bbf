"""User-level confidence intervals (post-processing of released statistics)."""

from ._intervals import ConfidenceIntervalMixin, IntervalState, wald_half_width

__all__ = ["ConfidenceIntervalMixin", "IntervalState", "wald_half_width"]
