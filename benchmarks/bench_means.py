"""User-level mean estimators against peers, an oracle and the lower bounds (issue 7).

Run from the repository root (the ``bench`` extra; OpenDP and diffprivlib
peers run when importable)::

    python benchmarks/bench_means.py --quick     # < 10 min on 2 CPUs
    python benchmarks/bench_means.py             # the full suite

Every error is the L2 distance of a private estimate to the non-private mean
of the users' means (the estimand of every user-level method here), except
in regime (e), where it is the distance to the clean population mean (the
corrupted users are adversarial). Medians over repetitions; every
repetition draws fresh data. All methods use the same neighbouring relation:
replace one user's entire data, the number of users public.

Parts:

* ``tm1`` -- the reference task T-M1 of issue 7: 1000 users x 50 rows,
  d = 10, user means ``mu + 0.5 N(0, I)``, rows ``mu_u + N(0, I)``,
  ``mu = linspace(-1, 1, 10)``, epsilon = 1, delta = 1e-6. skuserdp
  estimators know only the loose public box ``B = 100`` per coordinate; the
  peer vector Gaussian (OpenDP, and the same design with skuserdp's lattice
  noise) uses the hand-picked L2 clip ``C = 4`` on the user means.
* regimes (a)-(f) and the sweeps vs n, m, d and epsilon (see ``REGIMES``).
* ``corrupted`` -- T-M1's shape with 5-30 % of the users corrupted at
  distance 10, 50 or 1000 (error to the clean mean); the dispatcher is told
  ``corrupted_fraction`` (``CORRUPTED``).

References in every table and plot: the non-private estimator (its error
to the *population* mean: the sampling error, which the private errors
above, measured to the empirical mean, do not include), an *oracle*
clip-and-noise (centre = the true mean, radius = the largest distance of a
user mean to it: not private; what clip-and-noise gets when it clips nobody
and knows where the users are -- an estimator that clips some users, like
CoinPress, can beat it), and the lower bound of Agarwal et al. for
user-level mean estimation with all constants set to 1, labelled "shape
only" (not drawn for unequal rows per user).

Results: ``benchmarks/results/means[_quick].{csv,json,md}`` and PNG plots
``means[_quick]_<sweep>.png``.
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DELTA = 1e-6
TM1 = dict(n_users=1000, samples_per_user=50, n_features=10, user_spread=0.5,
           epsilon=1.0, bound=100.0, peer_clip=4.0)


# ---------------------------------------------------------------- the data
def make_data(n_users, n_features, samples_per_user, *, seed, distribution="gaussian",
              user_spread=0.5, corrupted_fraction=0.0, corruption_distance=50.0,
              tail_index=None):
    """Rows, groups, the population mean and the users' means."""
    from skuserdp.datasets import make_user_samples
    from skuserdp.users import user_means
    mu = np.linspace(-1.0, 1.0, n_features)
    X, groups, mean = make_user_samples(
        n_users=n_users, n_features=n_features, samples_per_user=samples_per_user,
        distribution=distribution, mean=mu, user_spread=user_spread,
        sample_spread=1.0, tail_index=tail_index,
        corrupted_fraction=corrupted_fraction,
        corruption_distance=corruption_distance, random_state=seed)
    return X, groups, mean, user_means(X, groups).means


# ------------------------------------------------------------------- methods
def ours(name, **public):
    """A skuserdp estimator given the regime's public knowledge."""
    from skuserdp import mean as m
    cls = {"clip_noise_box": m.ClipNoiseMeanEstimator,
           "winsorized": m.WinsorizedMeanEstimator,
           "coinpress": m.CoinPressMeanEstimator,
           "few_users": m.FewUsersBallEstimator,
           "threaded": m.ThreadedClipNoiseEstimator,
           "auto": m.UserMeanEstimator}[name]

    def fit(X, groups, eps, seed, d):
        kw = dict(public)
        if "bound" in kw:  # the regime's box [-bound, bound]^d, declared
            b = float(kw.pop("bound"))
            kw["bounds"] = (-b, b)
        if name == "clip_noise_box":  # only the box: its circumscribed ball
            kw = dict(radius=float(public["bound"]) * math.sqrt(d), center=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(epsilon=eps, delta=DELTA, random_state=seed, **kw)
            return est.fit(X, groups=groups).mean_
    return fit


def peer_skuserdp_clip(C):
    """The peer design (L2 clip C around 0, one vector Gaussian) on skuserdp's
    lattice noise; the same design as the OpenDP peer."""
    from skuserdp.mean import clip_noise_mean

    def fit(U, eps, seed):
        return clip_noise_mean(U, epsilon=eps, delta=DELTA, radius=C,
                               random_state=seed)[0]
    return fit


_OPENDP = {}


def opendp_peer(C, d, eps):
    """OpenDP: vector Gaussian on the sum of L2-clipped user means (clip C),
    calibrated by OpenDP to (eps, DELTA) for replace-one (d_in = 2C on the
    sum); ``None`` with the reason when OpenDP cannot be imported."""
    key = (C, d, eps)
    if key in _OPENDP:
        return _OPENDP[key]
    try:
        import opendp.prelude as dp
    except ImportError as exc:
        return None, f"opendp not importable: {exc}"
    dp.enable_features("contrib")
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=d),
             dp.l2_distance(T=float))
    meas = dp.binary_search_chain(
        lambda s: dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(
            space >> dp.m.then_gaussian(s)), delta=DELTA),
        d_in=2.0 * C, d_out=(eps, DELTA))

    def fit(U, eps_, seed):
        norms = np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-300)
        S = (U * np.minimum(1.0, C / norms)).sum(axis=0)
        return np.asarray(meas(S.tolist())) / U.shape[0]
    _OPENDP[key] = (fit, None)
    return _OPENDP[key]


def opendp_polars_peer(C, d, eps):
    """OpenDP's Polars interface: privacy unit = one user (identifier column,
    2 contributions: replace-one), ``truncate_per_group(m)`` rows per user,
    a DP sum per column clamped to [-C, C] and a DP count; mean = sums /
    count. zCDP budget ``rho(eps, DELTA)`` (the same conversion as
    skuserdp's). ``None`` with the reason when OpenDP or Polars is missing."""
    try:
        import opendp.prelude as dp
        import polars as pl
    except ImportError as exc:
        return None, f"opendp[polars] not importable: {exc}"
    from skuserdp.privacy import zcdp_rho_for
    dp.enable_features("contrib")
    cols = [f"x{i}" for i in range(d)]
    rho = zcdp_rho_for(eps, DELTA)

    def fit(X, groups):
        df = pl.DataFrame({"user": groups, **{c: X[:, i] for i, c in enumerate(cols)}})
        with warnings.catch_warnings():
            # OpenDP announces a future change of a default (signed sums)
            warnings.simplefilter("ignore", FutureWarning)
            ctx = dp.Context.compositor(
                data=df.lazy(),
                privacy_unit=dp.unit_of(contributions=2, identifier=pl.col("user")),
                privacy_loss=dp.loss_of(rho=rho), split_evenly_over=1,
                margins=[dp.polars.Margin(max_length=10 ** 7)])
            q = ctx.query().truncate_per_group(TM1["samples_per_user"]).select(
                [pl.col(c).fill_null(0.0).dp.sum((-C, C)) for c in cols]
                + [dp.len()])
            res = q.release().collect()
        return np.array([res[c][0] for c in cols]) / max(res["len"][0], 1)
    return fit, None


def diffprivlib_peer(C):
    """diffprivlib ``tools.mean`` on the user means, box [-C, C] per
    coordinate (pure epsilon split over the coordinates by diffprivlib)."""
    import _regression_data as rd
    info = rd.import_diffprivlib()
    if "error" in info:
        return None, info["error"]
    from diffprivlib import tools

    def fit(U, eps, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(tools.mean(np.clip(U, -C, C), epsilon=eps,
                                         bounds=(-C, C), axis=0,
                                         random_state=seed))
    return fit, None


def oracle(U, mu, eps, seed):
    """Clip-and-noise with the true centre and the true largest radius."""
    from skuserdp.mean import clip_noise_mean
    r = float(np.max(np.linalg.norm(U - mu, axis=1)))
    return clip_noise_mean(U, epsilon=eps, delta=DELTA, radius=r, center=mu,
                           random_state=seed)[0]


def lower_bound_shape(n, m, d, eps, sigma2=1.0):
    """Agarwal et al.'s user-level lower bound with constants 1 (shape only):
    the L2 error ``alpha`` solving ``n = d/(alpha^2 m) + d/(alpha sqrt(m) eps)
    + ln(1/delta)/eps`` per unit variance, i.e. the larger root; ``nan`` if
    ``n`` is below the ``ln(1/delta)/eps`` users that any method needs."""
    rest = n - math.log(1.0 / DELTA) / eps
    if rest <= 0:
        return float("nan")
    # rest * alpha^2 - (d / (sqrt(m) eps)) alpha - d / m = 0
    a, b, c = rest, -d / (math.sqrt(m) * eps), -d / m
    return math.sqrt(sigma2) * (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)


# ------------------------------------------------------------------- regimes
# Each regime: the data, the public knowledge of skuserdp's estimators, the
# peer's hand-picked clip C, and which skuserdp estimators can run with it.
REGIMES = {
    "a_concentrated": dict(
        title="(a) many concentrated users, loose box B = 100",
        data=dict(n_users=5000, n_features=10, samples_per_user=50),
        public=dict(bound=100.0), peer_clip=4.0,
        methods=["coinpress", "winsorized", "clip_noise_box", "auto"]),
    "b_few_users": dict(
        title="(b) few users (n = 100, d = 100), declared user radius 7",
        data=dict(n_users=100, n_features=100, samples_per_user=50),
        public=dict(bound=100.0, radius=7.0), peer_clip=9.0,
        # radius: the users' means lie within 7 of their mean (no location)
        methods=["coinpress", "winsorized", "few_users", "clip_noise_box", "auto"]),
    "c_heavy_tails": dict(
        title="(c) heavy tails (Student t, 3 d.o.f.), m = 20",
        data=dict(n_users=2000, n_features=10, samples_per_user=20,
                  distribution="student_t", tail_index=3.0),
        public=dict(bound=100.0, moment_order=2.0, moment_bound=1.7,
                    samples_per_user=20), peer_clip=4.0,
        methods=["coinpress", "winsorized", "threaded", "clip_noise_box", "auto"]),
    "d_unequal_rows": dict(
        title="(d) unequal rows per user (1 to 200)",
        data=dict(n_users=2000, n_features=10, samples_per_user=(1, 200)),
        public=dict(bound=100.0), peer_clip=4.0,
        methods=["coinpress", "winsorized", "clip_noise_box", "auto"]),
    "e_corrupted": dict(
        title="(e) 5 % corrupted users at distance 50 (error to the clean mean)",
        data=dict(n_users=1000, n_features=10, samples_per_user=50,
                  corrupted_fraction=0.05, corruption_distance=50.0),
        public=dict(bound=100.0, radius=4.0), peer_clip=4.0,
        methods=["coinpress", "winsorized", "few_users", "clip_noise_box", "auto"]),
    "f_speed": dict(
        title="(f) speed: 1M rows (20 000 users x 50 rows, d = 10)",
        data=dict(n_users=20000, n_features=10, samples_per_user=50),
        public=dict(bound=100.0), peer_clip=4.0,
        methods=["coinpress", "winsorized", "clip_noise_box", "auto"]),
}
# Which keys of a regime's public knowledge each estimator takes.
TAKES = {"coinpress": ("bound",), "winsorized": ("bound",),
         "clip_noise_box": ("bound",), "few_users": ("radius",),
         "threaded": ("moment_order", "moment_bound", "samples_per_user",
                      "bound"),
         "auto": ("bound", "radius", "center", "samples_per_user",
                  "moment_order", "moment_bound", "corrupted_fraction")}

# Corrupted users (issue 17): fractions x distances at T-M1's shape; the box
# B = 100 and the user radius 4 are declared; auto is told the fraction.
CORRUPTED = dict(fractions=[0.05, 0.1, 0.2, 0.3], distances=[10.0, 50.0, 1000.0],
                 methods=["coinpress", "winsorized", "few_users", "auto"])

# Sweeps around T-M1 (one axis moved at a time), only-bound knowledge.
SWEEPS = {
    "epsilon": [0.25, 0.5, 1.0, 2.0, 4.0],
    "n_users": [250, 1000, 4000, 16000],
    "samples_per_user": [1, 10, 50, 200],
    "n_features": [2, 10, 50, 200],
}
SWEEP_METHODS = ["coinpress", "winsorized", "clip_noise_box", "auto"]


def run_case(case, rep_seed, *, regime_methods, public, peer_clip, eps,
             data_kw, target="empirical", polars_peer=False):
    """One repetition of one case: every method on the same data."""
    ss = np.random.SeedSequence(rep_seed)
    data_seed, *seeds = (int(s.generate_state(1)[0]) for s in ss.spawn(12))
    X, groups, mu, U = make_data(seed=data_seed, **data_kw)
    n, d = U.shape
    goal = U.mean(axis=0) if target == "empirical" else mu
    out = []

    def add(method, family, est, seconds):
        out.append({**case, "method": method, "family": family,
                    "error": float(np.linalg.norm(est - goal)),
                    "seconds": seconds})

    for k, name in enumerate(regime_methods):
        kw = {key: public[key] for key in TAKES[name] if key in public}
        seed = seeds[k]
        if name == "auto":
            # common random numbers: the dispatcher gets the noise seed of
            # the estimator it picks (from public values), so when it picks
            # one that is also run here its error is exactly that one's.
            from skuserdp.mean import choose_mean_method
            rule_kw = {("bounds" if k == "bound" else k): v for k, v in kw.items()
                       if k != "corrupted_fraction"}  # not an input of the rule
            pick = choose_mean_method(n, d, eps, DELTA, **rule_kw)[0]
            if pick in regime_methods:
                seed = seeds[regime_methods.index(pick)]
        t0 = time.perf_counter()
        est = ours(name, **kw)(X, groups, eps, seed, d)
        add(name, "skuserdp", est, time.perf_counter() - t0)
    if polars_peer:
        fit, reason = opendp_polars_peer(peer_clip, d, eps)
        if fit is None:
            out.append({**case, "method": "peer_opendp_polars", "family": "peer",
                        "unavailable": reason})
        else:
            t0 = time.perf_counter()
            add("peer_opendp_polars", "peer", fit(X, groups),
                time.perf_counter() - t0)
    t0 = time.perf_counter()
    add("peer_clip_skuserdp", "peer design (hand-picked C)",
        peer_skuserdp_clip(peer_clip)(U, eps, seeds[6]), time.perf_counter() - t0)
    for name, (fit, reason) in (("peer_opendp", opendp_peer(peer_clip, d, eps)),
                                ("peer_diffprivlib", diffprivlib_peer(peer_clip))):
        if fit is None:
            out.append({**case, "method": name, "family": "peer",
                        "unavailable": reason})
            continue
        t0 = time.perf_counter()
        add(name, "peer", fit(U, eps, seeds[7]), time.perf_counter() - t0)
    add("oracle_clip_noise", "reference (not private)", oracle(U, mu, eps, seeds[8]),
        0.0)
    out.append({**case, "method": "non_private", "family": "reference",
                "error": float(np.linalg.norm(U.mean(axis=0) - mu)), "seconds": 0.0})
    return out


def summarise(rows):
    """Median, quartiles and p90 of the error per case and method."""
    keys = ("part", "case", "method")
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        base = {k: v for k, v in rs[0].items()
                if k not in ("error", "seconds", "rep")}
        if "unavailable" in rs[0]:
            out.append(base)
            continue
        e = np.array([r["error"] for r in rs])
        s = np.array([r["seconds"] for r in rs])
        q25, med, q75, p90 = np.percentile(e, [25, 50, 75, 90])
        out.append({**base, "reps": len(rs), "median": float(med),
                    "q25": float(q25), "q75": float(q75), "p90": float(p90),
                    "median_seconds": float(np.median(s))})
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="few repetitions and smaller sweeps (< 10 minutes)")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--parts", nargs="+", default=["tm1", "regimes", "sweeps"],
                   choices=["tm1", "regimes", "sweeps", "corrupted"])
    p.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    return p.parse_args(argv)


def jobs_for(args):
    quick = args.quick
    reps = args.reps or (10 if quick else 60)
    jobs = []
    root = np.random.SeedSequence(args.seed)
    part_ss = dict(zip(("tm1", "regimes", "sweeps", "corrupted"), root.spawn(4)))

    def add(part, case_name, ss, n_reps, **kw):
        for r, s in enumerate(ss.spawn(n_reps)):
            seed = int(s.generate_state(1)[0])
            case = {"part": part, "case": case_name, "rep": r,
                    "epsilon": kw["eps"], **{k: v for k, v in kw["data_kw"].items()
                                             if not isinstance(v, tuple)}}
            jobs.append((case, seed, kw))

    if "tm1" in args.parts:
        t = TM1
        add("tm1", "T-M1", part_ss["tm1"], reps * (2 if not quick else 1),
            regime_methods=["coinpress", "winsorized", "clip_noise_box", "auto"],
            public=dict(bound=t["bound"]), peer_clip=t["peer_clip"],
            eps=t["epsilon"], polars_peer=True,
            data_kw=dict(n_users=t["n_users"], n_features=t["n_features"],
                         samples_per_user=t["samples_per_user"],
                         user_spread=t["user_spread"]))
    if "regimes" in args.parts:
        for (name, reg), ss in zip(REGIMES.items(),
                                   part_ss["regimes"].spawn(len(REGIMES))):
            n_reps = 3 if name == "f_speed" else reps
            add("regime", name, ss, n_reps, regime_methods=reg["methods"],
                public=reg["public"], peer_clip=reg["peer_clip"], eps=1.0,
                data_kw=reg["data"],
                target="clean" if name == "e_corrupted" else "empirical")
    if "corrupted" in args.parts:
        cells = [(f, dist) for f in CORRUPTED["fractions"]
                 for dist in CORRUPTED["distances"]]
        for (frac, dist), ss in zip(cells, part_ss["corrupted"].spawn(len(cells))):
            add("corrupted", f"{frac:g} at {dist:g}", ss, max(reps // 2, 5),
                regime_methods=CORRUPTED["methods"],
                public=dict(bound=100.0, radius=4.0, corrupted_fraction=frac),
                peer_clip=4.0, eps=1.0, target="clean",
                data_kw=dict(n_users=TM1["n_users"], n_features=TM1["n_features"],
                             samples_per_user=TM1["samples_per_user"],
                             corrupted_fraction=frac, corruption_distance=dist))
    if "sweeps" in args.parts:
        sweeps = {k: (v[:3] if quick and k != "epsilon" else v)
                  for k, v in SWEEPS.items()}
        for (axis, values), ss in zip(sweeps.items(),
                                      part_ss["sweeps"].spawn(len(sweeps))):
            for v, vs in zip(values, ss.spawn(len(values))):
                data_kw = dict(n_users=TM1["n_users"], n_features=TM1["n_features"],
                               samples_per_user=TM1["samples_per_user"])
                eps = TM1["epsilon"]
                if axis == "epsilon":
                    eps = v
                else:
                    data_kw[axis] = v
                add(f"sweep_{axis}", f"{axis}={v:g}", vs, max(reps // 2, 3),
                    regime_methods=SWEEP_METHODS, public=dict(bound=TM1["bound"]),
                    peer_clip=TM1["peer_clip"], eps=eps, data_kw=data_kw)
    return jobs


def add_lower_bounds(summary):
    for r in summary:
        # not defined for unequal rows per user (no single m)
        if r.get("method") == "non_private" and "samples_per_user" in r:
            r_lb = lower_bound_shape(r["n_users"], r["samples_per_user"],
                                     r["n_features"], r["epsilon"])
            summary_lb = dict(r, method="lower_bound_shape_only",
                              family="reference (constants 1, shape only)",
                              median=r_lb, q25=r_lb, q75=r_lb, p90=r_lb)
            summary.append(summary_lb)
    return summary


def markdown(summary):
    lines = []
    cases = dict.fromkeys((r["part"], r["case"]) for r in summary)
    for part, case in cases:
        rs = [r for r in summary if (r["part"], r["case"]) == (part, case)]
        lines.append(f"\n**{part}: {case}**\n")
        lines.append("| method | family | median L2 error | IQR | p90 | "
                     "median seconds |")
        lines.append("|---|---|---|---|---|---|")
        for r in sorted(rs, key=lambda r: r.get("median", np.inf)):
            if "unavailable" in r:
                lines.append(f"| {r['method']} | {r['family']} | unavailable: "
                             f"{r['unavailable']} | | | |")
                continue
            lines.append(f"| {r['method']} | {r['family']} | {r['median']:.4g} | "
                         f"{r['q25']:.3g}–{r['q75']:.3g} | {r['p90']:.3g} | "
                         f"{r.get('median_seconds', 0.0):.3g} |")
    return "\n".join(lines)


def plots(summary, output_dir, stem):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots")
        return []
    paths = []
    for axis in SWEEPS:
        part = f"sweep_{axis}"
        rs = [r for r in summary if r["part"] == part and "median" in r]
        if not rs:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for method in dict.fromkeys(r["method"] for r in rs):
            pts = sorted(((r[axis] if axis != "epsilon" else r["epsilon"]),
                          r["median"]) for r in rs if r["method"] == method)
            style = "--" if method in ("oracle_clip_noise", "non_private",
                                       "lower_bound_shape_only") else "-"
            label = {"lower_bound_shape_only": "lower bound (shape only)",
                     "non_private": "non-private (error to the population mean)",
                     "oracle_clip_noise": "oracle clip-and-noise (not private)",
                     }.get(method, method)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                    label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(axis)
        ax.set_ylabel("median L2 error")
        ax.set_title(f"error vs {axis} (T-M1 otherwise; skuserdp knows B = 100)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = output_dir / f"{stem}_{axis}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    jobs = jobs_for(args)
    print(f"{len(jobs)} repetitions on {args.n_jobs} workers", flush=True)
    rows = [r for out in Parallel(n_jobs=args.n_jobs)(
        delayed(run_case)(case, seed, **kw) for case, seed, kw in jobs)
        for r in out]
    summary = add_lower_bounds(summarise(rows))
    total = time.perf_counter() - t0
    text = markdown(summary)
    print(text)
    print(f"\ntotal {total:.1f} s")
    stem = "means_quick" if args.quick else "means"
    if args.parts == ["corrupted"]:
        stem += "_corrupted"
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / f"{stem}.md").write_text(text + "\n")
    payload = {"params": {"quick": args.quick, "seed": args.seed, "delta": DELTA,
                          "tm1": TM1, "regimes": {k: {kk: vv for kk, vv in v.items()}
                                                  for k, v in REGIMES.items()},
                          "sweeps": SWEEPS},
               "total_seconds": total, "results": {"summary": summary,
                                                   "rows": rows}}
    paths = write_results(args.output_dir, stem, summary, payload)
    pngs = plots(summary, args.output_dir, stem)
    print("saved", *paths, args.output_dir / f"{stem}.md", *pngs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
