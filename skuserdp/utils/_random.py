"""Randomness for skuserdp: seeds, child streams and generators.

Every mechanism and every parallel task draws from its own child stream of one
root :class:`numpy.random.SeedSequence`, spawned with
:meth:`~numpy.random.SeedSequence.spawn`. Results therefore do not depend on
``n_jobs`` or on the joblib backend, and two mechanisms never share noise.

What ``random_state`` means for the noise of a fit (:func:`make_seed_sequence`)
-- deliberately not scikit-learn's convention, because scikit-learn *copies*
seed objects (``clone`` and ``copy.deepcopy`` in ``GridSearchCV``,
``cross_validate``, ``BudgetedEstimator``), and two fits that add the same
noise to neighbouring datasets reveal the difference exactly:

* ``None`` means *fresh operating-system entropy* (``SeedSequence()``), not
  NumPy's global singleton, so that user code seeding ``np.random`` cannot
  make the privacy noise predictable. The only choice for a real release.
* an ``int`` (or a :class:`numpy.random.SeedSequence`) is an explicit request
  for reproducibility (tests, reproducible research): the same seed gives the
  same noise, in every copy. A release whose seed is known is not private,
  and two fits with one seed share their noise -- unless they are charged to
  one :class:`~skuserdp.privacy.BudgetAccountant`, which gives every charged
  fit its own stream (:func:`charged_fit_seed`).
* a :class:`numpy.random.RandomState` (or :class:`numpy.random.Generator`)
  instance is *consumed*, never duplicated: each use advances it by one draw
  of 256 bits **and mixes in 128 bits of fresh operating-system entropy**, so
  no two fits ever share noise, whatever copies of the instance scikit-learn
  makes. Such fits are therefore not reproducible; pass an int for that.

Synthetic data and the audits of :mod:`skuserdp.testing` (test tools, not
releases; :func:`data_seed_sequence`) keep scikit-learn's convention: a
``RandomState`` reproduces its draws there.

The bit generator is PCG64. It is fast and statistically sound, but it is not a
cryptographically secure generator; see the "Privacy model" page of the docs.
"""

import numbers

import numpy as np

__all__ = ["make_seed_sequence", "data_seed_sequence", "fit_random_state",
           "charged_fit_seed",
           "seed_parameters", "set_fit_seeds", "forget_fit_seeds",
           "spawn_generators", "spawn_seeds", "generator_from", "random_subset",
           "SUBSET_MIN_USERS"]

#: 32-bit words drawn from a RandomState to seed the fit's SeedSequence
_RANDOM_STATE_WORDS = 8


def _os_entropy():
    """128 bits of fresh operating-system entropy (an int)."""
    return np.random.SeedSequence().entropy


def _draw_words(state):
    """Advance a RandomState or Generator by 256 bits; the eight 32-bit words."""
    if isinstance(state, np.random.Generator):
        words = state.integers(0, 2**32, size=_RANDOM_STATE_WORDS, dtype=np.uint64)
    else:
        words = state.randint(0, 2**32, size=_RANDOM_STATE_WORDS, dtype=np.uint64)
    return [int(w) for w in words]


def _deterministic_seed_sequence(random_state, what):
    """None, an int or a SeedSequence as a SeedSequence (None: fresh entropy);
    ``NotImplemented`` for a RandomState or Generator; ValueError otherwise."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(
        random_state, (bool, np.bool_)
    ):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return NotImplemented
    raise ValueError(
        f"random_state must be None, a non-negative int, a numpy RandomState{what} "
        f"or a numpy SeedSequence; got an object of type {type(random_state).__name__}."
    )


def make_seed_sequence(random_state):
    """Turn a ``random_state`` parameter into the root ``SeedSequence`` of the
    noise of one call.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState, numpy.random.Generator \
or numpy.random.SeedSequence
        ``None`` draws fresh entropy from the operating system. An ``int``
        seeds deterministically (reproducible: for tests). A ``RandomState``
        or ``Generator`` is advanced by one draw of 256 bits, mixed with 128
        bits of fresh OS entropy: no two calls -- and no two *copies* of the
        instance -- ever give the same stream (see the module docstring).
        A ``SeedSequence`` is returned unchanged.

    Returns
    -------
    seed_sequence : numpy.random.SeedSequence
        The root of all random streams of one call.

    Examples
    --------
    >>> import copy
    >>> import numpy as np
    >>> from skuserdp.utils._random import make_seed_sequence
    >>> make_seed_sequence(7).entropy
    7
    >>> rs = np.random.RandomState(0)
    >>> a, b = make_seed_sequence(rs), make_seed_sequence(copy.deepcopy(rs))
    >>> a.entropy == b.entropy  # a copy of the instance never repeats a stream
    False
    """
    root = _deterministic_seed_sequence(random_state, ", Generator")
    if root is not NotImplemented:
        return root
    return np.random.SeedSequence(_draw_words(random_state) + [_os_entropy()])


def fit_random_state(random_state):
    """The ``random_state`` parameter as one fit uses it.

    A ``SeedSequence`` is copied: spawning children advances a
    ``SeedSequence``, so a fit would change its own parameter (against
    scikit-learn's rule) and the same seed would not give the same noise
    twice. Anything else is returned unchanged (a ``RandomState`` is meant
    to be consumed).

    Parameters
    ----------
    random_state : None, int, RandomState, Generator or SeedSequence

    Returns
    -------
    random_state : object

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.utils._random import fit_random_state
    >>> seed = np.random.SeedSequence(3)
    >>> _ = fit_random_state(seed).spawn(2)
    >>> seed.n_children_spawned
    0
    """
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(
            random_state.entropy, spawn_key=random_state.spawn_key,
            pool_size=random_state.pool_size,
            n_children_spawned=random_state.n_children_spawned)
    return random_state


def data_seed_sequence(random_state):
    """``random_state`` of *synthetic data* as a ``SeedSequence``.

    scikit-learn's convention, for data generators only (never for noise):
    as :func:`make_seed_sequence`, except that a ``RandomState`` is advanced
    by one draw of 256 bits that alone seeds the call, so that a seeded
    ``RandomState`` reproduces its datasets.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.SeedSequence

    Returns
    -------
    seed_sequence : numpy.random.SeedSequence
    """
    root = _deterministic_seed_sequence(random_state, "")
    if root is not NotImplemented:
        return root
    if isinstance(random_state, np.random.Generator):
        raise ValueError(
            "random_state must be None, a non-negative int, a numpy RandomState or "
            "a numpy SeedSequence; got a Generator.")
    return np.random.SeedSequence(_draw_words(random_state))


#: spawn-key word that separates the streams of charged fits from ordinary
#: children of the same seed (:func:`charged_fit_seed`)
_CHARGED_FIT_DOMAIN = 0x5EED


def charged_fit_seed(random_state, stream):
    """The seed of one fit charged to a budget accountant.

    Fits charged to one :class:`~skuserdp.privacy.BudgetAccountant` compose,
    and composition assumes independent noise. ``None`` and a
    ``RandomState``/``Generator`` already give every fit fresh noise; a
    deterministic seed (an int or a ``SeedSequence``) would give every fit
    the *same* noise, so each charged fit gets a child of that seed keyed by
    ``stream`` (a number the accountant hands out once): reproducible from
    the seed, never shared by two fits of one ledger.

    Parameters
    ----------
    random_state : None, int, RandomState, Generator or SeedSequence
        The fit's ``random_state`` parameter.
    stream : int
        A number no other fit charged to the same accountant uses.

    Returns
    -------
    random_state : None or numpy.random.SeedSequence
        ``None`` for ``None`` (fresh entropy at fit time); otherwise a
        ``SeedSequence`` to pass as the fit's ``random_state``.

    Examples
    --------
    >>> from skuserdp.utils._random import charged_fit_seed
    >>> a, b = charged_fit_seed(0, 0), charged_fit_seed(0, 1)
    >>> bool(a.generate_state(1)[0] == b.generate_state(1)[0])
    False
    >>> charged_fit_seed(None, 3) is None
    True
    """
    if random_state is None:
        return None
    root = make_seed_sequence(random_state)
    return np.random.SeedSequence(
        root.entropy, spawn_key=(*root.spawn_key, _CHARGED_FIT_DOMAIN, int(stream)),
        pool_size=root.pool_size)


def seed_parameters(estimator):
    """Names of the ``random_state`` parameters of an estimator, nested ones
    included (``"random_state"``, ``"step__random_state"``, ...).

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    names : list of str
    """
    return [name for name in estimator.get_params(deep=True)
            if name == "random_state" or name.endswith("__random_state")]


def _owner_is_ours(params, name, estimator):
    """Whether the estimator owning parameter ``name`` is a skuserdp one (a
    user's subclass included), whose ``random_state`` takes a SeedSequence."""
    owner = (estimator if "__" not in name
             else params[name.rsplit("__", 1)[0]])
    # (the marker of skuserdp.base.UserLevelMixin, read without importing it:
    # base imports this module)
    return getattr(owner, "_seed_sequence_random_state", False) is True


def set_fit_seeds(estimator, seeds):
    """Set every ``random_state`` parameter of ``estimator`` (nested ones
    included) for one fit; return their names, to :func:`forget_fit_seeds`.

    ``seeds(name, value)`` maps a parameter's name and current value to the
    new seed (``None`` or a ``SeedSequence``). skuserdp estimators take the
    ``SeedSequence`` itself; other estimators (a Pipeline's preprocessing
    steps, which add no noise) get a 32-bit integer drawn from it, as
    scikit-learn's validation requires.

    Parameters
    ----------
    estimator : estimator instance
        Changed in place (a clone: never the caller's).
    seeds : callable
        ``seeds(name, value) -> None or SeedSequence``.

    Returns
    -------
    names : list of str
    """
    params = estimator.get_params(deep=True)
    names = seed_parameters(estimator)
    new = {}
    for name in names:
        seed = seeds(name, params[name])
        if seed is not None and not _owner_is_ours(params, name, estimator):
            seed = int(seed.generate_state(1)[0])
        new[name] = seed
    estimator.set_params(**new)
    return names


def forget_fit_seeds(estimator, names):
    """Set the ``random_state`` parameters ``names`` of a fitted estimator to
    ``None``: meta-estimators publish their fitted estimators without the
    seed material of the fit (refitting one draws fresh noise)."""
    if names:
        estimator.set_params(**dict.fromkeys(names))
    return estimator


def generator_from(seed_sequence):
    """Return a PCG64 ``Generator`` for one (child) ``SeedSequence``."""
    return np.random.Generator(np.random.PCG64(seed_sequence))


def spawn_seeds(seed_sequence, n):
    """Spawn ``n`` independent child ``SeedSequence`` objects."""
    return seed_sequence.spawn(int(n))


def spawn_generators(seed_sequence, n):
    """Spawn ``n`` independent generators from ``seed_sequence``."""
    return [generator_from(s) for s in spawn_seeds(seed_sequence, n)]


#: fewest users a preliminary release runs on when it runs on a random subset
#: of the users (:func:`random_subset`): 2^17, where the sampling error of a
#: mean or a quantile (about ``1/√m`` of the spread, 0.3 %) is far below
#: what these releases need
SUBSET_MIN_USERS = 2 ** 17


def random_subset(n, size, rng):
    """Sorted indices of a uniformly random subset of ``size`` of ``range(n)``.

    Used to run a *preliminary* release (a private box, CoinPress's
    shrinking steps) on ``size`` of the ``n`` users when ``n`` is large.
    The subset is drawn independently of the data, and the releases that
    use it do not depend on the order of the users (integer counts, exact
    lattice sums, row-wise distances), so they see a uniformly random
    sub-multiset of the users whatever their order. Privacy is unchanged:
    for replace-one neighbours ``D``, ``D'`` (users ordered so that the
    replaced one has the same index in both), the same indices pick equal or
    replace-one neighbouring subsets, so a sequence of releases that is
    ε-DP (or ρ-zCDP) on ``size`` users is ε-DP (ρ-zCDP) on the ``n`` users:
    the output is a mixture over the subset of outputs on neighbouring
    inputs, and both the DP inequality and the Rényi divergence (jointly
    quasi-convex; van Erven and Harremoës 2014, Theorem 13) hold for a
    mixture when they hold for every component. This holds for the whole
    sequence of releases on one subset; properties finer than a DP or
    Rényi bound (bounded range, say) do not carry over. No amplification by
    subsampling is claimed: the loss charged is that of the releases on
    ``size`` users.

    Parameters
    ----------
    n : int
        Number of users, ``>= size``.
    size : int
        Size of the subset, ``>= 1``.
    rng : numpy.random.Generator
        A stream independent of the data.

    Returns
    -------
    rows : ndarray of shape (size,), dtype intp
        Increasing indices.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.utils._random import random_subset
    >>> rows = random_subset(10, 4, np.random.default_rng(0))
    >>> rows.shape, bool(np.all(np.diff(rows) > 0))
    ((4,), True)
    """
    n, size = int(n), int(size)
    if not 1 <= size <= n:
        raise ValueError(f"size must be in [1, n={n}], got {size}.")
    rows = rng.choice(n, size=size, replace=False)
    return np.sort(rows).astype(np.intp, copy=False)
