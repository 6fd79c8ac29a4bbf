"""Benchmark ``skuserdp.users.user_means`` against a pre-sorted ``np.add.reduceat``.

Run from the repository root::

    python benchmarks/bench_user_means.py            # 1M rows x 64 features x 10k users
    python benchmarks/bench_user_means.py --quick    # smoke test (100k x 16 x 1k)

What is timed (median and min over ``--repeats`` runs, after one warm-up run):

* ``reduceat_presorted`` (the baseline of the acceptance target): the rows of
  ``X`` are already sorted by user and the segment starts and counts are known;
  only ``np.add.reduceat(X_sorted, starts, axis=0) / counts[:, None]`` is timed.
* ``sort_then_reduceat``: the work a sort-based implementation has to do on
  shuffled rows: stable argsort of the ids, gather ``X[order]``, find the
  segment starts, reduceat and divide.
* ``reduceat_presorted_colmajor`` (for information): the baseline on a
  column-major (Fortran-order) copy of the sorted ``X``; the copy is not timed.
  NumPy's ``reduceat`` along axis 0 of a C-order array is much slower than on
  the same data in column-major order, so this is the fastest "pre-sorted"
  reference.
* ``user_means`` on rows shuffled by user and on rows sorted by user, with
  integer ids and with string ids (``"user-000123"``, which are factorised by
  ``np.unique``).

Every result is checked against the baseline (same labels and counts, max abs
difference of the means < 1e-9). A per-stage breakdown of ``user_means``
(validation of ``X``, factorisation of ``groups``, summation) is also timed.
The table is printed and saved as CSV and JSON in ``benchmarks/results/``.
"""

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.utils import check_array

from skuserdp.users import check_groups, user_means

from _results import write_results

try:  # private helper, only used for the per-stage breakdown
    from skuserdp.users._aggregate import _means_by_code
except ImportError:  # pragma: no cover - the breakdown is optional
    _means_by_code = None

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGET_RATIO = 2.0
TOLERANCE = 1e-9


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: 100k rows x 16 features x 1k users, 2 repeats; results "
        "are saved as user_means_quick.{csv,json}",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where to save the CSV and JSON (default: benchmarks/results)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.features, args.users, args.repeats = 100_000, 16, 1_000, 2
    if args.users < 1 or args.rows < args.users:
        parser.error("need 1 <= --users <= --rows (every user gets at least one row)")
    if args.features < 1 or args.repeats < 1:
        parser.error("--features and --repeats must be positive")
    return args


def make_data(n_rows, n_features, n_users, seed):
    """Shuffled and user-sorted layouts of the same rows, integer and string ids."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features))  # float64, C-order
    ids = rng.integers(0, n_users, size=n_rows)
    ids[:n_users] = np.arange(n_users)  # every user has at least one row
    rng.shuffle(ids)  # users interleaved, unequal row counts
    order = np.argsort(ids, kind="stable")
    X_sorted = X[order]
    ids_sorted = ids[order]
    width = max(6, len(str(n_users - 1)))
    names = np.array([f"user-{u:0{width}d}" for u in range(n_users)])
    return {
        "X": X,
        "ids": ids,
        "names": names[ids],
        "X_sorted": X_sorted,
        "ids_sorted": ids_sorted,
        "names_sorted": names[ids_sorted],
    }


def segments(sorted_ids):
    """Start index and length of every run of equal ids in ``sorted_ids``."""
    n = sorted_ids.shape[0]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    counts = np.diff(np.r_[starts, n])
    return starts, counts


def reduceat_means(X_sorted, starts, counts):
    return np.add.reduceat(X_sorted, starts, axis=0) / counts[:, None]


def sort_then_reduceat(X, ids):
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts, counts = segments(sorted_ids)
    return reduceat_means(X[order], starts, counts), counts, sorted_ids[starts]


def timeit(func, repeats):
    """Return (last result, list of wall times) after one untimed warm-up call."""
    result = func()
    times = []
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(repeats):
            del result
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            result = func()
            times.append(time.perf_counter() - start)
            if gc_was_enabled:
                gc.enable()
    finally:
        if gc_was_enabled:
            gc.enable()
    return result, times


def check_agreement(name, result, reference):
    """Max abs difference of the means; raise if labels, counts or means differ."""
    means, counts, labels = result
    ref_means, ref_counts, ref_labels = reference
    if not np.array_equal(labels, ref_labels):
        raise AssertionError(f"{name}: labels differ from the baseline")
    if not np.array_equal(counts, ref_counts):
        raise AssertionError(f"{name}: counts differ from the baseline")
    diff = float(np.max(np.abs(means - ref_means)))
    assert diff < TOLERANCE, f"{name}: max abs difference {diff:.3g} >= {TOLERANCE}"
    return diff


def run(args):
    n, d, n_users, repeats = args.rows, args.features, args.users, args.repeats
    print(f"user_means benchmark: {n:,} rows x {d} features x {n_users:,} users, "
          f"{repeats} repeats (+1 warm-up)", flush=True)
    t0 = time.perf_counter()
    data = make_data(n, d, n_users, args.seed)
    X, ids, names = data["X"], data["ids"], data["names"]
    X_sorted, ids_sorted = data["X_sorted"], data["ids_sorted"]
    names_sorted = data["names_sorted"]
    starts, counts = segments(ids_sorted)
    X_sorted_f = np.asfortranarray(X_sorted)
    print(f"data generated in {time.perf_counter() - t0:.1f} s", flush=True)

    int_labels = ids_sorted[starts]
    str_labels = names_sorted[starts]

    cases = [
        # name, layout, ids, what is timed, function, reference labels
        ("reduceat_presorted", "sorted (C-order)", "-",
         "np.add.reduceat(X_sorted, starts, axis=0) / counts; sort excluded",
         lambda: (reduceat_means(X_sorted, starts, counts), counts, int_labels),
         int_labels),
        ("sort_then_reduceat", "shuffled", "int",
         "argsort(ids) + X[order] + starts + reduceat + divide",
         lambda: sort_then_reduceat(X, ids), int_labels),
        ("reduceat_presorted_colmajor", "sorted (F-order)", "-",
         "as baseline on a column-major copy; sort and copy excluded",
         lambda: (reduceat_means(X_sorted_f, starts, counts), counts, int_labels),
         int_labels),
        ("user_means", "shuffled", "int", "user_means(X, ids)",
         lambda: user_means(X, ids), int_labels),
        ("user_means", "sorted", "int", "user_means(X_sorted, ids_sorted)",
         lambda: user_means(X_sorted, ids_sorted), int_labels),
        ("user_means", "shuffled", "str", "user_means(X, names)",
         lambda: user_means(X, names), str_labels),
        ("user_means", "sorted", "str", "user_means(X_sorted, names_sorted)",
         lambda: user_means(X_sorted, names_sorted), str_labels),
    ]

    reference = (reduceat_means(X_sorted, starts, counts), counts, int_labels)
    rows = []
    base = colmajor = None
    for name, layout, id_kind, timed, func, ref_labels in cases:
        result, times = timeit(func, repeats)
        diff = check_agreement(
            f"{name} [{layout}, {id_kind}]", result,
            (reference[0], reference[1], ref_labels),
        )
        del result
        row = {
            "case": name,
            "layout": layout,
            "ids": id_kind,
            "timed": timed,
            "median_s": float(np.median(times)),
            "min_s": float(np.min(times)),
            "times_s": [float(t) for t in times],
            "max_abs_diff": diff,
        }
        if name == "reduceat_presorted":
            base = row
        if name == "reduceat_presorted_colmajor":
            colmajor = row
        rows.append(row)
        print(f"  {name:<28} {layout:<17} {id_kind:<4} "
              f"median {row['median_s'] * 1e3:9.1f} ms", flush=True)

    for row in rows:
        row["ratio_median"] = row["median_s"] / base["median_s"]
        row["ratio_min"] = row["min_s"] / base["min_s"]
        row["ratio_median_vs_colmajor"] = row["median_s"] / colmajor["median_s"]
        if row["case"] == "user_means":
            row["target_met"] = bool(row["ratio_median"] <= TARGET_RATIO)
        else:
            row["target_met"] = None

    breakdown = stage_breakdown(data, repeats) if _means_by_code else []
    return rows, breakdown


def stage_breakdown(data, repeats):
    """Median time of each stage of ``user_means`` for every user_means case."""
    out = []
    for layout, X_key, ids_key in [
        ("shuffled", "X", "ids"), ("sorted", "X_sorted", "ids_sorted"),
        ("shuffled", "X", "names"), ("sorted", "X_sorted", "names_sorted"),
    ]:
        X, groups = data[X_key], data[ids_key]
        n = X.shape[0]
        codes, labels = check_groups(groups, n)
        stages = [
            ("validate X (check_array)",
             lambda: check_array(X, dtype=np.float64, order="C")),
            ("factorise groups (check_groups)", lambda: check_groups(groups, n)),
            ("sum + divide (bincount, sparse @ X)",
             lambda: _means_by_code(X, codes, labels.shape[0])),
        ]
        id_kind = "str" if groups.dtype.kind == "U" else "int"
        for stage, func in stages:
            _, times = timeit(func, repeats)
            out.append({
                "layout": layout,
                "ids": id_kind,
                "stage": stage,
                "median_s": float(np.median(times)),
                "min_s": float(np.min(times)),
            })
    return out


def format_table(rows):
    header = ("| case | layout | ids | median (ms) | min (ms) | ratio vs baseline "
              "(median) | ratio vs baseline (min) | ratio vs col-major | "
              "max abs diff | ≤ 2× |")
    lines = [header, "|" + "---|" * 10]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "-"}[r["target_met"]]
        lines.append(
            f"| {r['case']} | {r['layout']} | {r['ids']} | {r['median_s'] * 1e3:.1f} "
            f"| {r['min_s'] * 1e3:.1f} | {r['ratio_median']:.2f} "
            f"| {r['ratio_min']:.2f} | {r['ratio_median_vs_colmajor']:.2f} "
            f"| {r['max_abs_diff']:.1e} | {met} |"
        )
    return "\n".join(lines)


def format_breakdown(breakdown):
    lines = ["| layout | ids | stage | median (ms) | min (ms) |", "|---" * 5 + "|"]
    for b in breakdown:
        lines.append(
            f"| {b['layout']} | {b['ids']} | {b['stage']} "
            f"| {b['median_s'] * 1e3:.1f} | {b['min_s'] * 1e3:.1f} |"
        )
    return "\n".join(lines)


def save(rows, breakdown, args):
    stem = "user_means_quick" if args.quick else "user_means"
    fields = ["case", "layout", "ids", "median_s", "min_s", "ratio_median",
              "ratio_min", "ratio_median_vs_colmajor", "max_abs_diff",
              "target_met", "timed"]
    payload = {
        "params": {
            "rows": args.rows, "features": args.features, "users": args.users,
            "repeats": args.repeats, "seed": args.seed, "quick": args.quick,
            "dtype": "float64", "order": "C",
        },
        "target": f"user_means / reduceat_presorted <= {TARGET_RATIO} (median)",
        "results": rows,
        "breakdown": breakdown,
    }
    return write_results(args.output_dir, stem, rows, payload, fields=fields)


def main(argv=None):
    args = parse_args(argv)
    rows, breakdown = run(args)
    print()
    print(format_table(rows))
    if breakdown:
        print()
        print("Where user_means spends its time:")
        print(format_breakdown(breakdown))
    csv_path, json_path = save(rows, breakdown, args)
    print(f"\nsaved {csv_path} and {json_path}")
    missed = [r for r in rows if r["target_met"] is False]
    for r in missed:
        print(f"target missed: user_means [{r['layout']}, {r['ids']} ids] is "
              f"{r['ratio_median']:.2f}x the pre-sorted reduceat")
    return 0


if __name__ == "__main__":
    sys.exit(main())
