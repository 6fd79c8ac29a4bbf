"""``interval="groups"`` of the DP-SGD models: K disjoint groups of users.

Subsample and aggregate (spec ``intervals_and_weights.md`` §2.7, "DP-SGD
coefficients"): the users are split into K disjoint groups by a uniformly
random permutation drawn from its own child ``SeedSequence`` (it depends on
the number of users only, which is public), the same estimator is fitted on
every group's users at the **full** budget, each fit with its own child
``SeedSequence``, and the model is the mean of the K fits. The t interval
with ``K − 1`` degrees of freedom from the K estimates is post-processing.

Privacy (parallel composition, :func:`skuserdp.privacy.compose_parallel`).
A fit sees only its group's users. Take replace-one neighbours ``D, D'`` and
number their users so that the replaced user has the same index in both;
for every permutation the K groups of ``D`` and ``D'`` are then equal except
one, which holds replace-one neighbours, and only that group's fit changes
in law: the K outputs together satisfy the worst single fit's guarantee.
The output is the mixture of these over the permutation, drawn
independently of the data, and the DP inequality (and the Rényi divergence
bound of zCDP, jointly quasi-convex) holds for a mixture when it holds for
every component (the argument of ``docs/privacy_model.rst`` for the random
subsets). The fits' noise streams are distinct children of one root, so no
two fits share noise (a shared stream would correlate the groups and the
spread across groups would no longer measure the noise).
"""

import math

import numpy as np

from ..inference import IntervalState
from ..privacy import pure_to_zcdp, zcdp_rho_for
from ..utils._random import generator_from

__all__ = ["MAX_GROUPS", "GROUP_USERS_FACTOR", "auto_n_groups", "group_assignment",
           "groups_interval_state"]

#: largest K of ``n_groups="auto"``
MAX_GROUPS = 30
#: smallest K of ``n_groups="auto"`` when the users allow it
MIN_AUTO_GROUPS = 5
#: a group of ``n_groups="auto"`` has at least ``GROUP_USERS_FACTOR/√ρ``
#: users (ρ the zCDP budget of the fit): measured threshold below which the
#: private clip norm (an exponential-mechanism median from 5% of ρ) fails in
#: a few percent of the fits (it returns the gradient bound and the fit is
#: lost in noise), about 400-600 users at ε = 1 and 100-200 at ε = 4
#: (3 features, δ = 1e-6). A heavy-tailed group estimate would make the
#: t interval useless.
GROUP_USERS_FACTOR = 100.0


def group_budget_rho(epsilon, delta):
    """The zCDP ρ of an (ε, δ) fit (pure ε: ``ε²/2``), for planning K."""
    if delta > 0:
        return zcdp_rho_for(epsilon, delta)
    return pure_to_zcdp(epsilon).rho


def auto_n_groups(n_users, epsilon, delta, min_users=2):
    """K of ``n_groups="auto"``, from public quantities only.

    ``K = min(30, max(5, round(√n/2)), ⌊n/n_g⌋)`` with
    ``n_g = max(min_users, ⌈100/√ρ⌉)`` the smallest group (see
    :data:`GROUP_USERS_FACTOR`): ``K ≪ √n`` keeps the small-group bias of
    the fits (which does not average out) small, and ``n_g`` keeps every
    group's fit out of the regime where its private clip norm fails.

    Parameters
    ----------
    n_users : int
        Number of users (public).
    epsilon, delta : float
        The budget of every group's fit (the full budget).
    min_users : int, default=2
        The estimator's smallest number of users.

    Returns
    -------
    n_groups : int
        ``>= 2``.

    Raises
    ------
    ValueError
        When the users are too few for two groups of ``n_g`` users.
    """
    rho = group_budget_rho(epsilon, delta)
    n_g = max(int(min_users), math.ceil(GROUP_USERS_FACTOR / math.sqrt(rho)))
    k = min(MAX_GROUPS, max(MIN_AUTO_GROUPS, round(math.sqrt(n_users) / 2)),
            n_users // n_g)
    if k < 2:
        raise ValueError(
            f"interval='groups' with n_groups='auto' needs at least {2 * n_g} users "
            f"at this budget (epsilon={epsilon:g}, delta={delta:g}): two groups of "
            f"at least {n_g} users, below which a group's private fit fails too "
            f"often; got {n_users}. Use more users, a larger epsilon, or set "
            "n_groups to an int (at your own risk of heavy-tailed group fits).")
    return int(k)


def group_assignment(n_users, n_groups, seed):
    """The group (``0..K−1``) of every user code ``0..n−1``.

    A uniformly random permutation of the user codes from ``seed`` (a
    ``SeedSequence`` of its own), cut into ``K`` consecutive blocks of sizes
    ``⌊n/K⌋`` or ``⌈n/K⌉``: it depends on ``n`` and the seed only, never on
    the data.
    """
    order = generator_from(seed).permutation(n_users)
    group = np.empty(n_users, dtype=np.intp)
    for k, block in enumerate(np.array_split(order, n_groups)):
        group[block] = k
    return group


def groups_interval_state(estimates, estimand):
    """The :class:`~skuserdp.inference.IntervalState` of K group estimates.

    ``estimates`` has shape ``(K, k)``. The estimate is their mean, the
    standard error ``sd_K/√K`` (``ddof=1``) with ``K − 1`` degrees of
    freedom: the spread across the groups measures the sampling of the users
    and the privacy noise together, so it all goes in ``sampling_std`` and
    ``noise_std`` is 0.
    """
    E = np.asarray(estimates, dtype=np.float64)
    K = E.shape[0]
    se = E.std(axis=0, ddof=1) / math.sqrt(K)
    zeros = np.zeros(E.shape[1])
    return IntervalState(E.mean(axis=0), se, zeros, zeros.copy(), zeros.copy(),
                         df=float(K - 1), method="groups", estimand=estimand)
