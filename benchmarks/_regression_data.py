"""Data for ``bench_regression.py``: the wage panel scaled by public ranges,
and a synthetic user-structured regression.

Wage panel
----------
The panel of Vella and Verbeek (1998) that ships with ``linearmodels``
(``linearmodels.datasets.wage_panel``): 545 young men (``nr``) of the NLSY79
observed every year 1980-1987 (8 rows each), target ``lwage`` (log hourly
wage). The features are scaled with PUBLIC ranges only: every constant below
comes from the design of the survey or from a documented convention, none from
the data. Fitting a ``StandardScaler`` (or taking the min / max) on the private
data would itself leak information about the users, so it is not done.

Each feature is clipped to its public range ``[lo, hi]``, mapped to [-1, 1] by
``x -> (x - mid) / halfrange`` (mid = (lo + hi) / 2, halfrange = (hi - lo) / 2),
and the whole row is divided by ``sqrt(n_features)``, so every row has l2 norm
at most 1 (``feature_bound = 1``). The target is clipped to its public range and
centred by its midpoint, so ``|y| <= target_bound = halfrange``. Predictions
are mapped back (``+ mid``) and R^2 is always computed against the original,
unclipped ``lwage``.
"""

import math

import numpy as np
import sklearn

WAGE_FEATURES = ("exper", "expersq", "educ", "black", "hisp", "married", "union")
WAGE_TARGET = "lwage"
WAGE_GROUPS = "nr"

# Public ranges [lo, hi] of the wage panel's variables (none is read from the data).
#
# * exper: potential labour-market experience, age - 6 - educ (the panel's
#   construction: in every row age = exper + educ + 6). The NLSY79 cohort was
#   born 1957-1964, so nobody is older than 30 in 1987, the last year of the
#   panel; with educ >= 0 that gives exper <= 30 - 6 - 0 = 24. (The sample
#   maximum is 18; using 18 would be a statistic of the private data.)
# * expersq: exper^2, so [0, 24^2].
# * educ: years of schooling, NLSY79 "highest grade completed", coded 0-20
#   (20 = eighth year of college or more).
# * black, hisp, married, union: 0/1 dummies.
# * lwage: log hourly wage in dollars. [ln 1, ln 100]: the usual trimming of
#   hourly wages below $1 or above $100 in the US wage-inequality literature
#   (e.g. Lemieux 2006, AER 96(3), with 1979 dollars). Rows outside are clipped
#   for the private fits (43 of the 4360 rows are below $1; none above $100);
#   R^2 is still measured on the unclipped lwage.
EXPER_MAX = 30 - 6 - 0
WAGE_PUBLIC_RANGES = {
    "exper": (0.0, float(EXPER_MAX)),
    "expersq": (0.0, float(EXPER_MAX) ** 2),
    "educ": (0.0, 20.0),
    "black": (0.0, 1.0),
    "hisp": (0.0, 1.0),
    "married": (0.0, 1.0),
    "union": (0.0, 1.0),
    "lwage": (0.0, math.log(100.0)),
}
#: Rows per person in the panel (public: the survey design, 1980-1987).
WAGE_ROWS_PER_USER = 8


def load_wage_panel():
    """The wage panel as a pandas DataFrame (needs ``linearmodels``)."""
    try:
        from linearmodels.datasets import wage_panel
    except ImportError as exc:  # pragma: no cover - optional bench extra
        raise ImportError(
            "the wage panel needs linearmodels: pip install linearmodels "
            "(or pip install -e '.[bench]')") from exc
    return wage_panel.load()


def _mid_half(name, ranges):
    lo, hi = ranges[name]
    return (lo + hi) / 2.0, (hi - lo) / 2.0


def scale_features(frame, features=WAGE_FEATURES, ranges=WAGE_PUBLIC_RANGES):
    """Public-range scaling: clip, map to [-1, 1], divide by sqrt(d).

    Returns ``(X, n_clipped)`` with ``X`` of shape ``(n_rows, d)`` (every row of
    l2 norm <= 1) and the number of clipped values per feature.
    """
    d = len(features)
    X = np.empty((len(frame), d))
    n_clipped = {}
    for j, name in enumerate(features):
        lo, hi = ranges[name]
        col = np.asarray(frame[name], dtype=np.float64)
        n_clipped[name] = int(np.sum((col < lo) | (col > hi)))
        mid, half = _mid_half(name, ranges)
        X[:, j] = (np.clip(col, lo, hi) - mid) / half
    return X / math.sqrt(d), n_clipped


def feature_bounds(features=WAGE_FEATURES):
    """Per-coordinate public bounds of ``scale_features``'s output."""
    c = 1.0 / math.sqrt(len(features))
    return -c, c


def target_bound(target=WAGE_TARGET, ranges=WAGE_PUBLIC_RANGES):
    """Public bound on ``|scale_target(y)|``: the half-range of the target."""
    return _mid_half(target, ranges)[1]


def scale_target(y, target=WAGE_TARGET, ranges=WAGE_PUBLIC_RANGES):
    """Clip to the public range and centre by its midpoint.

    Returns ``(y_scaled, n_clipped)``; ``|y_scaled| <= target_bound()``.
    """
    lo, hi = ranges[target]
    y = np.asarray(y, dtype=np.float64)
    mid, _ = _mid_half(target, ranges)
    return np.clip(y, lo, hi) - mid, int(np.sum((y < lo) | (y > hi)))


def unscale_target(y_scaled, target=WAGE_TARGET, ranges=WAGE_PUBLIC_RANGES):
    """Map predictions on the centred scale back to the target's scale."""
    return np.asarray(y_scaled) + _mid_half(target, ranges)[0]


def wage_panel_arrays():
    """Everything the benchmark needs from the wage panel, scaled.

    Returns a dict with ``X`` (scaled), ``y_raw`` (lwage), ``y`` (clipped and
    centred), ``groups`` (person ids), ``X_raw`` and counts of clipped values.
    """
    frame = load_wage_panel()
    X, clipped = scale_features(frame)
    y_raw = np.asarray(frame[WAGE_TARGET], dtype=np.float64)
    y, y_clipped = scale_target(y_raw)
    return {
        "X": X, "y": y, "y_raw": y_raw,
        "groups": np.asarray(frame[WAGE_GROUPS]),
        "X_raw": np.asarray(frame[list(WAGE_FEATURES)], dtype=np.float64),
        "n_clipped": {**clipped, WAGE_TARGET: y_clipped},
    }


# ---------------------------------------------------------------------------
# diffprivlib (the item-level baseline)
# ---------------------------------------------------------------------------

# Cache of this process's import. It lives in this module, not in the script,
# so joblib workers import diffprivlib themselves (after the shim) instead of
# unpickling the classes before it.
_DPL = {}


def import_diffprivlib():
    """diffprivlib's ``LinearRegression`` and friends, or the reason it fails.

    scikit-learn 1.9 removed the private aliases ``DOUBLE`` and ``DTYPE`` from
    ``sklearn.tree._tree`` (scikit-learn PR #33948). diffprivlib 0.6.6 (the
    latest release) imports them at module level in ``models/forest.py``, and
    ``import diffprivlib`` imports every model, so the whole package fails with
    ``ImportError: cannot import name 'DOUBLE' from 'sklearn.tree._tree'``.
    Only diffprivlib's random forest uses them; they were always ``float64``
    and ``float32``, so they are restored here, for this benchmark only, before
    importing. Returns a dict (``LinearRegression``, ``BudgetAccountant``,
    ``PrivacyLeakWarning``, ``DiffprivlibCompatibilityWarning``, ``version``,
    ``shim``) or ``{"error": message}``.
    """
    if _DPL:
        return _DPL
    shim = None
    try:
        from sklearn.tree import _tree
        if not (hasattr(_tree, "DOUBLE") and hasattr(_tree, "DTYPE")):
            _tree.DOUBLE, _tree.DTYPE = np.float64, np.float32
            shim = ("sklearn.tree._tree.DOUBLE/DTYPE restored (removed in "
                    f"scikit-learn 1.9; installed {sklearn.__version__})")
        import diffprivlib
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LinearRegression as DPLinearRegression
        from diffprivlib.utils import (DiffprivlibCompatibilityWarning,
                                       PrivacyLeakWarning)
    except ImportError as exc:
        _DPL["error"] = f"diffprivlib not available: {exc}"
        return _DPL
    _DPL.update(LinearRegression=DPLinearRegression,
                BudgetAccountant=BudgetAccountant,
                PrivacyLeakWarning=PrivacyLeakWarning,
                DiffprivlibCompatibilityWarning=DiffprivlibCompatibilityWarning,
                version=diffprivlib.__version__, shim=shim)
    return _DPL


# ---------------------------------------------------------------------------
# Synthetic user-structured regression
# ---------------------------------------------------------------------------

#: Shape of the synthetic model (see ``make_user_regression``). With d = 10,
#: E||x||^2 ~ 0.4: about 0.5 % of the rows are projected onto the unit ball,
#: the feature covariance has eigenvalues ~0.04 (at most 1/d = 0.1 is possible
#: for isotropic rows in the unit ball), the pooled R^2 is ~0.22 (like the wage
#: panel) and ~0.2 % of the targets are clipped.
SYNTH_MODEL = dict(coef_norm=2.0, intercept=0.5, user_center_sd=0.45, row_sd=0.45,
                   intercept_sd=0.3, slope_sd=0.3, noise_sd=0.7, target_bound=3.0)


def true_coefficients(n_features, seed, coef_norm=SYNTH_MODEL["coef_norm"]):
    """A fixed coefficient vector of l2 norm ``coef_norm`` (from ``seed``)."""
    beta = np.random.default_rng(seed).standard_normal(n_features)
    return coef_norm * beta / np.linalg.norm(beta)


def make_user_regression(n_users, rows_per_user, coef, rng, *,
                         intercept=SYNTH_MODEL["intercept"],
                         user_center_sd=SYNTH_MODEL["user_center_sd"],
                         row_sd=SYNTH_MODEL["row_sd"],
                         intercept_sd=SYNTH_MODEL["intercept_sd"],
                         slope_sd=SYNTH_MODEL["slope_sd"],
                         noise_sd=SYNTH_MODEL["noise_sd"],
                         target_bound=SYNTH_MODEL["target_bound"]):
    """n users x m rows with user-level random effects and a known coefficient.

    User u has a feature centre ``c_u ~ N(0, user_center_sd^2 I / d)``, a
    random intercept ``a_u ~ N(0, intercept_sd^2)`` and a random slope
    perturbation ``b_u ~ N(0, slope_sd^2 I / d)``. Its rows are
    ``x = c_u + N(0, row_sd^2 I / d)``, projected onto the unit l2 ball (so
    ``feature_bound = 1`` holds by construction), and
    ``y = intercept + a_u + x . (coef + b_u) + N(0, noise_sd^2)``, clipped to
    ``[-target_bound, target_bound]``. The random effects have mean zero and
    are independent of x, so pooled OLS estimates ``coef`` and ``intercept``.
    Users are interleaved (rows shuffled). Returns ``X, y, groups, info``.
    """
    d = len(coef)
    n_rows = n_users * rows_per_user
    groups = rng.permutation(np.repeat(np.arange(n_users), rows_per_user))
    centers = rng.normal(0.0, user_center_sd / math.sqrt(d), (n_users, d))
    X = centers[groups] + rng.normal(0.0, row_sd / math.sqrt(d), (n_rows, d))
    norms = np.linalg.norm(X, axis=1)
    rows_projected = int(np.sum(norms > 1.0))
    X /= np.maximum(norms, 1.0)[:, None]
    a = rng.normal(0.0, intercept_sd, n_users)
    b = rng.normal(0.0, slope_sd / math.sqrt(d), (n_users, d))
    y = (intercept + a[groups] + np.einsum("ij,ij->i", X, coef + b[groups])
         + rng.normal(0.0, noise_sd, n_rows))
    y_clipped = int(np.sum(np.abs(y) > target_bound))
    y = np.clip(y, -target_bound, target_bound)
    info = {"rows_projected": rows_projected, "y_clipped": y_clipped}
    return X, y, groups, info
