"""The concentration radius τ: rules from public assumptions, or a private estimate.

Levy et al. [LSA+21]_ assume τ is known (spec ``levy2021_user_level_learning.md``
§1.4, §3.4, §3.5, §6.2). τ must never be computed from the private data for
free; skuserdp offers three ways to obtain it:

* **Bounded rows** (Corollary 1). Rows lie in the public box
  ``[-bound, bound]^d`` and every user has at least ``m`` rows
  (``samples_per_user``). The paper's radius ``B√(ln(2n/γ)/(2m))`` is too
  small (spec [E9]: even one coordinate of ±B coin flips violates it), so
  both calibrations use McDiarmid's inequality: the norm ``‖x̄_u − μ‖`` of a
  mean of m independent rows has bounded differences ``2‖bound‖₂/m`` and
  expectation at most ``‖bound‖₂/√m``, so with ``R = ‖bound‖₂``, every user
  is within ``τ = R(1 + √(2 ln(n/γ)))/√m`` of μ with probability ≥ 1 − γ.
* **Sub-Gaussian rows** (Corollary 5). Rows are σ-sub-Gaussian vectors, so
  user means are (σ/√m)-sub-Gaussian. Paper: ``τ = (σ/√m)√(d ln(2n/γ))``;
  tight: Hsu–Kakade–Zhang, ``τ = (σ/√m)√(d + 2√(dt) + 2t)``, ``t = ln(n/γ)``.
* **Private estimate** (``tau="auto"``; not in the paper, spec §6.2 item 3).
  Users are paired by a random permutation drawn independently of the data;
  the ℓ2 distances of the ⌊n/2⌋ pairs are computed; the exponential mechanism
  picks a radius r from the public geometric grid ``2R·2^(-j/2)``,
  ``j = 0..J``, with score ``−#{pairs with distance > r} − p(J − j)`` with
  ``p = min(2 ln 4/ε, ⌊n/2⌋/(2J))``: the data part counts the pairs the
  radius leaves out, the public part quarters the weight of each step up the
  grid, so the smallest radius that leaves out only a few pairs (about ``p``
  per step) wins. Replacing
  one user changes one pair distance, so every count moves by at most 1: the
  score has sensitivity 1 and the step is ε-DP (ε²/8-zCDP). Its ε is charged
  to the release and reported. For users within ``τ`` of a point every pair
  distance is at most ``2τ``, so the estimate is about ``2τ`` or less.
"""

import math

import numpy as np

from ..mechanisms import exponential_mechanism

__all__ = ["tau_bounded_rows", "tau_sub_gaussian", "private_tau"]

# Candidate radii 2R·2^(-j/2), j = 0..TAU_GRID_STEPS (down to about 2^-30·2R).
TAU_GRID_STEPS = 60


def tau_bounded_rows(value_range, samples_per_user, n_users, gamma):
    """τ for user means of ``m`` rows of ℓ2 norm at most ``value_range``.

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
    >>> from skuserdp.mean._concentration import tau_bounded_rows
    >>> round(tau_bounded_rows(1.0, 100, 1000, 0.01), 4)
    0.5799
    """
    m = int(samples_per_user)
    spread = 1.0 + math.sqrt(2.0 * math.log(n_users / gamma))
    return value_range * spread / math.sqrt(m)


def tau_sub_gaussian(sigma, samples_per_user, n_features, n_users, gamma, *,
                     calibration="tight"):
    """τ for user means of ``m`` σ-sub-Gaussian rows in ``d`` dimensions.

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
    >>> from skuserdp.mean._concentration import tau_sub_gaussian
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


def private_tau(vectors, epsilon, *, value_range, gamma, rng):
    """ε-DP estimate of the spread of per-user vectors (pair distances).

    Parameters
    ----------
    vectors : ndarray of shape (n_users, n_features)
        One vector per user, of ℓ2 norm at most ``value_range`` (a larger
        norm only changes a count, never the privacy).
    epsilon : float
        Privacy parameter of this step, ``> 0``.
    value_range : float
        Public ℓ2 bound ``R``; candidate radii start at ``2R``.
    gamma : float
        Failure probability used to set the target count, in ``(0, 1)``.
    rng : numpy.random.Generator
        Randomness for the pairing and the mechanism (never the data).

    Returns
    -------
    tau : float
        A radius from the public grid, about the upper quantile of the pair
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
    perm = rng.permutation(n)
    a, b = perm[0:2 * n_pairs:2], perm[1:2 * n_pairs:2]
    dist = np.sqrt(np.einsum("ij,ij->i", V[a] - V[b], V[a] - V[b]))
    steps = np.arange(TAU_GRID_STEPS + 1)
    radii = 2.0 * value_range * 2.0 ** (-0.5 * steps)
    counts = np.searchsorted(np.sort(dist), radii, side="right")
    # Data part: pairs left outside (sensitivity 1). Public part: each step
    # up the grid (a factor √2) quarters the weight, so the smallest radius
    # that leaves out few pairs wins; the whole penalty range is kept below
    # n_pairs/2 so that tiny radii cannot win by leaving every pair out.
    per_step = min(2.0 * math.log(4.0) / epsilon, n_pairs / (2.0 * TAU_GRID_STEPS))
    penalty = per_step * (TAU_GRID_STEPS - steps)
    scores = -(n_pairs - counts).astype(np.float64) - penalty
    return float(radii[exponential_mechanism(scores, epsilon, 1.0, rng)])
