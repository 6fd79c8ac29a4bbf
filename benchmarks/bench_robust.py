"""Robust user-level means against corrupted users (issue 31).

Run from the repository root::

    python benchmarks/bench_robust.py --quick   # < 60 s, 3 repetitions
    python benchmarks/bench_robust.py           # 10 repetitions
    python benchmarks/bench_robust.py --part sgd [--quick]

1,000 users x 10 rows, d = 10, users' means ``mu + 0.5 N(0, I)``, rows
``mu_u + N(0, I)``, ``mu = linspace(-1, 1, 10)`` (``bench_means.py``'s
``make_data``); 0 %, 20 % and 25 % of the users corrupted (all their rows at
``mu + distance e1``) at distance 10, 30, 100, 300, 1000. epsilon = 1,
delta = 1e-6 (``bench_means.py --parts corrupted``'s), the box
``[-100, 100]^d`` and the user radius 4 declared. Error: L2 distance to the
clean population mean, median over repetitions (fresh data each).
Methods: ``UserMeanEstimator`` told ``corrupted_fraction`` (``auto``; the
robust route), the same with ``corrupted_fraction=0`` (``auto_unaware``:
the rule before issue 31 ignored the fraction), CoinPress, the few-users
estimator and ``TrimmedMeanEstimator`` with ``corrupted_fraction=0.25``
on every cell (``trimmed_0.25``) and with ``corrupted_fraction=0``
(``trimmed_0``: no user trimmed). The log-log slope of error vs distance
(10-1000) is reported per method and fraction.

Part ``sgd`` (``--part sgd``): the DP-SGD aggregators on the synthetic
regression of ``bench_regression.py`` (``_regression_data.make_user_regression``),
4,000 users x 10 rows, d = 3, the true coefficient ``true_coefficients(3,
SYNTH_COEF_SEED)`` (norm 2), epsilon = 1, delta = 1e-6, rows in the unit
ball (bounds (-1, 1) declared), targets in [-3, 3], T = 200 (as
``bench_regression.py``'s ``dpsgd_clip``), 10 seeds; clean, and with 10 %
of the users replaced by adversarial ones (every row ``x = e1``, ``y =
-3``). Coefficient error ``||coef_ - beta||`` and every warning raised.

Results: ``benchmarks/results/robust[_quick].{csv,json}`` and
``robust_sgd[_quick].{csv,json}``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from _results import write_results
from bench_means import make_data

RESULTS_DIR = Path(__file__).resolve().parent / "results"
EPS, DELTA, BOUND, RADIUS = 1.0, 1e-6, 100.0, 4.0
FRACTIONS = [0.0, 0.2, 0.25]
DISTANCES = [10.0, 30.0, 100.0, 300.0, 1000.0]


def methods(frac):
    from skuserdp import mean as m
    box = dict(epsilon=EPS, delta=DELTA, bounds=(-BOUND, BOUND))
    return {
        "auto": lambda s: m.UserMeanEstimator(**box, radius=RADIUS,
                                              corrupted_fraction=frac,
                                              random_state=s),
        "auto_unaware": lambda s: m.UserMeanEstimator(**box, radius=RADIUS,
                                                      random_state=s),
        "coinpress": lambda s: m.CoinPressMeanEstimator(**box, random_state=s),
        "few_users": lambda s: m.FewUsersBallEstimator(
            epsilon=EPS, delta=DELTA, radius=RADIUS,
            robustness=max(0.25, frac), random_state=s),
        "trimmed_0.25": lambda s: m.TrimmedMeanEstimator(
            **box, corrupted_fraction=0.25, random_state=s),
        "trimmed_0": lambda s: m.TrimmedMeanEstimator(**box, random_state=s),
    }


def one(frac, dist, rep):
    ss = np.random.SeedSequence([int(frac * 100), int(dist), rep])
    data_seed, *seeds = (int(s.generate_state(1)[0]) for s in ss.spawn(7))
    X, groups, mu, _ = make_data(1000, 10, 10, seed=data_seed,
                                 corrupted_fraction=frac,
                                 corruption_distance=dist)
    out = []
    for (name, make), seed in zip(methods(frac).items(), seeds):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make(seed).fit(X, groups=groups)
        out.append(dict(fraction=frac, distance=dist, rep=rep, method=name,
                        error=float(np.linalg.norm(est.mean_ - mu)),
                        epsilon_spent=float(est.epsilon_),
                        seconds=time.perf_counter() - t0,
                        picked=getattr(est, "method_", "")))
    return out


SGD_AGGREGATORS = {
    "clip": dict(aggregator="clip"),
    "winsorized": dict(aggregator="winsorized", samples_per_user=10),
    "trimmed": dict(aggregator="trimmed"),
    "trimmed_0.1": dict(aggregator="trimmed", corrupted_fraction=0.1),
}


def one_sgd(corrupted, seed):
    import _regression_data as rd
    from bench_regression import SYNTH_COEF_SEED
    from skuserdp.linear_model import UserDPSGDRegressor
    beta = rd.true_coefficients(3, SYNTH_COEF_SEED)
    rng = np.random.default_rng([seed, int(corrupted * 100)])
    X, y, g, _ = rd.make_user_regression(4000, 10, beta, rng)
    B = rd.SYNTH_MODEL["target_bound"]
    if corrupted:
        bad = np.isin(g, np.arange(int(corrupted * 4000)))
        X = X.copy()
        X[bad] = [1.0, 0.0, 0.0]
        y = np.where(bad, -B, y)
    out = []
    for name, kw in SGD_AGGREGATORS.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = UserDPSGDRegressor(
                epsilon=EPS, delta=DELTA, bounds=(-1.0, 1.0),
                target_bounds=(-B, B), max_iter=200, random_state=seed,
                **kw).fit(X, y, groups=g)
        err = float(np.linalg.norm(np.ravel(est.coef_) - beta))
        out.append(dict(corrupted=corrupted, seed=seed, method=name, error=err,
                        beta_norm=float(np.linalg.norm(beta)),
                        worse_than_zero=err >= np.linalg.norm(beta),
                        warned=bool(caught),
                        warnings=" | ".join(f"{w.category.__name__}: "
                                            f"{str(w.message)[:100]}"
                                            for w in caught),
                        epsilon_spent=float(est.epsilon_),
                        seconds=time.perf_counter() - t0))
    return out


def main_sgd(args):
    seeds = 3 if args.quick else 10
    t0 = time.time()
    rows = [r for chunk in Parallel(n_jobs=args.n_jobs)(
        delayed(one_sgd)(c, s) for c in (0.0, 0.1) for s in range(seeds))
        for r in chunk]
    summary = []
    print("| users corrupted | aggregator | median error | max error | fits "
          "with error >= ||beta|| | of those, warned | fits warned |")
    print("|---|---|---|---|---|---|---|")
    for c in (0.0, 0.1):
        for name in SGD_AGGREGATORS:
            rs = [r for r in rows if r["corrupted"] == c and r["method"] == name]
            e = [r["error"] for r in rs]
            bad = [r for r in rs if r["worse_than_zero"]]
            summary.append(dict(corrupted=c, method=name, median=float(np.median(e)),
                                max=float(np.max(e)), worse=len(bad),
                                worse_warned=sum(r["warned"] for r in bad),
                                warned=sum(r["warned"] for r in rs), fits=len(rs)))
            t = summary[-1]
            print(f"| {c:.0%} | {name} | {t['median']:.3g} | {t['max']:.3g} | "
                  f"{t['worse']}/{t['fits']} | {t['worse_warned']} | "
                  f"{t['warned']}/{t['fits']} |")
    print(f"\n||beta|| = {rows[0]['beta_norm']:.3g}; epsilon = {EPS}, delta = "
          f"{DELTA}; {seeds} seeds; {time.time() - t0:.0f} s")
    stem = "robust_sgd_quick" if args.quick else "robust_sgd"
    write_results(args.output_dir, stem, rows,
                  dict(summary=summary, epsilon=EPS, delta=DELTA, seeds=seeds))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--part", choices=["mean", "sgd"], default="mean")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    if args.part == "sgd":
        return main_sgd(args)
    reps = 3 if args.quick else 10
    cells = [(f, d) for f in FRACTIONS for d in (DISTANCES if f else [10.0])]
    t0 = time.time()
    rows = [r for chunk in Parallel(n_jobs=args.n_jobs)(
        delayed(one)(f, d, rep) for f, d in cells for rep in range(reps))
        for r in chunk]
    table, slopes = [], {}
    names = list(methods(0.0))
    for f, d in cells:
        med = {n: float(np.median([r["error"] for r in rows if r["fraction"] == f
                                   and r["distance"] == d and r["method"] == n]))
               for n in names}
        table.append(dict(fraction=f, distance=d, **med))
    for f in FRACTIONS[1:]:
        for n in names:
            e = [t[n] for t in table if t["fraction"] == f]
            slopes[f"{n} at {f:g}"] = float(np.polyfit(np.log(DISTANCES),
                                                       np.log(e), 1)[0])
    print("| corrupted fraction | distance | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for t in table:
        print(f"| {t['fraction']:g} | {t['distance']:g} | "
              + " | ".join(f"{t[n]:.3g}" for n in names) + " |")
    print("\nlog-log slope of error vs distance (10-1000):")
    for k, v in slopes.items():
        print(f"  {k}: {v:+.3f}")
    eps_spent = max(r["epsilon_spent"] for r in rows)
    print(f"\nepsilon = {EPS} (largest spent {eps_spent:.6g}), delta = {DELTA}; "
          f"{reps} repetitions; {time.time() - t0:.0f} s")
    stem = "robust_quick" if args.quick else "robust"
    write_results(args.output_dir, stem, rows,
                  dict(table=table, slopes=slopes, epsilon=EPS, delta=DELTA,
                       repetitions=reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
