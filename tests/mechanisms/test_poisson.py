"""Poisson-sampled lattice releases (:mod:`skuserdp.mechanisms._poisson`).

The plan's public quantities (σ² ≥ (z·r)² + τ² exactly, the loss of the
calibration, the variance of a release) and the release itself (on the
lattice, reproducible from its seed). The privacy map is tested exactly in
``tests/privacy/test_poisson_lattice.py``; the release's law (mean,
variance, clipping, a mask and noise independent of the data) in
``tests/linear_model/test_sgd.py``.
"""

from fractions import Fraction

import numpy as np
import pytest

from skuserdp.mechanisms import plan_poisson_sum, poisson_sum_from_plan
from skuserdp.privacy import calibrate_poisson_lattice, lattice_contribution_radius

pytest.importorskip("dp_accounting")


def test_plan_poisson_sum():
    n, p, C = 500, 3, 0.7
    plan = plan_poisson_sum(n, p, epsilon=1.0, delta=1e-6, sampling_rate=0.2,
                            n_steps=7, radius=C)
    z, loss = calibrate_poisson_lattice(1.0, 1e-6, 0.2, 7, n_params=p)
    assert plan.noise_multiplier == z and plan.loss == loss
    assert plan.radius_units == lattice_contribution_radius(C / plan.grid, p, "l2")
    floor = (Fraction(z) * Fraction(plan.radius_units)) ** 2 + 4
    assert floor <= plan.noise.sigma2 <= floor + Fraction(1, 2 ** 20)
    assert plan.noise_variance == pytest.approx(
        float(plan.noise.sigma2) * (plan.grid / (0.2 * n)) ** 2, rel=1e-14)
    # the lattice widening and τ² cost < 0.2 % of the continuous variance
    assert plan.noise_variance == pytest.approx((z * C / (0.2 * n)) ** 2, rel=2e-3)


def test_poisson_release_is_on_the_lattice_and_seeded():
    plan = plan_poisson_sum(300, 2, epsilon=1.0, delta=1e-6, sampling_rate=0.1,
                            n_steps=1, radius=1.0)
    V = np.random.default_rng(0).normal(size=(300, 2))
    out = poisson_sum_from_plan(V, plan, random_state=4)
    units = out * (0.1 * 300) / plan.grid
    np.testing.assert_allclose(units, np.rint(units), atol=1e-6)
    np.testing.assert_array_equal(out, poisson_sum_from_plan(V, plan,
                                                             random_state=4))
    assert not np.array_equal(out, poisson_sum_from_plan(V, plan, random_state=5))
    with pytest.raises(ValueError, match="shape"):
        poisson_sum_from_plan(V[:, :1], plan)


def test_poisson_release_with_no_user_sampled():
    # q·n = 3e-4: almost surely nobody is sampled; the release is the noise
    # alone (an empty exact sum), divided by the public q·n.
    plan = plan_poisson_sum(3, 2, epsilon=1.0, delta=1e-6, sampling_rate=1e-4,
                            n_steps=1, radius=1.0)
    out = poisson_sum_from_plan(np.full((3, 2), 1e9), plan, random_state=0)
    units = out * (1e-4 * 3) / plan.grid
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(units, np.rint(units), atol=1e-6)
