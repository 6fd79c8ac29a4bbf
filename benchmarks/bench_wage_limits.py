"""Why the wage-panel target of issue 6 needs private standardisation.

Run from the repository root (needs the ``bench`` extra for the wage panel)::

    python benchmarks/bench_wage_limits.py              # ~2 min on 2 CPUs
    python benchmarks/bench_wage_limits.py --reps 50 --sensitivity-reps 100

Issue 6 asks for an in-sample R^2 within 0.05 of OLS (0.1866, so >= 0.1366)
at epsilon = 1 on the wage panel (545 persons x 8 rows), with the features
scaled by public ranges (``_regression_data``). On those features the best
hand-tuned UserDPSGDRegressor reaches about 0.07 (``bench_regression.py``);
with ``standardize=True`` it meets the target. This script measures where
the obstacle is and how robust the fix is:

1. ``floor`` -- a model floor for every method whose noise is isotropic in
   the coordinates the features are given in (clip-and-noise gradient
   descent, noisy sufficient statistics). It gives the method everything for
   free except one noisy release: the exact user-averaged second-moment
   matrix ``A`` of the augmented rows, the ridge ``lambda`` chosen by an
   oracle on the true R^2 (grid of 60), and a clip radius ``C`` for the
   per-user means of ``y x`` that is either the public bound (no bias) or
   the median of their norms (optimistic: its clipping bias is ignored).
   Output ``(A + lambda I)^{-1} (b + N(0, sigma^2 I))`` with ``b`` the exact
   mean and ``sigma`` the Gaussian of the whole budget
   (``rho = rho(epsilon, delta)``, replace-one sensitivity ``2 C / n``).
   Gradient descent from 0 releases this statistic at its first step (the
   per-user gradient at 0 is ``-y x``), with less than the whole budget and
   with a noisy rather than exact curvature. It is a model, not a theorem:
   an algorithm that adapts its geometry to the data is not covered. The
   floor is computed on the public-range features and, for contrast, on
   the features standardised with their true (non-private) moments.
2. ``dpgd`` -- UserDPSGDRegressor (clip 0.5, step 0.3, T = 100, radius 5;
   knobs chosen by looking at these results, as in ``bench_regression``) on
   (a) the features standardised with their true moments (not private: what
   public knowledge of each feature's centre and spread would give), and
   (b) the features standardised with *private* moments: one clip-and-noise
   release of the per-user means of ``(x, x^2)`` inside the public box,
   spending a share of the zCDP budget (the rest goes to the estimator; the
   total is checked to be <= rho(epsilon, delta)).
3. ``sensitivity`` -- UserDPSGDRegressor with ``standardize=True`` (the
   estimator's own private standardisation, ``bench_regression``'s
   ``dpsgd_standardized_tuned`` configuration) at epsilon = 1, moving one
   knob at a time by about a factor of two around that configuration: does
   the wage-panel target hold on a neighbourhood of knobs, or only at the
   point that was picked by looking at the results?

Results are printed and saved as ``benchmarks/results/wage_limits.{csv,json}``.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.metrics import r2_score

import _regression_data as rd
from _results import write_results
from bench_winsorized import git_state

RESULTS_DIR = Path(__file__).resolve().parent / "results"
EPSILONS = (0.5, 1.0, 2.0, 4.0)
DELTA = 1e-6  # as in bench_regression
FLOOR_DRAWS = 200
RIDGE_GRID = np.geomspace(1e-6, 10.0, 60)
DPGD = dict(clip_norm=0.5, learning_rate=0.3, max_iter=100, radius=5.0)
SHARES = (0.2, 0.3, 0.5)
# Part 3: the standardize=True configuration and one-at-a-time variations.
STANDARDIZED = dict(clip_norm=0.5, learning_rate=0.3, max_iter=100, radius=5.0,
                    standardize_share=0.2)
VARIATIONS = {"clip_norm": (0.3, 1.0), "learning_rate": (0.15, 0.5),
              "max_iter": (50, 200), "standardize_share": (0.1, 0.3)}
SENSITIVITY_EPSILON = 1.0
# Rows of standardised features are projected onto this public ball
# (3 standard deviations per coordinate).
Z_BOUND_PER_COORD = 3.0
# Floor of a private standard deviation, as a fraction of the public half-range.
SD_FLOOR = 0.05


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--sensitivity-reps", type=int, default=60)
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    return p.parse_args(argv)


def user_codes(groups):
    _, codes = np.unique(groups, return_inverse=True)
    return codes, int(codes.max()) + 1


def per_user_means(V, codes, n_users):
    from skuserdp.users import user_means
    means = user_means(np.ascontiguousarray(V, dtype=np.float64), codes).means
    assert means.shape[0] == n_users
    return means


def floor_rows(name, F, y, y_raw, codes, n_users, seed):
    """The model floor of part 1 for the features ``F``."""
    from skuserdp.privacy import zcdp_rho_for
    Fa = np.hstack([F, np.ones((F.shape[0], 1))])
    p = Fa.shape[1]
    A = per_user_means(np.einsum("ij,ik->ijk", Fa, Fa).reshape(len(Fa), -1),
                       codes, n_users).mean(axis=0).reshape(p, p)
    U = per_user_means(y[:, None] * Fa, codes, n_users)
    b = U.mean(axis=0)
    norms = np.linalg.norm(U, axis=1)
    public_c = float(np.max(np.linalg.norm(Fa, axis=1)) * rd.target_bound())
    clips = {"public bound (no bias)": public_c,
             "median user norm (bias ignored)": float(np.median(norms))}
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((FLOOR_DRAWS, p))
    inverses = [np.linalg.inv(A + lam * np.eye(p)) for lam in RIDGE_GRID]
    rows = []
    for eps in EPSILONS:
        rho = zcdp_rho_for(eps, DELTA)
        for clip_name, C in clips.items():
            sigma = 2.0 * C / n_users / math.sqrt(2.0 * rho)
            best = (-np.inf, None)
            for lam, M in zip(RIDGE_GRID, inverses):
                thetas = (b + sigma * noise) @ M.T
                r2 = np.median([r2_score(y_raw, rd.unscale_target(Fa @ t))
                                for t in thetas])
                best = max(best, (r2, lam))
            rows.append({"part": "floor", "features": name, "clip": clip_name,
                         "clip_radius": C, "epsilon": eps, "sigma": sigma,
                         "median_r2": float(best[0]),
                         "oracle_ridge": float(best[1])})
    return rows


def private_moments(X, codes, n_users, rho, seed):
    """Per-feature mean and sd from one clip-and-noise release at ``rho``-zCDP.

    The per-user means of ``(x, x^2)`` lie in the public box
    ``[-c, c]^d x [0, c^2]^d`` (``c`` the public per-coordinate bound); the
    release clips to its circumscribed ball around the box's centre.
    """
    from skuserdp.mean import clip_noise_from_plan, plan_clip_noise
    from skuserdp.privacy import ZCDP
    d = X.shape[1]
    c = rd.feature_bounds()[1]
    lo = np.r_[np.full(d, -c), np.zeros(d)]
    hi = np.r_[np.full(d, c), np.full(d, c * c)]
    plan = plan_clip_noise(n_users, 2 * d, budget=ZCDP(rho),
                           radius=float(np.linalg.norm((hi - lo) / 2)))
    m = clip_noise_from_plan(per_user_means(np.hstack([X, X ** 2]), codes, n_users),
                             plan, center=(lo + hi) / 2, random_state=seed)
    m = np.clip(m, lo, hi)
    var = np.maximum(m[d:] - m[:d] ** 2, (SD_FLOOR * c) ** 2)
    return m[:d], np.sqrt(var), plan.loss.rho


def dpgd_rep(data, codes, n_users, eps, share, seed):
    """One fit of part 2; ``share=None`` standardises with the true moments."""
    from skuserdp.linear_model import UserDPSGDRegressor
    from skuserdp.privacy import zcdp_rho_for, zcdp_to_approx_dp
    X, y, y_raw, groups = data["X"], data["y"], data["y_raw"], data["groups"]
    rho = zcdp_rho_for(eps, DELTA)
    seeds = np.random.SeedSequence(seed).generate_state(2)
    if share is None:
        mean, sd, rho_std, eps_fit = X.mean(axis=0), X.std(axis=0), 0.0, eps
    else:
        mean, sd, rho_std = private_moments(X, codes, n_users, share * rho,
                                            int(seeds[0]))
        eps_fit = zcdp_to_approx_dp(rho - rho_std, DELTA).epsilon
    Z = (X - mean) / sd
    model = UserDPSGDRegressor(
        epsilon=eps_fit, delta=DELTA,
        bounds=(-Z_BOUND_PER_COORD, Z_BOUND_PER_COORD),
        target_bounds=(-rd.target_bound(), rd.target_bound()),
        random_state=int(seeds[1]), **DPGD,
    ).fit(Z, y, groups=groups)
    r2 = float(r2_score(y_raw, rd.unscale_target(model.predict(Z))))
    return {"part": "dpgd", "epsilon": eps,
            "standardisation": "true moments (not private)" if share is None
            else f"private, share {share:g}",
            "r2": r2, "rho_total": rho_std + model.rho_, "rho_budget": rho,
            "within_budget": bool(rho_std + model.rho_ <= rho * (1 + 1e-9))}


def summarise(rows, part, keys, extra=None):
    """Median, quartiles of R^2 and the budget check per value of ``keys``,
    in order of first appearance."""
    out = []
    for key in dict.fromkeys(tuple(r[k] for k in keys) for r in rows):
        cell = [r for r in rows if tuple(r[k] for k in keys) == key]
        q25, med, q75 = np.percentile([r["r2"] for r in cell], [25, 50, 75])
        out.append({"part": part, **dict(zip(keys, key)), **(extra or {}),
                    "reps": len(cell), "median_r2": float(med),
                    "q25_r2": float(q25), "q75_r2": float(q75),
                    "all_within_budget": all(r["within_budget"] for r in cell)})
    return out


def summarise_dpgd(rows):
    return summarise(sorted(rows, key=lambda r: (r["standardisation"],
                                                 r["epsilon"])),
                     "dpgd_summary", ("standardisation", "epsilon"))


def sensitivity_configs():
    """[(label, kwargs)]: the configuration, then one knob moved at a time."""
    out = [("as benchmarked", dict(STANDARDIZED))]
    for knob, values in VARIATIONS.items():
        out += [(f"{knob}={v:g}", {**STANDARDIZED, knob: v}) for v in values]
    return out


def sensitivity_rep(data, label, kwargs, seed):
    """One fit of part 3 (the estimator's own private standardisation)."""
    from skuserdp.linear_model import UserDPSGDRegressor
    lo, hi = rd.feature_bounds()
    model = UserDPSGDRegressor(
        epsilon=SENSITIVITY_EPSILON, delta=DELTA, bounds=(lo, hi),
        target_bounds=(-rd.target_bound(), rd.target_bound()), standardize=True,
        random_state=seed, **kwargs,
    ).fit(data["X"], data["y"], groups=data["groups"])
    r2 = float(r2_score(data["y_raw"], rd.unscale_target(model.predict(data["X"]))))
    return {"part": "sensitivity", "config": label, "r2": r2,
            "within_budget": bool(model.epsilon_ <= SENSITIVITY_EPSILON
                                  * (1 + 1e-9) and model.delta_ <= DELTA)}


def summarise_sensitivity(rows):
    return summarise(rows, "sensitivity_summary", ("config",),
                     {"epsilon": SENSITIVITY_EPSILON})


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    git_before = git_state()
    data = rd.wage_panel_arrays()
    X, y, y_raw = data["X"], data["y"], data["y_raw"]
    codes, n_users = user_codes(data["groups"])
    Z_true = (X - X.mean(axis=0)) / X.std(axis=0)
    floors = (floor_rows("public ranges", X, y, y_raw, codes, n_users, args.seed)
              + floor_rows("true moments (not private)", Z_true, y, y_raw, codes,
                           n_users, args.seed))
    ss = np.random.SeedSequence(args.seed)
    jobs = [(eps, share, int(s.generate_state(1)[0]))
            for eps in EPSILONS for share in (None, *SHARES)
            for s in ss.spawn(args.reps)]
    fits = Parallel(n_jobs=args.n_jobs)(
        delayed(dpgd_rep)(data, codes, n_users, eps, share, seed)
        for eps, share, seed in jobs)
    summary = summarise_dpgd(fits)
    sens_jobs = [(label, kw, int(s.generate_state(1)[0]))
                 for (label, kw), sub in zip(sensitivity_configs(),
                                             ss.spawn(len(sensitivity_configs())))
                 for s in sub.spawn(args.sensitivity_reps)]
    sens = Parallel(n_jobs=args.n_jobs)(
        delayed(sensitivity_rep)(data, label, kw, seed)
        for label, kw, seed in sens_jobs)
    sens_summary = summarise_sensitivity(sens)
    total = time.perf_counter() - t0

    print("1. Model floor (median R^2, oracle ridge; OLS 0.1866, target 0.1366)\n")
    print("| features | clip | " + " | ".join(f"eps={e:g}" for e in EPSILONS) + " |")
    print("|---|---|" + "---|" * len(EPSILONS))
    for feat in ("public ranges", "true moments (not private)"):
        for clip in ("public bound (no bias)", "median user norm (bias ignored)"):
            vals = [r["median_r2"] for r in floors
                    if r["features"] == feat and r["clip"] == clip]
            print(f"| {feat} | {clip} | " + " | ".join(f"{v:.3f}" for v in vals)
                  + " |")
    print(f"\n2. UserDPSGDRegressor {DPGD}, median [IQR] of R^2 over "
          f"{args.reps} reps\n")
    print("| standardisation | " + " | ".join(f"eps={e:g}" for e in EPSILONS) + " |")
    print("|---|" + "---|" * len(EPSILONS))
    for std in dict.fromkeys(r["standardisation"] for r in summary):
        cells = [r for r in summary if r["standardisation"] == std]
        print(f"| {std} | " + " | ".join(
            f"{r['median_r2']:.3f} [{r['q25_r2']:.3f}, {r['q75_r2']:.3f}]"
            for r in cells) + " |")
    print(f"\n3. standardize=True at eps = {SENSITIVITY_EPSILON:g}, one knob "
          f"moved at a time from {STANDARDIZED}; median [IQR] of R^2 over "
          f"{args.sensitivity_reps} reps (target 0.1366)\n")
    print("| configuration | median R^2 [IQR] |")
    print("|---|---|")
    for r in sens_summary:
        print(f"| {r['config']} | {r['median_r2']:.3f} "
              f"[{r['q25_r2']:.3f}, {r['q75_r2']:.3f}] |")
    ok = all(r["all_within_budget"] for r in summary + sens_summary)
    print(f"\nevery composed spend <= rho(eps, delta): {ok}; total {total:.1f} s")
    payload = {"params": {"reps": args.reps, "seed": args.seed, "delta": DELTA,
                          "epsilons": list(EPSILONS), "dpgd": DPGD,
                          "shares": list(SHARES), "floor_draws": FLOOR_DRAWS,
                          "z_bound_per_coord": Z_BOUND_PER_COORD,
                          "sd_floor": SD_FLOOR,
                          "sensitivity_reps": args.sensitivity_reps,
                          "standardized": STANDARDIZED,
                          "variations": VARIATIONS},
               "git": {"start": git_before, "end": git_state()},
               "total_seconds": total,
               "results": {"floor": floors, "dpgd_summary": summary,
                           "dpgd": fits, "sensitivity_summary": sens_summary,
                           "sensitivity": sens}}
    paths = write_results(args.output_dir, "wage_limits",
                          floors + summary + sens_summary, payload)
    print(f"saved {paths[0]} and {paths[1]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
