"""Composition of privacy losses: basic, advanced (DRV) and zCDP (additive).

All results hold for adaptive composition and for user-level neighbouring
datasets (replace-one user). Parallel composition (disjoint sets of users
chosen independently of the data) takes the maximum.

References
----------
.. [DR14] C. Dwork and A. Roth. The Algorithmic Foundations of Differential
   Privacy, 2014. Theorem 3.16 (basic) and Theorem 3.20 (advanced).
.. [DRV10] C. Dwork, G. Rothblum and S. Vadhan. Boosting and differential
   privacy. FOCS 2010.
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016. Lemma 2.3;
   Proposition 3.3 (ε-DP is ε²/2-zCDP); Section 8 (approximate zCDP and
   its adaptive composition).
.. [Mir17] I. Mironov. Rényi differential privacy. CSF 2017. Proposition 1
   (adaptive composition of Rényi-DP).
"""

import math

import numpy as np

from ._bisection import _largest
from ._budget import (
    ZCDP,
    ApproxDP,
    PureDP,
    _check_count,
    _check_delta_target,
    _check_open_unit,
    _check_positive_finite,
)
from ._conversion import (
    _as_rho,
    bounded_range_epsilon,
    rdp_curve_epsilon,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)

__all__ = [
    "compose",
    "compose_parallel",
    "compose_advanced",
    "compose_homogeneous",
    "advanced_composition_step",
    "zcdp_remaining",
    "split_off",
    "split_zcdp",
    "split_zcdp_shares",
    "adaptive_query_budget",
    "compose_adaptive_queries",
    "compose_spend",
    "split_for_fits",
]


def _known_kinds(losses):
    """The set of loss types, all of them PureDP, ApproxDP or ZCDP."""
    kinds = {type(loss) for loss in losses}
    unknown = kinds - {PureDP, ApproxDP, ZCDP}
    if unknown:
        names = sorted(k.__name__ for k in unknown)
        raise TypeError(f"unknown privacy-loss types: {names}")
    return kinds


def _kinds(losses):
    if not losses:
        raise ValueError("at least one privacy loss is required.")
    kinds = _known_kinds(losses)
    if ZCDP in kinds and kinds != {ZCDP}:
        raise TypeError(
            "cannot compose zCDP with (ε, δ)-DP losses directly; convert first, "
            "e.g. pure_to_zcdp(...) for pure losses or zcdp_to_approx_dp(...)."
        )
    return kinds


def compose(*losses):
    """Sequential (adaptive) composition of privacy losses.

    Pure losses add their ε (basic composition); mixing pure and approximate
    losses gives the sum of ε and of δ; zCDP losses add their ρ.

    Parameters
    ----------
    *losses : PureDP, ApproxDP or ZCDP
        The losses of the composed mechanisms. zCDP cannot be mixed with
        (ε, δ)-DP losses: convert explicitly first.

    Returns
    -------
    loss : PureDP, ApproxDP or ZCDP
        The composed loss.

    Examples
    --------
    >>> from skuserdp.privacy import compose, PureDP, ApproxDP, ZCDP
    >>> compose(PureDP(0.5), PureDP(0.25))
    PureDP(epsilon=0.75)
    >>> compose(PureDP(0.5), ApproxDP(0.5, 1e-6))
    ApproxDP(epsilon=1.0, delta=1e-06)
    >>> compose(ZCDP(0.1), ZCDP(0.2)).rho
    0.30000000000000004
    """
    kinds = _kinds(losses)
    if kinds == {ZCDP}:
        return ZCDP(math.fsum(loss.rho for loss in losses))
    eps = math.fsum(loss.epsilon for loss in losses)
    if kinds == {PureDP}:
        return PureDP(eps)
    delta = math.fsum(getattr(loss, "delta", 0.0) for loss in losses)
    return ApproxDP(eps, min(delta, 1.0))


def compose_parallel(*losses):
    """Parallel composition over disjoint sets of users.

    Valid when the users are split into disjoint parts independently of the
    data and each mechanism sees only its part (plus earlier outputs): a user
    changes exactly one part, so the loss is the worst single loss.

    Parameters
    ----------
    *losses : PureDP, ApproxDP or ZCDP
        Losses of the mechanisms run on disjoint user sets.

    Returns
    -------
    loss : PureDP, ApproxDP or ZCDP
        The maximum of the losses (coordinate-wise for (ε, δ)).

    Examples
    --------
    >>> from skuserdp.privacy import compose_parallel, ApproxDP
    >>> compose_parallel(ApproxDP(1.0, 1e-7), ApproxDP(0.5, 1e-6))
    ApproxDP(epsilon=1.0, delta=1e-06)
    """
    kinds = _kinds(losses)
    if kinds == {ZCDP}:
        return ZCDP(max(loss.rho for loss in losses))
    eps = max(loss.epsilon for loss in losses)
    if kinds == {PureDP}:
        return PureDP(eps)
    return ApproxDP(eps, max(getattr(loss, "delta", 0.0) for loss in losses))


def compose_advanced(loss, k, delta_slack):
    """Advanced composition of ``k`` copies of an (ε, δ)-DP mechanism.

    The exact Dwork–Rothblum–Vadhan bound [DRV10]_ (Theorem 3.20 of [DR14]_):
    ``ε' = ε √(2k ln(1/δ')) + k ε (e^ε − 1)`` and ``δ'' = kδ + δ'``. The bound
    is returned as is; for large ε it exceeds basic composition ``kε``, so
    callers wanting the best of both take the smaller of the two.

    Parameters
    ----------
    loss : PureDP or ApproxDP
        Loss of each composed mechanism.
    k : int
        Number of adaptively composed mechanisms, ``>= 1``.
    delta_slack : float
        The extra failure probability δ' in ``(0, 1)``.

    Returns
    -------
    loss : ApproxDP
        The composed guarantee.

    Examples
    --------
    >>> from skuserdp.privacy import compose_advanced, PureDP
    >>> round(compose_advanced(PureDP(0.1), 100, 1e-6).epsilon, 4)
    6.3082
    """
    if not isinstance(loss, (PureDP, ApproxDP)):
        raise TypeError("advanced composition takes a PureDP or ApproxDP loss.")
    k = _check_count("k", k)
    _check_open_unit("delta_slack", delta_slack)
    eps_total = _advanced_epsilon(loss.epsilon, k, delta_slack)
    if not math.isfinite(eps_total):
        raise ValueError(
            f"the advanced composition bound of {k} mechanisms at epsilon="
            f"{loss.epsilon!r} is beyond floating point (it is far above basic "
            "composition's k·epsilon): use compose or compose_homogeneous.")
    delta = k * getattr(loss, "delta", 0.0) + delta_slack
    return ApproxDP(eps_total, min(delta, 1.0))


#: above this ε, ``e^ε − 1`` overflows float64 (``math.expm1`` raises)
_EXPM1_MAX = 709.0


def _advanced_epsilon(eps, k, delta_slack):
    """``ε √(2k ln(1/δ')) + k ε (e^ε − 1)``, ``inf`` when it overflows."""
    eps_total = eps * math.sqrt(2 * k * math.log(1 / delta_slack))
    if eps > _EXPM1_MAX:
        return math.inf
    return eps_total + k * eps * math.expm1(eps)


def compose_homogeneous(loss, k, delta_slack):
    """The better of basic and advanced composition of ``k`` equal losses.

    Basic composition gives ``(kε, kδ)``; advanced composition
    (:func:`compose_advanced`) gives ``(ε', kδ + δ')``. The advanced bound is
    used only when its ε is smaller.

    Parameters
    ----------
    loss : PureDP or ApproxDP
        Loss of each composed mechanism.
    k : int
        Number of adaptively composed mechanisms, ``>= 1``.
    delta_slack : float
        The extra δ' allowed for advanced composition, in ``(0, 1)``.

    Returns
    -------
    loss : PureDP or ApproxDP
        The composed guarantee (pure when basic composition of pure losses
        wins).

    Examples
    --------
    >>> from skuserdp.privacy import compose_homogeneous, PureDP
    >>> compose_homogeneous(PureDP(0.5), 2, 1e-6)
    PureDP(epsilon=1.0)
    >>> round(compose_homogeneous(PureDP(0.01), 1000, 1e-6).epsilon, 3)
    1.763
    """
    if not isinstance(loss, (PureDP, ApproxDP)):
        raise TypeError("advanced composition takes a PureDP or ApproxDP loss.")
    if int(k) >= 1 and 0 < delta_slack < 1 and not math.isfinite(
            _advanced_epsilon(loss.epsilon, int(k), delta_slack)):
        return compose(*([loss] * int(k)))  # advanced is far worse (large ε)
    advanced = compose_advanced(loss, k, delta_slack)  # validates k
    basic = compose(*([loss] * int(k)))
    return advanced if advanced.epsilon < basic.epsilon else basic


def advanced_composition_step(epsilon, delta_slack, k, *, rule="exact"):
    """Per-step ε for ``k`` pure mechanisms composing to at most ε.

    ``rule="paper"`` is the closed form ``ε/(2√(2k ln(1/δ')))`` used by Levy
    et al. [LSA+21]_ (Algorithm 2 and Theorem 10): it makes the first term of
    the advanced composition bound equal ε/2 and *assumes* the second term
    ``kε₀(e^ε₀ − 1)`` is at most ε/2. That assumption fails for large ε
    (e.g. k = 16, ε = 30, δ' = 1e-3: the advanced bound is 43.1, although
    basic composition still gives 16.1). The split is accepted when the
    better of basic and advanced composition meets ε; otherwise the exact
    rule is used instead. ``rule="exact"`` returns the largest ε₀ whose
    :func:`compose_homogeneous` composition is at most ε (bisection on the
    exact bound, at least the basic ``ε/k``).

    Parameters
    ----------
    epsilon : float
        Target composed ε, ``> 0``.
    delta_slack : float
        The δ' of advanced composition, in ``(0, 1)``.
    k : int
        Number of composed mechanisms, ``>= 1``.
    rule : {"exact", "paper"}, default="exact"
        How to split.

    Returns
    -------
    epsilon_step : float
        ε₀ with ``compose_homogeneous(PureDP(ε₀), k, δ').epsilon <= epsilon``.

    Examples
    --------
    >>> from skuserdp.privacy import advanced_composition_step
    >>> round(advanced_composition_step(1.0, 1e-6, 64, rule="paper"), 5)
    0.01189
    >>> round(advanced_composition_step(1.0, 1e-6, 64), 5)
    0.02297
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    _check_open_unit("delta_slack", delta_slack)
    k = _check_count("k", k)
    if rule not in ("exact", "paper"):
        raise ValueError(f"rule must be 'exact' or 'paper', got {rule!r}.")

    def composed(eps0):
        return compose_homogeneous(PureDP(eps0), k, delta_slack).epsilon

    if rule == "paper":
        eps0 = epsilon / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / delta_slack)))
        if composed(eps0) <= epsilon:
            return eps0
    return _largest(lambda eps0: composed(eps0) <= epsilon, epsilon, lo=epsilon / k)


def zcdp_remaining(total, *spent):
    """The zCDP budget left after spending ``spent`` out of ``total``.

    Parameters
    ----------
    total : float or ZCDP
        The whole budget ρ.
    *spent : float or ZCDP
        Parts already committed.

    Returns
    -------
    rest : ZCDP
        ``ZCDP(total − Σ spent)``.

    Raises
    ------
    ValueError
        If nothing (or less than nothing) is left.

    Examples
    --------
    >>> from skuserdp.privacy import zcdp_remaining, ZCDP
    >>> zcdp_remaining(ZCDP(0.5), 0.125, ZCDP(0.25))
    ZCDP(rho=0.125)
    """
    rho = _as_rho(total)
    used = sum(_as_rho(s) for s in spent)
    rest = rho - used
    if not rest > 0:
        raise ValueError(
            f"the spent parts (ρ = {used!r}) exhaust the budget ρ = {rho!r}."
        )
    return ZCDP(rest)


def split_off(budget, share):
    """Split a budget into a pure step (a share of it) and the rest.

    Parameters
    ----------
    budget : PureDP, ApproxDP or ZCDP
        The whole budget.
    share : float
        Fraction in ``(0, 1)`` given to the pure step.

    Returns
    -------
    step_epsilon : float
        ε of the pure step. For a zCDP budget the step is assumed ε-bounded
        range (an exponential mechanism): ``ε = √(8·share·ρ)``, costing
        ``share·ρ``.
    rest : PureDP, ApproxDP or ZCDP
        What is left; ``compose(step, rest)`` equals ``budget``.

    Examples
    --------
    >>> from skuserdp.privacy import split_off, ApproxDP, ZCDP
    >>> split_off(ApproxDP(1.0, 1e-6), 0.25)
    (0.25, ApproxDP(epsilon=0.75, delta=1e-06))
    >>> split_off(ZCDP(0.5), 0.25)
    (1.0, ZCDP(rho=0.375))
    """
    _check_open_unit("share", share)
    if isinstance(budget, ZCDP):
        step = share * budget.rho
        return bounded_range_epsilon(step), ZCDP(budget.rho - step)
    if isinstance(budget, PureDP):
        return share * budget.epsilon, PureDP((1 - share) * budget.epsilon)
    if isinstance(budget, ApproxDP):
        return share * budget.epsilon, ApproxDP((1 - share) * budget.epsilon,
                                                budget.delta)
    raise TypeError("budget must be a PureDP, ApproxDP or ZCDP loss.")


def split_zcdp(epsilon, delta, share):
    """Split an (ε, δ) target, accounted in zCDP, into a ρ share and the rest.

    The target is turned into ``ρ = zcdp_rho_for(ε, δ)``; the first part
    gets ``share·ρ`` and the rest ``(1 − share)·ρ``, expressed as the ε'
    that the rest reaches at the same δ, so that a planner taking (ε', δ)
    can run it. A mechanism that spends ``ZCDP(share·ρ)`` followed by one
    whose loss is at most ``zcdp_rho_for(ε', δ) ≤ (1 − share)·ρ`` composes to
    at most ρ, hence to (ε, δ).

    Parameters
    ----------
    epsilon : float
        Total ε, ``> 0``.
    delta : float
        Total δ in ``(0, 1)``.
    share : float
        Fraction in ``(0, 1)`` of ρ given to the first part.

    Returns
    -------
    first : ZCDP
        The budget of the first part.
    rest_epsilon : float
        The ε at ``delta`` of the rest.

    Examples
    --------
    >>> from skuserdp.privacy import split_zcdp, zcdp_rho_for
    >>> first, rest_eps = split_zcdp(1.0, 1e-6, 0.2)
    >>> rho = zcdp_rho_for(1.0, 1e-6)
    >>> round(first.rho / rho, 12), rest_eps < 1.0
    (0.2, True)
    >>> first.rho + zcdp_rho_for(rest_eps, 1e-6) <= rho
    True
    """
    _check_positive_finite("epsilon", epsilon)
    _check_open_unit("delta", delta)
    _check_open_unit("share", share)
    rho = zcdp_rho_for(epsilon, delta)
    first = share * rho
    return ZCDP(first), _part_epsilon(rho - first, epsilon, delta)


def _part_epsilon(rho, epsilon, delta):
    """The ε at ``delta`` of a part ``rho`` of the budget ``(epsilon, delta)``;
    refuses a part whose ε is 0, which no release can be planned with.

    With ε far below δ (e.g. ε = 1e-9 at δ = 1e-6) ``ρ = zcdp_rho_for(ε,
    δ)`` is so small that δ alone covers a part of it: the conversion (a
    valid bound) gives ε = 0 -- a budget every estimator refuses.
    """
    part = zcdp_to_approx_dp(rho, delta).epsilon
    if not part > 0:
        raise ValueError(
            f"epsilon={epsilon!r} is too small for delta={delta!r}: split in "
            "zCDP, a part of it is worth epsilon 0 at this delta (delta alone "
            "covers it), and no release can be planned with epsilon 0. Use a "
            "larger epsilon (well above delta), a smaller delta, or delta=0.")
    return part


def split_zcdp_shares(budget, shares):
    """Split a zCDP budget into parts proportional to public ``shares``.

    zCDP composes additively, so parts ``ZCDP(w_i·ρ)`` with ``w_i =
    shares_i / Σ shares`` compose back to at most ``budget``. The parts are
    shrunk by a relative ``4·k`` machine epsilons (``k`` parts) so that
    floating-point summation cannot exceed ``ρ``; the composition is checked.

    Parameters
    ----------
    budget : ZCDP
        The total budget ``ρ``.
    shares : sequence of float
        Public non-negative weights with a positive sum.

    Returns
    -------
    parts : tuple of ZCDP
        One budget per share, in order.

    Examples
    --------
    >>> from skuserdp.privacy import ZCDP, compose, split_zcdp_shares
    >>> parts = split_zcdp_shares(ZCDP(1.0), [1, 1, 2])
    >>> [round(p.rho, 6) for p in parts]
    [0.25, 0.25, 0.5]
    >>> compose(*parts).rho <= 1.0
    True
    """
    if not isinstance(budget, ZCDP):
        raise TypeError(f"budget must be a ZCDP loss, got {type(budget).__name__}.")
    w = np.asarray(shares, dtype=np.float64)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) \
            or w.max() <= 0:
        raise ValueError("shares must be a non-empty sequence of finite numbers >= 0 "
                         "with a positive sum.")
    w = w / w.max()  # no overflow in the sum
    parts = budget.rho * (w / w.sum()) * (1.0 - 4.0 * w.size * np.finfo(float).eps)
    out = tuple(ZCDP(float(p)) for p in parts)
    if compose(*out).rho > budget.rho:  # cannot happen with the slack above
        raise ArithmeticError("split_zcdp_shares: the parts exceed the budget.")
    return out


def adaptive_query_budget(epsilon, delta, k, *, calibration="tight"):
    """Budget of each of ``k`` adaptively chosen queries (Levy et al., Thm 10).

    Parameters
    ----------
    epsilon : float
        Total ε, ``> 0``.
    delta : float
        Total δ in ``[0, 1)``.
    k : int
        Number of queries, ``>= 1``.
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: ``ZCDP(ρ/k)`` with ``ρ = zcdp_rho_for(ε, δ)`` (zCDP
        composition is additive), or ``PureDP(ε/k)`` when δ = 0.
        ``"paper"``: Theorem 10's ``ε₀ = ε/(2√(2k ln(2/δ)))`` (corrected by
        :func:`advanced_composition_step` when the advanced bound would
        exceed ε) and ``δ₀ = δ/(2k)``; ``PureDP(ε/k)`` when δ = 0.

    Returns
    -------
    budget : PureDP, ApproxDP or ZCDP
        The per-query budget.

    Examples
    --------
    >>> from skuserdp.privacy import adaptive_query_budget
    >>> adaptive_query_budget(1.0, 0.0, 4)
    PureDP(epsilon=0.25)
    >>> b = adaptive_query_budget(1.0, 1e-6, 100, calibration="paper")
    >>> round(b.epsilon, 5), b.delta
    (0.00928, 5e-09)
    """
    k = _check_count("k", k)
    if delta == 0:
        return PureDP(epsilon / k)
    if calibration == "paper":
        eps0 = advanced_composition_step(epsilon, delta / 2.0, k, rule="paper")
        return ApproxDP(eps0, delta / (2.0 * k))
    return ZCDP(zcdp_rho_for(epsilon, delta) / k)


def compose_adaptive_queries(loss, k, delta):
    """Total loss of ``k`` adaptive queries that each incurred ``loss``.

    zCDP losses add up; (ε, δ) losses, and pure losses when ``delta > 0``,
    use :func:`compose_homogeneous` with slack ``δ/2`` (Theorem 10's split:
    the better of basic and advanced composition); pure losses with
    ``delta = 0`` add up.

    Parameters
    ----------
    loss : PureDP, ApproxDP or ZCDP
        Loss of each query.
    k : int
        Number of queries.
    delta : float
        The total δ target (only used for (ε, δ) losses).

    Returns
    -------
    loss : PureDP, ApproxDP or ZCDP
        The composed loss.

    Examples
    --------
    >>> from skuserdp.privacy import compose_adaptive_queries, ZCDP
    >>> compose_adaptive_queries(ZCDP(0.01), 10, 1e-6)
    ZCDP(rho=0.1)
    """
    if isinstance(loss, ApproxDP) and loss.delta > 0:
        return compose_homogeneous(loss, k, delta / 2.0)
    if isinstance(loss, PureDP) and delta > 0:
        # Pure per-query losses (e.g. a one-coordinate WinsorizedMean whose
        # budget was an (ε₀, δ₀) split): advanced composition with slack δ/2
        # when it beats basic composition, as the split assumed.
        return compose_homogeneous(loss, k, delta / 2.0)
    return compose(*([loss] * int(k)))


def compose_spend(losses, delta):
    """The (ε, δ) of an adaptive sequence of losses of any kinds.

    This is what :class:`~skuserdp.privacy.BudgetAccountant` reports. Pure,
    approximate and zCDP losses may be mixed (``compose`` refuses to), in any
    order, each chosen adaptively. The tightest of two valid bounds is
    returned:

    * basic composition (only without zCDP losses): ``(Σε, Σδ)``;
    * Rényi composition: at every order α, a pure ε-DP loss has
      ``D_α ≤ min(ε, αε²/2)`` ([BS16]_ Proposition 3.3), a ρ-zCDP loss
      ``D_α ≤ αρ``, and these add up under adaptive composition
      (Mironov, "Rényi differential privacy", CSF 2017, Proposition 1).
      An (ε_i, δ_i)-DP loss is handled as δ_i-approximately ε_i-DP
      ([BS16]_ Section 8): its ε_i adds to the result and its δ_i to δ.
      The curve is converted at the δ left over, ``δ − Σδ_i``
      (:func:`~skuserdp.privacy.rdp_curve_epsilon`).

    Parameters
    ----------
    losses : sequence of PureDP, ApproxDP or ZCDP
        The losses of the mechanisms run on the same users.
    delta : float
        The δ of the result, in ``[0, 1)``. With zCDP losses it must exceed
        the approximate losses' ``Σδ_i``.

    Returns
    -------
    spend : ApproxDP
        ``ApproxDP(ε, δ')`` with ``δ' ≤ delta``; ``ApproxDP(0, 0)`` for no
        loss.

    Raises
    ------
    ValueError
        When no bound holds at ``delta``: zCDP losses with nothing left of
        ``delta`` after the approximate losses, or ``Σδ_i > delta``.

    Examples
    --------
    >>> from skuserdp.privacy import PureDP, ZCDP, compose_spend
    >>> compose_spend([PureDP(0.5), PureDP(0.25)], 0.0)
    ApproxDP(epsilon=0.75, delta=0.0)
    >>> spend = compose_spend([PureDP(0.1)] * 100, 1e-6)
    >>> spend.epsilon < 10.0  # the Rényi bound beats the basic sum
    True
    >>> round(compose_spend([ZCDP(0.05), PureDP(0.1)], 1e-6).epsilon, 3)
    1.549
    """
    losses = list(losses)
    delta = _check_delta_target(delta)
    if not losses:
        return ApproxDP(0.0, 0.0)
    _known_kinds(losses)
    pure = np.array([loss.epsilon for loss in losses if isinstance(loss, PureDP)])
    approx = [loss for loss in losses if isinstance(loss, ApproxDP)]
    rho = math.fsum(loss.rho for loss in losses if isinstance(loss, ZCDP))
    eps_a = math.fsum(loss.epsilon for loss in approx)
    delta_a = math.fsum(loss.delta for loss in approx)
    rest = delta - delta_a
    if rest < 0 or (rho > 0 and rest == 0):
        raise ValueError(
            f"no (ε, δ) bound holds at delta={delta:g}: the approximate losses "
            f"spend δ = {delta_a:g}" + (" and zCDP losses need δ left over."
                                        if rho > 0 else "."))
    candidates = []
    if rho == 0:
        candidates.append(ApproxDP(math.fsum(pure) + eps_a, delta_a))
    if rest > 0 and (rho > 0 or pure.size):
        half_sq = 0.5 * pure * pure

        def curve(alpha):
            return float(np.minimum(pure, alpha * half_sq).sum()) + alpha * rho

        candidates.append(ApproxDP(eps_a + rdp_curve_epsilon(curve, rest), delta))
    return min(candidates, key=lambda c: (c.epsilon, c.delta))


def split_for_fits(epsilon, delta, n_fits, *, zcdp):
    """Per-fit targets for ``n_fits`` fits on the same users, totalling (ε, δ).

    Parameters
    ----------
    epsilon : float
        Total ε, ``> 0``.
    delta : float
        Total δ in ``[0, 1)``.
    n_fits : int
        Number of fits, ``>= 1``.
    zcdp : bool
        ``True`` (needs ``delta > 0``): the fits are accounted in zCDP.
        Each gets ``ρ_i = zcdp_rho_for(ε, δ)/n_fits``, expressed as the
        target ``(ε_i, δ)`` with ``ε_i`` the ε of ``ρ_i`` at ``δ``; a fit
        accounted in zCDP at that target spends at most ``ρ_i`` and the
        fits compose to (ε, δ). A fit accounted otherwise spends up to
        ``(ε_i, δ)`` and breaks the total: check the composed spend with
        :func:`compose_spend`. ``False``: basic composition, ``(ε/n, δ/n)``
        each, valid for any fit.

    Returns
    -------
    epsilon_i, delta_i : float
        The target to give every fit.

    Examples
    --------
    >>> from skuserdp.privacy import ZCDP, compose_spend, split_for_fits, zcdp_rho_for
    >>> split_for_fits(1.0, 1e-6, 4, zcdp=False)
    (0.25, 2.5e-07)
    >>> eps_i, delta_i = split_for_fits(1.0, 1e-6, 4, zcdp=True)
    >>> rho_i = zcdp_rho_for(eps_i, delta_i)
    >>> round(compose_spend([ZCDP(rho_i)] * 4, 1e-6).epsilon, 9)
    1.0
    """
    _check_positive_finite("epsilon", epsilon)
    delta = _check_delta_target(delta)
    if isinstance(n_fits, bool) or int(n_fits) != n_fits or n_fits < 1:
        raise ValueError(f"n_fits must be an int >= 1, got {n_fits!r}.")
    n_fits = int(n_fits)
    if not zcdp:
        return epsilon / n_fits, delta / n_fits
    if delta <= 0:
        raise ValueError("a zCDP split needs delta > 0.")
    rho_i = zcdp_rho_for(epsilon, delta) / n_fits
    return _part_epsilon(rho_i, epsilon, delta), delta
