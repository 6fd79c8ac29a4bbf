"""The top passing bin of a private log2 histogram (skuserdp.mechanisms._top_bin)."""

import itertools
import math

import numpy as np
import pytest

import skuserdp.mechanisms._top_bin as tb
from skuserdp.mechanisms._top_bin import top_bin_edge, top_bin_noise, top_bin_threshold
from skuserdp.privacy import replace_one_histogram_sensitivity, zcdp_to_approx_dp
from skuserdp.testing import epsilon_lower_bound


def _counts(values, base, n_bins):
    """The histogram of top_bin_edge, recomputed by the definition."""
    counts = np.zeros(n_bins, dtype=np.int64)
    for v in values:
        p = 0
        while p < n_bins - 1 and v > base * 2.0 ** p:
            p += 1
        counts[p] += 1
    return counts


@pytest.mark.parametrize("rho", [1e-4, 0.0123, 0.5, 7.0, 1e4])
def test_privacy_map_is_exact(rho):
    # discrete Gaussian at replace-one l2 sensitivity sqrt(2): rho' = 2 / (2 sigma^2)
    noise = top_bin_noise(rho)
    assert replace_one_histogram_sensitivity() == math.sqrt(2)
    spent = noise.privacy(math.sqrt(2)).rho
    assert spent <= rho
    assert spent == pytest.approx(1.0 / float(noise.sigma2), rel=1e-12)
    # rounded up to a multiple of 2^-20 only: spends nearly all of rho
    assert spent >= rho / (1 + 2.0 ** -20 * rho + 1e-11)


def test_replace_one_moves_the_counts_by_sqrt2_at_most():
    # every neighbour pair of a small instance: the l2 distance of the count
    # vectors is 0 or sqrt(2), never more (one user in one cell)
    base, n_bins = 1.0, 5
    points = [0.0, 0.7, 1.0, 1.5, 3.0, 6.0, 100.0, math.inf]
    rest = [0.5, 2.5, 9.0]
    worst = 0.0
    for a, b in itertools.product(points, repeat=2):
        diff = _counts(rest + [a], base, n_bins) - _counts(rest + [b], base, n_bins)
        worst = max(worst, float(np.linalg.norm(diff)))
        assert np.abs(diff).sum() in (0, 2)
    assert worst == pytest.approx(math.sqrt(2))


def test_threshold_closed_form():
    noise = top_bin_noise(0.02)
    k = top_bin_threshold(noise, 12, 0.01)
    assert k == pytest.approx(math.sqrt(float(noise.sigma2))
                              * math.sqrt(2 * math.log(11 / 0.01)), rel=1e-15)
    with pytest.raises(ValueError):
        top_bin_threshold(noise, 1, 0.01)
    with pytest.raises(ValueError):
        top_bin_threshold(noise, 5, 1.0)


def test_edges_follow_the_definition_with_little_noise():
    rng = np.random.default_rng(0)
    values = rng.lognormal(0, 2, size=3000)
    base, n_bins = 0.5, 16
    counts = _counts(values, base, n_bins)
    # rho = 1e6: sigma = 1e-3, k < 0.01: every non-empty cell passes
    edge = top_bin_edge(values, 1e6, base=base, n_bins=n_bins, random_state=1)
    top = np.flatnonzero(counts[1:])[-1] + 1
    assert edge == base * 2.0 ** top >= min(values.max(), base * 2.0 ** (n_bins - 1))
    assert top_bin_edge(np.full(10, 0.4), 1e6, base=base, n_bins=n_bins,
                        random_state=1) is None
    # above the top edge: clamped into the last cell
    assert top_bin_edge([1e300, math.inf], 1e6, base=1.0, n_bins=4,
                        random_state=0) == 8.0


def test_users_above_the_edge_are_about_k():
    # a modest budget: the cells above the edge hold fewer than ~k users each
    rng = np.random.default_rng(3)
    values = rng.lognormal(0, 2, size=20000)
    base, n_bins, rho = 1.0, 24, 0.01
    k = top_bin_threshold(top_bin_noise(rho), n_bins, 0.01)
    for seed in range(5):
        edge = top_bin_edge(values, rho, base=base, n_bins=n_bins, random_state=seed)
        above = int(np.sum(values > edge))
        assert above <= 3 * k * n_bins  # each higher cell below k + noise
        assert int(np.sum(values > edge / 2)) >= k - 5 * math.sqrt(1 / rho)


def test_values_not_modified():
    v = np.array([0.1, 2.0, 5.0])
    top_bin_edge(v, 1.0, base=1.0, n_bins=4, random_state=0)
    np.testing.assert_array_equal(v, [0.1, 2.0, 5.0])


AUDIT_RHO, AUDIT_DELTA, AUDIT_RUNS = 0.25, 1e-3, 40000


def _transcripts(values, runs, seed, monkeypatch):
    """The noisy counts' statistic (last cell minus cell 0) of ``runs``
    releases of top_bin_edge on ``values``."""
    out = []
    real = tb.add_noise

    def spy(counts, noise, seed_sequence, **kw):
        noisy = real(counts, noise, seed_sequence, **kw)
        out.append(float(noisy[-1] - noisy[0]))
        return noisy

    monkeypatch.setattr(tb, "add_noise", spy)
    seeds = np.random.SeedSequence(seed).spawn(runs)
    for s in seeds:
        tb.top_bin_edge(values, AUDIT_RHO, base=1.0, n_bins=4, random_state=s)
    monkeypatch.setattr(tb, "add_noise", real)
    return np.array(out)


@pytest.mark.slow
def test_audit_with_a_positive_control(monkeypatch):
    # neighbours: one user moved from cell 0 to the last cell (the worst
    # pair: two counts change); the statistic is the difference of those two
    # noisy counts. The claim is AUDIT_RHO-zCDP, converted to (eps, delta).
    rest = [0.5] * 5 + [3.0] * 5
    D, Dp = rest + [0.1], rest + [100.0]
    eps = zcdp_to_approx_dp(AUDIT_RHO, AUDIT_DELTA).epsilon
    a = _transcripts(D, AUDIT_RUNS, 1, monkeypatch)
    b = _transcripts(Dp, AUDIT_RUNS, 2, monkeypatch)
    lb = epsilon_lower_bound(a, b, delta=AUDIT_DELTA, epsilon_claimed=eps)
    assert lb.epsilon_lower <= eps, lb
    # positive control: the add/remove constant (sensitivity 1 instead of
    # sqrt(2)) halves the noise variance, doubling the true rho
    monkeypatch.setattr(tb, "replace_one_histogram_sensitivity",
                        lambda *args, **kwargs: 1.0)
    a = _transcripts(D, AUDIT_RUNS, 3, monkeypatch)
    b = _transcripts(Dp, AUDIT_RUNS, 4, monkeypatch)
    bad = epsilon_lower_bound(a, b, delta=AUDIT_DELTA, epsilon_claimed=eps)
    assert bad.epsilon_lower > eps, bad
