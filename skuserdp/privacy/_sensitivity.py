"""Replace-one-user sensitivities, including the widening for lattice rounding.

The neighbouring relation is user-level replace-one: the number of users n is
public, and one user's entire data may change. Every estimator first maps each
user to one bounded contribution (a per-user statistic, clipped), so the
sensitivity of a sum of contributions that each lie in a ball of radius R
(in some norm, around a public centre) is ``2R`` in that norm, and of their
mean ``2R/n``.

Lattice rounding. A contribution rounded coordinate-wise to the integer
lattice (in units of a power-of-two grid) moves by at most ½ per coordinate,
so its norm grows by at most ``√d/2`` (ℓ2), ``d/2`` (ℓ1) or ``1/2`` (ℓ∞). The
same widening, doubled, applies when a whole statistic is rounded: its two
neighbouring values each move by at most half a grid step per coordinate.
"""

import math

from ._budget import _check_count
from ._budget import _check_nonneg_finite as _nonneg

__all__ = [
    "NORMS",
    "replace_one_sum_sensitivity",
    "replace_one_mean_sensitivity",
    "replace_one_trimmed_sum_sensitivity",
    "replace_one_trimmed_mean_sensitivity",
    "replace_one_histogram_sensitivity",
    "lattice_contribution_radius",
    "lattice_widened_sensitivity",
    "linf_ball_l2_radius",
    "replace_one_count_sensitivity",
    "squared_deviation_ball",
    "rank_one_psd_sum_sensitivity",
]

NORMS = ("l1", "l2", "linf")


def _check_norm(norm):
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}.")


def _rounding_term(dim, norm):
    _check_norm(norm)
    dim = _check_count("dim", dim)
    return {"l2": math.sqrt(dim), "l1": float(dim), "linf": 1.0}[norm]


def replace_one_sum_sensitivity(radius):
    """Sensitivity ``2R`` of a sum of per-user contributions of norm ``<= R``.

    Replacing one user swaps one contribution ``a`` for ``b`` with
    ``||a||, ||b|| <= R``; the sum moves by ``||a - b|| <= 2R`` (any norm).

    Parameters
    ----------
    radius : float
        Bound R on the norm of every (centred) contribution.

    Returns
    -------
    sensitivity : float

    Examples
    --------
    >>> from skuserdp.privacy import replace_one_sum_sensitivity
    >>> replace_one_sum_sensitivity(1.5)
    3.0
    """
    return 2.0 * _nonneg("radius", radius)


def replace_one_histogram_sensitivity(n_histograms=1, norm="l2"):
    """Sensitivity of ``k`` histograms in which every user lies in one cell each.

    Each of the ``k`` histograms (e.g. one per column) puts every user in
    exactly one of its cells. Replacing one user (user level, number of users
    public) removes one unit from one cell and adds one unit to another, in
    every histogram at once: the vector of all counts moves by at most ``2``
    per histogram in ℓ1 (``2k``), ``√2`` per histogram in ℓ2 (``√(2k)``) and
    ``1`` in ℓ∞. Under add/remove the ℓ1 and ℓ2 values would be ``k`` and
    ``√k``; they do not apply here.

    Parameters
    ----------
    n_histograms : int, default=1
        Number of histograms released together, ``>= 1``.
    norm : {"l1", "l2", "linf"}, default="l2"
        The norm of the sensitivity.

    Returns
    -------
    sensitivity : float
        ``2k`` (ℓ1), ``√(2k)`` (ℓ2) or ``1`` (ℓ∞).

    Examples
    --------
    >>> from skuserdp.privacy import replace_one_histogram_sensitivity
    >>> replace_one_histogram_sensitivity(10, "l1")
    20.0
    >>> replace_one_histogram_sensitivity(8, "l2")
    4.0
    >>> round(replace_one_histogram_sensitivity(), 6)  # one histogram, l2
    1.414214
    """
    _check_norm(norm)
    k = _check_count("n_histograms", n_histograms)
    return {"l1": 2.0 * k, "l2": math.sqrt(2.0 * k), "linf": 1.0}[norm]


def replace_one_mean_sensitivity(radius, n_users):
    """Sensitivity ``2R/n`` of the mean of n per-user contributions.

    Parameters
    ----------
    radius : float
        Bound R on the norm of every (centred) contribution.
    n_users : int
        Number of users (public under replace-one), ``>= 1``.

    Returns
    -------
    sensitivity : float

    Examples
    --------
    >>> from skuserdp.privacy import replace_one_mean_sensitivity
    >>> replace_one_mean_sensitivity(1.0, 100)
    0.02
    """
    n_users = _check_count("n_users", n_users)
    return replace_one_sum_sensitivity(radius) / n_users


def _check_trim(n_users, n_trim):
    n_users = _check_count("n_users", n_users)
    if isinstance(n_trim, bool) or int(n_trim) != n_trim or n_trim < 0:
        raise ValueError(f"n_trim must be an integer >= 0, got {n_trim!r}.")
    n_trim = int(n_trim)
    if 2 * n_trim >= n_users:
        raise ValueError(
            f"n_trim={n_trim} trims 2*n_trim >= n_users={n_users} users: "
            "nothing would be kept. Use 2*n_trim < n_users.")
    return n_users, n_trim


def replace_one_trimmed_sum_sensitivity(radius, n_users, n_trim):
    """Sensitivity ``2R`` of a coordinate-wise trimmed sum of n contributions.

    Per coordinate j, the trimmed sum ``S_j`` is the sum of the order
    statistics ``k+1 .. n-k`` of the users' j-th coordinates (the ``k``
    lowest and ``k`` highest dropped). As a function of one user's value it
    is continuous and piecewise linear with slope 0 or 1, so replacing that
    user's vector ``a`` by ``b`` moves ``S_j`` by at most ``|a_j - b_j|``,
    and the whole vector ``S`` by at most ``||a - b|| <= 2R`` in every norm
    (ℓ1, ℓ2, ℓ∞) in which the contributions lie in a ball of radius R around
    a public centre: the same bound as the plain sum. Trimming buys
    robustness, not privacy (:func:`replace_one_trimmed_mean_sensitivity`).

    Parameters
    ----------
    radius : float
        Bound R on the norm of every (centred) contribution.
    n_users : int
        Number of users (public under replace-one), ``>= 1``.
    n_trim : int
        Users dropped per side per coordinate, ``2·n_trim < n_users``.

    Returns
    -------
    sensitivity : float
        ``2·radius``: the largest ℓ2 change of the kept sums when one user's
        vector is replaced.

    Examples
    --------
    >>> from skuserdp.privacy import replace_one_trimmed_sum_sensitivity
    >>> replace_one_trimmed_sum_sensitivity(1.0, 100, 10)
    2.0
    """
    _check_trim(n_users, n_trim)
    return replace_one_sum_sensitivity(radius)


def replace_one_trimmed_mean_sensitivity(radius, n_users, n_trim):
    """Sensitivity ``2R/(n - 2k)`` of a coordinate-wise trimmed mean.

    The trimmed mean divides the trimmed sum
    (:func:`replace_one_trimmed_sum_sensitivity`) by the public number of
    kept users ``n - 2k``. This is *more* than the plain mean's ``2R/n``
    (:func:`replace_one_mean_sensitivity`): trimming costs a factor
    ``n/(n - 2k)`` in noise and buys only robustness to up to ``k``
    arbitrary users.

    Parameters
    ----------
    radius : float
        Bound R on the norm of every (centred) contribution.
    n_users : int
        Number of users (public under replace-one), ``>= 1``.
    n_trim : int
        Users dropped per side per coordinate, ``2·n_trim < n_users``.

    Returns
    -------
    sensitivity : float
        ``2·radius/(n_users − 2·n_trim)``: the largest ℓ2 change of the
        trimmed mean when one user's vector is replaced.

    Examples
    --------
    >>> from skuserdp.privacy import replace_one_trimmed_mean_sensitivity
    >>> replace_one_trimmed_mean_sensitivity(1.0, 48, 8)
    0.0625
    """
    n_users, n_trim = _check_trim(n_users, n_trim)
    return replace_one_trimmed_sum_sensitivity(radius, n_users, n_trim) / (
        n_users - 2 * n_trim)


def lattice_contribution_radius(radius_units, dim, norm):
    """Norm bound of a contribution after rounding to the integer lattice.

    Parameters
    ----------
    radius_units : float
        Norm bound of the contribution before rounding, in grid units.
    dim : int
        Number of coordinates.
    norm : {"l1", "l2", "linf"}
        The norm of the bound.

    Returns
    -------
    radius : float
        ``radius_units + √d/2`` (ℓ2), ``+ d/2`` (ℓ1) or ``+ 1/2`` (ℓ∞).

    Examples
    --------
    >>> from skuserdp.privacy import lattice_contribution_radius
    >>> lattice_contribution_radius(1024.0, 4, "l2")
    1025.0
    """
    return _nonneg("radius_units", radius_units) + 0.5 * _rounding_term(dim, norm)


def lattice_widened_sensitivity(sensitivity, grid, dim, norm):
    """Sensitivity of a statistic after rounding it to a grid of step ``grid``.

    Parameters
    ----------
    sensitivity : float
        Sensitivity of the unrounded statistic (in its own units).
    grid : float
        Grid step (a power of two), ``> 0``.
    dim : int
        Number of coordinates of the statistic.
    norm : {"l1", "l2", "linf"}
        Norm of the sensitivity.

    Returns
    -------
    sensitivity : float
        ``sensitivity + grid·√d`` (ℓ2), ``+ grid·d`` (ℓ1) or ``+ grid`` (ℓ∞),
        in the statistic's units.

    Examples
    --------
    >>> from skuserdp.privacy import lattice_widened_sensitivity
    >>> lattice_widened_sensitivity(1.0, 2.0 ** -10, 4, "l2")
    1.001953125
    """
    grid = float(grid)
    if not (math.isfinite(grid) and grid > 0):
        raise ValueError(f"grid must be a finite number > 0, got {grid!r}.")
    return _nonneg("sensitivity", sensitivity) + grid * _rounding_term(dim, norm)


def linf_ball_l2_radius(radius, dim):
    """ℓ2 radius of the ℓ∞ ball of radius ``radius`` in ``dim`` dimensions.

    A contribution whose every coordinate is at most ``radius`` from the
    centre lies within ℓ2 distance ``radius·√dim``; the replace-one ℓ2
    sensitivity of a sum of such contributions is twice that.

    Parameters
    ----------
    radius : float
        ℓ∞ radius, ``>= 0``.
    dim : int
        Number of coordinates, ``>= 1``.

    Returns
    -------
    radius : float
        ``radius·√dim``.

    Examples
    --------
    >>> from skuserdp.privacy import linf_ball_l2_radius
    >>> linf_ball_l2_radius(1.5, 16)
    6.0
    """
    return _nonneg("radius", radius) * _rounding_term(dim, "l2")


def replace_one_count_sensitivity(n_counts, norm):
    """Sensitivity of ``k`` counts of users, each user counted at most once in each.

    E.g. per column, the number of users whose mean lies outside the column's
    box. Replacing one user (user level, number of users public) changes
    each count by at most 1, all of them at once: ``k`` in ℓ1, ``√k`` in ℓ2
    and ``1`` in ℓ∞ (the same under add/remove).

    Parameters
    ----------
    n_counts : int
        Number of counts released together, ``>= 1``.
    norm : {"l1", "l2", "linf"}
        The norm of the sensitivity.

    Returns
    -------
    sensitivity : float

    Examples
    --------
    >>> from skuserdp.privacy import replace_one_count_sensitivity
    >>> replace_one_count_sensitivity(9, "l1"), replace_one_count_sensitivity(9, "l2")
    (9.0, 3.0)
    """
    _check_norm(norm)
    k = _check_count("n_counts", n_counts)
    return {"l1": float(k), "l2": math.sqrt(k), "linf": 1.0}[norm]


def squared_deviation_ball(dim, geometry, norm):
    """A ball holding every user's normalised squared deviation (interval releases).

    The user-level confidence intervals of the mean estimators release a
    private second moment ``(1/n) Σ_i q_i`` of ``q_i = ((v_i − θ)/s)∘²``
    (coordinate-wise squares), where ``v_i`` is user i's clipped mean and
    ``θ`` a point already released:

    * ``geometry="box"``: ``v_i`` clipped to the box ``[-1, 1]^d``, ``θ`` in
      it, and ``s_j = 1 + |θ_j|`` per coordinate, so ``q_i ∈ [0, 1]^d``: the
      ball around ``½·1`` of radius ``√d/2`` (ℓ2) or ``d/2`` (ℓ1);
    * ``geometry="ball"``: ``v_i`` clipped to an ℓ2 ball of radius ``r``
      around ``c`` and ``s = r + ‖θ − c‖₂`` (one number), so ``q_i ≥ 0`` with
      ``Σ_j q_ij = ‖v_i − θ‖²/s² ≤ 1``: inside the ℓ2 (and ℓ1) unit ball
      around the origin; for ``d ≤ 3`` (ℓ2) and ``d = 1`` (ℓ1) the ball
      around ``½·1`` of radius ``√d/2`` (``d/2``) is smaller.

    Replacing one user moves one ``q_i`` inside the ball, so the sum moves by
    at most twice the radius (:func:`replace_one_sum_sensitivity`); the
    lattice widening is added by the release's plan.

    Parameters
    ----------
    dim : int
        Number of coordinates, ``>= 1``.
    geometry : {"box", "ball"}
        The clipping set of the users' means (above).
    norm : {"l1", "l2"}
        The norm of the ball.

    Returns
    -------
    center : float
        Every coordinate of the ball's centre.
    radius : float
        Its radius in ``norm``.

    Examples
    --------
    >>> from skuserdp.privacy import squared_deviation_ball
    >>> squared_deviation_ball(4, "box", "l2"), squared_deviation_ball(4, "box", "l1")
    ((0.5, 1.0), (0.5, 2.0))
    >>> squared_deviation_ball(9, "ball", "l2"), squared_deviation_ball(2, "ball", "l2")
    ((0.0, 1.0), (0.5, 0.7071067811865476))
    """
    d = _check_count("dim", dim)
    if norm not in ("l1", "l2"):
        raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}.")
    half = math.sqrt(d) / 2.0 if norm == "l2" else d / 2.0
    if geometry == "box":
        return 0.5, half
    if geometry == "ball":
        return (0.5, half) if half < 1.0 or d == 1 else (0.0, 1.0)
    raise ValueError(f"geometry must be 'box' or 'ball', got {geometry!r}.")


def rank_one_psd_sum_sensitivity(frobenius_bound, dim, grid, *, float_slack=0.0):
    """Replace-one ℓ2 sensitivity, in grid units, of a lattice sum of ``g gᵀ``.

    Every user contributes one rank-one PSD matrix ``g_u g_uᵀ`` with
    ``‖g_u‖² <= F`` (``frobenius_bound``), released as its upper triangle
    with the off-diagonal entries times √2 (so that the ℓ2 norm of the
    vector is the Frobenius norm of the matrix), computed in floating point
    within ``float_slack`` of the exact vector (ℓ2), divided by the
    power-of-two ``grid`` and rounded to the integer lattice. Used by the
    cluster-robust "meat" of
    :class:`~skuserdp.linear_model.UserDPLinearRegression`'s confidence
    intervals.

    The argument. For two users ``g`` and ``h``,
    ``‖ggᵀ − hhᵀ‖_F² = ‖g‖⁴ + ‖h‖⁴ − 2(gᵀh)² <= 2F²``: the exact
    contributions differ by at most ``√2·F``, not ``2F`` (the generic
    :func:`replace_one_sum_sensitivity` of a ball of radius F). Each
    computed contribution is within ``float_slack`` of its exact value and
    its rounding moves it by at most ``√k/2`` grid steps (``k = dim(dim+1)/2``
    entries), so the two integer vectors, hence the exact integer sums,
    differ by at most

    ``Δ = √2·F/grid + 2·(√k/2 + float_slack/grid)``.

    Parameters
    ----------
    frobenius_bound : float
        Bound ``F`` on ``‖g_u‖²`` (the Frobenius norm of ``g_u g_uᵀ``),
        ``>= 0``.
    dim : int
        Dimension of ``g_u``, ``>= 1``.
    grid : float
        Power-of-two grid step, ``> 0``.
    float_slack : float, default=0.0
        ℓ2 bound on the float error of each computed contribution.

    Returns
    -------
    sensitivity : float
        In grid units, for :func:`~skuserdp.mechanisms.calibrate_noise`.

    Examples
    --------
    >>> from skuserdp.privacy import rank_one_psd_sum_sensitivity
    >>> round(rank_one_psd_sum_sensitivity(1.0, 2, 2.0 ** -10) - 2 ** 10.5, 6)  # √3
    1.732051
    """
    F = _nonneg("frobenius_bound", frobenius_bound)
    slack = _nonneg("float_slack", float_slack)
    grid = float(grid)
    if not (math.isfinite(grid) and grid > 0 and math.frexp(grid)[0] == 0.5):
        raise ValueError(f"grid must be a positive power of two, got {grid!r}.")
    d = _check_count("dim", dim)
    k = d * (d + 1) // 2
    return math.sqrt(2.0) * F / grid + 2.0 * (0.5 * _rounding_term(k, "l2")
                                              + slack / grid)
