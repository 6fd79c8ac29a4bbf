"""Tests of the random_state conventions (skuserdp.utils._random)."""

import copy
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import ClipNoiseMeanEstimator
from skuserdp.utils._random import (
    charged_fit_seed,
    data_seed_sequence,
    forget_fit_seeds,
    make_seed_sequence,
    set_fit_seeds,
)


def test_random_state_instance_seeds_256_bits_and_fresh_entropy(monkeypatch):
    # before: one 32-bit draw, so every fit seeded from a RandomState was one
    # of 2**32 noise streams, which an attacker can enumerate; and a copy of
    # the instance (clone, GridSearchCV) repeated the stream
    import skuserdp.utils._random as random_module
    monkeypatch.setattr(random_module, "_os_entropy", lambda: 99)
    rs = np.random.RandomState(12345)
    root = make_seed_sequence(rs)
    reference = np.random.RandomState(12345).randint(
        0, 2**32, size=8, dtype=np.uint64)
    assert list(root.entropy) == reference.tolist() + [99]
    assert len(set(root.entropy[:8])) == 8  # eight distinct words: 256 bits


# the fits draw fresh OS entropy (that is the point): on 30 users the noise
# may put an estimate on the box's edge, which the estimator says
@pytest.mark.filterwarnings(
    "ignore:.*lies on or outside the public box:skuserdp.exceptions.AccuracyWarning")
def test_random_state_instance_advances_and_copies_never_repeat_noise():
    X = np.random.default_rng(0).normal(size=(60, 2))
    groups = np.repeat(np.arange(30), 2)
    rs = np.random.RandomState(3)
    est = ClipNoiseMeanEstimator(bounds=(-3, 3), random_state=rs)
    a = est.fit(X, groups=groups).mean_.copy()
    state = rs.get_state()[1]
    assert not np.array_equal(state, np.random.RandomState(3).get_state()[1])
    b = est.fit(X, groups=groups).mean_.copy()
    assert not np.array_equal(a, b)  # the instance advanced
    # an identical copy of the instance (what clone/deepcopy make) does not
    # give the same noise: fresh entropy is mixed in
    est.set_params(random_state=np.random.RandomState(3))
    c = est.fit(X, groups=groups).mean_
    assert not np.array_equal(c, a)
    rs_copy = copy.deepcopy(rs)
    est.set_params(random_state=rs)
    d = est.fit(X, groups=groups).mean_
    est.set_params(random_state=rs_copy)
    assert not np.array_equal(est.fit(X, groups=groups).mean_, d)


def test_int_and_seed_sequence_reproduce():
    X = np.random.default_rng(0).normal(size=(60, 2))
    groups = np.repeat(np.arange(30), 2)
    est = ClipNoiseMeanEstimator(bounds=(-3, 3), random_state=5)
    with warnings.catch_warnings():  # 30 users: the noise may reach the box
        warnings.simplefilter("ignore", AccuracyWarning)
        a = est.fit(X, groups=groups).mean_.copy()
        ci = est.conf_int()
        np.testing.assert_array_equal(clone(est).fit(X, groups=groups).mean_, a)
        est.set_params(random_state=np.random.SeedSequence(5))
        np.testing.assert_array_equal(est.fit(X, groups=groups).mean_, a)
        np.testing.assert_array_equal(est.conf_int(), ci)


def test_data_seed_sequence_keeps_random_state_reproducible():
    a = data_seed_sequence(np.random.RandomState(4)).generate_state(4)
    b = data_seed_sequence(np.random.RandomState(4)).generate_state(4)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="random_state"):
        data_seed_sequence(np.random.default_rng(0))


def test_charged_fit_seed_is_distinct_per_stream_and_reproducible():
    a, b = charged_fit_seed(0, 0), charged_fit_seed(0, 1)
    assert a.generate_state(4).tolist() != b.generate_state(4).tolist()
    assert (charged_fit_seed(0, 1).generate_state(4).tolist()
            == b.generate_state(4).tolist())
    # never the stream of an ordinary child of the same seed
    children = np.random.SeedSequence(0).spawn(8)
    assert all(c.generate_state(4).tolist() != a.generate_state(4).tolist()
               for c in children)
    assert charged_fit_seed(None, 0) is None
    rs = np.random.RandomState(0)
    x = charged_fit_seed(rs, 0)
    y = charged_fit_seed(np.random.RandomState(0), 0)
    assert x.generate_state(4).tolist() != y.generate_state(4).tolist()


def test_set_and_forget_fit_seeds_reach_nested_parameters():
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    pipe = make_pipeline(PCA(random_state=1),
                         ClipNoiseMeanEstimator(bounds=(-3, 3), random_state=2))
    root = np.random.SeedSequence(0)
    names = set_fit_seeds(pipe, lambda name, value: root.spawn(1)[0])
    assert sorted(names) == ["clipnoisemeanestimator__random_state",
                             "pca__random_state"]
    params = pipe.get_params()
    # ours take the SeedSequence; scikit-learn's take a 32-bit int
    assert isinstance(params["clipnoisemeanestimator__random_state"],
                      np.random.SeedSequence)
    assert isinstance(params["pca__random_state"], int)
    forget_fit_seeds(pipe, names)
    assert all(pipe.get_params()[n] is None for n in names)


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
