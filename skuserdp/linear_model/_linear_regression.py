"""UserDPLinearRegression: one private release of per-user sufficient statistics.

Not from one of the three papers: the non-iterative baseline practitioners
compare user-level DP-SGD against (the sufficient-statistics
perturbation of Sheffet 2017 / Wang 2018, made user-level by averaging per
user first, as the clip-and-noise baseline does;
:ref:`papers-linear-regression`).

Algorithm (replace-one user neighbours, n users public):

1. Rows are projected onto the public feature ball and targets clipped to the
   public bound; with an intercept the rows are augmented, ``x̃ = (x, 1)``.
2. Every user ``u`` contributes ``v_u = (vech(S_u), b_u)`` with
   ``S_u = mean_j x̃_j x̃_jᵀ`` (its upper triangle, off-diagonal entries times
   √2 so that ``‖vech(S)‖₂ = ‖S‖_F``) and ``b_u = mean_j x̃_j y_j``. The
   intercept's own entry of ``S_u`` is the constant 1 and is not released.
   ``‖S_u‖_F ≤ b²`` and ``‖b_u‖ ≤ b·B_y`` (b the augmented row bound), so
   ``‖v_u‖ ≤ √(b⁴ − [intercept] + b²B_y²)``: the clip radius of "auto".
3. One clip-and-noise release of the mean of the ``v_u``
   (:func:`skuserdp.mean.plan_clip_noise`: lattice, discrete Gaussian or
   Laplace noise).
4. Post-processing: rebuild S and b, project S onto the PSD cone (clip
   negative eigenvalues), solve ``(S + α·I_coef) w = b`` (least squares).
   A numeric ``alpha`` is a public ridge and the release above gets the whole
   budget.

``alpha="auto"``: the adaptive ridge of AdaSSP (Wang 2018, "Revisiting
differentially private linear regression"), made user-level. The noise
matrix has expected operator norm ``σ√(2p)`` (σ the noise of a released
coordinate, so σ/√2 on the off-diagonal entries of S; p the dimension;
public); a ridge is only needed where the data's own smallest eigenvalue
does not already dominate it. So, before step 3:

a. ``λ_min`` of the mean over users of the *clipped* ``S_u`` (clipped as in
   step 3, the intercept's constant entry included) is released once with
   lattice noise, at a share ``EIGEN_SHARE`` (10 %, OUR CHOICE) of the budget,
   split by the privacy core (``split_zcdp_shares`` of ρ for δ > 0,
   ``split_zcdp`` with ``calibration="paper"``, ``split_off`` of ε for
   δ = 0), the rest going to step 3. Its sensitivity is
   :func:`skuserdp.privacy.psd_min_eigenvalue_sensitivity`: each user's
   clipped ``S_u`` is PSD with ``λ_max ≤ min(b², √(r² + [intercept]))``
   (:func:`skuserdp.privacy.second_moment_bounds`, r the ℓ2 bound of the
   clipped contribution), and for two PSD matrices ``‖S_a − S_b‖_op ≤
   max λ_max``, so replacing one user moves ``λ_min`` of the mean by at most
   that bound over n — no factor 2 (Weyl); plus the lattice rounding and
   floating-point terms derived there.
b. Lower confidence bound, as AdaSSP: ``λ̃ = max(0, λ̂ − t)`` with ``t`` the
   noise's upper tail at probability ``EIGEN_FAILURE`` (1 %, OUR CHOICE;
   AdaSSP uses δ), so that ``λ̃ ≤ λ_min`` with probability 99 %.
c. ``α = max(0, σ√(2p) − λ̃)``: never more than the fixed ridge ``σ√(2p)``
   of the statistics release (OUR CHOICE of the noise bound, the previous
   default ridge; AdaSSP uses a high-probability bound), and 0 when the data
   are well conditioned.

The spend is the composition of the two releases (zCDP, or pure ε).

``estimand="row_mean"`` (cap ``k = max_rows``): before step 3 every user's
``v_u`` is multiplied by ``w_u = min(m_u, k)/k`` (its row count ``m_u``;
:func:`skuserdp.linear_model._base.row_mean_weights`), and with an intercept
the constant entry of ``S_u``, now ``w_u``, is released inside ``v_u``
instead of being kept at 1. ``w_u <= 1`` and the clip comes after it, so the
bounds of step 2, the clip and every sensitivity are unchanged; the solve is
weighted least squares with row weights ``min(m_u, k)/m_u``.

Confidence intervals (``ci_share > 0``, :mod:`._regression_intervals`):
``ci_share`` of the budget is taken first (of ρ under zCDP accounting, of
ε otherwise); after the fit, a private scale of the users' scores
``g_i = b_i − A_i β̂`` and their private "meat" ``(1/n) Σ g_i g_iᵀ`` are
released, and ``conf_int`` is a parametric bootstrap of the released fit
(post-processing).

No centring of the data: centres would have to be public or private.
"""

import dataclasses
import math
from dataclasses import dataclass
from functools import partial
from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..base import CI_CONSTRAINTS, ESTIMAND_CONSTRAINTS, check_estimand
from ..exceptions import AccuracyWarning
from ..mean._base import _compose_any
from ..mean._clip_noise import clip_noise_from_plan, plan_clip_noise
from ..mechanisms._private_bounds import private_quantile
from ..mechanisms import (
    DiscreteGaussianNoise,
    calibrate_noise,
    choose_grid,
    exact_sum,
    release_on_lattice,
    round_to_grid,
)
from ..privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    compose,
    psd_min_eigenvalue_sensitivity,
    second_moment_bounds,
    split_for_public_bounds,
    split_off,
    split_zcdp,
    split_zcdp_shares,
    zcdp_rho_for,
)
from ..privacy._conversion import report_spend
from ..utils._docstrings import fill_doc
from ..utils._numeric import quiet_floating_point
from ..utils._random import make_seed_sequence
from ..utils._warnings import warn_at_caller
from ..users._column import split_groups_column
from ..users._dask import is_dask_collection
from ..users._resolve import check_min_users
from ._regression_intervals import (
    BOOTSTRAP_MAX_PARAMS,
    bootstrap_interval,
    meat_from_plan,
    noise_law,
    plan_meat,
    private_score_radius,
    score_bound,
    split_interval_budget,
    user_scores,
    wald_interval,
)
from ._base import (
    BOX_PARAMS_DOC,
    ESTIMAND_NOTES_DOC,
    UserDPRegressorMixin,
    _UserDPLinearModel,
    dask_user_columns,
    estimand_params_doc,
    in_memory_user_columns,
    radial_clip_factors,
    row_mean_weights,
)

__all__ = ["UserDPLinearRegression"]

#: most parameters (features + intercept) the one-shot release accepts: it
#: releases p(p+3)/2 statistics per user, and its noise grows with them.
MAX_PARAMS = 300

#: share of the budget (of ρ for δ > 0, of ε for δ = 0) spent on the
#: smallest-eigenvalue release of ``alpha="auto"`` (OUR CHOICE)
EIGEN_SHARE = 0.1
#: share of the zCDP budget of clip_radius="auto" (the private median of the
#: norms of the users' statistics vectors)
CLIP_SHARE = 0.05

#: the interval's share of the budget for ci_share="auto" (OUR CHOICE: the
#: meat's noise is rarely the interval's bottleneck, see
#: benchmarks/bench_regression_intervals.py)
CI_SHARE = 0.05

#: probability that the lower confidence bound of the smallest eigenvalue
#: exceeds the released value's target (OUR CHOICE; AdaSSP uses δ)
EIGEN_FAILURE = 0.01


#: public conditioning λ_pub the plan check assumes: the design's second
#: moment ``λ_pub·I`` in box units (spec §3.3, OUR CHOICE)
PLAN_CONDITIONING = 0.2
#: the plan check warns when its excess risk is at least this share of the
#: target's variance bound (spec §3.3, OUR CHOICE)
PLAN_WARN_RATIO = 0.5
#: failure probability of the gain's lower confidence bound (OUR CHOICE)
GAIN_FAILURE = 0.01

ADVICE = ("Use more users, a larger epsilon, fewer features, or "
          "UserDPSGDRegressor (iterative, its noise does not grow with p²).")


def plan_excess_risk(noise_variance, n_params, *, target_variance=1.0,
                     conditioning=PLAN_CONDITIONING, ridge=0.0):
    """First-order excess prediction risk of the noisy solve (public values).

    Model (spec §3.3, box units): the design's second moment is
    ``Σ = λ·I`` (``λ = conditioning``), the coefficients have
    ``λ‖θ‖² = v`` (``v = target_variance``, so the signal is at most the
    target's variance), and the released ``(S̃, b̃) = (Σ + E, Σθ + e)`` carry
    this estimator's noise: variance ``σ²`` on every released coordinate,
    so ``Var(E_jj) = σ²``, ``Var(E_jk) = σ²/2`` (the off-diagonal entries are
    released times √2) and ``Var(e_j) = σ²``. To first order in the noise,
    ``θ̂ = (Σ + α)⁻¹(Σθ + ξ)`` with ``ξ = e − Eθ``, ``Cov ξ = σ²I +
    (σ²/2)(‖θ‖²I + θθᵀ)``, and the excess risk
    ``E[(θ̂ − θ)ᵀΣ(θ̂ − θ)]`` is exactly::

        λ·(α²‖θ‖² + tr Cov ξ)/(λ + α)²,   tr Cov ξ = σ²(p + (p + 1)‖θ‖²/2)

    (the spec's formula with the ``θθᵀ`` term and this estimator's
    off-diagonal noise; checked by simulation in
    ``tests/linear_model/test_ssp_accuracy_check.py``).

    Parameters
    ----------
    noise_variance : float
        σ², the noise variance of one released coordinate (mean scale).
    n_params : int
        p (features plus intercept).
    target_variance : float, default=1.0
        v; 1 is the bound of a target in ``[-1, 1]`` (box units).
    conditioning : float, default=0.2
        λ.
    ridge : float, default=0.0
        α.

    Returns
    -------
    excess : float

    Examples
    --------
    >>> from skuserdp.linear_model._linear_regression import plan_excess_risk
    >>> round(plan_excess_risk(1e-4, 3, target_variance=0.2, conditioning=0.5), 6)
    0.00076
    """
    lam, v, s2 = float(conditioning), float(target_variance), float(noise_variance)
    p, a = int(n_params), float(ridge)
    theta2 = v / lam
    cov_trace = s2 * (p + (p + 1) * theta2 / 2.0)
    return lam * (a * a * theta2 + cov_trace) / (lam + a) ** 2


def noise_norm_bound(n_coords, noise_variance, law, probability):
    """``t`` with ``P(‖g‖₂ ≥ t) ≤ probability`` for the noise ``g`` of
    ``n_coords`` released coordinates (independent, variance ``σ²`` each).

    Discrete Gaussian noise is σ-sub-Gaussian (Canonne, Kamath and Steinke
    2020), and for independent σ-sub-Gaussian coordinates
    ``P(‖g‖² > σ²(k + 2√(kL) + 2L)) ≤ e^{−L}`` (Hsu, Kakade and Zhang 2012,
    Theorem 1 with ``A = I``). Discrete Laplace noise: Markov's inequality
    on ``‖g‖²`` (mean ``kσ²``), ``t = σ√(k/β)``.
    """
    k, s2 = float(n_coords), float(noise_variance)
    if law == "gaussian":
        L = math.log(1.0 / probability)
        return math.sqrt(s2 * (k + 2.0 * math.sqrt(k * L) + 2.0 * L))
    return math.sqrt(s2 * k / probability)


def gain_lower_bound(S, b, w, *, noise_bounds, drop_last_diagonal, intercept):
    """Lower confidence bound of the fit's gain over the best constant.

    With ``(S, b)`` the users' mean (clipped) statistics in box units and
    ``Q(v) = 2vᵀb − vᵀSv``, the mean squared error of predicting with ``v``
    is ``E[y²] − Q(v)``, so the gain of ``w`` over the best intercept-only
    model is ``Γ = Q(w) − max_c Q(c·e_p)`` (``Q(w) − Q(0)`` without an
    intercept): positive iff ``w`` beats predicting the (weighted) mean of
    the target. Only the released ``(S̃, b̃) = (S + E, b + e)`` are known;
    on the event ``‖e‖ ≤ t_e`` and ``‖E‖_op ≤ ‖E‖_F ≤ t_E``
    (``noise_bounds``; ``‖E‖_F`` is the norm of the released vech noise,
    off-diagonal entries times √2) the bounds below hold *for every w at
    once* (``w`` depends on the noise):

    * intercept, its constant entry not released (it is 1): the best
      constant is ``b_p`` and ``Γ = 2wᵀb − wᵀSw − b_p²``; with
      ``Γ̃`` the same of the released values and ``u = w − b̃_p·e_p``,
      ``Γ − Γ̃ = −2uᵀe + wᵀEw − e_p²``, so
      ``Γ ≥ Γ̃ − 2‖u‖t_e − ‖w‖²t_E − t_e²``;
    * intercept, constant entry released (``estimand="row_mean"``):
      ``Q(w) ≥ Q̃(w) − 2‖w‖t_e − ‖w‖²t_E`` and ``max_c Q(c·e_p) ≤
      max_{|c|≤1} 2c(|b̃_p| + t_e) − c²(S̃_pp − t_E)`` (the best constant
      lies in ``[-1, 1]`` since the targets do);
    * no intercept: ``Q(w) − Q(0) ≥ Q̃(w) − 2‖w‖t_e − ‖w‖²t_E``.

    Returns the bound; only released values are read.
    """
    t_e, t_E = (float(t) for t in noise_bounds)
    q_hat = 2.0 * float(w @ b) - float(w @ S @ w)
    norm_w = float(np.linalg.norm(w))
    if intercept and drop_last_diagonal:
        u = np.array(w, dtype=np.float64)
        u[-1] -= float(b[-1])
        return (q_hat - float(b[-1]) ** 2 - 2.0 * float(np.linalg.norm(u)) * t_e
                - norm_w * norm_w * t_E - t_e * t_e)
    lower = q_hat - 2.0 * norm_w * t_e - norm_w * norm_w * t_E
    if intercept:
        a = abs(float(b[-1])) + t_e
        s = float(S[-1, -1]) - t_E
        lower -= a * a / s if s > a else 2.0 * a - s
    return lower


def gain_noise_bounds(p, noise_variance, law, grid, drop_last_diagonal,
                      probability):
    """``(t_e, t_E)`` of :func:`gain_lower_bound`: each holds with
    probability ``1 − probability/2`` (:func:`noise_norm_bound` of the p
    coordinates of ``b`` and of the released vech coordinates of ``S``),
    plus the lattice rounding (at most ``grid`` per coordinate of a mean)."""
    rows, _, _ = _vech_layout(p, drop_last_diagonal)
    out = []
    for k in (p, rows.shape[0]):
        out.append(noise_norm_bound(k, noise_variance, law, probability / 2.0)
                   + grid * math.sqrt(k))
    return tuple(out)


def _vech_layout(p, drop_last_diagonal):
    """Indices (rows, cols) of the released upper triangle and their scale."""
    rows, cols = np.triu_indices(p)
    if drop_last_diagonal:
        keep = ~((rows == p - 1) & (cols == p - 1))
        rows, cols = rows[keep], cols[keep]
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    return rows, cols, scale


#: float64 elements per working buffer of the streamed statistics (1 MiB, so
#: that a chunk's buffers stay in cache)
CHUNK_ELEMENTS = 2 ** 17


def _rows_by_count(codes, n_users):
    """Row order grouping users by row count, each user's rows contiguous.

    Users are ordered by row count (stable: by code within a count) and rows
    by that user order (stable: a user's rows keep their order in ``X``).

    Returns
    -------
    counts : ndarray of shape (n_users,)
        Rows per user.
    user_order : ndarray of shape (n_users,) or None
        Users by increasing row count; ``None`` for ``0, 1, ..., n_users-1``.
    row_order : ndarray of shape (n_samples,) or None
        Rows of ``user_order[0]``, then of ``user_order[1]``, ...; ``None``
        when the rows are already in that order.
    """
    counts = np.bincount(codes, minlength=n_users)
    user_order = np.argsort(counts, kind="stable")
    identity = bool(np.all(user_order[1:] > user_order[:-1]))
    if identity:
        user_order = None
        key = codes
    else:
        rank = np.empty(n_users, dtype=np.intp)
        rank[user_order] = np.arange(n_users)
        key = rank[codes]
    if np.all(key[1:] >= key[:-1]):
        return counts, user_order, None  # rows already grouped in this order
    if n_users <= np.iinfo(np.uint16).max + 1:
        key = key.astype(np.uint16)  # numpy's stable sort is a radix sort here
    return counts, user_order, np.argsort(key, kind="stable")


def _user_blocks(X, y, codes, n_users, *, width, n_block_users):
    """Blocks of users with the same row count, their rows gathered.

    Yields ``(m, users, Z)`` for runs of users with ``m >= 1`` rows each
    (users without rows are skipped), at most ``n_block_users(m)`` users at
    a time: ``Z`` of shape ``(k·m, width)`` holds their rows (user by user,
    each user's in their order in ``X``) in its first ``X.shape[1]`` columns
    and the targets in its last, other columns unset; ``users`` is the
    slice, or the index array, of those ``k`` users.
    """
    d = X.shape[1]
    counts, user_order, row_order = _rows_by_count(codes, n_users)
    sorted_counts = counts if user_order is None else counts[user_order]
    # runs of users with the same row count
    starts = np.flatnonzero(np.r_[True, sorted_counts[1:] != sorted_counts[:-1]])
    ends = np.r_[starts[1:], n_users]
    row_start = np.r_[0, np.cumsum(sorted_counts)]
    for a, e in zip(starts, ends):
        m = int(sorted_counts[a])
        if m == 0:
            continue  # users without rows keep zeros
        step = n_block_users(m)
        for u0 in range(a, e, step):
            u1 = min(e, u0 + step)
            r0, r1 = int(row_start[u0]), int(row_start[u1])
            Z = np.empty((r1 - r0, width))
            if row_order is None:
                Z[:, :d] = X[r0:r1]
                Z[:, width - 1] = y[r0:r1]
            else:
                idx = row_order[r0:r1]
                np.take(X, idx, axis=0, out=Z[:, :d], mode="clip")
                np.take(y, idx, out=Z[:, width - 1], mode="clip")
            yield m, slice(u0, u1) if user_order is None else user_order[u0:u1], Z


def _streamed_statistics(X, y, codes, n_users, *, drop_last_diagonal,
                         feature_bound=None, intercept=False,
                         chunk_elements=None, box=None):
    """Per-user ``(vech(S_u), b_u)`` streamed over chunks of users.

    With ``box`` (a :class:`~skuserdp.linear_model._base.PublicScale`) the
    rows and targets are first clipped to their boxes and mapped to box
    units, chunk by chunk (exactly ``box.rows`` / ``box.targets``). The rows
    used are those of ``X``, projected onto the ball of radius
    ``feature_bound`` (when given, exactly as :func:`project_rows`, up to
    the rounding of the row norms) and followed by a column of ones when
    ``intercept``. Rows are grouped by user (one stable sort of the codes,
    skipped when they are already grouped) and users of equal row count
    ``m`` are processed together: their rows, with the target as an extra
    column, form a ``(k, m, p + 1)`` block whose per-user Gram matrices
    ``Z_uᵀZ_u`` are one batched matrix product. Working memory is a few
    buffers of ``chunk_elements`` floats plus the ``(n_users, n_stats)``
    output: no array of ``n_samples × p²`` is formed and ``X`` is read, not
    copied. Each user's statistics depend on that user's rows only.
    """
    chunk_elements = CHUNK_ELEMENTS if chunk_elements is None else chunk_elements
    d = X.shape[1]
    p = d + (1 if intercept else 0)
    rows, cols, scale = _vech_layout(p, drop_last_diagonal)
    q = p + 1
    # flat positions in the (p+1)x(p+1) Gram matrix of the released entries
    take = np.r_[rows * q + cols, np.arange(p) * q + p]
    mult = np.r_[scale, np.ones(p)]
    V = np.zeros((n_users, take.shape[0]))
    bound = None if feature_bound is None else float(feature_bound)
    blocks = _user_blocks(
        X, y, codes, n_users, width=q,
        n_block_users=lambda m: max(1, min(chunk_elements // (m * q),
                                           chunk_elements // (q * q))))
    for m, users, Z in blocks:
        if box is not None:
            Xc = Z[:, :d]
            np.clip(Xc, box.lower, box.upper, out=Xc)
            Xc -= box.mid
            Xc /= box.half
            if box.y_lower is not None:
                yc = Z[:, p]
                np.clip(yc, box.y_lower, box.y_upper, out=yc)
                yc -= box.y_mid
                yc /= box.y_half
        if bound is not None:  # project_rows: factor 1 inside the ball
            Xc = Z[:, :d]
            norms = np.sqrt(np.einsum("ij,ij->i", Xc, Xc))
            with np.errstate(divide="ignore"):
                Xc *= np.minimum(1.0, bound / norms)[:, None]
        if intercept:
            Z[:, d] = 1.0
        k = Z.shape[0] // m
        Zb = Z.reshape(k, m, q)
        G = np.matmul(Zb.transpose(0, 2, 1), Zb).reshape(k, q * q)
        if isinstance(users, slice):
            part = V[users]
            np.take(G, take, axis=1, out=part)
        else:
            part = np.take(G, take, axis=1)
        part *= mult / m
        if not isinstance(users, slice):
            V[users] = part
    return V


def sufficient_statistics(Xa, y, codes, n_users, *, drop_last_diagonal):
    """Per-user ``(vech(S_u), b_u)``, one row per user.

    ``S_u`` is the mean of user ``u``'s ``x̃x̃ᵀ`` (upper triangle, row by
    row, off-diagonal entries times √2) and ``b_u`` the mean of its ``x̃y``.
    Streamed: memory ``O(n_users · p²)`` plus a few chunks of rows, never
    ``O(n_samples · p²)``; ``Xa`` is not copied.

    Parameters
    ----------
    Xa : ndarray of shape (n_samples, p)
        Augmented, projected rows.
    y : ndarray of shape (n_samples,)
        Clipped targets.
    codes : ndarray of shape (n_samples,)
        User code of every row.
    n_users : int
    drop_last_diagonal : bool
        Whether the last diagonal entry (the intercept's constant 1) is left
        out.

    Returns
    -------
    V : ndarray of shape (n_users, n_stats)
        Users without rows get zeros.
    """
    Xa = np.asarray(Xa, dtype=np.float64)
    return _streamed_statistics(Xa, np.asarray(y, dtype=np.float64), codes, n_users,
                                drop_last_diagonal=drop_last_diagonal)


def _unpack(v, p, drop_last_diagonal):
    rows, cols, scale = _vech_layout(p, drop_last_diagonal)
    n_tri = rows.shape[0]
    S = np.zeros((p, p))
    S[rows, cols] = v[:n_tri] / scale
    S[cols, rows] = v[:n_tri] / scale
    if drop_last_diagonal:
        S[p - 1, p - 1] = 1.0
    return S, v[n_tri:]


@dataclass(frozen=True)
class MinEigenvaluePlan:
    """Every public quantity of the smallest-eigenvalue release.

    Computed by :func:`plan_min_eigenvalue` from public values only.

    Parameters
    ----------
    n_users, dim : int
        Public number of users and matrix dimension p.
    op_bound : float
        Bound on ``λ_max`` of every user's clipped second-moment matrix.
    float_slack : float
        Bound on the float error of each computed matrix (Frobenius).
    grid : float
        Power-of-two lattice step of the matrix entries.
    sensitivity : float
        Replace-one sensitivity of the released integer (grid units).
    noise : DiscreteGaussianNoise or DiscreteLaplaceNoise
        Its noise (grid units).
    loss : ZCDP or PureDP
        The privacy loss of the release.
    """

    n_users: int
    dim: int
    op_bound: float
    float_slack: float
    grid: float
    sensitivity: float
    noise: object
    loss: object

    @property
    def noise_std(self):
        """Noise standard deviation (bound) of the released mean-scale value."""
        return self.noise.std * self.grid / self.n_users

    def upper_tail(self, probability):
        """``t`` with ``P(noise >= t) <= probability`` (mean scale).

        The discrete Gaussian of parameter σ² is σ-sub-Gaussian (Canonne,
        Kamath and Steinke 2020): ``t = σ√(2 ln(1/β))``; the discrete
        Laplace of scale s has ``P(Z >= k) = e^{-k/s}/(1 + e^{-1/s})``:
        ``t = s·ln(1/β)``.
        """
        log_inv = math.log(1.0 / probability)
        if isinstance(self.noise, DiscreteGaussianNoise):
            units = self.noise.std * math.sqrt(2.0 * log_inv)
        else:
            units = float(self.noise.scale) * log_inv
        return units * self.grid / self.n_users


def plan_min_eigenvalue(n_users, dim, *, budget, row_bound, clip_radius,
                        intercept):
    """Plan the release of ``λ_min`` of the users' mean clipped ``S_u``.

    Parameters
    ----------
    n_users, dim : int
        Public number of users and dimension p of ``S_u``.
    budget : ZCDP or PureDP
        Budget of the release (discrete Gaussian or discrete Laplace noise).
    row_bound : float
        Public bound on the norm of the augmented rows.
    clip_radius : float
        Public ℓ2 bound of each clipped contribution (for an ℓ1 clip, its
        radius).
    intercept : bool
        Whether the last coordinate is the intercept's constant 1.

    Returns
    -------
    plan : MinEigenvaluePlan
    """
    op_bound, float_slack = second_moment_bounds(row_bound, clip_radius,
                                                 constant_entry=intercept)
    # the clip factor is computed in floating point too: the exact matrix it
    # scales may exceed op_bound by the float slack (second_moment_bounds)
    grid = choose_grid(op_bound + float_slack, dim * (dim + 1) // 2, n_users)
    sensitivity = psd_min_eigenvalue_sensitivity(op_bound + float_slack, dim,
                                                 n_users, grid,
                                                 float_slack=float_slack)
    if not isinstance(budget, (ZCDP, PureDP)):
        raise TypeError("budget must be a ZCDP or PureDP loss.")
    noise = calibrate_noise(budget, sensitivity)
    return MinEigenvaluePlan(int(n_users), int(dim), op_bound, float_slack, grid,
                             sensitivity, noise, noise.privacy(sensitivity))


def min_eigenvalue_from_plan(V, plan, *, clip_radius, norm, drop_last_diagonal,
                             random_state=None):
    """Release ``λ_min`` of the mean over users of the clipped ``S_u``.

    Each user's row of ``V`` is clipped as the statistics release clips it
    (``norm`` ball of radius ``clip_radius``), its ``S_u`` rebuilt (the
    intercept's constant 1 included), rounded entry-wise to the plan's grid
    and summed exactly; the smallest eigenvalue of the integer sum is
    rounded and released with integer noise.

    Parameters
    ----------
    V : ndarray of shape (n_users, n_stats)
        From :func:`sufficient_statistics`. Not modified.
    plan : MinEigenvaluePlan
    clip_radius : float
        Radius of the clipping ball of the statistics release.
    norm : {"l2", "l1"}
        Its norm.
    drop_last_diagonal : bool
        Whether ``V`` leaves out the intercept's constant entry.
    random_state : int, SeedSequence or None, default=None
        Noise source.

    Returns
    -------
    lambda_min : float
        The private smallest eigenvalue (mean scale).
    """
    p = plan.dim
    rows, cols, scale = _vech_layout(p, drop_last_diagonal)
    n_tri = rows.shape[0]
    total = np.zeros(n_tri, dtype=np.int64)
    step = max(1, CHUNK_ELEMENTS // V.shape[1])
    for u0 in range(0, V.shape[0], step):
        v = V[u0:u0 + step]
        c = radial_clip_factors(v, clip_radius, norm)
        entries = v[:, :n_tri] * c[:, None] / scale
        total += exact_sum(round_to_grid(entries, plan.grid))
    T = np.zeros((p, p))
    T[rows, cols] = total
    T[cols, rows] = total
    if drop_last_diagonal:  # every user's constant 1, rounded like the rest
        T[p - 1, p - 1] = plan.n_users * int(round_to_grid([1.0], plan.grid)[0])
    lam_units = np.linalg.eigvalsh(T)[0]
    released = release_on_lattice([lam_units], 1.0, plan.noise,
                                  make_seed_sequence(random_state))
    return float(released[0]) * plan.grid / plan.n_users


@fill_doc
class UserDPLinearRegression(UserDPRegressorMixin, _UserDPLinearModel):
    __doc__ = """User-level private ridge regression from noisy sufficient statistics.

    Each user's average second-moment matrix ``mean x̃x̃ᵀ`` and cross-moment
    ``mean x̃y`` are clipped jointly and released once with lattice noise; the
    coefficients solve the ridge normal equations of the noisy statistics
    (post-processing). One release, no iterations, no step sizes: the
    baseline to compare :class:`UserDPSGDRegressor` with.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    {delta}
    alpha : float or "auto", default="auto"
        Ridge added to the noisy second-moment matrix (not to the
        intercept). A number is a public ridge, and the statistics get the
        whole budget. ``"auto"``: AdaSSP's adaptive ridge (Wang 2018),
        ``max(0, σ√(2p) − λ̃)``, with ``σ√(2p)`` the expected operator norm
        of the noise matrix (σ the noise standard deviation of a released
        coordinate, p the number of parameters; public) and ``λ̃`` a private
        lower confidence bound (99 %) of the smallest eigenvalue of the
        users' mean clipped second-moment matrix, released with 10 % of the
        budget. Well-conditioned data get no ridge; the ridge is never more
        than ``σ√(2p)``. A ridge shrinks the coefficients towards 0.
    fit_intercept : bool, default=True
        Whether to fit an intercept.
""" + BOX_PARAMS_DOC + """
    target_bounds : "auto" or tuple (lower, upper), default="auto"
        Public range of ``y`` (floats); targets are clipped to it and scaled
        to ``[-1, 1]``. ``"auto"`` learns it privately with the feature
        boxes (same share of the budget).
    clip_radius : float or "auto", default="auto"
        ℓ2 clip radius of each user's statistics vector (box units).
        ``"auto"``: with zCDP accounting (``delta > 0``,
        ``calibration="tight"``) the private median of the users' vector
        norms (:func:`skuserdp.mechanisms.private_quantile`, 5% of ρ,
        charged; within ``[r_max/1000, r_max]``); otherwise ``r_max``, the
        largest possible norm (no clipping bias, much more noise). The value
        used is ``clip_radius_``.
    ci_share : float in [0, 1) or "auto", default=0.05
        Share of the budget (of ρ with zCDP accounting, of ε otherwise)
        spent on the releases :meth:`conf_int` and ``bse_`` are computed
        from (a private scale of the users' scores and the private
        cluster-robust "meat", see "Confidence intervals" in the Notes);
        ``"auto"`` is 0.05; ``0`` releases nothing, and :meth:`conf_int`
        then raises AttributeError.
    {calibration}
""" + estimand_params_doc(
        "Here the weight\n"
        "        multiplies the user's mean ``x̃x̃ᵀ`` and ``x̃y`` (with an intercept,\n"
        "        the constant entry of ``S_u`` becomes ``w_u`` and is released\n"
        "        with the rest, inside the clipped vector).") + """
    {random_state}
    {n_jobs}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The private coefficients.
    intercept_ : float
        The private intercept.
    alpha_ : float
        The ridge used.
    min_eigenvalue_ : float or None
        ``alpha="auto"``: the private smallest eigenvalue of the users' mean
        clipped second-moment matrix (before the confidence adjustment);
        ``None`` for a numeric ``alpha``.
    n_users_ : int
        Number of users.
    {feature_attributes}
    bse_ : ndarray of shape (n_features + fit_intercept,)
        Standard errors of ``coef_`` then ``intercept_`` (the standard
        deviation of the bootstrap draws: sampling of the users and privacy
        noise); needs ``ci_share > 0``.
    privacy_loss_ : ZCDP or PureDP
        The privacy loss of the fit: the statistics release composed, for
        ``alpha="auto"``, with the smallest-eigenvalue release, and, for
        ``ci_share > 0``, with the interval's two releases.
    epsilon_, delta_ : float
        That loss as (ε, δ); at most the targets.
    rho_ : float or None
        The zCDP ρ spent.

    See Also
    --------
    UserDPSGDRegressor : Iterative user-level DP-SGD.

    Notes
    -----
    The number of released statistics grows as ``p²/2``; for many features
    the noise dominates and DP-SGD is the better choice (at most 300
    parameters are accepted). Pass raw units: the estimator scales by the
    boxes ``bounds``/``target_bounds`` (declared or learned privately);
    fitting a scaler on the private data is itself a leak.

    **Accuracy warning.** ``fit`` warns
    (:class:`~skuserdp.exceptions.AccuracyWarning`) when the fit may be
    worse than predicting the mean, from public and released values only
    (no privacy cost): when the public plan's first-order excess risk
    (``plan_excess_risk``, at the target's largest variance in box
    units and a conditioning of 0.2) is at least half that variance, or
    else when a 99 % lower confidence bound of the released fit's gain over
    the best constant (``gain_lower_bound``, from the known noise law
    of the released statistics) is negative. The second check is
    conservative: it may warn on fits that do beat the mean. Without an
    intercept the baseline is predicting 0 (the middle of
    ``target_bounds``).

""" + ESTIMAND_NOTES_DOC + """

    **Confidence intervals.** :meth:`conf_int` (one row per entry of
    ``coef_``, then ``"intercept"``) covers the population coefficients of
    the per-user-mean-weighted least-squares problem: the ``β`` solving
    ``E[A_i] β = E[b_i]`` over the population of users, with ``A_i`` and
    ``b_i`` user ``i``'s mean ``x̃x̃ᵀ`` and ``x̃y`` -- equivalently, weighted
    least squares with row weights ``1/m_i`` (``m_i`` the user's rows),
    clustered by user; with ``estimand="row_mean"``, ``A_i`` and ``b_i``
    are multiplied by ``w_i = min(m_i, k)/k`` (row weights
    ``min(m_i, k)/m_i``) -- *in the boxes and clipping the estimator uses*:
    rows and targets clipped to ``bounds``/``target_bounds`` and the users'
    statistics clipped to ``clip_radius_`` (``E[c_i A_i]β = E[c_i b_i]``,
    ``c_i`` the clip factor, the intercept's constant entry unclipped). It
    is the unclipped problem's when no user is clipped: declared boxes that
    hold the data and a ``clip_radius`` at least the largest norm of a
    user's statistics (the default ``"auto"`` radius is a median and
    down-weights the users above it, which moves the estimand: then, and
    with learned boxes, :meth:`conf_int` says so in an
    :class:`~skuserdp.exceptions.AccuracyWarning`). With
    ``alpha="auto"`` the ridge's shrinkage is corrected to first order. The
    fit releases, from ``ci_share`` of its budget, a private scale of the
    users' scores ``g_i = b_i − A_i β̂`` and the mean of ``g_i g_iᵀ`` (the
    cluster-robust "meat", replace-one sensitivity ``√2·C²/n`` for scores
    clipped to ``C``); the interval is the basic parametric bootstrap of
    Ferrando, Wang and Sheldon (2022) with that meat: 2000 redraws of the
    users' sampling error and of fresh privacy noise at the released
    scales, through the estimator's own solve (PSD projection, ridge),
    mapped to the units of ``X`` and ``y``. Above 30 parameters the
    bootstrap is replaced by its linearisation (a Wald interval from the
    sandwich and the exact covariance of the statistics' noise, without the
    ridge correction). It is pure post-processing
    (``alpha`` may change after the fit at no privacy cost) and
    asymptotic: valid as the number of users grows with the number of
    features fixed.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.linear_model import UserDPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(5000), 10)
    >>> X = rng.uniform(-0.5, 0.5, size=(50000, 2))
    >>> y = X @ [0.8, -0.4] + 0.1 + 0.05 * rng.normal(size=50000)
    >>> reg = UserDPLinearRegression(epsilon=1.0, random_state=0)
    >>> coef = reg.fit(X, y, groups=groups).coef_
    >>> bool(np.abs(coef - [0.8, -0.4]).max() < 0.15), reg.epsilon_ <= 1.0
    (True, True)

    Confidence intervals of the unclipped problem's coefficients need
    declared boxes and a clip radius no user exceeds (here the largest
    possible norm, √11 in box units for two features):

    >>> reg = UserDPLinearRegression(epsilon=1.0, bounds=(-0.5, 0.5),
    ...                              target_bounds=(-1.0, 1.0), clip_radius=3.32,
    ...                              random_state=0).fit(X, y, groups=groups)
    >>> ci = reg.conf_int(0.05)  # coef_ then the intercept, (lower, upper)
    >>> ci.shape, bool(np.all(ci[:, 0] < ci[:, 1]))
    ((3, 2), True)
    """

    _parameter_constraints: dict = {
        **_UserDPLinearModel._parameter_constraints,
        "alpha": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "target_bounds": [StrOptions({"auto"}), "array-like"],
        "clip_radius": [StrOptions({"auto"}),
                        Interval(Real, 0, None, closed="neither")],
        **ESTIMAND_CONSTRAINTS,
        **CI_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, alpha="auto", fit_intercept=True,
                 bounds="auto", bounds_share=None, target_bounds="auto",
                 clip_radius="auto", ci_share=0.05, calibration="tight",
                 estimand="user_mean", max_rows=None, random_state=None,
                 n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.estimand = estimand
        self.max_rows = max_rows
        self.ci_share = ci_share
        self.fit_intercept = fit_intercept
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.bounds_share = bounds_share
        self.clip_radius = clip_radius
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    @property
    def _drop_constant(self):
        """Whether the intercept's constant entry of ``S_u`` is left out of
        the release (kept at 1): with ``estimand="user_mean"`` and an
        intercept. With ``"row_mean"`` that entry is the user's weight
        ``w_u`` (private), so it is released with the rest, inside the
        clipped vector."""
        return bool(self.fit_intercept) and self.estimand == "user_mean"

    def _max_radius(self):
        b2 = self._row_bound ** 2
        return math.sqrt(b2 * b2 - (1.0 if self._drop_constant else 0.0)
                         + b2)  # targets in box units: |y| <= 1

    def _user_statistics(self, box):
        """:func:`sufficient_statistics` of the augmented rows in the box
        units of ``box``, as a function ``(X, y, codes, n_users) -> V``
        computed chunk by chunk from ``X`` (never copied whole)."""
        return partial(_streamed_statistics,
                       drop_last_diagonal=self._drop_constant,
                       feature_bound=self._feature_bound,
                       intercept=bool(self.fit_intercept), box=box)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, groups=None):
        """Fit the private ridge regression.

        Parameters
        ----------
        {X_supervised}
        y : array-like of shape (n_samples,)
            Targets. Not modified.
        {groups}

        Returns
        -------
        self : object
            The fitted estimator.
        """
        with quiet_floating_point():  # no warning may depend on the data
            check_estimand(self)
            X, groups = split_groups_column(X, groups)  # groups='column name'
            if any(is_dask_collection(v) for v in (X, y, groups)):
                # one pass over the partitions per table (the users' means for a
                # learned box, then the statistics), see skuserdp.users._dask
                panel = self._dask_panel(X, y, groups)
                n_features = panel.n_features
                user_columns = dask_user_columns(panel, check=lambda t: check_min_users(
                    self, t.means.shape[0], int(t.counts.sum())))

                def user_statistics(box):
                    _, V, counts = panel.user_statistics(self._user_statistics(box))
                    check_min_users(self, V.shape[0], int(counts.sum()))
                    return V, counts
            else:
                X, y, codes, n_users = self._validate_supervised(X, y, groups)
                n_features = X.shape[1]
                user_columns = in_memory_user_columns(X, y, codes, n_users)

                def user_statistics(box):
                    return (self._user_statistics(box)(X, y, codes, n_users),
                            np.bincount(codes, minlength=n_users))
            p = n_features + (1 if self.fit_intercept else 0)
            if p > MAX_PARAMS:
                raise ValueError(
                    "UserDPLinearRegression releases p(p+3)/2 statistics per "
                    f"user; with p = {p} parameters that is {p * (p + 3) // 2}, "
                    "more than this estimator accepts (p <= "
                    f"{MAX_PARAMS}), and the noise would swamp them. Use "
                    "UserDPSGDRegressor for many features."
                )
            drop = self._drop_constant
            n_stats = p * (p + 3) // 2 - (1 if drop else 0)
            scale, box_loss, epsilon, seed = self._public_scale(
                n_features, user_columns, target_bounds=self.target_bounds)
            self._record_scale(scale)
            V, counts = user_statistics(scale)
            if self.estimand == "row_mean":
                # w_u = min(m_u, k)/k <= 1 times user u's mean statistics,
                # BEFORE the release clips them: the replace-one sensitivity
                # is the clip's, unchanged (no privacy quantity changes);
                # the counts are read here only
                V *= row_mean_weights(counts, self.max_rows)[:, None]
            del counts
            n_users = V.shape[0]
            if self.clip_radius != "auto":
                radius = float(self.clip_radius)
            elif self._zcdp_accounting():
                radius, radius_loss, epsilon, seed = self._private_clip_radius(
                    V, epsilon, seed)
                box_loss = radius_loss if box_loss is None else compose(box_loss,
                                                                        radius_loss)
            else:
                radius = self._max_radius()
            self.clip_radius_ = radius
            epsilon, seed, ci = self._split_interval_budget(epsilon, seed)
            plan, eig_plan = self._plan(n_users, p, n_stats, radius, epsilon)
            if eig_plan is None:
                seed_stats = seed
            else:
                seed_eig, seed_stats = make_seed_sequence(seed).spawn(2)
                lam = min_eigenvalue_from_plan(V, eig_plan, clip_radius=plan.ball,
                                               norm=plan.norm, drop_last_diagonal=drop,
                                               random_state=seed_eig)
            released = clip_noise_from_plan(V, plan, random_state=seed_stats,
                                            n_jobs=self.n_jobs)
            S_released, b = _unpack(released, p, drop)
            eigval, eigvec = np.linalg.eigh(S_released)
            S = (eigvec * np.maximum(eigval, 0.0)) @ eigvec.T
            if eig_plan is None:
                alpha = float(self.alpha)
                loss = plan.loss
                self.min_eigenvalue_ = None
            else:
                # AdaSSP: ridge = noise bound − lower confidence bound of λ_min
                noise_bound = math.sqrt(2.0 * p * plan.noise_variance)
                lam_lower = max(0.0, lam - eig_plan.upper_tail(EIGEN_FAILURE))
                alpha = max(0.0, noise_bound - lam_lower)
                loss = compose(eig_plan.loss, plan.loss)
                self.min_eigenvalue_ = lam
            ridge = np.full(p, alpha)
            if self.fit_intercept:
                ridge[-1] = 0.0
            w = np.linalg.lstsq(S + np.diag(ridge), b, rcond=None)[0]
            self._check_accuracy(plan, eig_plan, S_released, b, w)
            coef, intercept = scale.unscale(*self._set_coef(w[None, :]))
            if box_loss is not None:
                loss = compose(box_loss, loss)
            self.coef_ = coef[0]
            self.intercept_ = float(intercept[0])
            self._interval_state = None
            if ci is not None:
                state, ci_loss = self._interval_release(
                    V, w, S, ridge, plan, eig_plan, scale, ci)
                loss = _compose_any(loss, ci_loss, self.delta)
                self._interval_state = state
            del V
            self.alpha_ = alpha
            self.n_users_ = n_users
            self._set_spend(loss)
            return self

    def _check_accuracy(self, plan, eig_plan, S, b, w):
        """Warn (AccuracyWarning) when the fit may be worse than predicting
        the mean; public and released values only (post-processing).

        1. The public plan (spec §3.3): :func:`plan_excess_risk` at the
           plan's noise, the target's variance bound in box units (1), the
           conditioning ``PLAN_CONDITIONING`` and the ridge the plan expects
           (``alpha``, or for ``"auto"`` the noise bound minus the
           conditioning's lower confidence bound); warns when it is at least
           ``PLAN_WARN_RATIO`` of that bound.
        2. Otherwise the released fit: :func:`gain_lower_bound` of its gain
           over the best constant at confidence ``1 − GAIN_FAILURE``; warns
           when it is negative (the noise could make the fit worse than the
           mean).
        """
        p = w.shape[0]
        s2 = plan.noise_variance
        if eig_plan is None:
            ridge = float(self.alpha)
        else:
            lam_lower = max(0.0, PLAN_CONDITIONING
                            - eig_plan.upper_tail(EIGEN_FAILURE))
            ridge = max(0.0, math.sqrt(2.0 * p * s2) - lam_lower)
        excess = plan_excess_risk(s2, p, ridge=ridge)
        baseline = ("predicting the mean" if self.fit_intercept
                    else "predicting 0 (the middle of target_bounds)")
        head = f"{type(self).__name__} may be worse than {baseline}: "
        if excess >= PLAN_WARN_RATIO:
            warn_at_caller(
                f"{head}with {plan.n_users} users and {p} parameters at this "
                "budget the noise of the released statistics dominates (the "
                f"public plan's excess risk is {excess:.3g} times the target's "
                "largest variance in box units, for a conditioning of "
                f"{PLAN_CONDITIONING:g}). {ADVICE}", AccuracyWarning)
            return
        bounds = gain_noise_bounds(p, s2, noise_law(plan.noise), plan.grid,
                                   self._drop_constant, GAIN_FAILURE)
        lower = gain_lower_bound(S, b, w, noise_bounds=bounds,
                                 drop_last_diagonal=self._drop_constant,
                                 intercept=bool(self.fit_intercept))
        if lower < 0.0:
            warn_at_caller(
                f"{head}the noise of the released statistics is too large to "
                f"certify its gain (a {1 - GAIN_FAILURE:.0%} lower confidence "
                f"bound of its gain in mean squared error is {lower:.3g} < 0, box "
                f"units, from the released statistics only). {ADVICE}",
                AccuracyWarning)

    def _split_interval_budget(self, epsilon, seed):
        """Take ``ci_share`` of the budget left for the fit's own releases
        for the interval's (public values): of ρ with zCDP accounting
        (:func:`skuserdp.privacy.split_zcdp`), otherwise of ε as a pure
        budget (:func:`skuserdp.privacy.split_off`). Returns ``(epsilon_rest,
        seed_rest, ci)`` with ``ci = (budget, seed)`` or ``None`` (no
        interval: ``ci_share=0``)."""
        share = CI_SHARE if self.ci_share == "auto" else float(self.ci_share)
        if share == 0.0:
            self._no_interval_reason = (
                "it was fitted with ci_share=0 (no interval statistics released).")
            return epsilon, seed, None
        self.__dict__.pop("_no_interval_reason", None)
        seed_fit, seed_ci = make_seed_sequence(seed).spawn(2)
        if self._zcdp_accounting():
            ci_budget, rest_eps = split_zcdp(epsilon, self.delta, share)
        else:
            eps_ci, rest = split_off(PureDP(epsilon) if self.delta == 0
                                     else ApproxDP(epsilon, self.delta), share)
            ci_budget, rest_eps = PureDP(eps_ci), rest.epsilon
        return rest_eps, seed_fit, (ci_budget, seed_ci)

    def _interval_release(self, V, w, S, ridge, plan, eig_plan, scale, ci):
        """The interval's releases (the scores' private scale, then the
        meat) and its bootstrap (:mod:`._regression_intervals`); returns the
        :class:`~skuserdp.inference.IntervalState` in natural units and the
        releases' loss."""
        ci_budget, seed_ci = ci
        seed_q, seed_meat, seed_boot = make_seed_sequence(seed_ci).spawn(3)
        drop = self._drop_constant
        p = w.shape[0]
        n_users = V.shape[0]
        G = user_scores(V, w, clip_radius=plan.ball, norm=plan.norm,
                        drop_last_diagonal=drop)
        op_bound, _ = second_moment_bounds(self._row_bound, plan.ball,
                                           constant_entry=drop)
        cap = score_bound(plan.ball, self._row_bound, op_bound,
                          float(np.linalg.norm(w)), intercept=drop)
        eps0, quantile_loss, meat_budget = split_interval_budget(ci_budget)
        radius = private_score_radius(G, eps0, cap, seed_q)
        meat_plan = plan_meat(n_users, p, budget=meat_budget, radius=radius,
                              calibration=self.calibration)
        meat = meat_from_plan(G, meat_plan, random_state=seed_meat)
        del G
        eigen = None
        if eig_plan is not None:
            eigen = {"noise_std": eig_plan.noise_std, "law": noise_law(eig_plan.noise),
                     "tail": eig_plan.upper_tail(EIGEN_FAILURE),
                     "noise_bound": math.sqrt(2.0 * p * plan.noise_variance)}

        def to_natural(W):
            coef, intercept = scale.unscale(*self._set_coef(np.atleast_2d(W)))
            return np.column_stack([coef, intercept]) if self.fit_intercept else coef

        estimate = to_natural(w)[0]
        if p > BOOTSTRAP_MAX_PARAMS:
            state = wald_interval(
                S_stats=S, w=w, meat=meat, n_users=n_users,
                stats_variance=plan.noise_variance, drop_last_diagonal=drop,
                ridge=ridge, to_natural=to_natural, estimate=estimate)
        else:
            state = bootstrap_interval(
                S_stats=S, w=w, meat=meat, n_users=n_users,
                stats_variance=plan.noise_variance, stats_law=noise_law(plan.noise),
                drop_last_diagonal=drop, ridge=ridge, to_natural=to_natural,
                estimate=estimate, eigen=eigen, random_state=seed_boot)
        return dataclasses.replace(state, caveat=self._interval_caveat()), compose(
            quantile_loss, meat_plan.loss)

    def _interval_caveat(self):
        """The warning of :meth:`conf_int` when the estimand is the clipped
        problem's by construction (learned boxes, the median clip radius)."""
        learned = [name for name, value in (("bounds", self.bounds),
                                            ("target_bounds", self.target_bounds))
                   if isinstance(value, str)]
        parts = []
        if learned:
            parts.append(f"{' and '.join(learned)} learned privately ('auto'): "
                         "rows and targets outside the learned boxes are clipped")
        if self.clip_radius == "auto" and self._zcdp_accounting():
            parts.append("clip_radius='auto' is the private median of the users' "
                         "statistics norms: the users above it are down-weighted")
        if not parts:
            return ""
        weighted = ("per-user-mean-weighted" if self.estimand == "user_mean" else
                    f"row-level (capped at max_rows={self.max_rows} rows per user)")
        return ("the interval covers the coefficients of the clipped problem, not "
                f"of the {weighted} population problem (" + "; ".join(parts)
                + "). Declare bounds, target_bounds and a clip_radius at least the "
                "largest norm of a user's statistics to cover the latter.")

    def _interval_labels(self):
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return None
        return [str(n) for n in names] + (["intercept"] if self.fit_intercept else [])

    def _private_clip_radius(self, V, epsilon, seed):
        """``clip_radius="auto"`` with zCDP accounting: the private median of
        the norms of the users' statistics vectors, from ``CLIP_SHARE`` of
        the zCDP budget (one exponential-mechanism release, charged), kept
        within ``[r_max/1000, r_max]`` (``r_max`` the largest possible
        norm). Returns ``(radius, loss, epsilon_rest, seed_rest)``."""
        eps0, loss, eps_rest, _ = split_for_public_bounds(
            epsilon, self.delta, CLIP_SHARE, 1, zcdp=True)
        seed_r, seed_rest = make_seed_sequence(seed).spawn(2)
        r = private_quantile(np.linalg.norm(V, axis=1), 0.5, eps0,
                             random_state=seed_r)
        r_max = self._max_radius()
        return min(max(r, 1e-3 * r_max), r_max), loss, eps_rest, seed_rest

    def _plan(self, n_users, p, n_stats, radius, epsilon):
        """Plans of the statistics release and, for ``alpha="auto"``, of the
        smallest-eigenvalue release (``None`` otherwise), from public values.

        The budget is split by the privacy core: ``split_off`` of ε (δ = 0),
        ``split_zcdp_shares`` of ``ρ = zcdp_rho_for(ε, δ)`` (δ > 0,
        ``calibration="tight"``) or ``split_zcdp`` (``"paper"``, whose
        statistics release is calibrated for the rest as an (ε', δ) target).
        """
        if self.delta == 0:
            budget = PureDP(epsilon)
        else:
            budget = ApproxDP(epsilon, self.delta)
        if self.alpha != "auto":
            return plan_clip_noise(n_users, n_stats, budget=budget, radius=radius,
                                   calibration=self.calibration), None
        if self.delta == 0:
            eps_eig, rest = split_off(budget, EIGEN_SHARE)
            eig_budget = PureDP(eps_eig)
        elif self.calibration == "tight":
            rho = zcdp_rho_for(epsilon, self.delta)
            eig_budget, rest = split_zcdp_shares(ZCDP(rho),
                                                 [EIGEN_SHARE, 1.0 - EIGEN_SHARE])
        else:
            eig_budget, eps_rest = split_zcdp(epsilon, self.delta, EIGEN_SHARE)
            rest = ApproxDP(eps_rest, self.delta)
        plan = plan_clip_noise(n_users, n_stats, budget=rest, radius=radius,
                               calibration=self.calibration)
        eig_plan = plan_min_eigenvalue(n_users, p, budget=eig_budget,
                                       row_bound=self._row_bound,
                                       clip_radius=plan.ball,
                                       intercept=self._drop_constant)
        eps_spent, delta_spent, _ = report_spend(compose(eig_plan.loss, plan.loss),
                                                 self.delta)
        if eps_spent > epsilon or delta_spent > self.delta:
            raise ValueError(  # not seen: the paper calibration spends less
                f"alpha='auto' would spend (ε, δ) = ({eps_spent}, {delta_spent}), "
                f"more than ({epsilon}, {self.delta}); use "
                "calibration='tight' or a numeric alpha.")
        return plan, eig_plan
