"""Phased ERM against plain private gradient descent (issue 31, part 3).

Where does Levy et al.'s Phased ERM (Algorithm 4, ``plan_phased_erm``) beat
plain private gradient descent (``plan_gradient_descent``, the estimators'
``solver="gd"``)? Core functions, a strongly convex task with a known
optimum:

* every user holds m i.i.d. rows ``x ~ N(c, 0.3²I)`` in R^d (d = 3,
  ``c = (0.3, −0.2, 0.1)``; the paper's model: users with i.i.d. rows from
  one distribution), projected onto the unit ball; the loss is
  ``½‖θ − x‖²`` (H = μ = 1), so a user's average gradient is ``θ − x̄_u``
  and the optimum of the users' objective is ``θ* = mean_u x̄_u``;
* public constants: parameter ball R = 1, gradient bound G = R + 1 (rows
  are clipped to the unit ball, so it holds), ε = 1, δ = 1e-6, replace-one
  users;
* methods: ``gd`` (convex schedule and tail averaging, the estimators'
  default, ``T = 20``), ``gd_sc`` (the strongly convex schedule with μ = 1,
  ``T = 20``) and ``phased`` (Phased ERM, ``max_iter = 100`` per phase),
  each with the clip aggregator and with the winsorized one
  (``calibration="tight"``, τ from Levy et al.'s Proposition 1 as the
  estimators compute it: ``tau_gradients`` at failure probability 0.01);
* error: the excess *population* risk ``½‖θ̂ − θ_pop‖²`` times 2 (Phased
  ERM's guarantee is for the population risk; ``θ_pop = E[x]`` of the
  projected rows, by Monte Carlo over 4·10⁶ rows, standard error ~2·10⁻⁴
  per coordinate), median over seeds; also ``‖θ̂ − θ*‖²`` to the users'
  empirical optimum; n ∈ {250, 1000, 4000, 16000, 64000} users and
  m ∈ {10, 100} rows.

Usage::

    python benchmarks/bench_phased_erm.py [--quick] [--seeds S]
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from _results import write_results

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
D, R, EPS, DELTA, T_GD, SPREAD = 3, 1.0, 1.0, 1e-6, 20, 0.3
CENTRE = np.array([0.3, -0.2, 0.1])


def _rows(rng, shape):
    rows = CENTRE + SPREAD * rng.normal(size=shape + (D,))
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows * np.minimum(1.0, 1.0 / norms)      # rows in the unit ball


POPULATION = _rows(np.random.default_rng(2 ** 31), (4_000_000,)).mean(axis=0)


def user_means(n, m, seed):
    rng = np.random.default_rng(seed)
    return _rows(rng, (n, m)).mean(axis=1)


def run_one(method, aggregator, n, m, seed):
    from skuserdp.linear_model import (phased_erm, plan_gradient_descent,
                                       plan_phased_erm, private_gradient_descent)
    from skuserdp.mean._concentration import tau_gradients
    Z = user_means(n, m, seed)
    target = Z.mean(axis=0)
    G = R + 1.0
    kw = dict(epsilon=EPS, delta=DELTA, aggregator=aggregator, gradient_bound=G,
              smoothness=1.0, radius=R, calibration="tight")
    if aggregator == "winsorized":
        def tau(n_users):  # Proposition 1, as the estimators compute it
            return tau_gradients(G, 1.0, R, D, m, n_users, 0.01)
        kw["tau"] = tau if method == "phased" else tau(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == "phased":
            plan = plan_phased_erm(n, D, samples_per_user=m, max_iter=100, **kw)
            theta = phased_erm(lambda users: (lambda th: th - Z[users]), plan,
                               theta0=np.zeros(D), random_state=seed)
            steps = plan.n_steps
        else:
            sc = 1.0 if method == "gd_sc" else 0.0
            plan = plan_gradient_descent(n, D, n_steps=T_GD, strong_convexity=sc,
                                         **kw)
            theta = private_gradient_descent(lambda th: th - Z, plan,
                                             theta0=np.zeros(D), random_state=seed)
            steps = plan.n_steps
    return (float(np.sum((theta - POPULATION) ** 2)),
            float(np.sum((theta - target) ** 2)), steps, len(caught))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    a = p.parse_args(argv)
    ns = (1000, 16000) if a.quick else (250, 1000, 4000, 16000, 64000)
    ms = (10,) if a.quick else (10, 100)
    seeds = range(3 if a.quick else a.seeds)
    rows, summary = [], []
    for aggregator in ("clip", "winsorized"):
        for m in ms:
            for n in ns:
                med = {}
                for method in ("gd", "gd_sc", "phased"):
                    t0 = time.perf_counter()
                    errs, emp, steps, warned = [], [], 0, 0
                    for s in seeds:
                        e, e_emp, steps, w = run_one(method, aggregator, n, m, s)
                        errs.append(e)
                        emp.append(e_emp)
                        warned += w > 0
                    med[method] = float(np.median(errs))
                    rows.append(dict(aggregator=aggregator, m=m, n=n, method=method,
                                     median_sq_error=med[method],
                                     median_sq_error_empirical=float(np.median(emp)),
                                     steps=steps,
                                     warned_fits=warned, seeds=len(errs),
                                     seconds=time.perf_counter() - t0))
                line = dict(aggregator=aggregator, m=m, n=n,
                            gd=med["gd"], gd_sc=med["gd_sc"], phased=med["phased"],
                            phased_over_gd=med["phased"] / med["gd"],
                            phased_over_best_gd=med["phased"]
                            / min(med["gd"], med["gd_sc"]))
                summary.append(line)
                print(json.dumps({k: (round(v, 6) if isinstance(v, float) else v)
                                  for k, v in line.items()}))
    stem = "phased_erm" + ("_quick" if a.quick else "")
    write_results(a.output_dir, stem, rows, {"summary": summary, "rows": rows})


if __name__ == "__main__":
    main()
