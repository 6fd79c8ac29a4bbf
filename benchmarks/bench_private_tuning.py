"""Issue 31: private tuning without splitting the budget (Papernot–Steinke).

``PrivateGridSearch`` chooses hyper-parameters of ``UserDPSGDRegressor`` on a
grid of K = 12 candidates (``--grid mixed``: ``alpha`` x ``max_iter`` x
``clip_norm``, half of them bad; ``--grid close``: ``alpha`` x ``max_iter``,
all reasonable), at the same total budget (epsilon, delta = 1e-6), two ways:

* ``split``: today's default -- every candidate fitted once at rho/K, the
  winner chosen by the private selection on the validation users;
* ``papernot_steinke`` (``tuning="papernot_steinke"``): a random number of
  runs (geometric; mean ``mean_runs``), each a uniformly drawn candidate at
  the per-run rho of ``repeat_select_rho_for`` and scored with its own noise
  on the validation users; only the best run is released.

Both use the same split of the users (the same seed). Recorded per seed: the
held-out R^2 (2000 fresh users of the same model; evaluation only, not
private) of the selected model, the recorded spend (it must be the budget),
and the held-out R^2 of ordinary least squares on the training users (the
non-private reference). Task: ``_regression_data``'s user-structured model,
``--users`` users x 8 rows x 10 features, declared boxes.

Run ``python benchmarks/bench_private_tuning.py`` (``--quick`` for a smoke
run); results go to
``benchmarks/results/private_tuning_<grid>[_quick].{csv,json}``.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_private_search import _synthetic  # noqa: E402
from _results import write_results  # noqa: E402

#: public concentration radius of a user's average squared error, declared
#: for the "_tau" methods (the model's per-user average squared error of OLS
#: has mean 0.58 and sd 0.32 on seed 0: about 6 sd)
TAU = 2.0
#: "mixed": half of the grid is bad (5 steps, or a large clip norm, or
#: alpha = 10); "close": every candidate is reasonable (the default learned
#: clip norm, 30-100 steps, small ridge), so what decides is each fit's budget
GRIDS = {"mixed": {"alpha": [0.0, 1.0, 10.0], "max_iter": [5, 50],
                   "clip_norm": [0.3, 3.0]},
         "close": {"alpha": [0.0, 0.01, 0.1, 1.0], "max_iter": [30, 60, 100]}}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--epsilons", default="1,4")
    parser.add_argument("--methods", default="split,split_tau,ps_geometric_2K,"
                        "ps_geometric_1K_tau,ps_geometric_2K_tau,"
                        "ps_geometric_3K_tau")
    parser.add_argument("--grid", default="mixed", choices=sorted(GRIDS))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results"))
    return parser.parse_args(argv)


def _method(name, K):
    """Search keyword arguments of a method name: ``split`` or
    ``ps_<distribution>_<m>K`` (mean m·K runs), ``_tau`` for the public
    τ = TAU of the validation losses (else the default ``tau="auto"``)."""
    kwargs = {"tau": TAU} if name.endswith("_tau") else {}
    name = name.removesuffix("_tau")
    if name == "split":
        return kwargs
    _, dist, mult = name.split("_")
    return {"tuning": "papernot_steinke", "runs_distribution": dist,
            "mean_runs": float(mult[:-1]) * K, **kwargs}


def run(args):
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from skuserdp.linear_model import UserDPSGDRegressor
    from skuserdp.model_selection import PrivateGridSearch
    grid = GRIDS[args.grid]
    K = int(np.prod([len(v) for v in grid.values()]))
    rows = []
    for eps in [float(e) for e in args.epsilons.split(",")]:
        for seed in range(args.reps):
            X, y, g, Xh, yh, boxes = _synthetic(seed, args.users)
            y_lo, y_hi = boxes["target_bounds"]
            ols = float(r2_score(yh, LinearRegression().fit(X, y).predict(Xh)))
            for method in args.methods.split(","):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    search = PrivateGridSearch(
                        UserDPSGDRegressor(**boxes), grid, epsilon=eps,
                        delta=1e-6, loss_bound=float((y_hi - y_lo) ** 2),
                        samples_per_user=8, random_state=seed,
                        **_method(method, K)).fit(X, y, groups=g)
                r2 = float(r2_score(yh, search.best_estimator_.predict(Xh)))
                rows.append({"epsilon": eps, "seed": seed, "method": method,
                             "epsilon_spent": search.epsilon_,
                             "delta_spent": search.delta_,
                             "chosen": str(search.best_params_), "r2": r2,
                             "ols_r2": ols,
                             "seconds": time.perf_counter() - t0})
                print(rows[-1], flush=True)
    return rows


def summarise(rows):
    out = []
    for eps in sorted({r["epsilon"] for r in rows}):
        split = {r["seed"]: r["r2"] for r in rows
                 if r["epsilon"] == eps and r["method"] == "split"}
        for method in sorted({r["method"] for r in rows}):
            sel = [r for r in rows if r["epsilon"] == eps and r["method"] == method]
            r2 = np.array([r["r2"] for r in sel])
            diff = np.array([r["r2"] - split[r["seed"]] for r in sel
                             if r["seed"] in split])
            out.append({"epsilon": eps, "method": method, "seeds": len(sel),
                        "max_abs_epsilon_spent_minus_budget": float(max(
                            abs(r["epsilon_spent"] - eps) for r in sel)),
                        "r2_median": float(np.median(r2)),
                        "r2_mean": float(np.mean(r2)),
                        "r2_min": float(np.min(r2)),
                        "minus_split_median": float(np.median(diff)),
                        "better_than_split": int(np.sum(diff > 0)),
                        "ols_r2_median": float(np.median([r["ols_r2"] for r in sel])),
                        "seconds_mean": float(np.mean([r["seconds"] for r in sel]))})
            print(out[-1])
    return out


def main(argv=None):
    args = parse_args(argv)
    if args.quick:
        args.reps, args.users, args.epsilons = 1, 1000, "1"
    rows = run(args)
    summary = summarise(rows)
    stem = f"private_tuning_{args.grid}" + ("_quick" if args.quick else "")
    paths = write_results(args.output_dir, stem, rows + summary,
                          {"grid": GRIDS[args.grid], "grid_name": args.grid,
                           "users": args.users, "rows": rows,
                           "summary": summary})
    print("saved", *paths)


if __name__ == "__main__":
    main()
