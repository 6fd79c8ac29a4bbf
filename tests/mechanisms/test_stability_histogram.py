"""Stability-based histogram (AKMMSU Lemma 2.8, approximate DP, unbounded
grid): exact threshold, exact privacy of the released bucket on small
neighbouring pairs, behaviour.

Spec: shared/specs/akmmsu2024_person_level.md §2.1, §7 item 1.
"""

import math

import numpy as np
import pytest

from skuserdp.mechanisms import stability_histogram_argmax
from skuserdp.privacy import stability_histogram_privacy, stability_histogram_threshold


def _pmf(scale, z):
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(z)


def _tail(scale, k):
    """P[Z >= k] for the discrete Laplace, by summation."""
    z = np.arange(k, k + 4000)
    return float(_pmf(scale, z).sum())


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.3, 1e-3), (2.0, 1e-9)])
def test_threshold_is_the_smallest_that_meets_delta(eps, delta):
    scale, T = stability_histogram_threshold(eps, delta)
    s = float(scale)
    assert s >= 2 / eps and s <= 2 / eps * (1 + 1e-5)
    # A count-1 bucket is kept iff 1 + Z >= T.
    assert _tail(s, T - 1) <= delta
    assert _tail(s, T - 2) > delta
    assert stability_histogram_privacy(scale, T).delta == pytest.approx(
        _tail(s, T - 1), rel=1e-9)
    assert stability_histogram_privacy(scale, T).epsilon <= eps


def _exact_law(counts, scale, T, L=None):
    """Exact P[argmax = bucket] (and P[None]) for a few occupied buckets.

    counts: dict bucket -> count. Sums over every noise vector in
    [-L, L]^k (the neglected mass is below 1e-12).
    """
    s = float(scale)
    L = L or int(math.ceil(s * 40))
    z = np.arange(-L, L + 1)
    p = _pmf(s, z)
    names = sorted(counts)
    law = {b: 0.0 for b in names}
    law[None] = 0.0
    grids = np.meshgrid(*([z] * len(names)), indexing="ij")
    probs = np.ones_like(grids[0], dtype=np.float64)
    for g in range(len(names)):
        probs = probs * p[grids[g] + L]
    noisy = np.stack([counts[b] + grids[g] for g, b in enumerate(names)])
    kept = noisy >= T
    masked = np.where(kept, noisy, np.iinfo(np.int64).min)
    best = np.argmax(masked, axis=0)  # ties: lowest bucket, as the mechanism
    none = ~kept.any(axis=0)
    law[None] = float(probs[none].sum())
    for g, b in enumerate(names):
        law[b] = float(probs[(best == g) & ~none].sum())
    return law


def _hockey(P, Q, eps):
    keys = set(P) | set(Q)
    return sum(max(P.get(k, 0.0) - math.exp(eps) * Q.get(k, 0.0), 0.0) for k in keys)


@pytest.mark.parametrize("D,Dp", [
    ({0: 3, 1: 1}, {0: 4}),            # the user leaves a bucket it had alone
    ({0: 3, 1: 2}, {0: 4, 1: 1}),      # both buckets shared
    ({0: 2, 1: 1}, {0: 2, 2: 1}),      # moves between two singleton buckets
])
def test_exact_privacy_on_neighbouring_pairs(D, Dp):
    # Threshold small enough (delta = 0.05 at eps = 1) that suppression and
    # singleton buckets matter in the exact law.
    eps, delta = 1.0, 0.05
    scale, T = stability_histogram_threshold(eps, delta)
    P, Q = _exact_law(D, scale, T), _exact_law(Dp, scale, T)
    assert abs(sum(P.values()) - 1) < 1e-9 and abs(sum(Q.values()) - 1) < 1e-9
    assert _hockey(P, Q, eps) <= delta * (1 + 1e-9)
    assert _hockey(Q, P, eps) <= delta * (1 + 1e-9)


def test_a_broken_threshold_is_caught_by_the_exact_check():
    # Threshold 1 (keep every occupied bucket): the moved user's own bucket
    # is released with probability ~1/2 on D and never on D'.
    eps = 1.0
    scale, _ = stability_histogram_threshold(eps, 0.05)
    P, Q = _exact_law({0: 3, 1: 1}, scale, 1), _exact_law({0: 4}, scale, 1)
    assert _hockey(P, Q, eps) > 0.05


def test_sampled_outcomes_follow_the_exact_law():
    # 20000 runs, chi-square against the exact law of a 2-bucket instance.
    from scipy import stats
    eps, delta = 1.0, 0.05
    scale, T = stability_histogram_threshold(eps, delta)
    law = _exact_law({0: 3, 1: 2}, scale, T)
    x = np.array([0.1, 0.2, 0.3, 1.1, 1.2])
    runs = np.tile(x, (20000, 1))
    mids, _ = stability_histogram_argmax(runs, epsilon=eps, delta=delta, width=1.0,
                                         random_state=0)
    obs = [np.sum(mids == 0.5), np.sum(mids == 1.5), np.sum(np.isnan(mids))]
    exp = [law[0] * 20000, law[1] * 20000, law[None] * 20000]
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def test_unbounded_grid_vectorised_and_none():
    rng = np.random.default_rng(1)
    far = rng.normal(-3e9, 0.2, size=(3, 400))
    mids, loss = stability_histogram_argmax(far, epsilon=1.0, delta=1e-6,
                                            width=1.0, random_state=0)
    assert mids.shape == (3,) and np.all(np.abs(mids + 3e9) <= 1.5)
    assert loss.epsilon <= 1.0 and loss.delta <= 1e-6
    # 10 users spread apart: no count can pass a threshold of ~28.
    spread = np.arange(10) * 100.0
    mid, _ = stability_histogram_argmax(spread, epsilon=1.0, delta=1e-6, width=1.0,
                                        random_state=0)
    assert math.isnan(mid)
    with pytest.raises(ValueError, match="finite"):
        stability_histogram_argmax([0.0, np.inf], epsilon=1.0, delta=1e-6, width=1.0)
