"""Shared parameter descriptions, so privacy parameters read the same everywhere.

Use :func:`fill_doc` on a class or function whose docstring contains
placeholders such as ``{epsilon}`` on a line of their own; only the names in
:data:`PARAMETER_DOCS`, :data:`ATTRIBUTE_DOCS` and :data:`PARAGRAPHS` are
replaced (other single braces are left alone; doubled braces ``{{`` and
``}}`` become single ones), and the inserted text is indented to match the
placeholder.
"""

import re

__all__ = ["PARAMETER_DOCS", "ATTRIBUTE_DOCS", "PARAGRAPHS", "fill_doc"]

PARAGRAPHS = {
    "user_level_note": """\
The guarantee is *user-level*: two datasets are neighbours when they differ in
the entire data (all rows) of one user, identified by ``groups`` (replace-one;
the number of users is public).""",
}

PARAMETER_DOCS = {
    "epsilon": """\
epsilon : float, default=1.0
    Privacy-loss parameter ε of the user-level guarantee, ``> 0``.""",
    "delta": """\
delta : float, default=1e-6
    Failure probability δ of the user-level guarantee, in ``[0, 1)``. ``0``
    asks for pure ε-DP. Choose δ well below ``1 / n_users``.""",
    "calibration": """\
calibration : {"tight", "paper"}, default="tight"
    ``"tight"`` uses the tightest accounting skuserdp can prove (zCDP,
    optimal conversions); ``"paper"`` uses the published algorithm's own
    constants (corrected only where wrong, as documented).""",
    "random_state": """\
random_state : int, RandomState instance, SeedSequence or None, default=None
    Source of the privacy noise. ``None`` (the default, and the only choice
    for a real release) draws fresh entropy from the operating system. An int
    (or a ``SeedSequence``) makes fits reproducible, for tests: the same seed
    gives the same noise, and a release whose seed is known is not private.
    A ``RandomState`` instance is consumed: each fit advances it and mixes in
    fresh OS entropy, so no two fits share noise -- not even the copies that
    ``clone``, ``GridSearchCV`` or ``cross_validate`` make -- and fits are not
    reproducible.""",
    "n_jobs": """\
n_jobs : int, default=None
    Number of joblib workers for the parallel parts (coordinate chunks,
    repetitions). ``None`` means 1 unless in a :obj:`joblib.parallel_backend`
    context; ``-1`` uses all processors. Results do not depend on ``n_jobs``.""",
    "center": """\
center : float or array-like of shape (n_features,), default=None
    Public centre of the clipping ball; ``None`` is the origin. Must not be
    computed from the private data.""",
    "bounds": """\
bounds : "auto" or tuple (lower, upper), default="auto"
    Public box containing the users' means, in the units of ``X``:
    ``lower`` and ``upper`` are floats (broadcast to every feature) or
    arrays of shape (n_features,). Declare it when you know it publicly
    (a codebook range, a physical limit): it costs nothing. ``"auto"``
    learns it privately from ``bounds_share`` of the budget (one joint noisy
    log2 histogram of the users' means, every column at once; the box spans
    the outermost well-filled cells plus one octave; see
    :func:`skuserdp.mechanisms.plan_log_ranges`); the spend is included in
    ``epsilon_``. With too few users for that step (fewer than the plan's
    ``n_min``, or a column whose users spread too thinly to fill any cell)
    ``fit`` refuses with a ``ValueError`` naming the numbers; a rare binary
    feature gets a flat box and an
    :class:`~skuserdp.exceptions.AccuracyWarning`.
    ``ValueError``. Never computed from the data without privacy.""",
    "ci_share": """\
ci_share : "auto" or float, default="auto"
    Share of the budget (of ρ under zCDP accounting, of ε otherwise) spent
    in ``fit`` on the private statistics of :meth:`conf_int` and ``bse_``
    (a private scale and variance of the users' clipped means). ``"auto"``
    picks it from public values (``n_users``, ``n_features``, ε, δ): the
    smallest share in [0.05, 0.25] whose scale step can pass a quarter of
    the users. ``0`` releases none: the whole budget goes to the mean and
    ``conf_int`` is unavailable. The share used is ``ci_share_``.""",
    "weighting": """\
weighting : {"equal", "auto"}, default="equal"
    How users with different numbers of rows are weighted (estimand
    ``"user_mean"``). ``"equal"``: every user alike, nothing spent.
    ``"auto"``: a user with few rows gets less weight where its mean is
    noisier (capped inverse-variance weights in ``[0, 1]`` per column, from
    released row counts and spreads; ``weights_share`` of the budget). A
    user's influence stays bounded whatever its row count, so the noise is
    the unweighted one. ``"auto"`` *assumes the number of rows a user has
    is unrelated to its values*: otherwise the weighted mean is a different
    quantity. Columns where the released statistics show such a relation
    (only gross ones can be seen), or predict no gain, keep equal weights;
    with too few users for the budget nothing is spent. ``weighting_``,
    ``weighting_status_`` and ``weighting_reason_`` report what was done
    (user guide, "Unbalanced users").
estimand : {"user_mean", "row_mean"}, default="user_mean"
    The population quantity: the mean of the users' means (every user
    counts once), or the row-level mean with each user's rows counted up
    to ``max_rows`` (as OpenDP's ``truncate_per_group`` or Tumult's
    ``MaxRowsPerID``, but using all rows: a user with ``m`` rows counts
    ``min(m, max_rows)`` times). The second equals the plain row mean when
    no user has more than ``max_rows`` rows or when the row counts are
    unrelated to the users' values; otherwise it differs from it by its
    truncation bias. ``weighting`` is then not used.
max_rows : int, default=None
    Public cap on the rows a user counts for; required by
    ``estimand="row_mean"`` (not read from the data: that would make the
    estimand private).
weights_share : "auto" or float, default="auto"
    Share of the budget (of ρ under zCDP accounting, of ε otherwise) for
    the weights' releases when ``weighting="auto"`` or
    ``estimand="row_mean"``. ``"auto"`` picks it from public values: the
    smallest of 0.1, 0.15, 0.2, 0.25, 0.3 at which the released row counts
    are precise to 1 % of the users; when none is, ``weighting="auto"``
    spends nothing (``estimand="row_mean"`` takes 0.3). The releases after
    the row counts are made only when these show something to weight; the
    share not spent goes to the estimate. The share spent is
    ``weights_share_``.""",
    "bounds_share": """\
bounds_share : float, default=None
    Share of the budget spent learning ``bounds="auto"``: of ρ when the
    box is accounted in zCDP, of ε otherwise. ``None`` picks it from public
    values only: the smallest of 0.05, 0.1, 0.2, 0.3, 0.4, 0.5 at which the
    number of users is at least 5× the range finder's ``n_min``, else 0.5
    (:func:`skuserdp.mechanisms._private_bounds.default_bounds_share`).
    Unused with declared bounds.""",
    "X_supervised": """\
X : array-like of shape (n_samples, n_features)
    Rows of all users. Not modified. A Dask array or DataFrame is
    accepted, with ``y`` partitioned like it (user guide, "Data
    larger than memory").""",
    "groups": """\
groups : array-like of shape (n_samples,) or str, default=None
    User id of every row (any hashable labels; a pandas Series is fine). This
    defines the unit of privacy. ``None`` treats every row as its own user and
    emits an :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`. With a
    pandas (or Dask) DataFrame ``X``, the name of its user-id column, which
    is then not a feature.""",
}

#: fitted attributes described alike by every estimator that has them
ATTRIBUTE_DOCS = {
    "mean_": """\
mean_ : ndarray of shape (n_features,)
    The private user-level mean.""",
    "bounds_": """\
bounds_ : tuple (lower, upper)
    The box used (declared, or learned privately).""",
    "noise_std_": """\
noise_std_ : ndarray of shape (n_features,)
    Standard deviation of the release's noise on each feature of
    ``mean_``, in the units of ``X`` (per feature: in proportion to the
    feature's box half-width when the fit ran in the box's scaled
    coordinates), from the public plan (no privacy cost; clipping bias not
    included): ``mean_ ± 1.96·noise_std_`` is the noise's 95 % range.""",
    "feature_attributes": """\
n_features_in_ : int
    Number of features seen during ``fit``.
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Names of features seen during ``fit``. Defined only when ``X`` has
    feature names that are all strings.""",
}

_ALL = {**PARAMETER_DOCS, **ATTRIBUTE_DOCS, **PARAGRAPHS}
_PATTERN = re.compile(r"^([ \t]*)\{(" + "|".join(_ALL) + r")\}[ \t]*$", re.MULTILINE)


def _substitute(doc):
    def repl(match):
        indent, name = match.group(1), match.group(2)
        lines = _ALL[name].splitlines()
        out = [indent + lines[0]]
        out += [indent + line if line else "" for line in lines[1:]]
        return "\n".join(out)

    # Doubled braces (``{{…}}``, str.format style) stand for literal braces.
    return _PATTERN.sub(repl, doc).replace("{{", "{").replace("}}", "}")


def fill_doc(obj):
    """Fill placeholders in ``obj.__doc__`` (and its methods' for a class)."""
    if obj.__doc__:
        obj.__doc__ = _substitute(obj.__doc__)
    if isinstance(obj, type):
        for value in vars(obj).values():
            func = getattr(value, "__func__", value)
            if callable(func) and getattr(func, "__doc__", None):
                try:
                    func.__doc__ = _substitute(func.__doc__)
                except AttributeError:  # pragma: no cover - read-only docs
                    pass
    return obj
