"""Charge every fit of an estimator to one user-level budget.

:class:`BudgetedEstimator` wraps any skuserdp estimator: each ``fit`` fits a
clone, charges its recorded privacy loss to a
:class:`~skuserdp.privacy.BudgetAccountant`, and releases the fit only if
the charge is accepted. The privacy arithmetic is the accountant's
(:func:`~skuserdp.privacy.compose_spend`); this module does none.
"""

from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.utils._param_validation import HasMethods

from ..base import UserLevelMixin
from ..privacy import BudgetAccountant
from ..users._column import split_groups_column
from ..utils._random import charged_fit_seed, forget_fit_seeds, set_fit_seeds
from ._delegation import DelegatingMixin

__all__ = ["BudgetedEstimator"]


class BudgetedEstimator(DelegatingMixin, UserLevelMixin, MetaEstimatorMixin,
                        BaseEstimator):
    """Fit an estimator and charge its privacy loss to a shared budget.

    Every ``fit`` fits a clone of ``estimator`` and charges the clone's
    ``privacy_loss_`` to ``accountant``. If the charge would take the
    accountant's composed spend over its total, ``fit`` raises
    :class:`~skuserdp.exceptions.BudgetExceededError` and the fitted clone
    is discarded: nothing is released. The decision is a function of public
    values only (a fit's privacy loss depends on its public plan: budget,
    number of users, dimension), so refusing leaks nothing.

    The unit of privacy is the user: the accountant composes user-level
    guarantees (neighbouring datasets differ in one user's entire data; the
    number of users is public), so it must only see fits on the same users'
    data (or on subsets of them).

    No two charged fits share noise. Composition assumes independent
    releases, and ``clone`` copies seeds: every fit's ``random_state``
    parameters are replaced by a stream that the accountant hands out once
    (:meth:`~skuserdp.privacy.BudgetAccountant.new_stream`). A seeded
    estimator (an int) stays reproducible -- the same sequence of fits on a
    new accountant gives the same results -- but its fits no longer repeat
    one noise. The fitted clone is published with ``random_state=None``: no
    seed material of a fit is exposed.

    Parameters
    ----------
    estimator : estimator instance
        A skuserdp estimator (it records ``privacy_loss_`` when fitted).
    accountant : BudgetAccountant
        The shared budget. Clones of this meta-estimator (``clone``,
        ``GridSearchCV``, ``Pipeline``) share it: an accountant's copies are
        itself.

    Attributes
    ----------
    estimator_ : estimator instance
        The fitted clone whose charge was accepted (its ``random_state``
        parameters set to ``None``).
    privacy_loss_ : PureDP, ApproxDP or ZCDP
        Its privacy loss, as charged.
    epsilon_, delta_ : float
        Its spend, as the estimator reports it.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.

    See Also
    --------
    skuserdp.privacy.BudgetAccountant : The ledger and its composition.

    Notes
    -----
    Why a meta-estimator with a handle, and not an ``accountant=`` parameter
    on every estimator or a global context: a global context is invisible
    to joblib workers, and diffprivlib's accountant parameter is
    deep-copied by ``clone``, so clones charge copies. The accountant is a
    handle that copies to itself; pickled (sent to a joblib *process*
    worker), it becomes a detached copy that refuses to charge, so a fit
    there fails loudly with
    :class:`~skuserdp.exceptions.DetachedAccountantError` instead of
    charging a copy. Use ``n_jobs=1`` or threads
    (``joblib.parallel_config(backend="threading")``).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import ClipNoiseMeanEstimator
    >>> from skuserdp.model_selection import BudgetedEstimator
    >>> from skuserdp.privacy import BudgetAccountant
    >>> rng = np.random.default_rng(0)
    >>> X, users = rng.uniform(0, 1, (600, 2)), np.repeat(np.arange(200), 3)
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> est = BudgetedEstimator(
    ...     ClipNoiseMeanEstimator(epsilon=0.5, delta=0.0, bounds=(0, 1),
    ...                            random_state=0), acc)
    >>> est.fit(X, groups=users).estimator_.mean_.shape
    (2,)
    >>> _ = est.fit(X, groups=users)  # the second half of the budget
    >>> round(acc.spent.epsilon, 6)
    1.0
    >>> est.fit(X, groups=users)
    Traceback (most recent call last):
    ...
    skuserdp.exceptions.BudgetExceededError: ...
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"])],
        "accountant": [BudgetAccountant],
    }

    def __init__(self, estimator, accountant):
        self.estimator = estimator
        self.accountant = accountant

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, *, groups=None):
        """Fit a clone of the estimator and charge its privacy loss.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of all users. Not modified.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised estimators.
        groups : array-like of shape (n_samples,) or str, default=None
            User id of every row (the unit of privacy), passed on; or the
            name of the user-id column of a pandas DataFrame ``X``, taken
            out of ``X`` (not a feature).

        Returns
        -------
        self : object
            The fitted meta-estimator.

        Raises
        ------
        BudgetExceededError
            When the accountant refuses the charge; the fit is discarded.
        """
        X, groups = split_groups_column(X, groups)  # groups='column name'
        est = clone(self.estimator)
        # every charged fit gets its own noise, even with a seeded estimator:
        # composition assumes independent releases (and clone copies seeds)
        stream = self.accountant.new_stream()
        seeds = set_fit_seeds(est, lambda name, value: charged_fit_seed(value, stream))
        est.fit(X, y, groups=groups)
        forget_fit_seeds(est, seeds)
        loss = getattr(est, "privacy_loss_", None)
        if loss is None:
            raise TypeError(
                f"{type(est).__name__} records no privacy_loss_ after fit: only "
                "skuserdp estimators can be charged to a BudgetAccountant.")
        label = f"{type(est).__name__}(epsilon={getattr(est, 'epsilon', '?')})"
        self.accountant.charge(loss, label=label)  # raises: est is dropped
        self.estimator_ = est
        self.privacy_loss_ = loss
        self.epsilon_ = est.epsilon_
        self.delta_ = est.delta_
        self._set_feature_attributes(est)
        return self
