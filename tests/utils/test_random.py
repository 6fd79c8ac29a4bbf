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


# ------------------------------------------------------------ random subsets
def test_random_subset_is_sorted_unique_and_reproducible():
    from skuserdp.utils._random import random_subset
    a = random_subset(1000, 300, np.random.default_rng(4))
    b = random_subset(1000, 300, np.random.default_rng(4))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (300,) and np.all(np.diff(a) > 0)
    assert a.min() >= 0 and a.max() < 1000
    assert random_subset(5, 5, np.random.default_rng(0)).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="size"):
        random_subset(5, 6, np.random.default_rng(0))


def test_random_subset_includes_every_index_with_probability_size_over_n():
    # the privacy argument needs a uniform subset: every index is included
    # w.p. m/n = 0.3; over 4000 draws each count is Binomial(4000, 0.3)
    # (sd 29); a 6-sd band holds for all 20 indices w.p. > 1 - 2e-8
    from skuserdp.utils._random import random_subset
    rng = np.random.default_rng(7)
    counts = np.zeros(20)
    for _ in range(4000):
        counts[random_subset(20, 6, rng)] += 1
    assert np.all(np.abs(counts - 1200) < 6 * np.sqrt(4000 * 0.3 * 0.7))
    # and pairs are included together as often as a uniform subset says:
    # P(0 and 1) = (6/20)(5/19)
    pair = 0
    rng = np.random.default_rng(8)
    for _ in range(4000):
        rows = random_subset(20, 6, rng)
        pair += rows[0] == 0 and rows[1] == 1 if rows.size > 1 else 0
    p = 6 / 20 * 5 / 19
    assert abs(pair - 4000 * p) < 6 * np.sqrt(4000 * p * (1 - p))
