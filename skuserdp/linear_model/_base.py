"""What the user-level linear models share: inputs, public bounds, spend.

Rows and targets are mapped onto the declared public domain before anything
else (a per-row, hence per-user, operation that costs no privacy): every row
of ``X`` is projected onto the ℓ2 ball of radius ``feature_bound`` and every
target is clipped to ``[-target_bound, target_bound]``. With an intercept the
model acts on the augmented row ``x̃ = (x, 1)``, of norm at most
``√(feature_bound² + 1)``.
"""

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import UserLevelMixin, _check_not_sparse, resolve_user_codes
from ..privacy._conversion import report_spend

__all__ = ["project_rows", "user_averaging_matrix"]


def project_rows(X, bound):
    """Project every row of ``X`` onto the ℓ2 ball of radius ``bound`` (a copy).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    bound : float

    Returns
    -------
    X_proj : ndarray of shape (n_samples, n_features)
    """
    norms = np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return X * scale[:, None]


def user_averaging_matrix(codes, n_users):
    """Sparse ``A`` with ``(A @ V)[u]`` the mean of user ``u``'s rows of ``V``.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        User code of every row.
    n_users : int

    Returns
    -------
    A : scipy.sparse.csr_array of shape (n_users, n_samples)
    """
    counts = np.bincount(codes, minlength=n_users).astype(np.float64)
    n_rows = codes.shape[0]
    return sp.csr_array((1.0 / counts[codes], (codes, np.arange(n_rows))),
                        shape=(n_users, n_rows))


class _UserDPLinearModel(UserLevelMixin, BaseEstimator):
    """Base class: validation, public bounds and the fitted spend."""

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "fit_intercept": ["boolean"],
        "feature_bound": [Interval(Real, 0, None, closed="neither")],
        "calibration": [StrOptions({"tight", "paper"})],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
    }

    _min_users = 2

    def _validate_supervised(self, X, y, groups, *, y_numeric=True):
        """Validate X, y and groups; return (X, y, codes, n_users)."""
        _check_not_sparse(X)
        X, y = validate_data(self, X, y, dtype=np.float64, order="C",
                             y_numeric=y_numeric, multi_output=False)
        codes, n_users = resolve_user_codes(self, groups, X.shape[0])
        return X, y, codes, n_users

    def _augment(self, X):
        """Rows projected onto the feature ball, with a column of ones."""
        X = project_rows(X, self.feature_bound)
        if self.fit_intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    @property
    def _row_bound(self):
        b = float(self.feature_bound)
        return math.sqrt(b * b + 1.0) if self.fit_intercept else b

    def _set_spend(self, loss):
        eps, delta, rho = report_spend(loss, self.delta)
        self.privacy_loss_ = loss
        self.epsilon_ = eps
        self.delta_ = delta
        self.rho_ = rho

    def _set_coef(self, W):
        """Split the parameter matrix ``(n_outputs, p)`` into coef_/intercept_."""
        if self.fit_intercept:
            coef, intercept = W[:, :-1], W[:, -1]
        else:
            coef, intercept = W, np.zeros(W.shape[0])
        return coef, intercept

    def _decision(self, X):
        check_is_fitted(self)
        _check_not_sparse(X)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        X = project_rows(X, self.feature_bound)
        coef = np.atleast_2d(self.coef_)
        return X @ coef.T + self.intercept_
