"""Benchmark ThreadedClipNoise (AKMMSU Algorithm 4) on heavy-tailed data.

Run from the repository root::

    python benchmarks/bench_heavy_tails.py            # full size (~2-3 min, 2 cores)
    python benchmarks/bench_heavy_tails.py --quick    # smoke test (< 30 s)

Three parts, one per target of the issue:

1. ``heavy`` -- rows ``X = mu + T`` with i.i.d. coordinates of ``T``: Student-t
   with 5 degrees of freedom (``t5``) or a symmetrised Lomax with tail index
   4.5 (``lomax4.5``, ``sign * rng.pareto(4.5)``). Both have k = 4 bounded
   moments; the directional bound M is exact (see ``directional_m4``).
   ``mu`` is uniform in ``[-R, R]^d`` with public R = 10, redrawn every
   repetition. Per-user means are the means of m rows simulated exactly.
   Grid: d in {1, 10}, m in {10, 100}, n in {2000, 10000}; (eps, delta) =
   (1, 1e-6). Methods (all know R, k, M and m): ``person_level_mean`` (tight),
   ``clip_noise_mean`` (centre 0, radius ``R sqrt(d) + t``), ``winsorized_mean``
   (box ``R + t_coord``, tau = ``t`` and tau = "auto"); ``t`` and ``t_coord``
   are the k-th-moment Markov radii of ``public_radii``. Target: median L2
   error of ThreadedClipNoise <= 0.5x the best competitor's.
2. ``gaussian`` -- rows N(mu, I) (user means drawn exactly as
   ``mu + N(0, I/m)``), same grid, k = 4 with the exact M = 3^(1/4); the
   WinsorizedMean also gets tau="sub_gaussian" (sigma = 1). Reported: the
   ratio ThreadedClipNoise / best WinsorizedMean.
3. ``calibration="paper"`` for ThreadedClipNoise in the t5, d = 10, m = 100
   cells (part ``heavy``, method ``tcn_paper``).

The tables are printed and saved as CSV (one row per cell and method, column
``part``) and JSON in ``benchmarks/results/``.
"""

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np

from skuserdp.mean import (
    clip_noise_mean,
    person_level_mean,
    person_level_mean_1d,
    winsorized_mean,
)

# Siblings (on sys.path when run as a file)
from _results import write_results
from bench_winsorized import clip_noise_variance, git_state, load_average

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGET = 0.5
EPSILON, DELTA, R = 1.0, 1e-6, 10.0
K = 4.0
LOMAX_ALPHA = 4.5
GRID = dict(d=(1, 10), m=(10, 100), n=(2000, 10_000))
PAPER_CELLS = {("t5", 10, 100, 2000), ("t5", 10, 100, 10_000)}


def directional_m4(e2, e4):
    """Exact max over unit v of (E<T, v>^4)^(1/4), i.i.d. symmetric coordinates.

    E<T, v>^4 = s E T^4 + 3 (1 - s) (E T^2)^2 with s = sum v_i^4 in [1/d, 1],
    linear in s, so the maximum is max(E T^4, 3 (E T^2)^2) whatever d.
    """
    return max(e4, 3.0 * e2 ** 2) ** 0.25


def lomax_moments(a):
    """E X^2 and E X^4 of sign * Lomax(a) (numpy's ``pareto``)."""
    e2 = 2.0 / ((a - 1) * (a - 2))
    e4 = 24.0 / ((a - 1) * (a - 2) * (a - 3) * (a - 4))
    return e2, e4


DISTS = {
    # t5: E T^2 = 5/3, E T^4 = 3 nu^2 / ((nu - 2)(nu - 4)) = 25 -> M = 25^(1/4)
    "t5": dict(part="heavy", M=directional_m4(5.0 / 3.0, 25.0), var=5.0 / 3.0),
    "lomax4.5": dict(part="heavy", M=directional_m4(*lomax_moments(LOMAX_ALPHA)),
                     var=lomax_moments(LOMAX_ALPHA)[0]),
    # N(0, 1): E Z^4 = 3 -> M = 3^(1/4)
    "gaussian": dict(part="gaussian", M=directional_m4(1.0, 3.0), var=1.0),
}


def public_radii(n, d, m, M):
    """Public deviation radii of a user mean around mu (rows: k = 4, bound M).

    For a mean of m i.i.d. rows, E<xbar - mu, v>^4 <= M^4 (3m - 2) / m^3 and
    E<xbar - mu, v>^2 <= M^2 / m. Per coordinate, Markov on the 4th power
    (union over the n d coordinates, failure 1/(n d) each) or Chebyshev;
    in l2, E||xbar - mu||^4 <= d^2 max_j E Z_j^4 (Cauchy-Schwarz) and
    E||xbar - mu||^2 <= d M^2 / m, failure 1/n per user. Returns the smaller
    of the two in each case: ``(t_l2, t_coord)``.
    """
    m4 = M ** 4 * (3 * m - 2) / m ** 3
    t_l2 = min((n * d * d * m4) ** 0.25, M * math.sqrt(d * n / m))
    t_coord = min((n * d * m4) ** 0.25, M * math.sqrt(d * n / m))
    return t_l2, t_coord


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=30,
                        help="repetitions per cell (data and mu redrawn)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true",
        help="smoke test: 3 repetitions, n = 2000 only; results are saved as "
        "heavy_tails_quick.{csv,json}")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR,
                        help="where to save the CSV and JSON "
                        "(default: benchmarks/results)")
    args = parser.parse_args(argv)
    args.n_values = GRID["n"]
    if args.quick:
        args.reps, args.n_values = 3, (2000,)
    if args.reps < 1:
        parser.error("--reps must be positive")
    return args


def draw_user_means(dist, n, d, m, mu, rng):
    if dist == "gaussian":
        return mu + rng.standard_normal((n, d)) / math.sqrt(m)
    U = np.empty((n, d))
    chunk = max(1, 2_000_000 // (m * d))
    for s in range(0, n, chunk):
        k = min(chunk, n - s)
        if dist == "t5":
            T = rng.standard_t(5, size=(k, m, d))
        else:
            T = rng.pareto(LOMAX_ALPHA, size=(k, m, d))
            T *= rng.choice((-1.0, 1.0), size=(k, m, d))
        U[s:s + k] = mu + T.mean(axis=1)
    return U


def methods_for(dist, n, d, m):
    M = DISTS[dist]["M"]
    t_l2, t_coord = public_radii(n, d, m, M)
    radius, box = R * math.sqrt(d) + t_l2, R + t_coord
    common = dict(epsilon=EPSILON, delta=DELTA)

    def tcn(calibration, box=None):
        # What ThreadedClipNoiseEstimator runs: the 1-D pipeline for one
        # feature, Algorithm 4 otherwise (with bound=box when declared).
        def release(U, seed):
            if U.shape[1] == 1:
                mean, _, info = person_level_mean_1d(
                    U[:, 0], moment_order=K, moment_bound=M, samples_per_user=m,
                    calibration=calibration, random_state=seed, **common)
                return np.array([mean]), {"final_radius": info["radius"],
                                          "layers": 0, "coarse_failed": 0}
            mean, _, info = person_level_mean(
                U, moment_order=K, moment_bound=M, samples_per_user=m, bound=box,
                calibration=calibration, random_state=seed, **common)
            return mean, {"final_radius": info["final_radius"],
                          "layers": len(info["radii"]),
                          "coarse_failed": int(np.sum(info["coarse_failed"]))}
        return release

    def clip(U, seed):
        mean, _ = clip_noise_mean(U, radius=radius, center=None, random_state=seed,
                                  **common)
        return mean, {}

    def wins(tau, **kw):
        def release(U, seed):
            mean, _, tau_used = winsorized_mean(U, tau=tau, bound=box,
                                                random_state=seed, **kw, **common)
            return mean, {"tau": tau_used}
        return release

    out = [("tcn_tight", "k, M, m (no box)", tcn("tight"))]
    if d > 1:
        out.append(("tcn_box", f"k, M, m, box R = {R:g}", tcn("tight", box=R)))
    if (dist, d, m, n) in PAPER_CELLS:
        out.append(("tcn_paper", "k, M, m (no box)", tcn("paper")))
    out += [
        ("clipnoise", f"ball centre 0, radius R*sqrt(d) + t = {radius:.3g}", clip),
        ("winsorized_pub", f"box {box:.3g}, tau = t = {t_l2:.3g}", wins(t_l2)),
        ("winsorized_auto", f"box {box:.3g}, tau auto", wins("auto")),
    ]
    if dist == "gaussian":
        out.append(("winsorized_subg", f"box {box:.3g}, tau sub_gaussian(1)",
                    wins("sub_gaussian", sub_gaussian_sigma=1.0,
                         samples_per_user=m)))
    facts = dict(M=M, t_l2=t_l2, t_coord=t_coord, clip_radius=radius, box=box)
    return out, facts


def run_cell(dist, d, m, n, args, cell_id):
    methods, facts = methods_for(dist, n, d, m)
    errs = {name: [] for name, _, _ in methods}
    errs_um = {name: [] for name, _, _ in methods}
    extra = {name: [] for name, _, _ in methods}
    times = {name: 0.0 for name, _, _ in methods}
    warns = {name: {} for name, _, _ in methods}
    sampling = []
    t_data = 0.0
    for r in range(args.reps):
        ss = np.random.SeedSequence([args.seed, cell_id, r])
        data_seed, method_seed = ss.spawn(2)
        rng = np.random.default_rng(data_seed)
        t0 = time.perf_counter()
        mu = rng.uniform(-R, R, d)
        U = draw_user_means(dist, n, d, m, mu, rng)
        t_data += time.perf_counter() - t0
        ubar = U.mean(axis=0)
        sampling.append(float(np.linalg.norm(ubar - mu)))
        for name, _, release in methods:
            seed = int(method_seed.generate_state(1)[0])  # common across methods
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                mean, info = release(U, seed)
            times[name] += time.perf_counter() - t0
            for w in caught:
                key = f"{w.category.__name__}: {str(w.message)[:70]}"
                warns[name][key] = warns[name].get(key, 0) + 1
            errs[name].append(float(np.linalg.norm(mean - mu)))
            errs_um[name].append(float(np.linalg.norm(mean - ubar)))
            extra[name].append(info)
    clip_rms = math.sqrt(clip_noise_variance(n, d, facts["clip_radius"], EPSILON,
                                             DELTA))
    rows = []
    for name, knowledge, _ in methods:
        e, eu = np.array(errs[name]), np.array(errs_um[name])
        row = {
            "part": DISTS[dist]["part"], "dist": dist, "d": d, "m": m, "n": n,
            "method": name, "knowledge": knowledge, "reps": args.reps,
            "err_median": float(np.median(e)), "err_p90": float(np.quantile(e, 0.9)),
            "err_um_median": float(np.median(eu)),
            "err_um_p90": float(np.quantile(eu, 0.9)),
            "sampling_err_median": float(np.median(sampling)),
            "sampling_err_expected": math.sqrt(d * DISTS[dist]["var"] / (n * m)),
            "time_per_call_s": times[name] / args.reps,
            "warnings": "; ".join(f"{k} (x{v})" for k, v in warns[name].items()),
            **{f"public_{k}": v for k, v in facts.items()},
        }
        if name == "clipnoise":
            row["analytic_noise_rms"] = clip_rms
            row["analytic_formula"] = (2 * facts["clip_radius"] * math.sqrt(d)
                                       * math.sqrt(2 * math.log(1.25 / DELTA))
                                       / (n * EPSILON))
        for key in ("final_radius", "layers", "coarse_failed", "tau"):
            vals = [x[key] for x in extra[name] if key in x]
            if vals:
                row[f"{key}_median"] = float(np.median(vals))
                if key == "coarse_failed":
                    row["coarse_failed_max"] = int(np.max(vals))
        rows.append(row)
    return rows, t_data


def summarise(rows):
    """One row per cell: ThreadedClipNoise / best competitor (median errors)."""
    cells = {}
    for r in rows:
        cells.setdefault((r["dist"], r["d"], r["m"], r["n"]), {})[r["method"]] = r
    out = []
    for (dist, d, m, n), by in cells.items():
        # ThreadedClipNoise with the same public information as the
        # competitors: the box R where it uses it (d > 1).
        tcn = by.get("tcn_box", by["tcn_tight"])
        comp = [k for k in by if not k.startswith("tcn")]
        if dist == "gaussian":
            comp = [k for k in comp if k.startswith("winsorized")]
        best = min(comp, key=lambda k: by[k]["err_median"])
        best_um = min(comp, key=lambda k: by[k]["err_um_median"])
        ratio = tcn["err_median"] / by[best]["err_median"]
        row = {
            "part": f"{DISTS[dist]['part']}_ratio", "dist": dist, "d": d, "m": m,
            "n": n, "best_competitor": best,
            "ratio_median": ratio,
            "ratio_p90": tcn["err_p90"] / min(by[k]["err_p90"] for k in comp),
            "ratio_um_median": tcn["err_um_median"] / by[best_um]["err_um_median"],
            "target_met": bool(ratio <= TARGET) if dist != "gaussian" else None,
        }
        if "tcn_box" in by:
            row["box_over_no_box"] = (by["tcn_box"]["err_median"]
                                      / by["tcn_tight"]["err_median"])
        if "tcn_paper" in by:
            row["paper_over_tight"] = by["tcn_paper"]["err_median"] / tcn["err_median"]
        out.append(row)
    return out


def _g(x, fmt=".3g"):
    return "-" if x is None or x == "" else format(x, fmt)


def format_errors(rows, part):
    lines = ["| dist | d | m | n | method | err median | err p90 | err to ū median "
             "| err to ū p90 | τ / final ρ (median) | ms / call | warnings |",
             "|---" * 12 + "|"]
    for r in rows:
        if r["part"] != part:
            continue
        rad = r.get("tau_median", r.get("final_radius_median"))
        lines.append(
            f"| {r['dist']} | {r['d']} | {r['m']} | {r['n']} | {r['method']} "
            f"| {_g(r['err_median'])} | {_g(r['err_p90'])} "
            f"| {_g(r['err_um_median'])} | {_g(r['err_um_p90'])} | {_g(rad)} "
            f"| {r['time_per_call_s'] * 1e3:.1f} | {r['warnings'] or '-'} |")
    return "\n".join(lines)


def format_ratios(summary, part):
    lines = ["| dist | d | m | n | best competitor | TCN / best (median) "
             "| TCN / best (p90) | TCN / best (to ū, median) | box / no box "
             "| paper / tight | ≤ 0.5 |", "|---" * 11 + "|"]
    for s in summary:
        if s["part"] != part:
            continue
        met = {True: "yes", False: "**no**", None: "-"}[s["target_met"]]
        lines.append(
            f"| {s['dist']} | {s['d']} | {s['m']} | {s['n']} | {s['best_competitor']} "
            f"| {s['ratio_median']:.3g} | {s['ratio_p90']:.3g} "
            f"| {s['ratio_um_median']:.3g} | {_g(s.get('box_over_no_box'))} "
            f"| {_g(s.get('paper_over_tight'))} | {met} |")
    return "\n".join(lines)


def format_checks(rows):
    lines = ["| dist | d | m | n | sampling err (median) | expected √(dσ²/(nm)) "
             "| ClipNoise radius | ClipNoise err to ū (median) | analytic noise rms "
             "| 2ρ√d√(2ln(1.25/δ))/(nε) |", "|---" * 10 + "|"]
    for r in rows:
        if r["method"] != "clipnoise":
            continue
        lines.append(
            f"| {r['dist']} | {r['d']} | {r['m']} | {r['n']} "
            f"| {_g(r['sampling_err_median'])} | {_g(r['sampling_err_expected'])} "
            f"| {_g(r['public_clip_radius'])} | {_g(r['err_um_median'])} "
            f"| {_g(r['analytic_noise_rms'])} | {_g(r['analytic_formula'])} |")
    return "\n".join(lines)


def save(rows, summary, args, git_before, load_before, total_s):
    stem = "heavy_tails_quick" if args.quick else "heavy_tails"
    payload = {
        "params": {"seed": args.seed, "quick": args.quick, "reps": args.reps,
                   "epsilon": EPSILON, "delta": DELTA, "R": R, "moment_order": K,
                   "lomax_alpha": LOMAX_ALPHA,
                   "grid": {**GRID, "n": list(args.n_values)},
                   "moment_bounds": {k: v["M"] for k, v in DISTS.items()},
                   "paper_cells": sorted(PAPER_CELLS)},
        "targets": {"heavy": f"median L2 error to mu: TCN / best competitor <= "
                             f"{TARGET}",
                    "gaussian": "report TCN / best WinsorizedMean"},
        "total_seconds": total_s,
        "git": {"start": git_before, "end": git_state()},
        "load_average_1_5_15min": {"start": load_before, "end": load_average()},
        "results": {"cells": rows, "ratios": summary},
    }
    return write_results(args.output_dir, stem, rows + summary, payload)


def main(argv=None):
    args = parse_args(argv)
    git_before, load_before = git_state(), load_average()
    t0 = time.perf_counter()
    rows, cell_id = [], 0
    for dist in DISTS:
        for d in GRID["d"]:
            for m in GRID["m"]:
                for n in args.n_values:
                    t1 = time.perf_counter()
                    cell_rows, t_data = run_cell(dist, d, m, n, args, cell_id)
                    rows += cell_rows
                    cell_id += 1
                    print(f"{dist} d={d} m={m} n={n}: "
                          f"{time.perf_counter() - t1:.1f} s (data {t_data:.1f} s)",
                          flush=True)
    summary = summarise(rows)
    total = time.perf_counter() - t0
    print(f"\ntotal {total:.1f} s, {args.reps} repetitions per cell\n")
    print("1. Heavy tails: L2 errors\n")
    print(format_errors(rows, "heavy"))
    print("\nThreadedClipNoise / best competitor\n")
    print(format_ratios(summary, "heavy_ratio"))
    print("\n2. Gaussian rows: L2 errors\n")
    print(format_errors(rows, "gaussian"))
    print("\nThreadedClipNoise / best WinsorizedMean\n")
    print(format_ratios(summary, "gaussian_ratio"))
    print("\nSanity checks (ClipNoise noise, sampling error)\n")
    print(format_checks(rows))
    missed = [s for s in summary if s["target_met"] is False]
    print()
    for s in missed:
        print(f"target missed: {s['dist']} d={s['d']} m={s['m']} n={s['n']}: "
              f"TCN / {s['best_competitor']} = {s['ratio_median']:.3g} > {TARGET}")
    met = sum(s["target_met"] is True for s in summary)
    print(f"heavy-tail target met in {met}/{met + len(missed)} cells")
    csv_path, json_path = save(rows, summary, args, git_before, load_before, total)
    print(f"\nsaved {csv_path} and {json_path}")


if __name__ == "__main__":
    main()
