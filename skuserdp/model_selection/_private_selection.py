"""Private selection among K candidates (Levy et al., Algorithm 5; Theorem 6).

Levy, Sun, Amin, Kale, Kulesza, Mohri and Suresh, "Learning with User-Level
Privacy" [LSA+21]_, Appendix A (Algorithm 5, Lemma 1, Theorem 6); docs:
:ref:`papers-levy-selection`.

Algorithm (pure ε-DP before the cap; user-level, replace-one user, n public).
The input is the ``K × n`` table of per-user losses: entry ``(k, u)`` is the
average loss of candidate ``k`` on user ``u``'s rows, a function of user
``u``'s data only. Entries are projected onto the public range ``[0, B]``
(NaN ↦ B), a per-user step that costs no privacy.

* ``A_k`` = WinsorizedMean (Algorithm 1, one dimension, pure DP) of row ``k``
  at ``ε/3``: the repository's plan
  (:func:`skuserdp.mean.plan_winsorized_mean`) on ``[-B/2, B/2]`` (the losses
  shifted by ``B/2``), run by :func:`skuserdp.mean.winsorized_mean_from_plan`.
* Loop: draw ``J_t`` uniformly in ``{0..K-1}``, release ``V_t ~ A_{J_t}``
  with fresh randomness, stop with probability ``γ = α/(5K)``; return the
  pair ``(J, V)`` with the smallest ``V`` (ties by the smaller ``J``: a fixed
  total order on outputs, as Liu & Talwar's argument needs).

The stopping time and the ``J_t`` are drawn from their own random stream,
independently of the data, so the number of iterations is public
(:func:`skuserdp.mechanisms._random_stopping.random_stopping_schedule`). Privacy
(Liu & Talwar [LT19]_, Theorem 3.2): an ε/3-DP base mechanism gives an ε-DP
selection. The loop is capped at ``L_max`` runs, which costs
``δ = (1 + e^ε)(1 − γ)^L_max`` (:func:`skuserdp.privacy.random_stopping_privacy`);
by default ``L_max`` is the smallest cap with ``δ <= cap_delta``. All privacy
arithmetic is in :mod:`skuserdp.privacy`.
"""

import math
import numbers
from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import _num_samples, check_is_fitted

from ..exceptions import AccuracyWarning, ItemLevelPrivacyWarning
from ..mean import WinsorizedPlan, plan_winsorized_mean, winsorized_mean_from_plan
from ..mechanisms._random_stopping import random_stopping_schedule
from ..privacy import (
    ApproxDP,
    PureDP,
    random_stopping_call_budget,
    random_stopping_max_iter,
    random_stopping_privacy,
)
from ..users import user_means
from ..users._dask import refuse_dask
from ..users._groups import check_groups_alignment
from ..utils._docstrings import fill_doc
from ..utils._numeric import quiet_floating_point
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_positive_scalar
from ..utils._warnings import warn_at_caller

__all__ = [
    "SelectionResult",
    "Theorem6Bound",
    "private_selection",
    "select_model_privately",
    "theorem6_error_bound",
]

TAU_RULES = ("auto", "paper")
LOSSES = ("squared_error", "log_loss")
#: cap on the expected number of releases ``5K/alpha`` of a selection (each
#: a pass over the users): a smaller alpha would run for days, so it is
#: refused before any work
MAX_EXPECTED_RELEASES = 10 ** 6


class SelectionResult(NamedTuple):
    """Result of :func:`private_selection` (every field may be published).

    Attributes
    ----------
    index : int
        The selected candidate ``J`` (0-based row of ``user_losses``).
    value : float
        Its private loss estimate ``V`` (a WinsorizedMean release, shifted
        back to the loss scale; not clipped to ``[0, loss_bound]``).
    n_iterations : int
        Number of releases made. Data-independent (the stopping rule never
        looks at the data), so publishing it costs nothing.
    privacy_loss : ApproxDP or PureDP
        ``(3ε₀, (1 + e^{3ε₀})(1 − γ)^max_iter)`` with ε₀ the per-release loss
        (``<= ε/3``), so ``epsilon <= ε`` and ``delta <= cap_delta``;
        ``PureDP(3ε₀)`` without a cap (``max_iter=None``).
    stop_probability : float
        γ = α/(5K).
    tau : float
        Concentration radius used (public).
    max_iter : int or None
        Cap ``L_max`` on the number of releases (``None``: no cap).
    call_budget : PureDP
        Budget of every release (ε/3).
    plan : skuserdp.mean.WinsorizedPlan
        Public parameters of every release (the same for all candidates).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.model_selection import private_selection
    >>> losses = np.array([[0.2] * 100, [0.8] * 100])
    >>> result = private_selection(losses, epsilon=1.0, loss_bound=1.0,
    ...                            tau=0.05, alpha=1.0, random_state=0)
    >>> result.index, result.stop_probability
    (0, 0.1)
    """

    index: int
    value: float
    n_iterations: int
    privacy_loss: ApproxDP
    stop_probability: float
    tau: float
    max_iter: int
    call_budget: PureDP
    plan: WinsorizedPlan


class Theorem6Bound(NamedTuple):
    """Result of :func:`theorem6_error_bound`.

    Attributes
    ----------
    excess_risk : float
        Bound on ``L(θ_J; S) − min_k L(θ_k; S)`` holding with probability
        ``>= 1 − α``.
    min_users : float
        Theorem 6's condition on the number of users, corrected for the ε/3
        releases: the bound needs ``n_users >= min_users``.
    tau : float
        The concentration radius the bound assumes.
    constant : float
        ``c`` in ``c · B/(n√m ε) · log(25K log(5/α)/α²) · √(log(Kn) +
        log(10/α))`` (8 as printed; 24 corrected).

    Examples
    --------
    >>> from skuserdp.model_selection import theorem6_error_bound
    >>> bound = theorem6_error_bound(10_000, 4, samples_per_user=100,
    ...                              epsilon=1.0, loss_bound=1.0,
    ...                              tau="paper", halfwidth=2.0)
    >>> round(bound.constant, 6)
    24.0
    """

    excess_risk: float
    min_users: float
    tau: float
    constant: float


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise ValueError(f"alpha must be a real number in (0, 1], got {alpha!r}.")
    alpha = float(alpha)
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}.")
    return alpha


def _check_expected_releases(n_candidates, alpha):
    """Refuse a stopping probability whose expected loop is absurdly long."""
    expected = 5.0 * n_candidates / alpha
    if expected > MAX_EXPECTED_RELEASES:
        raise ValueError(
            f"alpha={alpha!r} with {n_candidates} candidate(s) means "
            f"5K/alpha = {expected:.3g} expected releases, above the cap "
            f"MAX_EXPECTED_RELEASES = {MAX_EXPECTED_RELEASES:.0e} (each release "
            "is a pass over the users; the selection would run for days). Use "
            f"alpha >= {5.0 * n_candidates / MAX_EXPECTED_RELEASES:.3g} or fewer "
            "candidates.")


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
    return int(value)


def _log_term(n_candidates, n_users, alpha):
    """``log(Kn) + log(10/α)`` (Lemma 1 with α₁ = α/5)."""
    return math.log(n_candidates * n_users) + math.log(10.0 / alpha)


def _resolve_tau(tau, *, loss_bound, samples_per_user, n_candidates, n_users, alpha):
    if not isinstance(tau, str):
        return check_positive_scalar(tau, "tau")
    if tau not in TAU_RULES:
        raise ValueError(f"tau must be a float > 0 or one of {TAU_RULES}, got {tau!r}.")
    if samples_per_user is None:
        raise ValueError(
            f"tau={tau!r} derives the concentration radius from the public number "
            "of rows per user (Lemma 1): set samples_per_user (the smallest number "
            "of rows any user has, known without looking at the data), or pass a "
            "public float tau."
        )
    m = _check_count(samples_per_user, "samples_per_user")
    spread = math.sqrt(_log_term(n_candidates, n_users, alpha) / m)
    if tau == "paper":
        tau = 0.5 * loss_bound * spread
    else:
        tau = loss_bound * spread / math.sqrt(2.0)
    if not math.isfinite(tau):
        raise ValueError(
            f"loss_bound={loss_bound:.3g} is too large: the concentration radius "
            "tau derived from it exceeds the float64 range. Use a smaller "
            "loss_bound (in the units of the loss).")
    return tau


def _theorem6_horizon(n_candidates, alpha):
    """Theorem 6's ``L = log(1/α₁)/γ`` and ``L/α₁`` (α₁ = α/5, γ = α₁/K)."""
    alpha1 = alpha / 5.0
    horizon = math.log(1.0 / alpha1) * n_candidates / alpha1
    return horizon, horizon / alpha1


@fill_doc
def private_selection(user_losses, *, epsilon, loss_bound, tau="auto",
                      samples_per_user=None, alpha=0.1, max_iter="auto",
                      cap_delta=1e-12, calibration="tight", random_state=None):
    """Select the candidate of least loss, ε-DP at user level (Algorithm 5).

    Levy et al.'s "idealized" selection: the loss of a uniformly drawn
    candidate is released with WinsorizedMean at ε/3, again and again with
    fresh noise, until a coin of probability ``γ = α/(5K)`` stops the loop;
    the candidate with the smallest released loss wins. By Liu & Talwar's
    random-stopping theorem the selection is ε-DP. Expected cost: ``5K/α``
    releases, each O(n log n).

    The guarantee is *user-level*: two inputs are neighbours when they differ
    in one column (all the losses of one user); the number of users is
    public.

    Parameters
    ----------
    user_losses : array-like of shape (n_candidates, n_users)
        ``user_losses[k, u]``: the average loss of candidate ``k`` on user
        ``u``'s rows. Each column must depend only on that user's data. Not
        modified. Values are projected onto ``[0, loss_bound]`` and NaN is
        treated as ``loss_bound`` (the worst loss), column by column: a
        per-user step, so it costs no privacy and reveals nothing (no
        warning is raised about it). For losses in ``[-B, B]``, pass
        ``user_losses + B`` and ``loss_bound=2B`` (:ref:`papers-levy-selection`).
    epsilon : float
        Total ε of the selection, ``> 0``.
    loss_bound : float
        Public bound ``B``: losses lie in ``[0, B]``, ``> 0``.
    tau : float or {"auto", "paper"}, default="auto"
        Public concentration radius of each candidate's per-user losses
        (accuracy only, never privacy):

        - float: a public value, never computed from the private data;
        - ``"auto"``: Lemma 1's radius with the sub-Gaussian tail constant
          corrected, ``B·√((log(Kn) + log(10/α))/(2m))`` (Hoeffding for an
          average of ``m`` values in ``[0, B]``, union over the ``K·n``
          entries, failure α/5);
        - ``"paper"``: the printed ``(B/2)·√((log(Kn) + log(10/α))/m)``,
          a factor √2 smaller than Hoeffding allows (its union bound gives a
          failure probability of about ``√(2Knα/5)``, not α/5).

        Both rules need ``samples_per_user``.
    samples_per_user : int, default=None
        Public number ``m`` of rows per user (the smallest any user has),
        for ``tau="auto"`` or ``"paper"``; ignored for a float ``tau``.
    alpha : float, default=0.1
        Failure probability α in ``(0, 1]`` of Theorem 6's accuracy
        guarantee. Sets the stopping probability ``γ = α/(5K)``; the
        expected number of releases ``5K/α`` must not exceed
        ``MAX_EXPECTED_RELEASES`` (10⁶), or a ``ValueError`` is raised
        before any work.
    max_iter : int, "auto" or None, default="auto"
        Cap on the number of releases. ``"auto"``: the smallest cap whose
        privacy cost ``(1 + e^ε)(1 − γ)^max_iter`` is at most ``cap_delta``;
        an int whose cost exceeds ``cap_delta`` is an error. ``None``: no
        cap, so the selection is pure ε-DP (δ = 0); the number of releases
        is geometric with mean ``1/γ = 5K/alpha`` (more than ``t`` times the
        mean with probability about ``e^{-t}``).
    cap_delta : float, default=1e-12
        Largest δ the cap may cost, in ``(0, 1)``.
    calibration : {"tight", "paper"}, default="tight"
        The WinsorizedMean plan of every release (see
        :mod:`skuserdp.mean._winsorized`); both are pure ε/3-DP.
        ``"paper"``: Algorithm 1's equal split of ε/3 between PrivateRange
        and Laplace noise, window ``± 3τ`` (the printed ``± 2τ`` can clip,
        :ref:`papers-levy-range`). ``"tight"``:
        narrower bins, a range budget sized by its
        accuracy, or no range step at all when a plain clip-and-noise on
        ``[0, B]`` has less noise.
    {random_state}

    Returns
    -------
    result : SelectionResult
        ``index``, ``value``, ``n_iterations``, ``privacy_loss`` and the
        public parameters (γ, τ, ``max_iter``, per-release budget and plan).

    Raises
    ------
    ValueError
        On a wrong shape, non-numeric losses, ``epsilon <= 0``, a missing
        ``samples_per_user`` with a τ rule, a ``max_iter`` too small for
        ``cap_delta``, or an ``alpha`` so small that ``5K/alpha`` exceeds
        ``MAX_EXPECTED_RELEASES``.

    Warns
    -----
    AccuracyWarning
        When, from public values only, the range steps of the ``L`` releases
        Theorem 6's proof allows for may miss the bulk with probability
        above α/5 (too few users; only with ``calibration="paper"``).

    See Also
    --------
    select_model_privately : The same selection for fitted estimators.
    theorem6_error_bound : The accuracy guarantee.

    Notes
    -----
    Theorem 6 (corrected, :func:`theorem6_error_bound`): with probability
    at least ``1 − α`` the selected candidate's average loss exceeds the
    best one's by at most about ``24 h/(nε) · log(25K log(5/α)/α²)`` where
    ``h`` is the window half-width (3τ here). The released ``value`` is
    noisy and biased downwards (it is a minimum over many noisy releases);
    do not use it as an unbiased loss estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.model_selection import private_selection
    >>> rng = np.random.default_rng(0)
    >>> # 3 candidates, 2000 users with 20 rows each: average 0/1 losses
    >>> losses = rng.binomial(20, [[0.30], [0.10], [0.40]], size=(3, 2000)) / 20
    >>> result = private_selection(losses, epsilon=1.0, loss_bound=1.0,
    ...                            samples_per_user=20, alpha=0.5,
    ...                            random_state=0)
    >>> result.index, round(result.value, 2)
    (1, 0.09)
    >>> result.privacy_loss.epsilon <= 1.0, result.privacy_loss.delta <= 1e-12
    (True, True)
    """
    with quiet_floating_point():  # no warning may depend on the data
        L = np.array(user_losses, dtype=np.float64)  # a copy: the input is kept
        if L.ndim != 2 or L.shape[0] < 1 or L.shape[1] < 1:
            raise ValueError(
                "user_losses must be a 2-d array of shape (n_candidates, n_users) with "
                f"at least one candidate and one user, got shape {L.shape}."
            )
        n_candidates, n_users = L.shape
        epsilon = check_positive_scalar(epsilon, "epsilon")
        B = check_positive_scalar(loss_bound, "loss_bound")
        alpha = _check_alpha(alpha)
        _check_expected_releases(n_candidates, alpha)
        cap_delta = float(cap_delta)
        if not 0 < cap_delta < 1:
            raise ValueError(f"cap_delta must be in (0, 1), got {cap_delta!r}.")
        if calibration not in ("tight", "paper"):
            raise ValueError(
                f"calibration must be 'tight' or 'paper', got {calibration!r}."
            )
        tau = _resolve_tau(tau, loss_bound=B, samples_per_user=samples_per_user,
                           n_candidates=n_candidates, n_users=n_users, alpha=alpha)

        # Public parameters: all from (K, n, ε, B, τ, α, cap_delta) only.
        gamma = alpha / (5.0 * n_candidates)
        call_budget = random_stopping_call_budget(epsilon)
        if isinstance(max_iter, str) and max_iter == "auto":
            max_iter = random_stopping_max_iter(epsilon, gamma, cap_delta)
        elif max_iter is not None:
            max_iter = _check_count(max_iter, "max_iter")
        horizon, ratio = _theorem6_horizon(n_candidates, alpha)
        # Tight plans fail their range step w.p. <= gamma/2 each: union over the
        # L releases of Theorem 6's proof gives alpha/5 (its Event 4).
        plan = plan_winsorized_mean(n_users, 1, tau=tau, value_range=B / 2.0,
                                    budget=call_budget, gamma=2.0 / ratio,
                                    calibration=calibration)
        privacy_loss = random_stopping_privacy(plan.loss, gamma, max_iter)
        if max_iter is not None and privacy_loss.delta > cap_delta:
            raise ValueError(
                f"max_iter={max_iter} caps the loop too early: it costs delta="
                f"{privacy_loss.delta:.3g} > cap_delta={cap_delta:g}. Use "
                "max_iter='auto' or a larger cap."
            )
        if horizon * plan.range_failure_bound > alpha / 5.0:
            warn_at_caller(
                f"With {n_users} users the range step of the {n_candidates}-candidate "
                f"selection may miss the bulk with probability up to "
                f"{min(1.0, horizon * plan.range_failure_bound):.2g} > alpha/5: "
                "Theorem 6's accuracy guarantee does not hold (the privacy guarantee "
                "is unaffected). Use more users, a larger epsilon or "
                "calibration='tight'.", AccuracyWarning)

        # Per-user projection onto [0, B] (NaN -> B): free, and makes the
        # support assumption true. Shift to the plan's range [-B/2, B/2].
        L[np.isnan(L)] = B
        np.clip(L, 0.0, B, out=L)
        center = B / 2.0
        columns = [np.ascontiguousarray(row - center).reshape(-1, 1) for row in L]

        control_seed, release_seed = make_seed_sequence(random_state).spawn(2)
        n_iterations, drawn = random_stopping_schedule(
            gamma, n_candidates, generator_from(control_seed), max_iter=max_iter)
        best = (math.inf, n_candidates)
        for j in drawn:
            (seed,) = release_seed.spawn(1)
            v = winsorized_mean_from_plan(columns[j], plan, random_state=seed)
            best = min(best, (float(v[0]) + center, j))
        value, index = best
        return SelectionResult(
            index=index, value=value, n_iterations=n_iterations,
            privacy_loss=privacy_loss, stop_probability=gamma, tau=tau,
            max_iter=max_iter, call_budget=call_budget, plan=plan,
        )


def theorem6_error_bound(n_users, n_candidates, *, samples_per_user, epsilon,
                         loss_bound, alpha=0.1, tau="auto", halfwidth=3.0):
    """Theorem 6's accuracy bound for Algorithm 5, corrected.

    With probability at least ``1 − α`` (over the users' data and the
    algorithm), the selected candidate's average loss exceeds the best
    one's by at most::

        2 · b · log(L/α₁) = 24 h/(n ε) · log(25 K log(5/α)/α²)

    where ``b = 4h/(n·ε/3)`` is the Laplace scale of one release at ε/3
    with a window of half-width ``h`` (sensitivity ``2h/n``, half of ε/3
    for the noise), ``α₁ = α/5``, ``L = log(1/α₁)/γ`` and ``γ = α₁/K``.
    The proof (App. A) needs five events of probability ``>= 1 − α₁`` each:
    every per-user loss within τ of its mean (Lemma 1), the best candidate
    drawn, at most ``L`` releases, no range failure in ``L`` releases — which
    needs ``n >= (24/ε) log(L/α₁ · B/τ)`` since each PrivateRange runs at
    ε/6 and misses with probability ``<= (B/τ) e^{-nε/24}`` — and all ``L``
    Laplace draws below ``b log(L/α₁)``.

    The printed Theorem 6 applies Theorem 1 at ε although every release runs
    at ε/3 (:ref:`papers-levy-selection`): with
    the proof's own window ``h = 2τ`` (Algorithm
    1's ``[μ̂ − 2τ, μ̂ + 2τ]``) and its ``τ = (B/2)√(·/m)``, the constants
    are 24 (not 8) in the bound and 24 (not 8) in the condition on n. This
    implementation widens the window to ``h = 3τ`` (the printed ``± 2τ``
    can clip a concentrated value, :ref:`papers-levy-range`; calibration "paper"), which
    makes the bound's constant 36, and its default τ is Lemma 1's radius
    with the tail constant corrected (``√2`` larger), which makes it
    ``36√2 ≈ 50.9``. The condition on n does not depend on ``h``:

    ==========  =========  ==============================  ===========
    ``tau``     halfwidth  what                            constant
    ==========  =========  ==============================  ===========
    "paper"     2.0        printed algorithm, corrected    24
    "paper"     3.0        this window, printed τ          36
    "auto"      3.0        this implementation (default)   36√2
    ==========  =========  ==============================  ===========

    ``calibration="tight"`` releases use ``h = 2.25τ`` and their own budget
    split; the formula covers them when their noise scale is at most
    ``12h/(nε)`` for the ``h`` passed (check ``result.plan``). The lattice
    of the releases (:mod:`skuserdp.mechanisms._lattice`) widens the noise
    scale by a factor below ``1 + 2^-10`` and biases a release by at most
    one grid step (about ``h/1000``); both are ignored here.

    Parameters
    ----------
    n_users : int
        Number of users n, ``>= 1``.
    n_candidates : int
        Number of candidates K, ``>= 1``.
    samples_per_user : int
        Number of rows per user m, ``>= 1``.
    epsilon : float
        Total ε of the selection, ``> 0``.
    loss_bound : float
        Losses lie in ``[0, loss_bound]``, ``> 0``.
    alpha : float, default=0.1
        Failure probability in ``(0, 1]``.
    tau : float or {"auto", "paper"}, default="auto"
        Concentration radius, as in :func:`private_selection`.
    halfwidth : float, default=3.0
        Window half-width in units of τ: 2.0 for the printed algorithm, 3.0
        for this implementation.

    Returns
    -------
    bound : Theorem6Bound
        ``(excess_risk, min_users, tau, constant)``.

    Examples
    --------
    >>> from skuserdp.model_selection import theorem6_error_bound
    >>> bound = theorem6_error_bound(10_000, 4, samples_per_user=100,
    ...                              epsilon=1.0, loss_bound=1.0)
    >>> round(bound.constant, 2), round(bound.excess_risk, 3)
    (50.91, 0.021)
    >>> bound.min_users < 10_000
    True
    """
    n_users = _check_count(n_users, "n_users")
    n_candidates = _check_count(n_candidates, "n_candidates")
    m = _check_count(samples_per_user, "samples_per_user")
    epsilon = check_positive_scalar(epsilon, "epsilon")
    B = check_positive_scalar(loss_bound, "loss_bound")
    alpha = _check_alpha(alpha)
    halfwidth = check_positive_scalar(halfwidth, "halfwidth")
    tau = _resolve_tau(tau, loss_bound=B, samples_per_user=m,
                       n_candidates=n_candidates, n_users=n_users, alpha=alpha)
    _, ratio = _theorem6_horizon(n_candidates, alpha)
    log_ratio = math.log(ratio)  # log(L/α₁) = log(25K log(5/α)/α²)
    excess = 24.0 * halfwidth * tau / (n_users * epsilon) * log_ratio
    min_users = 24.0 / epsilon * math.log(ratio * B / tau)
    scale = B / (n_users * math.sqrt(m) * epsilon) * log_ratio * math.sqrt(
        _log_term(n_candidates, n_users, alpha))
    return Theorem6Bound(excess_risk=excess, min_users=min_users, tau=tau,
                         constant=excess / scale)


def _row_losses(estimator, X, y, loss, n_samples):
    """Per-row losses of one fitted candidate (shape ``(n_samples,)``)."""
    if callable(loss):
        out = np.asarray(loss(estimator, X, y), dtype=np.float64)
        if out.shape != (n_samples,):
            raise ValueError(
                f"loss must return one value per row, shape ({n_samples},); got "
                f"{out.shape}."
            )
        return out
    if loss == "squared_error":
        pred = np.asarray(estimator.predict(X), dtype=np.float64)
        target = np.asarray(y, dtype=np.float64)
        diff = pred.reshape(n_samples, -1) - target.reshape(n_samples, -1)
        # a huge row's loss overflows to inf (or NaN), projected onto B below
        with np.errstate(over="ignore", invalid="ignore"):
            return np.mean(diff * diff, axis=1)
    # log_loss: -log of the probability given to the true class (a label the
    # candidate does not know gets probability 0).
    proba = np.asarray(estimator.predict_proba(X), dtype=np.float64)
    classes = np.asarray(estimator.classes_)
    labels = np.asarray(y)
    order = np.argsort(classes, kind="stable")
    pos = np.searchsorted(classes[order], labels)
    pos = np.clip(pos, 0, classes.shape[0] - 1)
    known = classes[order][pos] == labels
    p = np.where(known, proba[np.arange(n_samples), order[pos]], 0.0)
    with np.errstate(divide="ignore"):
        return -np.log(p)


def _user_losses(candidates, X, y, groups, loss, loss_bound, rows_of=None):
    """The ``(n_users, K)`` table of every user's average loss per candidate.

    ``rows_of(candidate, X)`` gives the estimator and rows each candidate's
    loss is computed on (default: the candidate and ``X``; the search passes
    the private step of a Pipeline and the rows it sees). Per-row losses are
    projected onto ``[0, B]`` (NaN -> B) first: a per-row, hence per-user,
    step that costs no privacy.
    """
    n_samples = _num_samples(X)  # also sparse matrices, lists, DataFrames
    rows = np.empty((n_samples, len(candidates)))
    for k, est in enumerate(candidates):
        est, X_k = (est, X) if rows_of is None else rows_of(est, X)
        rows[:, k] = _row_losses(est, X_k, y, loss, n_samples)
    rows[np.isnan(rows)] = loss_bound
    np.clip(rows, 0.0, loss_bound, out=rows)
    return user_means(rows, groups).means


@fill_doc
def select_model_privately(candidates, X, y, *, groups, epsilon, loss_bound,
                           loss="squared_error", samples_per_user=None,
                           tau="auto", alpha=0.1, calibration="tight",
                           random_state=None):
    """Choose among fitted estimators with user-level ε-DP (Algorithm 5).

    Each candidate's per-row loss on ``(X, y)`` is averaged over each user's
    rows (one value per user and candidate) and :func:`private_selection`
    picks the candidate of least average loss, ε-DP at user level. Typical
    use: choose a hyper-parameter (a ridge ``alpha``, a tree depth) on
    private validation users.

    .. warning::
       The guarantee covers **only the selection**, for the users in ``X``.
       The candidates must have been fitted on public data or on users
       *disjoint* from ``X``'s users. Candidates fitted (even privately) on
       the same users compose with the selection: the total privacy loss is
       then the fits' loss plus ``epsilon``, and a non-private fit on these
       users voids the guarantee altogether.

    {user_level_note}

    Parameters
    ----------
    candidates : list of fitted estimators
        The K candidates, at least one. Only ``predict`` (or
        ``predict_proba``) is called; they are not modified.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Private validation rows, passed as they are to the candidates'
        ``predict`` (or to ``loss``). Not modified.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets (may be ``None`` for a callable ``loss`` that ignores it).
    groups : array-like of shape (n_samples,) or None
        User id of every row (any hashable labels; a pandas Series is fine).
        This defines the unit of privacy. There is no default: ``None`` must
        be passed explicitly; it treats every row as its own user and emits
        an :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`.
    epsilon : float
        Total ε of the selection, ``> 0``.
    loss_bound : float
        Public bound ``B``: every per-row loss is clipped to ``[0, B]``
        (NaN counts as ``B``) before averaging. Only accuracy depends on it.
    loss : {"squared_error", "log_loss"} or callable, default="squared_error"
        ``"squared_error"``: ``(y − predict(X))²`` (averaged over outputs);
        ``"log_loss"``: ``−log predict_proba(X)[true class]`` (a label the
        candidate has not seen counts as ``B``); a callable
        ``loss(estimator, X, y)`` must return one loss per row, each a
        function of that row only (otherwise a user's average can depend on
        other users' rows, and the guarantee is void).
    samples_per_user : int, default=None
        Public number of rows per user (the smallest any user has), needed
        by ``tau="auto"``. Must be known without looking at the data.
    tau : float or {"auto", "paper"}, default="auto"
        Concentration radius of the per-user losses, see
        :func:`private_selection`.
    alpha : float, default=0.1
        Failure probability of the accuracy guarantee; the expected number
        of releases is ``5K/alpha``, at most 10⁶ (``ValueError`` otherwise,
        before any candidate predicts).
    calibration : {"tight", "paper"}, default="tight"
        Plan of the releases, see :func:`private_selection`.
    {random_state}

    Returns
    -------
    estimator : estimator
        ``candidates[result.index]`` (the same object, not a copy).
    result : SelectionResult
        See :func:`private_selection`.

    See Also
    --------
    private_selection : The pure-function core on a table of per-user losses.

    Examples
    --------
    Choose a ridge ``alpha`` on private users; the candidates are fitted on
    a small public sample, disjoint from the private users:

    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from skuserdp.model_selection import select_model_privately
    >>> rng = np.random.default_rng(0)
    >>> w = rng.normal(size=5)
    >>> X_pub = rng.normal(size=(20, 5))
    >>> y_pub = X_pub @ w + rng.normal(size=20)
    >>> candidates = [Ridge(alpha=a).fit(X_pub, y_pub) for a in (0.1, 10.0, 1e3)]
    >>> groups = np.repeat(np.arange(2000), 10)  # 2000 private users, 10 rows
    >>> X = rng.normal(size=(20_000, 5))
    >>> y = X @ w + rng.normal(size=20_000)
    >>> best, result = select_model_privately(
    ...     candidates, X, y, groups=groups, epsilon=1.0, loss_bound=25.0,
    ...     samples_per_user=10, alpha=0.5, random_state=0)
    >>> best.alpha  # the least average loss on the private users (1.17)
    10.0
    >>> result.privacy_loss.epsilon <= 1.0, result.n_iterations
    (True, 98)
    """
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__len__"):
        raise ValueError("candidates must be a list of fitted estimators.")
    candidates = list(candidates)
    refuse_dask("select_model_privately", X, y, groups)
    if not candidates:
        raise ValueError("candidates must contain at least one fitted estimator.")
    for est in candidates:
        check_is_fitted(est)
    if not (callable(loss) or (isinstance(loss, str) and loss in LOSSES)):
        raise ValueError(f"loss must be one of {LOSSES} or a callable, got {loss!r}.")
    B = check_positive_scalar(loss_bound, "loss_bound")
    # checked before any candidate predicts (the loop's length is public)
    _check_expected_releases(len(candidates), _check_alpha(alpha))
    n_samples = _num_samples(X)  # also sparse matrices, lists, DataFrames
    if y is not None and len(y) != n_samples:
        raise ValueError(
            f"X has {n_samples} rows but y has {len(y)}; pass one target per row."
        )
    if y is None and not callable(loss):
        raise ValueError(f"loss={loss!r} needs y.")
    check_groups_alignment(groups, X)
    if groups is None:
        warn_at_caller(
            "select_model_privately got groups=None: every row is treated as its "
            "own user, so the guarantee protects single rows (item-level), not "
            "users. Pass groups= (one user id per row).", ItemLevelPrivacyWarning)
    with quiet_floating_point():  # the candidates predict on private rows
        per_user = _user_losses(candidates, X, y, groups, loss, B).T
    result = private_selection(
        per_user, epsilon=epsilon, loss_bound=B, tau=tau,
        samples_per_user=samples_per_user, alpha=alpha, calibration=calibration,
        random_state=random_state,
    )
    return candidates[result.index], result
