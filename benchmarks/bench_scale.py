"""Fit time of every mean estimator against one aggregation pass, at scale (issue 18).

Run from the repository root::

    python benchmarks/bench_scale.py          # 100k and 1M users x 64 features
    python benchmarks/bench_scale.py --quick  # smoke test: 50k users, 2 repeats
    python benchmarks/bench_scale.py --users 1000000 --layouts one_row \
        --cases CoinPress ClipNoise

Target (issue 18): at 1M users x 64 features, every mean estimator's
``fit(X, groups=groups)`` takes at most 3x the aggregation pass
``skuserdp.users.user_means(X, groups)`` on the same data.

Data (seeded): rows ``mu + N(0, I_64)`` (float64, C-order) with ``mu``
uniform in ``[-2, 2]^64``; integer user ids, rows of users interleaved.
Two layouts per number of users ``n``:

* ``one_row``: ``n`` rows, one per user (ids a random permutation of
  ``0..n-1``);
* ``many_rows``: ``10·n`` rows for ``n`` users (ids uniform on
  ``0..n-1``, every user present, unequal counts): e.g. 1M rows for 100k
  users. Only run for ``n · 10 <= --max-rows`` (default 1M rows).

Cases: every estimator exported by :mod:`skuserdp.mean`, with the settings a
user would type -- the defaults, ``random_state`` for reproducibility, and
only the public declarations an estimator cannot run without:
``FewUsersBallEstimator(radius=10)`` (``1.25·√64``: every row, hence every
user mean, lies within about 8 of ``mu``) and
``ThreadedClipNoiseEstimator(moment_bound=1)`` (unit variance in every
direction); ``UserMeanEstimator()`` with ``method="auto"`` and each of its
routes (``method=...``, with the same declarations).
``DiscreteDistributionEstimator(classes=range(64))`` is fitted on one
integer column of 64 categories (uniform, seeded); its aggregation pass is
``user_means`` of the one-hot encoding of that column (rows x 64): the
per-user class frequencies it must compute, the same table shape as the
other estimators' (building the one-hot table is not timed).

The aggregation pass is first timed ``--repeats`` times alone (before any
fit, after a warm-up); then every repeat times the aggregation pass and each
fit once (garbage collector off while timing; one untimed warm-up fit of
each case first). The table gives the best (min) wall time of each (for the
aggregation pass, over all its runs: the fastest pass is the reference),
the ratio of the best fit to that best pass (the target's measure), the
median over repeats of the paired ratio (fit over the aggregation pass of
the same repeat) and the same ratio of best CPU times of the process
(``time.process_time``; page faults count). On a shared machine the
aggregation pass varies most: it allocates two n_users × n_features tables,
whose page faults (with transparent huge pages, compaction) cost from ~0.4 s
to over 1 s at 1M users depending on the kernel's memory state, so taking
its fastest run is the conservative choice. Each fit of a
``UserLevelMeanEstimator`` runs the same aggregation itself; the time it
spends there (validation of X and groups, per-user means: wrapped and
timed, not modified) is subtracted to give "fit − its aggregation", the
estimator's own cost, and ``1 + that / best aggregation pass`` is the ratio
the fit would have if its own aggregation ran as fast as the fastest pass
(not available for DiscreteDistributionEstimator, which aggregates its
column itself). A fit that raises is reported with its
error instead of times. ``digest`` is a hash of the fitted estimate: equal
digests across code versions mean bit-identical outputs. The load average
of the machine at the start and the end is saved with the results, printed
and saved to ``benchmarks/results/scale{,_quick}{_<tag>}.{csv,json}``.
"""

import argparse
import gc
import hashlib
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import skuserdp.mean._base as mean_base
from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    CoinPressMeanEstimator,
    DiscreteDistributionEstimator,
    FewUsersBallEstimator,
    ThreadedClipNoiseEstimator,
    UserMeanEstimator,
    WinsorizedMeanEstimator,
)
from skuserdp.users import user_means

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGET = 3.0
ROWS_PER_USER = 10
#: public declarations (see the module docstring)
RADIUS = 10.0
MOMENT_BOUND = 1.0
N_CLASSES = 64


def estimators(seed, n_features):
    """name -> (factory, kind of X): the fits of the benchmark."""
    rs = dict(random_state=seed)
    return {
        "ClipNoise": (lambda: ClipNoiseMeanEstimator(**rs), "num"),
        "CoinPress": (lambda: CoinPressMeanEstimator(**rs), "num"),
        "Winsorized": (lambda: WinsorizedMeanEstimator(**rs), "num"),
        "FewUsers(radius)": (lambda: FewUsersBallEstimator(radius=RADIUS, **rs), "num"),
        "Threaded(moment_bound)": (
            lambda: ThreadedClipNoiseEstimator(moment_bound=MOMENT_BOUND, **rs), "num"),
        "UserMean(auto)": (lambda: UserMeanEstimator(**rs), "num"),
        "UserMean(coinpress)": (lambda: UserMeanEstimator(method="coinpress", **rs),
                                "num"),
        "UserMean(clip_noise)": (lambda: UserMeanEstimator(method="clip_noise", **rs),
                                 "num"),
        "UserMean(winsorized)": (lambda: UserMeanEstimator(method="winsorized", **rs),
                                 "num"),
        "UserMean(few_users)": (lambda: UserMeanEstimator(
            method="few_users", radius=RADIUS, **rs), "num"),
        "UserMean(threaded)": (lambda: UserMeanEstimator(
            method="threaded", moment_bound=MOMENT_BOUND, **rs), "num"),
        "Discrete(classes)": (lambda: DiscreteDistributionEstimator(
            classes=np.arange(N_CLASSES), **rs), "cat"),
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--layouts", nargs="+", default=["one_row", "many_rows"],
                        choices=["one_row", "many_rows"])
    parser.add_argument("--max-rows", type=int, default=1_000_000,
                        help="skip a layout with more rows than this")
    parser.add_argument("--cases", nargs="+", default=None,
                        help="only these estimators (names as in the table)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="",
                        help="suffix of the results' file names (e.g. 'before')")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 50k users x 64 features, one row each, "
                        "2 repeats; saved as scale_quick*")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.layouts, args.repeats = [50_000], ["one_row"], 2
    known = estimators(0, 1)
    for name in args.cases or []:
        if name not in known:
            parser.error(f"unknown case {name!r}; choose from {sorted(known)}")
    return args


def make_data(n_users, layout, n_features, seed):
    """Rows, user ids, a categorical column and its one-hot table."""
    rng = np.random.default_rng(seed)
    if layout == "one_row":
        n_rows = n_users
        groups = rng.permutation(n_users)
    else:
        n_rows = ROWS_PER_USER * n_users
        groups = rng.integers(0, n_users, size=n_rows)
        groups[:n_users] = np.arange(n_users)  # every user present
        rng.shuffle(groups)
    mu = rng.uniform(-2.0, 2.0, n_features)
    X = rng.standard_normal((n_rows, n_features))
    X += mu
    cat = rng.integers(0, N_CLASSES, size=n_rows)
    onehot = np.zeros((n_rows, N_CLASSES))
    onehot[np.arange(n_rows), cat] = 1.0
    return X, groups, cat.reshape(-1, 1), onehot


def timed(fn):
    """(wall time, CPU time of this process, result) of one call."""
    gc.collect()
    gc.disable()
    try:
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        return time.perf_counter() - start, time.process_time() - cpu, out
    finally:
        gc.enable()


class _AggregationProbe:
    """Adds up the time a fit spends in its own aggregation pass: the
    validation of X and groups and the per-user means of
    ``UserLevelMeanEstimator.fit``, ``fit_user_means`` (wrapped here, not
    modified)."""

    def __init__(self):
        self.seconds = 0.0
        self._saved = mean_base.fit_user_means

        def timing(fn):
            def wrapped(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start
            return wrapped

        mean_base.fit_user_means = timing(self._saved)

    def close(self):
        mean_base.fit_user_means = self._saved


def digest(est):
    value = getattr(est, "mean_", None)
    if value is None:
        value = est.probabilities_
    return hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()[:12]


def run_size(n_users, layout, args):
    X, groups, cat, onehot = make_data(n_users, layout, args.features, args.seed)
    n_rows = X.shape[0]
    cases = {k: v for k, v in estimators(args.seed, args.features).items()
             if args.cases is None or k in args.cases}
    aggregation = {"num": lambda: user_means(X, groups),
                   "cat": lambda: user_means(onehot, groups)}
    data = {"num": X, "cat": cat}
    fits = {name: (lambda make=make, kind=kind: make().fit(data[kind], groups=groups))
            for name, (make, kind) in cases.items()}
    print(f"\n{n_users:,} users x {args.features} features, {n_rows:,} rows "
          f"({layout}); {args.repeats} repeats", flush=True)
    # the aggregation pass alone first, before any fit: with the passes timed
    # between the fits, its best time over all of them is the reference
    fresh = {kind: [] for kind in sorted({kind for _, kind in cases.values()})}
    for kind in fresh:
        timed(aggregation[kind])  # warm-up
        for _ in range(args.repeats):
            fresh[kind].append(timed(aggregation[kind])[:2])
    digests, routes, errors = {}, {}, {}
    for name, fn in list(fits.items()):  # warm-up, and the digest of the fit
        try:
            dt, _, est = timed(fn)
        except Exception as exc:  # noqa: BLE001 -- reported, not timed
            errors[name] = f"{type(exc).__name__}: {exc}"
            print(f"  warm-up {name:<24} failed: {errors[name]}", flush=True)
            del fits[name]
            continue
        digests[name] = digest(est)
        routes[name] = getattr(est, "method_", "") or getattr(est, "route_", "")
        print(f"  warm-up {name:<24} {dt:8.3f} s {routes[name]}", flush=True)
        del est
    agg_times = {kind: [] for kind in aggregation if any(
        cases[name][1] == kind for name in fits)}
    fit_times = {name: [] for name in fits}
    agg_cpu = {kind: [] for kind in agg_times}
    fit_cpu = {name: [] for name in fits}
    extra = {name: [] for name in fits}  # fit minus its own aggregation pass
    for r in range(args.repeats):
        for kind in agg_times:
            wall, cpu, _ = timed(aggregation[kind])
            agg_times[kind].append(wall)
            agg_cpu[kind].append(cpu)
        for name, fn in fits.items():
            probe = _AggregationProbe()
            try:
                wall, cpu, _ = timed(fn)
            finally:
                probe.close()
            fit_times[name].append(wall)
            fit_cpu[name].append(cpu)
            if probe.seconds > 0:  # (DiscreteDistributionEstimator aggregates itself)
                extra[name].append(wall - probe.seconds)
        print(f"  repeat {r + 1}: user_means "
              + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in agg_times.items())
              + "; " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in fit_times.items()),
              flush=True)
    rows = []
    best_agg, best_agg_cpu = {}, {}
    for kind, ts in agg_times.items():
        ts = np.array(ts)
        best_agg[kind] = min(ts.min(), min(w for w, _ in fresh[kind]))
        best_agg_cpu[kind] = min(min(agg_cpu[kind]), min(c for _, c in fresh[kind]))
        rows.append({
            "n_users": n_users, "n_rows": n_rows, "layout": layout,
            "case": "user_means" + ("" if kind == "num" else " (one-hot)"),
            "route": "", "best_s": float(best_agg[kind]),
            "median_s": float(np.median(ts)), "best_cpu_s": float(best_agg_cpu[kind]),
            "ratio_best": 1.0, "ratio_paired_median": 1.0, "ratio_cpu_best": 1.0,
            "target_met": None, "digest": "", "times_s": ts.tolist(),
            "cpu_s": agg_cpu[kind],
            "times_before_fits_s": [float(w) for w, _ in fresh[kind]]})
    for name, ts in fit_times.items():
        ts = np.array(ts)
        kind = cases[name][1]
        agg = np.array(agg_times[kind])
        ratio = float(ts.min() / best_agg[kind])
        rows.append({
            "n_users": n_users, "n_rows": n_rows, "layout": layout, "case": name,
            "route": routes[name] if name in ("UserMean(auto)", "Discrete(classes)")
            else "",
            "best_s": float(ts.min()), "median_s": float(np.median(ts)),
            "best_cpu_s": float(min(fit_cpu[name])),
            "ratio_best": ratio, "ratio_paired_median": float(np.median(ts / agg)),
            "ratio_cpu_best": float(min(fit_cpu[name]) / best_agg_cpu[kind]),
            "extra_best_s": float(min(extra[name])) if extra[name] else None,
            "ratio_extra": (float(1.0 + min(extra[name]) / best_agg[kind])
                            if extra[name] else None),
            "target_met": bool(ratio <= TARGET), "digest": digests[name],
            "times_s": ts.tolist(), "cpu_s": fit_cpu[name]})
    for name, error in errors.items():
        rows.append({
            "n_users": n_users, "n_rows": n_rows, "layout": layout, "case": name,
            "route": "", "best_s": float("nan"), "median_s": float("nan"),
            "best_cpu_s": float("nan"), "ratio_best": float("nan"),
            "ratio_paired_median": float("nan"), "ratio_cpu_best": float("nan"),
            "target_met": None, "digest": "", "error": error, "times_s": []})
    return rows


def format_table(rows):
    lines = ["| users | rows | case | best (s) | ratio (best) | paired ratio (median) "
             "| CPU ratio (best) | fit − its aggregation (s) | 1 + that / aggregation "
             "| ≤ 3× | digest |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "-"}[r["target_met"]]
        case = r["case"] + (f" → {r['route']}" if r["route"] else "")
        if r.get("error"):
            lines.append(f"| {r['n_users']:,} | {r['n_rows']:,} | {case} | failed: "
                         f"{r['error'][:80]} | | | | | | - | |")
            continue
        extra = r.get("extra_best_s")
        extra_cells = ("| - | - " if extra is None else
                       f"| {extra:.3f} | {r['ratio_extra']:.2f} ")
        if r["case"].startswith("user_means"):
            extra_cells = "| | "
        lines.append(
            f"| {r['n_users']:,} | {r['n_rows']:,} | {case} | {r['best_s']:.3f} "
            f"| {r['ratio_best']:.2f} | {r['ratio_paired_median']:.2f} "
            f"| {r['ratio_cpu_best']:.2f} " + extra_cells + f"| {met} "
            f"| {r['digest']} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter("ignore")  # AccuracyWarning etc.: timing only
    load = {"start": os.getloadavg()}
    rows = []
    for n_users in args.users:
        for layout in args.layouts:
            n_rows = n_users * (1 if layout == "one_row" else ROWS_PER_USER)
            if n_rows > args.max_rows:
                print(f"\nskipping {n_users:,} users ({layout}): {n_rows:,} rows "
                      f"> --max-rows {args.max_rows:,}")
                continue
            rows.extend(run_size(n_users, layout, args))
            gc.collect()
    print()
    print(format_table(rows))
    big = max(args.users)
    missed = [r for r in rows if r["n_users"] == big and r["target_met"] is False]
    load["end"] = os.getloadavg()
    payload = {
        "parameters": {k: (str(v) if isinstance(v, Path) else v)
                       for k, v in vars(args).items()},
        "load_average_1_5_15_min": load,
        "target": f"fit / user_means <= {TARGET} (best of repeats) at 1M users",
        "declarations": {"radius": RADIUS, "moment_bound": MOMENT_BOUND,
                         "n_classes": N_CLASSES, "rows_per_user": ROWS_PER_USER},
        "rows": rows}
    stem = ("scale_quick" if args.quick else "scale") + (f"_{args.tag}" if args.tag
                                                         else "")
    csv_path, json_path = write_results(args.output_dir, stem, rows, payload)
    print(f"\nload average (1, 5, 15 min): start {load['start']}, end {load['end']}")
    print(f"saved {csv_path} and {json_path}")
    for r in missed:
        print(f"target missed at {r['n_users']:,} users ({r['layout']}): "
              f"{r['case']} {r['ratio_best']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
