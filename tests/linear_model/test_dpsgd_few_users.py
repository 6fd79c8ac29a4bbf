"""The few-users warning of clip_norm="auto" (issue 31): public, so it fires
in every seed alike, and only below its threshold."""

import math
import warnings

import numpy as np
import pytest

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPSGDClassifier, UserDPSGDRegressor
from skuserdp.linear_model._dpsgd import few_users_clip_threshold
from skuserdp.mechanisms import bounds_grid

FEW = "too few for the private clip norm"
NOISY = "noise term of this plan's public excess-risk bound"


def _data(n_users, seed=0, rows=4):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_users), rows)
    X = rng.uniform(-1, 1, size=(groups.size, 2))
    y = X @ [0.5, -0.3] + 0.1 * rng.standard_normal(groups.size)
    return X, y, groups


def _few_user_warnings(est, X, y, groups):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        est.fit(X, y, groups=groups)
    return [w for w in record if issubclass(w.category, AccuracyWarning)
            and FEW in str(w.message)]


def test_threshold_is_the_closed_form():
    # ⌈4·ln(K)/ε₀⌉ with K the positive grid of private_quantile (0 and 2^(k/4))
    k = bounds_grid().size // 2 + 1
    assert k == 2050
    for eps0 in (0.01, 0.0852, 0.3, 2.0):
        assert few_users_clip_threshold(eps0) == math.ceil(4 * math.log(k) / eps0)


@pytest.mark.parametrize("seed", range(5))
def test_fires_in_every_seed_with_few_users(seed):
    # 40 users at epsilon = 4: the clip release's ε₀ asks for ~100 users; the
    # warning depends on n and ε₀ only, so every seed (of data and noise) warns
    X, y, g = _data(40, seed=seed)
    est = UserDPSGDRegressor(epsilon=4.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             random_state=seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*{NOISY}", AccuracyWarning)
        assert len(_few_user_warnings(est, X, y, g)) == 1


def test_silent_with_many_users_and_with_a_public_clip():
    X, y, g = _data(1500, rows=2)
    reg = UserDPSGDRegressor(epsilon=1.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             random_state=0)
    assert _few_user_warnings(reg, X, y, g) == []
    X, y, g = _data(40)
    reg = UserDPSGDRegressor(epsilon=4.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             clip_norm=0.5, random_state=0)
    assert _few_user_warnings(reg, X, y, g) == []


def test_threshold_is_where_the_warning_switches():
    # the same budget and shape just below / at the threshold: n is the only
    # thing that changes (the estimator's ε₀ is read from the message)
    X, y, g = _data(40)
    est = UserDPSGDClassifier(epsilon=4.0, classes=[0, 1], bounds=(-1, 1),
                              random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*{NOISY}", AccuracyWarning)
        (w,) = _few_user_warnings(est, X, (y > 0).astype(int), g)
    n_min = int(str(w.message).split("needs about ")[1].split(" users")[0])
    for n, expected in ((n_min - 1, 1), (n_min, 0)):
        X, y, g = _data(n, rows=2)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", f".*{NOISY}", AccuracyWarning)
            got = _few_user_warnings(est, X, (y > 0).astype(int), g)
        assert len(got) == expected, n


def test_few_users_use_the_public_clip_rule_and_no_standardisation():
    # below the threshold: clip_norm_ = radius·H/max_iter (H from the private
    # smoothness, mean_squared_row_norm_), no private standardisation, and the
    # spend stays within the target (the skipped clip release is not billed)
    X, y, g = _data(40)
    reg = UserDPSGDRegressor(epsilon=4.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             max_iter=50, radius=3.0, random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*{NOISY}", AccuracyWarning)
        assert len(_few_user_warnings(reg, X, y, g)) == 1
    assert not hasattr(reg, "feature_center_")
    assert reg.epsilon_ <= 4.0 * (1 + 1e-12)
    # with a constant learning rate H is public, the squared loss's
    # smoothness row_bound² (rows in box units plus the intercept's 1), and
    # the rule is exact: radius·H/max_iter (below G = b(b·radius + 1))
    fixed = UserDPSGDRegressor(epsilon=4.0, bounds=(-1, 1), target_bounds=(-2, 2),
                               max_iter=50, radius=3.0, learning_rate=0.05,
                               random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*{NOISY}", AccuracyWarning)
        assert len(_few_user_warnings(fixed, X, y, g)) == 1
    assert fixed.clip_norm_ == pytest.approx(3.0 * (2 + 1) / 50, rel=1e-12)
    # many users: the private median (standardised), no rule
    X, y, g = _data(1500, rows=2)
    big = UserDPSGDRegressor(epsilon=1.0, bounds=(-1, 1), target_bounds=(-2, 2),
                             random_state=0).fit(X, y, groups=g)
    assert hasattr(big, "feature_center_")
