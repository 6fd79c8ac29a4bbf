"""Empirical privacy audits for skuserdp estimators.

:func:`epsilon_lower_bound` turns runs of a scalar statistic of a mechanism on
two neighbouring datasets into a statistically valid lower bound on epsilon.
:func:`audit_estimator` produces those runs by fitting an estimator many times,
and :func:`worst_case_mean_neighbours` builds a worst-case pair of datasets for
mean estimators that clip user means to a ball. An audit can prove that a
privacy claim is wrong; it can never prove that one is right.

For the few-users ball sampler in one dimension the output law is exact
(:func:`ball_sampler_law_1d`), and :func:`hockey_stick_divergence` gives the
exact δ(ε) of a neighbouring pair — a proof for that pair, not an estimate.
"""

from ._ball_exact import (
    BallSamplerLaw1D,
    ball_sampler_law_1d,
    hockey_stick_divergence,
)
from ._audit import (
    AuditResult,
    audit_estimator,
    epsilon_lower_bound,
    worst_case_mean_neighbours,
)

__all__ = [
    "AuditResult",
    "audit_estimator",
    "epsilon_lower_bound",
    "worst_case_mean_neighbours",
    "BallSamplerLaw1D",
    "ball_sampler_law_1d",
    "hockey_stick_divergence",
]
