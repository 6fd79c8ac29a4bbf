"""Benchmark conf_int of UserDPLinearRegression: coverage and width vs the oracle.

Run from the repository root::

    python benchmarks/bench_regression_intervals.py            # full (2000 reps/cell)
    python benchmarks/bench_regression_intervals.py --quick    # smoke test (< 1 min)

The interval (spec ``intervals_and_weights.md`` §2.2, §2.5): the fit releases
a private cluster-robust meat from ``ci_share=0.05`` of its budget and
``conf_int`` is the basic parametric bootstrap of the released fit (2000
draws), see ``skuserdp/linear_model/_regression_intervals.py``.

Data law (the same as tests/linear_model/test_linear_regression_intervals.py):
n users with 1..20 rows each (uniform); a user with m rows has rows
``x = μ(m) + 0.7·U`` (U uniform on [-1, 1]³, μ(m) = 0.3·(m − 1)/19·(1, −1,
0.5), so x stays in [-1, 1]³) and targets ``y = xᵀ(0.8, −0.4, 0.3) + 0.1 +
0.5·x₁² + u_i + (0.2 + 0.3|x₂|)·e`` (u_i a user effect uniform on ±0.3, e
uniform with variance 1): misspecified (x₁²), heteroskedastic, clustered, all
bounded (|y| < 3.5). The estimator gets the declared boxes ``[-1, 1]`` and
``(-3.5, 3.5)`` and ``clip_radius = r_max`` (the largest norm of a user's
statistics: nothing is clipped), other parameters default (``alpha="auto"``,
δ = 1e-6).

Truth: the population coefficients of the per-user-mean-weighted least
squares problem, ``E[A_i]⁻¹E[b_i]``, computed in closed form from the law
(not a plug-in).

Oracle width: ``2·z_{0.975}·√(se²_cluster + σ²_noise)``, with ``se_cluster``
the non-private WLS(1/m_i) cluster-robust sandwich of the replication's data
(spec §2.5: ``Ā⁻¹(Σ g_i g_iᵀ/n²)Ā⁻¹·n/(n−1)``, no statsmodels) and
``σ_noise`` the true privacy-noise standard deviation of the cell, measured
by refitting one dataset with fresh noise (``--noise-refits`` times).

Reported per cell (n, ε) and coefficient: coverage of the 95% interval (with
its binomial standard deviation and whether it lies in [0.93, 0.97]), mean
width, mean oracle width and their ratio. Results go to
``benchmarks/results/bench_regression_intervals[_quick].{csv,json}``.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_results  # noqa: E402

from skuserdp.linear_model import UserDPLinearRegression  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
BETA0 = np.array([0.8, -0.4, 0.3])
C0, GAMMA, USER_EFFECT = 0.1, 0.5, 0.3
DIRECTION = np.array([1.0, -1.0, 0.5])
M_MAX = 20
Y_BOX = 3.5
NAMES = ["x0", "x1", "x2", "intercept"]
Z = 1.959963984540054

FULL = dict(reps=2000, noise_refits=200, n_users=(2000, 3000), epsilons=(1.0, 4.0))
QUICK = dict(reps=40, noise_refits=15, n_users=(2000,), epsilons=(1.0, 4.0))


def _shift(m):
    return 0.3 * ((np.asarray(m, dtype=float) - 1) / (M_MAX - 1))[..., None] * DIRECTION


def generate(n_users, rng):
    m = rng.integers(1, M_MAX + 1, size=n_users)
    groups = np.repeat(np.arange(n_users), m)
    N = int(m.sum())
    X = _shift(m)[groups] + 0.7 * rng.uniform(-1, 1, size=(N, 3))
    u = rng.uniform(-USER_EFFECT, USER_EFFECT, size=n_users)[groups]
    s = 0.2 + 0.3 * np.abs(X[:, 1])
    y = (X @ BETA0 + C0 + GAMMA * X[:, 0] ** 2 + u
         + s * rng.uniform(-math.sqrt(3), math.sqrt(3), size=N))
    return X, y, groups


def population_coefficients():
    v = 0.49 / 3
    EA, Eb = np.zeros((4, 4)), np.zeros(4)
    for m in range(1, M_MAX + 1):
        mu = _shift(m)
        Exx = np.outer(mu, mu) + v * np.eye(3)
        Ex1sq = mu[0] ** 2 + v
        Exk_x1sq = mu * Ex1sq
        Exk_x1sq[0] = mu[0] ** 3 + 3 * mu[0] * v
        A = np.block([[Exx, mu[:, None]], [mu[None, :], np.ones((1, 1))]])
        b = np.r_[Exx @ BETA0 + C0 * mu + GAMMA * Exk_x1sq,
                  mu @ BETA0 + C0 + GAMMA * Ex1sq]
        EA += A / M_MAX
        Eb += b / M_MAX
    return np.linalg.solve(EA, Eb)


def cluster_se(X, y, groups):
    """Non-private WLS(1/m_i) fit, clustered by user (spec §2.5)."""
    n = int(groups.max()) + 1
    Xa = np.c_[X, np.ones(len(X))]
    w = 1.0 / np.bincount(groups, minlength=n)[groups]
    A = (Xa * w[:, None]).T @ Xa / n
    b = (Xa * (w * y)[:, None]).sum(axis=0) / n
    beta = np.linalg.solve(A, b)
    G = np.zeros((n, Xa.shape[1]))
    np.add.at(G, groups, Xa * (w * (y - Xa @ beta))[:, None])
    Ainv = np.linalg.inv(A)
    V = Ainv @ (G.T @ G / n ** 2) @ Ainv * n / (n - 1)
    return beta, np.sqrt(np.diag(V))


def estimator(epsilon, random_state):
    b2 = 4.0  # rows in [-1, 1]^3 augmented by 1
    r_max = math.sqrt(b2 * b2 - 1.0 + b2)
    return UserDPLinearRegression(epsilon=epsilon, bounds=(-1.0, 1.0),
                                  target_bounds=(-Y_BOX, Y_BOX), clip_radius=r_max,
                                  random_state=random_state)


def run_cell(n, epsilon, reps, noise_refits, seed):
    truth = population_coefficients()
    ss = np.random.SeedSequence([seed, n, int(epsilon * 1000)])
    data_ss, fit_ss, noise_ss = ss.spawn(3)
    # the true privacy-noise sd: one dataset, the noise redrawn
    X, y, groups = generate(n, np.random.default_rng(noise_ss))
    refits = np.array([
        np.r_[f.coef_, f.intercept_] for f in (
            estimator(epsilon, s).fit(X, y, groups=groups)
            for s in noise_ss.spawn(noise_refits))])
    noise_sd = refits.std(axis=0, ddof=1)
    covered = np.zeros((reps, 4), dtype=bool)
    width = np.zeros((reps, 4))
    oracle = np.zeros((reps, 4))
    bse = np.zeros((reps, 4))
    for r, (dss, fss) in enumerate(zip(data_ss.spawn(reps), fit_ss.spawn(reps))):
        X, y, groups = generate(n, np.random.default_rng(dss))
        est = estimator(epsilon, fss).fit(X, y, groups=groups)
        ci = est.conf_int(0.05)
        covered[r] = (ci[:, 0] <= truth) & (truth <= ci[:, 1])
        width[r] = ci[:, 1] - ci[:, 0]
        bse[r] = est.bse_
        _, se = cluster_se(X, y, groups)
        oracle[r] = 2 * Z * np.sqrt(se ** 2 + noise_sd ** 2)
    rows = []
    for j, name in enumerate(NAMES):
        cov = float(covered[:, j].mean())
        rows.append({
            "n_users": n, "epsilon": epsilon, "coefficient": name,
            "truth": float(truth[j]), "reps": reps, "coverage": round(cov, 4),
            "binomial_sd": round(math.sqrt(0.95 * 0.05 / reps), 4),
            "in_band": bool(0.93 <= cov <= 0.97),
            "mean_width": float(width[:, j].mean()),
            "mean_oracle_width": float(oracle[:, j].mean()),
            "width_ratio": round(float(width[:, j].mean() / oracle[:, j].mean()), 4),
            "noise_sd_true": float(noise_sd[j]),
            "mean_bse": float(bse[:, j].mean()),
        })
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke test (< 1 min); results saved as *_quick")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--noise-refits", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="accepted for uniformity; the cells run serially")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.reps is not None:
        cfg["reps"] = args.reps
    if args.noise_refits is not None:
        cfg["noise_refits"] = args.noise_refits
    t0, c0 = time.time(), time.process_time()
    rows = []
    header = (f"{'n':>5} {'eps':>4} {'coef':>9} {'truth':>8} {'coverage':>8} "
              f"{'±sd':>6} {'band':>5} {'width':>8} {'oracle':>8} {'ratio':>6}")
    print(header)
    for n in cfg["n_users"]:
        for eps in cfg["epsilons"]:
            cell = run_cell(n, eps, cfg["reps"], cfg["noise_refits"], args.seed)
            for r in cell:
                print(f"{r['n_users']:>5} {r['epsilon']:>4} {r['coefficient']:>9} "
                      f"{r['truth']:8.4f} {r['coverage']:8.3f} {r['binomial_sd']:6.3f} "
                      f"{'yes' if r['in_band'] else 'NO':>5} {r['mean_width']:8.4f} "
                      f"{r['mean_oracle_width']:8.4f} {r['width_ratio']:6.3f}",
                      flush=True)
            rows.extend(cell)
    elapsed, cpu = time.time() - t0, time.process_time() - c0
    print(f"wall {elapsed:.0f} s, CPU {cpu:.0f} s")
    stem = "bench_regression_intervals" + ("_quick" if args.quick else "")
    payload = {"config": {k: list(v) if isinstance(v, tuple) else v
                          for k, v in cfg.items()},
               "seed": args.seed, "wall_seconds": elapsed, "cpu_seconds": cpu,
               "results": rows}
    paths = write_results(args.output_dir, stem, rows, payload)
    print("saved", *paths)
    return rows


if __name__ == "__main__":
    main()
