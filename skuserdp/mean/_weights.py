"""Unbalanced users: weighted user-level means and the row-level estimand.

Not from the three papers: spec ``intervals_and_weights.md`` §3.4–3.5
(RECONSTRUCTED there; the CFMT and ZLS papers it names were not read for the
spec, so nothing here carries their names), measured in
``benchmarks/bench_unbalanced.py``.

Every mean estimator reduces a user to the mean ``z_i`` of its rows (in the
box's per-column scaled coordinates, ``[-1, 1]`` per column). Users differ in
their number of rows ``m_i``: a user with 200 rows has a far less noisy mean
than a user with 2. This module turns any such estimator into a weighted one
by a **per-user transform** of the users' means,

    z'_i = c + w_i ∘ (z_i − c),      w_i ∈ [0, 1]^d,

with a centre ``c`` and a weight function ``w`` that are released (charged)
before the estimator runs. ``z'_i`` depends only on user ``i``'s own data and
on released values, so the estimator's release on the ``z'`` has exactly its
own user-level guarantee (replace-one, number of users public), and when its
clipping set ``K`` is convex and holds ``c`` (the box ``[-1, 1]^d`` does;
``c`` is projected onto it) every ``z'_i`` of a ``z_i ∈ K`` stays in ``K``:
the sensitivity, hence the noise, is the unweighted one. The estimator
estimates ``mean(z') = c + (W/n)∘(θ_w − c)`` with ``W = Σ_i w_i``, so

    θ̂_w = c + (n / W̃)∘(mean(z')~ − c)

(post-processing with a released ``W̃``) estimates the weighted mean
``θ_w = Σ w_i z_i / W``. A low-weight user is shrunk towards ``c`` before
the estimator clips it, so its clipping threshold is in effect ``r / w_i``
(per-user thresholds adapted to the user's sample size; spec §3.2).

Two weightings:

``estimand="row_mean"`` (public cap ``k = max_rows``)
    ``w_i = min(m_i, k)/k``: the row-level mean with each user's contribution
    capped at ``k`` rows. This is the Rao–Blackwellised form of truncating
    every user to a random ``k`` of its rows (OpenDP ``truncate_per_group``,
    Tumult ``MaxRowsPerID``): the same estimand, ``E[min(m, k)·ū]/E[min(m,
    k)]``, with no more variance (spec §3.4). One release, of ``(w_i, w_i·z_i)``
    per user, gives ``W̃`` and the centre ``c = S̃/W̃``.

``weighting="auto"`` (estimand: the mean of the users' means)
    Capped inverse-variance weights ``w(m) = min(1, λ/(τ² + σ²/m))`` per
    column (spec §3.5: the minimiser of the sampling plus noise variance of
    ``θ̂_w`` among weights in ``[0, 1]``), constant within public buckets of
    ``m`` (``1``, ``2–3``, ``4–15``, ``16–63``, ``64–255``, ``≥ 256``) so that
    ``W = Σ_b w_b N_b`` follows from the released bucket counts. The
    weights' share of the budget (``weights_share="auto"``:
    :func:`choose_weights_share`, public values) pays for three
    clip-and-noise releases, each user's vector sitting in its bucket's
    block (zeros elsewhere: a user that changes bucket moves the vector by
    at most twice its norm):

    0. the bucket counts ``N_b`` (a quarter of the share; a histogram with
       integer noise at its replace-one sensitivity ``√2``, or 2 in ℓ1). When they show
       one occupied bucket (balanced users) or too few users with two rows
       or more, nothing else is released and the rest of the share goes back
       to the estimate;
    1. the buckets' sums ``S_b`` of the box-clipped ``z_i``: the centre
       ``c = Σ_b S_b / n`` (the unweighted mean; ``n`` is public) and the
       buckets' means;
    2. the sum of ``|z_i − c|/2`` (the spread of the users' means) and of the
       row standard deviations (clipped to ``[0, 1]``) of the users with at
       least ``SD_MIN_ROWS`` rows (or two, when the counts show too few such
       users), one release around ``1/2``.

    Post-processing: ``σ`` from the pooled row deviations (corrected by the
    normal ``c4(m)``; the standard deviation of two or three skewed rows is
    biased low even after it, hence ``SD_MIN_ROWS``), ``τ`` by solving
    ``E|z − c| = Σ_b share_b E|N(offset_b, τ² + σ²/m_b)|``, ``λ`` by
    minimising the predicted variance with the estimator's public noise,
    and finally, per column, a choice between these weights and equal
    weights: the weights are kept when their predicted mean squared error
    (sampling, noise, and the map back's ``(θ_w − c)(W̃ − W)/W``) is below
    the equal weights', unless the weighted and unweighted means of the
    released buckets differ by more than ``INFORMATIVE_SD`` standard
    deviations of their sampling and noise: the row counts then carry
    information about the users' means (``E[ū | m]`` varies with ``m``), the
    weighted mean is a different quantity, and the column keeps equal
    weights. Such a test has limited power: weighting assumes the row
    counts are unrelated to the users' values (user guide, "Unbalanced
    users").

The unit of privacy is the user: two datasets are neighbours when they differ
in all rows of one user (row count included), with the number of users public.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, ndtr

from ..mechanisms import add_noise, calibrate_noise
from ..mechanisms._lattice import encode_sum
from ..privacy import PureDP, compose, replace_one_histogram_sensitivity
from ..utils._random import make_seed_sequence
from ._base import split_fit_budget
from ._clip_noise import plan_clip_noise
from ._intervals import _split

__all__ = ["N_BUCKETS", "WeightPlan", "UserWeights", "plan_weights",
           "choose_weights_share", "release_user_weights", "row_count_buckets",
           "user_row_spreads"]

#: buckets of the row counts: 1, 2–3, 4–15, 16–63, 64–255, ≥ 256 (few: the
#: noise of every bucket's count enters W̃)
BUCKET_EDGES = (1, 2, 4, 16, 64, 256)
N_BUCKETS = len(BUCKET_EDGES)

#: shares of the weights' budget of its three releases (auto: counts, sums,
#: spreads); a release is made only when the earlier ones show something to
#: weight, and the shares not spent go back to the estimate
RELEASE_SHARES = (0.25, 0.375, 0.375)

#: a bucket whose released count exceeds this many noise standard deviations
#: holds users (the others are noise)
OCCUPIED_SD = 3.0

#: the pooled row spread comes from users with at least this many rows when
#: the released counts show enough of them
SD_MIN_ROWS = 4

#: when the released counts put this share of the users in the occupied
#: bucket with the most rows, the weights' later releases are not made
DOMINANT_SHARE = 0.9

#: weights within this of 1 in every occupied bucket are equal weights
EQUAL_TOLERANCE = 0.05

#: the buckets' means must differ by this many standard deviations of their
#: noise and sampling before the row counts count as informative
INFORMATIVE_SD = 3.0


def row_count_buckets(counts):
    """The bucket of each row count (public boundaries :data:`BUCKET_EDGES`).

    Examples
    --------
    >>> from skuserdp.mean._weights import row_count_buckets
    >>> row_count_buckets([1, 2, 3, 4, 15, 16, 200, 10**6]).tolist()
    [0, 1, 1, 2, 2, 3, 4, 5]
    """
    m = np.maximum(np.asarray(counts, dtype=np.int64), 1)
    return np.searchsorted(np.asarray(BUCKET_EDGES), m, side="right") - 1


def _bucket_inverse_rows():
    """A representative ``1/m`` of every bucket: the mean of ``1/m`` over its
    integers (the open last bucket: over ``[256, 1024)``)."""
    edges = list(BUCKET_EDGES) + [4 * BUCKET_EDGES[-1]]
    return np.array([np.mean(1.0 / np.arange(lo, hi))
                     for lo, hi in zip(edges[:-1], edges[1:])])


def user_row_spreads(rows, codes, means, counts, half_width):
    """Each user's row standard deviation per column, in units of the box's
    half-width, clipped to ``[0, 1]`` (0 for a user with one row): a per-user
    function of the data.

    Parameters
    ----------
    rows : ndarray of shape (n_rows, n_features)
    codes : ndarray of shape (n_rows,)
        User code of every row.
    means : ndarray of shape (n_users, n_features)
    counts : ndarray of shape (n_users,)
    half_width : ndarray of shape (n_features,)

    Returns
    -------
    spreads : ndarray of shape (n_users, n_features)
    """
    n = means.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        dev = (rows - means[codes]) / half_width
        np.square(dev, out=dev)
        ss = np.zeros((n, rows.shape[1]))
        for j in range(rows.shape[1]):
            ss[:, j] = np.bincount(codes, weights=dev[:, j], minlength=n)
        denom = np.maximum(counts - 1, 1).astype(np.float64)[:, None]
        sd = np.sqrt(ss / denom)
    sd[counts < 2] = 0.0
    return np.nan_to_num(np.minimum(sd, 1.0), nan=1.0, posinf=1.0)


def _c4(m):
    """``E[s]/σ`` of the sample standard deviation of ``m`` normal rows."""
    m = np.asarray(m, dtype=np.float64)
    return np.sqrt(2.0 / (m - 1)) * np.exp(gammaln(m / 2) - gammaln((m - 1) / 2))


@dataclass(frozen=True)
class WeightPlan:
    """Public quantities of the weights' releases.

    Attributes
    ----------
    estimand : {"user_mean", "row_mean"}
    max_rows : int or None
        The public cap ``k`` of ``estimand="row_mean"``.
    n_users, n_features : int
    first : ClipNoisePlan
        The sums release (per bucket for ``auto``; the weighted total and
        sum for ``row_mean``).
    second : ClipNoisePlan or None
        The spreads release (``auto`` only).
    estimate_noise_variance : float
        A public proxy of the estimate's noise variance per coordinate of the
        mean (the per-column box's clip-and-noise at the estimate's budget):
        it sets the cap ``λ`` of the weights.
    loss : PureDP or ZCDP
        The privacy loss of the weights' releases (all of them).
    counts : ClipNoisePlan or None
        ``auto``: the row counts' release, made first (:meth:`spent` is the
        loss of the releases actually made).
    """

    estimand: str
    max_rows: object
    n_users: int
    n_features: int
    first: object
    second: object
    estimate_noise_variance: float
    loss: object
    counts: object = None

    def spent(self, n_releases):
        """The loss of the first ``n_releases`` releases (``auto``: counts,
        sums, spreads; ``row_mean``: its one release)."""
        parts = [p for p in (self.counts, self.first, self.second)
                 if p is not None][:n_releases]
        return compose(*[p.loss for p in parts])

    def spent_share(self, n_releases):
        """The share of the weights' budget of the first ``n_releases``."""
        if self.counts is None:
            return 1.0
        return float(sum(RELEASE_SHARES[:n_releases]))


#: weights_share="auto" tries these shares of the budget, smallest first
WEIGHTS_SHARES = (0.1, 0.15, 0.2, 0.25, 0.3)

#: ... and takes the first whose released counts have a noise standard
#: deviation of at most n_users / MIN_COUNT_PRECISION (a bucket holding a
#: tenth of the users is then counted within 10 %)
MIN_COUNT_PRECISION = 100.0


def choose_weights_share(n_users, n_features, epsilon, delta, *, zcdp,
                         estimand="user_mean", max_rows=None, calibration="tight"):
    """``weights_share="auto"``: the weights' share of the budget, from public
    values, or ``None`` when even the largest share leaves the weights'
    statistics too noisy to help (``estimand="user_mean"``: equal weights,
    nothing spent; ``"row_mean"`` then takes the largest share, which its
    estimand needs).

    Parameters
    ----------
    n_users, n_features : int
    epsilon, delta : float
        The budget left for the estimate and the weights.
    zcdp : bool
        Whether the split is in zCDP (ρ shares) or in pure ε.

    Returns
    -------
    share : float or None

    Examples
    --------
    >>> from skuserdp.mean._weights import choose_weights_share
    >>> choose_weights_share(2000, 1, 4.0, 1e-6, zcdp=True)
    0.1
    >>> choose_weights_share(2000, 1, 1.0, 1e-6, zcdp=True) is None
    True
    """
    for share in WEIGHTS_SHARES:
        part, rest = split_fit_budget(epsilon, delta, share, zcdp)
        if part is None:
            continue
        plan = plan_weights(n_users, n_features, part, estimate_budget=rest,
                            estimand=estimand, max_rows=max_rows,
                            calibration=calibration)
        if _noise_sd(plan.counts or plan.first) * MIN_COUNT_PRECISION <= n_users:
            return share
    return WEIGHTS_SHARES[-1] if estimand == "row_mean" else None


def plan_weights(n_users, n_features, budget, *, estimate_budget, estimand="user_mean",
                 max_rows=None, calibration="tight"):
    """Plan the weights' releases from public values.

    Parameters
    ----------
    n_users, n_features : int
        Public shape.
    budget : PureDP or ZCDP
        The weights' share of the fit's budget.
    estimate_budget : PureDP, ApproxDP or ZCDP
        The estimate's budget (for the public noise proxy only).
    estimand : {"user_mean", "row_mean"}, default="user_mean"
    max_rows : int, default=None
        Required for ``"row_mean"``.
    calibration : {"tight", "paper"}, default="tight"

    Returns
    -------
    plan : WeightPlan

    Examples
    --------
    >>> from skuserdp.mean._weights import plan_weights
    >>> from skuserdp.privacy import ApproxDP, ZCDP
    >>> plan = plan_weights(2000, 1, ZCDP(0.002),
    ...                     estimate_budget=ApproxDP(1.0, 1e-6))
    >>> plan.loss.rho <= 0.002, plan.second is not None
    (True, True)
    """
    n, d = int(n_users), int(n_features)
    if estimand == "row_mean":
        first = plan_clip_noise(n, 1 + d, budget=budget, radius=math.sqrt(1 + d),
                                calibration=calibration)
        counts = second = None
        loss = first.loss
    else:
        # released in order, the later ones only when the earlier show
        # something to weight (RELEASE_SHARES of the weights' budget)
        b0, rest = _split(budget, RELEASE_SHARES[0])
        b1, b2 = _split(rest, 0.5)
        # the histogram of the users' buckets: exact integers, replace-one
        # sensitivity √2 (ℓ2) or 2 (ℓ1) (a user changes at most two cells)
        counts = plan_bucket_counts(n, b0, calibration=calibration)
        # z in [-1, 1]^d in its bucket's block: ℓ2 norm ≤ √d, ℓ1 ≤ d (the pure
        # plan's ℓ1 ball is radius·√dim = d)
        first = plan_clip_noise(n, d, budget=b1, radius=math.sqrt(d),
                                calibration=calibration)
        # (|z − c|/2, s) in [0, 1]^(2d) around 1/2: ℓ2 ≤ √(d/2), ℓ1 ≤ d
        second = plan_clip_noise(n, 2 * d, budget=b2, radius=math.sqrt(d / 2),
                                 calibration=calibration)
        loss = compose(counts.loss, first.loss, second.loss)
    proxy = _estimate_noise_variance(n, d, estimate_budget, calibration)
    return WeightPlan(estimand, max_rows, n, d, first, second, proxy, loss, counts)


def _estimate_noise_variance(n, d, budget, calibration):
    """A public proxy of the estimate's noise variance per coordinate of the
    mean, in the box's scaled coordinates: the smaller of per-column
    discrete Laplace at ε/d (the box ``[-1, 1]`` per column) and one
    Gaussian release in the ball through the box's corners (δ > 0), as the
    per-column estimator chooses."""
    def gauss():
        return float(plan_clip_noise(n, d, budget=budget, radius=math.sqrt(d),
                                     calibration=calibration).noise_variance)

    if not hasattr(budget, "epsilon"):  # ρ-zCDP: the Gaussian release
        return gauss()
    laplace = float(plan_clip_noise(n, 1, budget=PureDP(budget.epsilon / d),
                                    radius=1.0).noise_variance)
    if isinstance(budget, PureDP) or budget.delta == 0.0:
        return laplace
    return min(laplace, gauss())


@dataclass(frozen=True)
class CountsPlan:
    """The row counts' release: a histogram of the users' buckets with
    integer noise at the replace-one sensitivity of a histogram
    (:func:`~skuserdp.privacy.replace_one_histogram_sensitivity`).

    Attributes
    ----------
    n_users : int
    noise : DiscreteLaplaceNoise or DiscreteGaussianNoise
    sensitivity : float
    loss : PureDP or ZCDP
    """

    n_users: int
    noise: object
    sensitivity: float
    loss: object

    @property
    def noise_variance(self):
        """Variance of the noise of one count, over ``n_users²`` (as a
        :class:`~skuserdp.mean.ClipNoisePlan`'s, per coordinate of a mean)."""
        return (float(self.noise.std) / self.n_users) ** 2


def plan_bucket_counts(n_users, budget, *, calibration="tight"):
    """Plan the row counts' release (public values).

    Examples
    --------
    >>> from skuserdp.mean._weights import plan_bucket_counts
    >>> from skuserdp.privacy import PureDP
    >>> plan_bucket_counts(100, PureDP(1.0)).sensitivity
    2.0
    """
    norm = "l1" if isinstance(budget, PureDP) else "l2"
    sensitivity = float(replace_one_histogram_sensitivity(1, norm))
    noise = calibrate_noise(budget, sensitivity, calibration=calibration)
    return CountsPlan(int(n_users), noise, sensitivity, noise.privacy(sensitivity))


def _release_counts(buckets, plan, seed, per_user=None):
    """The noisy histogram of the users' buckets (``per_user``: what each
    user adds to its cell, 1 by default; other values are for tests)."""
    w = np.ones(buckets.shape[0]) if per_user is None else per_user
    exact = np.rint(np.bincount(buckets, weights=w, minlength=N_BUCKETS))
    return add_noise(exact.astype(np.int64), plan.noise, seed).astype(np.float64)


@dataclass(frozen=True)
class UserWeights:
    """The released weighting of one fit (every field released or public).

    Attributes
    ----------
    kind : {"auto", "row_mean", "equal"}
        ``"equal"``: every weight is 1 (the transform is the identity).
    center : ndarray of shape (n_features,)
        ``c``, in the working coordinates.
    bucket_weights : ndarray of shape (N_BUCKETS, n_features) or None
        ``auto``: the weight of every bucket and column.
    total : ndarray of shape (n_features,)
        ``W̃``, the released sum of the weights, per column.
    weighted : ndarray of shape (n_features,) of bool
        ``auto``: the columns whose weights are not all 1.
    max_rows : int or None
        ``row_mean``: the cap.
    status : tuple of str
        ``auto``: per column, ``"weighted"``, ``"informative"`` (the
        buckets' released means differ beyond their noise and sampling),
        ``"no gain"`` (predicted) or ``"equal"`` (the weights came out
        equal).
    """

    kind: str
    center: np.ndarray
    bucket_weights: object
    total: np.ndarray
    weighted: np.ndarray
    max_rows: object = None
    status: tuple = ()

    def user_weights(self, counts):
        """Every user's weights, shape ``(n_users, n_features)``: a per-user
        function of its row count and of released values."""
        counts = np.asarray(counts)
        d = self.center.shape[0]
        if self.kind == "row_mean":
            w = np.minimum(counts, self.max_rows) / float(self.max_rows)
            return np.repeat(w[:, None], d, axis=1)
        if self.kind == "equal":
            return np.ones((counts.shape[0], d))
        return self.bucket_weights[row_count_buckets(counts)]

    def transform(self, Z, counts):
        """``z' = c + w∘(z − c)`` (a new array; ``Z`` is not modified)."""
        if self.kind == "equal":
            return Z
        w = self.user_weights(counts)
        # a convex combination of finite values (never c + w·(z − c), whose
        # difference can overflow for users far out in the units of X; a
        # fit must not fail on one user's data); rounding at the float64
        # limit is clipped back
        out = (1.0 - w) * self.center + w * np.asarray(Z, dtype=np.float64)
        big = np.finfo(np.float64).max
        return np.clip(out, -big, big, out=out)

    def scale(self, n_users):
        """``g = n/W̃`` per column: ``θ̂ = c + g∘(mean(z')~ − c)``."""
        if self.kind == "equal":
            return np.ones_like(self.center)
        return n_users / self.total


def _release(values, plan, seed, *, center=0.0, blocks=None):
    """Clip-and-noise release of ``values`` (``blocks``: each user's vector in
    the block of its bucket, zeros elsewhere); returns the noisy *sums*."""
    # (a centre with blocks would need the private per-bucket counts)
    assert blocks is None or np.all(np.asarray(center) == 0.0)
    if blocks is None:
        total = encode_sum(values, center=center, radius=plan.ball, grid=plan.grid,
                           norm=plan.norm)
    else:
        parts = []
        for b in range(N_BUCKETS):
            rows = np.flatnonzero(blocks == b)
            if rows.size:
                parts.append(encode_sum(values, center=center, radius=plan.ball,
                                        grid=plan.grid, norm=plan.norm, rows=rows))
            else:
                parts.append(np.zeros(values.shape[1], dtype=np.int64))
        total = np.concatenate(parts)
    noisy = add_noise(total, plan.noise, seed)
    # the sum of the (centred) contributions, back in their units
    n_sum = plan.grid * noisy.astype(np.float64)
    if blocks is None:
        n_sum = n_sum + plan.n_users * np.broadcast_to(center, n_sum.shape)
    return n_sum


def _noise_sd(plan):
    """Standard deviation of the noise of one coordinate of a released sum."""
    return math.sqrt(plan.noise_variance) * plan.n_users


def release_user_weights(Z, counts, spreads, plan, random_state=None):
    """Run the weights' releases and choose the weights (post-processing).

    Parameters
    ----------
    Z : ndarray of shape (n_users, n_features)
        The users' means in the box's scaled coordinates (clipped to
        ``[-1, 1]`` here). Not modified.
    counts : ndarray of shape (n_users,)
        The users' row counts (private).
    spreads : callable or None
        Returns :func:`user_row_spreads` (``auto`` only; called only when the
        released counts show something to weight; ``None``: equal weights).
    plan : WeightPlan
    random_state : SeedSequence, int or None

    Returns
    -------
    weights : UserWeights
    n_releases : int
        How many of the plan's releases were made (:meth:`WeightPlan.spent`
        is their loss, :meth:`WeightPlan.spent_share` their share).
    """
    n, d = plan.n_users, plan.n_features
    zc = np.clip(np.asarray(Z, dtype=np.float64), -1.0, 1.0)
    counts = np.asarray(counts)
    seed1, seed2 = make_seed_sequence(random_state).spawn(2)
    if plan.estimand == "row_mean":
        k = float(plan.max_rows)
        w = np.minimum(counts, plan.max_rows) / k
        sums = _release(np.column_stack([w, w[:, None] * zc]), plan.first, seed1)
        floor = n / k  # every user counts for at least 1/k (public)
        total = max(sums[0], floor)
        center = np.clip(sums[1:] / total, -1.0, 1.0)
        return UserWeights("row_mean", center, None, np.full(d, total),
                           np.ones(d, bool), plan.max_rows), 1
    buckets = row_count_buckets(counts)
    seed0, seed1 = seed1.spawn(2)
    N_raw = _release_counts(buckets, plan.counts, seed0)
    N = np.maximum(N_raw, 0.0)
    sd0 = _noise_sd(plan.counts)
    occupied = N > OCCUPIED_SD * sd0
    top = int(np.argmax(N))
    dominant = (N[top] >= DOMINANT_SHARE * n
                and not occupied[top + 1:].any())  # and it has the most rows
    if (spreads is None or occupied.sum() < 2 or N[1:].sum() < 10.0 * sd0
            or dominant):
        # one bucket (balanced users); too few users with two rows or more;
        # or nearly all users in the bucket with the most rows, where
        # down-weighting the few others cannot pay for the next releases:
        # only the counts were spent
        return _equal(np.zeros(d), n, d), 1
    S = _release(zc, plan.first, seed1, blocks=buckets).reshape(N_BUCKETS, d)
    center = np.clip(S.sum(axis=0) / n, -1.0, 1.0)  # (n is public)
    dev = np.abs(zc - center) / 2.0  # in [0, 1]: c and z are in the box
    # the row spreads of users with SD_MIN_ROWS rows or more when the counts
    # show enough of them (the sd of a few skewed rows is biased low even
    # after the normal correction), else of all users with two rows or more
    min_rows = SD_MIN_ROWS if N[2:].sum() >= 10.0 * sd0 else 2
    sd = np.where((counts >= min_rows)[:, None], np.minimum(spreads(), 1.0), 0.0)
    second = _release(np.column_stack([dev, sd]), plan.second, seed2, center=0.5)
    wb, total, chosen, status = _choose_weights(
        N, S, 2.0 * second[:d], second[d:], center, n, min_rows, sd0,
        _noise_sd(plan.first), plan.estimate_noise_variance * n * n)
    if wb is not None:
        # W̃ from the unclamped released counts (clamping at 0 would bias it
        # upwards by the empty buckets' noise)
        total = np.where(chosen, np.maximum(N_raw @ wb, 1.0), float(n))
    if wb is None:
        return _equal(center, n, d, tuple(status)), 3
    return UserWeights("auto", center, wb, total, chosen, status=tuple(status)), 3


def _equal(center, n, d, status=()):
    return UserWeights("equal", center, None, np.full(d, float(n)), np.zeros(d, bool),
                       status=status)


def _choose_weights(N, S, abs_dev, row_sd, center, n, min_rows, sd_n, sd_s,
                    noise_var):
    """The weights of every bucket and column from the released statistics
    (post-processing): ``(wb, total, chosen, status)``, ``wb`` ``None`` for
    equal weights everywhere; ``status`` says per column why."""
    inv_m = _bucket_inverse_rows()
    occupied = N > OCCUPIED_SD * sd_n
    reps = 1.0 / inv_m
    c4 = np.where(reps > 1.5, _c4(np.maximum(reps, 2.0)), 0.0)
    first = 1 if min_rows <= 2 else 2  # the buckets whose users gave spreads
    c4_total = max(float(np.sum(N[first:] * c4[first:])), 1.0)
    B, d = N.shape[0], center.shape[0]
    wb = np.ones((B, d))
    chosen = np.zeros(d, bool)
    status = []
    share = N / max(N.sum(), 1.0)
    var_c = sd_s ** 2 * B / float(n) ** 2  # the centre's noise (all buckets' sums)
    for j in range(d):
        sigma = max(row_sd[j], 0.0) / c4_total
        target = max(abs_dev[j], 0.0) / n  # E|z − c|
        offsets = np.where(occupied, S[:, j] / np.maximum(N, 1.0) - center[j], 0.0)
        a = _variance_by_bucket(target, sigma, share, inv_m, offsets)
        w = _capped_weights(a, N, noise_var)
        if w is None or np.all(np.abs(w[occupied] - 1.0) < EQUAL_TOLERANCE):
            status.append("equal")
            continue
        # predicted mean squared error about the mean of the users' means:
        # sampling and noise of the weighted mean, plus the error of the map
        # back, (θ_w − c)·(W̃ − W)/W, whose factors are the centre's noise
        # (and its distance to θ_w) and the released counts' noise
        W = float(N @ w)
        theta_w = float(w @ S[:, j]) / W
        var_w = (float(N @ (w * w * a)) + noise_var) / W ** 2
        shift2 = var_c + (theta_w - center[j]) ** 2
        var_w += shift2 * sd_n ** 2 * float(np.sum(w * w)) / W ** 2
        var_eq = (float(N @ a) + noise_var) / float(n) ** 2
        # do the row counts carry information about the users' means? Only a
        # difference beyond the noise and the sampling counts
        theta_eq = float(S[:, j].sum()) / n
        coef = w / W - 1.0 / n
        # (θ_w's released denominator: its counts' noise times θ_w)
        sd_diff = math.sqrt(float(N @ (coef * coef * a))
                            + float(np.sum(coef * coef)) * sd_s ** 2
                            + theta_w ** 2 * float(np.sum(w * w)) * sd_n ** 2 / W ** 2)
        if abs(theta_w - theta_eq) > INFORMATIVE_SD * sd_diff:
            status.append("informative")  # keep the users' mean
            continue
        if var_w < var_eq:
            wb[:, j] = w
            chosen[j] = True
            status.append("weighted")
        else:
            status.append("no gain")
    if not chosen.any():
        return None, None, chosen, status
    total = np.where(chosen, np.maximum(N @ wb, 1.0), float(n))
    return wb, total, chosen, status


def _folded_mean(offset, sd):
    """``E|X|`` for ``X ~ N(offset, sd²)``."""
    sd = np.maximum(sd, 1e-300)
    r = offset / sd
    return (sd * math.sqrt(2.0 / math.pi) * np.exp(-0.5 * r * r)
            + offset * (1.0 - 2.0 * ndtr(-r)))


def _variance_by_bucket(target, sigma, share, inv_m, offsets):
    """``a_b = τ² + σ²/m_b``, with ``τ`` solving ``E|z − c| = Σ_b share_b
    E|N(offset_b, τ² + σ²/m_b)|`` (``offset_b``: the bucket's released mean
    minus ``c``; ``τ = 0`` when even that over-explains it)."""
    def mad(tau2):
        sd = np.sqrt(tau2 + sigma * sigma * inv_m)
        return float(share @ _folded_mean(offsets, sd))

    if mad(0.0) >= target:
        tau2 = 0.0
    else:
        lo, hi = 0.0, 4.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if mad(mid) < target else (lo, mid)
        tau2 = 0.5 * (lo + hi)
    return tau2 + sigma * sigma * inv_m


def _capped_weights(a, N, noise_var):
    """``w_b = min(1, λ/a_b)`` with ``λ`` minimising the predicted variance
    ``(Σ N_b w_b² a_b + noise)/(Σ N_b w_b)²`` (a grid over ``λ``)."""
    if not np.all(np.isfinite(a)) or a.max() <= 0.0:
        return None
    a = np.maximum(a, a.max() * 1e-6)
    best, best_w = None, None
    for lam in np.geomspace(a.min() * 1e-3, a.max(), 200):
        w = np.minimum(1.0, lam / a)
        W = float(N @ w)
        if W <= 0:
            continue
        f = (float(N @ (w * w * a)) + noise_var) / W ** 2
        if best is None or f < best:
            best, best_w = f, w
    return best_w
