"""CoinPress-style user-level mean: shrink a confidence ball, then clip and noise.

After Biswas, Dong, Kamath and Ullman, "CoinPress: Practical Private Mean and
Covariance Estimation" (NeurIPS 2020), the iterative mean estimator (their
Algorithms 1–2), reimplemented from the paper (its public code has no
licence) and run on *per-user means*, so
the unit of privacy is the user (replace-one, the number of users public).
Not one of the three papers of the project (:ref:`papers-coinpress`).

A public ball ``B(c₀, r₀)`` (by default the circumscribed ball of the public
box ``[-bound, bound]^d``) is shrunk in ``n_steps − 1`` steps; a last
clip-and-noise release spends ``final_share`` of the zCDP budget. Step ``t``:

1. release the mean of the users' means clipped to ``B(c_t, r_t + s)``
   (:func:`skuserdp.mean.plan_clip_noise`, lattice discrete Gaussian) as the
   new centre ``c_{t+1}``;
2. set the new radius ``r_{t+1}``:

   * *declared spread* ``s = radius`` (the paper's setting, where the
     covariance is known): ``r_{t+1} = σ_t·(√d + √(2 ln(1/β)))``, the
     Gaussian tail radius of the noise just added (``σ_t`` public, from the
     plan), which contains the empirical mean w.p. ``≥ 1 − β`` when no user
     was clipped;
   * *no declared spread* (``radius=None``, our choice, not in the paper:
     only ``bound`` is known): ``s = 0`` and a second, one-dimensional
     clip-and-noise release gives the mean distance ``D̄`` of the users'
     means to ``c_{t+1}`` (distances clipped to ``[0, r_t]``);
     ``r_{t+1} = min(scale_factor·max(D̄, 2σ_D), r_t)`` with ``σ_D`` that
     release's public noise standard deviation (so a noisy ``D̄`` near 0
     cannot collapse the ball, and the ball never grows).

Every radius and centre is a public constant or a function of earlier
releases; every release's budget is fixed in advance by
:func:`plan_coinpress` (public values only), so the loss is the zCDP
composition of the planned budgets, whatever the data.

Above 2^17 users the shrinking steps but the last centre release run on a
uniformly random subset of :func:`coinpress_step_users` users (drawn
independently of the data; the last centre and the last release use all
users): the same loss, those steps ``n/m``
times cheaper (:ref:`papers-random-subset`; our
choice, not in the paper).

Why the mean distance works without a declared spread: the mean distance of
points to ``c`` is at least the distance of ``c`` to their mean, so with
``scale_factor ≥ 1`` the new ball contains the empirical mean (it does not
contain every user: about two thirds of a 1-D Gaussian cloud, more in
higher dimension, where distances concentrate). Clipping a symmetric cloud
around a centre close to its mean pulls nothing on average, so clipping the
far users at ``1.2·D̄`` costs little bias (measured on T-M1,
``benchmarks/README.md``); a skewed cloud is pulled toward the centre
(estimator Notes; ``final_scale_factor``).
"""

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..base import BOUNDS_CONSTRAINTS, CI_CONSTRAINTS, WEIGHT_CONSTRAINTS
from ..mechanisms._top_bin import top_bin_edge
from ..privacy import ZCDP, compose, split_zcdp_shares, zcdp_rho_for
from ..utils._docstrings import fill_doc
from ..utils._random import (SUBSET_MIN_USERS, generator_from, make_seed_sequence,
                             random_subset)
from ._base import UserLevelMeanEstimator

from ._clip_noise import clip_noise_from_plan, plan_clip_noise

__all__ = ["CoinPressPlan", "plan_coinpress", "coinpress_mean",
           "coinpress_step_users", "auto_steps", "CoinPressMeanEstimator"]

#: largest number of centre releases: each is a pass over the users at a
#: 1/n_steps share of the budget (CoinPress needs about log of the box's
#: ratio to the spread), so more is refused before any work
MAX_STEPS = 1000

#: ``n_steps="auto"`` with a learned box (``bounds="auto"``) that contains 0
#: in every column: the box is its median ± a fixed multiple of a spread
#: quantile of the users, and its median is a grid point within about a
#: tenth of its distance to 0, hence of the half-width; so the first ball is
#: a few times the users' spread whatever their scale, and two shrinking
#: steps reach it; more steps only clip more users and split the budget
#: (``benchmarks/bench_coinpress_steps.py``)
LEARNED_BOX_STEPS = 3

#: ``n_steps="auto"`` otherwise: a declared box may be any multiple of the
#: users' spread, and a learned box away from 0 may be dominated by the grid
#: error of its median (~10 % of the location, e.g. years around 2020); a
#: step shrinks the ball by about ``1/(1.2·a)`` (Notes of
#: :class:`CoinPressMeanEstimator`), so such a box needs several
DECLARED_BOX_STEPS = 8


def auto_steps(bounds, lower, upper):
    """The number of centre releases of ``n_steps="auto"`` (public values).

    :data:`LEARNED_BOX_STEPS` (3) when the box was learned (``bounds`` is
    ``"auto"``) and contains 0 in every column (``lower <= 0 <= upper``, a
    function of the released box: post-processing); otherwise
    :data:`DECLARED_BOX_STEPS` (8).

    Parameters
    ----------
    bounds : "auto" or tuple
        The estimator's ``bounds`` parameter: ``"auto"`` when the box is
        learned privately.
    lower, upper : array-like of shape (n_features,)
        The box used (declared, or released by the bounds step).

    Returns
    -------
    n_steps : int
        The number of centre releases for :func:`plan_coinpress`.

    Examples
    --------
    >>> from skuserdp.mean import auto_steps
    >>> auto_steps("auto", [-3.0, -1.0], [5.0, 2.0]), auto_steps("auto", [1.0], [9.0])
    (3, 8)
    >>> auto_steps((-10.0, 10.0), [-10.0], [10.0])
    8
    """
    learned = isinstance(bounds, str) and bounds == "auto"
    if learned and np.all(np.asarray(lower) <= 0) and np.all(np.asarray(upper) >= 0):
        return LEARNED_BOX_STEPS
    return DECLARED_BOX_STEPS


@dataclass(frozen=True)
class CoinPressPlan:
    """The public budget schedule of one CoinPress run.

    Computed by :func:`plan_coinpress` from public values only.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    center_budgets : tuple of ZCDP
        Budget of the centre release of each shrinking step.
    spread_budgets : tuple of ZCDP or None
        Budget of the mean-distance release of each shrinking step; ``None``
        when the spread is declared.
    final_budget : ZCDP
        Budget of the last release.
    loss : ZCDP
        The composition of all budgets.
    top_bin_budget : ZCDP or None
        Budget of the log2 histogram of the users' distances to the last
        centre whose top passing bin may widen the last radius
        (:func:`~skuserdp.mechanisms._top_bin.top_bin_edge`); ``None``
        without it (declared spread, one step, or ``top_bin_share=0``).

    Examples
    --------
    >>> from skuserdp.mean import plan_coinpress
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_coinpress(500, 4, budget=ZCDP(0.1), n_steps=3,
    ...                       declared_spread=True)
    >>> plan.n_steps, plan.spread_budgets is None, plan.loss.rho <= 0.1
    (3, True, True)
    """

    n_users: int
    n_features: int
    center_budgets: tuple
    spread_budgets: tuple
    final_budget: ZCDP
    loss: ZCDP
    top_bin_budget: ZCDP = None

    @property
    def n_steps(self):
        """Number of releases of a centre (shrinking steps + the last one)."""
        return len(self.center_budgets) + 1


def plan_coinpress(n_users, n_features, *, budget, n_steps=8, final_share=0.75,
                   spread_share=0.3, declared_spread=False, top_bin_share=0.0):
    """Fix the budget of every release of a CoinPress run (public values only).

    The releases are user-level (replace one user's data; the number of
    users is public) and compose in zCDP to ``plan.loss <= budget``.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    budget : ZCDP
        Total budget ``ρ``.
    n_steps : int, default=8
        Number of centre releases, in ``[1, MAX_STEPS]`` (1000):
        ``n_steps − 1`` shrinking steps and a last release.
    final_share : float, default=0.75
        Share of ``ρ`` of the last release, in ``(0, 1]`` (``1`` only when
        ``n_steps == 1``). The rest is split equally between the shrinking
        steps.
    spread_share : float, default=0.3
        Share of each shrinking step's budget spent on the mean distance
        (only when the spread is not declared), in ``(0, 1)``.
    declared_spread : bool, default=False
        Whether the spread of the users' means is public (no distance
        releases).
    top_bin_share : float, default=0.0
        Share, in ``[0, 1)``, of the last release's budget spent on the
        distance histogram that lets the last radius grow with ``nε``
        (:attr:`CoinPressPlan.top_bin_budget`); used only with
        ``n_steps > 1`` and no declared spread.

    Returns
    -------
    plan : CoinPressPlan
        The budget of every release and their composition.

    Examples
    --------
    >>> from skuserdp.mean._coinpress import plan_coinpress
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_coinpress(1000, 10, budget=ZCDP(0.04), n_steps=3)
    >>> plan.n_steps, round(plan.final_budget.rho, 6)
    (3, 0.03)
    >>> [round(b.rho, 6) for b in plan.center_budgets]
    [0.0035, 0.0035]
    >>> plan.loss.rho <= 0.04
    True
    """
    if not isinstance(budget, ZCDP):
        raise TypeError("budget must be a ZCDP loss.")
    n_steps = int(n_steps)
    if not 1 <= n_steps <= MAX_STEPS:
        raise ValueError(
            f"n_steps must be in [1, {MAX_STEPS}] (MAX_STEPS: each step is a pass "
            f"over the users with a 1/n_steps share of the budget), got {n_steps}.")
    if not 0 < final_share <= 1:
        raise ValueError(f"final_share must be in (0, 1], got {final_share!r}.")
    if n_steps > 1 and final_share == 1:
        raise ValueError("final_share must be < 1 when n_steps > 1: the shrinking "
                         "steps need a budget.")
    if not 0 < spread_share < 1:
        raise ValueError(f"spread_share must be in (0, 1), got {spread_share!r}.")
    if not 0 <= top_bin_share < 1:
        raise ValueError(f"top_bin_share must be in [0, 1), got {top_bin_share!r}.")
    k = n_steps - 1
    top = top_bin_share > 0 and k > 0 and not declared_spread
    step = (1.0 - final_share) / k if k else 0.0
    if declared_spread:
        shares = [step] * k + [final_share]
    else:
        shares = [step * (1 - spread_share), step * spread_share] * k + [final_share]
    if top:
        shares[-1:] = [final_share * (1 - top_bin_share), final_share * top_bin_share]
    parts = list(split_zcdp_shares(budget, shares))
    top_budget = parts.pop() if top else None
    if declared_spread:
        centers, spreads = parts[:k], None
    else:
        centers, spreads = parts[0:2 * k:2], parts[1:2 * k:2]
    every = parts if top_budget is None else parts + [top_budget]
    return CoinPressPlan(int(n_users), int(n_features), tuple(centers),
                         None if spreads is None else tuple(spreads), parts[-1],
                         compose(*every), top_budget)


def _gaussian_tail_radius(sigma, d, beta):
    """``σ(√d + √(2 ln(1/β)))``: ``‖N(0, σ²I_d)‖`` exceeds it w.p. ``≤ β``
    (Laurent–Massart, via Gaussian concentration of the norm)."""
    return sigma * (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / beta)))


def _subset_mean_radius(spread, m, beta):
    """``s(1 + √(2 ln(1/β)))/√m``: about how far the mean of ``m`` random
    users lies from the mean of all, when every user is within ``s`` of it
    (w.p. about ``1 − β``; an accuracy margin, not a privacy quantity)."""
    return spread * (1.0 + math.sqrt(2.0 * math.log(1.0 / beta))) / math.sqrt(m)


#: rows per block of the distance pass (a few hundred kB per temporary)
_BLOCK_ROWS = 2048


def _clipped_distances(U, c, r, rows=None):
    """``np.minimum(np.linalg.norm(U - c, axis=1), r)[:, None]`` (of the
    rows ``rows`` of ``U`` when given), computed block by block: the same
    values (``linalg.norm`` is ``sqrt(add.reduce(x * x, axis=1))``, row by
    row) without an ``n × d`` temporary. A square that overflows (a user's
    mean near the float64 range) is an infinite distance, clipped to ``r``:
    silently (a warning would depend on the data)."""
    n, d = U.shape if rows is None else (rows.size, U.shape[1])
    dist = np.empty((n, 1))
    buffer = np.empty((min(n, _BLOCK_ROWS), d))
    for start in range(0, n, _BLOCK_ROWS):
        out = dist[start:start + _BLOCK_ROWS, 0]
        D = buffer[:out.size]
        if rows is None:
            np.subtract(U[start:start + _BLOCK_ROWS], c, out=D)
        else:  # gathered straight into the buffer, then shifted in place
            np.take(U, rows[start:start + _BLOCK_ROWS], axis=0, out=D)
            np.subtract(D, c, out=D)
        # a user beyond ~1e154 has an infinite squared distance, clipped to
        # r like any far user (no warning: it would reveal that user)
        with np.errstate(over="ignore"):
            np.multiply(D, D, out=D)
            np.add.reduce(D, axis=1, out=out)
        np.sqrt(out, out=out)
        np.minimum(out, r, out=out)
    return dist


#: the last radius grows only when enough users lie beyond this multiple of
#: it (a symmetric cloud loses little to clipping between r and 2r: the
#: shrinking rule's 1.2x mean distance is kept there, T-M1)
TOP_BIN_FACTOR = 2.0

#: probability that an empty cell of the distance histogram passes (it would
#: widen the last radius needlessly: accuracy only)
TOP_BIN_BETA = 0.01


def _top_bin_radius(U, c, r, radius0, budget, factor, seed):
    """The top passing edge of the users' distances to ``c`` (a released
    centre) on a log2 grid from ``factor·r`` to at least ``2·radius0``
    (public values and earlier releases), or ``r`` when no cell above the
    first passes. ``budget.rho``-zCDP (one cell per user)."""
    base = factor * r
    if not (math.isfinite(base) and base > 0):
        return r
    n_bins = 1 + max(1, math.ceil(math.log2(max(2.0 * radius0 / base, 1.0))))
    dist = _clipped_distances(U, c, math.inf)[:, 0]
    edge = top_bin_edge(dist, budget.rho, base=base, n_bins=n_bins,
                        beta=TOP_BIN_BETA, random_state=seed)
    return r if edge is None else edge


#: a shrinking step on a subset of the users keeps the norm of its centre's
#: noise (and the standard deviation of its mean distance's) at most this
#: fraction of the ball's radius (:func:`coinpress_step_users`)
STEP_NOISE_RATIO = 0.01


def coinpress_step_users(plan):
    """How many users the shrinking steps run on (public values only).

    All of them up to :data:`~skuserdp.utils._random.SUBSET_MIN_USERS`
    (2^17). Above, the shrinking steps run on a uniformly random subset of
    the users, drawn independently of the data
    (:func:`~skuserdp.utils._random.random_subset`; the privacy loss is that
    of the plan, unchanged: no amplification is claimed), just large enough
    that each step's noise stays small against its ball: the norm of a
    centre's noise, and the standard deviation of a mean distance's, at most
    ``STEP_NOISE_RATIO`` (1 %) of the radius. Two releases still use every
    user: the last one, and the last centre release, which is the centre the
    last release clips around (a centre off the users' mean by the subset's
    sampling error would pull the clipped mean towards it: measured 6–10 %
    more error on heavy-tailed users' means, ``benchmarks/bench_subset.py``).
    The other steps only locate the users and their spread, which 2^17 users
    do to about 0.3 % of the spread. With a declared spread ``s``, a ball
    after a step on the subset is widened by
    ``s(1 + √(2 ln(1/β)))/√m`` for the subset's mean. This makes those
    steps ``n / m`` times cheaper (:ref:`papers-random-subset`; not in the paper).

    Parameters
    ----------
    plan : CoinPressPlan
        The run's budget schedule.

    Returns
    -------
    m : int
        ``plan.n_users`` or fewer.

    Examples
    --------
    >>> from skuserdp.mean._coinpress import coinpress_step_users, plan_coinpress
    >>> from skuserdp.privacy import ZCDP
    >>> coinpress_step_users(plan_coinpress(10 ** 5, 64, budget=ZCDP(0.016)))
    100000
    >>> coinpress_step_users(plan_coinpress(10 ** 6, 64, budget=ZCDP(0.016)))
    131072
    """
    n, d = plan.n_users, plan.n_features
    if n <= SUBSET_MIN_USERS or not plan.center_budgets:
        return n
    # noise / radius on all n users; it falls like 1/m
    ratio = math.sqrt(d * plan_clip_noise(
        n, d, budget=min(plan.center_budgets, key=lambda b: b.rho),
        radius=1.0).noise_variance)
    if plan.spread_budgets is not None:
        ratio = max(ratio, math.sqrt(plan_clip_noise(
            n, 1, budget=min(plan.spread_budgets, key=lambda b: b.rho),
            radius=0.5).noise_variance))
    m = max(SUBSET_MIN_USERS, math.ceil(n * ratio / STEP_NOISE_RATIO))
    return n if m >= n else m


def coinpress_mean(user_means, plan, *, center, radius0, spread=None,
                   scale_factor=1.2, final_scale_factor=None, beta=0.01, box=None,
                   top_bin_factor=TOP_BIN_FACTOR, random_state=None, n_jobs=None,
                   return_last_ball=False):
    """Run a planned CoinPress estimate on per-user means (pure-function core).

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One row per user. Not modified.
    plan : CoinPressPlan
        From :func:`plan_coinpress` with the same shape; ``declared_spread``
        must match ``spread is not None``.
    center : ndarray of shape (n_features,)
        Public centre of the initial ball.
    radius0 : float
        Public radius of the initial ball (it should contain the users'
        empirical mean).
    spread : float or None, default=None
        Public ℓ2 radius of the users' means around their mean (declared
        spread), or ``None`` to estimate it privately.
    scale_factor : float, default=1.2
        Multiplier ``≥ 1`` of the released mean distance (no declared
        spread); the ball never grows.
    final_scale_factor : float or None, default=None
        Multiplier of the last mean distance for the *last* release's radius,
        which may then exceed the previous one; ``None`` uses
        ``scale_factor`` (and no growth). Larger values trade noise for less
        clipping bias on skewed data.
    beta : float, default=0.01
        Failure probability per step of the noise tail radius (declared
        spread).
    box : (lower, upper) or None, default=None
        Public box known to contain the mean: every released centre, and the
        output, is projected onto it (post-processing; with few users the
        noisy centres would otherwise wander far outside it).
    top_bin_factor : float, default=TOP_BIN_FACTOR (2)
        With ``plan.top_bin_budget``: the last radius ``r`` grows to the
        upper edge of the top passing cell of a private log2 histogram of
        the users' distances to the last centre whose cell 0 is
        ``[0, top_bin_factor·r]`` (so it grows only when enough users lie
        beyond ``top_bin_factor·r``), with the top edge at least
        ``2·radius0``.
    random_state : int, SeedSequence or None, default=None
        Noise source.
    n_jobs : int, default=None
        Workers of the noise sampling.
    return_last_ball : bool, default=False
        Also return ``(center, radius)`` of the last release's clipping ball
        (released values: the interval of :meth:`CoinPressMeanEstimator.conf_int`
        is built on that step).

    Returns
    -------
    mean : ndarray of shape (n_features,)
        The private mean. It is ``plan.loss``-zCDP at the user level (two
        inputs are neighbours when one user's row is replaced; the number of
        users is public), provided ``center``, ``radius0``, ``spread`` and
        ``box`` are public.
    radii : ndarray of shape (n_steps,)
        The clipping radius of every centre release (public: functions of
        public values and earlier releases).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._coinpress import coinpress_mean, plan_coinpress
    >>> from skuserdp.privacy import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> U = rng.normal(3.0, 0.5, size=(5000, 2))
    >>> plan = plan_coinpress(5000, 2, budget=ZCDP(0.1))
    >>> mean, radii = coinpress_mean(U, plan, center=np.zeros(2),
    ...                              radius0=100.0, random_state=0)
    >>> mean.round(1), bool(radii[-1] < 2.0)
    (array([3., 3.]), True)
    """
    U = np.asarray(user_means, dtype=np.float64)
    n, d = U.shape
    if (n, d) != (plan.n_users, plan.n_features):
        raise ValueError(f"plan is for shape ({plan.n_users}, {plan.n_features}), "
                         f"user_means have shape {U.shape}.")
    if (spread is None) != (plan.spread_budgets is not None):
        raise ValueError("plan.spread_budgets must be None exactly when a spread is "
                         "declared.")
    c = np.array(center, dtype=np.float64, copy=True)
    project = (lambda v: v) if box is None else (lambda v: np.clip(v, *box))
    r = float(radius0)
    s = 0.0 if spread is None else float(spread)
    root = make_seed_sequence(random_state)
    seeds = root.spawn(2 * plan.n_steps)
    # the shrinking steps' users: all, or a random subset (public size)
    m = coinpress_step_users(plan)
    rows = None if m == n else random_subset(n, m, generator_from(root.spawn(1)[0]))
    last = len(plan.center_budgets) - 1
    radii = []
    for t, cb in enumerate(plan.center_budgets):
        # the last centre (the one the last release clips around) from every
        # user: no sampling error of the subset for the clipping to pull on
        step_rows = None if t == last else rows
        cplan = plan_clip_noise(n if step_rows is None else m, d, budget=cb,
                                radius=r + s)
        radii.append(r + s)
        c = project(clip_noise_from_plan(U, cplan, center=c, rows=step_rows,
                                         random_state=seeds[2 * t], n_jobs=n_jobs))
        if spread is not None:
            r = _gaussian_tail_radius(math.sqrt(cplan.noise_variance), d, beta)
            if step_rows is not None:  # and the subset's mean off the users'
                r += _subset_mean_radius(s, m, beta)
            continue
        dist = _clipped_distances(U, c, r, rows)
        dplan = plan_clip_noise(m, 1, budget=plan.spread_budgets[t], radius=r / 2.0)
        mean_dist = float(clip_noise_from_plan(
            dist, dplan, center=np.array([r / 2.0]), random_state=seeds[2 * t + 1])[0])
        mean_dist = max(mean_dist, 2.0 * math.sqrt(dplan.noise_variance))
        if t == len(plan.center_budgets) - 1 and final_scale_factor is not None:
            r = final_scale_factor * mean_dist
        else:
            r = min(scale_factor * mean_dist, r)
    if plan.top_bin_budget is not None:
        r = max(r, _top_bin_radius(U, c, r, radius0, plan.top_bin_budget,
                                   top_bin_factor, root.spawn(1)[0]))
    fplan = plan_clip_noise(n, d, budget=plan.final_budget, radius=r + s)
    radii.append(r + s)
    last_center = c
    c = project(clip_noise_from_plan(U, fplan, center=c, random_state=seeds[-1],
                                     n_jobs=n_jobs))
    if return_last_ball:
        return c, np.array(radii), (last_center, r + s)
    return c, np.array(radii)


@fill_doc
class CoinPressMeanEstimator(UserLevelMeanEstimator):
    """User-level private mean by a shrinking confidence ball (CoinPress).

    The iterative estimator of Biswas, Dong, Kamath and Ullman (2020), run on
    the users' means: starting from the public box ``[-bound, bound]^d``, it
    releases ``n_steps − 1`` clipped noisy means, each clipped to a ball
    around the previous one whose radius shrinks with the released values,
    then a last clipped noisy mean with ``final_share`` of the budget. It
    needs only a *loose* public ``bound``: the shrinking finds where the
    users are and how far they spread (privately, when ``radius`` is not
    declared), so the last release clips at a radius close to the users'
    actual spread instead of the box.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    delta : float, default=1e-6
        Failure probability δ of the user-level guarantee, in ``(0, 1)``
        (the releases compose in zCDP). Choose δ well below ``1 / n_users``.
    {bounds}
        It may be very loose: the cost is a few shrinking steps, not noise.
        The first ball is centred at its midpoint and contains it; every
        released centre is projected onto it. Without a declared ``radius``
        the whole run is in the box's coordinates scaled per column to
        ``[-1, 1]`` (balls, radii and noise in units of each feature's
        half-width, ``radii_`` too), mapped back at the end; with a declared
        ``radius`` (an ℓ2 spread in the units of ``X``, which would bound
        the scaled coordinates only as ``radius / min(half-width)``) it runs
        in the units of ``X``.
    {bounds_share}
    radius : float or None, default=None
        Public ℓ2 radius of the users' means around their mean, if known
        (CoinPress's own setting: every ball is widened by it and shrinks
        to the Gaussian tail radius of the noise just added). ``None``: the
        spread is estimated privately at every step (a one-dimensional
        release of the users' mean distance to the new centre).
    n_steps : int or "auto", default="auto"
        Number of centre releases (``n_steps − 1`` shrinking steps), at most
        ``MAX_STEPS`` (1000). ``"auto"``: 3 when the box is learned
        (``bounds="auto"``) and contains 0 in every column (its width is
        then a few times the users' spread, and two shrinking steps reach
        it), 8 otherwise (a declared box may be of any width; a learned box
        far from 0, e.g. years, is widened by the grid error of its centre).
    final_share : float, default=0.75
        Share of the zCDP budget of the last release; the rest is split
        equally between the shrinking steps.
    spread_share : float, default=0.3
        Share of each shrinking step spent on the mean distance (only when
        ``radius`` is None).
    scale_factor : float, default=1.2
        The next radius is ``scale_factor`` times the released mean
        distance (only when ``radius`` is None), ``>= 1``.
    final_scale_factor : float, default=None
        The last release's radius is ``final_scale_factor`` times the last
        released mean distance, and may exceed the previous ball (only when
        ``radius`` is None); ``None`` uses ``scale_factor``. See Notes.
    top_bin_share : float, default=0.2
        Share, in ``[0, 1)``, of the last release's budget spent on a private
        log2 histogram of the users' distances to the last centre (only when
        ``radius`` is None and ``n_steps > 1``; discrete Gaussian on the
        counts, replace-one ℓ2 sensitivity √2). The last radius becomes the
        upper edge of its highest cell above ``[0, 2r]`` (``r`` the shrunk
        radius) whose noisy count reaches a public threshold ``k ∝ 1/√ρ``,
        if any: at most about ``k`` users stay clipped, so the clipping bias
        of skewed data vanishes as ``n·ε`` grows (spec
        ``real_data_means.md`` §2.3). ``0`` turns it off (the radius is then
        a fixed multiple of the spread, and skewed data keep their bias at
        any ε).
    beta : float, default=0.01
        Failure probability of each step's tail radius (only when
        ``radius`` is declared).
    {ci_share}
    {weighting}
    calibration : {{"tight"}}, default="tight"
        zCDP accounting with the optimal conversion. There is no
        ``"paper"`` setting: the paper's text (its budget split and radius
        constants) was not available to this project, so the shrinking rule
        is our reconstruction (module docstring) and is documented as such.
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {mean_}
    {bounds_}
    n_steps_ : int
        Number of centre releases made (``n_steps``, resolved).
    radii_ : ndarray of shape (`n_steps_`,)
        The clipping radius of every centre release (functions of public
        values and earlier releases, so public).
    {noise_std_}
    n_users_ : int
        Number of users seen in ``fit``.
    epsilon_ : float
        ε actually spent (``<= epsilon``): the optimal conversion of
        ``rho_`` at ``delta_``.
    delta_ : float
        δ actually spent.
    rho_ : float
        zCDP parameter of all releases together.
    privacy_loss_ : ZCDP
        The native guarantee, for composing with other fits.
    {feature_attributes}

    See Also
    --------
    ClipNoiseMeanEstimator : One release with a declared clipping ball.
    WinsorizedMeanEstimator : Levy et al.'s estimator for many concentrated
        users.

    Notes
    -----
    *Clipping bias.* Without a declared ``radius`` the last release clips
    the users' means at ``1.2×`` their mean distance to an already located
    centre, widened to the top passing cell of the distance histogram
    (``top_bin_share``) when more than about ``k`` users lie beyond twice
    that; the numbers below are without that widening
    (``top_bin_share=0``). For a symmetric (e.g. Gaussian) cloud this costs
    almost no bias and much less noise than clipping every user: on the reference task
    T-M1 the error is about 0.6× that of a hand-tuned clip radius
    (``benchmarks/README.md``). For *skewed* users' means the clipped mean is
    pulled toward the centre and the estimate does not converge to the mean
    as ``n`` grows: with exponential users' means (mean 1, ε = 50, 20 000
    users; median over 10 seeds) the error is 0.21 at d = 1 and 0.094 at
    d = 10 with the learned box and its 3 centre releases (0.27 and 0.11
    with a declared box and 8); ``final_scale_factor=3`` brings it to 0.088
    and 0.0010 (0.18 and 0.0015 with 8), at the price of 2.5× more noise on
    symmetric data. Declare ``radius`` when you know the spread.

    *Many users.* Above 2^17 users the shrinking steps run on a random
    subset of the users, drawn independently of the data, just large enough
    that each step's noise stays below 1 % of its ball
    (:func:`~skuserdp.mean._coinpress.coinpress_step_users`); the last
    centre release and the last release use every user. The privacy loss is
    unchanged (the docs' privacy model, "Preliminary releases on a random
    subset") and those steps read the subset instead of every user.

    Shrinking works when each step's noise is small against the ball, i.e.
    ``a = 2√d / (n_users·√(2ρ_step))`` is well below 1 (``ρ_step`` the
    budget of one shrinking step): each step cuts the radius by about
    ``1/(scale_factor·a)``. With few users and many features (``a ≳ 1``)
    the ball cannot shrink; use :class:`FewUsersBallEstimator` there.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.datasets import make_user_samples
    >>> from skuserdp.mean import CoinPressMeanEstimator
    >>> X, groups, true_mean = make_user_samples(n_users=2000, n_features=3,
    ...                                          mean=0.5, random_state=0)
    >>> est = CoinPressMeanEstimator(epsilon=1.0, delta=1e-6, bounds=(-100, 100),
    ...                              random_state=0).fit(X, groups=groups)
    >>> est.mean_.round(1), est.epsilon_ <= 1.0
    (array([0.5, 0.5, 0.5]), True)
    >>> bool(est.radii_[-1] < 0.01 * est.radii_[0])
    True
    """

    _parameter_constraints: dict = {
        **UserLevelMeanEstimator._parameter_constraints,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        **BOUNDS_CONSTRAINTS,
        "radius": [None, Interval(Real, 0, None, closed="neither")],
        "n_steps": [Interval(Integral, 1, MAX_STEPS, closed="both"),
                    StrOptions({"auto"})],
        "final_share": [Interval(Real, 0, 1, closed="right")],
        "spread_share": [Interval(Real, 0, 1, closed="neither")],
        "scale_factor": [Interval(Real, 1, None, closed="left")],
        "final_scale_factor": [None, Interval(Real, 1, None, closed="left")],
        "top_bin_share": [Interval(Real, 0, 1, closed="left")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "calibration": [StrOptions({"tight"})],
        **CI_CONSTRAINTS,
        **WEIGHT_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, bounds="auto", bounds_share=None,
                 radius=None, n_steps="auto", final_share=0.75, spread_share=0.3,
                 scale_factor=1.2, final_scale_factor=None, top_bin_share=0.2,
                 beta=0.01, ci_share="auto", weighting="equal", estimand="user_mean",
                 max_rows=None, weights_share="auto", calibration="tight",
                 random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.weighting = weighting
        self.estimand = estimand
        self.max_rows = max_rows
        self.weights_share = weights_share
        self.bounds = bounds
        self.bounds_share = bounds_share
        self.radius = radius
        self.n_steps = n_steps
        self.final_share = final_share
        self.spread_share = spread_share
        self.scale_factor = scale_factor
        self.final_scale_factor = final_scale_factor
        self.top_bin_share = top_bin_share
        self.beta = beta
        self.ci_share = ci_share
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _zcdp_accounting(self, n_users, n_features):
        return True

    def _scales_box(self):
        # a declared spread is an l2 radius in the units of X: it would map to
        # radius / min(half_width), never less noise than the natural units
        return self.radius is None

    def _fit_user_means(self, U, budget):
        n, d = U.shape
        # the first ball: around the box's midpoint, through its corners
        center = budget.midpoint
        radius0 = budget.half_diagonal
        n_steps = self.n_steps
        if isinstance(n_steps, str):  # "auto" (the only string allowed)
            # (the rule reads the box in the units of X: 0 inside it or not)
            n_steps = auto_steps(self.bounds, *budget.natural_bounds)
        plan = plan_coinpress(
            n, d, budget=ZCDP(zcdp_rho_for(budget.epsilon, budget.delta)),
            n_steps=n_steps, final_share=self.final_share,
            spread_share=self.spread_share,
            declared_spread=self.radius is not None,
            top_bin_share=self.top_bin_share)
        mean, self.radii_, last_ball = coinpress_mean(
            U, plan, center=center, radius0=radius0, spread=self.radius,
            scale_factor=self.scale_factor,
            final_scale_factor=self.final_scale_factor, beta=self.beta,
            box=(budget.lower, budget.upper),
            random_state=budget.random_state, n_jobs=self.n_jobs,
            return_last_ball=True)
        self._last_ball = last_ball
        self.n_steps_ = n_steps
        # the last release's noise (its radius is a public function of earlier
        # releases)
        last = plan_clip_noise(n, d, budget=plan.final_budget, radius=self.radii_[-1])
        self._noise_error = math.sqrt(d * last.noise_variance)
        return mean, plan.loss

    def _interval_geometry(self, budget):
        # the last release clips the users to the ball (c_T, r_T) around its
        # last (released) centre; the users of the box outside it are counted
        # privately to bound the clipping bias (R_max: the farthest corner)
        center, radius = self.__dict__.pop("_last_ball")
        corner = np.maximum(np.abs(budget.upper - center),
                            np.abs(center - budget.lower))
        return {"geometry": "ball", "ball": (center, radius, "l2"),
                "outer": float(np.sqrt(corner @ corner))}
