"""Dask input: the per-user aggregation runs on Dask, the result is the in-memory one.

A real ``dask.distributed.LocalCluster`` (two worker processes) runs most of
these tests; a few run on Dask's threaded scheduler. Data partitioned by user
(each user's rows in one partition) must give bit-identical user tables and
estimates with the same seed; users spread over partitions differ only by the
rounding of the summation order.
"""

import logging
import warnings

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

from skuserdp.exceptions import (  # noqa: E402
    AccuracyWarning,
    ItemLevelPrivacyWarning,
    YIgnoredWarning,
)
from skuserdp.mean import (  # noqa: E402
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    DiscreteDistributionEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
)
from skuserdp.users import user_means  # noqa: E402
from skuserdp.utils.discovery import all_estimators  # noqa: E402

#: what a user would declare for each mean estimator (a public box; 600 users
#: are too few to learn one privately); one that takes a box and is not
#: listed gets (-10, 10)
_DECLARED = {
    "ClipNoiseMeanEstimator": (ClipNoiseMeanEstimator, dict(bounds=(-10.0, 10.0))),
    "CoinPressMeanEstimator": (CoinPressMeanEstimator, dict(bounds=(-10.0, 10.0))),
    "UserMeanEstimator": (UserMeanEstimator, dict(bounds=(-10.0, 10.0))),
    "WinsorizedMeanEstimator": (WinsorizedMeanEstimator, dict(bounds=(-10.0, 10.0))),
    "FewUsersBallEstimator": (FewUsersBallEstimator, dict(radius=10.0)),
    "ThreadedClipNoiseEstimator": (ThreadedClipNoiseEstimator,
                                   dict(moment_bound=1.0, bounds=(-10.0, 10.0))),
}


MEAN_ESTIMATORS = {
    name: _DECLARED.get(name, (cls, dict(bounds=(-10.0, 10.0))))
    for name, cls in all_estimators()
    if cls.__module__.startswith("skuserdp.mean")
    and name != "DiscreteDistributionEstimator"  # (tested on its own below)
}


def test_every_mean_estimator_is_covered():
    # every mean estimator is either listed or takes the declared box
    for name, (cls, params) in MEAN_ESTIMATORS.items():
        assert set(params) <= set(cls().get_params()), name
    assert set(_DECLARED) <= set(MEAN_ESTIMATORS)


@pytest.fixture(scope="module")
def client():
    # the scheduler's HTTP server (no dashboard) on a free local port: on the
    # default 8787, held by any other cluster (a parallel test run), it would
    # move elsewhere with a UserWarning
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address="127.0.0.1:0",
                                  scheduler_kwargs={"dashboard": False},
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _panel(n_users=600, d=3, seed=0):
    """Unequal rows per user (1-5), users sorted, columns a, b, ... and user."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 6, n_users)
    g = np.repeat(np.arange(n_users) * 7 + 3, counts)  # gaps in the ids
    X = rng.normal(0.5, 1.0, size=(g.size, d))
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    df["user"] = g
    return df


def _by_user(df, npartitions=5):
    """A Dask DataFrame with each user's rows in one partition (sorted ids)."""
    out = dd.from_pandas(df.set_index("user", drop=False), npartitions=npartitions,
                         sort=True)
    assert out.npartitions > 1
    return out


def _features(df):
    return df[[c for c in df.columns if c != "user"]]


def test_user_means_bit_identical_when_partitioned_by_user(client):
    df = _panel()
    ref = user_means(_features(df), df["user"])
    for groups, X in [("user", _by_user(df)),
                      (_by_user(df)["user"], _features(_by_user(df)))]:
        got = user_means(X, groups)
        np.testing.assert_array_equal(got.means, ref.means)
        np.testing.assert_array_equal(got.counts, ref.counts)
        np.testing.assert_array_equal(got.labels, ref.labels)


def test_user_means_of_users_across_partitions(client):
    df = _panel()
    X = _features(df).to_numpy()
    ref = user_means(X, df["user"])
    # chunks of 97 rows split users: partial sums add in another order
    got = user_means(da.from_array(X, chunks=(97, 2)), df["user"].to_numpy())
    np.testing.assert_array_equal(got.counts, ref.counts)
    np.testing.assert_array_equal(got.labels, ref.labels)
    # at most 5 rows per user: each summation order is within 4 roundings of
    # the exact sum, so the two means differ by < 8 u Σ|x| / n_u
    tol = 8 * np.finfo(float).eps * user_means(np.abs(X), df["user"]).means
    assert np.all(np.abs(got.means - ref.means) <= tol)
    assert not np.array_equal(got.means, ref.means)  # the split is exercised


@pytest.mark.parametrize("name", sorted(MEAN_ESTIMATORS))
def test_mean_estimator_on_cluster_equals_in_memory(name, client):
    cls, params = MEAN_ESTIMATORS[name]
    df = _panel()
    ref = cls(random_state=7, **params).fit(_features(df), groups=df["user"])
    est = cls(random_state=7, **params).fit(_by_user(df), groups="user")
    np.testing.assert_array_equal(est.mean_, ref.mean_)
    assert est.n_users_ == ref.n_users_ == 600
    assert est.epsilon_ == ref.epsilon_ and est.delta_ == ref.delta_
    assert est.feature_names_in_.tolist() == ["x0", "x1", "x2"]
    assert est.n_features_in_ == 3
    # score on held-out users computed on the cluster = in memory
    held = _panel(seed=1)
    assert est.score(_by_user(held), groups="user") == ref.score(
        _features(held), groups=held["user"])


def test_discrete_distribution_on_cluster_equals_in_memory(client):
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(400), rng.integers(1, 4, 400))
    df = pd.DataFrame({"c": rng.choice(["a", "b", "c"], g.size), "user": g})
    params = dict(classes=["a", "b", "c"], samples_per_user=1, random_state=0)
    ref = DiscreteDistributionEstimator(**params).fit(df[["c"]], groups=df["user"])
    est = DiscreteDistributionEstimator(**params).fit(_by_user(df, 4), groups="user")
    np.testing.assert_array_equal(est.probabilities_, ref.probabilities_)
    assert est.route_ == ref.route_ and est.n_users_ == ref.n_users_ == 400
    # class frequencies are exact in any summation order: users may be split
    split = dd.from_pandas(df, npartitions=7, sort=False)
    other = DiscreteDistributionEstimator(**params).fit(split, groups="user")
    np.testing.assert_array_equal(other.probabilities_, ref.probabilities_)


def test_threaded_scheduler_and_dask_array():
    df = _panel(seed=2)
    X, g = _features(df).to_numpy(), df["user"].to_numpy()
    ref = ClipNoiseMeanEstimator(bounds=(-10, 10), random_state=0).fit(X, groups=g)
    # chunk boundaries at user boundaries: every user in one chunk
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    cuts = starts[::100][1:]
    chunks = tuple(np.diff(np.r_[0, cuts, g.size]).tolist())
    with dask.config.set(scheduler="threads"):
        est = ClipNoiseMeanEstimator(bounds=(-10, 10), random_state=0).fit(
            da.from_array(X, chunks=(chunks, 3)),
            groups=da.from_array(g, chunks=chunks))
    np.testing.assert_array_equal(est.mean_, ref.mean_)
    assert not hasattr(est, "feature_names_in_")


def test_overflowing_user_on_dask_is_finite_as_in_memory():
    X = np.array([[1e308, 1.0], [1e308, 2.0], [1.0, 3.0], [2.0, 4.0]])
    g = np.array([0, 0, 1, 1])
    ref = user_means(X, g)
    with dask.config.set(scheduler="sync"):
        for chunks in [(2, 2), (1, 1, 1, 1)]:  # the big user in one chunk, split
            got = user_means(da.from_array(X, chunks=(chunks, 2)), g)
            assert np.all(np.isfinite(got.means))
            np.testing.assert_array_equal(got.means, ref.means)


# ------------------------------------------------------------------ refusals
def test_dask_refuses_what_memory_refuses():
    df = _panel(n_users=50)
    with dask.config.set(scheduler="sync"):
        bad = df.copy()
        bad["user"] = bad["user"].astype(object)
        bad.loc[len(bad) - 1, "user"] = None  # a row without user
        with pytest.raises(ValueError, match="missing values"):
            user_means(dd.from_pandas(bad, npartitions=3), "user")
        nan = df.copy()
        nan.loc[5, "x1"] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            user_means(dd.from_pandas(nan, npartitions=3), "user")
        text = df.assign(x1="a")
        with pytest.raises(ValueError, match="non-numeric"):
            user_means(dd.from_pandas(text, npartitions=3), "user")
        mixed = df.copy()
        mixed["user"] = mixed["user"].astype(object)
        mixed.loc[0, "user"] = "first"
        with dask.config.set({"dataframe.convert-string": False}), \
                pytest.raises(ValueError, match="mutually comparable"):
            user_means(dd.from_pandas(mixed, npartitions=3), "user")
        ddf = dd.from_pandas(df, npartitions=3)
        with pytest.raises(ValueError, match="not a column"):
            user_means(ddf, "id")
        with pytest.raises(ValueError, match="partitions"):
            user_means(_features(ddf), dd.from_pandas(df["user"], npartitions=2))
        with pytest.raises(ValueError, match="Dask collection but X is not"):
            user_means(_features(df), ddf["user"])
        with pytest.raises(ValueError, match="Dask collection but X is not"):
            ClipNoiseMeanEstimator(bounds=(-1, 1)).fit(
                _features(df), groups=ddf["user"])
        with pytest.raises(ValueError, match="at least 2 users"):
            ClipNoiseMeanEstimator(bounds=(-1, 1)).fit(
                ddf[ddf["user"] == 3], groups="user")
        with pytest.raises(ValueError, match="one user id per row"):
            user_means(da.ones((10, 2), chunks=5), np.arange(9))


def test_dask_warns_loudly_without_groups():
    df = _panel(n_users=40)
    ddf = dd.from_pandas(df, npartitions=3)
    with dask.config.set(scheduler="sync"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ClipNoiseMeanEstimator(bounds=(-10, 10)).fit(_features(ddf), ddf["user"])
        ClipNoiseMeanEstimator(bounds=(-10, 10)).fit(_features(ddf))
    kinds = [(x.category, x.filename) for x in w
             if issubclass(x.category, (YIgnoredWarning, ItemLevelPrivacyWarning))]
    assert kinds == [(YIgnoredWarning, __file__), (ItemLevelPrivacyWarning, __file__)]


@pytest.mark.filterwarnings(  # few users: the SSP accuracy warning (issue 31)
    "ignore:UserDPLinearRegression may be worse than:"
    "skuserdp.exceptions.AccuracyWarning")
@pytest.mark.parametrize("box", ["declared", "auto"])
def test_linear_regression_on_cluster_equals_in_memory(box, client):
    from skuserdp.linear_model import UserDPLinearRegression

    rng = np.random.default_rng(5)
    df = _panel(n_users=3000, seed=5)
    df["y"] = _features(df).to_numpy() @ [1.0, 2.0, -1.0] + 0.5 + rng.normal(
        0, 0.3, len(df))
    cols = ["x0", "x1", "x2"]
    params = dict(bounds=(-5.0, 5.0), target_bounds=(-10.0, 10.0)) \
        if box == "declared" else {}
    ref = UserDPLinearRegression(random_state=3, **params).fit(
        df[cols], df["y"], groups=df["user"])
    ddf = _by_user(df)
    est = UserDPLinearRegression(random_state=3, **params).fit(
        ddf[cols], ddf["y"], groups=ddf["user"])
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert est.intercept_ == ref.intercept_
    assert est.n_users_ == ref.n_users_ == 3000
    assert est.epsilon_ == ref.epsilon_ and est.feature_names_in_.tolist() == cols
    np.testing.assert_array_equal(est.bounds_[0], ref.bounds_[0])


@pytest.mark.filterwarnings(  # few users: the SSP accuracy warning (issue 31)
    "ignore:UserDPLinearRegression may be worse than:"
    "skuserdp.exceptions.AccuracyWarning")
def test_linear_regression_dask_checks():
    from skuserdp.linear_model import UserDPLinearRegression

    df = _panel(n_users=200)
    df["y"] = 1.0
    ddf = dd.from_pandas(df, npartitions=3)
    est = UserDPLinearRegression(bounds=(-5, 5), target_bounds=(-2, 2))
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="partitioned like X"):
            est.fit(_features(ddf), dd.from_pandas(df["y"], npartitions=2),
                    groups=ddf["user"])
        with pytest.raises(ValueError, match="Dask collection but X is not"):
            est.fit(_features(df), ddf["y"], groups=ddf["user"])
        with pytest.warns(ItemLevelPrivacyWarning) as record:
            est.fit(_features(ddf), ddf["y"])
        assert record[0].filename == __file__
        assert est.n_users_ == len(df)  # every row its own user
        bad = df.copy()
        bad.loc[3, "y"] = np.inf
        with pytest.raises(ValueError, match="infinity"):
            est.fit(_features(ddf), dd.from_pandas(bad, npartitions=3)["y"],
                    groups=ddf["user"])


def _regression_panel(n_users=3000, seed=5):
    rng = np.random.default_rng(seed)
    df = _panel(n_users=n_users, seed=seed)
    score = _features(df).to_numpy() @ [1.0, 2.0, -1.0] + 0.5
    df["y"] = score + rng.normal(0, 0.3, len(df))
    df["label"] = np.where(score > 1.0, "high", "low")
    return df


#: DP-SGD configurations: moments (squared loss) and per-step passes (Huber,
#: log loss), standardisation, Phased ERM, declared and learned boxes
SGD_CASES = [
    ("regressor", dict()),
    ("regressor", dict(standardize=True, loss="huber")),
    ("regressor", dict(solver="phased_erm", samples_per_user=1,
                       bounds=(-5.0, 5.0), target_bounds=(-12.0, 12.0))),
    ("classifier", dict(bounds=(-5.0, 5.0))),
]


@pytest.mark.parametrize("kind, params", SGD_CASES)
def test_dpsgd_on_cluster_equals_in_memory(kind, params, client):
    from skuserdp.linear_model import UserDPSGDClassifier, UserDPSGDRegressor

    df = _regression_panel()
    cols = ["x0", "x1", "x2"]
    if kind == "regressor":
        make = lambda: UserDPSGDRegressor(max_iter=10, random_state=2,  # noqa: E731
                                          **params)
        target = "y"
    else:
        make = lambda: UserDPSGDClassifier(  # noqa: E731
            classes=["high", "low"], max_iter=10, random_state=2, **params)
        target = "label"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        ref = make().fit(df[cols], df[target], groups=df["user"])
        ddf = _by_user(df)
        est = make().fit(ddf[cols], ddf[target], groups=ddf["user"])
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    assert est.n_users_ == ref.n_users_ == 3000
    assert est.epsilon_ == ref.epsilon_ and est.feature_names_in_.tolist() == cols
    # predictions: on in-memory rows, or mapped over the partitions
    with pytest.raises(NotImplementedError, match="map_partitions"):
        est.predict(ddf[cols])
    mapped = ddf[cols].map_partitions(est.predict).compute()
    np.testing.assert_array_equal(np.asarray(mapped), ref.predict(df[cols]))


def test_dpsgd_classifier_dask_labels_are_checked_in_the_partitions():
    from skuserdp.linear_model import UserDPSGDClassifier

    df = _regression_panel(n_users=100)
    ddf = dd.from_pandas(df, npartitions=3)
    X = ddf[["x0", "x1", "x2"]]
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="classes=\\[...\\]"):
            UserDPSGDClassifier(bounds=(-5, 5)).fit(X, ddf["label"],
                                                    groups=ddf["user"])
        with pytest.raises(ValueError, match="not in the declared classes"):
            UserDPSGDClassifier(classes=["high", "mid"], bounds=(-5, 5)).fit(
                X, ddf["label"], groups=ddf["user"])


def test_not_yet_supported_estimators_refuse_dask_instead_of_loading_it():
    from skuserdp.model_selection import PrivateGridSearch, select_model_privately
    from skuserdp.linear_model import UserDPSGDRegressor

    X = da.ones((40, 2), chunks=10)
    y = da.ones(40, chunks=10)
    g = np.repeat(np.arange(20), 2)
    search = PrivateGridSearch(ClipNoiseMeanEstimator(bounds=(0, 2)),
                               {"calibration": ["tight", "paper"]}, epsilon=1.0,
                               loss_bound=4.0)
    with pytest.raises(NotImplementedError, match="Dask input"):
        search.fit(X, groups=g)
    with pytest.raises(NotImplementedError, match="Dask input"):
        select_model_privately([UserDPSGDRegressor()], X, y, groups=g, epsilon=1.0,
                               loss_bound=1.0)


def test_linear_models_check_users_and_warn_at_the_caller_on_both_paths():
    from skuserdp.linear_model import (
        UserDPLinearRegression,
        UserDPSGDClassifier,
        UserDPSGDRegressor,
    )

    df = _regression_panel(n_users=60)
    cols = ["x0", "x1", "x2"]
    ddf = dd.from_pandas(df, npartitions=3)
    box = dict(bounds=(-5.0, 5.0))
    makers = [lambda: UserDPSGDRegressor(max_iter=2, target_bounds=(-9, 9), **box),
              lambda: UserDPSGDClassifier(classes=["high", "low"], max_iter=2, **box),
              lambda: UserDPLinearRegression(target_bounds=(-9, 9), **box)]
    with dask.config.set(scheduler="sync"), warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        for make in makers:
            target = "label" if isinstance(make(), UserDPSGDClassifier) else "y"
            for X, y in [(df[cols], df[target]), (ddf[cols], ddf[target])]:
                with pytest.warns(ItemLevelPrivacyWarning) as record:
                    make().fit(X, y)
                assert [r.filename for r in record
                        if r.category is ItemLevelPrivacyWarning] == [__file__]
            one = ddf[ddf["user"] == df["user"].iloc[0]]  # a single user
            with pytest.raises(ValueError, match="at least 2 users"):
                make().fit(one[cols], one[target], groups=one["user"])
        with pytest.raises(ValueError, match="at least 2 users"):  # before the box
            UserDPLinearRegression().fit(one[cols], one["y"], groups=one["user"])


def test_dask_string_columns_and_unknown_chunks_are_refused_clearly():
    df = pd.DataFrame({"c": [0, 1, 2, 1] * 10, "user": np.repeat(np.arange(20), 2)})
    df["c"] = df["c"].astype(object)  # Dask turns it into a string column
    ddf = dd.from_pandas(df, npartitions=2)
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="classes .* are numbers"):
            DiscreteDistributionEstimator(classes=[0, 1, 2], samples_per_user=1).fit(
                ddf, groups="user")
        X = dd.from_pandas(_panel(n_users=30), npartitions=2)[["x0"]].to_dask_array()
        with pytest.raises(ValueError, match="lengths=True"):
            user_means(X, np.zeros(10))
