"""Privacy map of the few-users ball sampler (Esfandiari, Mirrokni, Narayanan).

EMN's Algorithm 1 (DP-Estimate-1) [EMN22]_, docs:
:ref:`papers-emn-sampler-privacy`. The sampler runs with *internal* parameters
``(ε_a, δ_a)``: point weights ``e^{ε_a min(f, βn)}``, a garbage bucket G₁ of
mass ``(4/δ_a)·V_B``, a common acceptance constant ``c_acc`` and a
geometric number of rounds with mean ``N``.

The paper claims (4ε_a, 4δ_a) via Prop 15 (its target distribution π alone
is (ε_a, δ_a)-DP) and Lemma 18. Prop 15 is too optimistic: under replace-one
neighbours the normaliser of π moves too, so π alone is only
``(2ε_a + O(δ_a), O(δ_a))``
(:ref:`papers-emn-sampler-privacy`; the exact 1-D computation
in :mod:`skuserdp.testing` confirms it). The direct analysis of the whole
output (the G₂ bit and π together) gives, provided

* **P0**: every acceptance probability is at most 1/2 (so q ≤ 1/2), and
* **P1**: ``N ≤ N_priv`` (:func:`ball_sampler_max_rounds`), i.e. the rounds
  where one user's move changes the acceptance odds by more than ``e^{ε_a}``
  add at most ``δ_a/N`` per round,
* ``ε_a ≤ 1/3`` and ``δ_a < 1/3`` (Prop 19),

the guarantee of :func:`ball_sampler_privacy`:
``(3ε_a + ln(1/(1 − e^{ε_a}δ_a/4)), δ_a(4 + e^{3ε_a}/(4(1 − e^{ε_a}δ_a/4))))``,
about ``(3ε_a, 4.25δ_a)`` — the paper's ε is conservative, its δ 6–19 %
optimistic. Neither the data, nor the ball radius, nor the cap βn enter it.

The unit of privacy is the user: replace-one neighbours, n public.
"""

import math

from ._bisection import _largest
from ._budget import ApproxDP, _check_open_unit, _check_positive_finite

__all__ = [
    "BALL_SAMPLER_MAX_EPSILON",
    "ball_sampler_privacy",
    "calibrate_ball_sampler",
    "ball_sampler_max_rounds",
]

#: Prop 19 needs the internal ε_a (and δ_a) at most 1/3.
BALL_SAMPLER_MAX_EPSILON = 1.0 / 3.0


def _check_internal(epsilon_a, delta_a):
    epsilon_a = _check_positive_finite("epsilon_a", epsilon_a)
    delta_a = _check_positive_finite("delta_a", delta_a)
    if epsilon_a > BALL_SAMPLER_MAX_EPSILON * (1 + 1e-12) or delta_a >= 1.0 / 3.0:
        raise ValueError(
            "the ball sampler's analysis needs epsilon_a <= 1/3 and delta_a < 1/3, "
            f"got {epsilon_a!r}, {delta_a!r}."
        )
    return epsilon_a, delta_a


def ball_sampler_privacy(epsilon_a, delta_a):
    """User-level guarantee of one run of the ball sampler (EMN Algorithm 1).

    Valid when P0 and P1 hold (see the module docstring); the sampler's plan
    enforces both from public values.

    Parameters
    ----------
    epsilon_a : float
        Internal ε of the sampler, in ``(0, 1/3]``.
    delta_a : float
        Internal δ (garbage weight ``4/δ_a``), in ``(0, 1/3)`` and small
        enough that the guarantee's δ is below 1 (about ``δ_a < 0.23``).

    Returns
    -------
    loss : ApproxDP
        ``(3ε_a + ln(1/(1 − e^{ε_a}δ_a/4)), δ_a(4 + e^{3ε_a}/(4(1 − e^{ε_a}δ_a/4))))``.

    Examples
    --------
    >>> from skuserdp.privacy import ball_sampler_privacy
    >>> loss = ball_sampler_privacy(0.1, 1e-6)
    >>> round(loss.epsilon, 6), round(loss.delta / 1e-6, 4)
    (0.3, 4.3375)
    """
    epsilon_a, delta_a = _check_internal(epsilon_a, delta_a)
    eps, delta = _privacy_map(epsilon_a, delta_a)
    if delta >= 1:
        raise ValueError(
            f"delta_a={delta_a!r} is too large: the sampler's delta would be "
            f"{delta:.3g} >= 1 (a vacuous guarantee)."
        )
    return ApproxDP(eps, delta)


def _privacy_map(epsilon_a, delta_a):
    slack = 1.0 - math.exp(epsilon_a) * delta_a / 4.0
    eps = 3.0 * epsilon_a - math.log(slack)
    delta = delta_a * (4.0 + math.exp(3.0 * epsilon_a) / (4.0 * slack))
    return eps, delta


def calibrate_ball_sampler(epsilon, delta, *, calibration="tight"):
    """Internal ``(ε_a, δ_a)`` of the ball sampler for a target (ε, δ).

    ``calibration="tight"``: the largest ``ε_a ≤ 1/3`` whose
    :func:`ball_sampler_privacy` ε is at most ε (at ``δ_a = δ/4.8``), then the
    largest ``δ_a`` whose δ is at most δ. ``calibration="paper"``: the
    paper's ``ε_a = ε/4`` (capped at 1/3) with the δ split corrected so that
    the true δ, about ``4.25δ_a`` rather than the paper's ``4δ_a``, meets δ
    (``δ_a`` as in the tight rule).

    Parameters
    ----------
    epsilon : float
        Target ε of one run, ``> 0``. Beyond about 1, ``ε_a`` saturates at 1/3
        (still private, no further accuracy gain).
    delta : float
        Target δ of one run, in ``(0, 1)``.
    calibration : {"tight", "paper"}, default="tight"
        See above.

    Returns
    -------
    epsilon_a, delta_a : float
        Internal parameters; ``ball_sampler_privacy(ε_a, δ_a)`` meets (ε, δ).

    Examples
    --------
    >>> from skuserdp.privacy import calibrate_ball_sampler, ball_sampler_privacy
    >>> eps_a, delta_a = calibrate_ball_sampler(0.6, 1e-5)
    >>> round(eps_a, 5), round(delta_a / 1e-5, 4)
    (0.2, 0.2083)
    >>> loss = ball_sampler_privacy(eps_a, delta_a)
    >>> loss.epsilon <= 0.6 and loss.delta <= 1e-5
    True
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    _check_open_unit("delta", delta)
    if calibration not in ("tight", "paper"):
        raise ValueError(
            f"calibration must be 'tight' or 'paper', got {calibration!r}."
        )
    # δ_a also enters ε through ln(1/(1 − e^{ε_a}δ_a/4)) ≈ δ_a/4: keep that
    # term below about ε/3 so that ε_a > 0 whatever (ε, δ).
    delta_0 = min(delta / 4.8, 0.2, epsilon)
    if calibration == "paper":
        eps_a = min(epsilon / 4.0, BALL_SAMPLER_MAX_EPSILON)
    else:
        eps_a = _largest(lambda e: _privacy_map(e, delta_0)[0] <= epsilon,
                         BALL_SAMPLER_MAX_EPSILON)

    def meets(x):
        eps, dlt = _privacy_map(eps_a, x)
        return eps <= epsilon and dlt <= delta

    return eps_a, _largest(meets, delta_0 * 4.8 if delta_0 < 0.2 else 0.2)


def ball_sampler_max_rounds(n_users, epsilon_a, delta_a, *, accept=1.0 / 3.0,
                            cap_fraction=2.0 / 3.0):
    """Largest mean number of rounds ``N_priv`` for which P1 holds (log scale).

    One user's move changes the single-round acceptance probability ``q`` by
    more than a factor ``e^{ε_a}`` only where it changes ``f`` between 0 and
    1, adding at most ``Δ = c_acc e^{ε_a}/(e^{ε_a βn} + 4/δ_a)``; Lemma 18
    needs ``Δ ≤ δ_a/N``.

    Parameters
    ----------
    n_users : int
        Number of points (users) n.
    epsilon_a, delta_a : float
        Internal parameters of the sampler.
    accept : float, default=1/3
        The common acceptance constant ``c_acc``.
    cap_fraction : float, default=2/3
        β: the score cap is ``βn``.

    Returns
    -------
    log_n_priv : float
        ``ln N_priv = ln δ_a + ln(e^{ε_a βn} + 4/δ_a) − ln c_acc − ε_a``.

    Examples
    --------
    >>> import math
    >>> from skuserdp.privacy import ball_sampler_max_rounds
    >>> round(math.exp(ball_sampler_max_rounds(100, 0.2, 1e-6)), 1)
    11.3
    """
    epsilon_a, delta_a = _check_internal(epsilon_a, delta_a)
    a = epsilon_a * cap_fraction * int(n_users)
    b = math.log(4.0 / delta_a)
    log_sum = max(a, b) + math.log1p(math.exp(-abs(a - b)))
    return math.log(delta_a) + log_sum - math.log(accept) - epsilon_a
