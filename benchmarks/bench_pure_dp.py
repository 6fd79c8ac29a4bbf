"""Benchmark the pure ε-DP person-level estimators (AKMMSU §3 and §5).

Run from the repository root::

    python benchmarks/bench_pure_dp.py            # full size (~5 min on 2 cores)
    python benchmarks/bench_pure_dp.py --quick    # smoke test (< 1 min)

Rows ``X = mu + T`` with i.i.d. Student-t(5) coordinates (k = 4, exact
directional M = 25^(1/4)), m = 10 rows per user, mu uniform in [-R, R]^d with
public R = 10, redrawn every repetition; eps = 1, delta = 0. Methods (all
know R, k, M and m):

* ``alg8`` -- Algorithm 8 (``person_level_mean_pure``, what
  ``ThreadedClipNoiseEstimator(method="pure")`` runs), tight and paper;
* ``per_feature`` -- the 1-D pipeline on each feature with eps/d (what
  ``method="auto"`` runs with ``delta=0``);
* ``clipnoise`` -- pure clip-and-noise (l1 ball) around 0 with the public
  radius ``R sqrt(d) + t`` (``t`` the 4th-moment Markov radius of
  ``bench_heavy_tails.public_radii``).

Reported: median and p90 L2 error to mu, the fraction of runs within
Algorithm 8's certified ``alpha`` (target: >= 1 - beta = 0.9), and the time
per call. Results go to ``benchmarks/results/pure_dp.{csv,json}``.
"""

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import clip_noise_mean, person_level_mean_1d, person_level_mean_pure

from _results import write_results
from bench_heavy_tails import directional_m4, draw_user_means, public_radii
from bench_winsorized import git_state, load_average

RESULTS_DIR = Path(__file__).resolve().parent / "results"
EPSILON, R, K, M_ROWS = 1.0, 10.0, 4.0, 10
M = directional_m4(5.0 / 3.0, 25.0)
GRID = {1: (2000, 20_000), 2: (2000, 8000)}
QUICK_GRID = {1: (2000,), 2: (2000,)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="3 repetitions, n = 2000 only; saved as pure_dp_quick.*")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    args.grid = GRID
    if args.quick:
        args.reps, args.grid = 3, QUICK_GRID
    return args


def run_cell(d, n, args):
    rng = np.random.default_rng([args.seed, d, n])
    t_l2, _ = public_radii(n, d, M_ROWS, M)
    errors = {key: [] for key in ("alg8", "alg8_paper", "per_feature", "clipnoise")}
    within, alphas, times = [], [], {key: 0.0 for key in errors}
    for rep in range(args.reps):
        mu = rng.uniform(-R, R, size=d)
        U = draw_user_means("t5", n, d, M_ROWS, mu, rng)
        seed = int(rng.integers(2**31))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            for key, calibration in (("alg8", "tight"), ("alg8_paper", "paper")):
                t0 = time.perf_counter()
                est, _, info = person_level_mean_pure(
                    U, epsilon=EPSILON, bound=R, moment_bound=M,
                    samples_per_user=M_ROWS, moment_order=K,
                    calibration=calibration, random_state=seed)
                times[key] += time.perf_counter() - t0
                errors[key].append(float(np.linalg.norm(est - mu)))
                if key == "alg8":
                    alphas.append(info["alpha"])
                    within.append(errors[key][-1] <= info["alpha"])
            t0 = time.perf_counter()
            seeds = np.random.SeedSequence(seed).spawn(d)
            est = np.array([person_level_mean_1d(
                U[:, j], epsilon=EPSILON / d, bound=R, moment_order=K, moment_bound=M,
                samples_per_user=M_ROWS, random_state=seeds[j])[0] for j in range(d)])
            times["per_feature"] += time.perf_counter() - t0
            errors["per_feature"].append(float(np.linalg.norm(est - mu)))
        t0 = time.perf_counter()
        est, _ = clip_noise_mean(U, epsilon=EPSILON, delta=0.0,
                                 radius=R * math.sqrt(d) + t_l2, random_state=seed)
        times["clipnoise"] += time.perf_counter() - t0
        errors["clipnoise"].append(float(np.linalg.norm(est - mu)))
    rows = []
    best = np.median(errors["per_feature"])
    for key, errs in errors.items():
        rows.append(dict(d=d, n=n, m=M_ROWS, method=key,
                         median=float(np.median(errs)),
                         p90=float(np.quantile(errs, 0.9)),
                         ratio_to_per_feature=float(np.median(errs) / best),
                         seconds_per_call=times[key] / args.reps,
                         alpha=float(np.median(alphas)) if key == "alg8" else "",
                         within_alpha=float(np.mean(within)) if key == "alg8" else ""))
    return rows


def main(argv=None):
    args = parse_args(argv)
    git_before, load_before = git_state(), load_average()
    t0 = time.perf_counter()
    rows = []
    for d, n_values in args.grid.items():
        for n in n_values:
            t1 = time.perf_counter()
            rows += run_cell(d, n, args)
            print(f"d={d} n={n}: {time.perf_counter() - t1:.1f} s", flush=True)
    total = time.perf_counter() - t0
    print(f"\ntotal {total:.1f} s, {args.reps} repetitions per cell\n")
    print("| d | n | method | median L2 | p90 | / per_feature | s per call "
          "| alpha | within alpha |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        extra = (f"{r['alpha']:.3g} | {r['within_alpha']:.2f}" if r["method"] == "alg8"
                 else "- | -")
        print(f"| {r['d']} | {r['n']} | {r['method']} | {r['median']:.3g} | "
              f"{r['p90']:.3g} | {r['ratio_to_per_feature']:.2f} | "
              f"{r['seconds_per_call']:.2g} | {extra} |")
    stem = "pure_dp_quick" if args.quick else "pure_dp"
    payload = {"params": {"seed": args.seed, "reps": args.reps, "epsilon": EPSILON,
                          "R": R, "k": K, "M": M, "m": M_ROWS,
                          "grid": {str(k): list(v) for k, v in args.grid.items()}},
               "total_seconds": total,
               "git": {"start": git_before, "end": git_state()},
               "load_average_1_5_15min": {"start": load_before, "end": load_average()},
               "results": rows}
    csv_path, json_path = write_results(args.output_dir, stem, rows, payload)
    print(f"\nsaved {csv_path} and {json_path}")


if __name__ == "__main__":
    main()
