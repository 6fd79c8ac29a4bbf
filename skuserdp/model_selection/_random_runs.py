"""Papernot & Steinke's repeat-and-select tuning: the pieces of the search.

``PrivateGridSearch(tuning="papernot_steinke")`` runs a random number ``K``
of *runs* (:func:`skuserdp.mechanisms._random_runs.random_runs_schedule`:
``K`` and the candidates drawn independently of the data). A run fits a
uniformly drawn candidate on the training users at ρ-zCDP and scores it on
the disjoint validation users with its own noise at ρ (a noisy mean of the
users' average losses, :func:`score_run`): parallel composition makes the
run ρ-zCDP. Only the best run (least released loss) is released; its
privacy is :func:`skuserdp.privacy.repeat_select_privacy` [PS22]_, and ρ
the largest that meets the search's (ε, δ)
(:func:`skuserdp.privacy.repeat_select_rho_for`).

The analysis needs i.i.d. runs (not a shuffled sweep of the grid) and a
zCDP run: a candidate not accounted in zCDP is refused (before the data is
touched when the estimator says so, else after its fit, before anything is
released).

References
----------
.. [PS22] N. Papernot and T. Steinke. Hyperparameter tuning with Renyi
   differential privacy. ICLR 2022.
"""

import inspect
from typing import NamedTuple

import numpy as np

from ..mean import plan_winsorized_mean, winsorized_mean_from_plan
from ..privacy import (
    RUN_DISTRIBUTIONS,
    ZCDP,
    ApproxDP,
    compose_parallel,
    repeat_select_privacy,
    repeat_select_rho_for,
    zcdp_to_approx_dp,
)
from ._private_step import private_step_name, private_step_prefix

__all__ = ["RUN_DISTRIBUTIONS", "RandomRunsResult", "RunBudget",
           "random_runs_budget", "check_zcdp_candidate", "check_run_loss",
           "plan_score", "score_run", "best_run", "select_among_runs",
           "spend"]

#: relative margin between the per-run ρ and the candidates' budget: a
#: candidate given (ε_c, δ) with ε_c the conversion of ρ(1 − margin) spends a
#: ρ below the accounted one despite the round-off of its own inversion
RHO_MARGIN = 1e-9


class RunBudget(NamedTuple):
    """The per-run budget of a repeat-and-select search.

    Attributes
    ----------
    rho : float
        ρ of every run (its fit and its score), the one accounted.
    epsilon, delta : float
        The (ε, δ) each candidate is given: the optimal conversion of
        ``rho·(1 − 1e-9)`` at the search's δ, so that its own zCDP
        accounting stays below ``rho``.
    mean_runs : float
        ``E[K]`` (or μ for Poisson).
    distribution : str
        The law of ``K``.
    """

    rho: float
    epsilon: float
    delta: float
    mean_runs: float
    distribution: str


class RandomRunsResult(NamedTuple):
    """Public record of a repeat-and-select search (every field may be
    published; the number of runs and the other runs are not recorded).

    Attributes
    ----------
    index : int
        The winner's index in the grid.
    value : float
        Its released score: the noisy mean of the validation users' average
        losses (each clipped to ``[0, loss_bound]``).
    run_loss : ZCDP
        ρ of every run.
    mean_runs : float
        ``E[K]`` (μ for Poisson).
    distribution : str
        The law of the number of runs.
    privacy_loss : ApproxDP
        The search's spend (:func:`~skuserdp.privacy.repeat_select_privacy`).

    Examples
    --------
    :class:`PrivateGridSearch` with ``tuning="papernot_steinke"`` records
    one as ``selection_``:

    >>> import numpy as np
    >>> from skuserdp.linear_model import UserDPSGDRegressor
    >>> from skuserdp.model_selection import PrivateGridSearch
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(2000), 5)
    >>> X = rng.uniform(-1, 1, size=(10000, 2))
    >>> y = X @ [0.5, -0.3] + 0.1 * rng.normal(size=10000)
    >>> search = PrivateGridSearch(
    ...     UserDPSGDRegressor(bounds=(-1, 1), target_bounds=(-2, 2)),
    ...     {"max_iter": [20, 50]}, epsilon=2.0, loss_bound=4.0,
    ...     tuning="papernot_steinke", random_state=0).fit(X, y, groups=groups)
    >>> result = search.selection_
    >>> result.distribution, result.mean_runs, search.epsilon_ <= 2.0
    ('geometric', 4.0, True)
    """

    index: int
    value: float
    run_loss: ZCDP
    mean_runs: float
    distribution: str
    privacy_loss: ApproxDP


def random_runs_budget(epsilon, delta, mean_runs, distribution):
    """The per-run budget meeting (ε, δ) for the best of ``K`` runs.

    Parameters
    ----------
    epsilon, delta : float
        The search's budget (``delta`` in ``(0, 1)``).
    mean_runs : float
        ``E[K] >= 1``.
    distribution : {"geometric", "logarithmic", "poisson"}
        The law of ``K``.

    Returns
    -------
    budget : RunBudget

    Examples
    --------
    >>> from skuserdp.model_selection._random_runs import random_runs_budget
    >>> b = random_runs_budget(1.0, 1e-6, 6.0, "geometric")
    >>> round(b.rho, 5), round(b.epsilon, 3)
    (0.00709, 0.518)
    """
    rho = repeat_select_rho_for(epsilon, delta, mean_runs, distribution)
    eps_c = zcdp_to_approx_dp(rho * (1 - RHO_MARGIN), delta).epsilon
    return RunBudget(rho, eps_c, float(delta), float(mean_runs), distribution)


def _private_step(estimator):
    prefix = private_step_prefix(estimator)
    return estimator if not prefix else estimator.get_params()[prefix[:-2]]


def _refusal(estimator, why):
    return ValueError(
        f"tuning='papernot_steinke' needs candidates accounted in zCDP: "
        f"{private_step_name(estimator)} {why} (e.g. UserDPSGDRegressor with "
        "delta > 0, no Poisson sampling_rate). Use tuning='split'. Nothing was "
        "released.")


def check_zcdp_candidate(estimator):
    """Refuse, before any fit, a candidate whose private step says it is not
    accounted in zCDP (``_zcdp_accounting()``, as DP-SGD has). Others are
    checked after their fit by :func:`check_run_loss`."""
    step = _private_step(estimator)
    check = getattr(step, "_zcdp_accounting", None)
    # (DP-SGD's takes no argument; the mean estimators' need the data's shape)
    if (check is not None and not inspect.signature(check).parameters
            and not check()):
        raise _refusal(estimator, "is not accounted in zCDP with these "
                                  "parameters")


def check_run_loss(estimator, fit_loss, score_loss, rho):
    """The run's loss (fit and score on disjoint users: parallel
    composition), checked to be ρ'-zCDP with ρ' <= ``rho``."""
    if not isinstance(fit_loss, ZCDP):
        raise _refusal(estimator, f"spent {fit_loss!r}, not a zCDP loss,")
    run = compose_parallel(fit_loss, score_loss)
    if run.rho > rho:
        raise _refusal(estimator, f"spent ρ = {run.rho!r} over the run's ρ = "
                                  f"{rho!r}")
    return run


def plan_score(n_users, loss_bound, rho, tau=None, gamma=0.01):
    """The plan of every run's score: WinsorizedMean (one dimension) of the
    validation users' average losses, shifted by ``−B/2`` into
    ``[−B/2, B/2]``, at ρ-zCDP (:func:`skuserdp.mean.plan_winsorized_mean`).

    Parameters
    ----------
    n_users : int
        Number of validation users (public).
    loss_bound : float
        ``B``: every average loss is in ``[0, B]``.
    rho : float
        The run's ρ.
    tau : float, default=None
        Public concentration radius of the users' average losses; ``None``:
        none (the box ``[0, B]``: clip-and-noise).
    gamma : float, default=0.01
        Failure probability of the range step (utility only).

    Returns
    -------
    plan : WinsorizedPlan
        ``plan.loss <= ZCDP(rho)``.

    Examples
    --------
    >>> from skuserdp.model_selection._random_runs import plan_score
    >>> plan = plan_score(1000, 4.0, 0.01)
    >>> plan.route, plan.loss.rho <= 0.01
    ('box-zcdp', True)
    """
    half = 0.5 * float(loss_bound)
    return plan_winsorized_mean(int(n_users), 1,
                                tau=2.0 * half if tau is None else float(tau),
                                value_range=half, budget=ZCDP(rho), gamma=gamma)


def score_run(user_losses, loss_bound, plan, seed):
    """A run's score: the mean of the validation users' average losses
    (each in ``[0, B]``), released by the plan of :func:`plan_score`.

    Parameters
    ----------
    user_losses : ndarray of shape (n_users,)
        Every validation user's average clipped loss.
    loss_bound : float
        ``B``.
    plan : WinsorizedPlan
        From :func:`plan_score`.
    seed : SeedSequence
        The noise of this score.

    Returns
    -------
    value : float
        The released mean loss.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.model_selection._random_runs import plan_score, score_run
    >>> plan = plan_score(1000, 1.0, 0.5)
    >>> round(score_run(np.full(1000, 0.25), 1.0, plan,
    ...                 np.random.SeedSequence(0)), 2)
    0.25
    """
    half = 0.5 * float(loss_bound)
    u = np.asarray(user_losses, dtype=np.float64).reshape(-1, 1) - half
    return float(winsorized_mean_from_plan(u, plan, random_state=seed)[0]) + half


def best_run(values, indices):
    """The position of the best run: least released loss, ties broken by the
    candidate's index, then by the earlier run (runs are i.i.d.: the same
    law as a uniformly random choice among tied runs, drawn independently of
    the data)."""
    return min(range(len(values)), key=lambda r: (values[r], indices[r], r))


def select_among_runs(runs, user_losses_of, loss_bound, plan, seed):
    """Score every run and pick the best (the repeat-and-select loop).

    Parameters
    ----------
    runs : ndarray of int
        The candidate of every run (:func:`~skuserdp.mechanisms._random_runs.
        random_runs_schedule`).
    user_losses_of : callable
        ``r ↦`` the validation users' average losses of run ``r``.
    loss_bound : float
        ``B``.
    plan : WinsorizedPlan
        From :func:`plan_score`.
    seed : SeedSequence
        Root of the scores' noise (one child per run).

    Returns
    -------
    win : int
        The position of the best run (:func:`best_run`).
    value : float
        Its released score (the only one released).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.model_selection._random_runs import (
    ...     plan_score, select_among_runs)
    >>> losses = [np.full(1000, 0.9), np.full(1000, 0.1)]
    >>> runs = np.array([0, 1, 0])
    >>> win, value = select_among_runs(runs, lambda r: losses[runs[r]], 1.0,
    ...                                plan_score(1000, 1.0, 1.0),
    ...                                np.random.SeedSequence(0))
    >>> int(win), round(value, 1)
    (1, 0.1)
    """
    values = [score_run(user_losses_of(r), loss_bound, plan, s)
              for r, s in enumerate(seed.spawn(len(runs)))]
    win = best_run(values, runs)
    return win, values[win]


def spend(budget):
    """The search's spend: ``repeat_select_privacy`` of ZCDP(ρ) per run."""
    return repeat_select_privacy(ZCDP(budget.rho), budget.mean_runs,
                                 budget.distribution, delta=budget.delta)
