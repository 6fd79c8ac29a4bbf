"""Pure ε-DP person-level mean in low dimension (AKMMSU 2024, §5, Algorithms 5–8).

Agarwal, Kamath, Majid, Mouzakis, Silver and Ullman [AKM+24]_, §5: Lemma
5.1–5.2 (truncated median of means), Algorithm 5 (binary mean comparison),
Definition 5.5 (score), Algorithm 6 (test candidate), Algorithm 7 (fine
estimation) and Algorithm 8 (the estimator); spec
``akmmsu2024_person_level.md`` §2.8 (with its OUR CHOICE constants) and §7
item 10.

**Cost.** Fine estimation compares every candidate ``p`` of a grid ``J``
(``(⌈9√d⌉ + 1)^d`` points) against every point ``q`` of a local cover
``J_p`` (``≈ (16√d + 1)^d`` points): about 170 comparisons for d = 1,
10⁵ for d = 2 and 10⁸ for d = 3. The functions refuse more than
``max_comparisons`` (default 10⁶), so in practice d ≤ 2: this is a
reference implementation of the paper's pure-DP estimator, not a tool for
many features.

**Privacy** (replace-one user neighbours, n public):

* The data enter Algorithms 5–7 only through the users' means, split into
  ``κ`` groups *by index* (public; users beyond ``κ⌊n/κ⌋`` are ignored).
* For a pair ``(p, q)`` the comparison projects each user mean on
  ``v = (q − p)/‖q − p‖``, truncates it to ``[p₀ − ρ, p₀ + ρ]``
  (``p₀ = ⟨v, p⟩``) and *rounds it to a lattice* of ``levels + 1`` points;
  ``p`` loses when at least ``(κ + 1)/2`` groups have an integer sum at
  least a public integer threshold (their mean reaches the midpoint
  ``(p₀ + q₀)/2``). Everything after the rounding is exact integer
  arithmetic, so the comparison is a well-defined function of the data and
  :func:`comparison_cost` computes *exactly* the least number of users that
  must be changed to make ``p`` lose (greedy: raise the smallest values of
  a group to the top of the window; the cheapest ``(κ + 1)/2`` groups).
* ``Score(p) = min(cap, min_q cost(p, q))`` (Definition 5.5). Changing one
  user moves every cost by at most 1 (a changed user can be changed back),
  so ``Score`` has sensitivity 1 whatever ``cap`` is, and the exponential
  mechanism with ``exp(ε·Score/2)`` is ε-DP. An approximate score would
  break this argument; the exactness is tested against brute force.
* Algorithm 8 runs the 1-D pipeline
  (:func:`~skuserdp.mean._person_level.person_level_mean_1d`, pure) on each
  coordinate of the first half of the users with ε/d (basic composition:
  ε) and fine estimation on the second half with ε; the halves are disjoint
  and drawn independently of the data, so the whole is ε-DP (parallel
  composition, as in the paper).

The exponential mechanism samples with the Gumbel-max trick
(:func:`~skuserdp.mechanisms.exponential_mechanism`): a discrete output,
whose law departs from the ideal one only by float64 rounding of the
integer scores times ε/2.
"""

import math
import warnings

import numpy as np
from joblib import Parallel, delayed
from scipy import stats

from ..exceptions import AccuracyWarning
from ..mechanisms import exponential_mechanism
from ..privacy import PureDP, compose_parallel
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_positive_scalar
from ._person_level import (
    person_level_mean_per_feature,
    plan_person_level_1d,
    range_coarse_bins,
    range_coarse_failure,
)

__all__ = [
    "clip_bias_bound",
    "person_level_error_bound_1d",
    "pure_fine_plan",
    "binary_mean_comparison",
    "comparison_cost",
    "candidate_scores",
    "fine_estimate",
    "person_level_mean_pure",
]

#: Lattice points of the truncation window ``[p₀ − ρ, p₀ + ρ]``.
LEVELS = 2 ** 20
#: Coarse shares of the 1-D pipeline tried by ``alpha="auto"`` (the one with
#: the smallest public error bound is used).
COARSE_SHARES = (0.05, 0.1, 0.25, 0.5)
#: Refuse fine estimation with more candidate pairs than this by default.
MAX_COMPARISONS = 10 ** 6


def clip_bias_bound(radius, *, moment_bound, samples_per_user, moment_order=2.0):
    """Bound on the bias of truncating a user mean at distance ``radius`` from μ.

    ``E(|Ȳ − μ| − a)₊`` for the mean Ȳ of m i.i.d. samples (in any fixed
    direction) with k-th central moment ``≤ M^k``: the smaller of
    ``M²/(4ma)`` (from ``(y − a)₊ ≤ y²/(4a)``, variance only) and, for
    k ≥ 4, ``(27/256)·E(Ȳ − μ)⁴/a³`` with the exact fourth moment
    ``E(Ȳ − μ)⁴ ≤ M⁴(3m − 2)/m³`` (``m·μ₄ + 3m(m − 1)σ⁴`` over ``m⁴``) and
    ``(y − a)₊ ≤ (27/256) y⁴/a³``.

    Examples
    --------
    >>> from skuserdp.mean._person_level_pure import clip_bias_bound
    >>> clip_bias_bound(1.0, moment_bound=1.0, samples_per_user=4)
    0.0625
    >>> round(clip_bias_bound(1.0, moment_bound=1.0, samples_per_user=4,
    ...                       moment_order=4), 5)
    0.01648
    """
    a, M, m = float(radius), float(moment_bound), int(samples_per_user)
    bias = M * M / (4.0 * m * a)
    if moment_order >= 4:
        bias = min(bias, 27.0 / 256.0 * M ** 4 * (3.0 * m - 2.0) / m ** 3 / a ** 3)
    return bias


# ----------------------------------------------------------------------------
# Public accuracy bound of the 1-D pipeline (the coarse step of Algorithm 8)
# ----------------------------------------------------------------------------

def _stage_error(n, epsilon, rho, inner, beta, *, moment_bound, samples_per_user,
                 moment_order):
    """Error bound of one 1-D clip-and-noise stage (failure ≤ 2β).

    ``inner``: the window contains ``μ ± inner``. Bias
    (:func:`clip_bias_bound`), Bernstein for the clipped mean (variance
    ``≤ M²/m``, range ``2ρ``) and the discrete Laplace tail ``b·ln(1/β)``,
    ``b = 2ρ/(nε)``, times 1.01 (the 0.05 % rounding widening and the lattice
    step).
    """
    M, m = float(moment_bound), int(samples_per_user)
    if inner <= 0:
        return math.inf
    bias = clip_bias_bound(inner, moment_bound=M, samples_per_user=m,
                           moment_order=moment_order)
    log_s = math.log(2.0 / beta)
    sampling = math.sqrt(2.0 * M * M / m * log_s / n) + 4.0 * rho * log_s / (3.0 * n)
    noise = 1.01 * 2.0 * rho / (n * epsilon) * math.log(1.0 / beta)
    return bias + sampling + noise


def person_level_error_bound_1d(n_users, epsilon, *, bound, moment_bound,
                                samples_per_user, moment_order=2.0, beta=0.1,
                                coarse_fraction=0.05, calibration="tight"):
    """Public error bound of the pure 1-D pipeline (``person_level_mean_1d``).

    A bound ``e`` with ``P(|μ̂ − μ| > e) ≤ β`` for *every* distribution with
    ``|μ| ≤ R`` whose samples have k-th central moment at most ``M^k``
    (k ≥ 2), for the public plan of
    :func:`~skuserdp.mean._person_level.plan_person_level_1d` with
    ``delta=0``. It uses at most the fourth moment, so it is conservative
    for large k. The terms:

    * coarse failure: a binomial tail for "more than 1/8 of the coarse users
      farther than r from μ" (each is, with probability at most
      ``M²/(m r²)`` by Chebyshev, or ``E(Ȳ − μ)⁴/r⁴`` for k ≥ 4) plus the
      exponential mechanism's
      ``l·e^{−3εn_c/16}`` over ``l`` bins;
    * the re-centring layer (when the plan has one): its window contains
      ``μ ± ρ₀,r``; its error is bounded like the fine stage's;
    * the fine stage: its window contains ``μ ± (ρ − centre error)``;
      clipping bias (:func:`clip_bias_bound`), Bernstein for the mean of the
      clipped values (variance ``≤ M²/m``, range ``2ρ``) and the discrete
      Laplace tail.

    The failure probability left after the coarse step is split evenly
    between the sampling and noise terms of the remaining stages.

    Parameters
    ----------
    n_users : int
        Users given to the pipeline.
    epsilon : float
        Its ε.
    bound : float
        Public R with ``|μ| ≤ R``.
    moment_bound : float
        M.
    samples_per_user : int
        m.
    moment_order : float, default=2.0
        k.
    beta : float, default=0.1
        Failure probability of the bound.
    coarse_fraction : float, default=0.05
        As in ``person_level_mean_1d``.
    calibration : {"tight", "paper"}, default="tight"

    Returns
    -------
    error : float
        The bound; ``inf`` when the coarse step alone may fail with
        probability ``≥ β/2``.

    Examples
    --------
    >>> from skuserdp.mean._person_level_pure import person_level_error_bound_1d
    >>> e = person_level_error_bound_1d(4000, 1.0, bound=10.0, moment_bound=1.0,
    ...                                 samples_per_user=10)
    >>> bool(0 < e < 0.2)
    True
    """
    M, m, R = float(moment_bound), int(samples_per_user), float(bound)
    plan = plan_person_level_1d(n_users, epsilon, delta=0.0, bound=R,
                                moment_order=moment_order, moment_bound=M,
                                samples_per_user=m, beta=0.1,
                                coarse_fraction=coarse_fraction,
                                calibration=calibration)
    n_c, eps_s, r = plan["n_coarse"], plan["stage_epsilon"], plan["width"]
    outlier = M * M / (m * r * r)                   # Chebyshev
    if moment_order >= 4:                          # Markov on the 4th moment
        outlier = min(outlier, M ** 4 * (3.0 * m - 2.0) / (m ** 3 * r ** 4))
    outlier = min(1.0, outlier)
    coarse_fail = (float(stats.binom.sf(math.floor(n_c / 8.0), n_c, outlier))
                   + range_coarse_failure(n_c, eps_s, range_coarse_bins(R, r)))
    if coarse_fail >= beta / 2.0:
        return math.inf
    stages = 2 if plan["n_recenter"] > 0 else 1
    each = (beta - coarse_fail) / (2.0 * stages)  # per stage: 2 tails at β/2 each
    kw = dict(moment_bound=M, samples_per_user=m, moment_order=moment_order)
    center_error = plan["u"]
    if stages == 2:
        rho_r = plan["recenter_radius"]
        center_error = _stage_error(plan["n_recenter"], eps_s, rho_r,
                                    rho_r - plan["u"], each, **kw)
    rho = plan["radius"]
    return _stage_error(plan["n_fine"], eps_s, rho, rho - center_error, each, **kw)


# ----------------------------------------------------------------------------
# Fine estimation: plan (public), comparison, exact score, Algorithm 7
# ----------------------------------------------------------------------------

def _axis(half_width, n_points):
    return np.linspace(-half_width, half_width, n_points)


def pure_fine_plan(n_users, n_features, *, alpha, epsilon, moment_bound,
                   samples_per_user, moment_order=2.0, beta=0.1, calibration="tight"):
    """Public parameters of fine estimation (Algorithms 6–7; spec §2.8).

    Parameters
    ----------
    n_users : int
        Users given to fine estimation.
    n_features : int
        d.
    alpha : float
        Target ℓ2 accuracy α; the candidates cover ``[−α, α]^d`` (the coarse
        step's ℓ∞ error) and the comparisons use ``α′ = 8α/9``.
    epsilon : float
        ε of the exponential mechanism.
    moment_bound, samples_per_user, moment_order : float, int, float
        M, m and k.
    beta : float, default=0.1
        Failure probability used for κ (paper) and the accuracy check.
    calibration : {"tight", "paper"}, default="tight"
        ``"paper"``: the spec's constants — ``κ = 2⌈1.6 ln(2|J||J_p|/β)⌉ + 1``
        groups, ``ρ = max(2M√((k−1) max(1, ln m)/m),
        (2M/m)(16M/((k−1)α′))^{1/(k−1)}, 4α′)``, local cover of half-width
        ``2α′``, ``Score`` capped at n. ``"tight"``: one group (the
        truncated mean, which concentrates by Bernstein because it is
        bounded; this doubles every score), ``ρ = M√((k−1) max(1, ln m)/m) +
        2α′``, the local cover widened to ``9α′/4`` (spec §2.8 note: the
        candidate can be that far from μ in ℓ∞). Both cap ``Score`` at the
        number of users used (a smaller public cap would keep sensitivity 1
        and save work, but flattens the scores near μ: measured 2.7–3.3×
        less accurate with a cap of twice the needed score).

    Returns
    -------
    plan : dict
        ``alpha``, ``alpha_c`` (α′), ``rho``, ``n_groups`` κ, ``group_size``,
        ``candidates`` (``J``, shape (|J|, d)), ``offsets`` (``J_p − p``,
        shape (|J_p|, d)), ``thresholds`` (integer group-sum thresholds per
        offset), ``cap``, ``comparisons`` = |J|·|J_p|, ``needed_score`` (the
        score a good candidate needs to win w.p. 1 − β/4),
        ``good_score`` (a lower bound on the score of the candidate nearest
        μ that holds w.p. 1 − β/4 under the model) and ``feasible``
        (``good_score ≥ needed_score``).

    Examples
    --------
    >>> from skuserdp.mean._person_level_pure import pure_fine_plan
    >>> plan = pure_fine_plan(5000, 1, alpha=0.2, epsilon=1.0, moment_bound=1.0,
    ...                       samples_per_user=10)
    >>> plan["candidates"].shape, plan["offsets"].shape, plan["n_groups"]
    ((10, 1), (10, 1), 1)
    """
    n, d = int(n_users), int(n_features)
    alpha = check_positive_scalar(alpha, "alpha")
    M, m, k = float(moment_bound), int(samples_per_user), float(moment_order)
    paper = calibration == "paper"
    alpha_c = 8.0 * alpha / 9.0
    spread = M * math.sqrt((k - 1.0) * max(1.0, math.log(m)) / m)
    n_p = math.ceil(9.0 * math.sqrt(d)) + 1           # step ≤ 2α/(9√d)
    half_q = 2.0 * alpha_c if paper else 2.25 * alpha_c
    n_q = math.ceil(2.0 * half_q / (alpha_c / (4.0 * math.sqrt(d)))) + 1
    axes_p = [_axis(alpha, n_p)] * d
    candidates = np.stack(np.meshgrid(*axes_p, indexing="ij"), -1).reshape(-1, d)
    axes_q = [_axis(half_q, n_q)] * d
    offsets = np.stack(np.meshgrid(*axes_q, indexing="ij"), -1).reshape(-1, d)
    # J_p without the closed ball of radius α′ (a relative margin keeps grid
    # points on the sphere out despite rounding).
    offsets = offsets[np.linalg.norm(offsets, axis=1) > alpha_c * (1.0 + 1e-9)]
    n_cand, n_off = candidates.shape[0], offsets.shape[0]
    log_j = math.log(n_cand)
    if paper:
        rho = max(2.0 * spread,
                  2.0 * M / m * (16.0 * M / ((k - 1.0) * alpha_c)) ** (1.0 / (k - 1.0)),
                  4.0 * alpha_c)
        kappa = 2 * math.ceil(1.6 * math.log(2.0 * n_cand * n_off / beta)) + 1
    else:
        rho = spread + 2.0 * alpha_c
        kappa = 1
    kappa = max(1, min(kappa, n if n % 2 else n - 1))
    group = n // kappa
    # "Group mean ≥ midpoint": integer sum ≥ ceil(g·(ρ + ‖o‖/2)/(2ρ)·L).
    dist = np.linalg.norm(offsets, axis=1)
    thresholds = np.ceil(group * (rho + dist / 2.0) / (2.0 * rho)
                         * LEVELS).astype(np.int64)
    needed = (2.0 / epsilon) * (log_j + math.log(4.0 / beta))
    cap = group * kappa  # Definition 5.5: at most every used user

    # Good candidate (within α′/8 of μ): every comparison's truncated mean
    # stays within bias + dev of ⟨v, μ⟩, the midpoint is ≥ α′/2 away, and one
    # changed user moves a group mean by ≤ 2ρ/g. Bias ≤ M²/(4mρ_s) with
    # ρ_s = ρ − (distance of the window centre from μ) ≥ ρ − α′/8.
    rho_s = rho - alpha_c / 8.0
    bias = clip_bias_bound(rho_s, moment_bound=M, samples_per_user=m,
                           moment_order=k)
    # Bernstein for each group's truncated mean (g users), union over the
    # comparisons and the κ groups.
    log_s = math.log(2.0 * n_off * kappa * 4.0 / beta)
    dev = (math.sqrt(2.0 * M * M / m * log_s / group)
           + 4.0 * rho * log_s / (3.0 * group))
    margin = 3.0 * alpha_c / 8.0 - bias - dev
    if paper:
        # Lemma 5.3's count: (κ+1)/2 groups, each moved by margin.
        good = ((kappa + 1) // 2) * math.floor(group * max(margin, 0.0) / (2.0 * rho))
    else:
        good = math.floor(group * max(margin, 0.0) / (2.0 * rho))
    good = min(good, cap)
    return dict(alpha=alpha, alpha_c=alpha_c, rho=rho, n_groups=kappa,
                group_size=group, candidates=candidates, offsets=offsets,
                thresholds=thresholds, cap=int(cap), comparisons=n_cand * n_off,
                needed_score=needed, good_score=good, feasible=good >= needed)


def _lattice(projected, center, rho):
    """Round ``clip(projected − center, −ρ, ρ)`` to integers in ``[0, LEVELS]``."""
    z = np.clip(projected - center, -rho, rho)
    return np.rint((z + rho) * (LEVELS / (2.0 * rho))).astype(np.int64)


def binary_mean_comparison(user_means, p, q, *, rho, n_groups):
    """Algorithm 5 (BinMeanComp) on the lattice: does ``p`` win against ``q``?

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        Users are grouped by index into ``n_groups`` consecutive groups of
        ``⌊n/κ⌋``; the rest are ignored.
    p, q : array-like of shape (n_features,)
        Distinct points.
    rho : float
        Truncation radius.
    n_groups : int
        κ (odd).

    Returns
    -------
    p_wins : bool
        False when at least ``(κ + 1)/2`` groups have a truncated mean at or
        past the midpoint of ``p`` and ``q`` (projected on ``q − p``).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level_pure import binary_mean_comparison
    >>> U = np.zeros((30, 1))
    >>> binary_mean_comparison(U, [0.0], [1.0], rho=2.0, n_groups=3)
    True
    >>> binary_mean_comparison(U + 0.9, [0.0], [1.0], rho=2.0, n_groups=3)
    False
    """
    U = np.asarray(user_means, dtype=np.float64)
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    offset = q - p
    dist = float(np.linalg.norm(offset))
    group = U.shape[0] // n_groups
    z = _lattice(U[:group * n_groups] @ (offset / dist), float(p @ offset) / dist, rho)
    sums = z.reshape(n_groups, group).sum(axis=1)
    threshold = math.ceil(group * (rho + dist / 2.0) / (2.0 * rho) * LEVELS)
    return int((sums >= threshold).sum()) < (n_groups + 1) // 2


def comparison_cost(sorted_z, thresholds, *, cap=None):
    """Least number of users to change so that ``p`` loses (exact, greedy).

    Parameters
    ----------
    sorted_z : ndarray of int64, shape (κ, g, D)
        Lattice values of each group, sorted ascending along axis 1, for D
        comparisons.
    thresholds : ndarray of int64, shape (D,)
        Integer group-sum thresholds.
    cap : int, default=None
        Return ``min(cap, cost)``; only the ``cap`` smallest values of each
        group are then needed for the counts (the result is the same as
        capping the exact cost).

    Returns
    -------
    cost : ndarray of shape (D,)
        The cost of each comparison (float; ``inf`` when no change suffices
        and ``cap`` is None): the sum of the ``(κ + 1)/2`` cheapest groups,
        a group's count being the least c with
        ``sum + Σ_{j<c}(L − z_(j)) ≥ threshold`` (raising the smallest
        values to the top of the window ``L`` is optimal).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level_pure import comparison_cost, LEVELS
    >>> z = np.array([[[0], [0], [LEVELS]]])      # one group of 3, one comparison
    >>> comparison_cost(z, np.array([2 * LEVELS]))
    array([1.])
    """
    group = sorted_z.shape[1]
    head = group if cap is None else min(group, int(cap))
    sums = sorted_z.sum(axis=1)                                       # (κ, D)
    gains = np.cumsum(LEVELS - sorted_z[:, :head], axis=1)            # (κ, head, D)
    short = thresholds[None, :] - sums                                # (κ, D)
    # The c with sum + (first c gains) < threshold form a prefix of 0..g.
    counts = ((short > 0).astype(np.int64)
              + (gains < short[:, None, :]).sum(axis=1)).astype(np.float64)
    # A count above g means no change suffices (only possible when every
    # value of the group was examined, head == g); with a smaller head a
    # count of head + 1 only means "more than cap", which the cap absorbs.
    counts[counts > group] = np.inf
    half = (sorted_z.shape[0] + 1) // 2
    cost = np.sort(counts, axis=0)[:half].sum(axis=0)
    return cost if cap is None else np.minimum(cost, float(cap))


def _scores_chunk(sorted_proj, proj_centers, thresholds, rho, cap):
    out = np.empty(proj_centers.shape[0])
    for i, centers in enumerate(proj_centers):
        z = _lattice(sorted_proj, centers[None, None, :], rho)
        out[i] = float(comparison_cost(z, thresholds, cap=cap).min())
    return out


def candidate_scores(user_means, plan, *, n_jobs=None):
    """Exact ``Score(p)`` of every candidate (Definition 5.5, Algorithm 6).

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        Centred user means (the fine users, minus the coarse estimate).
    plan : dict
        From :func:`pure_fine_plan`.
    n_jobs : int, default=None
        Workers over chunks of candidates; results do not depend on it.

    Returns
    -------
    scores : ndarray of shape (|J|,)
        Integers in ``[0, cap]`` (as floats), sensitivity 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level_pure import pure_fine_plan, candidate_scores
    >>> U = np.random.default_rng(0).normal(0.0, 0.3, size=(4000, 1))
    >>> plan = pure_fine_plan(4000, 1, alpha=0.3, epsilon=1.0, moment_bound=1.0,
    ...                       samples_per_user=10)
    >>> s = candidate_scores(U, plan)
    >>> int(np.argmax(s)) in (4, 5)                # the candidates next to 0
    True
    """
    U = np.asarray(user_means, dtype=np.float64)
    kappa, group = plan["n_groups"], plan["group_size"]
    offsets = plan["offsets"]
    directions = offsets / np.linalg.norm(offsets, axis=1, keepdims=True)
    proj = (U[:kappa * group] @ directions.T).reshape(kappa, group, -1)
    # Truncation and rounding are monotone, so one sort serves every p.
    proj.sort(axis=1)
    proj_centers = plan["candidates"] @ directions.T              # (|J|, D)
    chunks = np.array_split(np.arange(proj_centers.shape[0]),
                            max(1, min(proj_centers.shape[0], 4 * abs(n_jobs or 1))))
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_scores_chunk)(proj, proj_centers[idx], plan["thresholds"],
                               plan["rho"], plan["cap"])
        for idx in chunks)
    return np.concatenate(parts)


def _check_cost(plan, d, max_comparisons):
    if plan["comparisons"] > max_comparisons:
        raise ValueError(
            f"pure-DP fine estimation in {d} dimensions needs "
            f"{plan['comparisons']:,} comparisons, above max_comparisons="
            f"{max_comparisons:,}: the paper's pure estimator is exponential in "
            "the dimension (use d <= 2, or delta > 0 and the threaded estimator)."
        )


def fine_estimate(user_means, *, alpha, epsilon, moment_bound, samples_per_user,
                  moment_order=2.0, beta=0.1, calibration="tight",
                  max_comparisons=MAX_COMPARISONS, random_state=None, n_jobs=None):
    """Algorithm 7 (FineEst): the exponential mechanism over the candidate grid.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        Centred user means (μ assumed within ``α`` of 0 in ℓ∞). Not modified.
    alpha, epsilon, moment_bound, samples_per_user, moment_order, beta, calibration
        See :func:`pure_fine_plan`.
    max_comparisons : int, default=10**6
        Refuse plans with more candidate pairs (``ValueError``).
    random_state : int, RandomState, SeedSequence or None, default=None
    n_jobs : int, default=None

    Returns
    -------
    point : ndarray of shape (n_features,)
        The chosen candidate.
    loss : PureDP
        ε.
    plan : dict
        The public plan.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level_pure import fine_estimate
    >>> U = np.random.default_rng(0).normal(0.05, 0.3, size=(4000, 1))
    >>> point, loss, plan = fine_estimate(U, alpha=0.3, epsilon=1.0, moment_bound=1.0,
    ...                                   samples_per_user=10, random_state=0)
    >>> bool(abs(point[0] - 0.05) <= 0.3), loss.epsilon
    (True, 1.0)
    """
    U = np.asarray(user_means, dtype=np.float64)
    n, d = U.shape
    epsilon = check_positive_scalar(epsilon, "epsilon")
    plan = pure_fine_plan(n, d, alpha=alpha, epsilon=epsilon, moment_bound=moment_bound,
                          samples_per_user=samples_per_user, moment_order=moment_order,
                          beta=beta, calibration=calibration)
    _check_cost(plan, d, max_comparisons)
    point = _sample_candidate(U, plan, epsilon, random_state, n_jobs)
    return point, PureDP(epsilon), plan


def _sample_candidate(U, plan, epsilon, random_state, n_jobs):
    """The exponential mechanism over the exact scores (ε-DP, sensitivity 1)."""
    scores = candidate_scores(U, plan, n_jobs=n_jobs)
    rng = generator_from(make_seed_sequence(random_state))
    return plan["candidates"][exponential_mechanism(scores, epsilon, 1.0, rng)].copy()


# ----------------------------------------------------------------------------
# Algorithm 8
# ----------------------------------------------------------------------------

def person_level_mean_pure(user_means, *, epsilon, bound, moment_bound,
                           samples_per_user, moment_order=2.0, alpha="auto", beta=0.1,
                           calibration="tight", max_comparisons=MAX_COMPARISONS,
                           random_state=None, n_jobs=None):
    """Pure ε-DP person-level mean in d ≤ 2 dimensions (AKMMSU Algorithm 8).

    The users are halved by a data-independent permutation. The first half
    runs the pure 1-D pipeline on every coordinate with ε/d (coarse estimate,
    ℓ∞ error ≤ α w.p. 1 − β/2); the second half runs fine estimation
    (:func:`fine_estimate`, ε) on its means minus the coarse estimate.

    Parameters
    ----------
    user_means : ndarray of shape (n_users, n_features)
        One mean per user. Not modified.
    epsilon : float
        ε, ``> 0``.
    bound : float
        Public R with ``‖μ‖_∞ ≤ R``.
    moment_bound : float
        M: every direction's k-th central moment of the samples is ≤ ``M^k``.
    samples_per_user : int
        m.
    moment_order : float, default=2.0
        k ≥ 2.
    alpha : "auto" or float, default="auto"
        Target accuracy α (public). ``"auto"``: the larger of the public ℓ∞
        bound of the coarse step (:func:`person_level_error_bound_1d` at
        β/(2d) per coordinate, minimised over the coarse shares
        ``COARSE_SHARES`` of the 1-D pipeline; the fine grid must cover the
        coarse error)
        and the smallest α (on a 5 % geometric grid) at which the fine step
        certifies its accuracy (``pure_fine_plan(...)["feasible"]``).
    beta : float, default=0.1
        Failure probability behind ``"auto"`` and the feasibility check.
    calibration : {"tight", "paper"}, default="tight"
        Passed to both stages (see :func:`pure_fine_plan`).
    max_comparisons : int, default=10**6
        Guard on the exponential cost.
    random_state : int, RandomState, SeedSequence or None, default=None
    n_jobs : int, default=None

    Returns
    -------
    mean : ndarray of shape (n_features,)
    loss : PureDP
        ε.
    info : dict
        Public facts (``alpha``, ``rho``, ``n_groups``, ``n_candidates``,
        ``comparisons``, ``feasible``, ``n_coarse``, ``n_fine``) and the
        private ``coarse`` estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._person_level_pure import person_level_mean_pure
    >>> rng = np.random.default_rng(0)
    >>> U = 1.0 + rng.standard_t(5, size=(20000, 10, 1)).mean(axis=1)
    >>> mean, loss, info = person_level_mean_pure(
    ...     U, epsilon=1.0, bound=10.0, moment_bound=2.3, samples_per_user=10,
    ...     moment_order=4, random_state=0)
    >>> bool(np.linalg.norm(mean - 1.0) <= info["alpha"]), loss.epsilon
    (True, 1.0)
    """
    U = np.asarray(user_means, dtype=np.float64)
    if U.ndim != 2:
        raise ValueError(f"user_means must be 2-d, got shape {U.shape}.")
    n, d = U.shape
    if n < 4:
        raise ValueError("Algorithm 8 needs at least 4 users.")
    if not np.isfinite(U).all():
        raise ValueError("user_means must be finite.")
    epsilon = check_positive_scalar(epsilon, "epsilon")
    R = check_positive_scalar(bound, "bound")
    M = check_positive_scalar(moment_bound, "moment_bound")
    m = int(samples_per_user)
    if calibration not in ("tight", "paper"):
        raise ValueError(
            f"calibration must be 'tight' or 'paper', got {calibration!r}."
        )
    seeds = make_seed_sequence(random_state).spawn(3)
    order = generator_from(seeds[0]).permutation(n)  # independent of the data
    half = n // 2
    coarse_users, fine_users = U[order[:half]], U[order[half:]]
    if isinstance(alpha, str):
        if alpha != "auto":
            raise ValueError(f"alpha must be 'auto' or a float, got {alpha!r}.")
        # The coarse share with the smallest certified error (public).
        coarse_fraction, coarse_alpha = min(
            ((share, person_level_error_bound_1d(
                half, epsilon / d, bound=R, moment_bound=M, samples_per_user=m,
                moment_order=moment_order, beta=beta / (2.0 * d),
                coarse_fraction=share, calibration=calibration))
             for share in COARSE_SHARES), key=lambda pair: pair[1])
        if not math.isfinite(coarse_alpha):
            coarse_alpha = 2.0 * R
            warnings.warn(
                f"{half} users are too few for the coarse step to be reliable at "
                f"epsilon/d = {epsilon / d:g}; the fine grid covers the whole box "
                "and the estimate may be far off. Privacy is unaffected.",
                AccuracyWarning, stacklevel=2)
        # The grid must cover the coarse error, and the fine step must be able
        # to certify its target: the larger of the two (public).
        alpha = coarse_alpha
        while alpha < 2.0 * R and not pure_fine_plan(
                n - half, d, alpha=alpha, epsilon=epsilon, moment_bound=M,
                samples_per_user=m, moment_order=moment_order, beta=beta,
                calibration=calibration)["feasible"]:
            alpha *= 1.05
    else:
        alpha = check_positive_scalar(alpha, "alpha")
        coarse_fraction = COARSE_SHARES[0]
    # Check the cost before spending any time on the data.
    plan = pure_fine_plan(fine_users.shape[0], d, alpha=alpha, epsilon=epsilon,
                          moment_bound=M, samples_per_user=m, moment_order=moment_order,
                          beta=beta, calibration=calibration)
    _check_cost(plan, d, max_comparisons)
    if not plan["feasible"]:
        warnings.warn(
            f"{fine_users.shape[0]} fine users are too few for the fine step to "
            f"certify accuracy alpha={alpha:.3g} (a good candidate's score bound "
            f"{plan['good_score']} < {plan['needed_score']:.1f} needed); "
            "the estimate is still private but may be off by up to "
            f"{2 * alpha:.3g} per coordinate.", AccuracyWarning, stacklevel=2)
    coarse, coarse_loss, _ = person_level_mean_per_feature(
        coarse_users, epsilon=epsilon, bound=R, moment_order=moment_order,
        moment_bound=M, samples_per_user=m, coarse_fraction=coarse_fraction,
        calibration=calibration, random_state=seeds[1])
    # Post-processing: the coarse estimate is clipped to the public box.
    np.clip(coarse, -R, R, out=coarse)
    # Algorithm 7 on the re-centred fine users (ε).
    point = _sample_candidate(fine_users - coarse, plan, epsilon, seeds[2], n_jobs)
    # Disjoint halves drawn independently of the data: parallel composition.
    loss = compose_parallel(coarse_loss, PureDP(epsilon))
    info = dict(alpha=plan["alpha"], rho=plan["rho"], n_groups=plan["n_groups"],
                n_candidates=plan["candidates"].shape[0],
                comparisons=plan["comparisons"], feasible=plan["feasible"],
                n_coarse=half, n_fine=fine_users.shape[0], coarse=coarse)
    return coarse + point, loss, info
