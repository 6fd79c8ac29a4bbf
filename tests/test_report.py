"""``python -m skuserdp report`` (issue 16, part 3): a private estimate of a
table's means with its confidence intervals (users + noise) when the fit
offers them, else noise bars from the public plan, and a PNG of expected
error against epsilon drawn from public plans only, beside the fit's
intervals."""

import csv
import subprocess
import sys

import numpy as np
import pytest

from skuserdp._report import (
    CI_LABEL, CURVE_EPSILONS, NOISE_LABEL, _as_frame, check_ids,
    expected_error_curves, fill_missing,
    is_missing_cell, load_cells, name_features, parse_bounds, parse_fill,
    parse_numbers, read_codebook, read_csv_cells, resolve_fill, run_report,
    select_columns, user_table)
from skuserdp.mean._column_scaled import choose_column_noise, plan_column_scaled
from skuserdp.mean._intervals import choose_ci_share

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
    # (pytest's warning filters do not reach the subprocess: its warnings
    # would only be printed to its stderr; declared bounds, 1500 users: none)
    assert "Warning" not in run.stderr, run.stderr
    assert "1500 users" in run.stdout and "privacy spent" in run.stdout
    assert "age" in run.stdout and "weight" in run.stdout
    assert CI_LABEL in run.stdout
    image = mpimg.imread(png)
    assert image.shape[:2] == (450, 1200)  # the curves, and the fit's intervals
    # non-empty axes: the fit's estimator's curve (C0 blue, drawn on top of
    # the per-column Laplace peer's, which it equals at 2 columns), the
    # joint Gaussian's (C2 green) and the fit's intervals (C3 red, right
    # panel only) cover many pixels
    rgb = image[..., :3]
    for colour in ((0.12, 0.47, 0.71), (0.17, 0.63, 0.17), (0.84, 0.15, 0.16)):
        near = np.all(np.abs(rgb - colour) < 0.08, axis=-1)
        assert near.sum() > 200, colour
    red = np.all(np.abs(rgb - (0.84, 0.15, 0.16)) < 0.08, axis=-1)
    assert red[:, :650].sum() == 0


def test_errors_are_clear(tmp_path, capsys):
    from skuserdp.__main__ import main

    data = _write_csv(tmp_path / "clinic.csv", n_users=50)
    assert main(["report", str(data), "--groups", "user"]) == 1
    assert "no column 'user'" in capsys.readouterr().err


def _clinic_report(tmp_path, **kw):
    """The report of the clinic CSV at ε = 1, δ = 1e-6, logged to
    ``tmp_path/log.txt``."""
    data = _write_csv(tmp_path / "clinic.csv")
    with open(tmp_path / "log.txt", "w") as log:
        return run_report(data, groups="patient", epsilon=1.0, delta=1e-6,
                          png=tmp_path / "r.png", random_state=0, out=log, **kw)


def test_report_values_come_from_the_fit_and_the_public_plans(tmp_path):
    res = _clinic_report(tmp_path, bounds="0,200")
    est = res["estimator"]
    assert est.epsilon_ <= 1.0 and est.n_users_ == 1500
    assert res["noise_std"] is est.noise_std_ and (est.noise_std_ > 0).all()
    # the curves are the plans' noise, a function of public values only
    lower, upper = est.bounds_
    curves = expected_error_curves(1500, lower, upper, 1e-6)
    half = (upper - lower) / 2
    # the estimator the fit used (issue 28: the report plots it, not others)
    assert est.method_ == "column_scaled"
    eps0 = float(CURVE_EPSILONS[0])
    _, plan = choose_column_noise(1500, 2, eps0, 1e-6)
    assert curves["ColumnScaledMeanEstimator"][0] == pytest.approx(
        np.linalg.norm(half) * np.sqrt(plan.noise_variance), rel=1e-12)
    # the peer: Laplace with eps/d per column of the box, sd √2·w·d/(n·eps)
    peer = curves["per-column Laplace (peer)"][0]
    assert peer == pytest.approx(np.linalg.norm(np.sqrt(2) * 2 * half * 2
                                                / (1500 * eps0)), rel=1e-3)
    assert curves["ColumnScaledMeanEstimator"][0] <= peer * (1 + 1e-12)
    for values in curves.values():
        assert np.all(np.diff(values) < 0)  # more epsilon, less noise
    np.testing.assert_array_equal(res["curves"]["ColumnScaledMeanEstimator"],
                                  curves["ColumnScaledMeanEstimator"])
    # this fit's noise is its estimator's plan at epsilon 1 less the
    # interval's share, ci_share_ (ci_share="auto": public values) (the
    # clipped-users check does not run at 1500 users x 2: its noise's tail
    # would exceed a tenth of the users)
    share = est.ci_share_
    assert share == choose_ci_share(1500, 2, 1.0, 1e-6, zcdp=False)
    plan1 = plan_column_scaled(1500, 2, 1.0 - share, 1e-6)
    assert plan1.check is None
    np.testing.assert_allclose(est.noise_std_,
                               half * np.sqrt(plan1.release.noise_variance),
                               rtol=1e-12)
    assert not hasattr(est.estimator_, "clipped_users_")
    # the error bars are the fit's intervals (users + noise), post-processing
    # of its releases (declared bounds: conf_int warns nothing)
    np.testing.assert_array_equal(res["conf_int"], est.conf_int(0.05))
    assert res["no_interval_reason"] == ""
    bars = res["bars"]
    assert bars.label == CI_LABEL and bars.names == ["age", "weight"]
    np.testing.assert_array_equal(bars.lower, res["conf_int"][:, 0])
    np.testing.assert_array_equal(bars.upper, res["conf_int"][:, 1])
    np.testing.assert_array_equal(bars.mean, est.mean_)
    np.testing.assert_array_equal([bars.box_lower, bars.box_upper], est.bounds_)
    # wider than the noise alone: they add the sampling of the users
    assert np.all(bars.upper - bars.lower > 2 * 1.96 * est.noise_std_)
    text = (tmp_path / "log.txt").read_text()
    assert CI_LABEL in text and "sampling" in text and f"ci_share = {share:g}" in text
    assert NOISE_LABEL not in text and "privacy noise only" not in text
    for name, (lo, hi) in zip(["age", "weight"], res["conf_int"]):
        assert f"[{lo:.4g}, {hi:.4g}]" in text


def test_noise_bars_when_the_fit_has_no_interval(tmp_path, monkeypatch):
    # a fit without interval statistics (ci_share=0): the noise-only bars,
    # labelled so, with the estimator's reason
    from skuserdp.mean import UserMeanEstimator

    monkeypatch.setitem(UserMeanEstimator.__init__.__kwdefaults__, "ci_share", 0.0)
    res = _clinic_report(tmp_path, bounds="0,200")
    est = res["estimator"]
    assert est.ci_share == 0.0 and res["conf_int"] is None
    assert "ci_share=0" in res["no_interval_reason"]
    text = (tmp_path / "log.txt").read_text()
    assert NOISE_LABEL in text and CI_LABEL not in text
    assert "privacy noise only" in text and "clipping bias" in text
    assert "No confidence interval" in text and "ci_share=0" in text
    for name, s in zip(["age", "weight"], est.noise_std_):
        assert f"± {1.96 * s:.4g}" in text
    bars = res["bars"]
    assert bars.label == NOISE_LABEL
    np.testing.assert_allclose(bars.upper - est.mean_, 1.96 * est.noise_std_)
    np.testing.assert_allclose(est.mean_ - bars.lower, 1.96 * est.noise_std_)
    assert mpimg.imread(res["png"]).shape[:2] == (450, 1200)


def test_a_learned_box_prints_the_intervals_caveat(tmp_path):
    # bounds="auto": the interval covers the clipped mean only; conf_int's
    # warning is printed (not raised: all warnings are errors here)
    res = _clinic_report(tmp_path)
    assert res["conf_int"] is not None
    text = (tmp_path / "log.txt").read_text()
    assert CI_LABEL in text
    assert "warning: AccuracyWarning" in text and "learned privately" in text


# --- real CSVs (issue 26): text columns, missing cells, missing ids, ragged
# rows, per-column bounds; no message ever contains a cell's value.

SENTINEL = "Jane Doe HIV+ SENTINEL-7f3a"


def _table_csv(path, rows, header=("patient", "name", "age", "temp")):
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        out.writerows(rows)
    return path


def _real_rows(n_users=30):
    """Ids, a text column (with the sentinel), empty and NA cells, negatives."""
    rows = [["p0", SENTINEL, "30", "-5"], ["p0", SENTINEL, "", "NA"],
            ["p1", "Bob", "50", ""], ["p2", "Al", "20", "-20"],
            ["p2", "Al", "40", " n/a "]]
    rows += [[f"p{u}", f"X{u}", str(20 + u % 30), str(u % 20 - 10)]
             for u in range(3, n_users)]
    return rows


def _main(argv, capsys, tmp_path):
    """Run the command line; return (exit code, stdout, stderr), checking that
    the sentinel cell appears in none of them."""
    from skuserdp.__main__ import main

    code = main(["report", *map(str, argv), "--png", str(tmp_path / "r.png")])
    out, err = capsys.readouterr()
    assert "SENTINEL" not in out + err  # nor any part of the cell
    return code, out, err


def test_a_real_csv_with_text_empty_cells_and_column_bounds(tmp_path, capsys):
    data = _table_csv(tmp_path / "t.csv", _real_rows())
    code, out, err = _main([data, "--groups", "patient", "--bounds",
                            "age=14:80,temp=-40:50"], capsys, tmp_path)
    assert code == 0, err
    assert "feature columns: age, temp" in out
    assert "skipped columns:" in out and "name: no cell is a number" in out
    assert "outside the DP guarantee" in out  # the schema policy
    assert "age, temp have missing cells" in out
    assert "mean of that user's non-missing cells" in out  # the policy
    assert "30 users" in out


def test_missing_ids_are_refused_by_column_name(tmp_path, capsys):
    for missing in ["", "  ", "NA", "n/a", "NULL", "None", ".", "nan"]:
        rows = _real_rows() + [[missing, SENTINEL, "1", "2"]] * 3
        data = _table_csv(tmp_path / "t.csv", rows)
        code, out, err = _main([data, "--groups", "patient", "--bounds", "0,100"],
                               capsys, tmp_path)
        assert code != 0 and "users" not in out
        assert "id column 'patient' is missing in 3 row(s)" in err, missing


def test_ragged_rows_are_refused_with_the_line_number(tmp_path, capsys):
    for extra in ([SENTINEL, "x"], []):
        rows = _real_rows()
        rows.insert(3, ["p9", SENTINEL, "3"] + extra)  # line 5 of the file
        data = _table_csv(tmp_path / "t.csv", rows)
        code, _, err = _main([data, "--groups", "patient"], capsys, tmp_path)
        n = 3 + len(extra)
        assert code == 1 and f"line 5: {n} cells but the header has 4" in err


def test_no_message_prints_a_cell(tmp_path, capsys):
    data = _table_csv(tmp_path / "t.csv", _real_rows())
    # the text column asked for by name: refused by name (no number in it)
    code, _, err = _main([data, "--groups", "patient", "--columns", "age,name"],
                         capsys, tmp_path)
    assert code == 1 and "column 'name' (--columns) has no cell that is a number" \
        in err
    # a numeric column with the sentinel in one cell: inference skips it (with
    # the reason); named by --columns, the cell is missing
    rows = _real_rows()
    rows[2][2] = SENTINEL
    data = _table_csv(tmp_path / "t.csv", rows)
    code, out, err = _main([data, "--groups", "patient", "--bounds=-50,100"],
                           capsys, tmp_path)
    assert code == 0, err
    assert "age: some cells are not numbers" in out
    code, out, err = _main([data, "--groups", "patient", "--columns", "age,temp",
                            "--bounds=-50,100"], capsys, tmp_path)
    assert code == 0 and "named by --columns (public)" in out
    # learned bounds and a user with no number: refused by column, with the fix
    code, _, err = _main([data, "--groups", "patient", "--columns", "age,temp"],
                         capsys, tmp_path)
    assert code == 1 and "column(s) ['age', 'temp']" in err \
        and "--fill" in err


def test_non_utf8_and_unreadable_files(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    path.write_bytes("patient,age\np1,3\np\xe9,4\n".encode("latin-1"))
    code, _, err = _main([path, "--groups", "patient"], capsys, tmp_path)
    assert code == 1 and "not UTF-8" in err and "xe9" not in err


def test_read_csv_cells(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b'\xef\xbb\xbfpatient , age\n\np1,"1,5"\n\np2,"a\nb"\np3\n')
    with pytest.raises(ValueError, match=r"line 7: 1 cells but the header has 2"):
        read_csv_cells(path)  # the quoted newline makes line 6 a continuation
    path.write_bytes(b'\xef\xbb\xbfpatient , age\n\np1,"1,5"\n\n')
    assert read_csv_cells(path) == (["patient", "age"], [["p1", "1,5"]])
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        read_csv_cells(path)
    path.write_bytes(b"a,b\n")
    with pytest.raises(ValueError, match="no data rows"):
        load_cells(path)
    path.write_bytes(b"a,b,a\n1,2,3\n")
    with pytest.raises(ValueError, match=r"repeats column name\(s\) \['a'\]"):
        load_cells(path)


def test_cells_ids_and_columns():
    assert [is_missing_cell(c) for c in ["", " ", "NA", "nA", " n/a", "NaN",
                                         "null", "None", ".", None, np.nan]] \
        == [True] * 11
    assert not any(is_missing_cell(c) for c in ["0", "x", "NAN1", "-", 0.0])
    values, n_missing = parse_numbers(["1", " 2.5 ", "", "x", "inf", "NA", "-3e2"])
    np.testing.assert_array_equal(values, [1, 2.5, np.nan, np.nan, np.nan, np.nan,
                                           -300])
    assert n_missing == 2
    with pytest.raises(ValueError, match=r"'uid' is missing in 1 row"):
        check_ids(["a", "NULL", "b"], "uid")
    assert check_ids(["a", "b"], "uid").tolist() == ["a", "b"]
    header = ["uid", "", "t", "x", "y"]
    cells = [["a", "b"], ["1", "2"], ["hi", ""], ["1", "oops"], ["", "4"]]
    cols = select_columns(header, cells, "uid")
    assert cols.names == ["y"] and cols.inferred and cols.incomplete == ["y"]
    assert [n for n, _ in cols.skipped] == ["(unnamed column 2)", "t", "x"]
    np.testing.assert_array_equal(cols.values, [[np.nan], [4.0]])
    cols = select_columns(header, cells, "uid", ["x", "y"])
    assert not cols.inferred and cols.skipped == []
    np.testing.assert_array_equal(cols.values, [[1, np.nan], [np.nan, 4]])
    for bad, match in [(["t"], "'t' .* no cell that is a number"),
                       (["zz"], r"no column\(s\) \['zz'\]"),
                       (["uid"], "id column 'uid' cannot be a feature"),
                       (["x", "x"], "repeats")]:
        with pytest.raises(ValueError, match=match):
            select_columns(header, cells, "uid", bad)
    with pytest.raises(ValueError, match="no feature column is numeric"):
        select_columns(header[:3], cells[:3], "uid")


def test_the_missing_value_policy_by_hand(tmp_path, capsys):
    values = np.array([[1.0, np.nan], [3.0, 7.0], [np.nan, np.nan],
                       [10.0, 2.0], [np.nan, 4.0]])
    ids = np.array(["u", "u", "v", "w", "w"], dtype=object)
    table, labels = user_table(values, ids)
    assert labels.tolist() == ["u", "v", "w"]
    np.testing.assert_array_equal(table, [[2.0, 7.0], [np.nan, np.nan],
                                          [10.0, 3.0]])
    filled = fill_missing(table, ["a", "b"], np.array([5.0, -1.0]))
    np.testing.assert_array_equal(filled, [[2.0, 7.0], [5.0, -1.0], [10.0, 3.0]])
    with pytest.raises(ValueError, match=r"column\(s\) \['b'\].*--fill"):
        fill_missing(table, ["a", "b"], np.array([5.0, np.nan]))
    # a column with nobody missing needs no fill
    fill_missing(table[[0, 2]], ["a", "b"], np.full(2, np.nan))
    # the report builds that table from the CSV and fits it, one row per user
    rows = [["u", "1", ""], ["u", "3", "7"], ["v", "", "NA"], ["w", "10", "2"],
            ["w", " . ", "4"]] + [[f"z{u}", str(u % 7), str(u % 5)]
                                  for u in range(60)]
    data = _table_csv(tmp_path / "t.csv", rows, header=("patient", "a", "b"))
    with open(tmp_path / "o", "w") as out:
        res = run_report(data, groups="patient", epsilon=1e9,
                         bounds="a=0:20,b=-2:8", fill="b=-1", random_state=0,
                         out=out)
    # rows in the order of the sorted ids: u, v, w, z0, z1, z10, z11, ...
    z = sorted(range(60), key=str)
    expected = np.array([[2.0, 7.0], [10.0, -1.0], [10.0, 3.0]]
                        + [[u % 7, u % 5] for u in z], dtype=float)
    np.testing.assert_array_equal(res["table"], expected)
    assert res["estimator"].n_users_ == 63
    if _as_frame(expected, ["a", "b"]) is not expected:  # pandas: named columns
        assert res["estimator"].feature_names_in_.tolist() == ["a", "b"]


def test_bounds_fill_and_codebook(tmp_path):
    names = ["age", "temp"]
    assert parse_bounds(None, names) == parse_bounds(" auto", names) == "auto"
    lower, upper = parse_bounds("-1.5,2e2", names)
    np.testing.assert_array_equal(lower, [-1.5, -1.5])
    np.testing.assert_array_equal(upper, [200, 200])
    lower, upper = parse_bounds("temp=-40:-10, age=14:46", names)
    np.testing.assert_array_equal(lower, [14, -40])
    np.testing.assert_array_equal(upper, [46, -10])
    for text, match in [
            ("age=14:46", r"does not cover column\(s\) \['temp'\]"),
            ("age=1:2,temp=1:2,hours=0:168", r"column\(s\) \['hours'\], which are "
             "not feature columns"),
            ("age=46:14,temp=nan:1", r"column\(s\) \['age', 'temp'\] must be finite"),
            ("age=0:inf,temp=0:1", r"column\(s\) \['age'\] must be finite"),
            ("5,5", r"column\(s\) \['age', 'temp'\] must be finite"),
            ("age=1:2,age=1:3,temp=0:1", "twice"),
            ("age=1-2,temp=0:1", "not LOWER:UPPER"), ("age=a:2,temp=0:1",
                                                      "'a' is not a number"),
            ("0,1,2", "is not 'auto'"), ("=1:2", "not NAME=VALUE")]:
        with pytest.raises(ValueError, match=match):
            parse_bounds(text, names)
    assert parse_fill(None, names) == {}
    assert parse_fill("-2", names) == {"age": -2.0, "temp": -2.0}
    assert parse_fill("temp=-2", names) == {"temp": -2.0}
    box = (np.array([0.0, -40.0]), np.array([10.0, 50.0]))
    np.testing.assert_array_equal(resolve_fill(names, box, {"temp": -2.0}), [5, -2])
    np.testing.assert_array_equal(resolve_fill(names, "auto", {"temp": 1e6}),
                                  [np.nan, 1e6])
    with pytest.raises(ValueError, match=r"fill value of column\(s\) \['temp'\]"):
        resolve_fill(names, box, {"temp": 60.0})
    book = tmp_path / "codebook.csv"
    book.write_text("name,lower,upper,fill\nid,,,\nage,14,46,\n"
                    "temp,-40,50,-3\nnotes,,,\n")
    (lower, upper), fill = read_codebook(book, names)
    np.testing.assert_array_equal(lower, [14, -40])
    np.testing.assert_array_equal(upper, [46, 50])
    assert fill == {"temp": -3.0}
    book.write_text("name,lower,upper\nage,14,46\n")
    with pytest.raises(ValueError, match=r"does not cover column\(s\) \['temp'\]"):
        read_codebook(book, names)
    book.write_text("name,lower,upper\nage,46,14\ntemp,0,1\n")
    with pytest.raises(ValueError, match=r"column\(s\) \['age'\] must be finite"):
        read_codebook(book, names)
    book.write_text("name,low,upper\nage,46,14\n")
    with pytest.raises(ValueError, match=r"lacks \['lower'\]"):
        read_codebook(book, names)


def test_codebook_on_the_command_line(tmp_path, capsys):
    data = _table_csv(tmp_path / "t.csv", _real_rows())
    book = tmp_path / "codebook.csv"
    book.write_text("name,lower,upper,fill\nage,14,80,\ntemp,-40,50,0\n")
    code, out, err = _main([data, "--groups", "patient", "--codebook", book],
                           capsys, tmp_path)
    assert code == 0, err
    code, _, err = _main([data, "--groups", "patient", "--codebook", book,
                          "--bounds", "0,1"], capsys, tmp_path)
    assert code == 1 and "either --bounds or --codebook" in err


def test_warnings_name_the_columns():
    names = ["age", "temp", "hours"]
    assert name_features("the estimate of feature(s) [0, 2] lies", names) \
        == "the estimate of feature(s) ['age', 'hours'] lies"
    for message in ["feature(s) [3]", "feature(s) ['age']", "shape [0, 2]"]:
        assert name_features(message, names) == message


def test_the_csv_path_works_without_pandas(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails
    with pytest.raises(ImportError):
        import pandas  # noqa: F401
    table = np.zeros((2, 1))
    assert _as_frame(table, ["a"]) is table
    data = _table_csv(tmp_path / "t.csv", _real_rows())
    code, out, err = _main([data, "--groups", "patient", "--bounds",
                            "age=14:80,temp=-40:50"], capsys, tmp_path)
    assert code == 0, err
    assert "30 users" in out
