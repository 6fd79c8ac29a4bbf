"""Unbalanced users (issue 30): weighted means and the row-level estimand.

Three parts, each printed and saved to ``benchmarks/results/unbalanced*.json``:

A. Synthetic, 1-D, n = 2000 users: half with 2 rows, half with ``m_big``
   rows (m_big ∈ {2, 8, 32, 128, 200, 512}); skewed rows (lognormal, σ = 1)
   scaled by a user effect (1 + 0.1·N(0, 1)); declared box [0, 10];
   ε ∈ {1, 4, 16}. ``UserMeanEstimator(weighting="auto")`` against the same
   estimator with equal weights, on the data truncated to 2 rows per user,
   and on the big users only (the oracle that knows who they are). RMSE
   about the population mean of the users' means (1), and the log-log slope
   of the error in m_big (m_big ≥ 8).
B. The row estimand on public unbalanced panels (codebook bounds): relative
   bias of ``estimand="row_mean"`` with ``max_rows`` = the panel's largest
   row count (public here: the panel is public) against the row mean, at
   ε = 1000 (mean of 20·R fits, with its standard error).
C. The same panels at ε ∈ {1, 4, 16}, as populations (two-stage bootstrap: users,
   then each user's rows, with replacement): weighting="auto" against
   ``weighting="equal"``, RMSE about the mean of the users' means per
   column, with the standard error of the RMSE difference (paired runs).

Usage::

    python benchmarks/bench_unbalanced.py [--quick] [--reps R] [--eps-a E ...]
                                          [--parts abc] [--output-dir DIR]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_real_means import load_codebook, panel_rows  # noqa: E402

from skuserdp.mean import UserMeanEstimator  # noqa: E402

RESULTS = HERE / "results"
PANELS = ["mlmRev_chem97", "plm_wages", "Ecdat_laborsupply", "wooldridge_countymurders",
          "AER_guns", "plm_emplUK", "carData_wong", "wooldridge_airfare"]


def synthetic(n, m_big, seed):
    rng = np.random.default_rng(seed)
    m = np.where(np.arange(n) < n // 2, 2, m_big)
    effect = 1.0 + 0.1 * rng.standard_normal(n)
    groups = np.repeat(np.arange(n), m)
    x = effect[groups] * rng.lognormal(0.0, 1.0, size=groups.size) / np.exp(0.5)
    return x[:, None], groups, m


def _fit(X, groups, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return UserMeanEstimator(**kw).fit(X, groups=groups).mean_


def part_a(reps, eps, n=2000, m_grid=(2, 8, 32, 128, 200, 512)):
    rows = []
    for m_big in m_grid:
        err = {k: [] for k in ("weighted", "equal", "truncated", "big_only")}
        for r in range(reps):
            X, g, m = synthetic(n, m_big, 10_000 + r)
            kw = dict(epsilon=eps, bounds=(0.0, 10.0), random_state=20_000 + r)
            err["weighted"].append(_fit(X, g, weighting="auto", **kw)[0] - 1.0)
            err["equal"].append(_fit(X, g, weighting="equal", **kw)[0] - 1.0)
            first = np.r_[0, np.cumsum(m)[:-1]]
            keep = (first[:, None] + np.arange(2)).ravel()
            err["truncated"].append(_fit(X[keep], g[keep], weighting="equal", **kw)[0]
                                    - 1.0)
            big = m[g] == m_big if m_big > 2 else g >= n // 2
            err["big_only"].append(_fit(X[big], g[big], weighting="equal", **kw)[0]
                                   - 1.0)
        rmse = {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in err.items()}
        rows.append(dict(m_big=m_big, reps=reps, epsilon=eps, **rmse,
                         ratio_truncated=rmse["weighted"] / rmse["truncated"],
                         ratio_big_only=rmse["weighted"] / rmse["big_only"]))
        print(f"A ε={eps:g} m_big={m_big:4d} weighted {rmse['weighted']:.5f} equal "
              f"{rmse['equal']:.5f} truncated {rmse['truncated']:.5f} big-only "
              f"{rmse['big_only']:.5f}  ×trunc {rows[-1]['ratio_truncated']:.2f} "
              f"×big {rows[-1]['ratio_big_only']:.2f}", flush=True)
    sel = [r for r in rows if r["m_big"] >= 8]
    lm = np.log([r["m_big"] for r in sel])
    slopes = {k: float(np.polyfit(lm, np.log([r[k] for r in sel]), 1)[0])
              for k in ("weighted", "equal", "big_only")}
    print(f"A ε={eps:g} slopes (m_big ≥ 8):",
          {k: round(v, 3) for k, v in slopes.items()})
    return dict(rows=rows, slopes=slopes)


def _panel(name):
    cb = load_codebook(name)
    X, groups = panel_rows(cb)
    ok = np.isfinite(X).all(axis=1)
    X, groups = X[ok], np.unique(groups[ok], return_inverse=True)[1]
    lo = np.array([c["lo"] for c in cb["columns"].values()], float)
    hi = np.array([c["hi"] for c in cb["columns"].values()], float)
    X = np.clip(X, lo, hi)  # rows inside the codebook's range (public)
    return cb, X, groups, lo, hi


def part_b(eps=1000.0, seeds=3):
    out = []
    for name in PANELS:
        cb, X, g, lo, hi = _panel(name)
        counts = np.bincount(g)
        k = int(counts.max())
        row_mean = X.mean(axis=0)
        ests = np.array([_fit(X, g, epsilon=eps, bounds=(lo, hi), estimand="row_mean",
                              max_rows=k, random_state=s) for s in range(seeds)])
        est = ests.mean(axis=0)
        se = ests.std(axis=0, ddof=1) / np.sqrt(seeds) if seeds > 1 else 0 * est
        scale = np.where(np.abs(row_mean) > 0, np.abs(row_mean), hi - lo)
        rel = np.abs(est - row_mean) / scale
        rel_se = se / scale
        user = np.mean([X[g == u].mean(axis=0) for u in range(counts.size)], axis=0) \
            if counts.size < 5000 else None
        gap = (None if user is None else
               float(np.max(np.abs(user - row_mean) / scale)))
        out.append(dict(panel=name, users=int(counts.size), max_rows=k, seeds=seeds,
                        max_rel_bias=float(rel.max()),
                        rel_se_at_max=float(rel_se[np.argmax(rel)]),
                        columns={c: float(v) for c, v in zip(cb["columns"], rel)},
                        user_vs_row_gap=gap))
        print(f"B {name:26s} users {counts.size:5d} max_rows {k:4d} max rel. bias "
              f"{rel.max() * 100:.3f} % (se {rel_se[np.argmax(rel)] * 100:.3f} %) "
              f"(user-mean vs row-mean gap "
              f"{'-' if gap is None else f'{gap * 100:.1f} %'})", flush=True)
    return out


def part_c(reps, eps_list=(1.0, 4.0, 16.0)):
    out = []
    for eps in eps_list:
        out += _part_c(reps, eps)
    return out


def _part_c(reps, eps):
    out = []
    for name in PANELS:
        cb, X, g, lo, hi = _panel(name)
        counts = np.bincount(g)
        n = counts.size
        sums = np.zeros((n, X.shape[1]))
        np.add.at(sums, g, X)
        truth = (sums / counts[:, None]).mean(axis=0)
        order = np.argsort(g, kind="stable")
        start = np.r_[0, np.cumsum(counts)[:-1]]
        dw, de, kinds = [], [], []
        for r in range(reps):
            # two-stage bootstrap: users with replacement, then each drawn
            # user's rows with replacement (its row count kept)
            rng = np.random.default_rng(40_000 + r)
            users = rng.integers(0, n, n)
            m = counts[users]
            pos = np.repeat(start[users], m) + (rng.random(m.sum())
                                                * np.repeat(m, m)).astype(int)
            Xb, gb = X[order[pos]], np.repeat(np.arange(n), m)
            kw = dict(epsilon=eps, bounds=(lo, hi), random_state=30_000 + r)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = UserMeanEstimator(weighting="auto", **kw).fit(Xb, groups=gb)
            dw.append(est.mean_ - truth)
            kinds.append(est.weighting_)
            de.append(_fit(Xb, gb, weighting="equal", **kw) - truth)
        dw, de = np.array(dw), np.array(de)
        rw, re_ = np.sqrt((dw ** 2).mean(0)), np.sqrt((de ** 2).mean(0))
        # standard error of rmse_w − rmse_e (paired, delta method on MSEs)
        diff = dw ** 2 - de ** 2
        se = diff.std(0, ddof=1) / np.sqrt(reps) / (2 * np.maximum(re_, 1e-300))
        worse = (rw - re_) / np.maximum(se, 1e-300)
        spread = float(np.quantile(counts, 0.9) / max(np.quantile(counts, 0.1), 1))
        out.append(dict(panel=name, epsilon=eps, users=int(n), rows_p90_over_p10=spread,
                        weighted_share=float(np.mean([k != "equal" for k in kinds])),
                        columns={c: dict(weighted=float(a), equal=float(b),
                                         se=float(s), z=float(z))
                                 for c, a, b, s, z in zip(cb["columns"], rw, re_, se,
                                                          worse)}))
        print(f"C ε={eps:g} {name:26s} users {n:5d} rows p90/p10 {spread:5.1f} "
              f"weighted in "
              f"{out[-1]['weighted_share'] * 100:3.0f} % of fits; "
              f"ratio w/e per column {np.round(rw / re_, 3).tolist()}; worst "
              f"(w − e)/se {worse.max():+.2f}", flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--eps-a", type=float, nargs="+", default=[1.0, 4.0, 16.0])
    p.add_argument("--parts", default="abc")
    p.add_argument("--output-dir", type=Path, default=RESULTS)
    a = p.parse_args(argv)
    reps = 5 if a.quick else a.reps
    t0 = time.time()
    res = {}
    if "a" in a.parts:
        res["a"] = [part_a(reps, eps, m_grid=(2, 32, 512) if a.quick
                           else (2, 8, 32, 128, 200, 512)) for eps in a.eps_a]
    if "b" in a.parts:
        res["b"] = part_b(seeds=2 if a.quick else 20 * reps)
    if "c" in a.parts:
        res["c"] = part_c(3 if a.quick else reps,
                          (1.0,) if a.quick else (1.0, 4.0, 16.0))
    res["seconds"] = time.time() - t0
    out = a.output_dir / f"unbalanced{'_quick' if a.quick else ''}_{a.parts}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"done in {res['seconds']:.0f} s")


if __name__ == "__main__":
    main()
