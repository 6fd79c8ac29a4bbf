"""One user-level privacy budget across many fits on the same users.

:class:`BudgetAccountant` keeps a ledger of the privacy losses of every
release charged to it, composes them with
:func:`~skuserdp.privacy.compose_spend` (the only place where mixed losses
are composed), and refuses a charge that would exceed its total. Estimators
are charged through :class:`skuserdp.model_selection.BudgetedEstimator`.

Design: the accountant is a *handle*, not a value. diffprivlib
passes a mutable accountant as an estimator parameter, and
``sklearn.clone`` deep-copies it, so clones charge copies and the real
ledger never sees them. Here ``copy.deepcopy`` (hence ``clone``,
``GridSearchCV`` and ``Pipeline``) returns the same accountant, charges
are serialised by a lock (threads), and pickling it -- which is how joblib
sends it to a process worker -- gives a *detached* copy: a read-only
snapshot of the ledger that refuses to charge with a clear
:class:`~skuserdp.exceptions.DetachedAccountantError` (its charges would be
lost to the real ledger) instead of silently forking it.
"""

import itertools
import os
import threading

from ..exceptions import BudgetExceededError, DetachedAccountantError
from ._budget import ZCDP, ApproxDP, PureDP, _check_nonneg_finite
from ._composition import compose_spend

__all__ = ["BudgetAccountant"]


class BudgetAccountant:
    """A total (ε, δ) budget for one dataset of users, charged fit by fit.

    The unit of privacy is the user: every charged release is private with
    respect to replacing one user's entire data (the number of users is
    public), and the ledger composes all of them adaptively, pure, (ε, δ) and
    zCDP losses mixed (:func:`~skuserdp.privacy.compose_spend`: zCDP losses
    add their ρ and are converted once, at the total δ).

    Parameters
    ----------
    epsilon : float
        Total ε, ``> 0``.
    delta : float, default=0.0
        Total δ in ``[0, 1)``. zCDP losses (most estimators with
        ``delta > 0``) need ``delta > 0``.

    Attributes
    ----------
    ledger : tuple of (str, loss)
        The label and privacy loss of every accepted charge, in order.
    detached : bool
        Whether this is a pickled copy (read-only; see Notes).
    spent : ApproxDP
        The composed spend of the ledger at ``delta``.
    remaining_epsilon : float
        ``epsilon - spent.epsilon``.

    See Also
    --------
    skuserdp.model_selection.BudgetedEstimator : Charge an estimator's fits.
    skuserdp.privacy.compose_spend : The composition the ledger uses.

    Notes
    -----
    Copies (``copy.deepcopy``, ``sklearn.clone``) are the same accountant.
    A pickled copy is not: ``pickle.loads(pickle.dumps(acc))`` is a
    *detached* accountant, a snapshot of the ledger at pickling time that
    can be read (``ledger``, ``spent``, ``remaining_epsilon``) but whose
    :meth:`charge`, :meth:`would_fit` and :meth:`new_stream` raise
    :class:`~skuserdp.exceptions.DetachedAccountantError`. That is what a
    fit in a joblib *process* worker sees (e.g. ``GridSearchCV(n_jobs=2)``
    or ``cross_validate(n_jobs=2)`` with the default loky backend): its
    charges there would be lost, so it fails with that error, and the
    ledger in the parent is unchanged. Use ``n_jobs=1`` or threads
    (``joblib.parallel_config(backend="threading")``, or
    ``joblib.parallel_backend("threading")``).

    Examples
    --------
    >>> from skuserdp.privacy import BudgetAccountant, PureDP, ZCDP
    >>> acc = BudgetAccountant(epsilon=2.0, delta=1e-6)
    >>> acc.charge(PureDP(0.5), label="first mean")
    >>> acc.charge(ZCDP(0.01))
    >>> round(acc.spent.epsilon, 3), round(acc.remaining_epsilon, 3)
    (1.122, 0.878)
    >>> acc.charge(PureDP(5.0))
    Traceback (most recent call last):
    ...
    skuserdp.exceptions.BudgetExceededError: ...
    """

    def __init__(self, epsilon, delta=0.0):
        eps = _check_nonneg_finite("epsilon", epsilon)
        if eps <= 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
        delta = _check_nonneg_finite("delta", delta)
        if delta >= 1:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        self._epsilon, self._delta = eps, delta
        self._ledger = []
        self._lock = threading.Lock()
        self._streams = itertools.count()
        # the process whose memory holds the ledger (None: a pickled copy);
        # a fork copies the accountant into a child without pickling it
        self._pid = os.getpid()

    @property
    def detached(self):
        """Whether this is a detached copy, which cannot charge.

        A copy is detached when it was pickled (e.g. sent to a joblib process
        worker) or inherited by a forked process.
        """
        return self._pid != os.getpid()

    def _check_attached(self, method):
        if self.detached:
            raise DetachedAccountantError(
                f"BudgetAccountant.{method}() was called on a detached copy of the "
                "accountant: it was pickled, e.g. sent to a joblib process worker "
                "(n_jobs > 1 with the default 'loky' backend, or "
                "'multiprocessing', as in GridSearchCV(n_jobs=2) or "
                "cross_validate(n_jobs=2)), or inherited by a forked process "
                "(multiprocessing's 'fork' start method). Charges in another "
                "process would be lost: the ledger lives in the process that "
                "created the accountant. Fit with n_jobs=1, or with threads: "
                "`with joblib.parallel_config(backend='threading'): ...` (or "
                "joblib.parallel_backend('threading')). Nothing was charged.")

    @property
    def epsilon(self):
        """Total ε."""
        return self._epsilon

    @property
    def delta(self):
        """Total δ."""
        return self._delta

    @property
    def ledger(self):
        with self._lock:
            return tuple(self._ledger)

    @property
    def spent(self):
        with self._lock:
            return compose_spend([loss for _, loss in self._ledger], self._delta)

    @property
    def remaining_epsilon(self):
        return self._epsilon - self.spent.epsilon

    def _spend_with(self, loss):
        try:
            return compose_spend([x for _, x in self._ledger] + [loss], self._delta)
        except ValueError:  # no bound at this δ
            return None

    def would_fit(self, loss):
        """Whether charging ``loss`` would keep the spend within the total.

        Parameters
        ----------
        loss : PureDP, ApproxDP or ZCDP
            The privacy loss of a prospective release.

        Returns
        -------
        fits : bool
            ``True`` when :meth:`charge` would accept it now.
        """
        self._check_attached("would_fit")
        with self._lock:
            spend = self._spend_with(loss)
        return spend is not None and spend.epsilon <= self._epsilon

    def new_stream(self):
        """A number that no other call on this accountant returns.

        Meta-estimators key the noise of each fit they charge by it
        (:func:`skuserdp.utils._random.charged_fit_seed`), so that two fits
        charged here never share noise, even with a seeded ``random_state``.

        Returns
        -------
        stream : int
            0, 1, 2, ... in call order (thread-safe).
        """
        self._check_attached("new_stream")
        with self._lock:
            return next(self._streams)

    def charge(self, loss, *, label=None):
        """Add ``loss`` to the ledger, or refuse it.

        Parameters
        ----------
        loss : PureDP, ApproxDP or ZCDP
            The privacy loss of one release on these users.
        label : str, default=None
            A description kept in :attr:`ledger`.

        Raises
        ------
        BudgetExceededError
            When the composed spend would exceed the total (the ledger is
            unchanged).
        DetachedAccountantError
            On a detached (pickled) copy.
        """
        self._check_attached("charge")
        if not isinstance(loss, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"loss must be PureDP, ApproxDP or ZCDP, got {loss!r}.")
        with self._lock:
            spend = self._spend_with(loss)
            if spend is None or spend.epsilon > self._epsilon:
                now = compose_spend([x for _, x in self._ledger], self._delta)
                after = ("no (ε, δ) bound at this δ" if spend is None
                         else f"ε = {spend.epsilon:.4g}")
                raise BudgetExceededError(
                    f"charging {loss} ({label or 'unlabelled'}) would exceed the "
                    f"total budget (ε = {self._epsilon:g}, δ = {self._delta:g}): "
                    f"spent so far ε = {now.epsilon:.4g} over {len(self._ledger)} "
                    f"release(s), after this charge {after}. Nothing was "
                    "released.")
            self._ledger.append((str(label) if label is not None else None, loss))

    def to_dp_event(self):
        """The ledger as a dp-accounting ``DpEvent`` (optional extra).

        zCDP losses become ``ZCDpEvent(rho)``; a pure ε becomes
        ``ZCDpEvent(xi=ε, rho=0)`` (its Rényi bound ``D_α ≤ ε``); an
        (ε, δ) loss has no Rényi curve and becomes an
        ``UnsupportedDpEvent`` (dp-accounting then refuses to account it
        rather than under-count it). A dp-accounting ``RdpAccountant`` on
        this event gives a valid ε, never smaller than :attr:`spent`'s
        except for the order grids.

        Returns
        -------
        event : dp_accounting.dp_event.ComposedDpEvent
            One event per ledger entry, in order.
        """
        try:
            from dp_accounting import dp_event
        except ImportError as exc:  # pragma: no cover - optional extra
            raise ImportError(
                "to_dp_event needs dp-accounting: pip install "
                "'skuserdp[accounting]'.") from exc
        events = []
        for _, loss in self.ledger:
            if isinstance(loss, ZCDP):
                events.append(dp_event.ZCDpEvent(rho=loss.rho))
            elif isinstance(loss, PureDP):
                events.append(dp_event.ZCDpEvent(rho=0.0, xi=loss.epsilon))
            else:
                events.append(dp_event.UnsupportedDpEvent())
        return dp_event.ComposedDpEvent(events)

    def __repr__(self):
        detached = "; detached copy" if self.detached else ""
        return (f"BudgetAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}; "
                f"{len(self._ledger)} charge(s){detached})")

    # a handle: copies are the same ledger; a pickled copy is detached
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_detached_accountant, (self._epsilon, self._delta, self.ledger))


def _detached_accountant(epsilon, delta, ledger):
    """Unpickle a :class:`BudgetAccountant` as a detached, read-only copy."""
    acc = BudgetAccountant(epsilon, delta)
    acc._ledger = list(ledger)
    acc._streams = None
    acc._pid = None
    return acc
