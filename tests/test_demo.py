"""The demo covers every public estimator and runs end to end."""

import subprocess
import sys

import pytest
from sklearn.base import BaseEstimator

from skuserdp._demo import DEMO_CONFIGS, demo_configs, format_table, run_demo
from skuserdp.utils.discovery import all_estimators


def test_every_estimator_is_in_the_demo():
    for name, cls in all_estimators():
        assert demo_configs(name, cls)


class _NewMean(BaseEstimator):
    def __init__(self, epsilon=1.0, delta=1e-6, bounds="auto"):
        self.epsilon, self.delta, self.bounds = epsilon, delta, bounds


class _NoBox(BaseEstimator):
    def __init__(self, epsilon=1.0, radius=None):
        self.epsilon, self.radius = epsilon, radius


def test_an_estimator_with_a_box_needs_no_demo_entry():
    configs = demo_configs("_NewMean", _NewMean)
    assert [c["epsilon"] for c in configs] == [0.5, 1.0, 2.0]
    assert all(c["bounds"] == (-5.0, 5.0) and c["delta"] == 1e-6 for c in configs)
    with pytest.raises(RuntimeError, match="no entry"):
        demo_configs("_NoBox", _NoBox)


def test_demo_rows_are_sensible():
    # The demo's own 2000 users (3 features for speed): the few-users and
    # person-level estimators need hundreds of users per stage (their coarse
    # steps warn below that, and a demo fit must not warn).
    rows = run_demo(random_state=1, data=dict(n_users=2000, n_features=3))
    assert len(rows) == sum(len(demo_configs(n, c)) for n, c in all_estimators())
    assert set(DEMO_CONFIGS) <= {n for n, _ in all_estimators()}
    for row in rows:
        assert 0 < row["epsilon_spent"] <= row["epsilon"]
        assert row["delta_spent"] <= row["delta"]
        # 1.0, or the estimator's own published accuracy radius if larger
        # (the few-users estimator's error is O(radius * sqrt(d))).
        assert row["l2_error"] < max(1.0, row["error_bound"] or 0.0)
        assert row["relative_error"] > 0
        mean = row["estimator"].endswith("Estimator") and row["estimator"] != (
            "DiscreteDistributionEstimator")
        assert (row["peer_relative_error"] is not None) == mean, row
    table = format_table(rows)
    assert "ClipNoiseMeanEstimator" in table and "L2 error" in table
    # the peer column, and the one-line reason of the estimator that does not
    # improve with epsilon, printed once under the table
    assert "peer" in table and table.count("[1] FewUsersBallEstimator: made for") == 1


def test_command_line():
    out = subprocess.run([sys.executable, "-m", "skuserdp", "demo"],
                         capture_output=True, text=True, check=True)
    assert "ClipNoiseMeanEstimator" in out.stdout
    # a subprocess does not inherit pytest's warning filters: its warnings
    # would only be printed to its stderr (and a demo fit must not warn)
    assert "Warning" not in out.stderr, out.stderr
    bad = subprocess.run([sys.executable, "-m", "skuserdp", "nope"],
                         capture_output=True, text=True)
    assert bad.returncode != 0
