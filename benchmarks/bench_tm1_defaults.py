"""T-M1 with no arguments, with a loose box, and the small no-bounds cases (issue 28).

Run from the repository root::

    python benchmarks/bench_tm1_defaults.py            # 100 seeds
    python benchmarks/bench_tm1_defaults.py --quick    # 10 seeds

Acceptance points of issue 28 measured here (ε = 1, δ = 1e-6):

* T-M1 (1,000 users × 50 rows × 10 columns, ``benchmarks/bench_means.py``'s
  data) with no arguments, ``UserMeanEstimator()``: it runs, and its ℓ2
  error is at most 1.5× that of ``UserMeanEstimator(bounds=(-100, 100))``;
* T-M1 with the loose box: ``CoinPressMeanEstimator(bounds=(-100, 100))``
  at most 0.65× the OpenDP peer (vector Gaussian, ℓ2 clip C = 4, the
  hand-tuned peer of ``bench_means.py``), with the default's error next to it;
* 300 users × 2 columns with no bounds runs (and the report's default path,
  ``bounds=None``, on both shapes);
* ``UserDPLinearRegression(bounds="auto")`` and ``UserDPSGDRegressor`` on
  800 users × 8 columns at ε = 1 run.

Errors are ℓ2 distances to the mean of the users' means, median over the
seeds (every method sees the same seeds' data); refusals and warnings are
counted.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_results  # noqa: E402
from bench_means import DELTA, TM1, make_data, opendp_peer  # noqa: E402


def _fit(make, X, groups):
    """(estimate or None, refused message, number of warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = make().fit(X, groups=groups)
        except ValueError as exc:
            return None, str(exc)[:120], len(caught)
    return est, "", len(caught)


def tm1(seeds):
    from skuserdp.mean import CoinPressMeanEstimator, UserMeanEstimator
    d, n, m = TM1["n_features"], TM1["n_users"], TM1["samples_per_user"]
    box = (-TM1["bound"], TM1["bound"])
    methods = {
        "UserMeanEstimator() (no bounds)":
            lambda s: UserMeanEstimator(random_state=s),
        "UserMeanEstimator(bounds=(-100, 100))":
            lambda s: UserMeanEstimator(bounds=box, random_state=s),
        "CoinPressMeanEstimator(bounds=(-100, 100))":
            lambda s: CoinPressMeanEstimator(bounds=box, random_state=s),
    }
    peer, reason = opendp_peer(TM1["peer_clip"], d, TM1["epsilon"])
    errors = {k: [] for k in methods}
    errors["OpenDP peer (l2 clip C = 4)"] = []
    refused = {k: 0 for k in errors}
    warned = {k: 0 for k in errors}
    for seed in seeds:
        X, groups, _, U = make_data(n, d, m, seed=seed,
                                    user_spread=TM1["user_spread"])
        truth = U.mean(axis=0)
        for name, make in methods.items():
            est, msg, n_warn = _fit(lambda: make(seed), X, groups)
            warned[name] += n_warn > 0
            if est is None:
                refused[name] += 1
                continue
            errors[name].append(float(np.linalg.norm(est.mean_ - truth)))
        if peer is not None:
            errors["OpenDP peer (l2 clip C = 4)"].append(
                float(np.linalg.norm(peer(U, TM1["epsilon"], seed) - truth)))
    rows = [dict(task="T-M1", method=k, runs=len(seeds),
                 median_l2_error=float(np.median(v)) if v else float("nan"),
                 refused=refused[k], warned_runs=warned[k])
            for k, v in errors.items()]
    return rows, reason


def small_cases(seeds):
    """No-bounds fits at 300 x 2 (means, report) and the linear models'
    ``bounds="auto"`` at 800 x 8."""
    import tempfile

    from skuserdp._report import run_report
    from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
    from skuserdp.mean import UserMeanEstimator
    rows = []
    for n, d in ((300, 2), (1000, 10)):
        refused = warned = 0
        errs = []
        for seed in seeds:
            X, groups, _, U = make_data(n, d, 5, seed=seed, user_spread=0.5)
            est, msg, n_warn = _fit(lambda: UserMeanEstimator(random_state=seed),
                                    X, groups)
            warned += n_warn > 0
            if est is None:
                refused += 1
            else:
                errs.append(float(np.linalg.norm(est.mean_ - U.mean(axis=0))))
        rows.append(dict(task=f"{n} users x {d} columns, 5 rows", method=(
            "UserMeanEstimator() (no bounds)"), runs=len(seeds),
            median_l2_error=float(np.median(errs)) if errs else float("nan"),
            refused=refused, warned_runs=warned))
        # the report's default path (bounds=None -> learned)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.csv"
            X, groups, _, _ = make_data(n, d, 5, seed=0, user_spread=0.5)
            header = "user," + ",".join(f"x{j}" for j in range(d))
            np.savetxt(path, np.column_stack([groups, X]), delimiter=",",
                       header=header, comments="", fmt="%.10g")
            with open(Path(tmp) / "out.txt", "w") as out:
                try:
                    run_report(path, groups="user", random_state=0, out=out)
                    ok = "ran"
                except ValueError as exc:
                    ok = f"refused: {str(exc)[:80]}"
        rows.append(dict(task=f"{n} users x {d} columns, 5 rows",
                         method="report, default path (no bounds)", runs=1,
                         median_l2_error=float("nan"), refused=int(ok != "ran"),
                         warned_runs=0))
    rng = np.random.default_rng(0)
    n, p = 800, 8
    groups = np.repeat(np.arange(n), 5)
    X = rng.normal(size=(groups.size, p))
    y = X @ np.linspace(-1, 1, p) + rng.normal(size=groups.size)
    for cls in (UserDPLinearRegression, UserDPSGDRegressor):
        refused = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for seed in seeds[:5]:
                try:
                    cls(bounds="auto", target_bounds="auto",
                        random_state=seed).fit(X, y, groups=groups)
                except ValueError:
                    refused += 1
        rows.append(dict(task="800 users x 8 columns (regression)",
                         method=f"{cls.__name__}(bounds='auto')",
                         runs=min(5, len(seeds)), median_l2_error=float("nan"),
                         refused=refused, warned_runs=0))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 seeds")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--output-dir", default=str(
        Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    runs = 10 if args.quick else args.runs
    seeds = list(range(runs))
    t0 = time.perf_counter()
    rows, reason = tm1(seeds)
    rows += small_cases(seeds)
    by = {r["method"]: r["median_l2_error"] for r in rows if r["task"] == "T-M1"}
    noarg = by["UserMeanEstimator() (no bounds)"]
    loose = by["UserMeanEstimator(bounds=(-100, 100))"]
    peer = by.get("OpenDP peer (l2 clip C = 4)", float("nan"))
    coin = by["CoinPressMeanEstimator(bounds=(-100, 100))"]
    summary = dict(noarg_over_loose_box=noarg / loose,
                   coinpress_over_opendp=coin / peer,
                   default_loose_over_opendp=loose / peer, delta=DELTA,
                   opendp=reason or "ok", seconds=time.perf_counter() - t0)
    print(f"{'task':<36} {'method':<44} {'runs':>4} {'median l2':>10} "
          f"{'refused':>7} {'warned':>6}")
    for r in rows:
        print(f"{r['task']:<36} {r['method']:<44} {r['runs']:>4} "
              f"{r['median_l2_error']:>10.4g} {r['refused']:>7} {r['warned_runs']:>6}")
    print(f"T-M1: no arguments / loose box = {summary['noarg_over_loose_box']:.3f} "
          f"(target <= 1.5); CoinPress loose box / OpenDP peer = "
          f"{summary['coinpress_over_opendp']:.3f} (target <= 0.65); default with "
          f"the loose box / OpenDP peer = {summary['default_loose_over_opendp']:.3f}")
    stem = "tm1_defaults_quick" if args.quick else "tm1_defaults"
    for path in write_results(args.output_dir, stem, rows, dict(summary=summary,
                                                                rows=rows)):
        print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
