"""Peak memory and time of ``UserDPLinearRegression.fit`` (issue 15, part 3).

Run from the repository root::

    python benchmarks/bench_linear_regression_memory.py          # 1M x 20, 20k users
    python benchmarks/bench_linear_regression_memory.py --quick  # 100k x 20, 2k users
    python benchmarks/bench_linear_regression_memory.py --dense  # + the old dense path

Acceptance (from the issue): the peak memory of ``fit`` on 1M rows x 20
features (float64, 20k users x 50 rows) is at most 3x the size of ``X``, and
its time at most 5x one ``skuserdp.user_means`` pass on the same data.

Every case runs in a fresh subprocess, which

1. builds ``X`` (standard normal / sqrt(d), generated in place), ``y`` and
   the user ids (every user has ``rows / users`` rows; *shuffled*: users
   interleaved, *grouped*: each user's rows contiguous);
2. reads its current resident set size (``/proc/self/statm``) as the
   baseline, and checks that the peak so far (``ru_maxrss``) does not exceed
   it by more than 1 MiB (so the baseline hides no earlier peak);
3. fits once and reads ``resource.getrusage(RUSAGE_SELF).ru_maxrss``: the
   **peak RSS increase** is ``ru_maxrss − baseline``; its ratio to
   ``X.nbytes`` is the acceptance number. The same fit is repeated under
   ``tracemalloc`` (numpy's allocations) for a second measure;
4. times ``--repeats`` fits and ``--repeats`` ``user_means(X, groups)`` calls
   (after one warm-up each; median and min of ``time.perf_counter``).

A second table compares the coefficient error of ``alpha="auto"`` (AdaSSP's
adaptive ridge, 10 % of the budget on the smallest eigenvalue) with the
previous default, the fixed ridge ``σ√(2p)`` of a release with the whole
budget (reproduced exactly with a numeric ``alpha``): synthetic panels of
``--ridge-users`` users x 10 rows, 5 features uniform in the box
[−1, 1]/√5, y = x·w + 0.1 + N(0, 0.1²) clipped to [−1, 1], ε = 1,
δ = 1e-6, ``--ridge-reps`` repetitions; median ``‖coef − w‖₂``.

``--dense`` adds the previous implementation (all rows' products
``X̃[:, i]·X̃[:, j]``, then a sparse user-averaging matrix) for the peak
memory, fitted once with the same release, as a before/after comparison.
Results are printed and saved to ``benchmarks/results/`` as
``linear_regression_memory{,_quick}.{csv,json}``.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MEMORY_TARGET = 3.0
TIME_TARGET = 5.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dense", action="store_true",
                        help="also measure the previous dense implementation")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 100k rows x 20 features x 2k users, 2 "
                        "repeats; saved as linear_regression_memory_quick.*")
    parser.add_argument("--ridge-users", type=int, nargs="+",
                        default=[500, 2000, 10_000, 50_000])
    parser.add_argument("--ridge-reps", type=int, default=30)
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.features, args.users, args.repeats = 100_000, 20, 2_000, 2
        args.ridge_users, args.ridge_reps = [500, 10_000], 5
    if args.users < 1 or args.rows % args.users:
        parser.error("--rows must be a multiple of --users (equal rows per user)")
    return args


# ------------------------------------------------------------------ child
def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _make_data(rows, features, users, seed, layout):
    rng = np.random.default_rng(seed)
    X = np.empty((rows, features))
    rng.standard_normal(out=X)
    X *= 1.0 / np.sqrt(features)
    y = np.empty(rows)
    rng.standard_normal(out=y)
    y *= 0.5
    groups = np.repeat(np.arange(users), rows // users)
    if layout == "shuffled":
        rng.shuffle(groups)
    return X, y, groups


def _dense_fit(est, X, y, groups):
    """The previous fit: dense per-row products, then the same release."""
    import math

    from skuserdp.linear_model._base import user_averaging_matrix
    from skuserdp.linear_model._linear_regression import _unpack, _vech_layout
    from skuserdp.mean import clip_noise_from_plan, plan_clip_noise
    from skuserdp.privacy import ApproxDP
    from skuserdp.users import check_groups

    codes, labels = check_groups(groups, X.shape[0])
    n_users = labels.shape[0]
    Xa = est._augment(X)
    yc = np.clip(y, -1.0, 1.0)  # targets in box units
    p = Xa.shape[1]
    rows, cols, scale = _vech_layout(p, True)
    A = user_averaging_matrix(codes, n_users)
    products = Xa[:, rows] * Xa[:, cols] * scale
    V = np.hstack([A @ products, A @ (Xa * yc[:, None])])
    plan = plan_clip_noise(n_users, V.shape[1], budget=ApproxDP(1.0, 1e-6),
                           radius=est._max_radius())
    released = clip_noise_from_plan(V, plan, random_state=0)
    S, b = _unpack(released, p, True)
    return np.linalg.lstsq(S + math.sqrt(2 * p * plan.noise_variance) * np.eye(p),
                           b, rcond=None)[0]


def _timeit(func, repeats):
    func()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times


def child(spec):
    import tracemalloc

    from skuserdp.linear_model import UserDPLinearRegression
    from skuserdp.users import user_means

    X, y, groups = _make_data(spec["rows"], spec["features"], spec["users"],
                              spec["seed"], spec["layout"])
    # the public boxes the dense emulation assumes (rows of sd 1/sqrt(d)
    # per feature, targets of sd 0.5)
    box = dict(bounds=(-1.0, 1.0), target_bounds=(-1.0, 1.0))
    est = UserDPLinearRegression(epsilon=1.0, delta=1e-6, random_state=0, **box)
    if spec["case"] == "dense":
        def fit():
            return _dense_fit(est, X, y, groups)
    else:
        def fit():
            return est.fit(X, y, groups=groups)
    baseline = _rss_bytes()
    maxrss_before = _maxrss_bytes()
    start = time.perf_counter()
    fit()
    first_fit = time.perf_counter() - start
    peak = _maxrss_bytes()
    out = {
        "rss_baseline": baseline,
        "maxrss_before_fit": maxrss_before,
        "maxrss_after_fit": peak,
        "peak_increase": peak - baseline,
        "x_bytes": X.nbytes,
        "first_fit_s": first_fit,
    }
    tracemalloc.start()
    fit()
    out["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if spec["case"] != "dense":
        out["fit_times_s"] = _timeit(fit, spec["repeats"])
        out["user_means_times_s"] = _timeit(lambda: user_means(X, groups),
                                            spec["repeats"])
        out["alpha_fixed_times_s"] = _timeit(
            lambda: UserDPLinearRegression(epsilon=1.0, delta=1e-6, alpha=0.01,
                                           random_state=0, **box).fit(
                X, y, groups=groups),
            spec["repeats"])
        out["alpha"] = est.alpha_
        out["epsilon_spent"] = est.epsilon_
        out["stages_s"] = _stages(est, X, y, groups, spec["repeats"])
    print(json.dumps(out))


def _stages(est, X, y, groups, repeats):
    """Median time of each stage of ``fit`` (private helpers, same calls)."""
    from skuserdp.linear_model._linear_regression import min_eigenvalue_from_plan
    from skuserdp.mean import clip_noise_from_plan

    from skuserdp.linear_model._base import PublicScale

    Xv, yv, codes, n_users = est._validate_supervised(X, y, groups)
    # the fitted (declared) boxes: the statistics in their units
    statistics = est._user_statistics(PublicScale(*est.bounds_, *est.target_bounds_))
    V = statistics(Xv, yv, codes, n_users)
    p = X.shape[1] + 1
    plan, eig = est._plan(n_users, p, V.shape[1], est._max_radius(), est.epsilon)
    stages = {
        "validate X, y, groups": lambda: est._validate_supervised(X, y, groups),
        "streamed statistics (this issue)":
            lambda: statistics(Xv, yv, codes, n_users),
        "eigenvalue release (this issue)": lambda: min_eigenvalue_from_plan(
            V, eig, clip_radius=plan.ball, norm=plan.norm,
            drop_last_diagonal=True, random_state=0),
        "statistics release (clip_noise_from_plan)":
            lambda: clip_noise_from_plan(V, plan, random_state=0),
    }
    return {name: float(np.median(_timeit(f, repeats)))
            for name, f in stages.items()}


# ----------------------------------------------------------------- parent
def run_case(args, case, layout):
    spec = dict(rows=args.rows, features=args.features, users=args.users,
                seed=args.seed, layout=layout, case=case, repeats=args.repeats)
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child {case}/{layout} failed:\n{proc.stderr}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    hidden = res["maxrss_before_fit"] - res["rss_baseline"]
    if hidden > 2 ** 20:
        raise RuntimeError(f"{case}/{layout}: the data creation peaked {hidden} "
                           "bytes above the baseline; the measure would hide it")
    row = {
        "case": case,
        "layout": layout,
        "rows": args.rows,
        "features": args.features,
        "users": args.users,
        "x_mib": res["x_bytes"] / 2 ** 20,
        "rss_baseline_mib": res["rss_baseline"] / 2 ** 20,
        "peak_increase_mib": res["peak_increase"] / 2 ** 20,
        "peak_ratio_to_x": res["peak_increase"] / res["x_bytes"],
        "tracemalloc_peak_mib": res["tracemalloc_peak"] / 2 ** 20,
        "tracemalloc_ratio_to_x": res["tracemalloc_peak"] / res["x_bytes"],
        "first_fit_s": res["first_fit_s"],
    }
    row["memory_target_met"] = bool(row["peak_ratio_to_x"] <= MEMORY_TARGET)
    if case != "dense":
        fit, um = res["fit_times_s"], res["user_means_times_s"]
        fixed = res["alpha_fixed_times_s"]
        row.update({
            "fit_median_s": float(np.median(fit)),
            "fit_min_s": float(np.min(fit)),
            "fit_alpha_fixed_median_s": float(np.median(fixed)),
            "user_means_median_s": float(np.median(um)),
            "user_means_min_s": float(np.min(um)),
            "time_ratio_median": float(np.median(fit) / np.median(um)),
            "time_ratio_min": float(np.min(fit) / np.min(um)),
            "alpha": res["alpha"],
            "epsilon_spent": res["epsilon_spent"],
            "fit_times_s": fit,
            "user_means_times_s": um,
            "stages_median_s": res["stages_s"],
        })
        row["time_target_met"] = bool(row["time_ratio_median"] <= TIME_TARGET)
    return row


def format_table(rows):
    lines = ["| case | layout | X (MiB) | peak RSS increase (MiB) | ÷ X | "
             "tracemalloc peak (MiB) | fit median (ms) | user_means median (ms) | "
             "time ratio | memory ≤ 3× | time ≤ 5× |",
             "|" + "---|" * 11]
    for r in rows:
        yes = {True: "yes", False: "**no**", None: "-"}
        timed = "fit_median_s" in r
        lines.append(
            f"| {r['case']} | {r['layout']} | {r['x_mib']:.0f} "
            f"| {r['peak_increase_mib']:.0f} | {r['peak_ratio_to_x']:.2f} "
            f"| {r['tracemalloc_peak_mib']:.0f} "
            f"| {r['fit_median_s'] * 1e3:.0f} " if timed else
            f"| {r['case']} | {r['layout']} | {r['x_mib']:.0f} "
            f"| {r['peak_increase_mib']:.0f} | {r['peak_ratio_to_x']:.2f} "
            f"| {r['tracemalloc_peak_mib']:.0f} | {r['first_fit_s'] * 1e3:.0f} (once) ")
        if timed:
            lines[-1] += (f"| {r['user_means_median_s'] * 1e3:.0f} "
                          f"| {r['time_ratio_median']:.1f} "
                          f"| {yes[r['memory_target_met']]} "
                          f"| {yes[r['time_target_met']]} |")
        else:
            lines[-1] += f"| - | - | {yes[r['memory_target_met']]} | - |"
    return "\n".join(lines)


def ridge_comparison(users_list, reps, seed):
    """Median coefficient error: AdaSSP's ridge vs the previous fixed ridge."""
    import math

    from skuserdp.linear_model import UserDPLinearRegression

    d, m = 5, 10
    w = np.linspace(0.6, -0.4, d)
    out = []
    for n_users in users_list:
        rng = np.random.default_rng([seed, n_users])
        groups = np.repeat(np.arange(n_users), m)
        box = (-1.0 / math.sqrt(d), 1.0 / math.sqrt(d))
        ref = UserDPLinearRegression(epsilon=1.0, delta=1e-6, alpha=1.0)
        ref.n_features_in_ = d  # the public shape fixes the plan
        p = d + 1
        plan, _ = ref._plan(n_users, p, p * (p + 3) // 2 - 1, ref._max_radius(),
                            1.0)
        fixed = math.sqrt(2 * p * plan.noise_variance)
        errors = {"fixed": [], "auto": []}
        alphas = []
        for rep in range(reps):
            X = rng.uniform(-1, 1, size=(n_users * m, d)) / math.sqrt(d)
            y = np.clip(X @ w + 0.1 + 0.1 * rng.normal(size=n_users * m), -1, 1)
            for name, alpha in (("fixed", fixed), ("auto", "auto")):
                est = UserDPLinearRegression(epsilon=1.0, delta=1e-6, alpha=alpha,
                                             bounds=box, target_bounds=(-1, 1),
                                             random_state=rep)
                est.fit(X, y, groups=groups)
                errors[name].append(float(np.linalg.norm(est.coef_ - w)))
            alphas.append(est.alpha_)
        out.append({
            "users": n_users,
            "fixed_ridge": fixed,
            "auto_ridge_median": float(np.median(alphas)),
            "auto_ridge_zero_share": float(np.mean(np.array(alphas) == 0.0)),
            "fixed_error_median": float(np.median(errors["fixed"])),
            "auto_error_median": float(np.median(errors["auto"])),
            "error_ratio": float(np.median(errors["auto"])
                                 / np.median(errors["fixed"])),
        })
    return out


def format_ridge(ridge):
    lines = ["| users | fixed ridge σ√(2p) | AdaSSP ridge (median) | share with "
             "ridge 0 | error, fixed | error, AdaSSP | ratio |",
             "|---|---|---|---|---|---|---|"]
    for r in ridge:
        lines.append(
            f"| {r['users']:,} | {r['fixed_ridge']:.4f} "
            f"| {r['auto_ridge_median']:.4f} | {r['auto_ridge_zero_share']:.0%} "
            f"| {r['fixed_error_median']:.4f} | {r['auto_error_median']:.4f} "
            f"| {r['error_ratio']:.2f} |")
    return "\n".join(lines)


def format_stages(rows):
    lines = ["| layout | stage | median (ms) | ÷ user_means |", "|---|---|---|---|"]
    for r in rows:
        for name, t in r.get("stages_median_s", {}).items():
            lines.append(f"| {r['layout']} | {name} | {t * 1e3:.0f} "
                         f"| {t / r['user_means_median_s']:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    print(f"UserDPLinearRegression memory benchmark: {args.rows:,} rows x "
          f"{args.features} features x {args.users:,} users, {args.repeats} repeats",
          flush=True)
    cases = [("streamed", "shuffled"), ("streamed", "grouped")]
    if args.dense:
        cases.append(("dense", "shuffled"))
    rows = []
    for case, layout in cases:
        row = run_case(args, case, layout)
        rows.append(row)
        print(f"  {case:<9} {layout:<9} peak +{row['peak_increase_mib']:.0f} MiB "
              f"({row['peak_ratio_to_x']:.2f} x X)", flush=True)
    table = format_table(rows)
    print(table)
    stages = format_stages(rows)
    print(stages)
    ridge = ridge_comparison(args.ridge_users, args.ridge_reps, args.seed)
    ridge_table = format_ridge(ridge)
    print(ridge_table)
    stem = "linear_regression_memory_quick" if args.quick else \
        "linear_regression_memory"
    payload = {
        "parameters": {k: v for k, v in vars(args).items()
                       if k not in ("output_dir", "child")},
        "targets": {"peak_ratio_to_x": MEMORY_TARGET, "time_ratio": TIME_TARGET},
        "rows": rows,
        "table": table,
        "stages": stages,
        "ridge": ridge,
        "ridge_table": ridge_table,
    }
    csv_path, json_path = write_results(args.output_dir, stem, rows, payload)
    print(f"saved {csv_path} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
