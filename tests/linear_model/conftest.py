"""Shared fixtures of the linear-model tests."""

import pytest
from sklearn.base import BaseEstimator, clone


class XYAudited(BaseEstimator):
    """Fits ``estimator`` on ``(X[:, :-1], X[:, -1])``; keeps it as ``fitted_``
    and exposes its ``epsilon_`` / ``delta_``."""

    def __init__(self, estimator=None, random_state=None):
        self.estimator = estimator
        self.random_state = random_state

    def fit(self, X, groups=None):
        est = clone(self.estimator).set_params(random_state=self.random_state)
        self.fitted_ = est.fit(X[:, :-1], X[:, -1], groups=groups)
        self.epsilon_, self.delta_ = est.epsilon_, est.delta_
        return self


@pytest.fixture
def xy_audited():
    """The wrapper class that lets ``audit_estimator`` (which calls
    ``fit(X, groups=...)``) audit a supervised linear model."""
    return XYAudited
