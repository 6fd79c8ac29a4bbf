"""The concentration radius τ: rules from public assumptions, or a private estimate.

Levy et al. [LSA+21]_ assume τ is known (docs: :ref:`papers-levy`,
:ref:`papers-levy-radius`). τ must never be computed from the private data for
free; skuserdp offers three ways to obtain it:

* **Bounded rows** (Corollary 1). Rows lie in the public box
  ``[-bound, bound]^d`` and every user has at least ``m`` rows
  (``samples_per_user``). The paper's radius ``B√(ln(2n/γ)/(2m))`` is too
  small (:ref:`papers-levy-radius`: even one
  coordinate of ±B coin flips violates it), so
  both calibrations use McDiarmid's inequality: the norm ``‖x̄_u − μ‖`` of a
  mean of m independent rows has bounded differences ``2‖bound‖₂/m`` and
  expectation at most ``‖bound‖₂/√m``, so with ``R = ‖bound‖₂``, every user
  is within ``τ = R(1 + √(2 ln(n/γ)))/√m`` of μ with probability ≥ 1 − γ.
* **Sub-Gaussian rows** (Corollary 5). Rows are σ-sub-Gaussian vectors, so
  user means are (σ/√m)-sub-Gaussian. Paper: ``τ = (σ/√m)√(d ln(2n/γ))``;
  tight: Hsu–Kakade–Zhang, ``τ = (σ/√m)√(d + 2√(dt) + 2t)``, ``t = ln(n/γ)``.
* **Private estimate** (``tau="auto"``; not in the paper, :ref:`papers-levy-tau-auto`).
  Users are paired by a random permutation drawn independently of the data
  and the ℓ2 distances of the ⌊n/2⌋ pairs are computed. Replacing one user
  changes one pair distance, so every count of pairs below or above a fixed
  radius moves by at most 1. Two exponential mechanisms, each at ε/2 and
  with score sensitivity 1, pick radii from the public geometric grid
  ``r_j = 2R·2^(-j/2)``, ``j = 0..J``:

  1. the grid interval ``(r_{j+1}, r_j]`` holding the *median* pair
     distance: score minus the number of pairs that would have to move for
     the interval to hold it, ``−max(c_{j+1} − ⌊n/2⌋/2, ⌊n/2⌋/2 − c_j, 0)``
     with ``c_j = #{pairs ≤ r_j}`` (a maximum of sensitivity-1 counts: itself
     sensitivity 1). This locates the bulk wherever it is on the grid, even
     when all pairs fall between two grid points; ``j₁`` is its upper end;
  2. an *upper* radius, searched only among the ``K = 8`` grid points at or
     above the median estimate (up to 16×): score ``−#{pairs > r_j} −
     p·(j₁ − j)`` with ``p = 2 ln 4/(ε/2)``, so every step up (a factor √2)
     must leave out ``p`` fewer pairs to be worth its quartered weight. Only
     eight candidates remain, so the penalty can be strong enough to stop
     the mechanism just above the bulk.

  Both steps compose to ε-DP (ε²/8-zCDP; each is ε/2-bounded-range). The
  estimate is charged to the release and reported. For users within ``τ``
  of a point every pair distance is at most ``2τ``, so the estimate is at
  most about ``2τ``; the radius it returns leaves out a few pairs at most.

  The first step only finds the bulk if ``⌊n/2⌋/2`` pairs outweigh the
  ``J + 1`` candidates: :func:`private_tau_feasible` asks for
  ``⌊n/2⌋·ε ≥ 8 ln((J + 1)/γ)`` (a public rule: n, ε and γ only). Below it
  the estimators do not estimate τ and use the public bound instead.
"""

import math

import numpy as np

from ..mechanisms import exponential_mechanism

__all__ = ["tau_bounded_rows", "tau_sub_gaussian", "tau_gradients", "private_tau",
           "private_tau_feasible", "private_tau_min_users"]

# Candidate radii 2R·2^(-j/2), j = 0..TAU_GRID_STEPS (down to about 2^-30·2R).
TAU_GRID_STEPS = 60
# Second step of the private τ: grid points searched above the median.
TAU_UPPER_STEPS = 8


def tau_bounded_rows(value_range, samples_per_user, n_users, gamma):
    """τ for user means of ``m`` rows of ℓ2 norm at most ``value_range``.

    The public concentration radius τ of :func:`plan_winsorized_mean` (and
    of ``WinsorizedMeanEstimator(tau="bounded")``): with probability at
    least 1 − γ every user's mean lies within τ of the population mean. A
    function of public values only.

    Parameters
    ----------
    value_range : float
        Public ℓ2 bound ``R`` on every row (``‖bound‖₂`` for a box).
    samples_per_user : int
        Public minimum number of rows per user ``m``.
    n_users : int
        Number of users n.
    gamma : float
        Failure probability in ``(0, 1)``.

    Returns
    -------
    tau : float
        ``R(1 + √(2 ln(n/γ)))/√m``.

    Examples
    --------
    >>> from skuserdp.mean import tau_bounded_rows
    >>> round(tau_bounded_rows(1.0, 100, 1000, 0.01), 4)
    0.5799
    """
    m = int(samples_per_user)
    spread = 1.0 + math.sqrt(2.0 * math.log(n_users / gamma))
    return value_range * spread / math.sqrt(m)


def tau_sub_gaussian(sigma, samples_per_user, n_features, n_users, gamma, *,
                     calibration="tight"):
    """τ for user means of ``m`` σ-sub-Gaussian rows in ``d`` dimensions.

    The public concentration radius τ of :func:`plan_winsorized_mean` (and
    of ``WinsorizedMeanEstimator(tau="sub_gaussian")``): with
    probability at least 1 − γ every user's mean lies within τ of the
    population mean. A function of public values only.

    Parameters
    ----------
    sigma : float
        Public sub-Gaussian parameter of one row.
    samples_per_user : int
        Public minimum number of rows per user ``m``.
    n_features : int
        Dimension d.
    n_users : int
        Number of users n.
    gamma : float
        Failure probability in ``(0, 1)``.
    calibration : {"tight", "paper"}, default="tight"
        ``"paper"``: Corollary 5's ``(σ/√m)√(d ln(2n/γ))``; ``"tight"``: the
        Hsu–Kakade–Zhang bound.

    Returns
    -------
    tau : float
        The radius.

    Examples
    --------
    >>> from skuserdp.mean import tau_sub_gaussian
    >>> round(tau_sub_gaussian(1.0, 100, 64, 1000, 0.01), 3)
    1.189
    >>> round(tau_sub_gaussian(1.0, 100, 64, 1000, 0.01, calibration="paper"), 3)
    2.795
    """
    s = sigma / math.sqrt(int(samples_per_user))
    d = int(n_features)
    if calibration == "paper":
        return s * math.sqrt(d * math.log(2.0 * n_users / gamma))
    t = math.log(n_users / gamma)
    return s * math.sqrt(d + 2.0 * math.sqrt(d * t) + 2.0 * t)


def tau_gradients(gradient_bound, smoothness, radius, n_params, samples_per_user,
                  n_users, alpha):
    """τ for per-user average gradients, uniformly over the parameter ball.

    Levy et al., Proposition 1, in an explicit form (our
    choice; the paper's union bound slips a constant,
    :ref:`papers-levy-gradients-radius`): with
    ``σ = G`` (a gradient of norm at most G is G-sub-Gaussian),
    ``Δ = σ/(H√m)``,

    ``τ = min{2G, 2σ√((2/m)(d·ln(5(1 + 2RH√m/σ)) + ln(n/α))) + 2σ/√m}``.

    Every user's average gradient is within τ of the population gradient at
    every θ of the ball with probability ``>= 1 − α`` (users with i.i.d.
    rows); privacy never depends on it.

    Parameters
    ----------
    gradient_bound : float
        Public G, ``> 0``.
    smoothness : float
        Public H, ``> 0``.
    radius : float
        Public radius R of the parameter ball.
    n_params : int
        Number d of parameters.
    samples_per_user : int
        Public minimum number m of rows per user.
    n_users : int
        Number of users n.
    alpha : float
        Failure probability in ``(0, 1)``.

    Returns
    -------
    tau : float

    Examples
    --------
    >>> from skuserdp.mean._concentration import tau_gradients
    >>> round(tau_gradients(1.0, 1.0, 1.0, 2, 10 ** 6, 1000, 0.01), 4)
    0.0175
    """
    G, m = float(gradient_bound), int(samples_per_user)
    sigma = G
    log_net = n_params * math.log(5.0 * (1.0 + 2.0 * radius * smoothness
                                         * math.sqrt(m) / sigma))
    spread = 2.0 * sigma * math.sqrt(2.0 / m * (log_net + math.log(n_users / alpha)))
    return min(2.0 * G, spread + 2.0 * sigma / math.sqrt(m))


def tau_grid(value_range):
    """The public candidate radii ``2R·2^(-j/2)``, ``j = 0..J``, of :func:`private_tau`.

    Examples
    --------
    >>> from skuserdp.mean._concentration import tau_grid
    >>> tau_grid(1.0)[:3].round(3)
    array([2.   , 1.414, 1.   ])
    """
    return 2.0 * value_range * 2.0 ** (-0.5 * np.arange(TAU_GRID_STEPS + 1))


def private_tau_min_users(epsilon, gamma):
    """Fewest users with which :func:`private_tau` is feasible (public rule).

    Returns
    -------
    n_users : int
        ``2⌈8 ln((J + 1)/γ)/ε⌉``, the smallest n with
        :func:`private_tau_feasible`.

    Examples
    --------
    >>> from skuserdp.mean._concentration import (private_tau_feasible,
    ...                                           private_tau_min_users)
    >>> n = private_tau_min_users(1.0, 0.1)
    >>> n, private_tau_feasible(n, 1.0, 0.1), private_tau_feasible(n - 2, 1.0, 0.1)
    (104, True, False)
    """
    return 2 * math.ceil(_tau_needed(gamma) / epsilon)


def _tau_needed(gamma):
    return 8.0 * math.log((TAU_GRID_STEPS + 1) / gamma)


def private_tau_feasible(n_users, epsilon, gamma):
    """Whether :func:`private_tau` can locate the bulk (public rule).

    Parameters
    ----------
    n_users : int
        Number of users n.
    epsilon : float
        ε of the τ estimate.
    gamma : float
        Failure probability, in ``(0, 1)``.

    Returns
    -------
    feasible : bool
        ``⌊n/2⌋·ε ≥ 8 ln((J + 1)/γ)``: the median step's correct grid point
        then outscores every far one by ``⌊n/2⌋/2``, so a far pick has
        probability at most γ.

    Examples
    --------
    >>> from skuserdp.mean._concentration import private_tau_feasible
    >>> private_tau_feasible(300, 0.05, 0.01), private_tau_feasible(4000, 0.1, 0.01)
    (False, True)
    """
    return (int(n_users) // 2) * epsilon >= _tau_needed(gamma)


def private_tau(vectors, epsilon, *, value_range, gamma, rng, transform=None):
    """ε-DP estimate of the spread of per-user vectors (pair distances).

    Parameters
    ----------
    vectors : ndarray of shape (n_users, n_features)
        One vector per user, of ℓ2 norm at most ``value_range`` (a larger
        norm only changes a count, never the privacy).
    epsilon : float
        Privacy parameter of this step, ``> 0`` (two mechanisms at ε/2).
    value_range : float
        Public ℓ2 bound ``R``; candidate radii start at ``2R``.
    gamma : float
        Failure probability (documents the feasibility rule; the mechanism
        itself does not depend on it), in ``(0, 1)``.
    rng : numpy.random.Generator
        Randomness for the pairing and the mechanisms (never the data).
    transform : callable, default=None
        A per-row map applied (it may work in place) to every block of rows
        read from ``vectors``: the estimate for the transformed vectors
        (e.g. shifted and clipped to a public box), without transforming
        the whole table.

    Returns
    -------
    tau : float
        A radius from the public grid just above the bulk of the pair
        distances (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._concentration import private_tau
    >>> rng = np.random.default_rng(0)
    >>> V = rng.normal(size=(2000, 3)) * 0.01
    >>> tau = private_tau(V, 1.0, value_range=100.0, gamma=0.01, rng=rng)
    >>> bool(0.02 < tau < 0.1)
    True
    """
    V = np.asarray(vectors, dtype=np.float64)
    n = V.shape[0]
    n_pairs = n // 2
    if n_pairs < 1:
        raise ValueError("a private tau needs at least 2 users.")
    if not 0 < gamma < 1:
        raise ValueError(f"gamma must be in (0, 1), got {gamma!r}.")
    perm = rng.permutation(n)
    dist = _pair_distances(V, perm[0:2 * n_pairs:2], perm[1:2 * n_pairs:2],
                           transform)
    radii = tau_grid(value_range)
    half = epsilon / 2.0
    j_med = exponential_mechanism(_median_scores(dist, radii), half, 1.0, rng)
    lo, scores = _upper_scores(dist, radii, j_med, half)
    return float(radii[lo + exponential_mechanism(scores, half, 1.0, rng)])


#: pairs per block of :func:`_pair_distances` (a few hundred kB per temporary)
_BLOCK_PAIRS = 2048


def _pair_distances(V, a, b, transform=None):
    """``‖V[a] − V[b]‖`` of every pair (the same values as
    ``np.sqrt(np.einsum("ij,ij->i", V[a] − V[b], V[a] − V[b]))``, row by
    row), block by block without ``n × d`` temporaries; ``transform`` (a
    per-row map) is applied to the rows first."""
    f = (lambda rows: rows) if transform is None else transform
    dist = np.empty(a.shape[0])
    for start in range(0, a.shape[0], _BLOCK_PAIRS):
        rows = slice(start, start + _BLOCK_PAIRS)
        diff = f(V[a[rows]])
        diff -= f(V[b[rows]])
        np.sqrt(np.einsum("ij,ij->i", diff, diff), out=dist[rows])
    return dist


def _pairs_inside(dist, radii):
    return np.searchsorted(np.sort(dist), radii, side="right").astype(np.float64)


def _median_scores(dist, radii):
    """Step 1 scores of candidates ``j = 0..J−1`` (sensitivity 1 in ``dist``).

    The grid interval ``(r_{j+1}, r_j]`` holding the median pair distance
    scores 0; any other interval scores minus the number of pairs that
    would have to move for it to hold the median.
    """
    half_pairs = dist.size / 2.0
    inside = _pairs_inside(dist, radii)
    below = inside[1:]
    return -np.maximum(np.maximum(below - half_pairs, half_pairs - inside[:-1]), 0.0)


def _upper_scores(dist, radii, j_med, epsilon):
    """Step 2: first candidate index and scores of ``j = lo..j_med``.

    Up to :data:`TAU_UPPER_STEPS` grid points at or above ``r_{j_med}``
    (larger radii, smaller j); each step up costs ``2 ln 4/ε`` (the public
    part), the data part is minus the pairs left outside (sensitivity 1).
    """
    lo = max(0, int(j_med) - TAU_UPPER_STEPS)
    cand = np.arange(lo, int(j_med) + 1)
    outside = dist.size - _pairs_inside(dist, radii[cand])
    per_step = 2.0 * math.log(4.0) / epsilon
    return lo, -outside - per_step * (j_med - cand)
