"""``python -m skuserdp demo``: fit every estimator on a synthetic user-level dataset.

The dataset has users with unequal numbers of rows; the reference is the
non-private user-level mean (mean of the per-user means). Every estimator is
given the same public knowledge about the data (declared below, never read
off the data) and a grid of privacy budgets.

Errors are printed relative to a scale -- for a mean, the spread of the users'
means (the root of the sum of the columns' variances over users); for a
linear model, the norm of the non-private coefficients -- next to the
simplest honest peer: per column, each user's mean clipped to the public box
[-5, 5] and Laplace noise with ε/d (:class:`~skuserdp.mean.ColumnScaledMeanEstimator`
with ``noise="laplace"``). An estimator whose error does not shrink with ε
says why in one line.
"""

import time
import warnings

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.linear_model import LinearRegression, LogisticRegression

from .datasets import make_user_samples
from .users import user_means
from .utils.discovery import all_estimators

__all__ = ["DEMO_DATA", "DEMO_CONFIGS", "demo_configs", "run_demo", "format_table"]

#: the synthetic dataset of the demo
DEMO_DATA = dict(n_users=2000, n_features=10, samples_per_user=(5, 50),
                 distribution="gaussian", user_spread=0.5, sample_spread=1.0)

#: public knowledge shared by all estimators: every coordinate of the
#: population mean lies in [-1, 1] (so its norm is <= sqrt(10) ~ 3.2) and user
#: means spread about 0.5 per coordinate around it.
_PUBLIC = dict(radius=5.0, center=0.0)

#: public box of the supervised task's rows (see :func:`_supervised_task`)
_ROW_BOX = (-5.0 / (1.5 * 10 ** 0.5), 5.0 / (1.5 * 10 ** 0.5))

#: the demo's public box of the users' means, per coordinate
_BOX = (-5.0, 5.0)

#: one line for an estimator whose error does not shrink as ε grows
DEMO_NOTES = {
    "FewUsersBallEstimator": (
        "made for few users: its error is set by the declared radius, not by "
        "ε, and it spends only the ε its plan can use"),
}

#: constructor arguments per estimator (an estimator without an entry gets the
#: demo's public box: :func:`demo_configs`)
DEMO_CONFIGS = {
    "ClipNoiseMeanEstimator": [
        dict(epsilon=eps, delta=delta, **_PUBLIC)
        for delta in (1e-6, 0.0)
        for eps in (0.5, 1.0, 2.0)
    ],
    # Few users: only a concentration radius, no location. A user mean
    # deviates from the mean by 0.5 per coordinate (user spread) plus the row
    # noise of >= 5 rows: ||x_u - mu||^2 ~ 10 * (0.25 + 0.2) = 4.5, so most
    # user means are within 2.5. Its error is O(radius * sqrt(d)) for any
    # number of users: it is made for few users and an unknown location.
    "FewUsersBallEstimator": [
        dict(epsilon=eps, delta=delta, radius=2.5)
        for delta in (1e-6,)
        for eps in (0.5, 1.0, 2.0)
    ],
    # The first feature cut at the public thresholds -1, 0, 1 into 4 classes;
    # every user has at least 5 rows.
    "DiscreteDistributionEstimator": [
        dict(epsilon=eps, delta=1e-6, classes=[0, 1, 2, 3], samples_per_user=5)
        for eps in (0.5, 1.0, 2.0)
    ],
    # Heavy-tail estimator, told only k = 2: every row deviates from the mean
    # with variance 0.25 (user spread) + 1 (row noise) per direction, so
    # M = 1.2 >= sqrt(1.25); at least 5 rows per user; the public box
    # |mu_j| <= 5 (its coarse step then needs ~400 users instead of ~900).
    # delta = 0 runs the 1-D pipeline per feature at eps/d.
    "ThreadedClipNoiseEstimator": [
        dict(epsilon=eps, delta=delta, moment_order=2, moment_bound=1.2,
             samples_per_user=5, bounds=(-5.0, 5.0))
        for delta in (1e-6, 0.0)
        for eps in (0.5, 1.0, 2.0)
    ],
    # Linear models on the supervised task of :func:`_supervised_task`: the
    # public box of the rows is the demo's [-5, 5] per coordinate, divided by
    # the task's public scale 1.5·sqrt(d); targets lie in [-1, 1]; the clip
    # norm is learned privately (charged to epsilon). With 11 columns and
    # 2000 users, learning the boxes too ("auto") would need more users.
    "UserDPSGDRegressor": [
        dict(epsilon=eps, delta=1e-6, max_iter=300, bounds=_ROW_BOX,
             target_bounds=(-1.0, 1.0))
        for eps in (0.5, 1.0, 2.0)
    ],
    "UserDPSGDClassifier": [
        dict(epsilon=eps, delta=1e-6, max_iter=300, classes=[0, 1],
             bounds=_ROW_BOX)
        for eps in (0.5, 1.0, 2.0)
    ],
    # The one-shot release of p(p+3)/2 = 77 statistics (10 features and the
    # intercept) is too noisy to be certified better than the mean below
    # epsilon = 2 with 2000 users: the fit warns there (issue 31), and a demo
    # fit must not warn.
    "UserDPLinearRegression": [
        dict(epsilon=eps, delta=1e-6, bounds=_ROW_BOX, target_bounds=(-1.0, 1.0))
        for eps in (2.0, 4.0, 8.0)
    ],
    # Only a loose box, 20x wider than the demo's public knowledge: the
    # shrinking steps locate the users and estimate their spread privately.
    "CoinPressMeanEstimator": [
        dict(epsilon=eps, delta=1e-6, bounds=(-100.0, 100.0))
        for eps in (0.5, 1.0, 2.0)
    ],
    # The dispatcher with the demo's box (its per-column estimator's error
    # grows with the declared widths: declare the codebook's range, not a
    # loose one -- CoinPress above is the estimator for a loose box on
    # concentrated users), and with no bounds at all (the box is learned
    # privately from a share of the budget).
    "UserMeanEstimator": [
        dict(epsilon=eps, delta=1e-6, bounds=bounds)
        for bounds in (_BOX, "auto")
        for eps in (0.5, 1.0, 2.0)
    ],
    # The same knowledge as a box: every coordinate of a user mean in [-5, 5].
    "WinsorizedMeanEstimator": [
        dict(epsilon=eps, delta=delta, bounds=(-5.0, 5.0))
        for delta in (1e-6, 0.0)
        for eps in (0.5, 1.0, 2.0)
    ],
}


def demo_configs(name, cls):
    """The demo's constructor arguments of one estimator.

    Its entry of :data:`DEMO_CONFIGS`, or, for an estimator that takes the
    public box as ``bounds`` (every estimator built on the package's base
    classes), the demo's public knowledge as a box -- ``[-5, 5]`` per
    coordinate for a mean, the scaled rows' box, targets in ``[-1, 1]`` and
    labels ``{0, 1}`` for a linear model -- at ε = 0.5, 1, 2 and δ = 1e-6.

    Raises
    ------
    RuntimeError
        When the estimator has no entry and no ``bounds`` parameter: the
        demo cannot guess the public knowledge it needs.
    """
    if name in DEMO_CONFIGS:
        return DEMO_CONFIGS[name]
    est = cls()
    params = est.get_params()
    if "bounds" not in params:
        raise RuntimeError(f"{name} has no entry in skuserdp._demo.DEMO_CONFIGS.")
    knowledge = dict(bounds=_BOX)
    if is_regressor(est) or is_classifier(est):
        knowledge = dict(bounds=_ROW_BOX, target_bounds=(-1.0, 1.0), classes=[0, 1])
    knowledge = {k: v for k, v in knowledge.items() if k in params}
    return [dict(epsilon=eps, delta=1e-6, **knowledge) for eps in (0.5, 1.0, 2.0)]


def _supervised_task(X, groups, kind):
    """Scaled rows, a target and the non-private reference coefficients.

    Rows are divided by the public constant ``1.5·sqrt(d)``. The regression
    target is linear in them (coefficients alternating ±0.5, intercept 0.1)
    plus noise of standard deviation 0.1, clipped to [-1, 1]; the class
    label follows a logistic model with twice those coefficients. The
    reference solves the same user-weighted objective (each user's rows
    weigh ``1/m_u``) without privacy.
    """
    d = X.shape[1]
    Xs = X / (1.5 * np.sqrt(d))
    w = np.where(np.arange(d) % 2 == 0, 0.5, -0.5)
    rng = np.random.default_rng(0)
    z = Xs @ w + 0.1
    counts = np.unique(groups, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[2][counts[1]]
    if kind == "classification":
        y = (2.0 * z + rng.logistic(size=z.shape[0]) > 0).astype(int)
        ref = LogisticRegression(C=1e6, max_iter=1000).fit(Xs, y,
                                                           sample_weight=weights)
    else:
        y = np.clip(z + rng.normal(scale=0.1, size=z.shape[0]), -1.0, 1.0)
        ref = LinearRegression().fit(Xs, y, sample_weight=weights)
    return Xs, y, np.ravel(ref.coef_)


def run_demo(random_state=0, data=None):
    """Fit every configured estimator and return one result row per fit.

    Parameters
    ----------
    random_state : int, default=0
        Seed of the dataset and of the estimators (a demo, not a release).
    data : dict, default=None
        Overrides of :data:`DEMO_DATA` (e.g. a smaller dataset for tests).

    Returns
    -------
    rows : list of dict
        Keys ``estimator``, ``epsilon``, ``delta``, ``epsilon_spent``,
        ``delta_spent``, ``l2_error`` (for the linear models: of the
        coefficients, against the non-private solution of the same
        objective), ``relative_error`` (``l2_error`` over the scale: the
        spread of the users' means, or the norm of the reference
        coefficients), ``peer_relative_error`` (the per-column Laplace peer
        on the demo's box at the same ε, for the means; None otherwise),
        ``note`` (why the error does not shrink with ε, or ""), ``fit_time``
        and ``error_bound`` (the estimator's published accuracy radius, or
        None).
    """
    from .mean import ColumnScaledMeanEstimator

    X, groups, _ = make_user_samples(**{**DEMO_DATA, **(data or {})},
                                     random_state=random_state)
    means = user_means(X, groups).means
    reference = means.mean(axis=0)
    spread = float(np.sqrt(means.var(axis=0).sum()))
    peer = {}  # ε -> the per-column peer's relative error

    def peer_error(eps):
        if eps not in peer:
            fit = ColumnScaledMeanEstimator(
                epsilon=eps, delta=0.0, bounds=_BOX, noise="laplace",
                random_state=random_state).fit(X, groups=groups)
            peer[eps] = float(np.linalg.norm(fit.mean_ - reference)) / spread
        return peer[eps]

    # The categorical version: the class of the first feature's value.
    cats = np.digitize(X[:, 0], [-1.0, 0.0, 1.0]).reshape(-1, 1)
    onehot = (cats == np.arange(4)).astype(np.float64)
    cat_reference = user_means(onehot, groups).means.mean(axis=0)
    rows = []
    for name, cls in all_estimators():
        configs = demo_configs(name, cls)
        categorical = name == "DiscreteDistributionEstimator"
        supervised = is_regressor(cls()) or is_classifier(cls())
        if supervised:
            kind = "classification" if is_classifier(cls()) else "regression"
            Xs, y, coef_reference = _supervised_task(X, groups, kind)
        for params in configs:
            est = cls(**params, random_state=random_state)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a demo fit must not warn
                if supervised:
                    est.fit(Xs, y, groups=groups)
                else:
                    est.fit(cats if categorical else X, groups=groups)
            elapsed = time.perf_counter() - start
            if supervised:
                estimate, target = np.ravel(est.coef_), coef_reference
                scale = float(np.linalg.norm(coef_reference))
            elif categorical:
                estimate, target = est.probabilities_, cat_reference
                scale = float(np.linalg.norm(cat_reference))
            else:
                estimate, target = est.mean_, reference
                scale = spread
            error = float(np.linalg.norm(estimate - target))
            rows.append(dict(
                estimator=name,
                label=name + (" (no bounds)" if isinstance(params.get("bounds"), str)
                              else ""),
                error_bound=getattr(est, "error_bound_", None),
                epsilon=params["epsilon"],
                delta=params["delta"],
                epsilon_spent=est.epsilon_,
                delta_spent=est.delta_,
                l2_error=error,
                relative_error=error / scale,
                peer_relative_error=(None if supervised or categorical
                                     else peer_error(params["epsilon"])),
                note=DEMO_NOTES.get(name, ""),
                fit_time=elapsed,
            ))
    return rows


def _bound(value):
    return "-" if value is None else format(value, ".3g")


def format_table(rows):
    """Render demo rows as a fixed-width text table (notes below it)."""
    header = (f"{'estimator':<40} {'epsilon':>7} {'delta':>8} {'eps spent':>9} "
              f"{'delta spent':>11} {'L2 error':>9} {'rel.err':>8} {'peer':>7} "
              f"{'bound':>7} {'fit time':>9}")
    lines = [header, "-" * len(header)]
    notes = {}
    for r in rows:
        mark = ""
        if r.get("note"):
            mark = notes.setdefault(r["estimator"], (len(notes) + 1, r["note"]))[0]
            mark = f" [{mark}]"
        peer = r.get("peer_relative_error")
        lines.append(
            f"{r.get('label', r['estimator']):<40} {r['epsilon']:>7g} {r['delta']:>8g} "
            f"{r['epsilon_spent']:>9.4f} {r['delta_spent']:>11.1e} "
            f"{r['l2_error']:>9.4f} {r['relative_error']:>8.4f} "
            f"{'-' if peer is None else format(peer, '.4f'):>7} "
            f"{_bound(r['error_bound']):>7} "
            f"{1000 * r['fit_time']:>7.1f}ms{mark}"
        )
    for name, (k, note) in notes.items():
        lines.append(f"[{k}] {name}: {note}.")
    return "\n".join(lines)


def main(random_state=0):
    """Print the demo table; return 0."""
    d = DEMO_DATA
    print(f"skuserdp demo: {d['n_users']} users, {d['n_features']} features, "
          f"{d['samples_per_user'][0]}-{d['samples_per_user'][1]} rows per user.")
    print("L2 error is against the non-private mean of the per-user means; for "
          "the linear models, of the coefficients against the non-private fit.")
    print("rel.err divides it by a scale: the spread of the users' means (the "
          "root of the sum of the columns' variances), or the norm of the "
          "coefficients. peer: the simplest honest estimator's rel.err at the "
          "same epsilon (per column: user means clipped to the box [-5, 5], "
          "Laplace noise with epsilon/d).\n")
    print(format_table(run_demo(random_state)))
    return 0
