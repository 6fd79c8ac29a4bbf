"""Warnings and errors specific to skuserdp."""

__all__ = [
    "AccuracyWarning",
    "BudgetExceededError",
    "DetachedAccountantError",
    "ItemLevelPrivacyWarning",
    "YIgnoredWarning",
]


class ItemLevelPrivacyWarning(UserWarning):
    """The fit had no ``groups``: every row was treated as its own user.

    The privacy guarantee then protects single rows (item-level), not users.
    A user with m rows is only protected with group privacy, i.e. roughly an
    m-fold larger ε. Pass ``groups=`` (one user id per row) to get user-level
    privacy. Inside ``Pipeline``, ``GridSearchCV`` or ``cross_validate``,
    enable metadata routing (``sklearn.set_config(enable_metadata_routing=True)``)
    so that ``groups`` reaches ``fit``; without routing, scikit-learn passes
    ``groups`` to the CV splitter only.
    """


class YIgnoredWarning(ItemLevelPrivacyWarning):
    """A mean estimator received ``y`` but no ``groups``.

    Mean estimators ignore ``y``. The usual cause is ``est.fit(X, user_ids)``:
    the user ids bind to ``y`` positionally and are ignored, so the fit is
    item-level. Write ``est.fit(X, groups=user_ids)`` instead.
    """


class AccuracyWarning(UserWarning):
    """The release is private, but its accuracy guarantee does not hold.

    Raised from public quantities only (number of users, dimension, budget,
    declared bounds), never from the data: e.g. too few users for the
    paper's range step to find the bulk of every coordinate with the
    declared failure probability. The privacy guarantee is unaffected.
    """


class BudgetExceededError(ValueError):
    """A charge would take a BudgetAccountant over its total budget.

    Raised by :class:`~skuserdp.privacy.BudgetAccountant` and
    :class:`~skuserdp.model_selection.BudgetedEstimator`. The fitted result is
    discarded before anything is released: the decision depends only on public
    values (the fit's privacy loss is a function of its public plan), so
    refusing leaks nothing.
    """


class DetachedAccountantError(RuntimeError):
    """A pickled copy of a BudgetAccountant was asked to charge.

    A :class:`~skuserdp.privacy.BudgetAccountant` lives in the process that
    created it. Pickling it (which is how joblib sends an estimator to a
    *process* worker: ``n_jobs > 1`` with the default ``"loky"`` backend or
    ``"multiprocessing"``) gives a *detached* copy: its ledger can be read,
    but :meth:`~skuserdp.privacy.BudgetAccountant.charge`,
    :meth:`~skuserdp.privacy.BudgetAccountant.would_fit` and
    :meth:`~skuserdp.privacy.BudgetAccountant.new_stream` raise this error,
    because charges in another process would never reach the real ledger.
    Fit with ``n_jobs=1``, or with threads
    (``joblib.parallel_config(backend="threading")``).
    """
