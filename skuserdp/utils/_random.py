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

__all__ = ["make_seed_sequence", "spawn_generators", "spawn_seeds", "generator_from"]

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
