"""Accuracy of the preliminary releases on a random subset of many users.

Run from the repository root::

    python benchmarks/bench_subset.py            # 400k users x 64, ~5 min
    python benchmarks/bench_subset.py --quick    # 150k users x 8, 2 seeds

Above 2^17 users (issue 18), ``bounds="auto"`` learns its box from a random
subset of the users (``bounds_sample_size``) and CoinPress runs its
shrinking steps on one (``coinpress_step_users``); the last release always
uses every user. This script fits each estimator with its defaults twice on
the same data and seed: as shipped (*subset*) and with the subsets turned
off (*all users*: the module constants ``SUBSET_MIN_USERS`` raised above the
number of users, i.e. the code path of fewer users). It reports the mean
l2 error of ``mean_`` against the users' empirical mean, the paired ratio
subset / all users (mean and its standard error over seeds), and the fit
times. Users' means: ``mu + noise`` with ``mu`` uniform in [-2, 2]^d and
noise standard Gaussian, standard exponential (skewed) or Student t with 3
degrees of freedom (heavy tails), one row per user.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

import skuserdp.mean._coinpress as coinpress_module
import skuserdp.mechanisms._private_bounds as bounds_module
from skuserdp.mean import ClipNoiseMeanEstimator, CoinPressMeanEstimator

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ESTIMATORS = {"CoinPress": CoinPressMeanEstimator, "ClipNoise": ClipNoiseMeanEstimator}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=400_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.3, 1.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output-dir", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.features, args.seeds = 150_000, 8, 2
    return args


def users_means(kind, n, d, rng):
    mu = rng.uniform(-2.0, 2.0, d)
    if kind == "gaussian":
        return mu + rng.standard_normal((n, d))
    if kind == "exponential":
        return mu + rng.standard_exponential((n, d))
    return mu + rng.standard_t(3, size=(n, d))


def fit(cls, U, groups, eps, seed, subsets):
    saved = bounds_module.SUBSET_MIN_USERS, coinpress_module.SUBSET_MIN_USERS
    if not subsets:  # the path of fewer users: every release on all of them
        bounds_module.SUBSET_MIN_USERS = U.shape[0]
        coinpress_module.SUBSET_MIN_USERS = U.shape[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            est = cls(epsilon=eps, random_state=seed).fit(U, groups=groups)
            return est.mean_, time.perf_counter() - start
    finally:
        bounds_module.SUBSET_MIN_USERS, coinpress_module.SUBSET_MIN_USERS = saved


def main(argv=None):
    args = parse_args(argv)
    n, d = args.users, args.features
    groups = np.arange(n)
    rows = []
    print(f"{n} users x {d} features, {args.seeds} seeds")
    print(f"{'data':12s} {'eps':>5s} {'estimator':10s} {'err all':>9s} "
          f"{'err subset':>10s} {'ratio':>6s} {'± se':>6s} {'t all':>6s} "
          f"{'t subset':>8s}")
    for kind in ["gaussian", "exponential", "student_t3"]:
        for eps in args.epsilons:
            for name, cls in ESTIMATORS.items():
                errs, times = {True: [], False: []}, {True: [], False: []}
                for seed in range(args.seeds):
                    U = users_means(kind, n, d, np.random.default_rng(1000 + seed))
                    truth = U.mean(axis=0)
                    for subsets in (False, True):
                        mean, seconds = fit(cls, U, groups, eps, seed, subsets)
                        errs[subsets].append(float(np.linalg.norm(mean - truth)))
                        times[subsets].append(seconds)
                ratio = np.array(errs[True]) / np.array(errs[False])
                se = ratio.std(ddof=1) / np.sqrt(ratio.size) if ratio.size > 1 else 0.0
                row = dict(data=kind, epsilon=eps, estimator=name, n_users=n,
                           n_features=d, seeds=args.seeds,
                           error_all_users=float(np.mean(errs[False])),
                           error_subset=float(np.mean(errs[True])),
                           ratio=float(ratio.mean()), ratio_se=float(se),
                           seconds_all_users=float(np.median(times[False])),
                           seconds_subset=float(np.median(times[True])),
                           errors_all_users=errs[False], errors_subset=errs[True])
                rows.append(row)
                print(f"{kind:12s} {eps:5.2g} {name:10s} {row['error_all_users']:9.4g} "
                      f"{row['error_subset']:10.4g} {row['ratio']:6.3f} {se:6.3f} "
                      f"{row['seconds_all_users']:6.2f} {row['seconds_subset']:8.2f}",
                      flush=True)
    stem = "subset_quick" if args.quick else "subset"
    paths = write_results(args.output_dir, stem, rows, {"rows": rows})
    print("saved", *paths)


if __name__ == "__main__":
    main()
