"""CoinPress with a learned box: how many centre releases (``n_steps``)?

Run from the repository root::

    python benchmarks/bench_coinpress_steps.py          # ~8 min on 2 CPUs
    python benchmarks/bench_coinpress_steps.py --quick  # smoke run

``CoinPressMeanEstimator(n_steps="auto")`` makes 3 centre releases (two
shrinking steps) when it learns its box (``bounds="auto"``) and the box
contains 0 in every column, and 8 otherwise. A learned box is ``median ±
4·q`` (``q`` a quantile of the users' distances to the median, or ``±
6·median distance``) in every column; its median is a grid point within
about 10 % of its distance to 0, so when the box contains 0 the first ball
is a few times the users' spread whatever their scale. Far from 0 (e.g.
years) the grid error of the median can dominate the box, and a declared
box may be any multiple of the spread: each step shrinks the ball by a
bounded factor, so more steps are needed. This script measures the choice:
every configuration is fitted with the defaults a user would type
(``CoinPressMeanEstimator(epsilon=eps, n_steps=k, random_state=seed)``,
nothing declared) for ``k`` in ``--steps`` and ``"auto"``, on the same data
and seed, and
reports the mean ℓ2 error of ``mean_`` to the users' empirical mean, the
ratio of each ``k``'s mean error to that of ``k = 8`` (printed), and the
mean of the paired per-seed ratios with its standard error (saved; it is
skewed upwards where the errors are pure noise, as for Gaussian users).

Users' means (one row per user): ``mu + noise`` with ``mu`` uniform in
``[-2, 2]^d`` (``far``: in ``[-60, 60]^d``; ``loc300`` and ``loc1e4``: in
``[150, 300]^d`` and ``[5000, 10000]^d``, locations large against the unit
spread, whose learned box does not contain 0) and noise standard Gaussian
(``gaussian``, ``far``, ``loc*``), standard exponential (skewed), Student t
with 3 degrees of freedom (heavy tails), or Gaussian with 10 % of the users
moved by +8 in every coordinate (``mixture``: a second cluster, which
CoinPress clips). ``steps auto`` gives the number ``"auto"`` used. A fit
that refuses (too few users for the box) is reported as such. Results:
``benchmarks/results/coinpress_steps[_quick].{csv,json}``.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from skuserdp.mean import CoinPressMeanEstimator, auto_steps

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
KINDS = ["gaussian", "far", "loc300", "loc1e4", "exponential", "t3", "mixture"]
LOCATIONS = {"loc300": 300.0, "loc1e4": 1e4}
#: (n_users, n_features, epsilon, seeds)
CONFIGS = [
    (2000, 4, 1.0, 10),
    (5000, 4, 1.0, 10),
    (5000, 16, 1.0, 10),
    (50000, 4, 0.3, 10),
    (50000, 4, 1.0, 10),
    (50000, 64, 0.3, 5),
    (50000, 64, 1.0, 5),
    (200000, 16, 1.0, 3),
    (1000000, 64, 1.0, 2),
]
QUICK = [(5000, 4, 1.0, 2), (50000, 16, 1.0, 2)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[2, 3, 4, 8])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output-dir", default=str(RESULTS_DIR))
    return parser.parse_args(argv)


def users_means(kind, n, d, rng):
    if kind in LOCATIONS:
        mu = LOCATIONS[kind] * rng.uniform(0.5, 1.0, d)
    else:
        mu = rng.uniform(-2.0, 2.0, d) * (30.0 if kind == "far" else 1.0)
    if kind == "exponential":
        return mu + rng.standard_exponential((n, d))
    if kind == "t3":
        return mu + rng.standard_t(3, size=(n, d))
    Z = rng.standard_normal((n, d))
    if kind == "mixture":
        Z[: n // 10] += 8.0
    return mu + Z


def fit_error(U, truth, eps, n_steps, seed):
    """Error, fit time and the number of steps ``"auto"`` picks on this box
    (the box does not depend on ``n_steps``: the same seed learns the same
    box, and ``"auto"`` equals the fit with the number it picks, bit for bit:
    tests/mean/test_coinpress.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = CoinPressMeanEstimator(epsilon=eps, n_steps=n_steps,
                                         random_state=seed)
            start = time.perf_counter()
            est.fit(U, groups=np.arange(U.shape[0]))
            seconds = time.perf_counter() - start
        except ValueError:
            return None, None, None
    return (float(np.linalg.norm(est.mean_ - truth)), seconds,
            auto_steps("auto", *est.bounds_))


def main(argv=None):
    args = parse_args(argv)
    steps = sorted(set(args.steps) | {8})
    columns = steps + ["auto"]
    rows = []
    print(f"{'n':>8s} {'d':>3s} {'eps':>4s} {'data':12s} "
          + " ".join(f"{'err k=' + str(k):>10s}" for k in columns)
          + " " + " ".join(f"{'k=' + str(k) + '/8':>10s}" for k in columns if k != 8)
          + f" {'steps auto':>10s}")
    for n, d, eps, seeds in (QUICK if args.quick else CONFIGS):
        for kind in KINDS:
            errs = {k: [] for k in columns}
            times = {k: [] for k in columns}
            picked = []
            for seed in range(seeds):
                U = users_means(kind, n, d, np.random.default_rng(100 + seed))
                truth = U.mean(axis=0)
                for k in steps:
                    err, seconds, auto = fit_error(U, truth, eps, k, seed)
                    errs[k].append(err)
                    times[k].append(seconds)
                if auto is not None:
                    picked.append(auto)
                    if auto not in steps:
                        auto_err = fit_error(U, truth, eps, auto, seed)
                        errs[auto], times[auto] = [None], [None]  # not in the table
                        errs["auto"].append(auto_err[0])
                        times["auto"].append(auto_err[1])
                    else:
                        errs["auto"].append(errs[auto][-1])
                        times["auto"].append(times[auto][-1])
            refused = any(e is None for k in columns for e in errs[k])
            row = dict(n_users=n, n_features=d, epsilon=eps, data=kind, seeds=seeds,
                       refused=refused, auto_steps=sorted(set(picked)))
            cells = []
            for k in columns:
                e = None if refused else np.array(errs[k])
                row[f"error_{k}"] = None if refused else float(e.mean())
                row[f"seconds_{k}"] = None if refused else float(np.median(times[k]))
                cells.append(f"{'refused':>10s}" if refused else f"{e.mean():10.4g}")
            ratios = []
            for k in columns:
                if k == 8:
                    continue
                if refused:
                    row[f"ratio_{k}"] = row[f"ratio_{k}_se"] = None
                    ratios.append(f"{'':>10s}")
                    continue
                r = np.array(errs[k]) / np.array(errs[8])
                se = r.std(ddof=1) / np.sqrt(r.size) if r.size > 1 else 0.0
                row[f"ratio_{k}"], row[f"ratio_{k}_se"] = float(r.mean()), float(se)
                row[f"error_ratio_{k}"] = row[f"error_{k}"] / row["error_8"]
                ratios.append(f"{row[f'error_ratio_{k}']:10.3f}")
            row["errors"] = {str(k): errs[k] for k in columns}
            rows.append(row)
            print(f"{n:8d} {d:3d} {eps:4.1f} {kind:12s} " + " ".join(cells) + " "
                  + " ".join(ratios) + f" {str(sorted(set(picked))):>10s}",
                  flush=True)
    stem = "coinpress_steps_quick" if args.quick else "coinpress_steps"
    paths = write_results(args.output_dir, stem, rows,
                          {"steps": columns, "rows": rows})
    print("saved", *paths)


if __name__ == "__main__":
    main()
