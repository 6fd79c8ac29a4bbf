"""Tests of groups validation and per-user aggregation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from skuserdp.users import check_groups, user_means


def _brute_force(X, groups):
    labels = sorted(set(groups))
    means = np.array([X[np.asarray(groups) == lab].mean(axis=0) for lab in labels])
    counts = np.array([np.sum(np.asarray(groups) == lab) for lab in labels])
    return means, counts, labels


@settings(max_examples=50, deadline=None)
@given(
    data=st.data(),
    n_rows=st.integers(1, 60),
    n_features=st.integers(1, 5),
    n_labels=st.integers(1, 10),
)
def test_user_means_matches_brute_force(data, n_rows, n_features, n_labels):
    X = data.draw(arrays(np.float64, (n_rows, n_features),
                         elements=st.floats(-1e6, 1e6)))
    groups = data.draw(st.lists(st.integers(0, n_labels - 1), min_size=n_rows,
                                max_size=n_rows))
    means, counts, labels = user_means(X, groups)
    bm, bc, bl = _brute_force(X, groups)
    assert labels.tolist() == bl
    assert counts.tolist() == bc.tolist()
    np.testing.assert_allclose(means, bm, rtol=1e-12, atol=1e-6)


def test_user_means_unequal_counts_and_string_labels():
    X = np.array([[1.0, 0.0], [3.0, 2.0], [10.0, 10.0], [5.0, 5.0]])
    means, counts, labels = user_means(X, ["b", "b", "a", "b"])
    assert labels.tolist() == ["a", "b"]
    assert counts.tolist() == [1, 3]
    np.testing.assert_allclose(means, [[10.0, 10.0], [3.0, 7 / 3]])


def test_user_means_pandas_inputs():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    for groups in (
        pd.Series(["x", "y", "x"]),
        pd.Series(["x", "y", "x"], dtype="category"),
        pd.Categorical(["x", "y", "x"]),
    ):
        means, counts, labels = user_means(df, groups)
        assert list(labels) == ["x", "y"]
        np.testing.assert_allclose(means, [[2.0, 5.0], [2.0, 5.0]])


def test_user_means_groups_none_and_no_mutation():
    X = np.arange(6.0).reshape(3, 2)
    X_copy = X.copy()
    g = np.array([2, 1, 2])
    g_copy = g.copy()
    means, counts, labels = user_means(X, None)
    np.testing.assert_array_equal(means, X)
    assert counts.tolist() == [1, 1, 1]
    means[0, 0] = 99.0  # a copy, not a view of X
    user_means(X, g)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(g, g_copy)


def test_user_means_sorted_or_shuffled_give_same_result():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    g = rng.integers(0, 50, 500)
    perm = rng.permutation(500)
    a = user_means(X, g)
    b = user_means(X[perm], g[perm])
    np.testing.assert_allclose(a.means, b.means, rtol=1e-12)
    np.testing.assert_array_equal(a.counts, b.counts)


@pytest.mark.parametrize(
    "groups, expected_labels",
    [
        ([5, 3, 5], [3, 5]),
        (np.array([10 ** 12, 7, 10 ** 12]), [7, 10 ** 12]),  # sparse int range
        ([-2, 0, -2], [-2, 0]),
        ([True, False, True], [False, True]),
        ([0.5, 1.5, 0.5], [0.5, 1.5]),
        (["b", "a", "b"], ["a", "b"]),
        ([("u", 1), ("u", 2), ("u", 1)], None),  # tuples: hashable, 2-d as array
    ],
)
def test_check_groups_labels(groups, expected_labels):
    if expected_labels is None:
        with pytest.raises(ValueError, match="1d"):
            check_groups(groups, 3)
        return
    codes, labels = check_groups(groups, 3)
    assert labels.tolist() == expected_labels
    assert codes.tolist()[0] == codes.tolist()[2]
    assert labels[codes].tolist() == list(np.asarray(groups).tolist())


def test_check_groups_mixed_uncomparable_labels():
    groups = np.array([1, "a", 1, None.__class__], dtype=object)
    codes, labels = check_groups(groups, 4)
    assert codes.tolist() == [0, 1, 0, 2]
    assert labels.tolist() == [1, "a", type(None)]


@pytest.mark.parametrize(
    "groups, n, match",
    [
        (np.zeros((3, 2)), 3, "1d"),
        ([1, 2], 3, "2 elements but X has 3"),
        ([1.0, np.nan, 2.0], 3, "missing"),
        (np.array([1, None, 2], dtype=object), 3, "missing"),
        (np.array([[1], [2], [1]], dtype=object).ravel().tolist() + [[1]], 4, None),
        ([], 0, "empty"),
    ],
)
def test_check_groups_errors(groups, n, match):
    if match is None:  # an unhashable label (a list) among ints
        arr = np.empty(4, dtype=object)
        arr[:] = [1, 2, 1, [1]]
        with pytest.raises(ValueError, match="hashable"):
            check_groups(arr, 4)
        return
    with pytest.raises(ValueError, match=match):
        check_groups(groups, n)


def test_user_means_rejects_bad_x():
    with pytest.raises(ValueError, match="NaN"):
        user_means([[np.nan]], [0])
    with pytest.raises(ValueError):
        user_means([["a"]], [0])


def _missing_label_cases():
    pd = pytest.importorskip("pandas")
    from decimal import Decimal
    return [
        ("pandas string with <NA>", pd.array(["a", "b", pd.NA, "a"], dtype="string")),
        ("Series of strings with <NA>",
         pd.Series(["a", "b", pd.NA, "a"], dtype="string")),
        ("object with pd.NA", np.array(["a", "b", pd.NA, "a"], dtype=object)),
        ("object with pd.NaT", np.array(["a", "b", pd.NaT, "a"], dtype=object)),
        ("object with np.datetime64('NaT')",
         np.array(["a", "b", np.datetime64("NaT"), "a"], dtype=object)),
        ("object with float32 nan",
         np.array(["a", "b", np.float32("nan"), "a"], dtype=object)),
        ("object with Decimal NaN", np.array(["a", "b", Decimal("NaN"), "a"],
                                             dtype=object)),
        ("nullable Int64 with <NA>", pd.Series([1, 2, None, 1], dtype="Int64")),
        ("Categorical with a missing value", pd.Categorical(["a", "b", None, "a"])),
    ]


@pytest.mark.parametrize("case", range(9))
def test_every_kind_of_missing_user_id_is_refused(case):
    # before: each missing row became its own user (n_users_ 3 instead of 2
    # here), silently; a row without a user id cannot be protected.
    name, groups = _missing_label_cases()[case]
    X = np.ones((4, 1))
    with pytest.raises(ValueError, match="missing"):
        check_groups(groups, 4)
    with pytest.raises(ValueError, match="missing"):
        user_means(X, groups)
    from skuserdp.mean import ClipNoiseMeanEstimator
    with pytest.raises(ValueError, match="missing"):
        ClipNoiseMeanEstimator(bounds=(0, 2)).fit(X, groups=groups)


def test_labels_that_are_not_missing_still_work():
    # odd but legitimate labels: objects whose comparison fails or is not a
    # bool are not mistaken for NaN
    class Odd:
        def __ne__(self, other):
            raise TypeError("no comparison")
    odd = Odd()
    groups = np.array([odd, "a", odd], dtype=object)
    codes, labels = check_groups(groups, 3)
    assert labels.shape == (2,) and codes[0] == codes[2] != codes[1]


def test_pandas_groups_with_another_index_than_x_are_refused():
    pd = pytest.importorskip("pandas")
    from skuserdp.linear_model import UserDPLinearRegression
    from skuserdp.mean import ClipNoiseMeanEstimator, DiscreteDistributionEstimator
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0]}, index=[10, 11, 12, 13])
    y = pd.Series([0.0, 1.0, 0.0, 1.0], index=X.index)
    shuffled = pd.Series(["u", "u", "v", "v"], index=[13, 12, 11, 10])
    match = "index differs"
    with pytest.raises(ValueError, match=match):
        user_means(X, shuffled)
    with pytest.raises(ValueError, match=match):
        ClipNoiseMeanEstimator(bounds=(0, 3)).fit(X, groups=shuffled)
    with pytest.raises(ValueError, match=match):
        UserDPLinearRegression(bounds=(0, 3), target_bounds=(0, 1)).fit(
            X, y, groups=shuffled)
    with pytest.raises(ValueError, match=match):
        DiscreteDistributionEstimator(classes=[0, 1, 2, 3]).fit(
            X.astype(int), groups=shuffled)
    # aligned (same index, any order of the index values) is accepted, and
    # so are plain arrays and lists, matched by position
    aligned = shuffled.loc[X.index]
    np.testing.assert_array_equal(user_means(X, aligned).labels, ["u", "v"])
    assert user_means(X, aligned).counts.tolist() == [2, 2]
    user_means(X, shuffled.to_numpy())
    user_means(X, list(shuffled))
    user_means(X.to_numpy(), shuffled)  # X without an index: by position


def test_select_model_privately_refuses_misaligned_pandas_groups():
    pd = pytest.importorskip("pandas")
    from sklearn.dummy import DummyRegressor
    from skuserdp.model_selection import select_model_privately
    X = pd.DataFrame({"a": np.arange(8.0)}, index=np.arange(8) + 100)
    y = pd.Series(np.arange(8.0), index=X.index)
    models = [DummyRegressor().fit(X, y), DummyRegressor(strategy="median").fit(X, y)]
    groups = pd.Series(np.repeat(["u", "v", "w", "x"], 2), index=X.index[::-1])
    with pytest.raises(ValueError, match="index differs"):
        select_model_privately(models, X, y, groups=groups, epsilon=1.0,
                               loss_bound=100.0, random_state=0)


# ------------------------------------------- issue 26: dtypes of the user ids
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16,
                                   np.int32, np.int64, np.uint64])
def test_integer_ids_at_their_extremes_work_in_every_dtype(dtype):
    # int8 ids -100 and 100 used to wrap around in `values - lo` (int8): an
    # unclear error on one dataset and not on its neighbour
    info = np.iinfo(dtype)
    for ids in ([info.min, info.max, info.min], [info.max, info.max - 200,
                                                 info.max],
                [info.min + 5, info.min, info.min + 5], [-100, 100, -100]):
        if min(ids) < info.min or max(ids) > info.max:
            continue
        values = np.array(ids, dtype=dtype)
        codes, labels = check_groups(values, 3)
        as_objects = check_groups(np.array(ids, dtype=object), 3)
        np.testing.assert_array_equal(codes, as_objects[0])
        assert labels.dtype == dtype
        assert labels.tolist() == sorted(set(ids))
        np.testing.assert_array_equal(labels[codes], values)


def test_bool_ids_work():
    codes, labels = check_groups(np.array([True, False, True]), 3)
    assert codes.tolist() == [1, 0, 1] and labels.tolist() == [False, True]


def test_mixed_type_ids_in_a_list_stay_distinct():
    # NumPy would turn [1, "1"] into two equal strings: two users merged
    codes, labels = check_groups([1, "1", 2, "a", 1], 5)
    assert codes.tolist() == [0, 1, 2, 3, 0]
    assert labels.tolist() == [1, "1", 2, "a"]
    # a list of strings only keeps NumPy's fast path
    assert check_groups(["b", "a", "b"], 3)[1].dtype.kind == "U"


def test_pandas_y_with_another_index_than_x_is_refused():
    import pandas as pd
    from skuserdp.linear_model import UserDPLinearRegression
    from skuserdp.users._groups import check_y_alignment
    X = pd.DataFrame({"a": np.arange(6.0)})
    y = pd.Series(np.arange(6.0), index=X.index[::-1])
    with pytest.raises(ValueError, match="y is a pandas Series whose index"):
        check_y_alignment(y, X)
    check_y_alignment(y.reset_index(drop=True), X)
    check_y_alignment(y.to_numpy(), X)
    with pytest.raises(ValueError, match="y is a pandas Series whose index"):
        UserDPLinearRegression(bounds=(0, 6), target_bounds=(0, 6)).fit(
            X, y, groups=np.arange(6) % 3)
