"""Prediction methods that meta-estimators delegate to a fitted estimator."""

from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..users._column import split_groups_column


def _fitted_has(name):
    def check(self):
        inner = getattr(self, self._fitted_attr, self.estimator)
        return hasattr(inner, name)
    return check


_DELEGATED_DOC = """The fitted estimator's ``{name}``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        {returns}
            {description}
        """


def _delegated(name, returns, description):
    """The method ``name(self, X)`` of :class:`DelegatingMixin`: the fitted
    estimator's own, available when that estimator has it."""
    def method(self, X):
        return getattr(self._fitted(), name)(X)

    method.__name__ = name
    method.__qualname__ = f"DelegatingMixin.{name}"
    method.__doc__ = _DELEGATED_DOC.format(name=name, returns=returns,
                                           description=description)
    return available_if(_fitted_has(name))(method)


class DelegatingMixin:
    """``predict``, ``predict_proba``, ``decision_function`` and ``transform``
    of the fitted estimator named by ``_fitted_attr`` (each available when
    that estimator has it), its feature attributes and the wrapped
    ``estimator``'s tags (marked non-deterministic: every fit draws noise)."""

    _fitted_attr = "estimator_"

    def _fitted(self):
        check_is_fitted(self)
        return getattr(self, self._fitted_attr)

    def _set_feature_attributes(self, fitted):
        """``n_features_in_`` and, when it has them, ``feature_names_in_``
        of the fitted estimator ``fitted``."""
        self.n_features_in_ = fitted.n_features_in_
        if hasattr(fitted, "feature_names_in_"):
            self.feature_names_in_ = fitted.feature_names_in_

    def __sklearn_tags__(self):
        tags = self.estimator.__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    predict = _delegated("predict", "y_pred : ndarray", "Its predictions.")
    predict_proba = _delegated("predict_proba",
                               "proba : ndarray of shape (n_samples, n_classes)",
                               "Its class probabilities.")
    decision_function = _delegated("decision_function", "scores : ndarray",
                                   "Its decision values.")
    transform = _delegated("transform", "Xt : ndarray", "Its transform of ``X``.")

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
