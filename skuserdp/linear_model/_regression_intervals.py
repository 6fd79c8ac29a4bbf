"""User-level cluster-robust intervals of :class:`UserDPLinearRegression`.

Not from the three papers: spec ``intervals_and_weights.md`` §2.2 and §2.5
(RECONSTRUCTED there), measured in ``benchmarks/bench_regression_intervals.py``.

The estimator solves ``(Ã + Λ) β̂ = b̃`` with ``Ã``, ``b̃`` the noisy means
over users of the jointly clipped per-user moments ``A_i = c_i·mean_j x̃x̃ᵀ``
(the intercept's constant entry kept at 1) and ``b_i = c_i·mean_j x̃y``
(``c_i`` the clip factor), ``Λ`` the ridge. Its non-private analogue is the
least-squares fit with row weights ``1/m_i`` (each user weighs the same),
clustered by user. With ``g_i = b_i − A_i β̂`` (the user's score at the
released coefficients) and ``S = (1/n) Σ_i g_i g_iᵀ`` (the "meat"),

    β̂ − β ≈ Ā⁻¹[ ḡ + e_b − E_A β ] − (Ā + Λ)⁻¹Λβ,   Cov(ḡ) = S/n,

with ``e_b``, ``E_A`` the privacy noise of the released statistics (public
law). The fit spends a share ``ci_share`` of its budget on:

1. a private scale of the scores: the ``MEAT_QUANTILE`` quantile of the
   users' ``‖g_i‖`` (:func:`skuserdp.mechanisms.private_quantile`, one
   exponential-mechanism release, ``QUANTILE_SHARE`` of the interval's
   budget), times ``MEAT_RADIUS_FACTOR``, capped by the public bound of every
   ``‖g_i‖`` (:func:`score_bound`): the radius ``C``;
2. the meat: every ``g_i`` clipped radially to ``C``, and the mean of the
   upper triangles of ``g_i g_iᵀ`` (off-diagonal entries times √2, so that
   the ℓ2 norm is the Frobenius norm) released on the lattice: discrete
   Gaussian noise calibrated to the replace-one sensitivity ``√2·C²/n``
   (:func:`skuserdp.privacy.rank_one_psd_sum_sensitivity`: two rank-one
   matrices of Frobenius norm ``<= C²`` differ by at most ``√2·C²``) under
   zCDP; under pure DP the ℓ1 clip-and-noise release
   (:func:`skuserdp.mean.plan_clip_noise`, discrete Laplace). The release
   is projected onto the PSD cone (post-processing): ``Ŝ``.

The interval is the basic (reflected) parametric bootstrap of FWS (Ferrando,
Wang & Sheldon 2022) with the cluster meat: ``N_BOOTSTRAP`` draws of the
estimator's law in a world whose truth is the released fit,

    b* = Ã β̂ + Z* + e_b*,  A* = Ã + E_A*,  Z* ~ N(0, Ŝ/(n−1)),

``e_b*``, ``E_A*`` fresh noise of the statistics' law (Gaussian or Laplace
of the plan's standard deviation; the lattice is far finer), solved exactly
as the estimator solves (PSD projection, the ridge: for ``alpha="auto"`` a
fresh draw of the smallest-eigenvalue release and AdaSSP's rule). The draws
``θ*`` are mapped to the units of ``X`` and ``y`` by the public affine map
of the boxes and reflected, ``2θ̂ − θ*``: the percentiles of the reflected
draws are the basic bootstrap interval, which corrects the ridge's
shrinkage and the bias of the noisy inverse to first order. The draws use
a child ``SeedSequence`` of their own, independent of every release's noise.

Privacy: two releases, composed with the fit's; the bootstrap is
post-processing of released values only. Validity is asymptotic in the
number of users with the dimension fixed.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..inference import IntervalState
from ..mean._clip_noise import ClipNoisePlan, plan_clip_noise
from ..mechanisms import (
    DiscreteGaussianNoise,
    add_noise,
    calibrate_noise,
    choose_grid,
    private_quantile,
)
from ..mechanisms._lattice import encode_sum
from ..privacy import (
    PureDP,
    ZCDP,
    pure_to_zcdp,
    rank_one_psd_sum_sensitivity,
    split_off,
)
from ..utils._random import make_seed_sequence
from ._base import radial_clip_factors

__all__ = ["MeatPlan", "plan_meat", "score_bound", "user_scores", "release_meat",
           "meat_matrix", "meat_from_plan", "bootstrap_interval", "wald_interval",
           "noise_covariance", "N_BOOTSTRAP", "BOOTSTRAP_MAX_PARAMS"]

#: the private scale of the scores is this quantile of the users' ‖g_i‖
MEAT_QUANTILE = 0.9
#: ... times this factor (the clip radius of the scores)
MEAT_RADIUS_FACTOR = 2.0
#: share of the interval's budget spent on that quantile
QUANTILE_SHARE = 0.25
#: bootstrap draws
N_BOOTSTRAP = 2000
#: relative float slack of a computed ‖g‖² and of the computed entries of
#: ``g gᵀ`` (a few units of round-off, 2^-53 each, for p <= 300, widened)
MEAT_FLOAT_SLACK = 2.0 ** -40
#: float64 elements per working buffer
CHUNK_ELEMENTS = 2 ** 17


def _tri_layout(p):
    rows, cols = np.triu_indices(p)
    return rows, cols, np.where(rows == cols, 1.0, math.sqrt(2.0))


@dataclass(frozen=True)
class MeatPlan:
    """Public quantities of the meat release.

    Attributes
    ----------
    n_users, dim : int
        Public number of users and dimension p of the scores.
    radius : float
        The clip radius ``C`` of the scores (a released value).
    frobenius_bound : float
        ``F = C²`` widened for the float error of ``‖g‖``: bound on the
        Frobenius norm of every ``g gᵀ``.
    float_slack : float
        ℓ2 bound on the float error of every computed contribution.
    release : ClipNoisePlan
        The lattice release of the mean contribution (ball, grid, noise,
        sensitivity in grid units, loss).
    loss : ZCDP or PureDP
        Its privacy loss.
    """

    n_users: int
    dim: int
    radius: float
    frobenius_bound: float
    float_slack: float
    release: object
    loss: object

    @property
    def noise_variance(self):
        """Noise variance of one released coordinate of the mean."""
        return self.release.noise_variance


def plan_meat(n_users, dim, *, budget, radius, calibration="tight"):
    """Plan the release of the mean of ``vech√2(g gᵀ)``, ``‖g‖ <= radius``.

    Parameters
    ----------
    n_users, dim : int
        Public number of users and dimension of the scores.
    budget : ZCDP or PureDP
        The release's budget.
    radius : float
        Public (or released) clip radius ``C`` of the scores, ``> 0``.
    calibration : {"tight", "paper"}, default="tight"
        Passed to the pure-DP plan (unused there).

    Returns
    -------
    plan : MeatPlan

    Examples
    --------
    >>> from skuserdp.linear_model._regression_intervals import plan_meat
    >>> from skuserdp.privacy import ZCDP
    >>> plan = plan_meat(2000, 3, budget=ZCDP(0.01), radius=0.5)
    >>> plan.release.norm, plan.loss.rho <= 0.01
    ('l2', True)
    """
    n, p = int(n_users), int(dim)
    C = float(radius)
    if not (math.isfinite(C) and C > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}.")
    k = p * (p + 1) // 2
    F = C * C * (1.0 + MEAT_FLOAT_SLACK)
    slack = MEAT_FLOAT_SLACK * F
    if isinstance(budget, PureDP):
        # the ℓ1 ball of radius (F + s)·√k holds every contribution: the
        # generic ℓ1 clip-and-noise plan (sensitivity 2·its lattice radius)
        release = plan_clip_noise(n, k, budget=budget, radius=F + slack,
                                  calibration=calibration)
    elif isinstance(budget, ZCDP):
        grid = choose_grid(F + slack, k, n)
        sensitivity = rank_one_psd_sum_sensitivity(F, p, grid, float_slack=slack)
        noise = calibrate_noise(budget, sensitivity)
        release = ClipNoisePlan(n, k, F + slack, "l2", F + slack, grid, noise,
                                sensitivity, noise.privacy(sensitivity))
    else:
        raise TypeError("budget must be a ZCDP or PureDP loss.")
    return MeatPlan(n, p, C, F, slack, release, release.loss)


def score_bound(clip_radius, row_bound, op_bound, beta_norm, *, intercept):
    """Public bound on every user's ``‖g_i‖ = ‖b_i − A_i β‖``.

    Two bounds, the smaller is returned. (a) The joint clip: the released
    entries of ``(A_i, b_i)`` have ℓ2 norm ``<= r`` (``clip_radius``; for
    an ℓ1 clip its radius, which bounds the ℓ2 norm too) and the intercept's
    constant entry adds 1 to ``‖A_i‖_F²``, so with ``u = ‖b_i‖`` and
    ``w = ‖A_i‖_F``, ``u² + w² <= r² + [intercept]`` and
    ``‖g_i‖ <= u + w‖β‖ <= √(r² + [intercept])·√(1 + ‖β‖²)`` (Cauchy-Schwarz).
    (b) The box: ``‖b_i‖ <= row_bound`` (targets in ``[-1, 1]``) and
    ``‖A_i‖_op <= op_bound``: ``‖g_i‖ <= row_bound + op_bound·‖β‖``.
    Only the meat's utility depends on it: the scores are clipped to the
    released radius whatever this bound.
    """
    joint = math.hypot(float(clip_radius), 1.0 if intercept else 0.0) * math.hypot(
        1.0, float(beta_norm))
    box = float(row_bound) + float(op_bound) * float(beta_norm)
    return min(joint, box)


def user_scores(V, w, *, clip_radius, norm, drop_last_diagonal):
    """Every user's score ``g_i = b_i − A_i w`` of the clipped statistics.

    Parameters
    ----------
    V : ndarray of shape (n_users, n_stats)
        The users' statistics (``vech√2(S_u)`` then ``b_u``) as released by
        the estimator, before clipping. Not modified.
    w : ndarray of shape (p,)
        The released coefficients in the estimator's internal coordinates.
    clip_radius : float
        Radius of the statistics release's clipping ball.
    norm : {"l2", "l1"}
        Its norm.
    drop_last_diagonal : bool
        Whether ``V`` leaves out the intercept's constant entry (kept at 1,
        unclipped, as the estimator's solve does).

    Returns
    -------
    G : ndarray of shape (n_users, p)
    """
    w = np.asarray(w, dtype=np.float64)
    p = w.shape[0]
    rows, cols = np.triu_indices(p)
    if drop_last_diagonal:
        keep = ~((rows == p - 1) & (cols == p - 1))
        rows, cols = rows[keep], cols[keep]
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    n_tri = rows.shape[0]
    # (A w)_r = Σ_t E_t·P[t, r]: entry t at (rows_t, cols_t) and its mirror
    P = np.zeros((n_tri, p))
    P[np.arange(n_tri), rows] += w[cols]
    off = rows != cols
    P[np.flatnonzero(off), cols[off]] += w[rows[off]]
    P /= scale[:, None]
    n = V.shape[0]
    G = np.empty((n, p))
    step = max(1, CHUNK_ELEMENTS // max(V.shape[1], 1))
    for u0 in range(0, n, step):
        v = V[u0:u0 + step]
        c = radial_clip_factors(v, clip_radius, norm)
        g = v[:, n_tri:] * c[:, None] - (v[:, :n_tri] * c[:, None]) @ P
        if drop_last_diagonal:
            g[:, p - 1] -= w[p - 1]
        G[u0:u0 + step] = g
    return G


def private_score_radius(G, epsilon0, cap, random_state):
    """The clip radius of the scores: ``MEAT_RADIUS_FACTOR`` times the
    private ``MEAT_QUANTILE`` quantile of ``‖g_i‖`` (ε₀ exponential
    mechanism), at most ``cap``."""
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    q = private_quantile(norms, MEAT_QUANTILE, epsilon0, random_state=random_state)
    return min(MEAT_RADIUS_FACTOR * q, float(cap))


def split_interval_budget(budget):
    """``(ε₀ of the quantile, its loss, the meat's budget)`` from the
    interval's budget (ZCDP: ``split_off``, the quantile bounded-range; pure:
    a share of ε)."""
    eps0, rest = split_off(budget, QUANTILE_SHARE)
    if isinstance(budget, ZCDP):
        return eps0, pure_to_zcdp(eps0, bounded_range=True), rest
    return eps0, PureDP(eps0), rest


def meat_from_plan(G, plan, *, random_state=None):
    """Release the mean of ``vech√2(g gᵀ)`` of the clipped scores; returns the
    PSD-projected matrix ``Ŝ`` (post-processing).

    Parameters
    ----------
    G : ndarray of shape (n_users, p)
        The users' scores (:func:`user_scores`). Not modified.
    plan : MeatPlan
    random_state : SeedSequence, int or None
        Noise source.

    Returns
    -------
    S : ndarray of shape (p, p)
    """
    return meat_matrix(release_meat(G, plan, random_state=random_state))


def meat_matrix(released):
    """The PSD projection of the symmetric matrix whose upper triangle (row by
    row, off-diagonal entries times √2) is ``released``."""
    m = np.asarray(released, dtype=np.float64)
    p = int(round((math.sqrt(8 * m.shape[0] + 1) - 1) / 2))
    rows, cols, scale = _tri_layout(p)
    S = np.zeros((p, p))
    S[rows, cols] = m / scale
    S[cols, rows] = m / scale
    eigval, eigvec = np.linalg.eigh(S)
    return (eigvec * np.maximum(eigval, 0.0)) @ eigvec.T


def release_meat(G, plan, *, random_state=None):
    """The meat release itself: the noisy mean of the users' ``vech√2(g gᵀ)``
    (scores clipped radially to ``plan.radius``, rounded to the plan's
    lattice, summed exactly, integer noise), before any post-processing.

    Returns
    -------
    released : ndarray of shape (p(p+1)/2,)
    """
    n, p = G.shape
    if (n, p) != (plan.n_users, plan.dim):
        raise ValueError(f"G has shape {G.shape}; the plan is for "
                         f"{(plan.n_users, plan.dim)}.")
    rows, cols, scale = _tri_layout(p)
    rel = plan.release
    total = np.zeros(rows.shape[0], dtype=np.int64)
    step = max(1, CHUNK_ELEMENTS // rows.shape[0])
    for u0 in range(0, n, step):
        g = G[u0:u0 + step]
        norms = np.sqrt(np.einsum("ij,ij->i", g, g))
        with np.errstate(divide="ignore"):
            g = g * np.minimum(1.0, plan.radius / norms)[:, None]
        M = g[:, rows] * g[:, cols] * scale
        total += encode_sum(M, center=0.0, radius=rel.ball, grid=rel.grid,
                            norm=rel.norm)
    noisy = add_noise(total, rel.noise, make_seed_sequence(random_state))
    return rel.grid * (noisy.astype(np.float64) / n)


def _noise_draws(rng, shape, variance, law):
    """Continuous draws of a lattice noise's law (its grid is far finer than
    its scale): Gaussian, or Laplace of the same variance."""
    sd = math.sqrt(variance)
    if law == "gaussian":
        return rng.normal(0.0, sd, size=shape)
    return rng.laplace(0.0, sd / math.sqrt(2.0), size=shape)


def _solve_like_the_fit(A, b, ok):
    """``lstsq(A_i, b_i)`` for a stack: one batched solve for the matrices
    known to be well conditioned (``ok``: the same solution up to round-off),
    ``lstsq`` (the minimum-norm solution, as the fit) for the others."""
    out = np.empty(b.shape)
    if ok.any():
        out[ok] = np.linalg.solve(A[ok], b[ok][..., None])[..., 0]
    for i in np.flatnonzero(~ok):
        out[i] = np.linalg.lstsq(A[i], b[i], rcond=None)[0]
    return out


def noise_law(noise):
    """``"gaussian"`` or ``"laplace"``: the law of a lattice noise object."""
    return "gaussian" if isinstance(noise, DiscreteGaussianNoise) else "laplace"


def noise_covariance(beta, variance, *, drop_last_diagonal):
    """Covariance of ``e_b − E_A β``: the privacy noise of the released
    statistics at ``β`` (internal coordinates).

    Every released coordinate has noise of variance ``σ²`` (``variance``):
    the entries of ``b`` and the upper triangle of ``A`` with its
    off-diagonal entries times √2, so ``Var(E_rc) = σ²`` on the diagonal,
    ``σ²/2`` off it (``E_rc = E_cr``, one draw), and 0 for the intercept's
    constant entry when it is not released. With ``(E β)_r = Σ_c E_rc β_c``:
    ``Cov_rr = Σ_c Var(E_rc) β_c²`` and ``Cov_rs = Var(E_rs) β_r β_s``
    (``r ≠ s``: only the entry shared by rows r and s), plus ``σ²I`` from
    ``e_b``.
    """
    beta = np.asarray(beta, dtype=np.float64)
    p = beta.shape[0]
    V = np.full((p, p), variance / 2.0)
    np.fill_diagonal(V, variance)
    if drop_last_diagonal:
        V[p - 1, p - 1] = 0.0
    cov = V * np.outer(beta, beta)
    np.fill_diagonal(cov, V @ (beta * beta))
    return cov + variance * np.eye(p)


def wald_interval(*, S_stats, w, meat, n_users, stats_variance, drop_last_diagonal,
                  ridge, to_natural, estimate):
    """The closed-form (linearised) interval of the fast path for many
    parameters: ``Var(θ̂) ≈ J M⁻¹ (Ŝ/(n−1) + Σ_e) M⁻¹ Jᵀ`` with ``M = Ã + Λ``,
    ``Σ_e`` :func:`noise_covariance` at the released ``β̂`` and ``J`` the
    linear part of the public map to natural units; normal quantiles. No
    correction of the ridge's shrinkage or of the noisy inverse's bias."""
    p = w.shape[0]
    J = to_natural(np.eye(p)) - to_natural(np.zeros((1, p)))
    inv = np.linalg.pinv(S_stats + np.diag(ridge))
    left = J.T @ inv
    sampling = left @ (meat / max(int(n_users) - 1, 1)) @ left.T
    noise = left @ noise_covariance(w, stats_variance,
                                    drop_last_diagonal=drop_last_diagonal) @ left.T
    zero = np.zeros_like(np.asarray(estimate, dtype=np.float64))
    return IntervalState(
        np.asarray(estimate, dtype=np.float64),
        np.sqrt(np.maximum(np.diag(sampling), 0.0)),
        np.sqrt(np.maximum(np.diag(noise), 0.0)), zero, zero, method="wald",
        estimand=ESTIMAND)


ESTIMAND = ("the population coefficients of the per-user-mean-weighted least "
            "squares problem (row weights 1/m_i), of the clipped statistics")

#: above this many parameters the interval is the closed-form Wald fast path
#: (the bootstrap's 2000 eigendecompositions of p × p matrices are too slow)
BOOTSTRAP_MAX_PARAMS = 30


def bootstrap_interval(*, S_stats, w, meat, n_users, stats_variance, stats_law,
                       drop_last_diagonal, ridge, to_natural, estimate,
                       eigen=None, n_boot=N_BOOTSTRAP, random_state=None):
    """The basic parametric bootstrap of the released fit (module notes).

    Parameters
    ----------
    S_stats : ndarray of shape (p, p)
        The released second-moment matrix after its PSD projection (the
        intercept's constant entry included).
    w : ndarray of shape (p,)
        The released coefficients (internal coordinates).
    meat : ndarray of shape (p, p)
        The released meat ``Ŝ`` (PSD).
    n_users : int
    stats_variance : float
        Noise variance of one released coordinate of the statistics' mean.
    stats_law : {"gaussian", "laplace"}
    drop_last_diagonal : bool
        Whether the intercept's constant entry was left out of the release.
    ridge : ndarray of shape (p,)
        The ridge of the fit (used by every draw without ``eigen``).
    to_natural : callable
        ``W (B, p) -> θ (B, k)``: the public affine map to ``coef_`` then
        ``intercept_``.
    estimate : ndarray of shape (k,)
        The released ``θ̂ = to_natural(w)``.
    eigen : dict, default=None
        For ``alpha="auto"``: ``noise_std``, ``law``, ``tail`` and
        ``noise_bound`` of the smallest-eigenvalue release and AdaSSP's rule.
    n_boot : int
    random_state : SeedSequence, int or None
        Source of the draws (independent of every release's noise).

    Returns
    -------
    state : IntervalState
        With reflected draws, in natural units.
    """
    p = w.shape[0]
    n = int(n_users)
    rows, cols = np.triu_indices(p)
    if drop_last_diagonal:
        keep = ~((rows == p - 1) & (cols == p - 1))
        rows, cols = rows[keep], cols[keep]
    diag = rows == cols
    n_tri = rows.shape[0]
    rng = np.random.default_rng(make_seed_sequence(random_state))
    vals, vecs = np.linalg.eigh(meat / max(n - 1, 1))
    root = vecs * np.sqrt(np.maximum(vals, 0.0))  # Cov(Z*) = root rootᵀ
    b_center = S_stats @ w
    if eigen is not None:
        lam_true = float(np.linalg.eigvalsh(S_stats)[0])
    draws = np.empty((n_boot, p))
    chunk = max(1, min(n_boot, CHUNK_ELEMENTS // (p * p)))
    for d0 in range(0, n_boot, chunk):
        k = min(chunk, n_boot - d0)
        Z = rng.standard_normal((k, p)) @ root.T
        e = _noise_draws(rng, (k, n_tri + p), stats_variance, stats_law)
        E = np.zeros((k, p, p))
        ent = np.where(diag, e[:, :n_tri], e[:, :n_tri] / math.sqrt(2.0))
        E[:, rows, cols] = ent
        E[:, cols, rows] = ent
        A = S_stats[None] + E
        ev, evec = np.linalg.eigh(A)
        ev = np.maximum(ev, 0.0)
        A = (evec * ev[:, None, :]) @ evec.transpose(0, 2, 1)
        b = b_center[None] + Z + e[:, n_tri:]
        if eigen is None:
            R = np.broadcast_to(np.asarray(ridge, dtype=np.float64), (k, p))
        else:
            lam = lam_true + _noise_draws(rng, (k,), eigen["noise_std"] ** 2,
                                          eigen["law"])
            alpha = np.maximum(0.0, eigen["noise_bound"]
                               - np.maximum(0.0, lam - eigen["tail"]))
            R = np.repeat(alpha[:, None], p, axis=1)
            if drop_last_diagonal:
                R[:, -1] = 0.0
        A[:, np.arange(p), np.arange(p)] += R
        # the ridge (>= 0) only raises the spectrum: λ_min(A + R) >= ev[0]
        top = ev[:, -1] + R.max(axis=1)
        ok = ev[:, 0] > 1e-10 * np.maximum(top, 1e-300)
        draws[d0:d0 + k] = _solve_like_the_fit(A, b, ok)
    theta = to_natural(draws)
    estimate = np.asarray(estimate, dtype=np.float64)
    reflected = 2.0 * estimate - theta
    # the sandwich part alone (linearised at S_stats): the Wald cross-check
    J = to_natural(np.eye(p)) - to_natural(np.zeros((1, p)))
    inv = np.linalg.pinv(S_stats + np.diag(ridge))
    cov = J.T @ inv @ (meat / max(n - 1, 1)) @ inv @ J
    sampling = np.sqrt(np.maximum(np.diag(cov), 0.0))
    total = reflected.std(axis=0, ddof=1)
    noise = np.sqrt(np.maximum(total ** 2 - sampling ** 2, 0.0))
    zero = np.zeros_like(estimate)
    return IntervalState(
        estimate, sampling, noise, zero, zero, draws=reflected, method="bootstrap",
        estimand=ESTIMAND)
