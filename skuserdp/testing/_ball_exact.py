"""Exact output law of the few-users ball sampler in one dimension.

Docs: :ref:`papers-emn-sampler-privacy`. In d = 1 each ball is an interval
``[x_i − R, x_i + R]``, so the count f is piecewise constant between the
sorted breakpoints ``x_i ± R`` and the whole output law of Algorithm 1 —
two atoms (G₁, G₂) and a piecewise-constant density — is computable exactly.
Comparing the laws of two neighbouring datasets gives the exact
hockey-stick divergence ``δ(ε) = sup_S P(S) − e^ε P′(S)``: a privacy test
without Monte Carlo, sharp enough to see a factor 2 in ε.
"""

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

__all__ = ["BallSamplerLaw1D", "ball_sampler_law_1d", "hockey_stick_divergence"]


@dataclass(frozen=True)
class BallSamplerLaw1D:
    """Output law of one run of the ball sampler on points in one dimension.

    Parameters
    ----------
    p_g1, p_g2 : float
        Probabilities of the garbage buckets.
    points : ndarray
        Sorted points of the data.
    ball_radius : float
        R.
    log_density_scale : float
        The density at a point covered by ``f > 0`` intervals is
        ``exp(log_density_scale + ε_a min(f, cap))``.
    epsilon_a, cap : float
        The sampler's internal ε and its cap βn.
    q : float
        Single-round acceptance probability.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._few_users import plan_ball_sampler
    >>> from skuserdp.testing import ball_sampler_law_1d
    >>> plan = plan_ball_sampler(40, 1, radius=1.0, epsilon=1.0, delta=1e-6)
    >>> law = ball_sampler_law_1d(np.linspace(0, 1, 40), plan)
    >>> bool(law.density(0.5) > law.density(10.0) == 0.0)
    True
    """

    p_g1: float
    p_g2: float
    points: np.ndarray
    ball_radius: float
    log_density_scale: float
    epsilon_a: float
    cap: float
    q: float

    def breakpoints(self):
        """Sorted ends of the intervals.

        Returns
        -------
        ends : ndarray
            ``x_i ± R``, sorted, without repeats.
        """
        return np.unique(np.concatenate([self.points - self.ball_radius,
                                         self.points + self.ball_radius]))

    def density(self, x):
        """Density of the released point at ``x`` (vectorised).

        Parameters
        ----------
        x : float or array-like
            Where to evaluate.

        Returns
        -------
        density : ndarray
            The density (0 where no interval covers x).
        """
        x = np.asarray(x, dtype=np.float64)
        lo = np.searchsorted(self.points, x - self.ball_radius, side="left")
        hi = np.searchsorted(self.points, x + self.ball_radius, side="right")
        f = (hi - lo).astype(np.float64)
        log_d = self.log_density_scale + self.epsilon_a * np.minimum(f, self.cap)
        return np.where(f > 0, np.exp(log_d), 0.0)


def ball_sampler_law_1d(points, plan):
    """Exact output law of :func:`~skuserdp.mean._few_users.ball_sampler` in 1-D.

    Parameters
    ----------
    points : array-like of shape (n_users,) or (n_users, 1)
        The data.
    plan : BallPlan
        The sampler's public plan (``n_features == 1``).

    Returns
    -------
    law : BallSamplerLaw1D
        The exact law: garbage atoms and the density of the released point.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._few_users import plan_ball_sampler
    >>> from skuserdp.testing import ball_sampler_law_1d
    >>> plan = plan_ball_sampler(30, 1, radius=1.0, epsilon=1.0, delta=1e-6)
    >>> law = ball_sampler_law_1d(np.zeros(30), plan)
    >>> round(float(law.p_g2 + law.p_g1 + law.density(0.0) * 2 * plan.ball_radius), 6)
    1.0
    """
    x = np.sort(np.asarray(points, dtype=np.float64).ravel())
    if x.size != plan.n_users or plan.n_features != 1:
        raise ValueError(
            "the exact law needs one-dimensional points matching the plan."
        )
    R, eps, n = plan.ball_radius, plan.epsilon_a, plan.n_users
    cap = plan.cap_fraction * n
    L = eps * cap
    b = np.unique(np.concatenate([x - R, x + R]))
    mid, width = 0.5 * (b[:-1] + b[1:]), np.diff(b)
    lo = np.searchsorted(x, mid - R, side="left")
    hi = np.searchsorted(x, mid + R, side="right")
    f = (hi - lo).astype(np.float64)
    keep = (f > 0) & (width > 0)
    # log of I·e^{-L}, I = (1/2R) Σ |J| e^{ε g(J)}; log of (4/δ)·e^{-L}
    log_i = logsumexp(np.log(width[keep]) + eps * np.minimum(f[keep], cap) - L
                      - np.log(2 * R))
    log_g = np.log(4.0 / plan.delta_a) - L
    log_z = np.logaddexp(log_i, log_g)  # log(Z e^{-L}), Z = I + 4/δ
    q = plan.accept * np.exp(log_z - np.logaddexp(0.0, log_g))
    N = plan.n_rounds
    p_g2 = (1.0 - q) / ((N - 1.0) * q + 1.0)
    p_g1 = (1.0 - p_g2) * np.exp(log_g - log_z)
    # density(p) = (1 - P[G2]) e^{ε g(p)} / (2R Z)
    with np.errstate(divide="ignore"):  # P[G2] = 1: density 0
        scale = np.log1p(-p_g2) - np.log(2 * R) - (log_z + L)
    return BallSamplerLaw1D(p_g1=float(p_g1), p_g2=float(p_g2), points=x,
                            ball_radius=R, log_density_scale=float(scale),
                            epsilon_a=eps, cap=cap, q=float(q))


def hockey_stick_divergence(law, other, epsilon):
    """Exact ``sup_S law(S) − e^ε other(S)`` for two 1-D ball-sampler laws.

    Parameters
    ----------
    law, other : BallSamplerLaw1D
        Laws on two neighbouring datasets (same plan).
    epsilon : float
        ε at which to evaluate.

    Returns
    -------
    delta : float
        The smallest δ for which this ordered pair satisfies (ε, δ)-DP.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mean._few_users import plan_ball_sampler
    >>> from skuserdp.testing import ball_sampler_law_1d, hockey_stick_divergence
    >>> plan = plan_ball_sampler(30, 1, radius=1.0, epsilon=1.0, delta=1e-6)
    >>> x = np.zeros(30)
    >>> y = x.copy(); y[0] = 50.0
    >>> a, b = ball_sampler_law_1d(x, plan), ball_sampler_law_1d(y, plan)
    >>> bool(hockey_stick_divergence(a, b, 1.0) <= 1e-6)
    True
    """
    e = np.exp(epsilon)
    out = max(law.p_g1 - e * other.p_g1, 0.0) + max(law.p_g2 - e * other.p_g2, 0.0)
    b = np.unique(np.concatenate([law.breakpoints(), other.breakpoints()]))
    mid, width = 0.5 * (b[:-1] + b[1:]), np.diff(b)
    gap = law.density(mid) - e * other.density(mid)
    return float(out + np.sum(width * np.maximum(gap, 0.0)))
