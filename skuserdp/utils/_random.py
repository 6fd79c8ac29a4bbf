"""Randomness for skuserdp: seeds, child streams and generators.

Every mechanism and every parallel task draws from its own child stream of one
root :class:`numpy.random.SeedSequence`, spawned with
:meth:`~numpy.random.SeedSequence.spawn`. Results therefore do not depend on
``n_jobs`` or on the joblib backend, and two mechanisms never share noise.

``random_state`` follows scikit-learn's convention with one deliberate change:

* ``None`` means *fresh operating-system entropy* (``SeedSequence()``), not
  NumPy's global singleton, so that user code seeding ``np.random`` cannot make
  the privacy noise predictable;
* an ``int`` gives reproducible results (for tests: a seeded release is not a
  private release once the seed is published);
* a :class:`numpy.random.RandomState` instance is advanced by one draw of
  256 bits (eight 32-bit words), so two fits with the same instance differ,
  as in scikit-learn. (Drawing a single 32-bit word, as scikit-learn does,
  would collapse all the noise of a fit to one of 2**32 streams, which an
  attacker can enumerate.) A ``RandomState`` is only as unpredictable as its
  own seed: ``RandomState(0)`` is a reproducibility tool for tests, exactly
  like ``random_state=0``, and a release made with it is not private once
  the seed is known. Use ``None`` for a private release.

The bit generator is PCG64. It is fast and statistically sound, but it is not a
cryptographically secure generator; see the "Privacy model" page of the docs.
"""

import numbers

import numpy as np

__all__ = ["make_seed_sequence", "spawn_generators", "spawn_seeds", "generator_from",
           "random_subset", "SUBSET_MIN_USERS"]

#: 32-bit words drawn from a RandomState to seed the fit's SeedSequence
_RANDOM_STATE_WORDS = 8


def make_seed_sequence(random_state):
    """Turn a ``random_state`` parameter into a root ``SeedSequence``.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.SeedSequence
        ``None`` draws fresh entropy from the operating system. An ``int``
        seeds deterministically. A ``RandomState`` is advanced by one draw of
        256 bits (not 32: see the module docstring).
        A ``SeedSequence`` is returned unchanged.

    Returns
    -------
    seed_sequence : numpy.random.SeedSequence
        The root of all random streams of one call.
    """
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(
        random_state, bool
    ):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2**32, size=_RANDOM_STATE_WORDS,
                                     dtype=np.uint64)
        return np.random.SeedSequence([int(w) for w in words])
    raise ValueError(
        "random_state must be None, a non-negative int, a numpy RandomState or a "
        f"numpy SeedSequence; got {random_state!r}."
    )


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
