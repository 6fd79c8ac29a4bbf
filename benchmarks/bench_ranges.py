"""Users needed by ``bounds="auto"``: joint log2 histogram vs the EM route (issue 28).

Run from the repository root::

    python benchmarks/bench_ranges.py --runs 100  # ~4 min (recorded results)
    python benchmarks/bench_ranges.py --quick     # 40 runs per size

Data (spec ``real_data_means.md`` §3.6): 10 lognormal columns of user means,
``σ_ln = 1``, medians spread over ``1e-3 … 1e6`` (one row per user), ε = 1,
δ = 1e-6, an estimator accounted in zCDP (the default mean estimators and the
linear models with δ > 0). For every number of users and route, the share of
runs in which *all 10* columns get a box that is

* **sane**: no refusal, ``lower ≤ median ≤ upper`` and
  ``max(|lower|, |upper|) ≤ 4·max|x|`` (nothing absurdly wide);
* **useful**: sane and ``lower ≤ q10``, ``upper ≥ q90``;

and the mean share of users inside the box (``coverage``, refusals count 0).
Routes:

* ``em``: the former route, ``private_bounds`` (2 exponential-mechanism
  releases per column) at ε₀ from ``split_for_public_bounds`` with the former
  default zCDP share 0.1, refused when ``learn_box`` then refused (public
  failure bound above 1/2);
* ``em30``: the same at a share of 0.3 (the new route's budget at 1,000 users);
* ``log2``: ``learn_box_for_fit`` as shipped (joint log2 histogram, default
  share from ``default_bounds_share``; refusals count as failures).

Results: ``benchmarks/results/ranges[_quick].{csv,json}``.
"""

import argparse
import warnings
from pathlib import Path

import numpy as np

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mechanisms import (bounds_failure_probability, learn_box_for_fit,
                                 private_bounds)
from skuserdp.mechanisms._private_bounds import default_bounds_share
from skuserdp.privacy import split_for_public_bounds

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SIZES = [100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000,
         15000, 20000]
D = 10
EPS, DELTA = 1.0, 1e-6


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output-dir", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 40
    return args


def make_users(n, rng):
    medians = np.logspace(-3, 6, D)
    return medians * np.exp(rng.normal(0.0, 1.0, size=(n, D)))


def em_box(U, share, seed):
    n, d = U.shape
    eps0 = split_for_public_bounds(EPS, DELTA, share, 2 * d, zcdp=True)[0]
    if min(1.0, d * max(bounds_failure_probability(n, eps0))) > 0.5:
        return None  # learn_box refused
    return private_bounds(U, eps0, random_state=seed)


def log2_box(U, seed):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            lo, hi = learn_box_for_fit("bench", U, epsilon=EPS, delta=DELTA,
                                       share=None, zcdp=True, random_state=seed)[:2]
    except ValueError:
        return None
    return lo, hi


def score(U, box):
    if box is None:
        return False, False, 0.0
    lo, hi = box
    med = np.median(U, axis=0)
    q10, q90 = np.quantile(U, [0.1, 0.9], axis=0)
    big = 4 * np.abs(U).max(axis=0)
    sane = bool(np.all((lo <= med) & (med <= hi)
                       & (np.maximum(abs(lo), abs(hi)) <= big)))
    useful = sane and bool(np.all((lo <= q10) & (hi >= q90)))
    return sane, useful, float(((U >= lo) & (U <= hi)).mean())


def main(argv=None):
    args = parse_args(argv)
    rows = []
    print(f"{'n':>6} {'route':>5} {'share':>5} {'sane':>5} {'useful':>6} "
          f"{'coverage':>8}")
    for n in SIZES:
        share_log2 = default_bounds_share(n, D, epsilon=EPS, delta=DELTA, zcdp=True)
        for route in ("em", "em30", "log2"):
            stats = []
            for r in range(args.runs):
                rng = np.random.default_rng([n, r])
                U = make_users(n, rng)
                seed = 10_000 * n + r
                box = (em_box(U, 0.1, seed) if route == "em" else
                       em_box(U, 0.3, seed) if route == "em30" else log2_box(U, seed))
                stats.append(score(U, box))
            s = np.array(stats, dtype=float)
            row = dict(n_users=n, route=route,
                       share={"em": 0.1, "em30": 0.3, "log2": share_log2}[route],
                       sane=s[:, 0].mean(), useful=s[:, 1].mean(),
                       coverage=s[:, 2].mean(), runs=args.runs)
            rows.append(row)
            print(f"{n:>6} {route:>5} {row['share']:>5.2f} {row['sane']:>5.2f} "
                  f"{row['useful']:>6.2f} {row['coverage']:>8.3f}", flush=True)
    smallest = {}
    for route in ("em", "em30", "log2"):
        for key in ("sane", "useful"):
            ok = [r["n_users"] for r in rows if r["route"] == route and r[key] >= 0.9]
            smallest[f"{route}_{key}"] = min(ok) if ok else None
    print("smallest n with all 10 columns in >= 90% of runs:", smallest)
    stem = "ranges_quick" if args.quick else "ranges"
    write_results(args.output_dir, stem, rows,
                  dict(parameters=dict(runs=args.runs, n_features=D, epsilon=EPS,
                                       delta=DELTA, sizes=SIZES),
                       smallest_n_90=smallest, rows=rows))


if __name__ == "__main__":
    main()
