"""The ball sampler's randomness: the rejection-sampling rounds of EMN Algorithm 1.

Esfandiari, Mirrokni and Narayanan, "Tight and Robust Private Mean Estimation
with Few Users", §3.2. Every point ``x_i`` (a user mean) owns the ball of
radius R around it; ``f(p)`` counts the balls containing p. Each round picks
the garbage branch G₁ with a public probability (accepted with probability
``c_acc``), else a uniform index i and a uniform point p of ``B_i``, accepted
with probability ``c_acc·(n/f(p))·e^{ε_a(min(f(p), βn) − βn)}``; after a
rejected round the sampler stops with probability ``1/N`` and returns G₂.
The released point is p itself, never a data point.

The public plan (R, β, ``c_acc``, ε_a, δ_a, N) is computed from public
values by :func:`skuserdp.mean._few_users.plan_ball_sampler`; its privacy map
is :func:`skuserdp.privacy.ball_sampler_privacy`. This module only draws: it
is the mechanism behind :func:`skuserdp.mean._few_users.ball_sampler`.
"""

import math

import numpy as np
from scipy import special

__all__ = ["run_ball_sampler"]

#: Elements (rounds x users x features) of one batch of sampler rounds.
BATCH_ELEMENTS = 1 << 22
#: Output grid: 2^-GRID_BITS of the ball radius (floating-point hygiene).
GRID_BITS = 20


def _uniform_in_balls(centers, radius, rng):
    """One uniform point in the ball of ``radius`` around every row of ``centers``."""
    n, d = centers.shape
    z = rng.standard_normal((n, d))
    norm = np.sqrt(np.einsum("ij,ij->i", z, z))
    norm[norm == 0] = 1.0
    u = 1.0 - rng.random(n)  # in (0, 1]
    scale = radius * np.exp(np.log(u) / d) / norm
    return centers + z * scale[:, None]


def _inside_balls(p, X, R):
    """``inside[b, i] = ‖p_b − X_i‖² ≤ R²``, over blocks of ``X`` (the same
    einsum per entry as on the whole of ``X``, without a batch × n × d
    temporary)."""
    inside = np.empty((p.shape[0], X.shape[0]), dtype=bool)
    step = max(1, BATCH_ELEMENTS // (8 * p.shape[0] * X.shape[1]))
    for start in range(0, X.shape[0], step):
        diff = p[:, None, :] - X[None, start:start + step, :]
        inside[:, start:start + step] = (np.einsum("bnd,bnd->bn", diff, diff)
                                         <= R * R)
    return inside


def run_ball_sampler(points, *, ball_radius, cap_fraction, accept, epsilon_a,
                     delta_a, n_rounds, rng):
    """Run the rounds of the ball sampler until one releases.

    Rounds are drawn in batches (i.i.d.; the first finished round of a batch
    is released, so the law does not depend on the batch size).

    Parameters
    ----------
    points : ndarray of shape (n_users, n_features)
        One finite point per user, float64. Not modified.
    ball_radius : float
        R, the radius of every point's ball.
    cap_fraction : float
        β: the score is capped at ``βn``.
    accept : float
        ``c_acc``.
    epsilon_a, delta_a : float
        The sampler's internal privacy parameters.
    n_rounds : float
        Mean number of rounds N: stop probability ``1/N`` after a rejection.
    rng : numpy.random.Generator
        The run's own random stream.

    Returns
    -------
    point : ndarray of shape (n_features,) or None
        The released point, snapped to a grid of spacing about ``2^-20 R``,
        or None for a garbage bucket.
    outcome : {"point", "G1", "G2"}
        What was released (part of the private output).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms._ball_sampler import run_ball_sampler
    >>> X = np.zeros((50, 2))
    >>> p, outcome = run_ball_sampler(
    ...     X, ball_radius=2.0, cap_fraction=2 / 3, accept=1 / 3, epsilon_a=1.0,
    ...     delta_a=1e-6, n_rounds=100.0, rng=np.random.default_rng(0))
    >>> outcome, bool(np.linalg.norm(p) <= 2.0)
    ('point', True)
    """
    X = points
    n, d = X.shape
    R, beta_n = ball_radius, cap_fraction * n
    log_garbage = math.log(4.0 / delta_a)
    p_garbage = float(special.expit(log_garbage - epsilon_a * beta_n))
    p_stop = 1.0 / n_rounds
    batch = int(max(1, min(4096, BATCH_ELEMENTS // (n * d))))
    rows = np.arange(batch)
    while True:
        garbage = rng.random(batch) < p_garbage
        u_accept = rng.random(batch)
        u_stop = rng.random(batch)
        idx = rng.integers(n, size=batch)
        p = _uniform_in_balls(X[idx], R, rng)
        inside = _inside_balls(p, X, R)
        inside[rows, idx] = True  # p was drawn in B_idx: count it
        f = inside.sum(axis=1).astype(np.float64)
        log_acc = (np.log(accept * n / f)
                   + epsilon_a * (np.minimum(f, beta_n) - beta_n))
        accepted = np.where(garbage, u_accept < accept, u_accept < np.exp(log_acc))
        done = accepted | (u_stop < p_stop)
        if done.any():
            b = int(np.argmax(done))
            if not accepted[b]:
                return None, "G2"
            if garbage[b]:
                return None, "G1"
            grid = 2.0 ** (math.floor(math.log2(R)) - GRID_BITS)
            return np.round(p[b] / grid) * grid, "point"
