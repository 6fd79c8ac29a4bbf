"""``python -m skuserdp report`` (issue 16, part 3): a private estimate of a
table's means with error bars from the public plan, and a PNG of expected
error against epsilon drawn from public plans only."""

import csv
import subprocess
import sys

import numpy as np
import pytest

from skuserdp._report import CURVE_EPSILONS, expected_error_curves, run_report
from skuserdp.mean import plan_clip_noise
from skuserdp.privacy import ApproxDP

mpimg = pytest.importorskip("matplotlib.image")


def _write_csv(path, n_users=1500, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["patient", "age", "weight"])
        for u in range(n_users):
            for _ in range(3):
                out.writerow([f"p{u}", rng.normal(40, 8), rng.normal(70, 10)])
    return path


def test_command_line_prints_the_estimate_and_writes_a_png(tmp_path):
    data = _write_csv(tmp_path / "clinic.csv")
    png = tmp_path / "report.png"
    run = subprocess.run(
        [sys.executable, "-m", "skuserdp", "report", str(data), "--groups",
         "patient", "--epsilon", "1", "--bounds", "0,200", "--png", str(png)],
        capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "1500 users" in run.stdout and "privacy spent" in run.stdout
    assert "age" in run.stdout and "weight" in run.stdout
    image = mpimg.imread(png)
    assert image.shape[:2] == (450, 700)
    # non-empty axes: the two curves' default colours (C0 blue, C1 orange)
    # cover many pixels, and the star of the fit itself is drawn
    rgb = image[..., :3]
    for colour in ((0.12, 0.47, 0.71), (1.0, 0.5, 0.05)):
        near = np.all(np.abs(rgb - colour) < 0.08, axis=-1)
        assert near.sum() > 200, colour


def test_errors_are_clear(tmp_path):
    data = _write_csv(tmp_path / "clinic.csv", n_users=50)
    run = subprocess.run([sys.executable, "-m", "skuserdp", "report", str(data),
                          "--groups", "user"], capture_output=True, text=True)
    assert run.returncode == 1 and "no column 'user'" in run.stderr


def test_report_values_come_from_the_fit_and_the_public_plans(tmp_path):
    data = _write_csv(tmp_path / "clinic.csv")
    res = run_report(data, groups="patient", epsilon=1.0, delta=1e-6,
                     bounds="0,200", png=tmp_path / "r.png", random_state=0,
                     out=open(tmp_path / "log.txt", "w"))
    est = res["estimator"]
    assert est.epsilon_ <= 1.0 and est.n_users_ == 1500
    assert res["noise_std"] == est.noise_std_ > 0
    # the curves are the plans' noise, a function of public values only
    lower, upper = est.bounds_
    curves = expected_error_curves(1500, lower, upper, 1e-6)
    half = (upper - lower) / 2
    plan = plan_clip_noise(1500, 2, budget=ApproxDP(float(CURVE_EPSILONS[0]), 1e-6),
                           radius=float(np.linalg.norm(half)))
    assert curves["ClipNoiseMeanEstimator"][0] == np.sqrt(2 * plan.noise_variance)
    for values in curves.values():
        assert np.all(np.diff(values) < 0)  # more epsilon, less noise
    np.testing.assert_array_equal(res["curves"]["ClipNoiseMeanEstimator"],
                                  curves["ClipNoiseMeanEstimator"])
