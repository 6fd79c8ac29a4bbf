"""What every skuserdp estimator shares.

* :class:`UserLevelMixin` requests ``groups`` for ``fit`` and ``score`` by
  default, so that Pipeline, GridSearchCV and cross_validate route the user
  ids to the estimator when metadata routing is enabled — with no
  ``set_fit_request`` call. This mirrors scikit-learn's own
  ``GroupsConsumerMixin`` for splitters: for user-level privacy the user id is
  the unit of privacy, not optional metadata. It also validates parameters
  more strictly than scikit-learn and records a fit's spend.
* The parameter constraints of the privacy budget and of the public box.

The mean-estimator template is :class:`skuserdp.mean._base.UserLevelMeanEstimator`,
the linear models' is :mod:`skuserdp.linear_model._base`; what turns ``X`` and
``groups`` into users is :mod:`skuserdp.users._resolve`.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
)

from .privacy import report_spend

__all__ = ["UserLevelMixin", "accepts_bool", "BUDGET_CONSTRAINTS",
           "BOUNDS_CONSTRAINTS"]

#: parameter constraints of the privacy budget, the calibration, the seed and
#: the parallelism, shared by the estimators
BUDGET_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "calibration": [StrOptions({"tight", "paper"})],
    "random_state": ["random_state", np.random.SeedSequence],
    "n_jobs": [None, Integral],
}

#: the share of a fit's budget spent on its confidence interval's releases
#: (0: no interval)
CI_CONSTRAINTS = {
    "ci_share": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
}

#: parameter constraints of unbalanced users' weighting and of the estimand
#: (:mod:`skuserdp.mean._weights`)
#: the parameter constraints of the estimand (``estimand``, ``max_rows``) of
#: the mean estimators and the linear models
ESTIMAND_CONSTRAINTS = {
    "estimand": [StrOptions({"user_mean", "row_mean"})],
    "max_rows": [None, Interval(Integral, 1, None, closed="left")],
}


def check_estimand(estimator):
    """The cross-parameter rule of ``estimand`` and ``max_rows`` (each is
    validated on its own by :data:`ESTIMAND_CONSTRAINTS`): ``"row_mean"``
    needs the public cap ``max_rows``; ``"user_mean"`` refuses one (it has
    no effect there, and a silently ignored cap would hide a mistake)."""
    name = type(estimator).__name__
    if estimator.estimand == "row_mean" and estimator.max_rows is None:
        raise ValueError(
            f"{name}: estimand='row_mean' needs max_rows, the public cap k on "
            "the rows a user counts for (an int >= 1, chosen without looking "
            "at the data; a user with m rows gets weight min(m, k)/k).")
    if estimator.estimand == "user_mean" and estimator.max_rows is not None:
        raise ValueError(
            f"{name}: max_rows={estimator.max_rows!r} only applies to "
            "estimand='row_mean'; with estimand='user_mean' (every user "
            "weighs the same) leave max_rows=None.")


WEIGHT_CONSTRAINTS = {
    **ESTIMAND_CONSTRAINTS,
    "weighting": [StrOptions({"auto", "equal"})],
    "weights_share": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
}

#: parameter constraints of the public box (declared, or "auto": learned
#: privately from a share of the budget)
BOUNDS_CONSTRAINTS = {
    "bounds": [StrOptions({"auto"}), "array-like"],
    "bounds_share": [None, Interval(Real, 0, 1, closed="neither")],
}


#: smallest half-width of a box in any coordinate (the lattice grid's smallest
#: step), so that norms and squares stay positive
MIN_HALF_WIDTH = 2.0 ** -256


def _box_midpoint(lower, upper):
    """Centre of the box ``[lower, upper]`` (no overflow near the float limit)."""
    return 0.5 * lower + 0.5 * upper


def _box_half_width(lower, upper):
    """Half-width of the box ``[lower, upper]``, at least :data:`MIN_HALF_WIDTH`."""
    return np.maximum(0.5 * upper - 0.5 * lower, MIN_HALF_WIDTH)


def accepts_bool(constraints):
    """Whether a parameter's scikit-learn constraints allow a bool value
    (``"boolean"``, ``"verbose"`` or ``bool``); numeric ones never do here."""
    return any(c in ("boolean", "verbose") or c is bool
               for c in constraints if isinstance(c, (str, type)))


class UserLevelMixin:
    """Request ``groups`` in ``fit`` and ``score`` by default (metadata routing),
    validate parameters more strictly than scikit-learn does, and record the
    spend of a fit.

    scikit-learn's ``Interval`` constraints accept ``True`` as the number 1
    (``bool`` is an ``int``), and ``n_jobs=0`` passes ``[None, Integral]``
    (joblib only rejects it once a parallel section runs, so small inputs
    would accept it). ``epsilon=True`` is a bug in the caller's code, never a
    budget: both are refused before every fit.
    """

    __metadata_request__fit = {"groups": True}
    __metadata_request__score = {"groups": True}

    #: a skuserdp estimator's ``random_state`` accepts a ``SeedSequence``
    #: (read by :func:`skuserdp.utils._random.set_fit_seeds`)
    _seed_sequence_random_state = True

    def _validate_params(self):
        name = type(self).__name__
        for param, constraints in self._parameter_constraints.items():
            value = getattr(self, param, None)
            if isinstance(value, (bool, np.bool_)) and not accepts_bool(constraints):
                raise InvalidParameterError(
                    f"The {param!r} parameter of {name} must be a number, not the "
                    f"bool {value!r}.")
        # (a bool n_jobs was refused above: its constraints take no bool)
        if "n_jobs" in self._parameter_constraints and self.n_jobs == 0:
            raise InvalidParameterError(
                f"The 'n_jobs' parameter of {name} must be None, a positive int or "
                "a negative int (-1 = all cores); got 0.")
        super()._validate_params()

    def _set_spend(self, loss):
        """Record the privacy spent by a fit as fitted attributes:
        ``privacy_loss_`` and its ``epsilon_``, ``delta_``, ``rho_``
        (:func:`skuserdp.privacy.report_spend` at the estimator's ``delta``)."""
        eps, delta, rho = report_spend(loss, self.delta)
        self.privacy_loss_ = loss
        self.epsilon_ = eps
        self.delta_ = delta
        self.rho_ = rho
