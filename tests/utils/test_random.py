"""Tests of the random_state conventions (skuserdp.utils._random)."""

import numpy as np
import pytest

from skuserdp.mean import ClipNoiseMeanEstimator
from skuserdp.utils._random import make_seed_sequence


def test_random_state_instance_seeds_256_bits_not_32():
    # before: one 32-bit draw, so every fit seeded from a RandomState was one
    # of 2**32 noise streams, which an attacker can enumerate
    rs = np.random.RandomState(12345)
    root = make_seed_sequence(rs)
    reference = np.random.RandomState(12345).randint(
        0, 2**32, size=8, dtype=np.uint64)
    assert list(root.entropy) == reference.tolist()
    assert len(set(root.entropy)) == 8  # eight distinct words: 256 bits


def test_random_state_instance_advances_and_reproduces():
    X = np.random.default_rng(0).normal(size=(60, 2))
    groups = np.repeat(np.arange(30), 2)
    rs = np.random.RandomState(3)
    est = ClipNoiseMeanEstimator(bounds=(-3, 3), random_state=rs)
    a = est.fit(X, groups=groups).mean_.copy()
    b = est.fit(X, groups=groups).mean_.copy()
    assert not np.array_equal(a, b)  # the instance advanced
    est.set_params(random_state=np.random.RandomState(3))
    np.testing.assert_array_equal(est.fit(X, groups=groups).mean_, a)


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_bad_random_state(bad):
    with pytest.raises(ValueError, match="random_state"):
        make_seed_sequence(bad)
