"""Benchmark ``WinsorizedMeanEstimator`` (Levy et al.) against clip-and-noise.

Run from the repository root::

    python benchmarks/bench_winsorized.py            # full size (~35 s)
    python benchmarks/bench_winsorized.py --quick    # smoke test (< 60 s)

Three parts, one per acceptance target of the issue:

1. ``accuracy`` -- a loose public box. d = 64, n = 2000 users, m = 100 rows
   per user; rows are ``mu_u + N(0, s^2 I)`` with user means
   ``mu_u = mu + N(0, t^2 I)`` and ``mu`` uniform in ``[-2, 2]^d``, so the
   true concentration radius ``tau_true = max_u ||xbar_u - mu||`` is about
   0.5 while the public box is ``[-B, B]^d`` with B = 10 and B = 100. The data
   are fixed; every method is run ``--reps`` times with different seeds
   (common seeds across methods) at each epsilon, delta = 1e-6, and the squared
   error to the mean of the user means is summarised (mean, median). Methods:
   WinsorizedMean tight with ``tau="auto"`` (public knowledge: the box),
   WinsorizedMean tight and paper with ``tau=tau_true`` (oracle: tau_true is
   computed from the data, not private), ``ClipNoiseMeanEstimator`` with the
   same box (ball of radius ``B*sqrt(d)`` around the origin) and, as a
   different public knowledge, ClipNoise with radius ``B`` (as if B were an
   l2 bound). Target: MSE(Winsorized tight auto) / MSE(ClipNoise box) <= 0.25.
2. ``crossover`` -- spec section 6.5: d = 100, n = 1e4, delta = 1e-5,
   gamma = 1e-3, epsilon = 1, rows of l2 norm <= B = 1. Privacy-noise variance
   of the released mean (statistical term excluded), computed exactly from the
   plans: WinsorizedMean ``d * plan.noise_variance`` (the noise is i.i.d. over
   the d' rotated coordinates and the inverse rotation is orthogonal, so each
   original coordinate carries ``plan.noise_variance``) with
   ``tau = tau_bounded_rows(B, m, n, gamma)`` (McDiarmid, what ``tau="bounded"``
   uses) and ``value_range = B``; ClipNoise with radius B:
   ``d * (sigma * grid / n)^2`` with the discrete Gaussian of
   ``calibrate_discrete_gaussian``. The ratio is swept over m = 10..1e8 and the
   crossover m (ratio = 1) is interpolated in log-log, for the tight and the
   paper calibration, and (labelled) for the paper's own, invalid, radius
   ``B*sqrt(ln(2n/gamma)/(2m))`` (spec [E9]). The analytic variances are
   checked against real ``winsorized_mean`` / ``clip_noise_mean`` releases on
   synthetic user means within tau (d = 16, n = 2000 and 20000).
3. ``timing`` -- ``WinsorizedMeanEstimator(epsilon=1, delta=1e-6, bounds=(-10, 10),
   random_state=0).fit(X, groups=g)`` on 1M rows x 64 features x 10k users
   (int ids, shuffled) against ``skuserdp.users.user_means(X, g)``; best of
   ``--timing-repeats`` after a warm-up. Also the core ``winsorized_mean`` on
   the 10k x 64 user means, with ``tau="auto"`` and with a float tau. Target:
   fit / user_means <= 1.5.

The tables are printed and saved as CSV (all parts, one row per case, column
``part``) and JSON in ``benchmarks/results/``.
"""

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from skuserdp.mean import (
    ClipNoiseMeanEstimator,
    WinsorizedMeanEstimator,
    clip_noise_mean,
    plan_winsorized_mean,
    tau_bounded_rows,
    winsorized_mean,
)
from skuserdp.mechanisms import calibrate_discrete_gaussian, choose_grid
from skuserdp.privacy import (
    ApproxDP,
    lattice_contribution_radius,
    replace_one_sum_sensitivity,
)
from skuserdp.users import user_means

# bench_user_means.py sits next to this script (on sys.path when run as a file)
from _results import write_results
from bench_user_means import timeit

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ACCURACY_TARGET = 0.25
TIMING_TARGET = 1.5

# Part 1: data and privacy parameters
ACC = dict(n_features=64, n_users=2000, rows_per_user=100, row_sd=0.35,
           user_sd=0.03, mu_low=-2.0, mu_high=2.0, bounds=(10.0, 100.0),
           epsilons=(0.5, 1.0, 2.0), delta=1e-6)
# Part 2: the setting of the spec's section 6.5 table
CROSS = dict(n_features=100, n_users=10_000, delta=1e-5, gamma=1e-3, epsilon=1.0,
             row_bound=1.0, m_min=10, m_max=10 ** 8)
# Part 2: empirical check of the analytic variances (modes x n x m)
VALID = dict(n_features=16, n_users=(2000, 20_000),
             m_values={"tight": (10 ** 3, 10 ** 5), "paper": (10 ** 5, 10 ** 7)})
# Part 3
TIMING_TAU = 1.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100,
                        help="seeds per method in the accuracy part")
    parser.add_argument("--validation-reps", type=int, default=200)
    parser.add_argument("--grid-per-decade", type=int, default=4,
                        help="points per decade of m in the crossover sweep")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--timing-repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: 10 accuracy seeds, 20 validation seeds, 1 point per "
        "decade, timing on 100k rows x 16 features x 1k users with 3 repeats; "
        "results are saved as winsorized_quick.{csv,json}",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where to save the CSV and JSON (default: benchmarks/results)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.validation_reps, args.grid_per_decade = 10, 20, 1
        args.rows, args.features, args.users = 100_000, 16, 1_000
        args.timing_repeats = 3
    if args.users < 2 or args.rows < args.users:
        parser.error("need 2 <= --users <= --rows (every user gets at least one row)")
    for name in ("reps", "validation_reps", "grid_per_decade", "features",
                 "timing_repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def clip_noise_variance(n_users, n_features, radius, epsilon, delta):
    """Total noise variance of ``clip_noise_mean`` (delta > 0), from its plan.

    Mirrors ``clip_noise_mean``: l2 ball of ``radius``, power-of-two grid,
    lattice-widened sensitivity, discrete Gaussian of
    ``calibrate_discrete_gaussian``; the mean gets ``grid * noise / n`` per
    coordinate.
    """
    grid = choose_grid(radius, n_features, n_users, "l2")
    sens = replace_one_sum_sensitivity(
        lattice_contribution_radius(radius / grid, n_features, "l2")
    )
    noise = calibrate_discrete_gaussian(sens, epsilon, delta)
    return n_features * (noise.std * grid / n_users) ** 2


def winsorized_variance(n_users, n_features, *, tau, value_range, epsilon, delta,
                        gamma, calibration, allow_box=True):
    """Total noise variance ``d * plan.noise_variance`` of a WinsorizedMean."""
    plan = plan_winsorized_mean(n_users, n_features, tau=tau, value_range=value_range,
                                budget=ApproxDP(epsilon, delta), gamma=gamma,
                                calibration=calibration, allow_box=allow_box)
    return n_features * plan.noise_variance, plan


# ---------------------------------------------------------------------------
# Part 1: accuracy with a loose public box
# ---------------------------------------------------------------------------

def make_accuracy_data(seed):
    p = ACC
    rng = np.random.default_rng(seed)
    n, d, m = p["n_users"], p["n_features"], p["rows_per_user"]
    mu = rng.uniform(p["mu_low"], p["mu_high"], d)
    mu_u = mu + p["user_sd"] * rng.standard_normal((n, d))
    ids = rng.permutation(np.repeat(np.arange(n), m))  # users interleaved
    X = mu_u[ids] + p["row_sd"] * rng.standard_normal((n * m, d))
    return X, ids, mu


def accuracy_methods(tau_true, d):
    """(label, public knowledge, release(U, eps, B, seed) -> (mean, tau))."""
    delta = ACC["delta"]

    def wins(tau, calibration):
        def release(U, eps, B, seed):
            mean, _, tau_used = winsorized_mean(
                U, epsilon=eps, delta=delta, tau=tau, bound=B,
                calibration=calibration, random_state=seed)
            return mean, tau_used
        return release

    def clip(radius_of_B):
        def release(U, eps, B, seed):
            mean, _ = clip_noise_mean(U, epsilon=eps, delta=delta,
                                      radius=radius_of_B(B), random_state=seed)
            return mean, None
        return release

    return [
        ("winsorized_tight_auto", "box B", wins("auto", "tight")),
        ("winsorized_tight_oracle_tau", "box B + oracle tau_true",
         wins(tau_true, "tight")),
        ("winsorized_paper_oracle_tau", "box B + oracle tau_true",
         wins(tau_true, "paper")),
        ("clipnoise_box", "box B (ball radius B*sqrt(d))",
         clip(lambda B: B * math.sqrt(d))),
        ("clipnoise_l2_B", "l2 bound B (different knowledge)", clip(lambda B: B)),
    ]


def analytic_accuracy(method, n, d, eps, B, tau_true):
    """Noise-only MSE from the plan, and for WinsorizedMean the bound on the
    probability that some coordinate's PrivateRange misses the bulk
    (``d' * l * exp(-eps_r * n / 4)``, see ``skuserdp.mechanisms._private_range``).
    None where tau is random (``tau="auto"``).
    """
    delta = ACC["delta"]
    if method.startswith("winsorized") and "oracle" in method:
        calibration = "paper" if "paper" in method else "tight"
        var, plan = winsorized_variance(n, d, tau=tau_true,
                                        value_range=B * math.sqrt(d), epsilon=eps,
                                        delta=delta, gamma=0.01,
                                        calibration=calibration)
        return var, plan.range_epsilon, plan.range_failure_bound
    if method == "clipnoise_box":
        return clip_noise_variance(n, d, B * math.sqrt(d), eps, delta), None, None
    if method == "clipnoise_l2_B":
        return clip_noise_variance(n, d, B, eps, delta), None, None
    return None, None, None


def check_estimators_match_cores(X, ids, U, B, eps):
    """The estimators' fit equals the cores on the user means (same seed)."""
    delta = ACC["delta"]
    d = X.shape[1]
    est = WinsorizedMeanEstimator(epsilon=eps, delta=delta, bounds=(-B, B),
                                  random_state=7).fit(X, groups=ids)
    core = winsorized_mean(U, epsilon=eps, delta=delta, bound=B, random_state=7)
    assert np.array_equal(est.mean_, core[0]) and est.tau_ == core[2]
    est = ClipNoiseMeanEstimator(epsilon=eps, delta=delta, radius=B * math.sqrt(d),
                                 center=0.0, random_state=7).fit(X, groups=ids)
    core = clip_noise_mean(U, epsilon=eps, delta=delta, radius=B * math.sqrt(d),
                           random_state=7)
    assert np.array_equal(est.mean_, core[0])


def run_accuracy(args):
    t0 = time.perf_counter()
    X, ids, mu = make_accuracy_data(args.seed)
    U = user_means(X, ids).means
    n, d = U.shape
    target = U.mean(axis=0)
    tau_true = float(np.max(np.linalg.norm(U - mu, axis=1)))
    facts = {
        "tau_true": tau_true,
        "tau_true_around_mean_of_user_means":
            float(np.max(np.linalg.norm(U - target, axis=1))),
        "max_abs_row": float(np.max(np.abs(X))),
        "norm_mu": float(np.linalg.norm(mu)),
        "max_norm_user_mean": float(np.max(np.linalg.norm(U, axis=1))),
    }
    print(f"accuracy: {X.shape[0]:,} rows x {d} features x {n:,} users; "
          f"tau_true = {tau_true:.3f}, max|row| = {facts['max_abs_row']:.2f}, "
          f"||mu|| = {facts['norm_mu']:.2f}, max ||user mean|| = "
          f"{facts['max_norm_user_mean']:.2f}; {args.reps} seeds", flush=True)
    check_estimators_match_cores(X, ids, U, ACC["bounds"][0], 1.0)
    del X, ids
    methods = accuracy_methods(tau_true, d)
    rows, summary = [], []
    for B in ACC["bounds"]:
        for eps in ACC["epsilons"]:
            by_method = {}
            for name, knowledge, release in methods:
                errs, taus = [], []
                for r in range(args.reps):
                    mean, tau = release(U, eps, B, 10_000 + r)
                    errs.append(float(np.sum((mean - target) ** 2)))
                    if tau is not None:
                        taus.append(tau)
                errs = np.array(errs)
                analytic, range_eps, miss = analytic_accuracy(name, n, d, eps, B,
                                                              tau_true)
                row = {
                    "part": "accuracy", "case": name, "knowledge": knowledge,
                    "bound": B, "epsilon": eps, "delta": ACC["delta"],
                    "reps": args.reps,
                    "mse_mean": float(errs.mean()),
                    "mse_median": float(np.median(errs)),
                    "mse_p90": float(np.quantile(errs, 0.9)),
                    "mse_mean_se": float(errs.std(ddof=1) / math.sqrt(errs.size))
                    if errs.size > 1 else float("nan"),
                    "analytic_noise_mse": analytic,
                    "range_epsilon": range_eps,
                    "range_miss_bound": miss,
                    "tau_median": float(np.median(taus)) if taus else None,
                    "tau_p90": float(np.quantile(taus, 0.9)) if taus else None,
                    "tau_share_above_2x_true":
                        float(np.mean(np.array(taus) > 2 * tau_true))
                        if taus else None,
                }
                by_method[name] = row
                rows.append(row)
            base = by_method["clipnoise_box"]
            auto = by_method["winsorized_tight_auto"]
            oracle = by_method["winsorized_tight_oracle_tau"]
            ratio_mean = auto["mse_mean"] / base["mse_mean"]
            summary.append({
                "part": "accuracy_ratio", "case": "winsorized_tight_auto / "
                "clipnoise_box", "bound": B, "epsilon": eps,
                "ratio_mean": ratio_mean,
                "ratio_median": auto["mse_median"] / base["mse_median"],
                "oracle_ratio_mean": oracle["mse_mean"] / base["mse_mean"],
                "oracle_ratio_median": oracle["mse_median"] / base["mse_median"],
                "target_met": bool(ratio_mean <= ACCURACY_TARGET),
            })
            print(f"  B = {B:g}, eps = {eps:g}: auto/box MSE ratio "
                  f"{ratio_mean:.3g} (mean), {summary[-1]['ratio_median']:.3g} "
                  f"(median); tau auto median {auto['tau_median']:.3g}", flush=True)
    print(f"accuracy done in {time.perf_counter() - t0:.1f} s", flush=True)
    return rows, summary, facts


# ---------------------------------------------------------------------------
# Part 2: crossover m (analytic) and its empirical validation
# ---------------------------------------------------------------------------

def paper_tau(B, m, n, gamma):
    """Levy et al.'s Corollary 1 radius (invalid, spec [E9]); labelled only."""
    return B * math.sqrt(math.log(2.0 * n / gamma) / (2.0 * m))


CROSS_CURVES = [
    # key, calibration, tau rule, baseline
    ("tight_mcdiarmid", "tight", "mcdiarmid", "clipnoise"),
    ("paper_mcdiarmid", "paper", "mcdiarmid", "clipnoise"),
    ("tight_paper_tau", "tight", "paper", "clipnoise"),
    ("paper_paper_tau", "paper", "paper", "clipnoise"),
    ("paper_paper_tau_vs_classical", "paper", "paper", "classical"),
]


def crossover_grid(per_decade):
    lo, hi = math.log10(CROSS["m_min"]), math.log10(CROSS["m_max"])
    k = round((hi - lo) * per_decade)
    return sorted({int(round(10 ** (lo + i / per_decade))) for i in range(k + 1)})


def interpolate_crossover(ms, ratios):
    """First m where the ratio falls to 1, interpolated in log-log."""
    lm, lr = np.log(np.asarray(ms, float)), np.log(np.asarray(ratios, float))
    for i in range(len(ms) - 1):
        if lr[i] >= 0 >= lr[i + 1]:
            if lr[i] == lr[i + 1]:
                return float(ms[i])
            frac = lr[i] / (lr[i] - lr[i + 1])
            return float(math.exp(lm[i] + frac * (lm[i + 1] - lm[i])))
    return None


def run_crossover(args):
    c = CROSS
    n, d, eps, delta, gamma, B = (c["n_users"], c["n_features"], c["epsilon"],
                                  c["delta"], c["gamma"], c["row_bound"])
    clip_var = clip_noise_variance(n, d, B, eps, delta)
    # Spec section 4 naive baseline, the reference of the spec's section 6.5
    # table: classical Gaussian 8 d B^2 ln(1.25/delta) / (n eps)^2 (the
    # classical calibration is not proven at eps = 1; formula only).
    classical_var = 8.0 * d * B ** 2 * math.log(1.25 / delta) / (n * eps) ** 2
    ms = crossover_grid(args.grid_per_decade)
    rows = []
    for m in ms:
        taus = {"mcdiarmid": tau_bounded_rows(B, m, n, gamma),
                "paper": paper_tau(B, m, n, gamma)}
        row = {"part": "crossover_grid", "m": m, "tau_mcdiarmid": taus["mcdiarmid"],
               "tau_paper_radius": taus["paper"], "var_clipnoise": clip_var,
               "var_classical_formula": classical_var}
        for key, calibration, rule, baseline in CROSS_CURVES:
            # The crossover is about the range route itself: the tight plan's
            # box fallback (which never loses to clip-and-noise) is excluded.
            var, plan = winsorized_variance(n, d, tau=taus[rule], value_range=B,
                                            epsilon=eps, delta=delta, gamma=gamma,
                                            calibration=calibration, allow_box=False)
            ref = clip_var if baseline == "clipnoise" else classical_var
            row[f"var_{key}"] = var
            row[f"ratio_{key}"] = var / ref
            if baseline == "clipnoise":
                row[f"route_{key}"] = plan.route
                row[f"bins_{key}"] = plan.n_bins
        rows.append(row)
    crossovers = []
    for key, calibration, rule, baseline in CROSS_CURVES:
        ratios = [r[f"ratio_{key}"] for r in rows]
        crossovers.append({
            "part": "crossover", "case": key, "calibration": calibration,
            "tau_rule": {"mcdiarmid": "tau_bounded_rows (McDiarmid, valid)",
                         "paper": "paper B*sqrt(ln(2n/gamma)/(2m)) (invalid, [E9])"
                         }[rule],
            "baseline": {"clipnoise": "ClipNoise radius B (tight calibration)",
                         "classical": "classical Gaussian formula (spec section 4)"
                         }[baseline],
            "ratio_at_m10": ratios[0],
            "crossover_m": interpolate_crossover(ms, ratios),
        })
    print(f"crossover: {len(ms)} values of m in [{ms[0]:g}, {ms[-1]:g}]", flush=True)
    for cr in crossovers:
        cm = cr["crossover_m"]
        print(f"  {cr['case']:<30} crossover m = "
              f"{'none' if cm is None else f'{cm:.3g}'}", flush=True)
    return rows, crossovers, {"var_clipnoise": clip_var,
                              "var_classical_formula": classical_var}


def users_within(center, tau, n, rng):
    """n points within l2 distance 0.9*tau of ``center``."""
    d = center.shape[0]
    Z = rng.standard_normal((n, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    radius = 0.9 * tau * rng.uniform(0.0, 1.0, (n, 1)) ** (1.0 / d)
    return center + radius * Z


def run_validation(args):
    c = CROSS
    d = VALID["n_features"]
    eps, delta, gamma, B = c["epsilon"], c["delta"], c["gamma"], c["row_bound"]
    box = B / math.sqrt(d)  # box whose l2 half-diagonal is B: value_range = B
    value_range = float(np.linalg.norm(np.full(d, box)))
    rng = np.random.default_rng(args.seed + 1)
    center = rng.uniform(-0.05, 0.05, d)
    reps = args.validation_reps
    rows = []
    t0 = time.perf_counter()
    case_id = 0
    for n in VALID["n_users"]:
        for calibration in ("tight", "paper", "clipnoise"):
            m_values = VALID["m_values"].get(calibration, (10 ** 3,))
            for m in m_values:
                case_id += 1
                tau = tau_bounded_rows(B, m, n, gamma)
                U = users_within(center, tau, n, rng)
                assert np.abs(U).max() <= box and np.linalg.norm(U, axis=1).max() <= B
                target = U.mean(axis=0)
                if calibration == "clipnoise":
                    analytic = clip_noise_variance(n, d, B, eps, delta)

                    def release(seed):
                        return clip_noise_mean(U, epsilon=eps, delta=delta, radius=B,
                                               random_state=seed)[0]
                else:
                    analytic, _ = winsorized_variance(
                        n, d, tau=tau, value_range=value_range, epsilon=eps,
                        delta=delta, gamma=gamma, calibration=calibration)

                    def release(seed):
                        return winsorized_mean(
                            U, epsilon=eps, delta=delta, tau=tau, bound=box,
                            gamma=gamma, calibration=calibration,
                            random_state=seed)[0]
                errs = np.array([
                    float(np.sum((release(np.random.SeedSequence([case_id, r]))
                                  - target) ** 2))
                    for r in range(reps)
                ])
                rows.append({
                    "part": "validation",
                    "case": ("clipnoise radius B" if calibration == "clipnoise"
                             else f"winsorized {calibration}"),
                    "n_users": n, "n_features": d, "m": m, "tau": tau,
                    "reps": reps,
                    "analytic_var": analytic, "empirical_mse": float(errs.mean()),
                    "ratio": float(errs.mean() / analytic),
                    "ratio_se": float(errs.std(ddof=1) / math.sqrt(reps) / analytic)
                    if reps > 1 else float("nan"),
                    "max_err_over_var": float(errs.max() / analytic),
                })
                r = rows[-1]
                print(f"  validation {r['case']:<19} n = {n:>6} m = {m:>8}: "
                      f"empirical/analytic = {r['ratio']:.3f} "
                      f"(se {r['ratio_se']:.3f})", flush=True)
    print(f"validation done in {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


# ---------------------------------------------------------------------------
# Part 3: fit time
# ---------------------------------------------------------------------------

def make_timing_data(n_rows, n_features, n_users, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features))  # float64, C-order
    ids = rng.integers(0, n_users, size=n_rows)
    ids[:n_users] = np.arange(n_users)  # every user has at least one row
    rng.shuffle(ids)
    return X, ids


def run_timing(args):
    n, d, n_users, repeats = args.rows, args.features, args.users, args.timing_repeats
    print(f"timing: {n:,} rows x {d} features x {n_users:,} users, best of "
          f"{repeats} (+1 warm-up)", flush=True)
    X, ids = make_timing_data(n, d, n_users, args.seed)
    U = user_means(X, ids).means
    kw = dict(epsilon=1.0, delta=1e-6, bound=10.0, random_state=0)  # the core's
    est_kw = dict(epsilon=1.0, delta=1e-6, bounds=(-10.0, 10.0), random_state=0)
    cases = [
        ("user_means", "user_means(X, g) (baseline)",
         lambda: user_means(X, ids)),
        ("fit_tau_auto", "WinsorizedMeanEstimator(**est_kw).fit(X, groups=g)",
         lambda: WinsorizedMeanEstimator(**est_kw).fit(X, groups=ids)),
        ("fit_tau_float", f"WinsorizedMeanEstimator(tau={TIMING_TAU}, **est_kw).fit",
         lambda: WinsorizedMeanEstimator(tau=TIMING_TAU, **est_kw).fit(X, groups=ids)),
        ("core_tau_auto", "winsorized_mean(U, **kw) on the user means",
         lambda: winsorized_mean(U, **kw)),
        ("core_tau_float", f"winsorized_mean(U, tau={TIMING_TAU}, **kw)",
         lambda: winsorized_mean(U, tau=TIMING_TAU, **kw)),
        ("clipnoise_fit", "ClipNoiseMeanEstimator(radius=10*sqrt(d)).fit "
         "(for information)",
         lambda: ClipNoiseMeanEstimator(epsilon=1.0, delta=1e-6,
                                        radius=10.0 * math.sqrt(d), center=0.0,
                                        random_state=0).fit(X, groups=ids)),
    ]
    rows = []
    for name, timed, func in cases:
        _, times = timeit(func, repeats)
        rows.append({"part": "timing", "case": name, "timed": timed,
                     "rows": n, "features": d, "users": n_users,
                     "min_s": float(np.min(times)),
                     "median_s": float(np.median(times)),
                     "times_s": [float(t) for t in times]})
        print(f"  {name:<16} best {rows[-1]['min_s'] * 1e3:8.1f} ms", flush=True)
    base = rows[0]
    for row in rows:
        row["ratio_min"] = row["min_s"] / base["min_s"]
        row["ratio_median"] = row["median_s"] / base["median_s"]
        row["target_met"] = (bool(row["ratio_min"] <= TIMING_TARGET)
                             if row["case"].startswith("fit_") else None)
    return rows


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def _g(x, fmt=".3g"):
    return "-" if x is None else format(x, fmt)


def format_accuracy(rows, summary):
    lines = ["| B | ε | method | public knowledge | MSE mean (± se) | MSE median "
             "| MSE p90 | analytic noise MSE | range miss bound | τ median | τ p90 "
             "| share τ > 2τ_true |", "|---" * 12 + "|"]
    for r in rows:
        lines.append(
            f"| {r['bound']:g} | {r['epsilon']:g} | {r['case']} | {r['knowledge']} "
            f"| {r['mse_mean']:.3g} ± {r['mse_mean_se']:.2g} | {r['mse_median']:.3g} "
            f"| {r['mse_p90']:.3g} | {_g(r['analytic_noise_mse'])} "
            f"| {_g(r['range_miss_bound'], '.2g')} | {_g(r['tau_median'])} "
            f"| {_g(r['tau_p90'])} | {_g(r['tau_share_above_2x_true'], '.2f')} |")
    lines += ["", "| B | ε | auto / box (mean MSE) | auto / box (median MSE) "
              "| oracle-τ / box (mean) | oracle-τ / box (median) | ≤ 0.25 |",
              "|---" * 7 + "|"]
    for s in summary:
        lines.append(
            f"| {s['bound']:g} | {s['epsilon']:g} | {s['ratio_mean']:.3g} "
            f"| {s['ratio_median']:.3g} | {s['oracle_ratio_mean']:.3g} "
            f"| {s['oracle_ratio_median']:.3g} "
            f"| {'yes' if s['target_met'] else '**no**'} |")
    return "\n".join(lines)


def format_crossover(rows, crossovers):
    keys = [k for k, *_ in CROSS_CURVES if not k.endswith("classical")]
    lines = ["| m | τ (McDiarmid) | " + " | ".join(keys)
             + " | paper_paper_tau_vs_classical |", "|---" * (len(keys) + 3) + "|"]
    for r in rows:
        lines.append(f"| {r['m']:.3g} | {r['tau_mcdiarmid']:.3g} | "
                     + " | ".join(f"{r[f'ratio_{k}']:.3g}" for k in keys)
                     + f" | {r['ratio_paper_paper_tau_vs_classical']:.3g} |")
    lines += ["", "| curve | calibration | τ rule | baseline | ratio at m = 10 "
              "| crossover m |", "|---" * 6 + "|"]
    for c in crossovers:
        lines.append(f"| {c['case']} | {c['calibration']} | {c['tau_rule']} "
                     f"| {c['baseline']} | {c['ratio_at_m10']:.3g} "
                     f"| {_g(c['crossover_m'], '.3g')} |")
    return "\n".join(lines)


def format_validation(rows):
    lines = ["| release | n | d | m | τ | analytic var | empirical MSE "
             "| empirical / analytic (± se) | max err / var |", "|---" * 9 + "|"]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['n_users']} | {r['n_features']} | {_g(r['m'])} "
            f"| {_g(r['tau'], '.3g')} | {r['analytic_var']:.3g} "
            f"| {r['empirical_mse']:.3g} | {r['ratio']:.3f} ± {r['ratio_se']:.3f} "
            f"| {r['max_err_over_var']:.3g} |")
    return "\n".join(lines)


def format_timing(rows):
    lines = ["| case | what is timed | best (ms) | median (ms) | best / user_means "
             "| ≤ 1.5× |", "|---" * 6 + "|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "-"}[r["target_met"]]
        lines.append(f"| {r['case']} | `{r['timed']}` | {r['min_s'] * 1e3:.1f} "
                     f"| {r['median_s'] * 1e3:.1f} | {r['ratio_min']:.2f} | {met} |")
    return "\n".join(lines)


def git_state():
    """Commit of the repository and whether ``skuserdp/`` has local changes."""
    root = Path(__file__).resolve().parent.parent

    def git(*cmd):
        return subprocess.run(["git", *cmd], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
    try:
        return {"commit": git("rev-parse", "HEAD"),
                "skuserdp_modified": bool(git("status", "--porcelain", "skuserdp"))}
    except (OSError, subprocess.CalledProcessError):
        return None


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not available on every platform
        return None


def save(parts, facts, args, git_before, load_before):
    stem = "winsorized_quick" if args.quick else "winsorized"
    all_rows = [row for rows in parts.values() for row in rows]
    payload = {
        "params": {
            "seed": args.seed, "quick": args.quick,
            "accuracy": {**ACC, "reps": args.reps, "gamma": 0.01,
                         "tau_share": 0.1},
            "crossover": {**CROSS, "grid_per_decade": args.grid_per_decade},
            "validation": {**VALID, "reps": args.validation_reps,
                           "epsilon": CROSS["epsilon"], "delta": CROSS["delta"],
                           "gamma": CROSS["gamma"], "row_bound": CROSS["row_bound"]},
            "timing": {"rows": args.rows, "features": args.features,
                       "users": args.users, "repeats": args.timing_repeats,
                       "float_tau": TIMING_TAU, "dtype": "float64", "ids": "int",
                       "layout": "shuffled"},
        },
        "targets": {
            "accuracy": f"MSE(winsorized tight auto) / MSE(clipnoise box) <= "
                        f"{ACCURACY_TARGET} (mean MSE)",
            "crossover": "spec section 6.5: paper ~1e6, tight ~1e3-1e4",
            "timing": f"fit / user_means <= {TIMING_TARGET} (best of repeats)",
        },
        "facts": facts,
        "git": {"start": git_before, "end": git_state()},
        "load_average_1_5_15min": {"start": load_before, "end": load_average()},
        "results": parts,
    }
    return write_results(args.output_dir, stem, all_rows, payload)


def main(argv=None):
    args = parse_args(argv)
    git_before = git_state()
    load_before = load_average()
    t0 = time.perf_counter()
    acc_rows, acc_summary, acc_facts = run_accuracy(args)
    grid_rows, crossovers, cross_facts = run_crossover(args)
    valid_rows = run_validation(args)
    timing_rows = run_timing(args)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s\n")
    print("1. Accuracy with a loose public box\n")
    print(format_accuracy(acc_rows, acc_summary))
    print("\n2. Crossover m: privacy-noise variance, Winsorized / baseline\n")
    print(format_crossover(grid_rows, crossovers))
    print("\nValidation of the analytic variances\n")
    print(format_validation(valid_rows))
    print("\n3. Fit time\n")
    print(format_timing(timing_rows))
    parts = {"accuracy": acc_rows, "accuracy_ratio": acc_summary,
             "crossover_grid": grid_rows, "crossover": crossovers,
             "validation": valid_rows, "timing": timing_rows}
    facts = {"accuracy": acc_facts, "crossover": cross_facts}
    csv_path, json_path = save(parts, facts, args, git_before,
                               load_before)
    print(f"\nsaved {csv_path} and {json_path}")
    for s in acc_summary:
        if not s["target_met"]:
            print(f"target missed: accuracy B = {s['bound']:g}, eps = "
                  f"{s['epsilon']:g}: auto/box MSE ratio {s['ratio_mean']:.3g}")
    if git_before != git_state():
        print("warning: the repository changed while the benchmark ran")
    for r in timing_rows:
        if r["target_met"] is False:
            print(f"target missed: {r['case']} is {r['ratio_min']:.2f}x user_means")
    return 0


if __name__ == "__main__":
    sys.exit(main())
