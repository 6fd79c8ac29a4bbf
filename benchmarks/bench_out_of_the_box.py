"""Issue 15: correct answers out of the box, with only what a user would type.

Four parts, every estimator constructed with its defaults plus, where the
part says so, the public boxes ``bounds`` / ``target_bounds`` (never a
tuned knob):

``clinical``
    Means about [40, 70, 120] (age, weight, systolic pressure), 2000 users x
    5 rows, epsilon = 1, nothing declared: the relative error of every mean
    estimator (or the error it refuses with).
``wage``
    The linearmodels wage panel (545 persons x 8 years, target lwage):
    in-sample R^2 of UserDPSGDRegressor (default, and standardize=True) and
    UserDPLinearRegression at epsilon = 1, delta = 1e-6, with the codebook
    boxes of ``_regression_data.WAGE_PUBLIC_RANGES`` only, and with nothing
    declared ("auto"); OLS for reference.
``synthetic``
    200k rows x 20 features x 5k users (``_regression_data``'s
    user-structured model with small noise, ``SIGNAL``): held-out R^2 (the
    last 1000 users) of the defaults against OLS.
``logistic``
    The same design with a logistic label: held-out accuracy of
    UserDPSGDClassifier(classes=[0, 1]) against non-private logistic
    regression.
``ssp_oracle`` (not in the default parts)
    A ceiling, not a private result: UserDPLinearRegression on the
    ``synthetic`` data with non-private oracle help -- the exact boxes of
    the training data, and the clip radius at the *exact* q-quantile of the
    norms of the users' statistics vectors (q in 0.02, 0.1, 0.25, 0.5),
    instead of the privately learned ones. If even this misses the issue's
    target (within 0.05 of OLS), the gap is the noise of the sufficient
    statistics themselves, not the learned knobs.

Run ``python benchmarks/bench_out_of_the_box.py`` (``--quick`` for a smoke
run); results go to ``benchmarks/results/out_of_the_box[_quick].{csv,json}``
(``out_of_the_box_<parts>`` when ``--parts`` is not the default).
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _regression_data as rd  # noqa: E402
from _results import write_results  # noqa: E402


DEFAULT_PARTS = "clinical,wage,synthetic,logistic"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--parts", default=DEFAULT_PARTS)
    parser.add_argument("--output-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results"))
    return parser.parse_args(argv)


def _fit_quietly(est, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(*args, **kwargs)
    names = sorted({type(w.message).__name__ for w in caught})
    return est, names


def clinical(reps):
    from skuserdp.mean import (
        ClipNoiseMeanEstimator,
        CoinPressMeanEstimator,
        FewUsersBallEstimator,
        ThreadedClipNoiseEstimator,
        UserMeanEstimator,
        WinsorizedMeanEstimator,
    )
    mu = np.array([40.0, 70.0, 120.0])
    rows = []
    for cls in (UserMeanEstimator, ClipNoiseMeanEstimator, CoinPressMeanEstimator,
                WinsorizedMeanEstimator, FewUsersBallEstimator,
                ThreadedClipNoiseEstimator):
        errors, refused, warned = [], None, set()
        for seed in range(reps):
            rng = np.random.default_rng(seed)
            users = rng.normal(mu, [8.0, 12.0, 15.0], size=(2000, 3))
            X = np.repeat(users, 5, axis=0) + rng.normal(0.0, 5.0, size=(10000, 3))
            g = np.repeat(np.arange(2000), 5)
            try:
                est, names = _fit_quietly(cls(epsilon=1.0, random_state=seed), X,
                                          groups=g)
            except ValueError as exc:
                refused = str(exc).split(":")[0]
                break
            warned.update(names)
            errors.append(float(np.max(np.abs(est.mean_ / mu - 1.0))))
        rows.append({"part": "clinical", "estimator": cls.__name__,
                     "refused": refused,
                     "max_relative_error_median": (float(np.median(errors))
                                                   if errors else None),
                     "max_relative_error_worst": (float(np.max(errors))
                                                  if errors else None),
                     "warnings": ",".join(sorted(warned))})
        print(rows[-1], flush=True)
    return rows


def wage(reps):
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
    df = rd.load_wage_panel()
    X = df[list(rd.WAGE_FEATURES)].to_numpy(float)
    y = df[rd.WAGE_TARGET].to_numpy(float)
    g = df[rd.WAGE_GROUPS].to_numpy()
    lo = np.array([rd.WAGE_PUBLIC_RANGES[f][0] for f in rd.WAGE_FEATURES])
    hi = np.array([rd.WAGE_PUBLIC_RANGES[f][1] for f in rd.WAGE_FEATURES])
    declared = dict(bounds=(lo, hi), target_bounds=rd.WAGE_PUBLIC_RANGES["lwage"])
    ols = float(r2_score(y, LinearRegression().fit(X, y).predict(X)))
    rows = [{"part": "wage", "estimator": "OLS (not private)", "knowledge": "-",
             "r2_median": ols}]
    print(rows[-1], flush=True)
    for name, cls, extra in (("UserDPSGDRegressor", UserDPSGDRegressor, {}),
                             ("UserDPSGDRegressor(standardize=True)",
                              UserDPSGDRegressor, dict(standardize=True)),
                             ("UserDPLinearRegression", UserDPLinearRegression, {})):
        for label, kw in (("codebook boxes", declared), ("auto", {})):
            r2, warned, t0, refused = [], set(), time.perf_counter(), None
            for seed in range(reps):
                try:
                    est, names = _fit_quietly(
                        cls(epsilon=1.0, delta=1e-6, random_state=seed, **kw,
                            **extra), X, y, groups=g)
                except ValueError as exc:
                    refused = str(exc).split(":")[1].strip()[:60]
                    break
                warned.update(names)
                r2.append(float(r2_score(y, est.predict(X))))
            rows.append({"part": "wage", "estimator": name, "knowledge": label,
                         "refused": refused,
                         "r2_median": float(np.median(r2)) if r2 else None,
                         "r2_q25": float(np.quantile(r2, 0.25)) if r2 else None,
                         "r2_q75": float(np.quantile(r2, 0.75)) if r2 else None,
                         "seconds_per_fit": (time.perf_counter() - t0) / reps,
                         "warnings": ",".join(sorted(warned))})
            print(rows[-1], flush=True)
    return rows


#: a high-signal version of ``_regression_data``'s model (small noise and
#: random effects): OLS reaches R^2 ~ 0.89, as in the issue's example
SIGNAL = dict(noise_sd=0.1, intercept_sd=0.02, slope_sd=0.02)


def _synthetic(n_users, m, d, seed, logistic=False):
    rng = np.random.default_rng(seed)
    coef = rd.true_coefficients(d, seed)
    X, y, g, _ = rd.make_user_regression(n_users, m, coef, rng, **SIGNAL)
    if logistic:
        score = X @ (2.0 * coef) + 0.2
        y = (score + rng.logistic(size=score.shape[0]) > 0).astype(int)
    train = g < int(0.8 * n_users)
    return X[train], y[train], g[train], X[~train], y[~train]


def synthetic(reps, n_users, m, d):
    from sklearn.linear_model import LinearRegression

    from skuserdp.linear_model import UserDPLinearRegression, UserDPSGDRegressor
    rows = []
    for seed in range(reps):
        X, y, g, Xt, yt = _synthetic(n_users, m, d, seed)
        ols = LinearRegression().fit(X, y).score(Xt, yt)
        for cls in (UserDPSGDRegressor, UserDPLinearRegression):
            t0 = time.perf_counter()
            est, names = _fit_quietly(cls(epsilon=1.0, random_state=seed), X, y,
                                      groups=g)
            rows.append({"part": "synthetic", "estimator": cls.__name__,
                         "seed": seed, "r2": float(est.score(Xt, yt)),
                         "ols_r2": float(ols),
                         "seconds": time.perf_counter() - t0,
                         "warnings": ",".join(names)})
            print(rows[-1], flush=True)
    return rows


def logistic(reps, n_users, m, d):
    from sklearn.linear_model import LogisticRegression

    from skuserdp.linear_model import UserDPSGDClassifier
    rows = []
    for seed in range(reps):
        X, y, g, Xt, yt = _synthetic(n_users, m, d, seed, logistic=True)
        ref = LogisticRegression(max_iter=1000).fit(X, y).score(Xt, yt)
        t0 = time.perf_counter()
        est, names = _fit_quietly(UserDPSGDClassifier(epsilon=1.0, classes=[0, 1],
                                                      random_state=seed),
                                  X, y, groups=g)
        rows.append({"part": "logistic", "estimator": "UserDPSGDClassifier",
                     "seed": seed, "accuracy": float(est.score(Xt, yt)),
                     "nonprivate_accuracy": float(ref),
                     "seconds": time.perf_counter() - t0,
                     "warnings": ",".join(names)})
        print(rows[-1], flush=True)
    return rows


def ssp_oracle(reps, n_users, m, d):
    from sklearn.linear_model import LinearRegression

    import skuserdp.linear_model._linear_regression as lr_module
    from skuserdp.linear_model import UserDPLinearRegression

    private_quantile = lr_module.private_quantile
    rows = []
    try:
        for seed in range(reps):
            X, y, g, Xt, yt = _synthetic(n_users, m, d, seed)
            ols = LinearRegression().fit(X, y).score(Xt, yt)
            for q in (0.02, 0.1, 0.25, 0.5):
                # NOT private: the exact quantile of the statistics' norms
                lr_module.private_quantile = (
                    lambda v, _q, _e, random_state=None, q=q:
                    float(np.quantile(v, q)))
                est, names = _fit_quietly(
                    UserDPLinearRegression(
                        epsilon=1.0, random_state=seed,
                        bounds=(X.min(axis=0), X.max(axis=0)),
                        target_bounds=(y.min(), y.max())),
                    X, y, groups=g)
                rows.append({"part": "ssp_oracle",
                             "estimator": f"UserDPLinearRegression q={q}",
                             "seed": seed, "r2": float(est.score(Xt, yt)),
                             "ols_r2": float(ols), "warnings": ",".join(names)})
                print(rows[-1], flush=True)
    finally:
        lr_module.private_quantile = private_quantile
    return rows


def summarise(rows):
    out = []
    for part, key, ref in (("synthetic", "r2", "ols_r2"),
                           ("ssp_oracle", "r2", "ols_r2"),
                           ("logistic", "accuracy", "nonprivate_accuracy")):
        for name in sorted({r["estimator"] for r in rows if r["part"] == part}):
            sel = [r for r in rows if r["part"] == part and r["estimator"] == name]
            gap = [r[ref] - r[key] for r in sel]
            out.append({"part": part, "estimator": name,
                        f"{key}_median": float(np.median([r[key] for r in sel])),
                        f"{ref}_median": float(np.median([r[ref] for r in sel])),
                        "gap_median": float(np.median(gap)),
                        "gap_worst": float(np.max(gap))})
    return out


def main(argv=None):
    args = parse_args(argv)
    parts = args.parts.split(",")
    reps = 2 if args.quick else args.reps
    size = (1000, 10, 20) if args.quick else (5000, 40, 20)
    rows = []
    if "clinical" in parts:
        rows += clinical(reps)
    if "wage" in parts:
        try:
            rows += wage(reps)
        except ImportError as exc:
            print(f"wage panel skipped: {exc}")
    small = max(2, reps // 4)
    if "synthetic" in parts:
        rows += synthetic(small, *size)
    if "logistic" in parts:
        rows += logistic(small, *size)
    if "ssp_oracle" in parts:
        rows += ssp_oracle(small, *size)
    summary = summarise(rows)
    for row in summary:
        print(row)
    stem = "out_of_the_box_quick" if args.quick else "out_of_the_box"
    if args.parts != DEFAULT_PARTS:
        stem += "_" + "_".join(parts)
    paths = write_results(args.output_dir, stem, rows + summary,
                          {"reps": reps, "size": size, "rows": rows,
                           "summary": summary})
    print("saved", *paths)


if __name__ == "__main__":
    main()
