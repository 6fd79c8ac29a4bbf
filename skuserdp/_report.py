"""``python -m skuserdp report``: a private estimate of a table's means, with
error bars and an error-versus-ε plot from public plans (issue 16, part 3).

What is computed from the private data is one fit of
:class:`~skuserdp.mean.UserMeanEstimator` at the requested budget (charged
and printed). Everything else is a function of public values and of that
fit's private outputs: the error bars come from the fit's public plan
(``noise_std_``), and the curves of expected error against ε come from the
plans of :class:`~skuserdp.mean.ClipNoiseMeanEstimator` and
:class:`~skuserdp.mean.WinsorizedMeanEstimator` for the same number of
users, features and box (declared, or the released ``bounds_``). The
private data are never used to draw the curves.
"""

import csv
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: ε values of the expected-error curves
CURVE_EPSILONS = np.geomspace(0.05, 10.0, 25)


def load_table(path, groups_column, columns=None):
    """Rows, user ids and feature names from a CSV (or, with pandas, parquet).

    Parameters
    ----------
    path : str or Path
        A ``.csv`` file with a header row, or ``.parquet`` (needs pandas).
    groups_column : str
        The column of user ids.
    columns : list of str, default=None
        The feature columns; ``None`` takes every other column.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    groups : ndarray of shape (n_samples,)
    names : list of str
    """
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("reading parquet needs pandas (and pyarrow).") from exc
        frame = pd.read_parquet(path)
        header = [str(c) for c in frame.columns]
        cells = {c: frame[c].to_numpy() for c in frame.columns}
        get = (lambda name: cells[frame.columns[header.index(name)]])
    else:
        with open(path, newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader)
            body = list(reader)
        table = list(zip(*body)) if body else [()] * len(header)
        get = (lambda name: np.array(table[header.index(name)]))
    if groups_column not in header:
        raise ValueError(f"no column {groups_column!r} in {path} (columns: "
                         f"{header}).")
    names = columns or [c for c in header if c != groups_column]
    missing = [c for c in names if c not in header]
    if missing:
        raise ValueError(f"no column(s) {missing} in {path}.")
    try:
        X = np.column_stack([get(c).astype(np.float64) for c in names])
    except ValueError as exc:
        raise ValueError(f"the feature columns {names} must be numeric: {exc}") from exc
    return X, get(groups_column), list(names)


def expected_error_curves(n_users, lower, upper, delta, epsilons=CURVE_EPSILONS):
    """Expected ℓ2 error of the noise of two public plans, against ε.

    Parameters
    ----------
    n_users : int
        Public number of users.
    lower, upper : ndarray of shape (n_features,)
        The box (declared, or a released ``bounds_``).
    delta : float
        δ of the releases.
    epsilons : array-like, default=CURVE_EPSILONS
        The ε values.

    Returns
    -------
    curves : dict of str to ndarray
        ``"ClipNoiseMeanEstimator"`` (clip to the box's ball, radius its
        half-diagonal) and ``"WinsorizedMeanEstimator"`` (pure ε, the
        box's plan without a range step): root mean squared ℓ2 error of the
        noise at each ε, from the plans alone (no data).
    """
    from .mean import plan_clip_noise, plan_winsorized_mean
    from .privacy import ApproxDP, PureDP

    half = (np.asarray(upper, float) - np.asarray(lower, float)) / 2.0
    d, radius = half.shape[0], float(np.linalg.norm(half))
    curves = {"ClipNoiseMeanEstimator": [], "WinsorizedMeanEstimator": []}
    for eps in epsilons:
        budget = ApproxDP(float(eps), delta) if delta > 0 else PureDP(float(eps))
        plan = plan_clip_noise(n_users, d, budget=budget, radius=radius)
        curves["ClipNoiseMeanEstimator"].append(math.sqrt(d * plan.noise_variance))
        wplan = plan_winsorized_mean(n_users, d, tau=radius, value_range=radius,
                                     budget=PureDP(float(eps)))
        curves["WinsorizedMeanEstimator"].append(math.sqrt(d * wplan.noise_variance))
    return {k: np.asarray(v) for k, v in curves.items()}


def plot_curves(curves, epsilons, epsilon, path, *, title="", point=None):
    """Write the expected-error curves to a PNG (matplotlib, Agg backend).

    ``point``: ``(label, error)`` of the fit itself at ``epsilon``, or None.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("the plot needs matplotlib: pip install matplotlib") from exc
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for name, values in curves.items():
        ax.loglog(epsilons, values, marker="o", ms=3, label=name)
    ax.axvline(epsilon, color="grey", ls="--", lw=1, label=f"ε = {epsilon:g}")
    if point is not None:
        ax.plot([epsilon], [point[1]], marker="*", ms=14, ls="none", color="k",
                label=point[0])
    ax.set_xlabel("ε (user level)")
    ax.set_ylabel("expected ℓ2 error of the noise")
    ax.set_title(title or "Expected error against ε (public plans)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def _parse_bounds(text, n_features):
    if text is None or text == "auto":
        return "auto"
    lo, hi = (float(v) for v in text.split(","))
    return (np.full(n_features, lo), np.full(n_features, hi))


def run_report(path, *, groups, epsilon=1.0, delta=1e-6, bounds="auto",
               columns=None, png=None, random_state=None, out=sys.stdout):
    """Fit, print the report and write the plot; return a dict of results."""
    from .mean import UserMeanEstimator

    X, user_ids, names = load_table(path, groups, columns)
    bounds = _parse_bounds(bounds, X.shape[1]) if isinstance(bounds, str) else bounds
    est = UserMeanEstimator(epsilon=epsilon, delta=delta, bounds=bounds,
                            random_state=random_state)
    start = time.perf_counter()
    print(f"fitting {type(est).__name__} on {X.shape[0]} rows x {X.shape[1]} "
          f"features ...", file=out, flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, groups=user_ids)
    seconds = time.perf_counter() - start
    sd = getattr(est, "noise_std_", None)
    print(f"\n{est.n_users_} users; method {est.method_!r} ({est.reason_})",
          file=out)
    print(f"privacy spent (user level): epsilon = {est.epsilon_:.4g}, "
          f"delta = {est.delta_:.3g}; fit {seconds:.2f} s\n", file=out)
    width = max(len(n) for n in names + ["feature"])
    print(f"{'feature':<{width}}  {'private mean':>14}  {'± 95% noise':>12}",
          file=out)
    for j, name in enumerate(names):
        bar = "-" if sd is None else f"{1.96 * sd:.4g}"
        print(f"{name:<{width}}  {est.mean_[j]:>14.6g}  {bar:>12}", file=out)
    print("\nThe error bars are the noise's 95 % range from the public plan; "
          "clipping bias is not included.", file=out)
    for w in caught:
        print(f"warning: {w.category.__name__}: {w.message}", file=out)
    result = {"estimator": est, "names": names, "noise_std": sd}
    lower, upper = (est.bounds_ if getattr(est, "bounds_", None) is not None
                    else (None, None))
    if png is not None and lower is not None:
        curves = expected_error_curves(est.n_users_, lower, upper, delta)
        point = (None if sd is None else
                 (f"this fit ({est.method_})", sd * math.sqrt(X.shape[1])))
        result["png"] = plot_curves(
            curves, CURVE_EPSILONS, epsilon, png, point=point,
            title=f"{est.n_users_} users, {X.shape[1]} features (public plans)")
        result["curves"] = curves
        print(f"\nwrote {png}: expected error against ε from the public plans "
              "(no private data used)", file=out)
    return result
