"""PrivateGridSearch over a Pipeline, and in parallel (issue 26, items 1-2).

* the per-fit budget goes to the private last step (``step__epsilon``), the
  grid takes ``step__param`` names, and ``epsilon``/``delta`` stay refused
  at any depth;
* a pipeline whose other steps learn nothing gives *exactly* the search
  over the bare estimator (same seeds, budget and losses);
* a step that learns from the data is refused by name, before anything is
  fitted (the refusal is raised even for an ``X`` that could not be fitted);
* ``n_jobs``: the same results for 1 and 2 jobs, threads and processes;
  with an accountant, one charge, in this process.
"""

import re
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import parallel_config
from sklearn.compose import (
    ColumnTransformer,
    TransformedTargetRegressor,
    make_column_selector,
)
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    StandardScaler,
)

from skuserdp.linear_model import UserDPSGDRegressor
from skuserdp.mean import ClipNoiseMeanEstimator, CoinPressMeanEstimator
from skuserdp.model_selection import BudgetedEstimator, PrivateGridSearch
from skuserdp.model_selection._private_step import private_rows, private_step_prefix
from skuserdp.exceptions import AccuracyWarning
from skuserdp.privacy import BudgetAccountant, compose_parallel, compose_spend

COLOURS = ["red", "green", "blue"]
# small searches: the selection's accuracy guarantee (not its privacy) may
# not hold, and says so; and the noise of a candidate fitted on a few
# training users may put its estimate on its box's edge (the one-hot columns
# in a (0, 1) box), which the search passes on
pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:With .* users the range step of the .*-candidate selection"
        ":skuserdp.exceptions.AccuracyWarning"),
    pytest.mark.filterwarnings(
        "ignore:.*lies on or outside the public box"
        ":skuserdp.exceptions.AccuracyWarning"),
]


@pytest.fixture
def by_value():
    """Pickle this module's functions by value: loky's workers import
    ``skuserdp`` but not the test modules (which an editable install may
    make importable, a fresh one does not)."""
    # (loky pickles with cloudpickle when it is installed: dask requires it)
    cloudpickle = pytest.importorskip("cloudpickle")
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def _skewed(n_users=800, m=3, seed=0, d=2):
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), m)
    return rng.uniform(0, 1, (users.size, d)) ** 4, users


def _search(estimator, grid, **kwargs):
    params = dict(epsilon=1.0, delta=1e-6, loss_bound=2.0, samples_per_user=3,
                  tau=0.5, alpha=0.5, random_state=0)
    params.update(kwargs)
    return PrivateGridSearch(estimator, grid, **params)


def _encoder(**kwargs):
    params = dict(categories=[COLOURS], handle_unknown="ignore", sparse_output=False)
    params.update(kwargs)
    return OneHotEncoder(**params)


def _frame(n_users=600, m=3, seed=0):
    """A pandas table: the user id, a colour and a number; y depends on both."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    uid = np.repeat(np.arange(n_users), m)
    colour = rng.choice(COLOURS, uid.size)
    x = rng.uniform(-1, 1, uid.size)
    y = 0.5 * x + np.where(colour == "red", 0.5, -0.2) + 0.1 * rng.normal(size=uid.size)
    return pd.DataFrame({"idcode": uid, "colour": colour, "x": x}), y


def _colour_pipeline(**kwargs):
    ct = ColumnTransformer([("onehot", _encoder(), ["colour"])],
                           remainder="passthrough", sparse_threshold=0)
    return make_pipeline(ct, UserDPSGDRegressor(
        bounds=(-1, 1), target_bounds=(-2, 2), max_iter=10, **kwargs))


def test_a_pipeline_that_learns_nothing_gives_the_bare_search():
    # same seeds, same per-fit budget on the last step, same losses: the
    # identity step changes nothing, bit for bit
    X, g = _skewed()
    grid = {"radius": [0.1, 0.5, 1.0]}
    est = ClipNoiseMeanEstimator(bounds=(0, 1))
    bare = _search(est, grid).fit(X, groups=g)
    pipe = make_pipeline(FunctionTransformer(), est)
    piped = _search(pipe, {f"clipnoisemeanestimator__{k}": v
                           for k, v in grid.items()}).fit(X, groups=g)
    assert piped.best_index_ == bare.best_index_
    assert piped.selection_.value == bare.selection_.value
    np.testing.assert_array_equal(piped.best_estimator_[-1].mean_,
                                  bare.best_estimator_.mean_)
    assert piped.fit_losses_ == bare.fit_losses_
    assert piped.privacy_loss_ == bare.privacy_loss_
    assert piped.best_params_ == {"clipnoisemeanestimator__radius":
                                  bare.best_params_["radius"]}
    assert piped.best_estimator_[-1].epsilon == bare.best_estimator_.epsilon < 1.0
    assert list(piped.cv_results_["param_clipnoisemeanestimator__radius"]) == \
        grid["radius"]


def _double(X):
    return 2.0 * np.asarray(X)


def test_mean_estimator_losses_are_taken_after_the_steps():
    # the steps before a mean estimator change the rows it sees: its loss on
    # the validation users is ||mean_ - T(x)||², in T's units
    from skuserdp.model_selection._search import _mean_squared_distance
    X, g = _skewed()
    search = _search(make_pipeline(FunctionTransformer(_double),
                                   ClipNoiseMeanEstimator(bounds=(0, 2))),
                     {"clipnoisemeanestimator__radius": [0.2, 2.0]},
                     loss_bound=8.0).fit(X, groups=g)
    best = search.best_estimator_
    assert best[-1].mean_ == pytest.approx(2 * X.mean(0), abs=0.1)
    expected = ((2 * X - best[-1].mean_) ** 2).sum(axis=1)
    np.testing.assert_allclose(_mean_squared_distance(*private_rows(best, X), None),
                               expected)


def test_a_regressor_pipeline_with_declared_categories_on_a_dataframe():
    df, y = _frame()
    search = _search(_colour_pipeline(), {"userdpsgdregressor__alpha": [0.0, 10.0]},
                     epsilon=2.0, loss_bound=4.0).fit(df, y, groups="idcode")
    best = search.best_estimator_
    assert search.best_params_ == {"userdpsgdregressor__alpha": 0.0}
    assert 2.0 - 1e-6 < search.epsilon_ <= 2.0
    assert search.fit_losses_[search.best_index_] == best[-1].privacy_loss_
    assert search.privacy_loss_ == compose_parallel(
        compose_spend(search.fit_losses_, 1e-6), search.selection_.privacy_loss)
    # the id column is not a feature; the encoder kept its declared categories
    assert list(search.feature_names_in_) == ["colour", "x"]
    assert search.n_features_in_ == 2
    assert [list(c) for c in best[0].named_transformers_["onehot"].categories_] == \
        [COLOURS]
    X = df.drop(columns="idcode")
    np.testing.assert_array_equal(search.predict(X), best.predict(X))
    assert search.score(df, y, groups="idcode") > 0.5
    assert best[-1].random_state is None  # no seed published


def test_nested_pipelines_are_searched():
    assert private_step_prefix(ClipNoiseMeanEstimator()) == ""
    inner = make_pipeline(Normalizer(), ClipNoiseMeanEstimator())
    assert private_step_prefix(make_pipeline(FunctionTransformer(), inner)) == \
        "pipeline__clipnoisemeanestimator__"
    X, g = _skewed()
    pipe = make_pipeline(FunctionTransformer(), make_pipeline(
        FunctionTransformer(), CoinPressMeanEstimator(bounds=(0, 1))))
    search = _search(pipe, {"pipeline__coinpressmeanestimator__radius": [0.5, 1.0]})
    search.fit(X, groups=g)
    assert search.best_estimator_[-1][-1].random_state is None
    assert search.fit_losses_[search.best_index_] == \
        search.best_estimator_[-1][-1].privacy_loss_


@pytest.mark.parametrize("where", ["estimator", "pipeline", "grid"])
def test_a_budgeted_estimator_is_refused_with_the_way_out(where):
    # review finding 7: its accountant saw the K fits, not the selection on
    # the validation users (which reads them): the search under-charged it
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    budgeted = BudgetedEstimator(ClipNoiseMeanEstimator(bounds=(0, 1)), acc)
    est, grid = {
        "estimator": (budgeted, {"estimator__radius": [0.5, 1.0]}),
        "pipeline": (make_pipeline(FunctionTransformer(), budgeted),
                     {"budgetedestimator__estimator__radius": [0.5, 1.0]}),
        "grid": (make_pipeline(FunctionTransformer(), ClipNoiseMeanEstimator()),
                 {"clipnoisemeanestimator": [ClipNoiseMeanEstimator(), budgeted]}),
    }[where]
    X, g = _skewed(n_users=200)
    with pytest.raises(TypeError, match="cannot search a BudgetedEstimator.*"
                                        "accountant=accountant"):
        _search(est, grid).fit(X, groups=g)
    assert len(acc.ledger) == 0  # nothing was fitted or charged


_OK_STEPS = [
    ("frozen", FrozenEstimator(StandardScaler().fit(np.eye(3)[:, :2]))),
    ("normalizer", Normalizer()),
    ("union", FeatureUnion([("a", FunctionTransformer()), ("b", Normalizer())])),
    ("inverse", FunctionTransformer(np.square, inverse_func=np.sqrt,
                                    check_inverse=False)),
    ("imputer", SimpleImputer(strategy="constant", fill_value=0.5,
                              keep_empty_features=True)),
    ("ordinal", OrdinalEncoder(categories=[[0.0, 1.0], [0.0, 1.0]],
                               handle_unknown="use_encoded_value", unknown_value=-1)),
    ("selector", ColumnTransformer(
        [("x", "passthrough", make_column_selector(pattern="x"))],
        sparse_threshold=0)),
]


@pytest.mark.parametrize("name, step", _OK_STEPS, ids=[n for n, _ in _OK_STEPS])
def test_steps_that_learn_nothing_are_accepted(name, step):
    X, g = _skewed(n_users=200)
    if name == "selector":
        pd = pytest.importorskip("pandas")
        X = pd.DataFrame(X, columns=["x0", "x1"])
    pipe = make_pipeline(step, ClipNoiseMeanEstimator(bounds=(-4, 4)))
    search = _search(pipe, {"clipnoisemeanestimator__radius": [1.0, 4.0]},
                     loss_bound=64.0).fit(X, groups=g)
    assert hasattr(search, "best_estimator_")


_REFUSED = [
    (StandardScaler(), "'standardscaler' .StandardScaler.*means and variances"),
    (OneHotEncoder(sparse_output=False), "categories='auto'.*Declare them"),
    (_encoder(handle_unknown="error"), "handle_unknown='error'.*'ignore'"),
    (_encoder(min_frequency=5), "min_frequency=5 counts"),
    (_encoder(sparse_output=True), "sparse_output=False"),
    (OrdinalEncoder(categories=[COLOURS]), "'use_encoded_value'"),
    (ColumnTransformer([("scale", StandardScaler(), [0])], remainder="passthrough",
                       sparse_threshold=0),
     "'columntransformer__scale' .StandardScaler"),
    (ColumnTransformer([("id", FunctionTransformer(), [0])],
                       remainder=StandardScaler(), sparse_threshold=0),
     "'columntransformer__remainder'"),
    (ColumnTransformer([("id", FunctionTransformer(), lambda X: [0])],
                       sparse_threshold=0),
     "'columntransformer__id'.*callable"),
    (ClipNoiseMeanEstimator(), "only the last step"),
    # review findings 1-4 and 14: behaviour that depends on the data
    (ColumnTransformer([("id", FunctionTransformer(), [0])]),
     "sparse_threshold=0.3 its output is sparse.*Pass sparse_threshold=0"),
    (ColumnTransformer([("x", "passthrough", make_column_selector(
        dtype_include=float))], sparse_threshold=0),
     "'columntransformer__x'.*dtypes, which pandas infers.*pattern="),
    (FunctionTransformer(np.square, inverse_func=np.sqrt),
     "check_inverse=True .*warns.*check_inverse=False"),
    (_encoder(drop="first"), "drop='first'.*warns.*drop=None"),
    (OrdinalEncoder(categories=[COLOURS], handle_unknown="use_encoded_value",
                    unknown_value=np.nan), "unknown_value=nan .*NaN"),
    (PolynomialFeatures(2), "overflow to infinity.*np.clip"),
    (SimpleImputer(), "strategy='mean' reads"),
    (SimpleImputer(strategy="constant", fill_value=0.0),
     "keep_empty_features=False .*drops"),
    (SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True,
                   add_indicator=True), "add_indicator=True"),
    (SimpleImputer(strategy="constant", fill_value=np.nan, keep_empty_features=True),
     "fill_value=nan is not finite"),
    # final review: NumPy floats are floats too (np.float32 inf/nan slipped
    # past an isinstance(value, float) check)
    (SimpleImputer(strategy="constant", fill_value=np.float32("inf"),
                   keep_empty_features=True), "fill_value=.*inf.* is not finite"),
    (OrdinalEncoder(categories=[COLOURS], handle_unknown="use_encoded_value",
                    unknown_value=np.float32("nan")), "unknown_value=.*NaN"),
]


@pytest.mark.parametrize("step, match", _REFUSED,
                         ids=[type(s).__name__ + str(i) for i, (s, _) in
                              enumerate(_REFUSED)])
def test_steps_that_learn_from_the_data_are_refused_before_any_fit(step, match):
    pipe = make_pipeline(step, ClipNoiseMeanEstimator(bounds=(0, 1)))
    search = _search(pipe, {"clipnoisemeanestimator__radius": [0.1, 1.0]})
    with pytest.raises(ValueError, match=match) as info:
        search.fit("not data")  # refused before the data is looked at
    assert "FrozenEstimator" in str(info.value)  # the documented way out
    assert not hasattr(search, "best_estimator_")


def test_a_grid_that_swaps_in_a_learning_step_is_refused():
    pipe = make_pipeline(FunctionTransformer(), ClipNoiseMeanEstimator(bounds=(0, 1)))
    search = _search(pipe, {"functiontransformer": [FunctionTransformer(),
                                                    StandardScaler()]})
    with pytest.raises(ValueError, match="StandardScaler"):
        search.fit("not data")


@pytest.mark.parametrize("grid", [{"clipnoisemeanestimator__epsilon": [0.5, 1.0]},
                                  {"clipnoisemeanestimator__delta": [0.0]},
                                  {"epsilon": [1.0]}])
def test_budget_parameters_are_refused_in_the_grid_at_any_depth(grid):
    pipe = make_pipeline(FunctionTransformer(), ClipNoiseMeanEstimator(bounds=(0, 1)))
    with pytest.raises(ValueError, match="must not contain epsilon or delta"):
        _search(pipe, grid).fit("not data")


def test_other_meta_estimators_are_refused():
    est = TransformedTargetRegressor(regressor=UserDPSGDRegressor(),
                                     transformer=StandardScaler())
    with pytest.raises(TypeError, match="Other meta-estimators are refused"):
        _search(est, {"regressor__alpha": [0.0]}).fit("not data")
    with pytest.raises(TypeError, match="no epsilon/delta"):
        _search(make_pipeline(StandardScaler()), {}).fit("not data")


def _outcome(search):
    best = search.best_estimator_
    step = best[-1] if hasattr(best, "steps") else best
    return (search.best_index_, search.selection_.value, step.mean_.tobytes(),
            tuple(search.fit_losses_), search.privacy_loss_)


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_n_jobs_changes_nothing(backend):
    # every candidate's seed is fixed before dispatch: bit-identical results;
    # with an accountant (an int seed: stream 0 of a new ledger each time),
    # one charge, in this process -- the accountant never reaches a worker
    X, g = _skewed(n_users=300)
    pipe = make_pipeline(FunctionTransformer(), ClipNoiseMeanEstimator(bounds=(0, 1)))
    grid = {"clipnoisemeanestimator__radius": [0.1, 0.5, 1.0]}
    outcomes = []
    for n_jobs in (1, 2):
        acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        with parallel_config(backend=backend):
            search = _search(pipe, grid, n_jobs=n_jobs, accountant=acc).fit(
                X, groups=g)
        assert len(acc.ledger) == 1 and acc.ledger[0][1] == search.privacy_loss_
        assert search.best_estimator_[-1].random_state is None
        outcomes.append(_outcome(search))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("n_jobs", [0, 1.5, True])
def test_invalid_n_jobs(n_jobs):
    with pytest.raises(ValueError, match="n_jobs"):
        _search(ClipNoiseMeanEstimator(), {"radius": [1.0]}, n_jobs=n_jobs).fit(
            "not data")


def _shift(X):
    return np.asarray(X) + 1.0


@pytest.mark.parametrize("backend", ["sequential", "threading", "loky"])
def test_estimators_in_the_grid_are_cloned_for_every_candidate(backend, by_value):
    # review finding 6: a step given in param_grid is cloned per candidate
    # (as GridSearchCV does). Shared, the candidates fitted one object: the
    # second fit overwrote the first (sequential), both used one seed (loky),
    # threads raced, and the user's object came back fitted.
    X, g = _skewed(n_users=400)
    shared = ClipNoiseMeanEstimator(bounds=(0, 4), radius=4.0)
    pipe = make_pipeline(FunctionTransformer(), ClipNoiseMeanEstimator(bounds=(0, 4)))
    grid = {"functiontransformer": [FunctionTransformer(), FunctionTransformer(_shift)],
            "clipnoisemeanestimator": [shared]}
    seen = []

    def loss(est, X, y):  # records every fitted candidate (in this process)
        seen.append(est)
        return np.zeros(len(X))

    with parallel_config(backend=backend):
        _search(pipe, grid, epsilon=50.0, loss=loss, loss_bound=32.0,
                n_jobs=2).fit(X, groups=g)
    first, second = (est[-1] for est in seen)
    assert first is not second and shared not in (first, second)
    assert not hasattr(shared, "mean_") and shared.epsilon == 1.0
    diff = second.mean_ - first.mean_  # the shift, with noise of its own
    np.testing.assert_allclose(diff, 1.0, atol=0.2)
    assert not np.allclose(diff, 1.0, rtol=0, atol=1e-12)


# -------------------------------------- review findings 1-5 and 14 (behaviour)
_PUBLIC_ENCODER = OneHotEncoder(categories=[[0.0, 1.0, 2.0]],
                                handle_unknown="ignore").fit([[0.0], [1.0], [2.0]])


def _categorical(n_users=40, m=10, seed=0):
    """A column of declared categories (0, 1 or 2) and a number."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_users), m)
    return np.c_[rng.choice([0.0, 1.0, 2.0], g.size), rng.uniform(0, 1, g.size)], g


def _frozen_onehot(threshold):
    return make_pipeline(
        ColumnTransformer([("oh", FrozenEstimator(_PUBLIC_ENCODER), [0])],
                          remainder="passthrough", sparse_threshold=threshold),
        ClipNoiseMeanEstimator(bounds=(0, 1)))


def test_a_sparse_part_gives_dense_rows_whatever_the_data():
    # finding 1: with sparse_threshold > 0 the ColumnTransformer chose sparse
    # output by the density of the private rows (a FrozenEstimator of a
    # sparse OneHotEncoder, the documented way out): one user's value flipped
    # "fitted" into "sparse input is not supported". With 0: dense, always.
    X, g = _categorical()
    grid = {"clipnoisemeanestimator__radius": [0.5, 1.0]}
    with pytest.raises(ValueError, match="sparse_threshold=0.33 .*Pass "
                                         "sparse_threshold=0"):
        _search(_frozen_onehot(0.33), grid, loss_bound=4.0).fit(X, groups=g)
    for value in (1.0, 7.0):  # every user in a declared category, or not
        X2 = X.copy()
        X2[g < 20, 0] = value
        search = _search(_frozen_onehot(0), grid, loss_bound=4.0).fit(X2, groups=g)
        assert search.best_estimator_[0].sparse_output_ is False
    # a FunctionTransformer that gives sparse rows: refused whatever the data
    ct = ColumnTransformer([("s", FunctionTransformer(sp.csr_matrix), [0])],
                           remainder="passthrough", sparse_threshold=0.9)
    with pytest.raises(ValueError, match="sparse_threshold=0.9"):
        _search(make_pipeline(ct, ClipNoiseMeanEstimator(bounds=(0, 1))), grid,
                loss_bound=4.0).fit(X, groups=g)


def test_declared_categories_must_survive_the_cast_to_the_column_dtype():
    # finding 2: scikit-learn casts declared categories to the column's dtype
    # (2.5 on an int column is published as 2); the dtypes of X are its
    # public schema, and a category that does not survive is refused
    pd = pytest.importorskip("pandas")
    X, g = _categorical()
    df = pd.DataFrame({"c": X[:, 0].astype(np.int64), "x": X[:, 1]})
    grid = {"clipnoisemeanestimator__radius": [0.5, 1.0]}

    def pipe(categories):
        ct = ColumnTransformer([("oh", _encoder(categories=[categories]), ["c"])],
                               remainder="passthrough", sparse_threshold=0)
        return make_pipeline(ct, ClipNoiseMeanEstimator(bounds=(0, 1)))

    with pytest.raises(ValueError, match=re.escape(
            "categories [0.5, 1.5, 2.5] of column 0 of the step "
            "'columntransformer__oh' (OneHotEncoder) became [0, 1, 2]") +
            ".*int64.*public schema"):
        _search(pipe([0.5, 1.5, 2.5]), grid, loss_bound=4.0).fit(df, groups=g)
    best = _search(pipe([0, 1, 2]), grid, loss_bound=4.0).fit(
        df, groups=g).best_estimator_
    assert [list(c) for c in best[0].named_transformers_["oh"].categories_] == \
        [[0, 1, 2]]
    # declared floats on a float column: as declared
    df["c"] = df["c"].astype(float)
    _search(pipe([0.5, 1.0, 2.0]), grid, loss_bound=4.0).fit(df, groups=g)


def _log_where_positive(X):
    X = np.asarray(X, dtype=float)
    return np.where(X > 0, np.log(np.abs(X)), 0.0)  # log(0) warns; finite out


def _caught(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return caught


@pytest.mark.parametrize("backend", ["sequential", "threading", "loky"])
def test_the_steps_warnings_are_dropped_and_skuserdp_warnings_passed_on(
        backend, by_value):
    # finding 3: a step's warnings depend on the rows (an unknown category in
    # a frozen encoder's transform, a floating-point warning of a func); the
    # search drops every warning but skuserdp's own, which depend on public
    # values and released outputs -- the same for every backend
    X, g = _categorical()
    X[g == 3, 0] = 7.0  # user 3: an unknown category
    X[g == 5, 1] = 0.0  # user 5: log(0)
    warn_enc = OneHotEncoder(categories=[[0.0, 1.0, 2.0]], handle_unknown="warn",
                             sparse_output=False).fit([[0.0], [1.0], [2.0]])
    ct = ColumnTransformer([("oh", FrozenEstimator(warn_enc), [0]),
                            ("log", FunctionTransformer(_log_where_positive), [1])],
                           sparse_threshold=0)
    # a box too small for the data: the estimate lies on its edge
    # (ci_share=0: the noise draws this test was written with)
    pipe = make_pipeline(ct, ClipNoiseMeanEstimator(bounds=(-1, 0.01), ci_share=0.0))
    grid = {"clipnoisemeanestimator__radius": [0.5, 1.0]}
    with parallel_config(backend=backend):
        caught = _caught(lambda: _search(pipe, grid, loss_bound=8.0, n_jobs=2).fit(
            X, groups=g))
    kinds = {w.category for w in caught}
    assert kinds == {AccuracyWarning}, [str(w.message) for w in caught]
    assert any("lies on or outside the public box" in str(w.message) for w in caught)
    # the same fit outside the search shows what was dropped
    direct = _caught(lambda: pipe.fit(X, clipnoisemeanestimator__groups=g))
    assert {UserWarning, RuntimeWarning} <= {w.category for w in direct}


def test_the_search_enters_quiet_floating_point():
    # finding 3: np.seterr(all="raise") outside; a step's log(0) must neither
    # raise nor warn in the search (fits and validation losses)
    X, g = _categorical()
    X[:, 1] = np.where(g % 7 == 0, 0.0, X[:, 1])
    pipe = make_pipeline(FunctionTransformer(_log_where_positive),
                         ClipNoiseMeanEstimator(bounds=(-5, 1)))
    old = np.seterr(all="raise")
    try:
        caught = _caught(lambda: _search(
            pipe, {"clipnoisemeanestimator__radius": [1.0, 6.0]},
            loss_bound=72.0).fit(X, groups=g))
    finally:
        np.seterr(**old)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


SECRET = "Jane Doe HIV+ zq7"


def _no_value_in(error):
    """Neither ``error`` nor any exception in its chain shows a value."""
    todo, seen = [error], []
    while todo:
        exc = todo.pop()
        if exc is None or any(exc is s for s in seen):
            continue
        seen.append(exc)
        assert SECRET not in str(exc) and "31337" not in str(exc), str(exc)
        todo += [exc.__cause__, exc.__context__]


@pytest.mark.parametrize("case", ["text", "1-D", "complex"])
def test_errors_of_the_steps_show_no_data_value(case):
    # finding 5: the steps' own validation printed the data ("could not
    # convert string to float: '...'", a 1-D X, a complex X)
    _, g = _skewed(n_users=20)
    X = np.random.default_rng(0).uniform(0, 1, (g.size, 2))
    if case == "text":
        X = X.astype(object)
        X[3, 0] = SECRET
        step, match = Normalizer(), r"'normalizer' .Normalizer.*non-numeric .*\[0\]"
    elif case == "1-D":
        X = np.full(g.size, 31337.5)
        step, match = Normalizer(), r"'normalizer' .*Expected 2D array"
    else:
        X = X + 31337j
        step, match = FunctionTransformer(validate=True), r"Complex data not supported"
    pipe = make_pipeline(step, ClipNoiseMeanEstimator(bounds=(0, 1)))
    with pytest.raises(ValueError, match=match) as info:
        _search(pipe, {"clipnoisemeanestimator__radius": [0.5, 1.0]}).fit(
            X, groups=g)
    _no_value_in(info.value)


def test_the_imputer_the_nan_message_recommends_is_searched():
    # finding 14: the NaN message recommends a constant imputer; the search
    # accepts it in the form it names
    X, g = _skewed(n_users=200)
    X[::7, 0] = np.nan
    with pytest.raises(ValueError, match=r"SimpleImputer\(strategy='constant', "
                                         r"fill_value=..., keep_empty_features=True\)"):
        ClipNoiseMeanEstimator(bounds=(0, 1)).fit(X, groups=g)
    pipe = make_pipeline(SimpleImputer(strategy="constant", fill_value=0.5,
                                       keep_empty_features=True),
                         ClipNoiseMeanEstimator(bounds=(0, 1)))
    search = _search(pipe, {"clipnoisemeanestimator__radius": [0.5, 1.0]}).fit(
        X, groups=g)
    assert np.all(np.isfinite(search.best_estimator_[-1].mean_))


class _MyMean(ClipNoiseMeanEstimator):
    """A user's subclass of a skuserdp estimator (defined outside the
    package)."""


def test_a_users_subclass_of_a_skuserdp_estimator_is_searched_and_seeded():
    # final review: "is this a skuserdp estimator" was read off the module
    # name, so a subclass defined elsewhere was refused as having no budget
    # parameters, and got a 32-bit seed instead of a SeedSequence
    from skuserdp.utils._random import set_fit_seeds
    X, g = _skewed()
    search = _search(_MyMean(bounds=(0, 1)), {"radius": [0.1, 1.0]}).fit(X, groups=g)
    assert isinstance(search.best_estimator_, _MyMean)
    est = _MyMean()
    set_fit_seeds(est, lambda name, value: np.random.SeedSequence(1))
    assert isinstance(est.random_state, np.random.SeedSequence)
