"""Private hyper-parameter search over a grid.

The users are split at random (independently of the data) into training
users and validation users. Every candidate of the grid is fitted on the
training users; the candidates are compared on the validation users by
Levy et al.'s private selection (Algorithm 5, Liu & Talwar's random
stopping: :func:`~skuserdp.model_selection.private_selection`). The
two parts touch disjoint users, so the search's spend is the larger of the
fits' composed spend and the selection's (parallel composition); every
privacy quantity comes from :mod:`skuserdp.privacy`
(:func:`~skuserdp.privacy.split_for_fits`,
:func:`~skuserdp.privacy.compose_spend`,
:func:`~skuserdp.privacy.compose_parallel`).
"""

import numbers
import os
import warnings

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import ParameterGrid
from sklearn.utils.parallel import Parallel, delayed

from ..base import UserLevelMixin
from ..exceptions import AccuracyWarning, ItemLevelPrivacyWarning
from ..mean import tau_bounded_rows
from ..mean._concentration import private_tau, private_tau_feasible
from ..mechanisms._random_runs import random_runs_schedule
from ..privacy import (
    ZCDP,
    BudgetAccountant,
    PureDP,
    compose,
    compose_parallel,
    compose_spend,
    split_for_fits,
    split_off,
)
from ..users._column import split_groups_column
from ..users._dask import refuse_dask
from ..users._groups import check_groups_alignment
from ..users._resolve import check_not_sparse, resolve_user_codes
from ..utils._numeric import quiet_floating_point
from ..utils._random import (
    charged_fit_seed,
    fit_random_state,
    forget_fit_seeds,
    generator_from,
    make_seed_sequence,
    set_fit_seeds,
)
from ..utils._validation import validate_rows
from ._delegation import DelegatingMixin
from ._random_runs import (
    RUN_DISTRIBUTIONS,
    RandomRunsResult,
    check_run_loss,
    check_zcdp_candidate,
    plan_score,
    random_runs_budget,
    select_among_runs,
)
from ._random_runs import spend as random_runs_spend
from ._private_selection import _user_losses, private_selection
from ._private_step import (
    fit_candidate,
    fitted_privacy_loss,
    private_rows,
    private_step_name,
    private_step_prefix,
)

__all__ = ["PrivateGridSearch"]

#: smallest number of users in each part of the split
MIN_PART_USERS = 2
#: failure probability of the private tau of the selection (OUR CHOICE)
TAU_GAMMA = 0.01
#: largest δ the selection's loop cap costs (never more than the search's δ;
#: with delta = 0 the loop is not capped and the selection is pure DP)
SELECTION_CAP_DELTA = 1e-12
#: the warnings of the candidates' fits that are passed on: skuserdp's own,
#: raised from public values (the plan, the number of users) and released
#: outputs only, and scikit-learn's DataConversionWarning (a column-vector y,
#: a conversion of dtype: from the shapes and dtypes of the input, its public
#: schema). Any other warning raised while the candidates are fitted
#: (scikit-learn's, NumPy's, a FunctionTransformer func's: they may depend
#: on the rows), and every warning raised while the validation losses are
#: computed, is dropped.
PUBLIC_WARNINGS = (AccuracyWarning, ItemLevelPrivacyWarning, DataConversionWarning)


def _mean_squared_distance(estimator, X, y):
    """Per-row loss of a mean estimator: ``‖mean_ − x‖²`` (the user's
    average is ``‖mean_ − x̄_u‖²`` plus the user's own spread, which is the
    same for every candidate). ``estimator`` is the private step and ``X``
    the rows as it sees them (:func:`private_rows` of a Pipeline)."""
    # (as the estimator's fit would: finite numbers, no data value in messages)
    X = validate_rows(estimator, X, reset=False, dtype=np.float64)
    diff = X - estimator.mean_
    return np.einsum("ij,ij->i", diff, diff)


def _public_warnings(caught):
    """The recorded warnings that are passed on (:data:`PUBLIC_WARNINGS`)."""
    return [w.message for w in caught if issubclass(w.category, PUBLIC_WARNINGS)]


def _fit_run(estimator, X, y, groups):
    """Fit one estimator with its warnings recorded apart; return it and
    the warnings to pass on (a run of the repeat-and-select search, whose
    winner's only are passed on, or a candidate fitted in another
    process)."""
    with warnings.catch_warnings(record=True) as caught, quiet_floating_point():
        warnings.simplefilter("always")
        fitted = fit_candidate(estimator, X, y, groups)
    return fitted, _public_warnings(caught)


def _fit_candidate(estimator, X, y, groups, parent):
    """Fit one candidate (in a joblib worker when ``n_jobs`` > 1); return it
    and the warnings to pass on. In the search's process (sequentially or in
    a thread) the search records the warnings itself; in another process
    they are recorded here and returned. NumPy's floating-point warnings are
    off (a worker thread does not inherit the search's error state)."""
    if os.getpid() == parent:
        with quiet_floating_point():
            return fit_candidate(estimator, X, y, groups), []
    return _fit_run(estimator, X, y, groups)


class PrivateGridSearch(DelegatingMixin, UserLevelMixin, MetaEstimatorMixin,
                        BaseEstimator):
    """Choose hyper-parameters privately at user level; spend exactly a budget.

    A private counterpart of ``GridSearchCV``. The users are split at random
    (independently of the data) into training users and a fraction
    ``validation_fraction`` of validation users. Every candidate of
    ``param_grid`` is fitted on the training users, at a per-fit budget such
    that all the fits compose to ``(epsilon, delta)``
    (:func:`~skuserdp.privacy.split_for_fits`). The candidates are then
    compared on the validation users by a private selection at ``epsilon``
    (Levy et al., Algorithm 5: Liu & Talwar's random stopping over
    WinsorizedMean releases of each candidate's per-user average loss,
    :func:`select_model_privately`). Training and validation users are
    disjoint, so the search is ``(epsilon, delta)``-DP (parallel
    composition): that is the spend recorded in ``privacy_loss_`` and
    charged to ``accountant``.

    The unit of privacy is the user: neighbouring datasets differ in one
    user's entire data (replace-one; the number of users is public).

    Parameters
    ----------
    estimator : estimator instance
        A skuserdp estimator with ``epsilon`` and ``delta`` parameters (the
        *private step*), or a ``Pipeline`` that ends in one. (A
        :class:`~skuserdp.model_selection.BudgetedEstimator` is refused: its
        accountant would not see the selection; pass ``accountant=`` to the
        search.) The private step's ``epsilon`` and
        ``delta`` (e.g. ``userdpsgdregressor__epsilon``) are replaced by the
        per-fit budget. The other steps of a Pipeline are fitted on the
        private training users and published with the winner, so they must
        learn nothing from the data, and neither their output's format nor
        their errors or warnings may depend on it: ``FunctionTransformer``
        (its ``func`` acting on each row alone, finite rows to finite rows;
        ``check_inverse=False`` with an ``inverse_func``), ``Normalizer``,
        ``Binarizer``, ``OneHotEncoder``/``OrdinalEncoder`` with declared
        ``categories=[...]`` (``handle_unknown="ignore"``, dense, no
        ``drop``; resp. ``"use_encoded_value"`` with a numeric
        ``unknown_value``), ``SimpleImputer(strategy="constant",
        fill_value=..., keep_empty_features=True)``, a ``FrozenEstimator``
        of a step fitted on public data, and ``ColumnTransformer``
        (``sparse_threshold=0``; columns by name, position or
        ``make_column_selector(pattern=...)``), ``Pipeline`` or
        ``FeatureUnion`` of such. Any other step (e.g. ``StandardScaler``,
        which reads the means, or ``PolynomialFeatures``, whose products
        can overflow) is refused by name before anything is fitted (docs:
        *Searching a pipeline*). The search runs the steps itself: their
        errors show no data value.
    param_grid : dict or list of dicts
        As for ``GridSearchCV``, with ``step__param`` names for a Pipeline;
        must not contain ``epsilon`` or ``delta``, at any depth (the budget
        is the search's). Every candidate is checked as ``estimator`` is.
    epsilon : float, default=1.0
        Total ε of the search, ``> 0``.
    delta : float, default=1e-6
        Total δ of the search, in ``[0, 1)``. The selection itself is pure
        ε-DP up to its loop cap's δ (≤ ``min(delta, 1e-12)``); with
        ``delta=0`` its loop is not capped and the whole search is pure
        ε-DP (``delta_ == 0``).
    loss_bound : float, default=None
        Public bound ``B`` on a row's loss (it is clipped to ``[0, B]``): for
        a regressor, about the squared range of ``y``; for a mean estimator,
        the squared diameter of the box of the rows. Required.
    loss : "auto", "squared_error", "log_loss" or callable, default="auto"
        Per-row loss on the validation users. ``"auto"``: the squared
        distance to ``mean_`` for mean estimators, ``"squared_error"`` for
        regressors, ``"log_loss"`` for classifiers. A callable
        ``loss(estimator, X, y)`` returns one value per row, each a function
        of that row only.
    validation_fraction : float, default=0.25
        Fraction of the users used for the selection, in ``(0, 1)``.
    budget_split : {"auto", "zcdp", "basic"}, default="auto"
        How the fits share ``(epsilon, delta)``: ``"zcdp"`` (``"auto"`` when
        ``delta > 0``) gives each an equal share of ρ — tight for estimators
        accounted in zCDP (most with ``delta > 0``); ``"basic"`` (``"auto"``
        when ``delta == 0``) gives each ``(ε/K, δ/K)``, valid for any
        estimator. If the fits' composed spend exceeds the budget (an
        estimator not accounted in zCDP under ``"zcdp"``), ``fit`` raises
        before anything is released.
    samples_per_user : int, default=None
        Public smallest number of rows per user, for ``tau="hoeffding"``.
    tau : "auto", "hoeffding" or float, default="auto"
        Concentration radius of the validation users' average losses, which
        sets the selection's noise:

        - ``"auto"``: learned privately from ``tau_share`` of ``epsilon``
          (:func:`~skuserdp.mean._concentration.private_tau` on every
          validation user's vector of the K candidates' losses; its ℓ2
          radius bounds each candidate's), charged; when the validation
          users are too few for it (a public rule), ``loss_bound`` (always
          valid) at no cost;
        - ``"hoeffding"``: Lemma 1's worst-case radius from
          ``samples_per_user`` (no cost, but with a loose ``loss_bound`` it
          makes the selection nearly random);
        - a float: a public radius.
    tau_share : float, default=0.1
        Share of ``epsilon`` spent on ``tau="auto"``, in ``(0, 1)``.
    alpha : float, default=0.1
        Failure probability of the selection's accuracy guarantee; the
        expected number of releases is ``5K/alpha``.
    tuning : {"split", "papernot_steinke"}, default="split"
        How the budget reaches the candidates. ``"split"``: every candidate
        is fitted once, at a K-th of the budget, and the selection above
        compares them. ``"papernot_steinke"``: Papernot & Steinke's
        repeat-and-select (ICLR 2022): a random number of runs ``K`` (law
        ``runs_distribution``, mean ``mean_runs``), each fitting a candidate
        drawn uniformly from the grid at nearly the whole budget (ρ per run
        from :func:`~skuserdp.privacy.repeat_select_rho_for`) and scoring it
        on the validation users with its own noise at the same ρ (a noisy
        mean of the users' average losses clipped to ``[0, loss_bound]``;
        disjoint users, so the run is ρ-zCDP); only the best run is
        released. Needs ``delta > 0`` and candidates accounted in zCDP (e.g.
        ``UserDPSGDRegressor`` with ``delta > 0``); others are refused.
        ``budget_split``, ``samples_per_user``, ``tau``, ``tau_share`` and
        ``alpha`` are not used. Docs: *Tuning without splitting the budget*
        (each run draws its candidate at random, so the best grid point may
        never be tried).
    mean_runs : "auto" or float, default="auto"
        ``"papernot_steinke"`` only: the mean number of runs, ``>= 1``;
        ``"auto"``: twice the size of the grid.
    runs_distribution : {"geometric", "logarithmic", "poisson"}, \
default="geometric"
        ``"papernot_steinke"`` only: the law of ``K`` (a truncated negative
        binomial of shape 1 or 0, or a Poisson law redrawn while 0).
    accountant : BudgetAccountant, default=None
        When given, the search's spend is charged to it before anything is
        released (:class:`~skuserdp.exceptions.BudgetExceededError` when it
        does not fit).
    random_state : int, RandomState, SeedSequence or None, default=None
        Root of the split, of every candidate's noise and of the selection
        (it replaces the candidates' own ``random_state``). ``None``: fresh
        OS entropy; an int: reproducible (for tests; see the docs' page
        *Privacy model*, "Randomness"). The fitted candidates are published
        with ``random_state=None``: no seed material of any fit is exposed.
        With an ``accountant``, every search charged to it gets its own
        stream, even with an int seed.
    n_jobs : int, default=None
        Number of candidates fitted in parallel (joblib; ``None`` means 1
        unless in a ``joblib.parallel_config`` context, ``-1`` all cores).
        The results are the same for every ``n_jobs`` and backend: every
        candidate's seed is fixed before the fits are dispatched. The
        ``accountant`` is charged once, in this process, after the fits
        (it never reaches a worker). The candidates' warnings are passed on
        in this process, the same for every backend: only skuserdp's own
        (``AccuracyWarning``, ``ItemLevelPrivacyWarning``: from public
        values and released outputs) and scikit-learn's
        ``DataConversionWarning`` (from the input's shapes and dtypes); any
        other warning of the fits (a step's, NumPy's), and every warning
        while the validation losses are computed, may depend on the rows
        and is dropped. NumPy's floating-point warnings are off
        (:func:`~skuserdp.utils._numeric.quiet_floating_point`).

    Attributes
    ----------
    best_estimator_ : estimator
        The selected candidate, fitted on the training users (its
        ``random_state`` parameters, nested ones included, set to ``None``).
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    best_params_ : dict
        Its parameters.
    cv_results_ : dict of arrays
        ``params``, one ``param_<name>`` column per parameter, ``selected``
        and ``private_loss`` (the selection's released loss of the winner;
        NaN for the others, whose losses are not released). Only private
        outputs: no non-private score is computed.
    selection_ : SelectionResult or RandomRunsResult
        The selection's public record (index, released value, number of
        releases, its privacy loss, plan); with ``"papernot_steinke"``, the
        winner's index and released score, the per-run ρ, the law of the
        number of runs and the spend (never the number of runs, nor the
        other runs).
    fit_losses_ : list
        The privacy loss of every candidate's fit (of its private step);
        with ``"papernot_steinke"``, of the winner's fit only.
    privacy_loss_ : ApproxDP
        The search's total spend.
    epsilon_, delta_ : float
        Its ε and δ.
    n_users_train_, n_users_validation_ : int
        The sizes of the two parts.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names (without
        a ``groups`` column).

    See Also
    --------
    select_model_privately : The selection among fitted candidates.
    BudgetedEstimator : Charge plain fits to an accountant.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean import ClipNoiseMeanEstimator
    >>> from skuserdp.model_selection import PrivateGridSearch
    >>> rng = np.random.default_rng(0)
    >>> users = np.repeat(np.arange(4000), 5)
    >>> X = rng.uniform(0.0, 1.0, (users.size, 2)) ** 2  # mean 1/3
    >>> search = PrivateGridSearch(
    ...     ClipNoiseMeanEstimator(bounds=(0, 1)),
    ...     {"radius": [0.02, 0.5]}, epsilon=1.0, delta=1e-6,
    ...     loss_bound=2.0, samples_per_user=5, alpha=0.5, random_state=0)
    >>> search.fit(X, groups=users).best_params_
    {'radius': 0.5}
    >>> round(search.epsilon_, 6), search.delta_
    (1.0, 1e-06)
    """

    _min_users = 2 * MIN_PART_USERS
    _fitted_attr = "best_estimator_"

    def __init__(self, estimator, param_grid, *, epsilon=1.0, delta=1e-6,
                 loss_bound=None, loss="auto", validation_fraction=0.25,
                 budget_split="auto", samples_per_user=None, tau="auto",
                 tau_share=0.1, alpha=0.1, tuning="split", mean_runs="auto",
                 runs_distribution="geometric", accountant=None,
                 random_state=None, n_jobs=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.loss_bound = loss_bound
        self.loss = loss
        self.validation_fraction = validation_fraction
        self.budget_split = budget_split
        self.samples_per_user = samples_per_user
        self.tau = tau
        self.tau_share = tau_share
        self.alpha = alpha
        self.tuning = tuning
        self.mean_runs = mean_runs
        self.runs_distribution = runs_distribution
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _check_params(self):
        if self.loss_bound is None:
            raise ValueError(
                "PrivateGridSearch needs loss_bound=: a public bound on one row's "
                "loss (e.g. the squared range of y, or the squared diameter of "
                "the box of the rows), never read off the data.")
        for name in ("epsilon", "loss_bound"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                    or not 0 < value < float("inf"):
                raise ValueError(f"{name} must be a finite float > 0, got {value!r}.")
        if isinstance(self.delta, bool) or not 0 <= self.delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}.")
        if not 0 < self.validation_fraction < 1:
            raise ValueError("validation_fraction must be in (0, 1), got "
                             f"{self.validation_fraction!r}.")
        if self.budget_split not in ("auto", "zcdp", "basic"):
            raise ValueError("budget_split must be 'auto', 'zcdp' or 'basic', got "
                             f"{self.budget_split!r}.")
        if not 0 < self.tau_share < 1:
            raise ValueError(f"tau_share must be in (0, 1), got {self.tau_share!r}.")
        if self.tuning not in ("split", "papernot_steinke"):
            raise ValueError("tuning must be 'split' or 'papernot_steinke', got "
                             f"{self.tuning!r}.")
        if self.runs_distribution not in RUN_DISTRIBUTIONS:
            raise ValueError(f"runs_distribution must be one of "
                             f"{sorted(RUN_DISTRIBUTIONS)}, got "
                             f"{self.runs_distribution!r}.")
        if not (isinstance(self.mean_runs, str) and self.mean_runs == "auto") and (
                isinstance(self.mean_runs, bool)
                or not isinstance(self.mean_runs, numbers.Real)
                or not 1 <= self.mean_runs < float("inf")):
            raise ValueError("mean_runs must be 'auto' or a finite number >= 1, "
                             f"got {self.mean_runs!r}.")
        if self.tuning == "papernot_steinke" and self.delta == 0:
            raise ValueError(
                "tuning='papernot_steinke' needs delta > 0: its runs are "
                "accounted in zCDP (Rényi DP) and its guarantee is (epsilon, "
                "delta). With delta=0 use tuning='split'.")
        if self.accountant is not None and not isinstance(self.accountant,
                                                          BudgetAccountant):
            raise TypeError("accountant must be a BudgetAccountant or None.")
        if self.n_jobs is not None and (isinstance(self.n_jobs, bool) or not isinstance(
                self.n_jobs, numbers.Integral) or self.n_jobs == 0):
            raise ValueError("n_jobs must be None, a positive int or a negative "
                             f"int (-1 = all cores), got {self.n_jobs!r}.")
        private_step_prefix(self.estimator)  # the estimator's structure
        grid = list(ParameterGrid(self.param_grid))
        for point in grid:
            if any(name.rsplit("__", 1)[-1] in ("epsilon", "delta") for name in point):
                raise ValueError(
                    "param_grid must not contain epsilon or delta (nor "
                    "step__epsilon, step__delta): the search spends its own "
                    "(epsilon, delta) and splits it between the fits. To compare "
                    "budgets, compare searches on public data.")
        return grid

    def _candidates(self, grid, epsilon, delta):
        """A clone of ``estimator`` per grid point, its private step at the
        per-fit budget; every one checked before anything is fitted."""
        candidates = []
        for point in grid:
            # the grid's estimator objects are cloned too (as GridSearchCV
            # does): candidates never share a step, nor fit the user's object
            est = clone(self.estimator).set_params(**clone(point, safe=False))
            prefix = private_step_prefix(est)  # a grid may replace a step
            est.set_params(**{f"{prefix}epsilon": epsilon, f"{prefix}delta": delta})
            candidates.append(est)
        return candidates

    def _loss(self):
        if self.loss != "auto":
            return self.loss
        if hasattr(self.estimator, "predict_proba"):
            return "log_loss"
        if hasattr(self.estimator, "predict"):
            return "squared_error"
        return _mean_squared_distance

    def _selection_tau(self, user_losses, seed):
        """The selection's τ, its privacy loss (``None`` when free) and the
        selection's ε, from the ``(n_users, K)`` table of validation losses."""
        if not isinstance(self.tau, str):
            return self.tau, None, self.epsilon
        if self.tau == "hoeffding":
            return "auto", None, self.epsilon
        if self.tau != "auto":
            raise ValueError("tau must be 'auto', 'hoeffding' or a float, got "
                             f"{self.tau!r}.")
        B = float(self.loss_bound)
        n_val, K = user_losses.shape
        eps_tau, rest = split_off(PureDP(self.epsilon), self.tau_share)
        if not private_tau_feasible(n_val, eps_tau, TAU_GAMMA):
            # every clipped loss lies in [0, B]: tau = B holds for free
            return B, None, self.epsilon
        tau = private_tau(user_losses, eps_tau, value_range=B * np.sqrt(K),
                          gamma=TAU_GAMMA, rng=generator_from(seed))
        return min(tau, B), PureDP(eps_tau), rest.epsilon

    def fit(self, X, y=None, *, groups=None):
        """Fit every candidate on the training users and select privately.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of all users. Not modified.
        y : array-like of shape (n_samples,), default=None
            Targets (supervised estimators).
        groups : array-like of shape (n_samples,) or str, default=None
            User id of every row: the unit of privacy. ``None`` treats every
            row as its own user (with an ItemLevelPrivacyWarning). With a
            pandas DataFrame ``X``, the name of its user-id column, which is
            then not a feature.

        Returns
        -------
        self : object
            The fitted search.
        """
        grid = self._check_params()
        if self.tuning == "papernot_steinke":
            mean_runs = (2.0 * len(grid) if self.mean_runs == "auto"
                         else float(self.mean_runs))
            budget = random_runs_budget(self.epsilon, self.delta, mean_runs,
                                        self.runs_distribution)
            candidates = self._candidates(grid, budget.epsilon, budget.delta)
            for est in candidates:
                check_zcdp_candidate(est)
        else:
            zcdp = (self.budget_split == "zcdp"
                    or (self.budget_split == "auto" and self.delta > 0))
            eps_i, delta_i = split_for_fits(self.epsilon, self.delta, len(grid),
                                            zcdp=zcdp)
            # every candidate built and checked before the data is touched
            candidates = self._candidates(grid, eps_i, delta_i)
        X, groups = split_groups_column(X, groups)  # groups='column name'
        refuse_dask(type(self).__name__, X, y, groups)
        check_not_sparse(X)
        check_groups_alignment(groups, X)
        X_arr = X if hasattr(X, "iloc") else np.asarray(X)
        n_samples = X_arr.shape[0]
        if y is not None:
            y = y if hasattr(y, "iloc") else np.asarray(y)
            if y.shape[0] != n_samples:
                raise ValueError(f"X has {n_samples} rows but y has {y.shape[0]}: "
                                 "pass one target per row.")
        codes, n_users = resolve_user_codes(self, groups, n_samples, stacklevel=3)
        seed = fit_random_state(self.random_state)
        if self.accountant is not None:  # no two charged searches share noise
            seed = charged_fit_seed(seed, self.accountant.new_stream())
        split_seed, fit_seed, select_seed = make_seed_sequence(seed).spawn(3)
        # the split: a uniformly random set of user indices (public randomness)
        n_val = int(round(self.validation_fraction * n_users))
        if min(n_val, n_users - n_val) < MIN_PART_USERS:
            raise ValueError(
                f"{n_users} users cannot be split into training and validation "
                f"users with validation_fraction={self.validation_fraction} (each "
                f"part needs at least {MIN_PART_USERS} users).")
        is_val = np.zeros(n_users, dtype=bool)
        is_val[generator_from(split_seed).permutation(n_users)[:n_val]] = True
        val_rows = is_val[codes]
        take = (lambda a, m: None if a is None else
                (a.iloc[m] if hasattr(a, "iloc") else np.asarray(a)[m]))
        g = np.asarray(codes)
        if self.tuning == "papernot_steinke":
            return self._fit_random_runs(
                grid, candidates, budget, (take(X_arr, ~val_rows),
                                           take(y, ~val_rows), g[~val_rows]),
                (take(X_arr, val_rows), take(y, val_rows), g[val_rows]),
                fit_seed, select_seed)._set_split_sizes(n_users, n_val)
        # each candidate's noise: its own child of the search's root (fresh
        # entropy when the search's random_state is None), fixed before the
        # fits are dispatched, so that n_jobs and the backend change nothing;
        # the candidates are published without it
        seed_names = [set_fit_seeds(est, lambda name, value, s=seed: s.spawn(1)[0])
                      for est, seed in zip(candidates, fit_seed.spawn(len(grid)))]
        X_train, y_train = take(X_arr, ~val_rows), take(y, ~val_rows)
        # the fits: only skuserdp's own warnings are passed on (from public
        # values and released outputs); NumPy's floating-point warnings off
        with warnings.catch_warnings(record=True) as caught, quiet_floating_point():
            warnings.simplefilter("always")
            fitted = Parallel(n_jobs=self.n_jobs)(
                delayed(_fit_candidate)(est, X_train, y_train, g[~val_rows],
                                        os.getpid())
                for est in candidates)
        passed = _public_warnings(caught) + [w for _, ws in fitted for w in ws]
        for message in passed:
            warnings.warn(message, stacklevel=2)
        candidates = [est for est, _ in fitted]
        for est, names in zip(candidates, seed_names):
            forget_fit_seeds(est, names)
        losses = [fitted_privacy_loss(est) for est in candidates]
        try:
            fits = compose_spend(losses, self.delta)
        except ValueError:  # their δ alone exceed the search's
            fits = None
        if (fits is None or fits.epsilon > self.epsilon * (1 + 1e-9)
                or fits.delta > self.delta):
            raise ValueError(
                f"the {len(grid)} fits spend {fits or 'more than delta'} together, "
                "over the search's "
                f"budget (epsilon={self.epsilon}, delta={self.delta}): "
                f"{private_step_name(self.estimator)} is not accounted in zCDP with "
                "this configuration. Use budget_split='basic'. Nothing was "
                "released.")
        tau_seed, select_seed = select_seed.spawn(2)
        # the validation users' average losses, computed once for τ and the
        # selection
        # (every warning dropped: they would read the validation rows)
        loss = self._loss()
        with warnings.catch_warnings(), quiet_floating_point():
            warnings.simplefilter("ignore")
            table = _user_losses(
                candidates, take(X_arr, val_rows), take(y, val_rows), g[val_rows],
                loss, float(self.loss_bound),
                # a user's callable takes the whole candidate; the built-in
                # losses take the private step and the rows it sees
                rows_of=None if callable(self.loss) else private_rows)
        tau, tau_loss, eps_select = self._selection_tau(table, tau_seed)
        # delta = 0: an uncapped loop, pure DP; otherwise the cap's δ is at
        # most min(delta, 1e-12)
        result = private_selection(
            table.T, epsilon=eps_select, loss_bound=self.loss_bound, tau=tau,
            samples_per_user=self.samples_per_user, alpha=self.alpha,
            max_iter=None if self.delta == 0 else "auto",
            cap_delta=min(self.delta, SELECTION_CAP_DELTA) or SELECTION_CAP_DELTA,
            random_state=select_seed)
        best = candidates[result.index]
        selection = (result.privacy_loss if tau_loss is None
                     else compose(tau_loss, result.privacy_loss))
        spend = compose_parallel(fits, selection)
        if self.accountant is not None:
            what = private_step_name(self.estimator)
            self.accountant.charge(spend, label=f"PrivateGridSearch({len(grid)} "
                                   f"candidates of {what})")
        self.best_estimator_ = best
        self._set_results(grid, result.index, result.value)
        self.selection_ = result
        self.fit_losses_ = losses
        self.privacy_loss_ = spend
        self.epsilon_, self.delta_ = spend.epsilon, spend.delta
        if hasattr(best, "n_features_in_"):
            self._set_feature_attributes(best)
        return self._set_split_sizes(n_users, n_val)

    def _set_split_sizes(self, n_users, n_val):
        self.n_users_train_ = n_users - n_val
        self.n_users_validation_ = n_val
        return self

    def _set_results(self, grid, index, value):
        """``best_*`` and ``cv_results_`` of the winner ``index`` (only its
        released loss ``value``)."""
        self.best_index_ = index
        self.best_params_ = grid[index]
        results = {"params": grid,
                   "selected": np.arange(len(grid)) == index,
                   "private_loss": np.where(np.arange(len(grid)) == index,
                                            value, np.nan)}
        for name in sorted({k for point in grid for k in point}):
            results[f"param_{name}"] = np.ma.masked_array(
                [point.get(name) for point in grid],
                mask=[name not in point for point in grid], dtype=object)
        self.cv_results_ = results

    def _score_tau(self, n_val):
        """The public τ of every run's score (``tuning="papernot_steinke"``):
        a float as given; ``"hoeffding"``: Lemma 1's radius
        (:func:`~skuserdp.mean.tau_bounded_rows`); ``"auto"``: none (the box
        ``[0, loss_bound]``; a private τ at the run's small ρ would need
        thousands of validation users)."""
        if not isinstance(self.tau, str):
            return float(self.tau)
        if self.tau == "hoeffding":
            if self.samples_per_user is None:
                raise ValueError("tau='hoeffding' needs samples_per_user (the "
                                 "public smallest number of rows per user).")
            return tau_bounded_rows(0.5 * float(self.loss_bound),
                                    self.samples_per_user, n_val, TAU_GAMMA)
        if self.tau != "auto":
            raise ValueError("tau must be 'auto', 'hoeffding' or a float, got "
                             f"{self.tau!r}.")
        return None

    def _fit_random_runs(self, grid, candidates, budget, train, validation,
                         fit_seed, select_seed):
        """Papernot & Steinke's repeat-and-select (``tuning=
        "papernot_steinke"``): ``K`` runs, each a uniformly drawn candidate
        fitted on the training users and scored on the validation users, both
        at the run's ρ; only the best run is released."""
        schedule_seed, score_seed = select_seed.spawn(2)
        # K and the candidates: a stream of their own, independent of the data
        runs = random_runs_schedule(budget.mean_runs, budget.distribution,
                                    len(grid), generator_from(schedule_seed))
        ests, names = [], []
        for j, seed in zip(runs, fit_seed.spawn(len(runs))):
            est = clone(candidates[j])  # each run: fresh noise
            names.append(set_fit_seeds(est, lambda n, v, s=seed: s.spawn(1)[0]))
            ests.append(est)
        X_train, y_train, g_train = train
        # every run's warnings are recorded apart; only the winner's are
        # passed on (how many runs there were is never released)
        with quiet_floating_point():
            fitted = Parallel(n_jobs=self.n_jobs)(
                delayed(_fit_run)(est, X_train, y_train, g_train) for est in ests)
        loss = self._loss()
        B = float(self.loss_bound)
        plan = plan_score(len(np.unique(validation[2])), B, budget.rho,
                          tau=self._score_tau(len(np.unique(validation[2]))))
        fit_losses = []
        for (est, _), seed_names in zip(fitted, names):
            forget_fit_seeds(est, seed_names)
            fit_losses.append(fitted_privacy_loss(est))
            check_run_loss(est, fit_losses[-1], plan.loss, budget.rho)

        def user_losses_of(r):
            # (every warning dropped: they would read the validation rows)
            with warnings.catch_warnings(), quiet_floating_point():
                warnings.simplefilter("ignore")
                return _user_losses(
                    [fitted[r][0]], *validation, loss, B,
                    rows_of=None if callable(self.loss) else private_rows)[:, 0]
        win, value = select_among_runs(runs, user_losses_of, B, plan, score_seed)
        spend = random_runs_spend(budget)
        if spend.epsilon > self.epsilon * (1 + 1e-9) or spend.delta > self.delta:
            raise RuntimeError("the repeat-and-select spend exceeds the budget.")
        if self.accountant is not None:
            what = private_step_name(self.estimator)
            self.accountant.charge(spend, label=f"PrivateGridSearch(papernot_"
                                   f"steinke over {len(grid)} candidates of {what})")
        for message in fitted[win][1]:
            warnings.warn(message, stacklevel=3)
        best = fitted[win][0]
        index = int(runs[win])
        self.best_estimator_ = best
        self._set_results(grid, index, value)
        self.selection_ = RandomRunsResult(
            index, value, ZCDP(budget.rho), budget.mean_runs,
            budget.distribution, spend)
        self.fit_losses_ = [fit_losses[win]]
        self.privacy_loss_ = spend
        self.epsilon_, self.delta_ = spend.epsilon, spend.delta
        if hasattr(best, "n_features_in_"):
            self._set_feature_attributes(best)
        return self
