"""Validation of the data (issue 26): messages that never show a data value,
and features named by name when ``X`` had column names."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator

from skuserdp.utils._validation import (
    check_rows,
    feature_labels,
    validate_rows,
)

SECRET = 987654.321


class _Est(BaseEstimator):
    pass


def _error(X, y="no_validation", **kwargs):
    with pytest.raises((ValueError, TypeError)) as info:
        validate_rows(_Est(), X, y, dtype=np.float64, **kwargs)
    message = str(info.value)
    assert "987654" not in message and "9.87654" not in message, message
    assert "Jane" not in message, message
    # raised outside the except clause: no context holding the original
    assert info.value.__context__ is None and info.value.__cause__ is None
    return info.value


def test_feature_labels():
    assert feature_labels([2, 0], ["a", "b", "c"]) == "['c', 'a']"
    assert feature_labels(np.array([1])) == "[1]"
    assert feature_labels([1], np.array(["x", "y"], dtype=object)) == "['y']"
    assert feature_labels([0, 1], [0, "y"]) == "[0, 'y']"
    assert feature_labels(range(11)).endswith("(and 1 more)")


def test_1d_and_scalar_x_keep_the_advice_not_the_values():
    error = _error(np.full(30, SECRET))
    assert "Expected 2D array, got 1D array" in str(error)
    assert "Reshape your data" in str(error)  # (scikit-learn's checks need it)
    assert "Expected 2D array, got scalar array" in str(_error(np.float64(SECRET)))


def test_complex_x():
    error = _error(np.full((4, 2), SECRET + 1j))
    assert "Complex data not supported" in str(error)


@pytest.mark.parametrize("cell", ["Jane Doe", b"Jane Doe"])
def test_text_cell_names_its_column(cell):
    X = np.array([[1.0, 2.0], [3.0, cell]], dtype=object)
    error = _error(X)
    assert isinstance(error, ValueError)
    assert "non-numeric values (e.g. text) in column(s) [1]" in str(error)
    frame = pd.DataFrame({"age": [1.0, 3.0], "name": [2.0, cell]})
    assert "column(s) ['name']" in str(_error(frame))
    frame = pd.DataFrame({"age": [1.0, 3.0], "name": ["x", "Jane Doe"]})
    assert "column(s) ['name']" in str(_error(frame))


def test_a_cell_of_another_type_keeps_numpys_type_error():
    # scikit-learn's check_dtype_object expects a TypeError "argument must be
    # a string or a number"; numpy's message names the type, not the value
    X = np.array([[1.0, 2.0], [3.0, {"Jane": SECRET}]], dtype=object)
    error = _error(X)
    assert isinstance(error, TypeError)
    assert "argument must be a string or a real number, not 'dict'" in str(error)


def test_text_in_y():
    y = np.array([1.0, "Jane Doe"], dtype=object)
    error = _error(np.ones((2, 1)), y, y_numeric=True)
    assert "y has non-numeric values" in str(error)


def test_nan_and_inf_name_the_columns():
    X = pd.DataFrame({"age": [1.0, np.nan, 3.0], "income": [1.0, 2.0, 3.0],
                      "score": [np.inf, 2.0, 3.0]})
    error = _error(X)
    assert "X contains NaN or infinity in column(s) ['age', 'score']" in str(error)
    assert "SimpleImputer" in str(error)
    error = _error(X.to_numpy())
    assert "column(s) [0, 2]" in str(error)
    # NaN may be allowed (finite=False); huge finite values are finite
    validate_rows(_Est(), X, dtype=np.float64, finite=False)
    validate_rows(_Est(), np.full((3, 2), 1.7e308), dtype=np.float64)


def test_nan_at_predict_time_names_the_fitted_features():
    est = _Est()
    validate_rows(est, pd.DataFrame({"a": [1.0], "b": [2.0]}), dtype=np.float64)
    with pytest.raises(ValueError, match=r"column\(s\) \['b'\]"):
        validate_rows(est, pd.DataFrame({"a": [1.0], "b": [np.nan]}), reset=False,
                      dtype=np.float64)


def test_check_rows_without_an_estimator():
    with pytest.raises(ValueError, match=r"column\(s\) \[0\]") as info:
        check_rows(np.array([["Jane"]], dtype=object), dtype=np.float64)
    assert "Jane" not in str(info.value)
