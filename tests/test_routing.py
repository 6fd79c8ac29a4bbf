"""groups reach fit and score inside Pipeline / GridSearchCV / cross_validate.

With metadata routing on, the class-level default request of
:class:`skuserdp.base.UserLevelMixin` routes ``groups`` without any
``set_*_request`` call. Without routing, scikit-learn hands ``groups`` to the
splitter only; our estimators then warn that the fit is item-level.
"""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skuserdp.exceptions import ItemLevelPrivacyWarning
from skuserdp.mean import ClipNoiseMeanEstimator
from skuserdp.users import user_means


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


#: the public box of ``_data`` (declared: ``bounds="auto"`` with 40 users and a
#: small ε learns a useless box, which would make every score the same)
BOX = (-1.5, 1.5)


def _data():
    # Unequal rows per user, with many-row users far from few-row users, so
    # that the mean of user means differs clearly from the row mean.
    rng = np.random.default_rng(0)
    n_users = 60
    rows = np.where(np.arange(n_users) % 2 == 0, 1, 9)
    groups = np.repeat(np.arange(n_users), rows)
    offset = np.where(rows[groups] == 1, 1.0, -1.0)[:, None]
    X = offset + 0.1 * rng.normal(size=(groups.size, 2))
    return X, groups


def test_default_request_is_groups_for_fit_and_score():
    routing_info = ClipNoiseMeanEstimator().get_metadata_routing()
    assert routing_info.fit.requests["groups"] is True
    assert routing_info.score.requests["groups"] is True


def test_grid_search_routes_groups_to_fit_and_score(routing):
    X, groups = _data()
    est = ClipNoiseMeanEstimator(bounds=BOX, radius=2.0, random_state=0)
    cv = GroupKFold(n_splits=3)
    gs = GridSearchCV(est, {"epsilon": [0.5, 1.0, 4.0]}, cv=cv)
    gs.fit(X, groups=groups)
    assert gs.best_estimator_.n_users_ == 60
    # Recompute every split score by hand: fit on the training users, score
    # against the mean of the held-out users' means.
    for i, eps in enumerate([0.5, 1.0, 4.0]):
        for k, (train, test) in enumerate(cv.split(X, groups=groups)):
            fitted = ClipNoiseMeanEstimator(epsilon=eps, bounds=BOX, radius=2.0,
                                            random_state=0)
            fitted.fit(X[train], groups=groups[train])
            assert fitted.n_users_ == 40
            target = user_means(X[test], groups[test]).means.mean(axis=0)
            expected = -np.sum((fitted.mean_ - target) ** 2)
            got = gs.cv_results_[f"split{k}_test_score"][i]
            assert got == pytest.approx(expected, rel=1e-12)
            # ... which is not the row-mean score a groups-less score would give
            assert got != pytest.approx(-np.sum((fitted.mean_ - X[test].mean(0)) ** 2))


def test_cross_validate_and_pipeline(routing):
    X, groups = _data()
    clip = FunctionTransformer(np.clip, kw_args={"a_min": -3, "a_max": 3})
    est = ClipNoiseMeanEstimator(bounds=BOX, radius=2.0, random_state=0)
    pipe = make_pipeline(clip, est)
    pipe.fit(X, groups=groups)
    assert pipe[-1].n_users_ == 60
    assert np.isfinite(pipe.score(X, groups=groups))
    res = cross_validate(pipe, X, params={"groups": groups}, cv=GroupKFold(3))
    assert np.isfinite(res["test_score"]).all()
    gs = GridSearchCV(pipe, {"clipnoisemeanestimator__epsilon": [0.5, 2.0]},
                      cv=GroupKFold(3)).fit(X, groups=groups)
    assert gs.best_estimator_[-1].n_users_ == 60


def test_without_routing_the_fit_warns_item_level():
    X, groups = _data()
    gs = GridSearchCV(ClipNoiseMeanEstimator(bounds=BOX, radius=2.0, random_state=0),
                      {"epsilon": [1.0]}, cv=GroupKFold(3))
    with pytest.warns(ItemLevelPrivacyWarning):
        gs.fit(X, groups=groups)
    assert gs.best_estimator_.n_users_ == X.shape[0]  # rows, not users
