"""Sensitivity of the smallest eigenvalue of a sum of per-user PSD matrices.

Used by the adaptive ridge of :class:`skuserdp.linear_model.UserDPLinearRegression`
(AdaSSP, Wang 2018 [W18]_): a private estimate of ``λ_min`` of the users'
summed second-moment matrices.

The argument (replace-one users, ``n`` public). Every user contributes a
symmetric ``p × p`` matrix ``P_u`` that is positive semi-definite with
``λ_max(P_u) <= L``. For two such matrices ``−P_b ⪯ P_a − P_b ⪯ P_a``, so
``‖P_a − P_b‖_op <= max(λ_max(P_a), λ_max(P_b)) <= L``: *no factor 2*, as
the contributions are PSD (around the centre 0, which is itself PSD).
Eigenvalues are 1-Lipschitz in the operator norm (Weyl), so replacing one
user moves ``λ_min(Σ_u P_u)`` by at most ``L``.

On the lattice. Each contribution is computed in floating point
(``P̃_u``, within ``float_slack`` of ``P_u`` in Frobenius norm), divided by
a power-of-two ``grid`` and rounded entry-wise: ``K_u = rint(P̃_u/grid)``,
so ``K_u = P_u/grid + E_u`` with ``‖E_u‖_op <= ‖E_u‖_F <= p/2 +
float_slack/grid``. The integer sum ``T = Σ_u K_u`` is exact (int64, below
2^52, hence exact in float64 too). Then, in grid units,

``|λ_min(T) − λ_min(T')| <= ‖K_a − K_b‖_op <= L/grid + 2(p/2 + float_slack/grid)``.

``λ_min(T)`` is computed by a backward-stable symmetric eigensolver
(LAPACK): the computed value is within ``c·u·‖T‖₂`` of the exact one, with
``u = 2^-53`` and ``c`` a modest function of ``p`` ([ABB99]_ §4.7; O(p) in
practice, at most O(p²) for Householder tridiagonalisation [H02]_ §8.3).
We take ``c = 4p²`` and ``‖T‖₂ <= n(L/grid + p/2 + float_slack/grid)``;
both neighbouring computations contribute. Finally the computed value is
rounded to an integer before integer noise is added, which widens the
sensitivity by 1 (:func:`lattice_widened_sensitivity` with grid 1).

References
----------
.. [W18] Y.-X. Wang. Revisiting differentially private linear regression:
   optimal and adaptive prediction & estimation in unbounded domain. UAI 2018.
.. [ABB99] E. Anderson et al. LAPACK Users' Guide, 3rd ed., SIAM 1999.
.. [H02] N. Higham. Accuracy and Stability of Numerical Algorithms, 2nd ed.,
   SIAM 2002.
"""

import math

from ._budget import _check_nonneg_finite as _nonneg
from ._budget import _check_positive_finite as _positive
from ._sensitivity import lattice_widened_sensitivity

__all__ = ["psd_min_eigenvalue_sensitivity", "second_moment_bounds"]

#: relative float error allowed for a computed per-user second-moment matrix
#: (see :func:`second_moment_bounds`)
SECOND_MOMENT_FLOAT_SLACK = 2.0 ** -20

_UNIT_ROUNDOFF = 2.0 ** -53


def second_moment_bounds(row_bound, clip_radius=math.inf, *, constant_entry=False):
    """λ_max bound and float slack of one user's clipped second-moment matrix.

    The matrix is ``S = mean_j x_j x_jᵀ`` over the user's rows, with
    ``‖x_j‖ <= row_bound``; with ``constant_entry`` the last coordinate of
    every row is the constant 1 (an intercept), whose diagonal entry of
    ``S`` is the constant 1. Clipping multiplies every *other* entry by a
    factor ``c ∈ [0, 1]`` so that they have ℓ2 norm ``<= clip_radius``.

    * ``S`` is PSD and stays PSD when clipped: without the constant entry it
      is ``c·S``; with it, ``S' = [[cA, cm], [cmᵀ, 1]]`` whose Schur
      complement ``c(A − c·mmᵀ) ⪰ c(A − mmᵀ)`` is a covariance matrix.
    * ``λ_max(S') <= tr(S') <= mean_j ‖x_j‖² <= row_bound²`` and
      ``λ_max(S') <= ‖S'‖_F <= √(clip_radius² + [constant_entry])``.

    The float slack bounds, in Frobenius norm, the distance between ``S'``
    as computed (any summation order over ``m`` rows, then a few scalings)
    and its exact value: ``(γ_m + (p² + 10)u)·row_bound²`` (Higham §3.5),
    at most ``2^-20·row_bound²`` for users of fewer than 2^31 rows and
    ``p <= 2^14``. When the clip factor itself is computed in floating point,
    the exact matrix it scales may exceed the clip radius by as much: use
    ``op_bound + float_slack`` as its ``λ_max`` bound.

    Parameters
    ----------
    row_bound : float
        Public bound on the ℓ2 norm of every (augmented) row, ``> 0``.
    clip_radius : float, default=inf
        Public ℓ2 bound of the clipped released entries (for an ℓ1 clip,
        its radius, which bounds the ℓ2 norm too).
    constant_entry : bool, default=False
        Whether the last coordinate is the constant 1.

    Returns
    -------
    op_bound : float
        Bound on ``λ_max`` of every user's clipped matrix.
    float_slack : float
        Bound on the Frobenius error of its computed value.

    Examples
    --------
    >>> from skuserdp.privacy import second_moment_bounds
    >>> op, slack = second_moment_bounds(2.0, 1.0, constant_entry=True)
    >>> round(op, 6), slack == 4.0 * 2.0 ** -20
    (1.414214, True)
    """
    b2 = _positive("row_bound", row_bound) ** 2
    radius = float(clip_radius)
    if not radius > 0:
        raise ValueError(f"clip_radius must be > 0, got {clip_radius!r}.")
    frobenius = math.hypot(radius, 1.0 if constant_entry else 0.0)
    return min(b2, frobenius), SECOND_MOMENT_FLOAT_SLACK * b2


def psd_min_eigenvalue_sensitivity(op_bound, dim, n_users, grid, *, float_slack=0.0):
    """Replace-one sensitivity, in grid units, of a lattice ``λ_min`` release.

    The release is ``rint(λ̂_min(T))`` with ``T = Σ_u rint(P̃_u/grid)`` the
    exact integer sum of the users' rounded PSD matrices (see the module
    notes for the derivation):

    ``Δ = L/grid + 2(p/2 + s/grid) + 2·4p²u·n(L/grid + p/2 + s/grid) + 1``

    with ``L = op_bound``, ``s = float_slack``, ``p = dim``, ``u = 2^-53``.

    Parameters
    ----------
    op_bound : float
        Bound ``L`` on ``λ_max`` of every user's PSD matrix, ``> 0``.
    dim : int
        Matrix dimension ``p``, ``>= 1``.
    n_users : int
        Number of users (public under replace-one), ``>= 1``.
    grid : float
        Power-of-two grid step of the entries, ``> 0``.
    float_slack : float, default=0.0
        Frobenius bound on the float error of each computed matrix.

    Returns
    -------
    sensitivity : float
        In grid units, for the integer released value.

    Examples
    --------
    >>> from skuserdp.privacy import psd_min_eigenvalue_sensitivity
    >>> round(psd_min_eigenvalue_sensitivity(1.0, 3, 1000, 2.0 ** -10), 6)
    1028.0
    """
    L = _positive("op_bound", op_bound)
    s = _nonneg("float_slack", float_slack)
    grid = _positive("grid", grid)
    if math.frexp(grid)[0] != 0.5:
        raise ValueError(f"grid must be a power of two, got {grid!r}.")
    dim, n_users = int(dim), int(n_users)
    if dim < 1 or n_users < 1:
        raise ValueError(f"dim and n_users must be >= 1, got {dim}, {n_users}.")
    rounding = dim / 2.0 + s / grid  # ‖E_u‖_op per user
    norm_T = n_users * (L / grid + rounding)
    solver = 4.0 * dim * dim * _UNIT_ROUNDOFF * norm_T
    exact = L / grid + 2.0 * rounding + 2.0 * solver
    return lattice_widened_sensitivity(exact, 1.0, 1, "l2")
