"""Benchmark the few-users estimator (EMN) against clip-and-noise and WinsorizedMean.

Run from the repository root::

    python benchmarks/bench_few_users.py            # full size (~2.5 min on 2 cores)
    python benchmarks/bench_few_users.py --quick    # smoke test (~15 s)

Four parts, one per target of the issue. Everything runs on per-user means,
generated analytically: a user with ``m`` rows ``N(mu, I_d)`` has the mean
``xbar_u = mu + N(0, I_d / m)`` (exact for Gaussian rows). The per-row radius
is ``r = sqrt(d)`` (``E||X - mu||^2 = d``), ``m = 10_000`` rows per user, and a
fresh set of user means is drawn for every repetition (the failure bounds
include the sampling of the data), shared by every method of that repetition.

1. ``few_users`` -- n in {25, 50, 100, 200}, d in {100, 1000}, ``mu`` uniform
   in ``[-1000, 1000]^d`` (fixed seed), epsilon = 1, delta in {1e-6, 1e-5}.
   Methods, all at the same (epsilon, delta) and the same public knowledge
   (the box ``[-1000, 1000]^d``, ``r`` and ``m``):

   * ``few_users``: ``few_users_mean(U, radius=sqrt(d), samples_per_user=m,
     alpha=0.1, method="auto")`` (needs no location). A garbage release
     (location None) is counted; its error is reported with the estimator's
     public fallback, the origin (the centre of the box).
   * ``clipnoise_loose``: ``clip_noise_mean(U, center=0, radius=1000*sqrt(d))``
     (the smallest ball containing the box).
   * ``winsorized_loose_hkz``: ``winsorized_mean(U, bound=1000,
     tau="sub_gaussian", sub_gaussian_sigma=1, samples_per_user=m)`` (tight
     calibration): tau is the Hsu-Kakade-Zhang radius of the user means for
     1-sub-Gaussian rows, valid here because the rows are Gaussian.
   * ``winsorized_loose_markov``: the same with ``tau = 10 r / sqrt(m)``, the
     radius few_users uses (second moment only, Markov).

   Reported: l2 error to the mean of the user means (median, p90, max over
   ``--reps`` repetitions), for few_users its error bound, failure bound, the
   number of failures (garbage or ``||est - mu|| > error_bound``) and the
   one-sided binomial p-value ``P[Bin(reps, bound) >= failures]``. Target:
   few_users has a guarantee (failure bound <= alpha and the failure count
   consistent with it, p >= 0.05) and the best other method's median error is
   at least 10x few_users' error bound. The analytic noise (rms) of
   WinsorizedMean is ``sqrt(d * plan.noise_variance)``; it ignores the final
   projection of the release onto the public box, so the empirical error of a
   box-route release can be well below it when the noise is large.

2. ``tight_bound`` -- the regime where few_users loses: ``mu`` uniform in
   ``[-1, 1]^d``, n in {200, 1000, 5000}, d in {100, 1000}, epsilon = 1,
   delta = 1e-6. Tight public knowledge: ``clipnoise_tight`` (centre 0,
   radius ``sqrt(d) + tau_hkz``) and ``winsorized_tight`` (box
   ``[-b, b]^d``, ``b = 1 + sqrt(2 ln(2nd/gamma)) / sqrt(m)``, the Gaussian
   tail bound of every coordinate of every user mean, gamma = 0.01;
   ``tau="sub_gaussian"``); loose knowledge: ``clipnoise_loose``,
   ``winsorized_loose`` (box 1000); ``few_users`` (no location). The
   two-stage recipe (basic composition, (eps/2, delta/2) + (eps/2, delta/2)):
   few_users gives ``p``, then ``clip_noise_mean(U, center=p, radius=
   info["error_bound"] + 10 r / sqrt(m))``; on garbage the second stage uses
   the loose ball (centre 0, radius ``1000 sqrt(d)``). For information, also
   ``two_stage_winsorized``: the second stage is ``p + winsorized_mean(U - p,
   bound=info["error_bound"] + 10 r / sqrt(m), tau="sub_gaussian")`` (the
   box of half-width R2 around p contains the l2 ball of radius R2), with the
   loose box (1000) on garbage. Targets: the best tight method beats
   few_users; "the two-stage recipe closes the gap" is read as: its median
   error is at most 2x that of the best tight method.

3. ``users_needed`` -- ``min_users_for_ball_sampler(eps, delta, d, alpha)``
   for eps in {0.5, 1, 2}, delta in {1e-5, 1e-8}, d in {10, 100, 1000},
   alpha in {0.1, 0.05}, calibration in {"tight", "paper"}; the ratio to
   Lemma 9's lower bound ``ln(1/delta) / (3 eps)``; the spec's own numbers
   (section 2.11: d = 100, alpha = 0.1: eps = 1 -> 98 / 130, eps = 0.5 ->
   211 / 260 at delta = 1e-5 / 1e-8) are compared (target: within 10 %).

4. ``timing`` -- wall time of one ``few_users_mean`` call (planning included)
   at n = 200, d = 1000 on concentrated user means, on user means with a
   quarter of the users replaced by one far point (within the robustness
   promise, kappa = 1/4) and on "adversarially spread" data (half the users
   far apart from each other and from the rest); method "auto" (here
   Algorithm 1). The number of rounds is random (geometric), so
   every call uses a different seed and the mean, median, p90 and max over
   ``--timing-calls`` calls are reported, with the public mean number of
   rounds N and the bound ``1/(c_acc rho_LB)`` on the expected rounds on
   good data.

The tables are printed and saved as CSV (all parts, one row per case, column
``part``) and JSON in ``benchmarks/results/``.
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

from skuserdp.exceptions import AccuracyWarning
from skuserdp.mean import (
    clip_noise_mean,
    few_users_mean,
    min_users_for_ball_sampler,
    plan_few_users,
    plan_winsorized_mean,
    tau_sub_gaussian,
    user_radius,
    winsorized_mean,
)
from skuserdp.privacy import ApproxDP, report_spend

# bench_user_means.py and bench_winsorized.py sit next to this script (on
# sys.path when run as a file)
from _results import write_results
from bench_winsorized import clip_noise_variance, git_state, load_average

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RATIO_TARGET = 10.0      # part 1: others >= 10x few_users' error bound
GAP_TARGET = 2.0         # part 2: two-stage <= 2x the best tight method
SPEC_TOLERANCE = 0.10    # part 3: n_min within 10 % of the spec's numbers
P_VALUE = 0.05           # binomial test level
WARNINGS = []            # AccuracyWarning messages of winsorized_mean (if any)

COMMON = dict(rows_per_user=10_000, row_sd=1.0, alpha=0.1, robustness=0.25,
              gamma=0.01, epsilon=1.0)
FEW = dict(n_users=(25, 50, 100, 200), n_features=(100, 1000),
           deltas=(1e-6, 1e-5), mu_box=1000.0)
TIGHT = dict(n_users=(200, 1000, 5000), n_features=(100, 1000), delta=1e-6,
             mu_box=1.0, loose_box=1000.0)
NEEDED = dict(epsilons=(0.5, 1.0, 2.0), deltas=(1e-5, 1e-8),
              n_features=(10, 100, 1000), alphas=(0.1, 0.05),
              calibrations=("tight", "paper"))
# spec section 2.11 (its own constants): (eps, delta) -> n_min at d = 100, alpha = 0.1
SPEC_N_MIN = {(1.0, 1e-5): 98, (1.0, 1e-8): 130, (0.5, 1e-5): 211, (0.5, 1e-8): 260}
TIMING = dict(n_users=200, n_features=1000, delta=1e-6, mu_box=1000.0,
              far=1e4, methods=("auto",))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200,
                        help="repetitions per cell in part 1 (few users)")
    parser.add_argument("--tight-reps", type=int, default=50,
                        help="repetitions per cell in part 2 (tight bound)")
    parser.add_argument("--timing-calls", type=int, default=20,
                        help="calls (different seeds) per case in part 4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: 10 repetitions in part 1, 5 in part 2, 3 timing calls; "
        "results are saved as few_users_quick.{csv,json}",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where to save the CSV and JSON (default: benchmarks/results)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.tight_reps, args.timing_calls = 10, 5, 3
    for name in ("reps", "tight_reps", "timing_calls"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def draw_mu(seed, part, d, box):
    """Population mean, uniform in ``[-box, box]^d`` (fixed per part and d)."""
    return np.random.default_rng([seed, part, d, 0]).uniform(-box, box, d)


def draw_user_means(mu, n, m, row_sd, rng):
    """Means of m rows N(mu, row_sd^2 I): mu + N(0, row_sd^2 / m I), exactly."""
    return mu + (row_sd / math.sqrt(m)) * rng.standard_normal((n, mu.shape[0]))


def seeds(seed, part, cell, rep, k):
    """k independent seed sequences for the methods of one repetition."""
    return np.random.SeedSequence([seed, part, cell, rep, 1]).spawn(k)


def summary(errs):
    a = np.asarray([e for e in errs if e is not None], dtype=float)
    if a.size == 0:
        return {"err_median": None, "err_p90": None, "err_max": None}
    return {"err_median": float(np.median(a)),
            "err_p90": float(np.quantile(a, 0.9)), "err_max": float(a.max())}


def binomial_check(failures, reps, bound):
    """One-sided p-value P[Bin(reps, bound) >= failures] and the 95 %
    Clopper-Pearson interval of the failure frequency."""
    p_value = float(stats.binom.sf(failures - 1, reps, bound)) if failures else 1.0
    lo = (0.0 if failures == 0
          else float(stats.beta.ppf(0.025, failures, reps - failures + 1)))
    hi = (1.0 if failures == reps
          else float(stats.beta.ppf(0.975, failures + 1, reps - failures)))
    return p_value, lo, hi


def spend(loss, delta):
    eps, dlt, _ = report_spend(loss, delta)
    return float(eps), float(dlt)


def check_spend(name, eps, dlt, epsilon, delta):
    if eps > epsilon * (1 + 1e-9) or dlt > delta * (1 + 1e-9):
        raise AssertionError(f"{name}: spends ({eps}, {dlt}) > ({epsilon}, {delta})")


def winsorized_plan(n, d, *, bound, tau, epsilon, delta, gamma):
    """The plan winsorized_mean runs for a float tau (route, noise variance)."""
    return plan_winsorized_mean(n, d, tau=tau, value_range=bound * math.sqrt(d),
                                budget=ApproxDP(epsilon, delta), gamma=gamma)


def run_winsorized(U, *, bound, epsilon, delta, m, seed, tau="sub_gaussian"):
    kw = dict(epsilon=epsilon, delta=delta, bound=bound, gamma=COMMON["gamma"],
              calibration="tight", random_state=seed)
    if tau == "sub_gaussian":
        kw.update(tau="sub_gaussian", sub_gaussian_sigma=COMMON["row_sd"],
                  samples_per_user=m)
    else:
        kw.update(tau=tau)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AccuracyWarning)
        mean, loss, _ = winsorized_mean(U, **kw)
    for w in caught:  # the tight plan is not expected to warn: count it if it does
        if issubclass(w.category, AccuracyWarning):
            WARNINGS.append(str(w.message))
    return mean, loss


def few_users(U, *, epsilon, delta, r, m, seed, method="auto"):
    return few_users_mean(U, epsilon=epsilon, delta=delta, radius=r,
                          samples_per_user=m, alpha=COMMON["alpha"],
                          robustness=COMMON["robustness"], method=method,
                          calibration="tight", random_state=seed)


# ---------------------------------------------------------------------------
# Part 1: few users, loose public box
# ---------------------------------------------------------------------------

def run_few_users(args):
    t0 = time.perf_counter()
    c, p = COMMON, FEW
    m, eps, reps = c["rows_per_user"], c["epsilon"], args.reps
    rows, summaries, facts = [], [], {}
    cell = 0
    for d in p["n_features"]:
        mu = draw_mu(args.seed, 1, d, p["mu_box"])
        r = c["row_sd"] * math.sqrt(d)
        loose_radius = p["mu_box"] * math.sqrt(d)
        facts[f"d={d}"] = {"norm_mu": float(np.linalg.norm(mu)),
                           "max_abs_mu": float(np.abs(mu).max()),
                           "per_row_radius": r,
                           "user_radius_markov": 10 * r / math.sqrt(m),
                           "rms_user_mean_spread": c["row_sd"] * math.sqrt(d / m),
                           "clipnoise_loose_radius": loose_radius}
        for n in p["n_users"]:
            tau_hkz = tau_sub_gaussian(c["row_sd"], m, d, n, c["gamma"])
            tau_markov = 10 * r / math.sqrt(m)
            for delta in p["deltas"]:
                cell += 1
                names = ("few_users", "clipnoise_loose", "winsorized_loose_hkz",
                         "winsorized_loose_markov")
                errs = {k: [] for k in names}
                fu_err_fallback, fu_failures, fu_garbage = [], 0, 0
                fu_info = fu_method = None
                spends = {}
                for rep in range(reps):
                    rng = np.random.default_rng([args.seed, 1, cell, rep, 0])
                    U = draw_user_means(mu, n, m, c["row_sd"], rng)
                    target = U.mean(axis=0)
                    s = seeds(args.seed, 1, cell, rep, 4)
                    loc, loss, info = few_users(U, epsilon=eps, delta=delta, r=r,
                                                m=m, seed=s[0])
                    fu_info, fu_method = info, info["method"]
                    spends["few_users"] = spend(loss, delta)
                    if loc is None:
                        fu_garbage += 1
                        fu_failures += 1
                        errs["few_users"].append(None)
                        fu_err_fallback.append(float(np.linalg.norm(target)))
                    else:
                        e = float(np.linalg.norm(loc - target))
                        errs["few_users"].append(e)
                        fu_err_fallback.append(e)
                        if np.linalg.norm(loc - mu) > info["error_bound"]:
                            fu_failures += 1
                    mean, loss = clip_noise_mean(U, epsilon=eps, delta=delta,
                                                 radius=loose_radius, random_state=s[1])
                    spends["clipnoise_loose"] = spend(loss, delta)
                    errs["clipnoise_loose"].append(float(np.linalg.norm(mean - target)))
                    for name, tau, seed in (
                            ("winsorized_loose_hkz", "sub_gaussian", s[2]),
                            ("winsorized_loose_markov", tau_markov, s[3])):
                        mean, loss = run_winsorized(U, bound=p["mu_box"], epsilon=eps,
                                                    delta=delta, m=m, seed=seed,
                                                    tau=tau)
                        spends[name] = spend(loss, delta)
                        errs[name].append(float(np.linalg.norm(mean - target)))
                for name, (e_, d_) in spends.items():
                    check_spend(name, e_, d_, eps, delta)
                # analytic noise (no clipping: every user mean is inside)
                cn_rms = math.sqrt(clip_noise_variance(n, d, loose_radius, eps, delta))
                w_plans = {
                    "winsorized_loose_hkz": winsorized_plan(
                        n, d, bound=p["mu_box"], tau=tau_hkz, epsilon=eps,
                        delta=delta, gamma=c["gamma"]),
                    "winsorized_loose_markov": winsorized_plan(
                        n, d, bound=p["mu_box"], tau=tau_markov, epsilon=eps,
                        delta=delta, gamma=c["gamma"]),
                }
                fb = fu_info["failure_probability"]
                p_value, cp_lo, cp_hi = binomial_check(fu_failures, reps, fb)
                r_user, _ = user_radius(r, m, n, c["robustness"])
                pkw = dict(radius=r_user, budget=ApproxDP(eps, delta),
                           alpha=c["alpha"], robustness=c["robustness"])
                ball_plan = plan_few_users(n, d, method="ball", **pkw).method_plan
                median_plan = plan_few_users(n, d, method="median", **pkw).method_plan
                base = {"part": "few_users", "n_users": n, "n_features": d,
                        "epsilon": eps, "delta": delta, "reps": reps}
                fu_row = {**base, "case": "few_users",
                          "knowledge": "r, m (no location)",
                          **summary(errs["few_users"]),
                          "fallback_err_median": float(np.median(fu_err_fallback)),
                          "fallback_err_p90": float(np.quantile(fu_err_fallback, 0.9)),
                          "fallback_err_max": float(np.max(fu_err_fallback)),
                          "garbage": fu_garbage, "garbage_rate": fu_garbage / reps,
                          "few_users_method": fu_method,
                          "median_copies": median_plan.n_copies,
                          "ball_error_bound": ball_plan.error_bound,
                          "ball_failure_bound": ball_plan.failure_bound,
                          "ball_rounds_clamped": ball_plan.rounds_clamped,
                          "error_bound": fu_info["error_bound"],
                          "failure_bound": fb, "failures": fu_failures,
                          "failure_rate": fu_failures / reps,
                          "binom_p_value": p_value, "failure_rate_ci_low": cp_lo,
                          "failure_rate_ci_high": cp_hi,
                          "within_failure_bound": bool(p_value >= P_VALUE),
                          "analytic_rms": None, "route": None, "tau": None,
                          "spent_epsilon": spends["few_users"][0],
                          "spent_delta": spends["few_users"][1]}
                rows.append(fu_row)
                for name in names[1:]:
                    plan = w_plans.get(name)
                    rows.append({
                        **base, "case": name,
                        "knowledge": {"clipnoise_loose": "ball(0, 1000 sqrt(d))",
                                      "winsorized_loose_hkz":
                                          "box 1000 + HKZ tau (Gaussian rows)",
                                      "winsorized_loose_markov":
                                          "box 1000 + tau = 10 r / sqrt(m)"}[name],
                        **summary(errs[name]),
                        "analytic_rms": (cn_rms if plan is None
                                         else math.sqrt(d * plan.noise_variance)),
                        "route": None if plan is None else plan.route,
                        "tau": None if plan is None else plan.tau,
                        "spent_epsilon": spends[name][0],
                        "spent_delta": spends[name][1],
                    })
                others = {k: float(np.median(errs[k])) for k in names[1:]}
                best = min(others, key=others.get)
                fu_ok = bool(fb <= c["alpha"] and p_value >= P_VALUE)
                ratio_bound = others[best] / fu_info["error_bound"]
                ratio_median = others[best] / fu_row["fallback_err_median"]
                met = bool(fu_ok and ratio_bound >= RATIO_TARGET)
                reason = []
                if fb > c["alpha"]:
                    reason.append(f"failure bound {fb:.3g} > alpha = {c['alpha']:g}")
                if p_value < P_VALUE:
                    reason.append(f"{fu_failures}/{reps} failures, p = {p_value:.2g}")
                if ratio_bound < RATIO_TARGET:
                    reason.append(f"best other / bound = {ratio_bound:.3g} < "
                                  f"{RATIO_TARGET:g}")
                summaries.append({
                    "part": "few_users_target", "n_users": n, "n_features": d,
                    "epsilon": eps, "delta": delta, "reps": reps,
                    "few_users_method": fu_method,
                    "few_users_error_bound": fu_info["error_bound"],
                    "few_users_failure_bound": fb,
                    "few_users_err_median_fallback": fu_row["fallback_err_median"],
                    "few_users_garbage_rate": fu_garbage / reps,
                    "few_users_failures": fu_failures,
                    "few_users_within": fu_row["within_failure_bound"],
                    "best_other": best, "best_other_err_median": others[best],
                    "ratio_best_other_to_bound": ratio_bound,
                    "ratio_best_other_to_few_users_median": ratio_median,
                    "target_met": met, "reason": "; ".join(reason),
                })
                print(f"  d = {d:4d} n = {n:3d} delta = {delta:g}: few_users "
                      f"{fu_method} median err {_g(fu_row['err_median'])} (bound "
                      f"{fu_info['error_bound']:.3g}, failure bound {fb:.3g}, "
                      f"garbage {fu_garbage}/{reps}, failures {fu_failures}); best "
                      f"other {best} {others[best]:.3g} -> "
                      f"{'met' if met else 'missed'}", flush=True)
    print(f"part 1 done in {time.perf_counter() - t0:.1f} s", flush=True)
    return rows, summaries, facts


# ---------------------------------------------------------------------------
# Part 2: tight public bound, many users; the two-stage recipe
# ---------------------------------------------------------------------------

TIGHT_METHODS = ("few_users", "clipnoise_tight", "winsorized_tight", "clipnoise_loose",
                 "winsorized_loose", "two_stage", "two_stage_winsorized")
KNOWLEDGE = {
    "few_users": "r, m (no location)",
    "clipnoise_tight": "ball(0, sqrt(d) + tau_hkz)",
    "winsorized_tight": "box b = 1 + sqrt(2 ln(2nd/gamma)/m), HKZ tau",
    "clipnoise_loose": "ball(0, 1000 sqrt(d))",
    "winsorized_loose": "box 1000, HKZ tau",
    "two_stage": "r, m; loose ball on garbage",
    "two_stage_winsorized": "r, m, HKZ tau; loose box on garbage",
}


def run_tight(args):
    t0 = time.perf_counter()
    c, p = COMMON, TIGHT
    m, eps, delta, reps, gamma = (c["rows_per_user"], c["epsilon"], p["delta"],
                                  args.tight_reps, c["gamma"])
    rows, summaries, facts = [], [], {}
    cell = 0
    for d in p["n_features"]:
        mu = draw_mu(args.seed, 2, d, p["mu_box"])
        r = c["row_sd"] * math.sqrt(d)
        r_user = 10 * r / math.sqrt(m)
        loose_radius = p["loose_box"] * math.sqrt(d)
        for n in p["n_users"]:
            cell += 1
            tau = tau_sub_gaussian(c["row_sd"], m, d, n, gamma)
            b_tight = p["mu_box"] + c["row_sd"] * math.sqrt(
                2 * math.log(2 * n * d / gamma) / m)
            tight_radius = p["mu_box"] * math.sqrt(d) + tau
            facts[f"d={d},n={n}"] = {"tau_hkz": tau, "box_tight": b_tight,
                                     "clipnoise_tight_radius": tight_radius,
                                     "norm_mu": float(np.linalg.norm(mu))}
            errs = {k: [] for k in TIGHT_METHODS}
            fu_fail = fu_garbage = ts_garbage = 0
            fu_info = ts_info = None
            ts_radius = []
            spends = {}
            for rep in range(reps):
                rng = np.random.default_rng([args.seed, 2, cell, rep, 0])
                U = draw_user_means(mu, n, m, c["row_sd"], rng)
                target = U.mean(axis=0)
                s = seeds(args.seed, 2, cell, rep, 9)
                # few_users at the full budget
                loc, loss, info = few_users(U, epsilon=eps, delta=delta, r=r, m=m,
                                            seed=s[0])
                fu_info = info
                spends["few_users"] = spend(loss, delta)
                if loc is None:
                    fu_garbage += 1
                    fu_fail += 1
                    loc = np.zeros(d)  # the estimator's public fallback
                elif np.linalg.norm(loc - mu) > info["error_bound"]:
                    fu_fail += 1
                errs["few_users"].append(float(np.linalg.norm(loc - target)))
                # tight and loose public knowledge
                for name, radius, seed in (("clipnoise_tight", tight_radius, s[1]),
                                           ("clipnoise_loose", loose_radius, s[2])):
                    mean, loss = clip_noise_mean(U, epsilon=eps, delta=delta,
                                                 radius=radius, random_state=seed)
                    spends[name] = spend(loss, delta)
                    errs[name].append(float(np.linalg.norm(mean - target)))
                for name, bound, seed in (("winsorized_tight", b_tight, s[3]),
                                          ("winsorized_loose", p["loose_box"], s[4])):
                    mean, loss = run_winsorized(U, bound=bound, epsilon=eps,
                                                delta=delta, m=m, seed=seed)
                    spends[name] = spend(loss, delta)
                    errs[name].append(float(np.linalg.norm(mean - target)))
                # two-stage: few_users at (eps/2, delta/2), then a release at
                # (eps/2, delta/2) around its output (basic composition)
                loc, loss1, info1 = few_users(U, epsilon=eps / 2, delta=delta / 2, r=r,
                                              m=m, seed=s[5])
                ts_info = info1
                e1, d1 = spend(loss1, delta / 2)
                if loc is None:
                    ts_garbage += 1
                    center, radius = None, loose_radius
                else:
                    center, radius = loc, info1["error_bound"] + r_user
                ts_radius.append(radius)
                mean, loss2 = clip_noise_mean(U, epsilon=eps / 2, delta=delta / 2,
                                              radius=radius, center=center,
                                              random_state=s[6])
                e2, d2 = spend(loss2, delta / 2)
                spends["two_stage"] = (e1 + e2, d1 + d2)
                errs["two_stage"].append(float(np.linalg.norm(mean - target)))
                if loc is None:
                    mean, loss2 = run_winsorized(U, bound=p["loose_box"],
                                                 epsilon=eps / 2, delta=delta / 2,
                                                 m=m, seed=s[7])
                else:
                    shifted, loss2 = run_winsorized(U - loc, bound=radius,
                                                    epsilon=eps / 2, delta=delta / 2,
                                                    m=m, seed=s[7])
                    mean = loc + shifted
                e2, d2 = spend(loss2, delta / 2)
                spends["two_stage_winsorized"] = (e1 + e2, d1 + d2)
                errs["two_stage_winsorized"].append(
                    float(np.linalg.norm(mean - target)))
            for name, (e_, d_) in spends.items():
                check_spend(name, e_, d_, eps, delta)
            analytic = {
                "clipnoise_tight": math.sqrt(clip_noise_variance(n, d, tight_radius,
                                                                 eps, delta)),
                "clipnoise_loose": math.sqrt(clip_noise_variance(n, d, loose_radius,
                                                                 eps, delta)),
                # stage 2 when stage 1 did not return garbage
                "two_stage": math.sqrt(clip_noise_variance(
                    n, d, ts_info["error_bound"] + r_user, eps / 2, delta / 2)),
            }
            routes = {}
            for name, bound in (("winsorized_tight", b_tight),
                                ("winsorized_loose", p["loose_box"])):
                plan = winsorized_plan(n, d, bound=bound, tau=tau, epsilon=eps,
                                       delta=delta, gamma=gamma)
                analytic[name] = math.sqrt(d * plan.noise_variance)
                routes[name] = plan.route
            plan = winsorized_plan(n, d, bound=ts_info["error_bound"] + r_user, tau=tau,
                                   epsilon=eps / 2, delta=delta / 2, gamma=gamma)
            analytic["two_stage_winsorized"] = math.sqrt(d * plan.noise_variance)
            routes["two_stage_winsorized"] = plan.route
            base = {"part": "tight_bound", "n_users": n, "n_features": d,
                    "epsilon": eps, "delta": delta, "reps": reps}
            med = {}
            for name in TIGHT_METHODS:
                row = {**base, "case": name, "knowledge": KNOWLEDGE[name],
                       **summary(errs[name]), "analytic_rms": analytic.get(name),
                       "route": routes.get(name),
                       "spent_epsilon": spends[name][0], "spent_delta": spends[name][1]}
                if name == "few_users":
                    fb = fu_info["failure_probability"]
                    p_value, lo, hi = binomial_check(fu_fail, reps, fb)
                    row.update(few_users_method=fu_info["method"],
                               error_bound=fu_info["error_bound"], failure_bound=fb,
                               garbage=fu_garbage, garbage_rate=fu_garbage / reps,
                               failures=fu_fail, binom_p_value=p_value,
                               within_failure_bound=bool(p_value >= P_VALUE))
                if name.startswith("two_stage"):
                    row.update(few_users_method=ts_info["method"],
                               error_bound=ts_info["error_bound"],
                               failure_bound=ts_info["failure_probability"],
                               garbage=ts_garbage, garbage_rate=ts_garbage / reps,
                               stage2_radius=ts_info["error_bound"] + r_user)
                rows.append(row)
                med[name] = row["err_median"]
            best_tight = min(("clipnoise_tight", "winsorized_tight"), key=med.get)
            gap = math.log(med["few_users"] / med[best_tight])
            closed = (math.log(med["few_users"] / med["two_stage"]) / gap
                      if gap > 0 else None)
            summaries.append({
                "part": "tight_bound_summary", "n_users": n, "n_features": d,
                "epsilon": eps, "delta": delta, "reps": reps,
                "best_tight": best_tight, "best_tight_err_median": med[best_tight],
                "few_users_err_median": med["few_users"],
                "ratio_few_users_to_best_tight": med["few_users"] / med[best_tight],
                "tight_beats_few_users": bool(med[best_tight] < med["few_users"]),
                "two_stage_err_median": med["two_stage"],
                "ratio_two_stage_to_clipnoise_tight":
                    med["two_stage"] / med["clipnoise_tight"],
                "stage2_radius_over_tight_radius":
                    (ts_info["error_bound"] + r_user) / tight_radius,
                "analytic_two_stage_over_clipnoise_tight":
                    analytic["two_stage"] / analytic["clipnoise_tight"],
                "ratio_two_stage_to_best_tight": med["two_stage"] / med[best_tight],
                "ratio_two_stage_to_clipnoise_loose":
                    med["two_stage"] / med["clipnoise_loose"],
                "log_gap_closed": closed,
                "two_stage_closes_gap":
                    bool(med["two_stage"] <= GAP_TARGET * med[best_tight]),
                "two_stage_garbage_rate": ts_garbage / reps,
                "ratio_two_stage_winsorized_to_best_tight":
                    med["two_stage_winsorized"] / med[best_tight],
            })
            sm = summaries[-1]
            print(f"  d = {d:4d} n = {n:5d}: few_users {med['few_users']:.3g}, "
                  f"best tight ({best_tight}) {med[best_tight]:.3g}, two-stage "
                  f"{med['two_stage']:.3g} ({sm['ratio_two_stage_to_best_tight']:.3g}x "
                  f"best tight; stage-1 garbage {ts_garbage}/{reps}), clipnoise loose "
                  f"{med['clipnoise_loose']:.3g}", flush=True)
    print(f"part 2 done in {time.perf_counter() - t0:.1f} s", flush=True)
    return rows, summaries, facts


# ---------------------------------------------------------------------------
# Part 3: users needed
# ---------------------------------------------------------------------------

def run_needed(args):
    t0 = time.perf_counter()
    p = NEEDED
    rows, checks = [], []
    for calibration in p["calibrations"]:
        for alpha in p["alphas"]:
            for eps in p["epsilons"]:
                for delta in p["deltas"]:
                    n_lb = math.log(1 / delta) / (3 * eps)
                    row = {"part": "users_needed", "calibration": calibration,
                           "alpha": alpha, "epsilon": eps, "delta": delta,
                           "n_lower_bound": n_lb}
                    for d in p["n_features"]:
                        n_min = min_users_for_ball_sampler(
                            eps, delta, d, alpha=alpha,
                            robustness=COMMON["robustness"], calibration=calibration)
                        plan = plan_few_users(
                            n_min, d, budget=ApproxDP(eps, delta), radius=1.0,
                            alpha=alpha, method="ball",
                            calibration=calibration).method_plan
                        row[f"n_min_d{d}"] = n_min
                        row[f"ratio_d{d}"] = n_min / n_lb
                        row[f"epsilon_a_d{d}"] = plan.epsilon_a
                        row[f"rounds_clamped_d{d}"] = plan.rounds_clamped
                    spec = SPEC_N_MIN.get((eps, delta))
                    if calibration == "tight" and alpha == 0.1 and spec is not None:
                        ours = row["n_min_d100"]
                        row["spec_n_min_d100"] = spec
                        row["relative_difference_to_spec"] = (ours - spec) / spec
                        checks.append({
                            "part": "users_needed_spec", "epsilon": eps, "delta": delta,
                            "n_features": 100, "alpha": alpha, "n_min": ours,
                            "spec_n_min": spec,
                            "relative_difference": (ours - spec) / spec,
                            "target_met": bool(abs(ours - spec) / spec
                                               <= SPEC_TOLERANCE),
                        })
                    rows.append(row)
    print(f"part 3 done in {time.perf_counter() - t0:.1f} s", flush=True)
    return rows, checks


# ---------------------------------------------------------------------------
# Part 4: run time on concentrated and adversarially spread data
# ---------------------------------------------------------------------------

def timing_data(args):
    c, p = COMMON, TIMING
    n, d, m = p["n_users"], p["n_features"], c["rows_per_user"]
    mu = draw_mu(args.seed, 4, d, p["mu_box"])
    rng = np.random.default_rng([args.seed, 4, 1])
    conc = draw_user_means(mu, n, m, c["row_sd"], rng)
    quarter = conc.copy()
    quarter[: n // 4] = mu + p["far"] / math.sqrt(d)  # one far point, ||.|| = far
    spread = conc.copy()
    half = n // 2
    # half the users at independent random points ~far away from each other
    # and from mu (pairwise distances ~ far * sqrt(2) >> 2R)
    spread[:half] = mu + p["far"] / math.sqrt(d) * rng.standard_normal((half, d))
    return mu, {"concentrated": conc, "quarter_at_one_far_point": quarter,
                "half_spread_far_apart": spread}


def run_timing(args):
    t0 = time.perf_counter()
    c, p = COMMON, TIMING
    n, d, m, eps, delta = (p["n_users"], p["n_features"], c["rows_per_user"],
                           c["epsilon"], p["delta"])
    r = c["row_sd"] * math.sqrt(d)
    r_user, _ = user_radius(r, m, n, c["robustness"])
    mu, datasets = timing_data(args)
    kw = dict(radius=r_user, budget=ApproxDP(eps, delta), alpha=c["alpha"],
              robustness=c["robustness"])
    ball = plan_few_users(n, d, method="ball", **kw).method_plan
    median = plan_few_users(n, d, method="median", **kw).method_plan
    t = time.perf_counter()
    for _ in range(5):
        plan_few_users(n, d, **kw)  # what "auto" plans here (Alg. 1 meets alpha)
    plan_time = (time.perf_counter() - t) / 5
    facts = {"ball_n_rounds": ball.n_rounds, "ball_rho_lb": ball.rho,
             "ball_accept": ball.accept,
             "ball_expected_rounds_bound_good_data": 1 / (ball.accept * ball.rho),
             "ball_error_bound": ball.error_bound,
             "median_copies": median.n_copies,
             "median_copy_n_rounds": median.copy.n_rounds,
             "planning_time_s": plan_time}
    rows = []
    few_users(datasets["concentrated"], epsilon=eps, delta=delta, r=r, m=m, seed=0)
    for data_name, U in datasets.items():
        for method in p["methods"]:
            times, errs, garbage = [], [], 0
            info = None
            for call in range(args.timing_calls):
                seed = np.random.SeedSequence([args.seed, 4, call])
                start = time.perf_counter()
                loc, _, info = few_users(U, epsilon=eps, delta=delta, r=r, m=m,
                                         seed=seed, method=method)
                times.append(time.perf_counter() - start)
                if loc is None:
                    garbage += 1
                else:
                    errs.append(float(np.linalg.norm(loc - mu)))
            t_arr = np.array(times)
            plan = ball if info["method"] == "ball" else median.copy
            rows.append({
                "part": "timing", "case": data_name, "method": method,
                "few_users_method": info["method"], "n_users": n, "n_features": d,
                "calls": args.timing_calls,
                "n_copies": 1 if info["method"] == "ball" else median.n_copies,
                "n_rounds_N": plan.n_rounds,
                "expected_rounds_bound_good_data": 1 / (plan.accept * plan.rho),
                "time_mean_s": float(t_arr.mean()),
                "time_median_s": float(np.median(t_arr)),
                "time_p90_s": float(np.quantile(t_arr, 0.9)),
                "time_max_s": float(t_arr.max()),
                "time_min_s": float(t_arr.min()),
                "garbage": garbage, "garbage_rate": garbage / args.timing_calls,
                "error_bound": info["error_bound"], **summary(errs),
                "times_s": [float(x) for x in times],
            })
            rr = rows[-1]
            print(f"  {data_name:<26} {method:<6} ({info['method']}): mean "
                  f"{rr['time_mean_s'] * 1e3:8.1f} ms, max "
                  f"{rr['time_max_s'] * 1e3:8.1f}"
                  f" ms, garbage {garbage}/{args.timing_calls}", flush=True)
    base = {r_["method"]: r_["time_mean_s"] for r_ in rows
            if r_["case"] == "concentrated"}
    for r_ in rows:
        r_["time_mean_over_concentrated"] = r_["time_mean_s"] / base[r_["method"]]
    print(f"part 4 done in {time.perf_counter() - t0:.1f} s", flush=True)
    return rows, facts


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def _g(x, fmt=".3g"):
    return "-" if x is None else format(x, fmt)


def _k(row):
    if row["few_users_method"] != "median":
        return ""
    return f" (k = {row['median_copies']})"


def format_few_users(rows, summaries):
    lines = ["| d | n | δ | method chosen | error bound | failure bound | garbage "
             "| failures (p) | err median | err p90 | err max | err median / p90 / max "
             "with fallback 0 |", "|---" * 12 + "|"]
    for r in rows:
        if r["case"] != "few_users":
            continue
        lines.append(
            f"| {r['n_features']} | {r['n_users']} | {r['delta']:g} "
            f"| {r['few_users_method']}"
            f"{_k(r)}"
            f" | {r['error_bound']:.3g} "
            f"| {r['failure_bound']:.3g} | {r['garbage']}/{r['reps']} "
            f"| {r['failures']}/{r['reps']} ({r['binom_p_value']:.2g}) "
            f"| {_g(r['err_median'])} | {_g(r['err_p90'])} | {_g(r['err_max'])} "
            f"| {r['fallback_err_median']:.3g} / {r['fallback_err_p90']:.3g} / "
            f"{r['fallback_err_max']:.3g} |")
    lines += ["", "| d | n | δ | method | err median | err p90 | err max "
              "| analytic noise (rms) | median / analytic | route | τ |",
              "|---" * 11 + "|"]
    for r in rows:
        if r["case"] == "few_users":
            continue
        an = r["analytic_rms"]
        lines.append(
            f"| {r['n_features']} | {r['n_users']} | {r['delta']:g} | {r['case']} "
            f"| {r['err_median']:.3g} | {r['err_p90']:.3g} | {r['err_max']:.3g} "
            f"| {_g(an)} | {_g(r['err_median'] / an if an else None)} "
            f"| {r['route'] or '-'} | {_g(r['tau'])} |")
    lines += ["", "| d | n | δ | few_users bound | failure bound | few_users median "
              "(fallback 0) | garbage | best other (median) | other / bound "
              "| other / few_users median | target |", "|---" * 11 + "|"]
    for s in summaries:
        lines.append(
            f"| {s['n_features']} | {s['n_users']} | {s['delta']:g} "
            f"| {s['few_users_error_bound']:.3g} | {s['few_users_failure_bound']:.3g} "
            f"| {s['few_users_err_median_fallback']:.3g} "
            f"| {s['few_users_garbage_rate']:.2f} "
            f"| {s['best_other']} ({s['best_other_err_median']:.3g}) "
            f"| {s['ratio_best_other_to_bound']:.3g} "
            f"| {s['ratio_best_other_to_few_users_median']:.3g} "
            f"| {'met' if s['target_met'] else '**missed**: ' + s['reason']} |")
    return "\n".join(lines)


def format_tight(rows, summaries):
    lines = ["| d | n | method | public knowledge | err median | err p90 | err max "
             "| analytic noise (rms) | route | notes |", "|---" * 10 + "|"]
    for r in rows:
        notes = ""
        if r["case"] == "few_users":
            notes = (f"{r['few_users_method']}, bound {r['error_bound']:.3g}, failure "
                     f"bound {r['failure_bound']:.2g}, garbage {r['garbage']}/"
                     f"{r['reps']}, failures {r['failures']}/{r['reps']}")
        elif r["case"].startswith("two_stage"):
            notes = (f"stage 1 {r['few_users_method']} bound {r['error_bound']:.3g} "
                     f"(failure bound {r['failure_bound']:.2g}), garbage "
                     f"{r['garbage']}/{r['reps']}; stage-2 radius "
                     f"{r['stage2_radius']:.3g}")
        lines.append(
            f"| {r['n_features']} | {r['n_users']} | {r['case']} | {r['knowledge']} "
            f"| {r['err_median']:.3g} | {r['err_p90']:.3g} | {r['err_max']:.3g} "
            f"| {_g(r['analytic_rms'])} | {r['route'] or '-'} | {notes} |")
    lines += ["", "| d | n | best tight (median) | few_users / best tight "
              "| two-stage (median) | two-stage / best tight | two-stage / clipnoise "
              "tight (analytic; radius ratio) | two-stage / clipnoise "
              "loose | log-gap closed | stage-1 garbage | two-stage winsorized / best "
              "tight | closes gap (≤ 2×) |", "|---" * 12 + "|"]
    for s in summaries:
        lines.append(
            f"| {s['n_features']} | {s['n_users']} | {s['best_tight']} "
            f"({s['best_tight_err_median']:.3g}) "
            f"| {s['ratio_few_users_to_best_tight']:.3g} "
            f"| {s['two_stage_err_median']:.3g} "
            f"| {s['ratio_two_stage_to_best_tight']:.3g} "
            f"| {s['ratio_two_stage_to_clipnoise_tight']:.3g} "
            f"({s['analytic_two_stage_over_clipnoise_tight']:.3g}; "
            f"{s['stage2_radius_over_tight_radius']:.3g}) "
            f"| {s['ratio_two_stage_to_clipnoise_loose']:.3g} "
            f"| {_g(s['log_gap_closed'], '.2f')} "
            f"| {s['two_stage_garbage_rate']:.2f} "
            f"| {s['ratio_two_stage_winsorized_to_best_tight']:.3g} "
            f"| {'yes' if s['two_stage_closes_gap'] else '**no**'} |")
    return "\n".join(lines)


def format_needed(rows, checks):
    ds = NEEDED["n_features"]
    lines = ["| calibration | α | ε | δ | ln(1/δ)/(3ε) | "
             + " | ".join(f"n_min d={d}" for d in ds) + " | "
             + " | ".join(f"ratio d={d}" for d in ds) + " | ε_a |",
             "|---" * (6 + 2 * len(ds)) + "|"]
    for r in rows:
        lines.append(
            f"| {r['calibration']} | {r['alpha']:g} | {r['epsilon']:g} "
            f"| {r['delta']:g} | {r['n_lower_bound']:.2f} | "
            + " | ".join(str(r[f"n_min_d{d}"]) for d in ds) + " | "
            + " | ".join(f"{r[f'ratio_d{d}']:.1f}" for d in ds)
            + f" | {r['epsilon_a_d100']:.3f} |")
    lines += ["", "| ε | δ | n_min (d = 100, α = 0.1, tight) | spec §2.11 "
              "| difference | within 10 % |", "|---" * 6 + "|"]
    for c in checks:
        lines.append(f"| {c['epsilon']:g} | {c['delta']:g} | {c['n_min']} "
                     f"| {c['spec_n_min']} | {c['relative_difference']:+.1%} "
                     f"| {'yes' if c['target_met'] else '**no**'} |")
    return "\n".join(lines)


def format_timing(rows, facts):
    lines = ["| data | method (run) | copies | N (mean rounds cap) | 1/(c_acc ρ_LB) "
             "| mean (ms) | median (ms) | p90 (ms) | max (ms) | mean / concentrated "
             "| garbage | err median (bound) |", "|---" * 12 + "|"]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['method']} ({r['few_users_method']}) "
            f"| {r['n_copies']} | {r['n_rounds_N']:.0f} "
            f"| {r['expected_rounds_bound_good_data']:.0f} "
            f"| {r['time_mean_s'] * 1e3:.1f} | {r['time_median_s'] * 1e3:.1f} "
            f"| {r['time_p90_s'] * 1e3:.1f} | {r['time_max_s'] * 1e3:.1f} "
            f"| {r['time_mean_over_concentrated']:.3g} "
            f"| {r['garbage']}/{r['calls']} "
            f"| {_g(r['err_median'])} ({r['error_bound']:.3g}) |")
    lines.append(f"\nplanning alone (plan_few_users, what auto plans here): "
                 f"{facts['planning_time_s'] * 1e3:.1f} ms per call")
    return "\n".join(lines)


def save(parts, facts, args, git_before, load_before, total_s):
    stem = "few_users_quick" if args.quick else "few_users"
    all_rows = [row for rows in parts.values() for row in rows]
    payload = {
        "total_seconds": total_s,
        "params": {
            "seed": args.seed, "quick": args.quick, "common": COMMON,
            "few_users": {**FEW, "reps": args.reps},
            "tight_bound": {**TIGHT, "reps": args.tight_reps},
            "users_needed": {**NEEDED,
                             "spec_n_min": {f"eps={e:g},delta={d:g}": v
                                            for (e, d), v in SPEC_N_MIN.items()}},
            "timing": {**TIMING, "calls": args.timing_calls},
            "data": "user means drawn as mu + N(0, row_sd^2 I / m) (exact mean of m "
                    "Gaussian rows N(mu, row_sd^2 I)); fresh per repetition",
        },
        "targets": {
            "few_users": f"few_users has a guarantee (failure bound <= alpha, "
                         f"failures consistent with it at p >= {P_VALUE}) and the "
                         f"best other method's median error >= {RATIO_TARGET:g} x "
                         f"few_users' error bound",
            "tight_bound": f"the best tight-bound method beats few_users; the "
                           f"two-stage recipe is within {GAP_TARGET:g}x of it",
            "users_needed": f"n_min within {SPEC_TOLERANCE:.0%} of the spec's "
                            f"section 2.11 numbers (d = 100, alpha = 0.1)",
            "timing": "report only",
        },
        "facts": facts,
        "winsorized_accuracy_warnings": WARNINGS,
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
    print(f"1. few users (loose box), {args.reps} repetitions per cell", flush=True)
    few_rows, few_summary, few_facts = run_few_users(args)
    print(f"2. tight public bound, {args.tight_reps} repetitions per cell", flush=True)
    tight_rows, tight_summary, tight_facts = run_tight(args)
    print("3. users needed", flush=True)
    needed_rows, needed_checks = run_needed(args)
    print(f"4. run time, {args.timing_calls} calls per case", flush=True)
    timing_rows, timing_facts = run_timing(args)
    total = time.perf_counter() - t0
    print(f"\ntotal {total:.1f} s\n")
    print("1. Few users, loose box [-1000, 1000]^d\n")
    print(format_few_users(few_rows, few_summary))
    print("\n2. Tight public bound ([-1, 1]^d), many users; the two-stage recipe\n")
    print(format_tight(tight_rows, tight_summary))
    print("\n3. Users needed: min_users_for_ball_sampler vs Lemma 9\n")
    print(format_needed(needed_rows, needed_checks))
    print("\n4. Run time of few_users_mean, n = 200, d = 1000\n")
    print(format_timing(timing_rows, timing_facts))
    parts = {"few_users": few_rows, "few_users_target": few_summary,
             "tight_bound": tight_rows, "tight_bound_summary": tight_summary,
             "users_needed": needed_rows, "users_needed_spec": needed_checks,
             "timing": timing_rows}
    facts = {"few_users": few_facts, "tight_bound": tight_facts,
             "timing": timing_facts}
    csv_path, json_path = save(parts, facts, args, git_before, load_before, total)
    print(f"\nsaved {csv_path} and {json_path}")
    if git_before != git_state():
        print("warning: the repository changed while the benchmark ran")
    if WARNINGS:
        print(f"warning: winsorized_mean raised {len(WARNINGS)} AccuracyWarning(s), "
              f"first: {WARNINGS[0]}")
    for s in few_summary:
        if not s["target_met"]:
            print(f"target missed: few users d = {s['n_features']}, n = "
                  f"{s['n_users']}, delta = {s['delta']:g}: {s['reason']}")
    for s in tight_summary:
        if not s["tight_beats_few_users"]:
            print(f"target missed: tight bound d = {s['n_features']}, n = "
                  f"{s['n_users']}: best tight {s['best_tight_err_median']:.3g} does "
                  f"not beat few_users {s['few_users_err_median']:.3g}")
        if not s["two_stage_closes_gap"]:
            print(f"target missed: two-stage d = {s['n_features']}, n = "
                  f"{s['n_users']}: {s['ratio_two_stage_to_best_tight']:.3g}x the best "
                  f"tight method (> {GAP_TARGET:g}x)")
    for c in needed_checks:
        if not c["target_met"]:
            print(f"target missed: n_min eps = {c['epsilon']:g}, delta = "
                  f"{c['delta']:g}: {c['n_min']} vs spec {c['spec_n_min']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
