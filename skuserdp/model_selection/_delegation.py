"""Prediction methods that meta-estimators delegate to a fitted estimator."""

from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..users._column import split_groups_column


def _fitted_has(name):
    def check(self):
        inner = getattr(self, self._fitted_attr, self.estimator)
        return hasattr(inner, name)
    return check


class DelegatingMixin:
    """``predict``, ``predict_proba``, ``decision_function`` and ``transform``
    of the fitted estimator named by ``_fitted_attr`` (each available when
    that estimator has it)."""

    _fitted_attr = "estimator_"

    def _fitted(self):
        check_is_fitted(self)
        return getattr(self, self._fitted_attr)

    @available_if(_fitted_has("predict"))
    def predict(self, X):
        """The fitted estimator's ``predict``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        y_pred : ndarray
            Its predictions.
        """
        return self._fitted().predict(X)

    @available_if(_fitted_has("predict_proba"))
    def predict_proba(self, X):
        """The fitted estimator's ``predict_proba``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Its class probabilities.
        """
        return self._fitted().predict_proba(X)

    @available_if(_fitted_has("decision_function"))
    def decision_function(self, X):
        """The fitted estimator's ``decision_function``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        scores : ndarray
            Its decision values.
        """
        return self._fitted().decision_function(X)

    @available_if(_fitted_has("transform"))
    def transform(self, X):
        """The fitted estimator's ``transform``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        Xt : ndarray
            Its transform of ``X``.
        """
        return self._fitted().transform(X)

    def score(self, X, y=None, *, groups=None, sample_weight=None):
        """The fitted estimator's ``score`` (evaluation; not private).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Held-out rows.
        y : array-like of shape (n_samples,), default=None
            Held-out targets (supervised estimators).
        groups : array-like of shape (n_samples,) or str, default=None
            Held-out user ids (or the name of ``X``'s user-id column, taken
            out of ``X``).
        sample_weight : array-like of shape (n_samples,), default=None
            Passed on when given.

        Returns
        -------
        score : float
            What the fitted estimator's ``score`` returns.
        """
        X, groups = split_groups_column(X, groups)
        kwargs = {"groups": groups}
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        return self._fitted().score(X, y, **kwargs)
