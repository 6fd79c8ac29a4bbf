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
from skuserdp.linear_model import UserDPSGDRegressor
from skuserdp.mean import ClipNoiseMeanEstimator
from skuserdp.users import user_means


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


#: the public box of ``_data`` (declared: ``bounds="auto"`` with 40 users and a
#: small ε learns a useless box, which would make every score the same)
BOX = (-1.5, 1.5)
#: the noise of 40 training users at epsilon 0.5 may put an estimate on the
#: edge of BOX (an AccuracyWarning, which would fail GridSearchCV's fit)
noise_may_reach_the_box = pytest.mark.filterwarnings(
    "ignore:.*lies on or outside the public box:skuserdp.exceptions.AccuracyWarning")


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


@noise_may_reach_the_box
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


@noise_may_reach_the_box
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


# ------------------------------------------ groups as a column name (pandas)
#: constructor arguments for 40 users and three features (as in test_common)
_BOX = dict(bounds=(-10.0, 10.0), random_state=0)
_PARAMS = {
    "FewUsersBallEstimator": dict(epsilon=1.0, delta=0.3, radius=10.0,
                                  random_state=0),
    "DiscreteDistributionEstimator": dict(classes=[0, 1, 2, 3], delta=0.3,
                                          random_state=0),
    "UserDPSGDRegressor": dict(epsilon=1000.0, delta=1e-3, target_bounds=(-10, 10),
                               max_iter=5, **_BOX),
    "UserDPSGDClassifier": dict(epsilon=1000.0, delta=1e-3, classes=[0, 1],
                                max_iter=5, **_BOX),
    "UserDPLinearRegression": dict(epsilon=1000.0, delta=1e-3,
                                   target_bounds=(-10, 10), **_BOX),
    "ThreadedClipNoiseEstimator": dict(moment_bound=1.0, **_BOX),
}


def _estimators():
    from skuserdp.utils.discovery import all_estimators
    return [cls(**_PARAMS.get(name, _BOX)) for name, cls in all_estimators()]


def _frame_for(estimator):
    """(table with the id column 'uid' first, y, the ids, the feature names)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(40), 3)
    X = rng.normal(size=(g.size, 3)) * 0.3 + 0.2
    names = ["a", "b", "c"]
    if type(estimator).__name__ == "DiscreteDistributionEstimator":
        X, names = np.digitize(X[:, :1], [0.0, 0.2, 0.4]), ["category"]
    y = None
    if sklearn.base.is_regressor(estimator):
        y = X[:, 0] - 0.5 * X[:, -1]
    elif sklearn.base.is_classifier(estimator):
        y = (X[:, 0] > 0.2).astype(int)
    df = pd.DataFrame(X, columns=names)
    df.insert(0, "uid", [f"user-{k}" for k in g])
    return df, y, df["uid"], names


def _output(est):
    for name in ("mean_", "probabilities_", "coef_"):
        if hasattr(est, name):
            return getattr(est, name)


@pytest.mark.filterwarnings("ignore::skuserdp.exceptions.AccuracyWarning")  # 40 users
@pytest.mark.parametrize("estimator", _estimators(), ids=lambda e: type(e).__name__)
def test_groups_column_name_is_taken_out_of_a_dataframe(estimator):
    # fit(df, groups="uid") is fit(df without uid, groups=df["uid"]): the id
    # column is the unit of privacy, not a feature; score takes it too
    df, y, ids, names = _frame_for(estimator)
    by_name = sklearn.base.clone(estimator).fit(df, y, groups="uid")
    by_ids = sklearn.base.clone(estimator).fit(df[names], y, groups=ids)
    np.testing.assert_array_equal(_output(by_name), _output(by_ids))
    assert list(by_name.feature_names_in_) == names and by_name.n_users_ == 40
    assert list(df.columns) == ["uid", *names]  # the caller's table is unchanged
    if hasattr(by_name, "score"):
        score = by_ids.score(df[names], y, groups=ids)
        assert by_name.score(df, y, groups="uid") == score


@pytest.mark.parametrize("estimator", [
    ClipNoiseMeanEstimator(**_BOX),
    UserDPSGDRegressor(**_PARAMS["UserDPSGDRegressor"]),
], ids=lambda e: type(e).__name__)
def test_groups_column_name_errors(estimator):
    df, y, _, names = _frame_for(estimator)
    est = sklearn.base.clone(estimator)
    with pytest.raises(ValueError, match="'idcode' is not a column of X.*'uid'"):
        est.fit(df, y, groups="idcode")
    with pytest.raises(ValueError, match="X is a ndarray, not a pandas DataFrame.*"
                                         "groups=user_ids"):
        est.fit(df[names].to_numpy(), y, groups="uid")


@pytest.mark.filterwarnings("ignore::skuserdp.exceptions.AccuracyWarning")
def test_groups_column_name_in_the_meta_estimators_and_user_means():
    from skuserdp.model_selection import BudgetedEstimator, PrivateGridSearch
    from skuserdp.privacy import BudgetAccountant

    est = ClipNoiseMeanEstimator(**_BOX)
    df, _, ids, names = _frame_for(est)
    budgeted = BudgetedEstimator(est, BudgetAccountant(10.0, 1e-5)).fit(
        df, groups="uid")
    assert list(budgeted.feature_names_in_) == names
    assert list(budgeted.estimator_.feature_names_in_) == names
    assert np.isfinite(budgeted.score(df, groups="uid"))
    kwargs = dict(param_grid={"radius": [1.0, 10.0]}, epsilon=5.0, loss_bound=100.0,
                  tau=1.0, random_state=0)
    a = PrivateGridSearch(est, **kwargs).fit(df, groups="uid")
    b = PrivateGridSearch(est, **kwargs).fit(df[names], groups=ids)
    np.testing.assert_array_equal(a.best_estimator_.mean_, b.best_estimator_.mean_)
    assert list(a.feature_names_in_) == names
    table = user_means(df, "uid")
    np.testing.assert_array_equal(table.means, user_means(df[names], ids).means)
    with pytest.raises(ValueError, match="not a pandas DataFrame"):
        user_means(df[names].to_numpy(), "uid")


def _numeric_frame():
    """A table whose id column 'uid' holds numbers (a Normalizer can read it)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(40), 3)
    X = rng.uniform(0, 1, (g.size, 2))
    return pd.DataFrame({"uid": g, "a": X[:, 0], "b": X[:, 1]})


@pytest.mark.filterwarnings("ignore::skuserdp.exceptions.AccuracyWarning")
@pytest.mark.parametrize("with_routing", [True, False], ids=["routing", "no-routing"])
def test_a_column_name_after_a_transforming_pipeline_step_is_refused(with_routing):
    # review finding 9: the steps before the estimator saw the id column as a
    # feature; a Normalizer (pandas output) rewrote it row by row and the fit
    # found 118 "users" in 40 users' rows: silently item-level
    from sklearn.preprocessing import Normalizer

    from skuserdp.model_selection import BudgetedEstimator
    from skuserdp.privacy import BudgetAccountant

    df = _numeric_frame()
    for last in (ClipNoiseMeanEstimator(bounds=(0, 1)), BudgetedEstimator(
            ClipNoiseMeanEstimator(bounds=(0, 1)), BudgetAccountant(10.0, 1e-3))):
        pipe = make_pipeline(Normalizer().set_output(transform="pandas"), last)
        name = pipe.steps[-1][0]
        groups = {"groups": "uid"} if with_routing else {f"{name}__groups": "uid"}
        with sklearn.config_context(enable_metadata_routing=with_routing):
            with pytest.raises(ValueError, match=r"groups='uid' names a column "
                               r"of X, but X reaches this estimator through the "
                               r"step\(s\) \['normalizer'\] of a Pipeline.*"
                               r"groups=X\['uid'\]"):
                pipe.fit(df, **groups)
            # the ids themselves, X without the column: the 40 users
            ids = {k: df["uid"] for k in groups}
            fitted = pipe.fit(df.drop(columns="uid"), **ids)[-1]
            assert getattr(fitted, "estimator_", fitted).n_users_ == 40
            # steps that do not transform X change nothing
            same = make_pipeline("passthrough", sklearn.base.clone(last))
            fitted = same.fit(df, **{k.replace(name, same.steps[-1][0]): v
                                     for k, v in groups.items()})[-1]
            assert getattr(fitted, "estimator_", fitted).n_users_ == 40


@pytest.mark.filterwarnings("ignore::skuserdp.exceptions.AccuracyWarning")
def test_ids_that_are_also_a_column_of_X_are_refused(routing):
    # review finding 10: fit(df, groups=df["uid"]) made the id a feature
    from skuserdp.model_selection import BudgetedEstimator, PrivateGridSearch
    from skuserdp.privacy import BudgetAccountant

    df = _numeric_frame()
    est = ClipNoiseMeanEstimator(bounds=(0, 1))
    match = r"groups is the column 'uid' of X.*groups='uid'.*drop\(columns='uid'\)"
    for fit in (
        lambda: sklearn.base.clone(est).fit(df, groups=df["uid"]),
        lambda: BudgetedEstimator(est, BudgetAccountant(10.0, 1e-3)).fit(
            df, groups=df["uid"]),
        lambda: PrivateGridSearch(est, {"radius": [1.0, 2.0]}, epsilon=5.0,
                                  loss_bound=2.0, tau=1.0).fit(df, groups=df["uid"]),
        lambda: user_means(df, df["uid"]),
    ):
        with pytest.raises(ValueError, match=match):
            fit()
    # GridSearchCV hands every fit a part of both: each fit refuses
    with pytest.raises(ValueError, match="groups is the column 'uid' of X"):
        GridSearchCV(est, {"radius": [1.0, 2.0]}, cv=GroupKFold(3),
                     error_score="raise").fit(df, groups=df["uid"])
    fitted = sklearn.base.clone(est).fit(df.drop(columns="uid"), groups=df["uid"])
    assert fitted.n_users_ == 40 and list(fitted.feature_names_in_) == ["a", "b"]
    # a Series of that name with other values (e.g. coarser ids) is not it
    households = (df["uid"] // 2).rename("uid")
    assert sklearn.base.clone(est).fit(df, groups=households).n_users_ == 20


# ------------------------------------------------- the README's snippets
def _readme_blocks(section=None):
    """The ```python blocks of README.md (of one ``## section`` if given)."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).parents[1] / "README.md").read_text("utf-8")
    if section is not None:
        text = text[text.index(f"## {section}\n"):]
        text = text[:text.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_scikit_learn_snippets_run():
    # the quickstart (X, user_ids) and then the section's snippet, as written
    namespace = {}
    exec(_readme_blocks()[0], namespace)
    (snippet,) = _readme_blocks("Using it with scikit-learn")
    exec(snippet, namespace)
    search, scores = namespace["search"], namespace["scores"]
    assert search.best_estimator_.n_users_ == 2000  # routed: users, not rows
    assert np.isfinite(scores["test_score"]).all()
    assert len(scores["test_score"]) == 5
    # what the section says about the other forms
    X, user_ids = namespace["X"], namespace["user_ids"]
    est = ClipNoiseMeanEstimator(bounds=(-5, 5))
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match="`groups` can only be passed if "
                                             "metadata routing is not enabled"):
            cross_validate(est, X, groups=user_ids, cv=GroupKFold(5))
    # without routing, params reach the fit but not the splitter
    with pytest.raises(ValueError, match="'groups' parameter should not be None"):
        cross_validate(est, X, params={"groups": user_ids}, cv=GroupKFold(5))
    # ... and the regressor's form, with y
    reg = UserDPSGDRegressor(**_PARAMS["UserDPSGDRegressor"])
    df, y, ids, names = _frame_for(reg)
    with sklearn.config_context(enable_metadata_routing=True):
        res = cross_validate(reg, df[names], y, params={"groups": ids},
                             cv=GroupKFold(3), return_estimator=True)
    assert all(fitted.n_users_ < 40 for fitted in res["estimator"])
