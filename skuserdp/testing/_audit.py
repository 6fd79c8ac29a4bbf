"""Empirical privacy audits: statistically valid lower bounds on epsilon.

A mechanism ``M`` is (epsilon, delta)-differentially private if for all
neighbouring datasets ``D`` and ``D'`` and every event ``E``::

    P[M(D) in E] <= exp(epsilon) * P[M(D') in E] + delta.

Running ``M`` many times on a fixed pair ``D, D'`` and estimating both
probabilities for one event therefore gives a *lower* bound on every epsilon
for which ``M`` can be (epsilon, delta)-DP. If that lower bound exceeds the
epsilon an implementation claims, the implementation is wrong (with the stated
confidence). An audit that finds no violation proves nothing: it only shows
that this pair of datasets, this statistic and this number of runs did not
expose a bug.

The bound is made valid despite searching over many events by splitting the
runs: the event is chosen on one part and the probabilities are estimated on
the other, independent part with exact Clopper-Pearson intervals.
"""

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from joblib import effective_n_jobs
from scipy.stats import beta as _beta
from sklearn.base import clone
from sklearn.utils.parallel import Parallel, delayed

from skuserdp.users import user_means
from skuserdp.utils._random import data_seed_sequence, generator_from
from skuserdp.utils._validation import check_rows

__all__ = [
    "AuditResult",
    "audit_estimator",
    "epsilon_lower_bound",
    "worst_case_mean_neighbours",
]

_NAMES = ("D", "D'")


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an empirical privacy audit.

    Attributes
    ----------
    epsilon_lower : float
        A ``1 - alpha`` confidence lower bound on every epsilon for which the
        audited mechanism can be (epsilon, delta)-DP. Never negative.
    epsilon_claimed : float or None
        The epsilon the implementation claims, if known.
    delta : float
        The delta at which the bound holds.
    alpha : float
        The bound holds with probability at least ``1 - alpha`` over the runs
        of the mechanism and the random split.
    n_runs : int
        Number of runs of the mechanism per dataset (the smaller of the two
        when they differ).
    event : str
        The threshold event used for the bound, for example
        ``"P[T >= 0.31] on D vs D'"``: the probability of ``T >= 0.31`` under
        ``D`` is compared with the one under ``D'``.
    counts : tuple of int
        ``(k_num, n_num, k_den, n_den)``: how many of the ``n_num`` evaluation
        runs on the numerator dataset and of the ``n_den`` evaluation runs on
        the denominator dataset fell in the event.

    Examples
    --------
    >>> from skuserdp.testing import AuditResult
    >>> r = AuditResult(1.3, 1.0, 0.0, 0.05, 1000, "P[T >= 1] on D vs D'",
    ...                 (100, 500, 20, 500))
    >>> r.violation
    True
    """

    epsilon_lower: float
    epsilon_claimed: float | None
    delta: float
    alpha: float
    n_runs: int
    event: str
    counts: tuple

    @property
    def violation(self):
        """bool : Whether the lower bound exceeds the claimed epsilon."""
        return self.epsilon_claimed is not None and (
            self.epsilon_lower > self.epsilon_claimed
        )

    def __str__(self):
        k_num, n_num, k_den, n_den = self.counts
        if self.epsilon_claimed is None:
            claim = "no claimed epsilon"
        else:
            verdict = "VIOLATION" if self.violation else "no violation"
            claim = f"claimed epsilon = {self.epsilon_claimed:.4g}: {verdict}"
        return (
            f"epsilon >= {self.epsilon_lower:.4f} with "
            f"{100 * (1 - self.alpha):.4g}% confidence at delta = {self.delta:.3g} "
            f"({claim}); event {self.event}, evaluation counts "
            f"{k_num}/{n_num} vs {k_den}/{n_den}; {self.n_runs} runs per dataset"
        )


# --------------------------------------------------------------------------
# Pure statistical core
# --------------------------------------------------------------------------


def _cp_lower(k, n, a):
    """One-sided Clopper-Pearson lower bound at confidence ``1 - a``."""
    k = np.asarray(k, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), k.shape)
    out = np.zeros(k.shape)
    pos = k > 0
    out[pos] = _beta.ppf(a, k[pos], n[pos] - k[pos] + 1)
    return out


def _cp_upper(k, n, a):
    """One-sided Clopper-Pearson upper bound at confidence ``1 - a``."""
    k = np.asarray(k, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), k.shape)
    out = np.ones(k.shape)
    below = k < n
    out[below] = _beta.ppf(1 - a, k[below] + 1, n[below] - k[below])
    return out


def _log_ratio_bound(p_lo, p_hi, delta):
    """``log((p_lo - delta) / p_hi)`` where ``p_lo > delta``, else ``-inf``."""
    p_lo = np.asarray(p_lo, dtype=float)
    out = np.full(p_lo.shape, -np.inf)
    ok = p_lo > delta
    out[ok] = np.log((p_lo[ok] - delta) / np.asarray(p_hi, dtype=float)[ok])
    return out


def _event_counts(sorted_values, thresholds):
    """Counts of ``T >= t`` and ``T <= t`` for each threshold ``t``."""
    n = sorted_values.shape[0]
    ge = n - np.searchsorted(sorted_values, thresholds, side="left")
    le = np.searchsorted(sorted_values, thresholds, side="right")
    return ge, le


def _check_samples(samples, name):
    arr = np.asarray(samples, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got an array of shape {arr.shape}.")
    if arr.shape[0] < 2:
        raise ValueError(
            f"{name} needs at least 2 values (one for selection, one for "
            f"evaluation), got {arr.shape[0]}."
        )
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN.")
    return arr


def _check_real(value, name, low, high, low_open, high_open):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if not np.isfinite(value) or too_low or too_high:
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}, got {value!r}.")
    return value


def _check_epsilon_claimed(epsilon_claimed):
    if epsilon_claimed is None:
        return None
    if isinstance(epsilon_claimed, bool) or not isinstance(
        epsilon_claimed, numbers.Real
    ):
        raise ValueError(
            f"epsilon_claimed must be None or a real number, got {epsilon_claimed!r}."
        )
    value = float(epsilon_claimed)
    if np.isnan(value) or value < 0:
        raise ValueError(f"epsilon_claimed must be >= 0, got {epsilon_claimed!r}.")
    return value


def _check_positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}.")
    return int(value)


def _split(values, fraction, rng):
    n = values.shape[0]
    n_sel = min(max(int(np.floor(fraction * n)), 1), n - 1)
    perm = rng.permutation(n)
    return np.sort(values[perm[:n_sel]]), np.sort(values[perm[n_sel:]])


def epsilon_lower_bound(
    samples,
    samples_prime,
    *,
    delta=0.0,
    alpha=0.05,
    selection_fraction=0.5,
    n_thresholds=64,
    epsilon_claimed=None,
    random_state=0,
):
    """Confidence lower bound on epsilon from samples of a scalar statistic.

    ``samples`` and ``samples_prime`` are independent runs of a scalar
    statistic ``T`` of a mechanism's output on two neighbouring datasets
    ``D`` and ``D'``. Each set is split at random into a *selection* part and
    an *evaluation* part. On the selection part the threshold events
    ``{T >= t}`` and ``{T <= t}`` (``t`` at ``n_thresholds`` quantiles of the
    pooled selection samples), compared in both orientations (``D`` over
    ``D'`` and ``D'`` over ``D``), are scored by the Clopper-Pearson lower
    bound they would give, and the best one is chosen. On the evaluation part
    only, for the chosen event ``E`` with numerator dataset ``A`` and
    denominator ``B``::

        p_lo = Clopper-Pearson lower bound of P_A(E), confidence 1 - alpha/2
        p_hi = Clopper-Pearson upper bound of P_B(E), confidence 1 - alpha/2
        epsilon_lower = max(0, log((p_lo - delta) / p_hi)) if p_lo > delta
                        else 0

    Because ``E`` does not depend on the evaluation samples, both one-sided
    intervals are exact and, by the union bound, hold together with
    probability at least ``1 - alpha``. On that event an (epsilon, delta)-DP
    mechanism satisfies ``p_lo <= P_A(E) <= exp(epsilon) * P_B(E) + delta
    <= exp(epsilon) * p_hi + delta``, that is ``epsilon >= epsilon_lower``.

    Parameters
    ----------
    samples : array-like of shape (n_runs,)
        Values of the statistic on ``D``, one per independent run. Ties and
        discrete values are fine; NaN is not.
    samples_prime : array-like of shape (n_runs_prime,)
        Values of the statistic on ``D'``.
    delta : float, default=0.0
        The delta of the (epsilon, delta)-DP guarantee being audited, in
        ``[0, 1)``.
    alpha : float, default=0.05
        One minus the confidence level, in ``(0, 1)``.
    selection_fraction : float, default=0.5
        Fraction of each sample set used to choose the event, in ``(0, 1)``.
    n_thresholds : int, default=64
        Number of quantiles of the pooled selection samples used as
        thresholds.
    epsilon_claimed : float or None, default=None
        The claimed epsilon, stored in the result to decide
        :attr:`AuditResult.violation`.
    random_state : None, int, numpy.random.RandomState or \
numpy.random.SeedSequence, default=0
        Controls the random split.

    Returns
    -------
    result : AuditResult
        The lower bound together with the event and counts behind it.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.testing import epsilon_lower_bound
    >>> rng = np.random.default_rng(0)
    >>> t = rng.laplace(0.0, 1.0, size=5000)        # Laplace mechanism, eps = 1
    >>> t_prime = rng.laplace(1.0, 1.0, size=5000)  # neighbour, sensitivity 1
    >>> result = epsilon_lower_bound(t, t_prime, epsilon_claimed=1.0)
    >>> bool(0.0 < result.epsilon_lower <= 1.0)
    True
    >>> result.violation
    False
    """
    s = [
        _check_samples(samples, "samples"),
        _check_samples(samples_prime, "samples_prime"),
    ]
    delta = _check_real(delta, "delta", 0.0, 1.0, low_open=False, high_open=True)
    alpha = _check_real(alpha, "alpha", 0.0, 1.0, low_open=True, high_open=True)
    selection_fraction = _check_real(
        selection_fraction, "selection_fraction", 0.0, 1.0, True, True
    )
    n_thresholds = _check_positive_int(n_thresholds, "n_thresholds")
    epsilon_claimed = _check_epsilon_claimed(epsilon_claimed)

    rng = generator_from(data_seed_sequence(random_state))
    sel, ev = zip(*(_split(x, selection_fraction, rng) for x in s))
    a_half = alpha / 2

    # Candidate thresholds: observed values (method="inverted_cdf") at evenly
    # spaced quantiles of the pooled selection samples.
    pooled = np.concatenate(sel)
    thresholds = np.unique(
        np.quantile(pooled, np.linspace(0.0, 1.0, n_thresholds), method="inverted_cdf")
    )

    # Candidate events, in a fixed order: (threshold index, kind, numerator).
    sel_counts = [_event_counts(x, thresholds) for x in sel]  # [dataset][kind]
    n_sel = [x.shape[0] for x in sel]
    cand_t, cand_kind, cand_num, k_num, n_num, k_den, n_den = ([] for _ in range(7))
    for kind in (0, 1):  # 0: T >= t, 1: T <= t
        for num in (0, 1):  # numerator dataset index
            den = 1 - num
            cand_t.append(np.arange(thresholds.shape[0]))
            cand_kind.append(np.full(thresholds.shape[0], kind))
            cand_num.append(np.full(thresholds.shape[0], num))
            k_num.append(sel_counts[num][kind])
            n_num.append(np.full(thresholds.shape[0], n_sel[num]))
            k_den.append(sel_counts[den][kind])
            n_den.append(np.full(thresholds.shape[0], n_sel[den]))
    cand_t, cand_kind, cand_num, k_num, n_num, k_den, n_den = map(
        np.concatenate, (cand_t, cand_kind, cand_num, k_num, n_num, k_den, n_den)
    )
    score = _log_ratio_bound(
        _cp_lower(k_num, n_num, a_half), _cp_upper(k_den, n_den, a_half), delta
    )
    # Tie-break (and fallback when no event gives a positive p_lo - delta):
    # the difference of the empirical probabilities.
    gap = k_num / n_num - k_den / n_den
    order = np.lexsort((-gap, -score))  # stable: first candidate wins ties
    best = order[0]

    t = thresholds[cand_t[best]]
    kind = int(cand_kind[best])
    num = int(cand_num[best])
    den = 1 - num
    ge_le = [_event_counts(x, np.array([t])) for x in ev]
    k_a = int(ge_le[num][kind][0])
    k_b = int(ge_le[den][kind][0])
    n_a, n_b = ev[num].shape[0], ev[den].shape[0]
    p_lo = _cp_lower([k_a], n_a, a_half)
    p_hi = _cp_upper([k_b], n_b, a_half)
    eps = float(_log_ratio_bound(p_lo, p_hi, delta)[0])
    eps = max(eps, 0.0)

    op = ">=" if kind == 0 else "<="
    event = f"P[T {op} {t:.4g}] on {_NAMES[num]} vs {_NAMES[den]}"
    return AuditResult(
        epsilon_lower=eps,
        epsilon_claimed=epsilon_claimed,
        delta=delta,
        alpha=alpha,
        n_runs=int(min(s[0].shape[0], s[1].shape[0])),
        event=event,
        counts=(k_a, int(n_a), k_b, int(n_b)),
    )


# --------------------------------------------------------------------------
# Estimator-level audit
# --------------------------------------------------------------------------


def _mean_of_user_means(X, groups):
    """Average over users of each user's mean row (numpy only)."""
    X = check_rows(X, ensure_2d=False, dtype=float, input_name="X")
    if X.ndim == 1:
        X = X[:, np.newaxis]
    if groups is None:
        return X.mean(axis=0)
    # the library's own groups check: clear errors for missing, unhashable or
    # mixed labels and for a wrong length
    return user_means(X, groups).means.mean(axis=0)


class _ProjectedMean:
    """Default statistic: ``mean_`` projected on a fixed unit vector."""

    def __init__(self, direction):
        self.direction = direction

    def __call__(self, estimator):
        if not hasattr(estimator, "mean_"):
            raise ValueError(
                f"{type(estimator).__name__} has no mean_ attribute after fitting; "
                "pass an explicit statistic to audit_estimator."
            )
        mean = np.ravel(np.asarray(estimator.mean_, dtype=float))
        if mean.shape != self.direction.shape:
            raise ValueError(
                f"mean_ has {mean.shape[0]} entries but X has "
                f"{self.direction.shape[0]} features."
            )
        return float(mean @ self.direction)


def _fit_chunk(estimator, X, groups, seeds, statistic, want_attributes):
    """Fit one clone per seed; return the statistics (and first-fit attributes)."""
    values = np.empty(len(seeds))
    attributes = None
    for i, seed in enumerate(seeds):
        est = clone(estimator).set_params(random_state=int(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if groups is None:
                est.fit(X)
            else:
                est.fit(X, groups=groups)
        values[i] = float(statistic(est))
        if want_attributes and i == 0:
            attributes = {
                name: getattr(est, name)
                for name in ("delta_", "epsilon_")
                if hasattr(est, name)
            }
    return values, attributes


def audit_estimator(
    estimator,
    X,
    X_prime,
    *,
    groups=None,
    groups_prime=None,
    statistic=None,
    n_runs=1000,
    delta=None,
    epsilon_claimed=None,
    alpha=0.05,
    random_state=0,
    n_jobs=None,
):
    """Audit an estimator's privacy claim on one pair of neighbouring datasets.

    Fits ``n_runs`` clones of ``estimator`` on ``(X, groups)`` and ``n_runs``
    on ``(X_prime, groups_prime)``, each with its own integer
    ``random_state``, records a scalar ``statistic`` of every fitted clone,
    and passes both sets of values to :func:`epsilon_lower_bound`.

    The caller is responsible for the two datasets being neighbours under
    the estimator's privacy model (for skuserdp: they differ in one user's
    entire data and have the same number of users). A violation is evidence
    of a bug only if they are.

    Parameters
    ----------
    estimator : estimator instance
        An unfitted estimator with a ``random_state`` parameter. It is cloned
        for every run and never fitted itself.
    X : array-like of shape (n_samples, n_features)
        Dataset ``D``.
    X_prime : array-like of shape (n_samples_prime, n_features)
        Neighbouring dataset ``D'``.
    groups : array-like of shape (n_samples,), default=None
        User label of each row of ``X``. ``None`` means that each row is a
        user, and ``fit`` is then called without ``groups``.
    groups_prime : array-like of shape (n_samples_prime,), default=None
        User labels of ``X_prime``.
    statistic : callable, default=None
        Maps a fitted estimator to a float. By default, for estimators with a
        ``mean_`` attribute: ``mean_`` projected on the unit vector along the
        difference between the average per-user mean of ``X`` and that of
        ``X_prime`` (along the first coordinate if they are equal). Required
        for estimators without ``mean_``. With process-based parallelism it
        must be picklable.
    n_runs : int, default=1000
        Number of fits per dataset.
    delta : float, default=None
        Delta of the audited guarantee. ``None`` uses the ``delta_``
        attribute of the first fitted clone, or 0 if it has none.
    epsilon_claimed : float, default=None
        Claimed epsilon. ``None`` uses the ``epsilon_`` attribute of the
        first fitted clone, or else the estimator's ``epsilon`` parameter.
    alpha : float, default=0.05
        One minus the confidence level of the lower bound.
    random_state : None, int, numpy.random.RandomState or \
numpy.random.SeedSequence, default=0
        Root of the per-run seeds and of the selection/evaluation split.
    n_jobs : int, default=None
        Number of parallel jobs for the fits (joblib's default backend).
        Every run has its own seed, so the result does not depend on
        ``n_jobs``.

    Returns
    -------
    result : AuditResult
        See :func:`epsilon_lower_bound`. ``n_runs`` is the number of fits per
        dataset.

    Notes
    -----
    Warnings raised inside the fits are suppressed. With joblib's default
    process-based backend and ``n_jobs > 1``, ``estimator`` and ``statistic``
    are pickled to worker processes, so their classes must be importable
    there (or picklable by value).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from skuserdp.testing import audit_estimator, worst_case_mean_neighbours
    >>> class NoisyMean(BaseEstimator):
    ...     def __init__(self, epsilon=1.0, random_state=None):
    ...         self.epsilon = epsilon
    ...         self.random_state = random_state
    ...     def fit(self, X, y=None, *, groups=None):
    ...         rng = np.random.default_rng(self.random_state)
    ...         X = np.clip(np.asarray(X, dtype=float), -1.0, 1.0)
    ...         scale = 2.0 / (X.shape[0] * self.epsilon)
    ...         self.mean_ = X.mean(axis=0) + rng.laplace(0.0, scale, X.shape[1])
    ...         return self
    >>> X, g, X_prime, g_prime = worst_case_mean_neighbours(5, 1)
    >>> result = audit_estimator(NoisyMean(epsilon=1.0), X, X_prime, n_runs=500)
    >>> result.epsilon_claimed, result.violation
    (1.0, False)
    """
    if "random_state" not in estimator.get_params(deep=False):
        raise ValueError(
            f"{type(estimator).__name__} has no random_state parameter; an audit "
            "needs to seed every run."
        )
    n_runs = _check_positive_int(n_runs, "n_runs", minimum=2)
    if n_jobs is not None and (isinstance(n_jobs, bool)
                               or not isinstance(n_jobs, numbers.Integral)
                               or n_jobs == 0):
        raise ValueError("n_jobs must be None, a positive int or a negative int "
                         f"(-1 = all cores), got {n_jobs!r}.")
    alpha = _check_real(alpha, "alpha", 0.0, 1.0, low_open=True, high_open=True)
    if delta is not None:
        delta = _check_real(delta, "delta", 0.0, 1.0, low_open=False, high_open=True)
    epsilon_claimed = _check_epsilon_claimed(epsilon_claimed)

    if statistic is None:
        mean, mean_prime = (_mean_of_user_means(X, groups),
                            _mean_of_user_means(X_prime, groups_prime))
        if mean.shape != mean_prime.shape:
            raise ValueError(
                f"X has {mean.shape[0]} feature(s) but X_prime has "
                f"{mean_prime.shape[0]}: neighbouring datasets have the same "
                "columns.")
        diff = mean - mean_prime
        if diff.shape[0] == 0:
            raise ValueError("X has no features.")
        norm = np.linalg.norm(diff)
        if norm > 0:
            direction = diff / norm
        else:
            direction = np.zeros(diff.shape[0])
            direction[0] = 1.0
        statistic = _ProjectedMean(direction)
    elif not callable(statistic):
        raise ValueError(f"statistic must be callable, got {statistic!r}.")

    root = data_seed_sequence(random_state)
    child_d, child_d_prime, child_split = root.spawn(3)
    seeds = [
        [int(s) for s in child.generate_state(n_runs)]
        for child in (child_d, child_d_prime)
    ]

    n_chunks = min(n_runs, 4 * max(1, effective_n_jobs(n_jobs)))
    chunks = [np.array_split(np.arange(n_runs), n_chunks)] * 2
    data = ((X, groups), (X_prime, groups_prime))
    tasks = [
        (which, i, chunk)
        for which in (0, 1)
        for i, chunk in enumerate(chunks[which])
        if chunk.size
    ]
    outputs = Parallel(n_jobs=n_jobs)(
        delayed(_fit_chunk)(
            estimator,
            data[which][0],
            data[which][1],
            [seeds[which][j] for j in chunk],
            statistic,
            which == 0 and i == 0,
        )
        for which, i, chunk in tasks
    )
    values = [
        np.concatenate([out[0] for out, (w, _, _) in zip(outputs, tasks) if w == which])
        for which in (0, 1)
    ]
    attributes = outputs[0][1]

    if delta is None:
        fitted_delta = attributes.get("delta_")
        delta = 0.0 if fitted_delta is None else float(fitted_delta)
        delta = _check_real(delta, "delta_", 0.0, 1.0, False, True)
    if epsilon_claimed is None:
        claimed = attributes.get("epsilon_")
        if claimed is None:
            claimed = estimator.get_params(deep=False).get("epsilon")
        epsilon_claimed = _check_epsilon_claimed(
            None if claimed is None else float(claimed)
        )

    return epsilon_lower_bound(
        values[0],
        values[1],
        delta=delta,
        alpha=alpha,
        epsilon_claimed=epsilon_claimed,
        random_state=child_split,
    )


def worst_case_mean_neighbours(
    n_users, n_features, *, center=0.0, radius=1.0, rows_per_user=1
):
    """Neighbouring datasets that are the worst case for clipped mean estimators.

    In ``X`` every row of every user is ``center - radius * e1``. ``X_prime``
    is the same except that all rows of the first user are moved to
    ``center + radius * e1``. Both datasets have ``n_users`` users with
    ``rows_per_user`` rows each, so they are replace-one neighbours at user
    level, and the average of per-user means differs by a vector of l2 (and
    l1) norm ``2 * radius / n_users`` -- one user's mean moves by
    ``2 * radius``, the diameter of the ball.

    This pair attains the sensitivity of estimators that clip each user's
    mean to the l2 ball of the given ``radius`` around ``center`` (and of
    those that clip each coordinate to ``[center - radius, center +
    radius]``). It is *not* the worst case for every estimator: estimators
    that clip rows rather than user means, that are sensitive to the number
    of rows per user, or that use data-dependent steps may need other pairs.

    Parameters
    ----------
    n_users : int
        Number of users, at least 1.
    n_features : int
        Number of features, at least 1.
    center : float or array-like of shape (n_features,), default=0.0
        Center of the clipping ball.
    radius : float, default=1.0
        Radius of the clipping ball, positive.
    rows_per_user : int, default=1
        Rows per user.

    Returns
    -------
    X : ndarray of shape (n_users * rows_per_user, n_features)
    groups : ndarray of shape (n_users * rows_per_user,)
        Integer user labels ``0, ..., n_users - 1``, each repeated
        ``rows_per_user`` times.
    X_prime : ndarray of shape (n_users * rows_per_user, n_features)
    groups_prime : ndarray of shape (n_users * rows_per_user,)
        Equal to ``groups``.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.testing import worst_case_mean_neighbours
    >>> X, g, X_prime, g_prime = worst_case_mean_neighbours(3, 2, rows_per_user=2)
    >>> X.shape, g.tolist()
    ((6, 2), [0, 0, 1, 1, 2, 2])
    >>> float(np.linalg.norm(X_prime[0] - X[0]))
    2.0
    """
    n_users = _check_positive_int(n_users, "n_users")
    n_features = _check_positive_int(n_features, "n_features")
    rows_per_user = _check_positive_int(rows_per_user, "rows_per_user")
    radius = _check_real(radius, "radius", 0.0, np.inf, low_open=True, high_open=True)
    center = np.asarray(center, dtype=float)
    if center.ndim == 0:
        center = np.full(n_features, float(center))
    if center.shape != (n_features,) or not np.all(np.isfinite(center)):
        raise ValueError(
            f"center must be a finite scalar or have shape ({n_features},), "
            f"got {center!r}."
        )
    e1 = np.zeros(n_features)
    e1[0] = 1.0
    n_rows = n_users * rows_per_user
    groups = np.repeat(np.arange(n_users), rows_per_user)
    X = np.tile(center - radius * e1, (n_rows, 1))
    X_prime = X.copy()
    X_prime[:rows_per_user] = center + radius * e1
    return X, groups, X_prime, groups.copy()
