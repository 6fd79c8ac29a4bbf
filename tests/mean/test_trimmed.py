"""TrimmedMeanEstimator and the corrupted_fraction route of UserMeanEstimator."""

import numpy as np
import pytest

from skuserdp.datasets import make_user_samples
from skuserdp.mean import TrimmedMeanEstimator, UserMeanEstimator
from skuserdp.mean._trimmed import robust_trim
from skuserdp.privacy import ZCDP, zcdp_rho_for


def _data(distance, fraction=0.2, seed=0):
    return make_user_samples(n_users=600, n_features=4, samples_per_user=5,
                             mean=np.linspace(-1, 1, 4), user_spread=0.5,
                             corrupted_fraction=fraction,
                             corruption_distance=distance, random_state=seed)


def test_the_estimate_does_not_move_with_the_adversary():
    # The corrupted users (20 %) sit at mu + D e1, beyond every released
    # median distance: moving them out does not change any released median
    # (same seed, same costs below the median) and moves their vectors
    # clipped to a ball of radius r around c only by the change of their
    # direction, at most 2r||mu - c||/D per coordinate. The trimmed mean is
    # 1/(n - 2k)-Lipschitz in each value, so one release moves by at most
    # sqrt(d)·(alpha n/(n - 2k))·2r||mu - c||/D; with r, ||mu - c|| <= 3,
    # d = 4, alpha n = 120, n - 2k = 336 and D >= 5e3 that is < 5e-3, and
    # the five releases (each 1-Lipschitz in its centre through the clipping)
    # at most 5x that. A non-robust estimator moves by about alpha·D.
    fits = []
    for distance in (5e3, 5e5):
        X, groups, mu = _data(distance)
        est = TrimmedMeanEstimator(bounds=(-1e6, 1e6), corrupted_fraction=0.2,
                                   random_state=3).fit(X, groups=groups)
        fits.append((est, mu))
    (a, mu), (b, _) = fits
    np.testing.assert_array_equal(a.radii_, b.radii_)
    assert np.linalg.norm(a.mean_ - b.mean_) < 5 * 5e-3
    assert np.all(a.radii_ <= 3.0)


def test_spend_and_attributes():
    X, groups, mu = _data(100.0)
    est = TrimmedMeanEstimator(epsilon=1.0, delta=1e-6, bounds=(-200, 200),
                               corrupted_fraction=0.2,
                               random_state=0).fit(X, groups=groups)
    assert isinstance(est.privacy_loss_, ZCDP)
    assert est.rho_ <= zcdp_rho_for(1.0, 1e-6)
    assert est.epsilon_ <= 1.0 and est.delta_ <= 1e-6
    assert est.n_trim_ == robust_trim(600, 0.2) == 120
    assert est.radii_.shape == (5,)
    assert est.noise_std_.shape == (4,)


def test_robust_trim():
    assert robust_trim(1000, 0.0) == 0
    assert robust_trim(1000, 0.25) == 250
    assert robust_trim(5, 0.49) == 2  # capped: one user kept
    assert 2 * robust_trim(3, 0.49) < 3


@pytest.mark.parametrize("fraction", [0.1, 0.25])
def test_auto_routes_corrupted_fraction_to_the_trimmed_mean(fraction):
    X, groups, mu = _data(1000.0, fraction)
    est = UserMeanEstimator(bounds=(-2000, 2000), corrupted_fraction=fraction,
                            random_state=0).fit(X, groups=groups)
    assert est.method_ == "trimmed"
    assert isinstance(est.estimator_, TrimmedMeanEstimator)
    assert est.estimator_.corrupted_fraction == fraction
    clean = UserMeanEstimator(bounds=(-2000, 2000), random_state=0).fit(
        X, groups=groups)
    assert clean.method_ != "trimmed"


def test_radius_never_exceeds_the_box_diameter():
    # the private median is a point of a fixed wide log grid: with 600 users
    # and a 3.3 % share, random_state=7 released 3e44 for data in a box of
    # diameter 35, and the estimate came out at 1e39 (found by the Dask
    # equivalence test); the radius is now capped at the box's diameter
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(600), rng.integers(1, 6, 600))
    X = rng.normal(0.5, 1.0, size=(g.size, 3))
    diameter = 2 * np.linalg.norm([10.0] * 3)
    for seed in range(7, 12):
        est = TrimmedMeanEstimator(bounds=(-10, 10), random_state=seed).fit(
            X, groups=g)
        assert np.all(est.radii_ <= diameter)
        # sampling sd of the mean is ~0.03 per coordinate, the last noise
        # ~0.02: an error of 1 is > 10 sd
        assert np.linalg.norm(est.mean_ - 0.5) < 1.0
