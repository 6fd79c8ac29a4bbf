"""The bad-input matrix (issue 26): every public estimator x malformed input.

Every cell states its expected outcome:

* ``Error(types, regex)``: a clear refusal -- the exception is one of
  ``types`` and its message matches ``regex``, which names the problem. A
  message that would only match a generic fallback counts as "unclear"; this
  module allows none (a stricter form of the issue's "at most 5").
* ``Accept(check)``: the fit succeeds with a finite, sensible output
  (``check`` looks at it, e.g. ``mean_`` within the declared box).
* ``None``: the case does not apply to the estimator (e.g. ``classes`` of a
  mean estimator); such cells are not generated.

No message -- of an error or of a warning, nor of the exceptions an error was
raised from -- may contain a data value: every ``X`` holds the sentinel
number :data:`SENTINEL_NUMBER` in one cell (the text cases, and some user ids,
the sentinel string :data:`SENTINEL_TEXT`), and neither may appear in any
message. No fit may emit a RuntimeWarning (e.g. an overflow that depends on
the data).

Decisions documented here (and in docs/privacy_model.rst, "Bad input"):

* bool ``X`` is accepted as 0/1 and float16 ``X`` as float64;
* finite values of any size are accepted (1e308 included): a fit that failed
  because of one user's finite value would reveal it;
* user ids of mixed types (ints and strings) are accepted (any hashable
  labels; ``1`` and ``"1"`` are two users);
* the mean estimators ignore ``y``, so a ``y`` of the wrong length or index
  is accepted there (and refused by the supervised models);
* the discrete-distribution estimator counts NaN, inf, huge numbers, text and
  values outside ``classes`` as "no class" for their user (documented).
"""

import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPSGDClassifier, UserDPSGDRegressor
from skuserdp.mean import ClipNoiseMeanEstimator
from skuserdp.model_selection import BudgetedEstimator, PrivateGridSearch
from skuserdp.privacy import BudgetAccountant
from skuserdp.utils.discovery import all_estimators

#: a data value that no message may show (in every X, in one cell)
SENTINEL_NUMBER = 4242.4242
#: a text cell that no message may show (the object-X case)
SENTINEL_TEXT = "Jane Doe HIV+ zq7"
#: the parts of the sentinels that would show in any repr of them
_SENTINEL_PATTERNS = ("4242.42", "4.242", "4242", "Jane Doe", "HIV+", "zq7")

N_USERS = 40
ROWS = 2
COLUMNS = ["age", "income", "score"]

# Constructor arguments that make each estimator fit on small data (as in
# tests/test_common.py, with few iterations for the SGD models).
INIT_PARAMS = {
    "FewUsersBallEstimator": dict(epsilon=1.0, delta=0.3, radius=10.0),
    "DiscreteDistributionEstimator": dict(classes=[0, 1, 2, 3], delta=0.3),
    "UserDPSGDRegressor": dict(epsilon=1000.0, delta=1e-3, bounds=(-10.0, 10.0),
                               target_bounds=(-10.0, 10.0), max_iter=5),
    "UserDPSGDClassifier": dict(epsilon=1000.0, delta=1e-3, bounds=(-10.0, 10.0),
                                classes=[0, 1, 2], max_iter=5),
    "UserDPLinearRegression": dict(epsilon=1000.0, delta=1e-3, bounds=(-10.0, 10.0),
                                   target_bounds=(-10.0, 10.0)),
    "UserMeanEstimator": dict(bounds=(-10.0, 10.0)),
    "ClipNoiseMeanEstimator": dict(bounds=(-10.0, 10.0)),
    "CoinPressMeanEstimator": dict(bounds=(-10.0, 10.0)),
    "WinsorizedMeanEstimator": dict(bounds=(-10.0, 10.0)),
    "ThreadedClipNoiseEstimator": dict(moment_bound=1.0, bounds=(-10.0, 10.0)),
}


def _make(name, cls):
    # a new estimator without an entry: the public box, when it takes one
    box = {"bounds": (-10.0, 10.0)} if "bounds" in cls().get_params() else {}
    return cls(**INIT_PARAMS.get(name, box), random_state=0)


ESTIMATORS = [(name, _make(name, cls)) for name, cls in all_estimators()]
ESTIMATORS += [
    (f"Budgeted({cls.__name__})",
     BudgetedEstimator(_make(cls.__name__, cls), BudgetAccountant(1e9, 0.5)))
    for cls in (ClipNoiseMeanEstimator, UserDPSGDRegressor)]
ESTIMATORS += [
    (f"Search({cls.__name__})",
     PrivateGridSearch(_make(cls.__name__, cls), grid, epsilon=50.0,
                       loss_bound=100.0, tau=1.0, random_state=0))
    for cls, grid in ((ClipNoiseMeanEstimator, {"radius": [1.0, 10.0]}),
                      (UserDPSGDRegressor, {"alpha": [0.0, 1.0]}))]


# ------------------------------------------------------------ the estimators
def _inner(est):
    """The estimator whose parameters a case changes (inside a meta one)."""
    return getattr(est, "estimator", est)


def _prefix(est):
    return "estimator__" if hasattr(est, "estimator") else ""


def _kind(est):
    inner = _inner(est)
    name = type(inner).__name__
    if name == "DiscreteDistributionEstimator":
        return "discrete"
    if hasattr(inner, "predict_proba"):
        return "classifier"
    if hasattr(inner, "predict"):
        return "regressor"
    return "mean"


def _fitted(est):
    """The fitted skuserdp estimator (inside a meta-estimator)."""
    for name in ("best_estimator_", "estimator_"):
        if hasattr(est, name):
            return getattr(est, name)
    return est


def _n_users(est):
    if hasattr(est, "n_users_train_"):
        return est.n_users_train_ + est.n_users_validation_
    return _fitted(est).n_users_


# ------------------------------------------------------------------ the data
@dataclass
class Data:
    X: object
    y: object = None
    groups: object = None
    params: dict = field(default_factory=dict)


def _base(kind, n_users=N_USERS, seed=0):
    """Clean data of the kind the estimator takes, with the sentinel number
    in one cell of X (clipped away by every box)."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_users), ROWS)
    n = groups.size
    if kind == "discrete":
        X = rng.integers(0, 4, (n, 1)).astype(np.float64)
    else:
        X = rng.normal(0.2, 0.3, (n, len(COLUMNS)))
    X[0, 0] = SENTINEL_NUMBER
    y = None
    if kind == "regressor":
        y = X[:, 1] - 0.5 * X[:, 2]
    elif kind == "classifier":
        y = np.arange(n) % 3
    return Data(X, y, groups)


def _frame(kind, X):
    columns = ["colour"] if kind == "discrete" else COLUMNS
    return pd.DataFrame(X, columns=columns)


# ------------------------------------------------------------- expectations
@dataclass
class Error:
    types: tuple
    regex: str


@dataclass
class Accept:
    check: object = None


VALUE = (ValueError,)
PARAM = (InvalidParameterError,)


def _output(est):
    fitted = _fitted(est)
    return np.concatenate([np.ravel(getattr(fitted, name)) for name in
                           ("mean_", "probabilities_", "coef_", "intercept_")
                           if hasattr(fitted, name)])


def _finite_output(est, kind):
    """A finite output; a distribution for the discrete estimator. (The
    estimate of a mean estimator may lie outside its box: it is noisy.)"""
    assert np.all(np.isfinite(_output(est)))
    if kind == "discrete":
        p = _fitted(est).probabilities_
        assert (p >= 0).all() and math.isclose(p.sum(), 1.0)


def _accept_users(n):
    def check(est, kind):
        _finite_output(est, kind)
        assert _n_users(est) == n
    return Accept(check)


@dataclass
class Case:
    """``build(kind, est) -> (Data, expectation)``; ``None`` when n/a."""
    name: str
    build: object


def _nonfinite(value):
    def build(kind, est):
        d = _base(kind)
        d.X[5, 1 if kind != "discrete" else 0] = value
        if kind == "discrete":  # a value outside the classes: no class
            return d, Accept()
        return d, Error(VALUE, r"X contains NaN or infinity .*column")
    return build


def build_huge(kind, est):
    """Finite values at the end of the float64 range: the fit must equal the
    fit on the data clipped to the box (a per-row or per-user clip), whose
    values are small -- it may not fail, nor be garbage."""
    d = _base(kind)
    col = 0 if kind == "discrete" else 1
    d.groups[2:6] = 1  # user 1: four rows whose sums overflow both ways
    values = np.array([1e308, 1e308, -1e308, -1e308])
    d.X[2:6, col] = values
    d.X[7, col] = 1.7e308  # user 3: its sum overflows
    small = d.X.copy()
    # outside the declared box (-10, 10) and any clipping ball (users' means
    # are projected in the direction of that column) or, for the discrete
    # estimator, outside the classes (no class)
    small[2:6, col] = 99.0 if kind == "discrete" else np.sign(values) * 1e300
    small[7, col] = 99.0 if kind == "discrete" else 1e300

    def fit(est, X):
        return est.fit(X, groups=d.groups) if d.y is None else est.fit(
            X, d.y, groups=d.groups)

    def check(fitted, kind):
        _finite_output(fitted, kind)
        # the reference fits (same users and box) give the accuracy warnings
        # that run_cell recorded and checked for the fit under test
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            if isinstance(fitted, BudgetedEstimator):
                # every charged fit has noise of its own (issue 26): compare
                # two fits of the wrapped estimator, which repeat one seed
                fitted = fit(clone(fitted.estimator), d.X)
            ref = fit(clone(fitted), small)
        np.testing.assert_allclose(_output(fitted), _output(ref), rtol=1e-9,
                                   atol=1e-12)
    return d, Accept(check)


def build_empty(kind, est):
    d = _base(kind)
    d.X = d.X[:0]
    d.groups = d.groups[:0]
    d.y = None if d.y is None else d.y[:0]
    return d, Error(VALUE, r"0 sample\(s\)|groups is empty")


def build_one_user(kind, est):
    d = _base(kind)
    d.groups = np.zeros_like(d.groups)
    return d, Error(VALUE, r"needs at least \d+ users, got 1 user")


def build_two_users(kind, est):
    d = _base(kind)
    d.groups = np.arange(d.groups.size) % 2
    if getattr(_inner(est), "_min_users", 2) > 2 or getattr(est, "_min_users", 2) > 2:
        return d, Error(VALUE, r"needs at least \d users, got 2 user")
    return d, _accept_users(2)


def _missing_ids(marker):
    def build(kind, est):
        d = _base(kind)
        groups = d.groups.astype(object)
        groups[groups == 3] = SENTINEL_TEXT  # (user ids are private data too)
        groups[7] = marker
        d.groups = groups
        return d, Error(VALUE, r"groups contains missing values")
    return build


def build_unhashable_ids(kind, est):
    d = _base(kind)
    groups = d.groups.astype(object)
    groups[7] = [SENTINEL_TEXT]
    d.groups = groups
    return d, Error(VALUE, r"groups labels must be hashable")


def build_mixed_ids(kind, est):
    d = _base(kind)
    # ints and strings; 1 and "1" are two users
    d.groups = [int(k) if k % 2 else str(k + 1) for k in d.groups]
    d.groups[6:8] = [SENTINEL_TEXT] * 2  # user 3, named
    return d, _accept_users(N_USERS)


def build_int8_ids(kind, est):
    d = _base(kind)
    ids = np.linspace(-128, 127, N_USERS).round().astype(np.int8)
    d.groups = ids[d.groups]
    return d, _accept_users(N_USERS)


def build_text_cell(kind, est):
    d = _base(kind)
    X = d.X.astype(object)
    X[9, 0] = SENTINEL_TEXT
    d.X = _frame(kind, X)
    if kind == "discrete":  # a value outside the classes: no class
        return d, Accept()
    return d, Error(VALUE, r"non-numeric .*'age'")


def build_text_and_huge_int(kind, est):
    """A text cell and a Python int beyond float64 (its conversion fails
    with an OverflowError, which must not carry the text as its context)."""
    d = _base(kind)
    X = d.X.astype(object)
    X[9, 0] = SENTINEL_TEXT
    X[11, 1 if kind != "discrete" else 0] = 10 ** 400 + 4242
    d.X = _frame(kind, X)
    if kind == "discrete":  # values outside the classes: no class
        return d, Accept()
    return d, Error(VALUE, r"non-numeric .*'age'")


def build_huge_int(kind, est):
    d = _base(kind)
    X = d.X.astype(object)
    X[11, 1 if kind != "discrete" else 0] = 10 ** 400 + 4242
    d.X = _frame(kind, X)
    if kind == "discrete":
        return d, Accept()
    return d, Error(VALUE, r"beyond the float64 range .*'income'")


def build_sparse(kind, est):
    d = _base(kind)
    d.X = sp.csr_matrix(d.X)
    return d, Error(VALUE, r"[Ss]parse")


def build_3d(kind, est):
    d = _base(kind)
    d.X = d.X[:, :, None]
    return d, Error(VALUE, r"dim 3")


def build_1d(kind, est):
    d = _base(kind)
    d.X = d.X[:, 0]
    return d, Error(VALUE, r"got (a )?1-?D array|got a 1-d array")


def build_len_groups(kind, est):
    d = _base(kind)
    d.groups = d.groups[:-1]
    return d, Error(VALUE, r"groups has \d+ elements but X has \d+ samples")


def build_len_y(kind, est):
    d = _base(kind)
    if d.y is None and not isinstance(est, PrivateGridSearch):
        d.y = np.zeros(d.X.shape[0] - 1)  # the mean estimators ignore y
        return d, Accept()
    d.y = np.zeros(d.X.shape[0] - 1) if d.y is None else d.y[:-1]
    return d, Error(VALUE, r"inconsistent numbers of samples|rows but y has")


def build_index_groups(kind, est):
    d = _base(kind)
    d.X = _frame(kind, d.X)
    d.groups = pd.Series(d.groups, index=d.X.index[::-1])
    return d, Error(VALUE, r"groups is a pandas Series whose index differs")


def build_index_y(kind, est):
    d = _base(kind)
    d.X = _frame(kind, d.X)
    if d.y is None:  # the mean estimators ignore y
        d.y = pd.Series(np.zeros(d.X.shape[0]), index=d.X.index[::-1])
        return d, Accept()
    d.y = pd.Series(d.y, index=d.X.index[::-1])
    return d, Error(VALUE, r"y is a pandas Series whose index differs")


def build_nan_y(kind, est):
    if kind not in ("regressor", "classifier"):
        return None  # (the mean estimators ignore y)
    d = _base(kind)
    d.y = d.y.astype(np.float64)
    d.y[6] = np.nan
    return d, Error(VALUE, r"Input y contains NaN")


def build_text_in_y(kind, est):
    if kind not in ("regressor", "classifier"):
        return None
    d = _base(kind)
    d.y = d.y.astype(object)
    d.y[6] = SENTINEL_TEXT
    if kind == "classifier":  # (scikit-learn's check of the label type)
        return d, Error(VALUE, r"Unknown label type: unknown")
    return d, Error(VALUE, r"y has non-numeric values")


def build_bool(kind, est):
    d = _base(kind)
    d.X = d.X > 0.2
    return d, Accept()


def build_float16(kind, est):
    d = _base(kind)
    d.X[0, 0] = 0.5  # (the sentinel's float16 rounding would not be it)
    d.X = d.X.astype(np.float16)
    return d, Accept()


def _bounds_case(bounds, regex):
    def build(kind, est):
        if "bounds" not in _inner(est).get_params():
            return None
        d = _base(kind)
        d.params = {_prefix(est) + "bounds": bounds}
        return d, Error(VALUE, regex)
    return build


def build_nan_radius(kind, est):
    """The few-users estimator's public knowledge is a radius."""
    if "bounds" in _inner(est).get_params() or "radius" not in _inner(
            est).get_params():
        return None
    d = _base(kind)
    d.params = {_prefix(est) + "radius": float("nan")}
    return d, Error(PARAM + VALUE, r"'radius' parameter")


def _param_case(name, value):
    def build(kind, est):
        d = _base(kind)
        if isinstance(est, PrivateGridSearch):
            d.params = {name: value}
            return d, Error(VALUE, rf"{name} must be")
        d.params = {_prefix(est) + name: value}
        return d, Error(PARAM, rf"'{name}' parameter")
    return build


def build_tiny_epsilon(kind, est):
    """epsilon far below delta: a budget split in zCDP has parts worth
    epsilon 0 (a clear refusal); the others fit (with much noise)."""
    d = _base(kind)
    if isinstance(est, PrivateGridSearch):
        d.params = {"epsilon": 1e-9}
    else:
        d.params = {_prefix(est) + "epsilon": 1e-9}
    if isinstance(est, PrivateGridSearch) or kind in ("regressor", "classifier"):
        return d, Error(VALUE, r"epsilon=1e-09 is too small for delta")
    return d, Accept()


def build_single_class(kind, est):
    if kind not in ("classifier", "discrete"):
        return None
    d = _base(kind)
    d.params = {_prefix(est) + "classes": [0]}
    return d, Error(VALUE, r"at least 2 (classes|labels)")


def build_one_label_in_y(kind, est):
    """Only one of the declared classes occurs: a valid fit."""
    if kind not in ("classifier", "discrete"):
        return None
    d = _base(kind)
    if kind == "classifier":
        d.y = np.ones_like(d.y)
    else:
        d.X[:] = 1.0
    return d, Accept()


def build_unknown_label(kind, est):
    if kind not in ("classifier", "discrete"):
        return None
    d = _base(kind)
    if kind == "classifier":
        d.y[4] = 7
        return d, Error(VALUE, r"labels that are not in the declared classes")
    d.X[4, 0] = 7.0  # a row outside the classes: no class for its user
    return d, Accept()


def build_nan_classes(kind, est):
    if kind != "discrete":
        return None
    d = _base(kind)
    d.params = {_prefix(est) + "classes": [0.0, 1.0, float("nan")]}
    return d, Error(VALUE, r"classes .*missing")


def build_classes_vs_text_column(kind, est):
    if kind != "discrete":
        return None
    d = _base(kind)
    d.X = pd.DataFrame({"colour": np.array(["red", "blue"])[d.groups % 2]})
    return d, Error(VALUE, r"classes .* are numbers but X holds strings")


CASES = [
    Case("nan_X", _nonfinite(np.nan)),
    Case("inf_X", _nonfinite(np.inf)),
    Case("huge_X", build_huge),
    Case("empty_X", build_empty),
    Case("one_user", build_one_user),
    Case("two_users", build_two_users),
    Case("ids_None", _missing_ids(None)),
    Case("ids_NaN", _missing_ids(float("nan"))),
    Case("ids_pdNA", _missing_ids(pd.NA)),
    Case("ids_unhashable", build_unhashable_ids),
    Case("ids_mixed_types", build_mixed_ids),
    Case("ids_int8_wide", build_int8_ids),
    Case("text_cell", build_text_cell),
    Case("text_and_huge_int", build_text_and_huge_int),
    Case("huge_int", build_huge_int),
    Case("sparse_X", build_sparse),
    Case("X_3d", build_3d),
    Case("X_1d", build_1d),
    Case("len_groups", build_len_groups),
    Case("len_y", build_len_y),
    Case("index_groups", build_index_groups),
    Case("index_y", build_index_y),
    Case("nan_y", build_nan_y),
    Case("text_in_y", build_text_in_y),
    Case("bool_X", build_bool),
    Case("float16_X", build_float16),
    Case("bounds_reversed", _bounds_case((10.0, -10.0), r"lower < upper")),
    Case("bounds_nan", _bounds_case((float("nan"), 10.0), r"must be finite")),
    Case("radius_nan", build_nan_radius),
    Case("epsilon_zero", _param_case("epsilon", 0.0)),
    Case("epsilon_negative", _param_case("epsilon", -1.0)),
    Case("epsilon_inf", _param_case("epsilon", float("inf"))),
    Case("epsilon_nan", _param_case("epsilon", float("nan"))),
    Case("epsilon_tiny", build_tiny_epsilon),
    Case("delta_negative", _param_case("delta", -0.1)),
    Case("delta_one", _param_case("delta", 1.0)),
    Case("delta_nan", _param_case("delta", float("nan"))),
    Case("single_class", build_single_class),
    Case("one_label_in_y", build_one_label_in_y),
    Case("unknown_label", build_unknown_label),
    Case("classes_nan", build_nan_classes),
    Case("classes_vs_text_column", build_classes_vs_text_column),
]


def _cells():
    for est_name, est in ESTIMATORS:
        for case in CASES:
            if case.build(_kind(est), est) is not None:
                yield pytest.param(est, case, id=f"{est_name}-{case.name}")


def _assert_no_data_value(message, where):
    for pattern in _SENTINEL_PATTERNS:
        assert pattern not in message, f"{where} shows a data value: {message!r}"


def exception_chain(error):
    """Every exception a printed traceback of ``error`` could show: those it
    was raised from (``__cause__``) or during (``__context__``), recursively
    along both links (a suppressed context is still in the chain)."""
    seen, todo = [], [error.__cause__, error.__context__]
    while todo:
        exc = todo.pop()
        if exc is None or any(exc is s for s in seen):
            continue
        seen.append(exc)
        todo += [exc.__cause__, exc.__context__]
    return seen


def run_cell(est, case):
    """Run one cell; return ``("error" | "accepted", message)``."""
    kind = _kind(est)
    data, expected = case.build(kind, est)
    est = clone(est).set_params(**data.params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if data.y is None:
                est.fit(data.X, groups=data.groups)
            else:
                est.fit(data.X, data.y, groups=data.groups)
        except Exception as exc:  # noqa: BLE001 -- classified below
            error = exc
        else:
            error = None
    for w in caught:
        _assert_no_data_value(str(w.message), f"warning {w.category.__name__}")
        # (e.g. an overflow: a warning that depends on the data)
        assert not issubclass(w.category, RuntimeWarning), str(w.message)
    if error is not None:
        message = str(error)
        _assert_no_data_value(message, type(error).__name__)
        # nor in the exceptions it was raised from (a printed traceback)
        for cause in exception_chain(error):
            _assert_no_data_value(str(cause), "the chain of " + type(error).__name__)
        if isinstance(expected, Accept):
            raise AssertionError(
                f"expected the fit to be accepted; it raised {error!r}") from error
        assert isinstance(error, expected.types), (
            f"expected {expected.types}, got {error!r}")
        assert re.search(expected.regex, message, flags=re.S), (
            f"unclear message for {case.name}: {message!r} does not match "
            f"{expected.regex!r}")
        return "error", message
    if isinstance(expected, Error):
        raise AssertionError(f"{case.name} was silently accepted; expected "
                             f"{expected.types} matching {expected.regex!r}")
    (expected.check or (lambda e, k: _finite_output(e, k)))(est, kind)
    return "accepted", None


@pytest.mark.parametrize("est, case", list(_cells()))
def test_bad_input_matrix(est, case):
    run_cell(est, case)


def test_matrix_covers_every_estimator_and_case():
    names = {name for name, _ in ESTIMATORS}
    assert {name for name, _ in all_estimators()} <= names
    assert len(names) == len(all_estimators()) + 4
    cells = list(_cells())
    for case in CASES:  # every case applies to some estimator
        assert any(p.values[1] is case for p in cells), case.name


# ---------------------------------------- features named by their names
def _edge_frame(n_users=400, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_users), 2)
    X = pd.DataFrame({"age": rng.normal(0, 1, groups.size),
                      "income": rng.normal(50, 1, groups.size),  # past the box
                      "score": rng.normal(0, 1, groups.size)})
    return X, groups


@pytest.mark.parametrize("name", ["ClipNoiseMeanEstimator", "CoinPressMeanEstimator",
                                  "UserMeanEstimator", "ThreadedClipNoiseEstimator"])
def test_box_edge_warning_names_the_features(name):
    cls = dict(all_estimators())[name]
    est = cls(**{**INIT_PARAMS[name], "epsilon": 10.0}, random_state=0)
    X, groups = _edge_frame()
    if name == "UserMeanEstimator":
        # its per-column estimator counts, privately, the users outside the
        # declared box and names the feature (1000 users: enough for the
        # count to be informative at epsilon 10, 3 columns); whether the
        # noisy estimate also lands on the box's edge depends on the noise
        # (it names the same feature when it does)
        X, groups = _edge_frame(n_users=1000)
        for data, label in ((X, "'income'"), (X.to_numpy(), "1")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                clone(est).fit(data, groups=groups)
            messages = [str(w.message) for w in caught]
            assert any(f"cut the users' means of feature(s) [{label}]" in m
                       for m in messages), messages
            assert all(f"[{label}]" in m for m in messages), messages
        return
    with pytest.warns(AccuracyWarning, match=r"feature\(s\) \['income'\] lies on"):
        clone(est).fit(X, groups=groups)
    with pytest.warns(AccuracyWarning, match=r"feature\(s\) \[1\] lies on"):
        clone(est).fit(X.to_numpy(), groups=groups)


@pytest.mark.parametrize("est", [
    ClipNoiseMeanEstimator(epsilon=5.0, random_state=0),
    UserDPSGDRegressor(epsilon=5.0, max_iter=2, target_bounds=(-5, 5),
                       random_state=0)], ids=lambda e: type(e).__name__)
def test_flat_box_warning_names_the_features(est):
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(2000), 2)
    X = pd.DataFrame({"age": rng.normal(size=groups.size),
                      "smoker": (np.arange(groups.size) < 10).astype(float)})
    y = X["age"].to_numpy()
    with pytest.warns(AccuracyWarning, match=r"flat box for column\(s\) \['smoker'\]"):
        if hasattr(est, "predict"):
            est.fit(X, y, groups=groups)
        else:
            # (a mean estimator runs in the box's per-column scaled
            # coordinates: the flat column's noise is in proportion to its
            # own ~0 width, so its estimate is the flat box's value up to
            # 1e-12, on the box's edge, which is warned about too)
            with pytest.warns(AccuracyWarning, match=r"\['smoker'\] lies on"):
                est.fit(X, groups=groups)
            lo, hi = est.bounds_
            assert lo[1] - 1e-12 <= est.mean_[1] <= hi[1] + 1e-12


def test_reversed_bounds_name_the_features():
    X, groups = _edge_frame(n_users=20)
    for est in (ClipNoiseMeanEstimator(bounds=([0, 1, 0], [1, 0, 1])),
                UserDPSGDRegressor(bounds=([0, 1, 0], [1, 0, 1]),
                                   target_bounds=(0, 1))):
        with pytest.raises(ValueError, match=r"fails for feature\(s\) \['income'\]"):
            if hasattr(est, "predict"):
                est.fit(X, X["age"], groups=groups)
            else:
                est.fit(X, groups=groups)


def test_nan_at_predict_time_is_refused_with_the_feature_name():
    X, groups = _edge_frame(n_users=40)
    est = UserDPSGDRegressor(**INIT_PARAMS["UserDPSGDRegressor"]).fit(
        X, X["age"], groups=groups)
    X.iloc[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity in column\(s\) \['score'\]"):
        est.predict(X)
    # (an array after a DataFrame: scikit-learn warns that the names are gone)
    with pytest.raises(ValueError, match=r"got 1D array.*Reshape") as info, \
            pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(np.full(3, SENTINEL_NUMBER))
    _assert_no_data_value(str(info.value), "predict")


# --------------------------------------------- score: held-out targets too
def _fitted_models():
    d = _base("regressor")
    reg = [_make(name, cls).fit(d.X, d.y, groups=d.groups)
           for name, cls in all_estimators()
           if _kind(cls()) == "regressor"]
    c = _base("classifier")
    labels = np.array(["a", "b", "c"])[c.y]
    clf = UserDPSGDClassifier(**{**INIT_PARAMS["UserDPSGDClassifier"],
                                 "classes": ["a", "b", "c"]}).fit(
        c.X, labels, groups=c.groups)
    return reg, (clf, c.X, labels)


def _score_error(call):
    try:
        call()
    except (ValueError, TypeError) as exc:
        message = str(exc)
        for cause in [exc] + exception_chain(exc):
            _assert_no_data_value(str(cause), "a score error")
        return message
    raise AssertionError("expected an error")


@pytest.mark.filterwarnings(  # a small fixture: the SSP accuracy warning (issue 31)
    "ignore:UserDPLinearRegression may be worse than:"
    "skuserdp.exceptions.AccuracyWarning")
def test_score_messages_show_no_held_out_value():
    # review finding 12: scikit-learn's score printed a text target
    # ("could not convert string to float: '...'") and, for a classifier,
    # the labels when their type differs from the classes'
    regressors, (clf, Xc, labels) = _fitted_models()
    d = _base("regressor")
    text_y = d.y.astype(object)
    text_y[3] = SENTINEL_TEXT
    for reg in regressors:
        assert "y has non-numeric values" in _score_error(
            lambda: reg.score(d.X, text_y))
        assert "y has numbers beyond the float64 range" in _score_error(
            lambda: reg.score(d.X, np.array([10 ** 400 + 4242] * len(d.y))))
        assert "y should be a 1d array" in _score_error(
            lambda: reg.score(d.X, np.full((len(d.y), 2), SENTINEL_NUMBER)))
        weights = np.ones(len(d.y), dtype=object)
        weights[2] = SENTINEL_TEXT
        assert "sample_weight has non-numeric values" in _score_error(
            lambda: reg.score(d.X, d.y, sample_weight=weights))
        assert np.isfinite(reg.score(d.X, d.y))
    # labels of another type than the classes: wrong predictions, no error
    assert clf.score(Xc, np.arange(len(labels)) + 4242) == 0.0
    odd = labels.astype(object)
    odd[3] = SENTINEL_TEXT
    assert clf.score(Xc, odd) == pytest.approx(
        np.mean(clf.predict(Xc) == odd.astype(str)))
    # the same as scikit-learn's accuracy where that one works
    from sklearn.metrics import accuracy_score
    w = np.linspace(0.5, 2.0, len(labels))
    assert clf.score(Xc, labels, sample_weight=w) == pytest.approx(
        accuracy_score(labels, clf.predict(Xc), sample_weight=w))
    assert "y should be a 1d array" in _score_error(
        lambda: clf.score(Xc, np.full((len(labels), 2), SENTINEL_NUMBER)))
