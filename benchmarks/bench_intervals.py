"""Coverage and width of the user-level confidence intervals of the means.

The acceptance of ``conf_int`` for the mean estimators (spec
``/work/shared/specs/intervals_and_weights.md`` section 2.8). Run from the
repository root::

    python benchmarks/bench_intervals.py --quick    # CI smoke test, < 90 s
    python benchmarks/bench_intervals.py            # the full grid (n_jobs=1)

The unit of privacy is the user (neighbours differ in all rows of one user,
replace-one, number of users public). Every estimator only uses the users'
means, so each replication draws every user's rows, averages them per user
(``np.add.reduceat``, vectorised) and passes the ``n`` user means as rows
with ``groups = arange(n)``. All estimators get ``delta = 1e-6`` and the
declared public box of the family; nominal level 95 % (``alpha = 0.05``)
unless said otherwise.

Pre-registered families (fixed before any run; each coordinate independent;
"user effect" is one draw per user and coordinate, "within" one draw per
row; the truth is the generating law's mean of the users' means, never a
plug-in):

* ``gaussian``: user effect N(0, 1), 10 rows per user, within-user noise
  N(0, 2^2); box [-20, 20]; truth 0.
* ``skewed``: row = lognormal(0, 1) x user effect lognormal(0, 0.5)
  (multiplicative), 10 rows per user; box [0, 100]; truth
  exp(1/2) exp(1/8) = exp(0.625) = 1.868 (exact). A user mean above 100
  needs both factors extreme (probability < 1e-8): the clipping bias is
  negligible and is not added to the truth.
* ``heavy``: row = user effect N(0, 1) + Student t with 3 d.o.f., 10 rows
  per user; box [-50, 50]; truth 0 (exact: law and box symmetric).
* ``unbalanced``: rows per user uniform on {1, ..., 100}, user effect
  N(0, 1), within N(0, 2^2); box [-20, 20]; truth 0.

Parts:

1. ``grid``: ``UserMeanEstimator(epsilon, bounds=box, random_state)``
   (delegates to ``ColumnScaledMeanEstimator``) over families x d in {1, 5}
   x n in {300, 3000} x eps in {0.5, 1, 4}, R = 2000 replications per cell.
   One data set per (family, d, n, replication) is fitted at the three eps
   (common random numbers across eps; cells of different eps are therefore
   correlated, each cell's R replications are independent).
   **Acceptance is per interval, on coordinate 0**: coverage of coordinate
   0's interval in [0.93, 0.97] (binomial sd at R = 2000 and p = 0.95:
   sqrt(0.95 x 0.05 / 2000) = 0.0049). The coverage averaged over the d
   coordinates is reported too (same expectation, smaller Monte-Carlo sd).
   Width: mean over replications and coordinates of ``upper - lower``.
   Oracle width per replication and coordinate
   ``2 x 1.96 x sqrt(se_cluster^2 + sigma_noise^2)``: ``se_cluster`` the sd
   (ddof 1) of the users' box-clipped means / sqrt(n) of that replication,
   ``sigma_noise`` the ``noise_std_`` of a fit with ``ci_share=0`` (the
   full-budget release's own noise sd, a public plan quantity). Target at
   n = 3000, eps = 1: mean width <= 1.5 x mean oracle width (the ratio is
   reported in every cell).
2. ``panels``: the 8 public panels of ``bench_real_means.py`` with their
   committed codebook ranges (``benchmarks/codebooks/``). A panel's users'
   means (``user_means_nan``) are the population; each of R = 1000
   replications resamples ``n_users`` users with replacement and fits at
   eps = 1 with the codebook box; coverage of the panel's own mean of user
   means, per column (binomial sd 0.0069 at R = 1000; target >= 0.93 per
   column, 2.9 sd below 0.95). Reported: min / median coverage over columns.
3. ``peers``: R = 500 (a smoke-size table, band widened to +-3 binomial sd
   = [0.921, 0.979]): ``ClipNoiseMeanEstimator`` and
   ``CoinPressMeanEstimator`` (same declared boxes) vs the default, on
   gaussian and skewed, n = 3000, eps in {1, 4}, d = 1, the same data and
   seeds for the three. CoinPress's interval adds a clipping-bias allowance
   from a private count of the users outside its last ball: expected wide.
4. ``width``: gaussian, d = 1, n = 3000, mean width of the default's
   interval and of the oracle at eps in {0.25, 0.5, 1, 2, 4, 8, 16, 1000},
   R = 300.

``--quick``: R = 100 on a d = 1, eps = 1 sub-grid, 2 panels at R = 50,
R = 50 peers at eps = 1, R = 30 width at 3 eps; it checks that everything
runs, not the acceptance.

A ``ValueError`` from ``fit`` or an ``AttributeError`` from ``conf_int``
(no interval for this fit) is counted as a refusal (the replication then
does not count as covered). Warnings are counted by category.

Results: ``benchmarks/results/intervals[_quick].{csv,json,md}``.
"""

import argparse
import math
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

from _results import write_results

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
DELTA = 1e-6
Z95 = 1.959963984540054
BAND = (0.93, 0.97)
WIDTH_TARGET = 1.5


# --------------------------------------------------------------------------
# families: draw(rng, n, d) -> users' means (n, d)


def _reduce(rows, m):
    """Per-user means of ``rows`` (users' rows contiguous, ``m`` rows each)."""
    starts = np.concatenate(([0], np.cumsum(m)[:-1]))
    return np.add.reduceat(rows, starts, axis=0) / m[:, None]


def _gaussian(rng, n, d):
    m = np.full(n, 10)
    effect = rng.normal(0.0, 1.0, (n, d))
    rows = np.repeat(effect, m, axis=0) + rng.normal(0.0, 2.0, (m.sum(), d))
    return _reduce(rows, m)


def _skewed(rng, n, d):
    m = np.full(n, 10)
    effect = rng.lognormal(0.0, 0.5, (n, d))
    rows = np.repeat(effect, m, axis=0) * rng.lognormal(0.0, 1.0, (m.sum(), d))
    return _reduce(rows, m)


def _heavy(rng, n, d):
    m = np.full(n, 10)
    effect = rng.normal(0.0, 1.0, (n, d))
    rows = np.repeat(effect, m, axis=0) + rng.standard_t(3, (m.sum(), d))
    return _reduce(rows, m)


def _unbalanced(rng, n, d):
    m = rng.integers(1, 101, n)
    effect = rng.normal(0.0, 1.0, (n, d))
    rows = np.repeat(effect, m, axis=0) + rng.normal(0.0, 2.0, (m.sum(), d))
    return _reduce(rows, m)


FAMILIES = {
    # name: (draw, truth per coordinate, declared box (lo, hi))
    "gaussian": (_gaussian, 0.0, (-20.0, 20.0)),
    "skewed": (_skewed, math.exp(0.625), (0.0, 100.0)),
    "heavy": (_heavy, 0.0, (-50.0, 50.0)),
    "unbalanced": (_unbalanced, 0.0, (-20.0, 20.0)),
}


# --------------------------------------------------------------------------
# fitting


def _estimator(name, eps, box, seed, ci_share="auto"):
    from skuserdp.mean import (ClipNoiseMeanEstimator, CoinPressMeanEstimator,
                               UserMeanEstimator)
    cls = {"UserMean": UserMeanEstimator, "ClipNoise": ClipNoiseMeanEstimator,
           "CoinPress": CoinPressMeanEstimator}[name]
    return cls(epsilon=eps, delta=DELTA, bounds=box, ci_share=ci_share,
               random_state=seed)


_NOISE = {}


def oracle_noise_std(name, n, d, eps, box):
    """``noise_std_`` of a fit with ``ci_share=0`` (public: depends on n, d,
    eps and the box only; fitted once on zeros inside the box)."""
    key = (name, n, d, eps, box)
    if key not in _NOISE:
        U = np.full((n, d), (box[0] + box[1]) / 2.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = _estimator(name, eps, box, 0, ci_share=0.0)
            est.fit(U, groups=np.arange(n))
        _NOISE[key] = np.asarray(est.noise_std_, dtype=float)
    return _NOISE[key]


def fit_interval(name, U, eps, box, seed, alphas=(0.05,)):
    """One fit: (intervals (len(alphas), d, 2) or None, status, method,
    warning categories, seconds)."""
    t0 = time.perf_counter()
    method = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = _estimator(name, eps, box, seed).fit(U, groups=np.arange(len(U)))
            method = getattr(est, "method_", name)
            ci = np.stack([np.asarray(est.conf_int(a), dtype=float) for a in alphas])
            status = "ok"
        except (ValueError, AttributeError):
            ci, status = None, "refused"
    cats = {type(w.message).__name__ for w in caught}
    return ci, status, method, cats, time.perf_counter() - t0


class Cell:
    """Accumulates one cell's replications."""

    def __init__(self, d):
        self.cover, self.width, self.oracle = [], [], []
        self.status, self.methods, self.warns = Counter(), Counter(), Counter()
        self.seconds = 0.0
        self.d = d

    def add(self, ci, status, method, cats, secs, truth, oracle=None):
        self.status[status] += 1
        self.methods[method] += 1
        self.warns.update(cats)
        self.seconds += secs
        if ci is None:
            self.cover.append(np.zeros(self.d, bool))
            return
        lo, hi = ci[..., 0], ci[..., 1]
        self.cover.append((lo <= truth) & (truth <= hi))
        self.width.append(hi - lo)
        if oracle is not None:
            self.oracle.append(oracle)

    def summary(self):
        cov = np.array(self.cover, dtype=float)      # (R, d)
        R = len(cov)
        c0 = cov[:, 0].mean()
        out = {"R": R, "coverage_c0": c0,
               "mc_sd_c0": math.sqrt(c0 * (1 - c0) / R),
               "coverage_mean_coords": cov.mean(),
               "coverage_min_coord": cov.mean(axis=0).min(),
               "refusal_rate": 1 - self.status["ok"] / R,
               "seconds_per_fit": self.seconds / R,
               "methods": dict(self.methods), "warnings": dict(self.warns)}
        if self.width:
            out["mean_width"] = float(np.mean(self.width))
        if self.oracle:
            out["oracle_width"] = float(np.mean(self.oracle))
            out["width_over_oracle"] = out["mean_width"] / out["oracle_width"]
        return out


def _oracle_width(U, box, noise_std):
    se = np.clip(U, *box).std(axis=0, ddof=1) / math.sqrt(len(U))
    return 2.0 * Z95 * np.sqrt(se ** 2 + noise_std ** 2)


def _rng(*key):
    return np.random.default_rng([int(k) for k in key])


# --------------------------------------------------------------------------
# parts


def run_grid(args, families, dims, ns, epsilons, R):
    rows = []
    for fi, fam in enumerate(families):
        draw, truth, box = FAMILIES[fam]
        for d in dims:
            for n in ns:
                t0 = time.perf_counter()
                cells = {e: Cell(d) for e in epsilons}
                noise = {e: oracle_noise_std("UserMean", n, d, e, box)
                         for e in epsilons}
                for r in range(R):
                    rng = _rng(args.seed, 1, fi, d, n, r)
                    U = draw(rng, n, d)
                    seed = int(rng.integers(2 ** 31))
                    for e in epsilons:
                        res = fit_interval("UserMean", U, e, box, seed)
                        ci = None if res[0] is None else res[0][0]
                        cells[e].add(ci, *res[1:], truth,
                                     _oracle_width(U, box, noise[e]))
                for e in epsilons:
                    s = cells[e].summary()
                    rows.append({"part": "grid", "family": fam, "d": d, "n": n,
                                 "epsilon": e, **s,
                                 "noise_std_ci_share0": float(noise[e][0])})
                print(f"grid {fam} d={d} n={n}: {time.perf_counter() - t0:.1f} s",
                      flush=True)
    return rows


def run_panels(args, panels, R, eps=1.0):
    import bench_real_means as brm
    rows = []
    for pi, name in enumerate(panels):
        t0 = time.perf_counter()
        cb = brm.load_codebook(name)
        try:
            X, groups = brm.panel_rows(cb)
        except (ImportError, ValueError, KeyError) as exc:
            rows.append({"part": "panels", "panel": name,
                         "skipped": f"{type(exc).__name__}: {exc}"})
            print(f"panel {name}: skipped ({exc})", flush=True)
            continue
        lo, hi = brm._box(cb)
        U, _ = brm.user_means_nan(X, groups, lo, hi)
        n, d = U.shape
        truth = U.mean(axis=0)
        cell = Cell(d)
        for r in range(R):
            rng = _rng(args.seed, 2, pi, r)
            Ub = U[rng.integers(0, n, n)]
            seed = int(rng.integers(2 ** 31))
            res = fit_interval("UserMean", Ub, eps, (lo, hi), seed)
            cell.add(None if res[0] is None else res[0][0], *res[1:], truth)
        s = cell.summary()
        per_col = np.array(cell.cover, dtype=float).mean(axis=0)
        widths = (np.mean(cell.width, axis=0) if cell.width
                  else np.full(d, np.nan))
        rows.append({"part": "panels", "panel": name, "n_users": n, "d": d,
                     "epsilon": eps, "R": R,
                     "min_col_coverage": float(per_col.min()),
                     "median_col_coverage": float(np.median(per_col)),
                     "worst_col": list(cb["columns"])[int(per_col.argmin())],
                     "users_outside_box": int(((U < lo) | (U > hi)).any(axis=1).sum()),
                     "refusal_rate": s["refusal_rate"],
                     "methods": s["methods"], "warnings": s["warnings"],
                     "per_column_coverage": per_col.tolist(),
                     "per_column_width_over_range": (widths / (hi - lo)).tolist(),
                     "columns": list(cb["columns"])})
        print(f"panel {name}: {n} users x {d}, {time.perf_counter() - t0:.1f} s",
              flush=True)
    return rows


def run_peers(args, families, epsilons, R, n=3000, d=1):
    rows = []
    methods = ("UserMean", "ClipNoise", "CoinPress")
    for fam in families:
        fi = list(FAMILIES).index(fam)
        draw, truth, box = FAMILIES[fam]
        cells = {(m, e): Cell(d) for m in methods for e in epsilons}
        noise = {e: oracle_noise_std("UserMean", n, d, e, box) for e in epsilons}
        t0 = time.perf_counter()
        for r in range(R):
            rng = _rng(args.seed, 3, fi, r)
            U = draw(rng, n, d)
            seed = int(rng.integers(2 ** 31))
            for m in methods:
                for e in epsilons:
                    res = fit_interval(m, U, e, box, seed)
                    cells[m, e].add(None if res[0] is None else res[0][0], *res[1:],
                                    truth, _oracle_width(U, box, noise[e]))
        for (m, e), c in cells.items():
            rows.append({"part": "peers", "family": fam, "estimator": m, "d": d,
                         "n": n, "epsilon": e, **c.summary()})
        print(f"peers {fam}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def run_width(args, epsilons, R, n=3000, d=1, fam="gaussian"):
    draw, truth, box = FAMILIES[fam]
    cells = {e: Cell(d) for e in epsilons}
    noise = {e: oracle_noise_std("UserMean", n, d, e, box) for e in epsilons}
    t0 = time.perf_counter()
    for r in range(R):
        rng = _rng(args.seed, 4, r)
        U = draw(rng, n, d)
        seed = int(rng.integers(2 ** 31))
        for e in epsilons:
            res = fit_interval("UserMean", U, e, box, seed)
            cells[e].add(None if res[0] is None else res[0][0], *res[1:], truth,
                         _oracle_width(U, box, noise[e]))
    print(f"width: {time.perf_counter() - t0:.1f} s", flush=True)
    return [{"part": "width", "family": fam, "d": d, "n": n, "epsilon": e,
             **c.summary(), "noise_std_ci_share0": float(noise[e][0])}
            for e, c in cells.items()]


# --------------------------------------------------------------------------
# tables


def _f(x, fmt=".3f"):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else format(x, fmt)


def _flag(ok):
    return "" if ok else " ✗"


def table_grid(rows):
    out = ["| family | d | n | ε | cov. coord 0 (± MC sd) | cov. mean coords | "
           "mean width | oracle width | width/oracle | s/fit |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cov = r["coverage_c0"]
        ok = BAND[0] <= cov <= BAND[1]
        ratio = r.get("width_over_oracle")
        rflag = (r["n"] == 3000 and r["epsilon"] == 1.0 and ratio is not None
                 and ratio > WIDTH_TARGET)
        out.append(
            f"| {r['family']} | {r['d']} | {r['n']} | {r['epsilon']:g} | "
            f"{cov:.4f} ± {r['mc_sd_c0']:.4f}{_flag(ok)} | "
            f"{r['coverage_mean_coords']:.4f} | {_f(r.get('mean_width'), '.4g')} | "
            f"{_f(r.get('oracle_width'), '.4g')} | {_f(ratio, '.2f')}"
            f"{_flag(not rflag)} | {r['seconds_per_fit']:.4f} |")
    return "\n".join(out)


def table_panels(rows):
    out = ["| panel | users | d | R | min col. coverage (column) | median col. "
           "coverage | refusals | users outside box |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            out.append(f"| {r['panel']} | skipped: {r['skipped']} |||||||")
            continue
        ok = r["min_col_coverage"] >= BAND[0]
        out.append(f"| {r['panel']} | {r['n_users']} | {r['d']} | {r['R']} | "
                   f"{r['min_col_coverage']:.3f} ({r['worst_col']}){_flag(ok)} | "
                   f"{r['median_col_coverage']:.3f} | {r['refusal_rate']:.1%} | "
                   f"{r['users_outside_box']} |")
    return "\n".join(out)


def table_peers(rows):
    out = ["| family | ε | estimator | coverage (± MC sd) | mean width | "
           "width / default's | width/oracle | s/fit |",
           "|---|---|---|---|---|---|---|---|"]
    base = {(r["family"], r["epsilon"]): r.get("mean_width") for r in rows
            if r["estimator"] == "UserMean"}
    for r in sorted(rows, key=lambda r: (r["family"], r["epsilon"])):
        b = base.get((r["family"], r["epsilon"]))
        w = r.get("mean_width")
        out.append(f"| {r['family']} | {r['epsilon']:g} | {r['estimator']} | "
                   f"{r['coverage_c0']:.3f} ± {r['mc_sd_c0']:.3f} | {_f(w, '.4g')} | "
                   f"{_f(w / b if w and b else None, '.2f')} | "
                   f"{_f(r.get('width_over_oracle'), '.2f')} | "
                   f"{r['seconds_per_fit']:.4f} |")
    return "\n".join(out)


def table_width(rows):
    out = ["| ε | coverage | mean width | oracle width | width/oracle | "
           "noise sd (ci_share=0) |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['epsilon']:g} | {r['coverage_c0']:.3f} | "
                   f"{r['mean_width']:.4g} | {r['oracle_width']:.4g} | "
                   f"{r['width_over_oracle']:.2f} | {r['noise_std_ci_share0']:.3g} |")
    return "\n".join(out)


# --------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smoke test, < 90 s")
    p.add_argument("--parts", default="grid,panels,peers,width")
    p.add_argument("--runs", type=int, default=2000, help="R of the grid")
    p.add_argument("--panel-runs", type=int, default=1000)
    p.add_argument("--peer-runs", type=int, default=500)
    p.add_argument("--width-runs", type=int, default=300)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    args.parts = [s for s in args.parts.split(",") if s]
    return args


def main(argv=None):
    args = parse_args(argv)
    t_start = time.perf_counter()
    q = args.quick
    grid = dict(families=list(FAMILIES), dims=(1,) if q else (1, 5),
                ns=(300, 3000), epsilons=(1.0,) if q else (0.5, 1.0, 4.0),
                R=100 if q else args.runs)
    panels = dict(panels=["plm_wages", "carData_wong"] if q else None,
                  R=50 if q else args.panel_runs)
    peers = dict(families=["gaussian", "skewed"],
                 epsilons=(1.0,) if q else (1.0, 4.0), R=50 if q else args.peer_runs)
    width = dict(epsilons=(0.5, 4.0, 1000.0) if q else
                 (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 1000.0),
                 R=30 if q else args.width_runs)
    sections, rows = [], []
    if "grid" in args.parts:
        g = run_grid(args, **grid)
        rows += g
        sections.append(
            f"## 1. Coverage grid: UserMeanEstimator, nominal 95 %, R = {grid['R']}"
            " per cell\n\nAcceptance per interval on coordinate 0: coverage in "
            f"[{BAND[0]}, {BAND[1]}] (binomial sd at R = {grid['R']}, p = 0.95: "
            f"{math.sqrt(0.0475 / grid['R']):.4f}); width ≤ {WIDTH_TARGET}× oracle "
            "at n = 3000, ε = 1. ✗ marks a miss.\n\n" + table_grid(g))
    if "panels" in args.parts:
        import bench_real_means as brm
        names = panels["panels"] or brm.all_panels()
        pr = run_panels(args, names, panels["R"])
        rows += pr
        sections.append(
            f"## 2. Public panels as populations, ε = 1, R = {panels['R']}\n\n"
            "Users resampled with replacement; truth = the panel's mean of user "
            f"means; binomial sd at R = {panels['R']}: "
            f"{math.sqrt(0.0475 / panels['R']):.4f}; target ≥ {BAND[0]} per "
            "column.\n\n" + table_panels(pr))
    if "peers" in args.parts:
        pe = run_peers(args, **peers)
        rows += pe
        sd = math.sqrt(0.0475 / peers["R"])
        sections.append(
            f"## 3. Other estimators' intervals, n = 3000, d = 1, R = {peers['R']}\n"
            f"\nSmoke-size R: band ±3 binomial sd = [{0.95 - 3 * sd:.3f}, "
            f"{0.95 + 3 * sd:.3f}]. Same data and seeds for the three.\n\n"
            + table_peers(pe))
    if "width" in args.parts:
        w = run_width(args, **width)
        rows += w
        sections.append(
            f"## 4. Width vs ε: gaussian, d = 1, n = 3000, R = {width['R']}\n\n"
            + table_width(w))
    total = time.perf_counter() - t_start
    text = "\n\n".join(sections)
    print()
    print(text)
    print(f"\ntotal {total:.1f} s")
    stem = "intervals_quick" if q else "intervals"
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / f"{stem}.md").write_text(text + "\n")
    payload = {"params": {"quick": q, "grid": {k: list(v) if isinstance(v, tuple)
                                               else v for k, v in grid.items()},
                          "panels": panels, "peers": peers, "width": width,
                          "delta": DELTA, "seed": args.seed, "band": BAND,
                          "width_target": WIDTH_TARGET, "parts": args.parts},
               "total_seconds": total, "results": rows}
    flat = [{k: v for k, v in r.items() if not isinstance(v, (list, dict))}
            for r in rows]
    paths = write_results(args.output_dir, stem, flat, payload)
    print("saved", *paths, args.output_dir / f"{stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
