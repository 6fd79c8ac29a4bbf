"""Fit time of the DP-SGD estimators against one ``user_means`` pass (issue 15).

Run from the repository root::

    python benchmarks/bench_dpsgd_speed.py          # 500k rows x 32 features x 5k users
    python benchmarks/bench_dpsgd_speed.py --quick  # smoke test (50k x 16 x 5k)

Target (from the issue): ``UserDPSGDRegressor`` with its defaults
(``max_iter=100``, ``solver="gd"``, ``aggregator="clip"``) fits in at most
50x the time of one ``skuserdp.user_means`` pass on the same data.

Data: ``X`` standard normal divided by ``sqrt(features)`` (float64,
C-order), user ids uniform on ``0..users-1`` (unequal row counts, every user
present, rows of users interleaved); ``y = X·w + 0.1 + N(0, 0.1²)`` clipped to
[-1, 1] for the regressor and ``1{X·w + logistic noise > 0}`` for the
classifier (``classes=[0, 1]`` declared). Every repeat times, in this order:

* ``user_means``: ``skuserdp.user_means(X, groups)`` (the unit of the
  ratios);
* ``ridge``: ``sklearn.linear_model.Ridge().fit(X, y)`` (non-private, for
  scale), and ``ridge_1_thread``: the same with BLAS limited to one thread
  (threaded BLAS can be many times slower when other jobs load the cores);
* ``regressor``: ``UserDPSGDRegressor(random_state=seed).fit(X, y,
  groups=groups)``, every other parameter at its default;
* ``classifier``: ``UserDPSGDClassifier(classes=[0, 1],
  random_state=seed).fit(X, y_binary, groups=groups)``;
* ``regressor_no_std``, ``classifier_no_std``: the same with
  ``standardize=False`` (the default ``"auto"`` adds a private
  standardisation of the features before the gradient descent).

After ``--repeats`` repeats (after one warm-up of each case), the table gives
the median and the min of every case and its ratio to the median
``user_means`` pass, and the median over repeats of the paired ratio (a
case's time over the ``user_means`` time of the same repeat, which follows
the load of the machine). With ``--before-repeats N`` (default 1; 0 skips)
the estimators are also fitted with the previous per-user gradient
function (a sparse averaging matrix times ``F[:, k]·X̃`` at every step,
copied below and monkeypatched into ``skuserdp.linear_model._dpsgd``), each
next to its own ``user_means`` pass: the "before" ratios. Their
coefficients must equal the new ones within 1e-8 (the script fails
otherwise).

One more fit of each estimator, instrumented, splits its time into the
per-user gradients (precomputation and the steps) and the rest (validation,
private bounds, releases, ...).

The machine may be shared: take the medians of a few repeats. Results are
printed and saved to ``benchmarks/results/dpsgd_speed{,_quick}.{csv,json}``.
"""

import argparse
import gc
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import Ridge
from threadpoolctl import threadpool_limits

import skuserdp.linear_model._dpsgd as dpsgd
from skuserdp.linear_model import UserDPSGDClassifier, UserDPSGDRegressor
from skuserdp.linear_model._base import user_averaging_matrix
from skuserdp.users import user_means

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGET = 50.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--users", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before-repeats", type=int, default=1,
                        help="fits with the previous gradient function (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 50k rows x 16 features x 5k users, 2 "
                        "repeats; saved as dpsgd_speed_quick.*")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.features, args.users, args.repeats = 50_000, 16, 5_000, 2
    return args


def previous_user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs):
    """The per-user gradient function before issue 15's speed-up."""
    A_all = user_averaging_matrix(codes, n_users)

    def for_users(users=None):
        if users is None:
            A, rows = A_all, slice(None)
        else:
            rows = np.flatnonzero(np.isin(codes, users))
            A = A_all[users][:, rows]
        Xr, yr = Xa[rows], y[rows]

        def gradients(theta):
            W = theta.reshape(n_outputs, -1)
            F = loss.residual_factor(Xr @ W.T, yr)  # (rows, n_outputs)
            return np.hstack([A @ (F[:, [k]] * Xr) for k in range(n_outputs)])

        return gradients

    return for_users


def make_data(args):
    rng = np.random.default_rng(args.seed)
    n, d = args.rows, args.features
    X = rng.standard_normal((n, d))
    X /= np.sqrt(d)
    groups = rng.integers(0, args.users, n)
    w = rng.uniform(-1.0, 1.0, d)
    score = X @ w
    y = np.clip(score + 0.1 + 0.1 * rng.standard_normal(n), -1.0, 1.0)
    y_binary = (score + rng.logistic(size=n) > 0).astype(np.int64)
    return X, y, y_binary, groups


def timed(fn):
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def estimators(seed):
    return {
        "regressor": lambda: UserDPSGDRegressor(random_state=seed),
        "classifier": lambda: UserDPSGDClassifier(classes=[0, 1], random_state=seed),
        "regressor_no_std": lambda: UserDPSGDRegressor(standardize=False,
                                                       random_state=seed),
        "classifier_no_std": lambda: UserDPSGDClassifier(
            classes=[0, 1], standardize=False, random_state=seed),
    }


def target_of(name, y, y_binary):
    return y if name.startswith("regressor") else y_binary


def cases(X, y, y_binary, groups, seed):

    def ridge_one_thread():
        with threadpool_limits(limits=1, user_api="blas"):
            return Ridge().fit(X, y)

    out = {"user_means": lambda: user_means(X, groups),
           "ridge": lambda: Ridge().fit(X, y),
           "ridge_1_thread": ridge_one_thread}
    for name, make in estimators(seed).items():
        out[name] = (lambda make=make, t=target_of(name, y, y_binary):
                     make().fit(X, t, groups=groups))
    return out


class _Instrumented:
    """Wraps a gradient-function factory and adds up the time spent in it."""

    def __init__(self, factory):
        self.factory = factory
        self.setup = 0.0
        self.steps = 0.0
        self.calls = 0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        for_users = self.factory(*args, **kwargs)
        self.setup += time.perf_counter() - start

        def wrapped_for_users(users=None):
            start = time.perf_counter()
            gradients = for_users(users)
            self.setup += time.perf_counter() - start

            def wrapped(theta):
                start = time.perf_counter()
                out = gradients(theta)
                self.steps += time.perf_counter() - start
                self.calls += 1
                return out

            return wrapped

        return wrapped_for_users


def with_gradient_fn(factory, fn):
    saved = dpsgd._user_gradient_fn
    dpsgd._user_gradient_fn = factory
    try:
        return fn()
    finally:
        dpsgd._user_gradient_fn = saved


def run(args):
    X, y, y_binary, groups = make_data(args)
    print(f"{args.rows:,} rows x {args.features} features x {args.users:,} users; "
          f"{args.repeats} repeats (medians; the machine may be shared)")
    fns = cases(X, y, y_binary, groups, args.seed)
    times = {name: [] for name in fns}
    fitted = {}
    for name, fn in fns.items():  # warm-up
        fitted[name] = fn()
    for r in range(args.repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn)[0])
        print(f"  repeat {r + 1}: " + ", ".join(
            f"{k} {v[-1]:.3f} s" for k, v in times.items()))
    um = np.array(times["user_means"])
    rows = []
    for name, ts in times.items():
        ts = np.array(ts)
        rows.append({
            "case": name, "repeats": len(ts),
            "implementation": "new" if name.startswith(("reg", "clas")) else "-",
            "median_s": float(np.median(ts)), "min_s": float(ts.min()),
            "ratio_median": float(np.median(ts) / np.median(um)),
            "ratio_paired_median": float(np.median(ts / um)),
            "times_s": ts.tolist()})
    # before: the previous gradient function, each fit next to a user_means
    before = estimators(args.seed) if args.before_repeats > 0 else {}
    for name, make in before.items():
        t = target_of(name, y, y_binary)
        ts, ums = [], []
        for _ in range(args.before_repeats):
            ums.append(timed(fns["user_means"])[0])
            dt, est = timed(lambda: with_gradient_fn(
                previous_user_gradient_fn,
                lambda: make().fit(X, t, groups=groups)))
            ts.append(dt)
            diff = max(float(np.max(np.abs(est.coef_ - fitted[name].coef_))),
                       float(np.max(np.abs(np.asarray(est.intercept_)
                                           - fitted[name].intercept_))))
            if diff > 1e-8:
                raise AssertionError(
                    f"{name}: coefficients differ from the previous gradient "
                    f"function's by {diff:.2e}")
            print(f"  before {name}: {dt:.2f} s (user_means {ums[-1]:.3f} s, "
                  f"max coefficient difference {diff:.1e})")
        ts, ums = np.array(ts), np.array(ums)
        rows.append({
            "case": name, "implementation": "before", "repeats": len(ts),
            "median_s": float(np.median(ts)), "min_s": float(ts.min()),
            "ratio_median": float(np.median(ts) / np.median(ums)),
            "ratio_paired_median": float(np.median(ts / ums)),
            "coef_max_abs_diff": diff, "times_s": ts.tolist(),
            "user_means_s": ums.tolist()})
    # where the fit spends its time (one instrumented fit each)
    breakdown = []
    for name, make in estimators(args.seed).items():
        t = target_of(name, y, y_binary)
        probe = _Instrumented(dpsgd._user_gradient_fn)
        total, _ = timed(lambda: with_gradient_fn(
            probe, lambda: make().fit(X, t, groups=groups)))
        breakdown.append({
            "case": name, "fit_s": total, "gradient_setup_s": probe.setup,
            "gradient_steps_s": probe.steps, "gradient_calls": probe.calls,
            "gradient_share": (probe.setup + probe.steps) / total,
            "rest_s": total - probe.setup - probe.steps})
    return rows, breakdown


def format_table(rows):
    head = ("| case | implementation | median (s) | min (s) | ratio vs user_means "
            "(median) | paired ratio (median) |")
    lines = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['implementation']} | {r['median_s']:.3f} | "
                     f"{r['min_s']:.3f} | {r['ratio_median']:.1f} | "
                     f"{r['ratio_paired_median']:.1f} |")
    return "\n".join(lines)


def format_breakdown(breakdown):
    lines = ["| estimator | fit (s) | gradient setup (s) | gradient steps (s) | "
             "calls | gradient share | rest (s) |",
             "|---|---|---|---|---|---|---|"]
    for b in breakdown:
        lines.append(f"| {b['case']} | {b['fit_s']:.3f} | {b['gradient_setup_s']:.3f} "
                     f"| {b['gradient_steps_s']:.3f} | {b['gradient_calls']} | "
                     f"{100 * b['gradient_share']:.0f}% | {b['rest_s']:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter("ignore")  # AccuracyWarning etc.: timing only
    rows, breakdown = run(args)
    print()
    print(format_table(rows))
    print()
    print("Where one fit spends its time (instrumented):")
    print(format_breakdown(breakdown))
    reg = next(r for r in rows if r["case"] == "regressor"
               and r["implementation"] == "new")
    met = reg["ratio_median"] <= TARGET
    payload = {
        "parameters": {k: (str(v) if isinstance(v, Path) else v)
                       for k, v in vars(args).items()},
        "target": {"regressor_ratio_max": TARGET, "met": met},
        "rows": rows, "breakdown": breakdown}
    stem = "dpsgd_speed_quick" if args.quick else "dpsgd_speed"
    csv_path, json_path = write_results(args.output_dir, stem, rows, payload)
    print(f"\nsaved {csv_path} and {json_path}")
    print(f"target (regressor <= {TARGET:.0f}x user_means): "
          f"{'met' if met else 'missed'} ({reg['ratio_median']:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
