"""Accuracy warnings point at the user's line, however the fit is reached.

Each case triggers one warning from inside a fit -- called directly, through
scikit-learn's fit wrapper, or through a meta-estimator -- and checks that
the warning is attributed to this file (the caller), not to a line of
skuserdp or scikit-learn.
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, GroupKFold

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPSGDRegressor
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    FewUsersBallEstimator,
    UserMeanEstimator,
)
from skuserdp.utils._warnings import warn_at_caller


def _users(n_users=300, d=2, seed=0, loc=0.0):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_users), 3)
    return loc + rng.normal(size=(groups.size, d)), groups


def _box_edge():
    X, g = _users(loc=50.0)  # far outside the declared box
    # (ci_share=0: the noise draw this case was written with puts the
    # estimate on the edge)
    ClipNoiseMeanEstimator(bounds=(-1.0, 1.0), ci_share=0.0,
                           random_state=0).fit(X, groups=g)


def _noise_wider_than_box():
    X, g = _users(n_users=20)
    ClipNoiseMeanEstimator(epsilon=0.01, bounds=(-1.0, 1.0),
                           random_state=0).fit(X, groups=g)


def _hopeless_auto():
    X, g = _users(n_users=20)
    UserMeanEstimator(epsilon=0.01, bounds=(-1e6, 1e6), random_state=0).fit(
        X, groups=g)


def _few_users_unreliable():
    X, g = _users(n_users=30)
    FewUsersBallEstimator(radius=3.0, delta=0.3, random_state=0).fit(X, groups=g)


def _noisy_plan():
    X, g = _users(n_users=30)
    y = X[:, 0]
    UserDPSGDRegressor(epsilon=0.1, bounds=(-3.0, 3.0), target_bounds=(-3.0, 3.0),
                       random_state=0).fit(X, y, groups=g)


def _through_grid_search():
    X, g = _users(loc=50.0)
    GridSearchCV(ClipNoiseMeanEstimator(bounds=(-1.0, 1.0), random_state=0),
                 {"epsilon": [1.0]}, cv=GroupKFold(2)).fit(X, groups=g)


CASES = [_box_edge, _noise_wider_than_box, _hopeless_auto, _few_users_unreliable,
         _noisy_plan]


@pytest.mark.parametrize("case", CASES, ids=lambda f: f.__name__)
def test_the_warning_names_the_callers_line(case):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        case()
    ours = [w for w in seen if issubclass(w.category, AccuracyWarning)]
    assert ours, "the case did not warn"
    assert {w.filename for w in ours} == {__file__}, [
        (w.filename, w.lineno) for w in ours]


def test_through_a_meta_estimator_too():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _through_grid_search()
    ours = [w for w in seen if issubclass(w.category, AccuracyWarning)]
    assert ours and {w.filename for w in ours} == {__file__}


def test_a_fixed_stacklevel_would_point_inside_the_library():
    # positive control: the same warning with the old fixed stacklevel names
    # scikit-learn's fit wrapper, not this file
    import skuserdp.mean._base as base

    real = base.warn_at_caller

    def fixed(message, category):
        warnings.warn(message, category, stacklevel=3)

    with pytest.MonkeyPatch.context() as mp, \
            warnings.catch_warnings(record=True) as seen:
        mp.setattr(base, "warn_at_caller", fixed)
        warnings.simplefilter("always")
        _box_edge()
    assert base.warn_at_caller is real
    names = {w.filename for w in seen if issubclass(w.category, AccuracyWarning)}
    assert names and __file__ not in names


def test_warn_at_caller_called_from_outside_names_its_caller():
    with pytest.warns(UserWarning, match="here") as seen:
        warn_at_caller("here", UserWarning)
    assert seen[0].filename == __file__
