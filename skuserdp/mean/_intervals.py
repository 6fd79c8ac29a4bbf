"""User-level confidence intervals of the clip-and-noise family of means.

Not from the three papers: the Wald interval of spec
``intervals_and_weights.md`` §2.6–2.7 (RECONSTRUCTED there, measured in
``benchmarks/bench_intervals.py``). An estimator whose release is "the mean
of the users' clipped means plus noise of a known law" (per-column
clip-and-noise, clip-and-noise in a ball, CoinPress's last step) estimates
``θ_clip = E[clip(ū)]`` with error

    θ̃ − θ_clip = (sampling of the users) + (privacy noise),

the first asymptotically normal with variance ``Var(clip(ū))/n``, the second
of the plan's law (discrete Gaussian or discrete Laplace). One extra release,
charged to the fit's budget, estimates the first:

1. ``q_i = ((v_i − θ̃)/s)∘²``, the coordinate-wise squared deviations of the
   users' clipped means ``v_i`` from the released estimate ``θ̃`` (adaptive
   composition), normalised by a bound ``s`` computed from ``θ̃`` and the
   public clipping set so that every ``q_i`` lies in a fixed ball
   (:func:`skuserdp.privacy.squared_deviation_ball`);
2. their mean is released by clip-and-noise on an exact lattice
   (:func:`skuserdp.mean.clip_noise_from_plan`): discrete Laplace under a
   pure budget, discrete Gaussian under zCDP;
3. post-processing: ``S² = s²·q̄ − σ²_noise`` (the deviations are taken from
   ``θ̃``, which is off by the noise), floored at 0 and inflated by one
   standard deviation of its own noise, and ``Var(sampling) = S²/(n − 1)``.

When the clipping set may cut users inside the public box (a ball smaller
than the box: CoinPress's last step), a private count of the users outside
it bounds the clipping bias per coordinate by ``(R_max − r)·p⁺``
(``R_max`` the largest distance of a box point from the centre, ``p⁺`` a
Clopper–Pearson upper bound on the share outside at level ``β``), and the
interval uses the bias-aware critical value at ``α − β``.

The unit of privacy is the user: two datasets are neighbours when they differ
in all rows of one user, with the number of users public.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..inference import IntervalState
from ..mechanisms import add_noise, calibrate_noise
from ..mechanisms._lattice import _clip_centred
from ..mechanisms._top_bin import top_bin_edges, top_bin_edges_plan
from ..privacy import (
    PureDP,
    ZCDP,
    compose,
    histogram_pass_threshold,
    replace_one_count_sensitivity,
    zcdp_rho_for,
    split_off,
    split_zcdp_shares,
    squared_deviation_ball,
)
from ..utils._random import make_seed_sequence
from ._clip_noise import clip_noise_from_plan, plan_clip_noise

__all__ = ["MeanIntervalPlan", "plan_mean_interval", "mean_interval_from_plan",
           "choose_ci_share", "BIAS_LEVEL", "COUNT_SHARE"]

#: ci_share="auto" takes the smallest share in [CI_SHARE_MIN, CI_SHARE_MAX]
#: whose scale step can pass a cell holding SCALE_CELL_USERS of the users
CI_SHARE_MIN = 0.05
CI_SHARE_MAX = 0.25
SCALE_CELL_USERS = 0.25

#: share of the interval's budget spent on the clipped-users count (when the
#: clipping set may cut users inside the box)
COUNT_SHARE = 0.25

#: share of the rest spent on the private scale of the deviations
SCALE_SHARE = 0.5

#: the deviations are clipped at no less than this many noise standard
#: deviations times √n (public)
PUBLIC_SCALE = 4.0

#: cells of the scale's log4 histogram (from 4^-(SCALE_BINS-1) of the bound)
SCALE_BINS = 11

#: probability that an empty cell of that histogram passes
SCALE_BETA = 0.01

#: probability β that the clipping-bias bound fails; the interval's own level
#: is then ``α − β``
BIAS_LEVEL = 0.005


@dataclass(frozen=True)
class MeanIntervalPlan:
    """Public quantities of the interval's releases.

    Attributes
    ----------
    geometry : {"box", "ball"}
        The clipping set of the users' means.
    variance : ClipNoisePlan
        The release of the mean normalised squared deviation.
    center : float
        Every coordinate of the centre of the ball holding those deviations.
    count : DiscreteLaplaceNoise, DiscreteGaussianNoise or None
        The noise of the count of users outside the clipping set (None: no
        count, the set holds the box).
    scale : PureDP or ZCDP
        The budget of the private scale of the deviations (top passing cell
        of a log2 histogram of their norms).
    loss : PureDP or ZCDP
        The privacy loss of the interval's releases.
    """

    geometry: str
    variance: object
    center: float
    count: object
    scale: object
    loss: object


def plan_mean_interval(n_users, n_features, budget, *, geometry="box", count=False,
                       calibration="tight"):
    """Plan the interval's releases from public values.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    budget : PureDP or ZCDP
        The interval's share of the fit's budget.
    geometry : {"box", "ball"}, default="box"
        The clipping set: the box ``[-1, 1]^d`` or an ℓ2 ball.
    count : bool, default=False
        Also count (privately) the users outside the clipping set, taking
        ``COUNT_SHARE`` of ``budget``.
    calibration : {"tight", "paper"}, default="tight"

    Returns
    -------
    plan : MeanIntervalPlan

    Examples
    --------
    >>> from skuserdp.mean._intervals import plan_mean_interval
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_mean_interval(3000, 2, ZCDP(0.001))
    >>> plan.variance.norm, plan.center, plan.loss.rho <= 0.001
    ('l2', 0.5, True)
    """
    n, d = int(n_users), int(n_features)
    pure = isinstance(budget, PureDP)
    norm = "l1" if pure else "l2"
    noise = None
    losses = []
    if count:
        count_budget, budget = _split(budget, COUNT_SHARE)
        noise = calibrate_noise(count_budget, replace_one_count_sensitivity(1, norm))
        losses.append(noise.privacy(replace_one_count_sensitivity(1, norm)))
    scale_budget, budget = _split(budget, SCALE_SHARE)
    losses.append(scale_budget)
    center, radius = squared_deviation_ball(d, "box", norm)
    # plan_clip_noise takes an ℓ2 radius r and clips pure releases to the ℓ1
    # ball of radius r·√d
    variance = plan_clip_noise(n, d, budget=budget,
                               radius=radius / math.sqrt(d) if pure else radius,
                               calibration=calibration)
    losses.append(variance.loss)
    return MeanIntervalPlan(geometry, variance, center, noise, scale_budget,
                            compose(*losses))


def scale_threshold(n_features, budget):
    """The count a cell of the scale's histograms must reach to pass, at the
    scale step's ``budget`` (public: :func:`top_bin_edges`'s threshold)."""
    return top_bin_edges_plan(budget, n_features, SCALE_BINS, SCALE_BETA)[1]


def choose_ci_share(n_users, n_features, epsilon, delta, *, zcdp):
    """``ci_share="auto"``: the interval's share of the budget, from public values.

    The interval is only as good as its private scale of the deviations
    (without it the private variance is released over the whole box and its
    noise swamps the users' variance). The rule takes the smallest share in
    ``[CI_SHARE_MIN, CI_SHARE_MAX]`` with which a cell of the scale step's
    histograms holding ``SCALE_CELL_USERS`` of the users passes its
    threshold (the deviations of most users lie within a factor 4, one
    cell), or ``CI_SHARE_MAX`` when none does.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    epsilon, delta : float
        The fit's budget (after any bounds step).
    zcdp : bool
        Whether the split is in zCDP (ρ shares) or in pure ε.

    Returns
    -------
    share : float

    Examples
    --------
    >>> from skuserdp.mean._intervals import choose_ci_share
    >>> choose_ci_share(3000, 1, 1.0, 1e-6, zcdp=False)
    0.05
    >>> choose_ci_share(300, 1, 1.0, 1e-6, zcdp=False)
    0.25
    """
    for share in np.linspace(CI_SHARE_MIN, CI_SHARE_MAX, 9):
        if zcdp:
            ci = split_zcdp_shares(ZCDP(zcdp_rho_for(epsilon, delta)),
                                   [share, 1 - share])[0]
        else:
            ci = PureDP(share * epsilon)
        scale = _split(ci, SCALE_SHARE)[0]
        if scale_threshold(n_features, scale) <= SCALE_CELL_USERS * n_users:
            return float(round(share, 6))
    return CI_SHARE_MAX


def _split(budget, share):
    """``(share of budget, rest)``: ε for a pure budget, ρ for zCDP."""
    if isinstance(budget, PureDP):
        eps, rest = split_off(budget, share)
        return PureDP(eps), rest
    return split_zcdp_shares(budget, [share, 1 - share])


def _clopper_pearson_upper(k, n, beta):
    """One-sided ``1 − beta`` upper bound on a binomial share from ``k`` of ``n``."""
    if k >= n:
        return 1.0
    return float(stats.beta.ppf(1 - beta, k + 1, n - k))


def mean_interval_from_plan(W, estimate, plan, *, noise_std, noise_law, ball=None,
                            outer=None, random_state=None):
    """Run the interval's releases and return the interval's state.

    Parameters
    ----------
    W : ndarray of shape (n_users, n_features)
        The users' means in the estimator's working coordinates. Not modified.
    estimate : ndarray of shape (n_features,)
        The released estimate (same coordinates).
    plan : MeanIntervalPlan
    noise_std : ndarray of shape (n_features,)
        Standard deviation of the estimate's privacy noise per coordinate
        (public plan).
    noise_law : {"gaussian", "laplace"}
        Its law.
    ball : (center, radius[, norm]), default=None
        The clipping ball for ``plan.geometry == "ball"`` (``norm`` "l2", the
        default, or "l1"; the users are clipped radially, as the estimators
        do).
    outer : float, default=None
        With a count: the largest distance, in the ball's norm, from its
        centre of any point of the public box (``R_max``).
    random_state : SeedSequence, int or None
        Noise source (independent of the estimate's).

    Returns
    -------
    state : IntervalState
        In the working coordinates.
    """
    n, d = W.shape
    theta = np.asarray(estimate, dtype=np.float64)
    if plan.geometry == "box":
        V = np.clip(W, -1.0, 1.0)
        theta = np.clip(theta, -1.0, 1.0)
        s = 1.0 + np.abs(theta)
        half_range = np.ones(d)
        outside = None
    else:
        c, r = np.asarray(ball[0], dtype=np.float64), float(ball[1])
        norm = ball[2] if len(ball) > 2 else "l2"
        V = c + _clip_centred(W, c, r, norm)  # the estimator's own clipping
        dist = (np.sqrt(np.einsum("ij,ij->i", W - c, W - c)) if norm == "l2"
                else np.abs(W - c).sum(axis=1))
        outside = int(np.count_nonzero(dist > r))
        half_range = np.full(d, r)
        # Σ_j (v_j − θ_j)² ≤ ‖v − θ‖² ≤ (r + ‖θ − c‖)² (ℓ1 norm ≥ ℓ2 norm)
        off = theta - c
        s = np.full(d, r + float(np.sqrt(off @ off) if norm == "l2"
                                 else np.abs(off).sum()))
    # normalised deviations, |e_ij| ≤ 1 (s = 1 + |θ_j| in the box; the
    # ball's radius plus θ's distance from its centre)
    E = np.abs(V - theta) / s
    seed_scale, seed_var, seed_count = make_seed_sequence(random_state).spawn(3)
    # log4 cells: the histogram of log2(e) / 2
    edges = top_bin_edges(np.sqrt(E), plan.scale, base=2.0 ** -(SCALE_BINS - 1),
                          n_bins=SCALE_BINS, beta=SCALE_BETA, random_state=seed_scale)
    edges = edges ** 2
    # the top edge of the highest passing cell: a factor 4 above its lower
    # edge (the users of the cells that did not pass are fewer than the
    # threshold each)
    R = np.where(np.isnan(edges), 1.0, np.minimum(1.0, edges))
    Q = (np.minimum(E, R) / R) ** 2  # in [0, 1]^d
    qbar = clip_noise_from_plan(Q, plan.variance, center=np.full(d, plan.center),
                                random_state=seed_var)
    q_sd = math.sqrt(plan.variance.noise_variance)
    noise_std = np.asarray(noise_std, dtype=np.float64)
    # the deviations from θ̃ include its noise: E[(v̄ − θ̃)²] = σ²
    S2 = np.maximum((s * R) ** 2 * qbar - noise_std ** 2, 0.0) + (s * R) ** 2 * q_sd
    # never above the public bound on the variance of a coordinate that lies
    # in an interval of half-width h (Popoviciu: h²)
    S2 = np.minimum(S2, half_range ** 2)
    sampling = np.sqrt(S2 / max(n - 1, 1))
    if noise_law == "laplace":
        gauss, lap = np.zeros(d), noise_std / math.sqrt(2.0)
    else:
        gauss, lap = noise_std, np.zeros(d)
    bias = np.zeros(d)
    if plan.count is not None:
        noisy = int(add_noise(np.array([outside], dtype=np.int64), plan.count,
                              seed_count)[0])
        kind = "laplace" if isinstance(plan.loss, PureDP) else "gaussian"
        scale = (float(plan.count.scale) if kind == "laplace"
                 else math.sqrt(plan.count.sigma2))
        tail = histogram_pass_threshold(scale, 1, BIAS_LEVEL / 2, kind=kind)
        share = _clopper_pearson_upper(max(noisy + tail, 0), n, BIAS_LEVEL / 2)
        bias = np.full(d, max(float(outer) - float(ball[1]), 0.0) * share)
    return IntervalState(np.asarray(estimate, dtype=np.float64), sampling, gauss, lap,
                         bias, bias_level=BIAS_LEVEL if plan.count is not None else 0.0)
