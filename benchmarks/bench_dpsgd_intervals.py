"""Coverage and width of ``UserDPSGDRegressor(interval="groups")``'s intervals.

Run from the repository root::

    python benchmarks/bench_dpsgd_intervals.py          # 2000 reps per epsilon
    python benchmarks/bench_dpsgd_intervals.py --quick  # smoke test (< 60 s)

The estimator (spec ``intervals_and_weights.md`` §2.7, "DP-SGD
coefficients"): K disjoint groups of users (``n_groups="auto"``: K = 3 at
ε = 1 and K = 11 at ε = 4 for 2000 users), one DP-SGD fit per group at the
full budget, ``coef_`` their mean and ``mean ± t_{K−1}·sd_K/√K``.

Data (every replication a fresh draw): ``--users`` users (default 2000) with
1-9 rows each (uniform), three features uniform on [-1, 1], a user effect
``u_i ~ N(0, 0.3²)`` and row noise ``N(0, 0.5²)``:
``y = x·(1, −0.5, 0.25) + 0.3 + u_i + e_ij``; declared boxes ``[-1, 1]`` for
the features and ``[-5, 5]`` for ``y`` (nothing is clipped). Truth: the
population coefficients of the per-user-mean-weighted model from the
generating law, i.e. ``(1, −0.5, 0.25, 0.3)`` (the linear model is correct,
so every weighting has them). Every other parameter is at its default
(``epsilon`` ∈ {1, 4}, ``delta = 1e-6``).

Reported per ε and coefficient: the coverage of the 95% interval over the
replications with its binomial tolerance (3 sd; the issue's band is
[0.93, 0.97]), the bias and sd of the estimate over replications, the
mean ``bse_``, and the width relative to an oracle: ``2·1.96·√(se²_cl +
σ²_noise)``, ``se_cl`` the non-private cluster-robust standard error of
statsmodels ``WLS`` with weights ``1/m_i`` (``cov_type="cluster"``) on the
same data, and ``σ_noise`` the true noise sd of the released estimator,
measured once per ε by refitting it ``--noise-refits`` times with fresh
seeds on one fixed dataset. The median over replications of the ratio is
reported. Also the share of replications in which a group's plan warned
that it is noisy (``AccuracyWarning``: that group's private clip norm
failed high, its estimate is far off and the interval wide), and the time
per grouped fit (wall and CPU; the machine may be
shared) and per group fit. ``--max-minutes`` caps the wall time per ε: the
replications run are reported with their own binomial tolerance.

Results are printed and saved to
``benchmarks/results/dpsgd_intervals{,_quick}.{csv,json}``.
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import statsmodels.api as sm
from joblib import Parallel, delayed

from skuserdp.exceptions import AccuracyWarning
from skuserdp.linear_model import UserDPSGDRegressor

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
BETA = np.array([1.0, -0.5, 0.25])
B0 = 0.3
TRUTH = np.r_[BETA, B0]
NAMES = ["x0", "x1", "x2", "intercept"]
BOX = dict(bounds=(-1.0, 1.0), target_bounds=(-5.0, 5.0))
Z = 1.959963984540054


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--noise-refits", type=int, default=200)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="stop adding replications of an epsilon after this "
                        "many wall-clock minutes (the replications run are "
                        "reported, with their binomial tolerance)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 8 reps and 8 noise refits per epsilon; "
                        "saved as dpsgd_intervals_quick.*")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.noise_refits = 8, 8
    return args


def panel(n_users, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 10, n_users)
    g = np.repeat(np.arange(n_users), m)
    X = rng.uniform(-1.0, 1.0, (g.size, BETA.size))
    y = (X @ BETA + B0 + rng.normal(0.0, 0.3, n_users)[g]
         + rng.normal(0.0, 0.5, g.size))
    return X, y, g, m


def fit(epsilon, X, y, g, seed):
    """The grouped fit and whether a group's plan warned that it is noisy (an
    AccuracyWarning: that group's private clip norm failed high); any other
    warning is an error."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("error")
        warnings.simplefilter("always", AccuracyWarning)
        reg = UserDPSGDRegressor(epsilon=epsilon, interval="groups",
                                 random_state=seed, **BOX).fit(X, y, groups=g)
    reg.noisy_group_ = bool(record)
    return reg


def cluster_se(X, y, g, m):
    """Non-private cluster-robust WLS(1/m_i) standard errors (coef, then
    intercept)."""
    res = sm.WLS(y, np.column_stack([X, np.ones(len(y))]), weights=1.0 / m[g]).fit(
        cov_type="cluster", cov_kwds={"groups": g})
    return np.asarray(res.bse)


def one_rep(epsilon, n_users, rep):
    X, y, g, m = panel(n_users, 1_000_000 * int(epsilon) + rep)
    t, cpu = time.perf_counter(), time.process_time()
    reg = fit(epsilon, X, y, g, rep)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    lo, hi = reg.conf_int(0.05).T
    est = np.r_[reg.coef_, reg.intercept_]
    return dict(est=est, lo=lo, hi=hi, bse=reg.bse_, se_cl=cluster_se(X, y, g, m),
                seconds=seconds, cpu=cpu, k=reg.n_groups_, noisy=reg.noisy_group_)


def noise_sd(epsilon, n_users, refits, n_jobs):
    """The true noise sd of the released estimator on one fixed dataset."""
    X, y, g, _ = panel(n_users, 7)
    ests = Parallel(n_jobs=n_jobs)(
        delayed(lambda s: (lambda r: np.r_[r.coef_, r.intercept_])(
            fit(epsilon, X, y, g, s)))(10**7 + s) for s in range(refits))
    return np.std(ests, axis=0, ddof=1)


def main(argv=None):
    args = parse_args(argv)
    rows, summary = [], {}
    for eps in args.epsilons:
        t0 = time.perf_counter()
        sigma = noise_sd(eps, args.users, args.noise_refits, args.n_jobs)
        reps, batch = [], 4 * max(1, args.n_jobs)
        while len(reps) < args.reps:
            if (args.max_minutes is not None
                    and time.perf_counter() - t0 > 60 * args.max_minutes):
                break
            todo = range(len(reps), min(args.reps, len(reps) + batch))
            reps += Parallel(n_jobs=args.n_jobs)(
                delayed(one_rep)(eps, args.users, r) for r in todo)
        wall = time.perf_counter() - t0
        n_reps = len(reps)
        est = np.array([r["est"] for r in reps])
        lo = np.array([r["lo"] for r in reps])
        hi = np.array([r["hi"] for r in reps])
        bse = np.array([r["bse"] for r in reps])
        se_cl = np.array([r["se_cl"] for r in reps])
        k = reps[0]["k"]
        noisy = float(np.mean([r["noisy"] for r in reps]))
        per_fit = float(np.median([r["seconds"] for r in reps]))
        per_fit_cpu = float(np.median([r["cpu"] for r in reps]))
        cover = ((lo <= TRUTH) & (TRUTH <= hi)).mean(axis=0)
        tol = 3 * math.sqrt(0.95 * 0.05 / n_reps)
        oracle = 2 * Z * np.sqrt(se_cl ** 2 + sigma ** 2)
        ratio = np.median((hi - lo) / oracle, axis=0)
        for j, name in enumerate(NAMES):
            rows.append(dict(
                epsilon=eps, users=args.users, n_groups=k, reps=n_reps,
                coefficient=name, truth=TRUTH[j], coverage=round(cover[j], 4),
                tolerance_3sd=round(tol, 4),
                in_band_093_097=bool(0.93 <= cover[j] <= 0.97),
                bias=float(est[:, j].mean() - TRUTH[j]),
                sd_estimate=float(est[:, j].std(ddof=1)),
                mean_bse=float(bse[:, j].mean()),
                median_se_cluster=float(np.median(se_cl[:, j])),
                noise_sd=float(sigma[j]),
                width_over_oracle=round(float(ratio[j]), 3),
                seconds_per_grouped_fit=round(per_fit, 4),
                seconds_per_group_fit=round(per_fit / k, 4),
                cpu_seconds_per_grouped_fit=round(per_fit_cpu, 4),
                share_reps_with_noisy_group=round(noisy, 4)))
        summary[str(eps)] = dict(n_groups=k, reps=n_reps, wall_seconds=round(wall, 1),
                                 share_reps_with_noisy_group=noisy,
                                 seconds_per_grouped_fit=per_fit,
                                 cpu_seconds_per_grouped_fit=per_fit_cpu)
    header = (f"{'eps':>4} {'K':>3} {'coef':>9} {'cover':>6} {'±3sd':>6} "
              f"{'bias':>8} {'sd':>7} {'bse':>7} {'se_cl':>7} {'noise':>7} "
              f"{'w/orc':>6} {'s/fit':>6} {'cpu/fit':>7}")
    print(header)
    for r in rows:
        print(f"{r['epsilon']:>4g} {r['n_groups']:>3} {r['coefficient']:>9} "
              f"{r['coverage']:>6.3f} {r['tolerance_3sd']:>6.3f} {r['bias']:>8.4f} "
              f"{r['sd_estimate']:>7.4f} {r['mean_bse']:>7.4f} "
              f"{r['median_se_cluster']:>7.4f} {r['noise_sd']:>7.4f} "
              f"{r['width_over_oracle']:>6.2f} {r['seconds_per_grouped_fit']:>6.3f} "
              f"{r['cpu_seconds_per_grouped_fit']:>7.3f}")
    print(f"{args.users} users; s/fit, cpu/fit: median wall and CPU seconds of one "
          "grouped fit (K group fits); "
          + "; ".join(f"eps {e}: {s['reps']} replications, {s['wall_seconds']} s, "
                      f"{s['share_reps_with_noisy_group']:.3f} of them with a group "
                      "whose plan warned (noisy)" for e, s in summary.items()))
    stem = "dpsgd_intervals_quick" if args.quick else "dpsgd_intervals"
    paths = write_results(args.output_dir, stem, rows,
                          dict(args={k: (str(v) if isinstance(v, Path) else v)
                                     for k, v in vars(args).items()},
                               summary=summary, rows=rows))
    print("saved", *paths)
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
