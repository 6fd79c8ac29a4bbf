"""Synthetic user-level data with a known population mean."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from ..utils._random import generator_from, data_seed_sequence
from ..utils._validation import check_center

__all__ = ["make_user_samples"]

_SQRT3 = math.sqrt(3.0)

# Default degrees of freedom / Lomax shape when ``tail_index`` is None.
_DEFAULT_TAIL_INDEX = {"student_t": 5.0, "pareto": 3.0}

# ``floor(corrupted_fraction * n_users)`` is computed with this slack so that a
# fraction such as 0.29 (stored as 0.28999...) gives 29 corrupted users out of 100.
_FLOOR_SLACK = 1e-9


@validate_params(
    {
        "n_users": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "samples_per_user": [Interval(Integral, 1, None, closed="left"), tuple],
        "distribution": [StrOptions({"gaussian", "bounded", "student_t", "pareto"})],
        "mean": [None, Interval(Real, None, None, closed="neither"), "array-like"],
        "user_spread": [Interval(Real, 0, None, closed="left")],
        "sample_spread": [Interval(Real, 0, None, closed="left")],
        "tail_index": [None, Interval(Real, 1, None, closed="neither")],
        "corrupted_fraction": [Interval(Real, 0, 1, closed="left")],
        "corruption_distance": [Interval(Real, 0, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": [
            None,
            Interval(Integral, 0, None, closed="left"),
            np.random.RandomState,
            np.random.SeedSequence,
        ],
    },
    prefer_skip_nested_validation=True,
)
def make_user_samples(
    n_users=100,
    n_features=2,
    *,
    samples_per_user=10,
    distribution="gaussian",
    mean=None,
    user_spread=0.5,
    sample_spread=1.0,
    tail_index=None,
    corrupted_fraction=0.0,
    corruption_distance=100.0,
    shuffle=True,
    random_state=None,
):
    r"""Generate user-level data: many rows per user around a known mean.

    The population mean :math:`\mu` is known. Each user :math:`u` has its own
    true mean :math:`\mu_u = \mu + s_{\mathrm{user}}\,\xi_u` and contributes
    rows :math:`x = \mu_u + s_{\mathrm{sample}}\,\eta`, where :math:`\xi_u`
    and :math:`\eta` are centred noise vectors with i.i.d. coordinates (one
    fresh :math:`\eta` per row). Hence :math:`\mathbb{E}[x] = \mu` for every
    clean row, and ``true_mean`` is the target that a user-level private mean
    estimator should recover.

    Parameters
    ----------
    n_users : int, default=100
        Number of users, at least 1. User ids are ``0, ..., n_users - 1``.

    n_features : int, default=2
        Dimension :math:`d` of every row, at least 1.

    samples_per_user : int or tuple of (int, int), default=10
        Number of rows of each user. An ``int`` ``m >= 1`` gives every user
        exactly ``m`` rows. A tuple ``(low, high)`` with
        ``1 <= low <= high`` draws each user's row count independently and
        uniformly from ``{low, low + 1, ..., high}`` (both ends included).

    distribution : {"gaussian", "bounded", "student_t", "pareto"}, \
            default="gaussian"
        Law of the user offsets :math:`\xi_u` and of the row noise
        :math:`\eta`. All laws are symmetric about 0, so every row has mean
        :math:`\mu` whenever the mean exists.

        - ``"gaussian"``: :math:`\xi_u` and :math:`\eta` are standard normal.
          All moments are finite.
        - ``"bounded"``: :math:`\xi_u` and :math:`\eta` are uniform on
          :math:`[-\sqrt{3}, \sqrt{3}]^d` (unit variance). Every row lies in
          the public box
          :math:`\mu \pm \sqrt{3}\,(s_{\mathrm{user}} + s_{\mathrm{sample}})`
          in every coordinate.
        - ``"student_t"``: :math:`\xi_u` is standard normal and each
          coordinate of :math:`\eta` is Student-t with ``tail_index`` degrees
          of freedom :math:`\nu` (variance :math:`\nu / (\nu - 2)` for
          :math:`\nu > 2`, infinite otherwise).
        - ``"pareto"``: :math:`\xi_u` is standard normal and each coordinate
          of :math:`\eta` is a fair random sign times a Lomax (Pareto II)
          variable with shape ``tail_index`` :math:`\alpha`, density
          :math:`\alpha (1 + y)^{-(\alpha + 1)}` on :math:`y \geq 0`. The
          random sign makes it symmetric, hence centred (variance
          :math:`2 / ((\alpha - 1)(\alpha - 2))` for :math:`\alpha > 2`,
          infinite otherwise).

        For the two heavy-tailed laws the :math:`k`-th absolute moment of
        :math:`\eta` is finite if and only if :math:`k <` ``tail_index``.

    mean : None, float or array-like of shape (n_features,), default=None
        Population mean :math:`\mu`. ``None`` draws it uniformly from
        :math:`[-1, 1]^d` using ``random_state``; a float uses that value in
        every coordinate; an array-like gives :math:`\mu` directly. Must be
        finite.

    user_spread : float, default=0.5
        Scale :math:`s_{\mathrm{user}} \geq 0` of the between-user
        variation of the user means (its standard deviation per coordinate,
        since :math:`\xi_u` has unit variance). ``0`` gives all users the
        same mean :math:`\mu`.

    sample_spread : float, default=1.0
        Scale :math:`s_{\mathrm{sample}} \geq 0` of the within-user noise.
        For ``"gaussian"`` and ``"bounded"`` it is the within-user standard
        deviation per coordinate.

    tail_index : float, default=None
        Tail index of the heavy-tailed laws, strictly greater than 1 so that
        the mean exists: degrees of freedom for ``"student_t"`` (``None``
        means 5) and Lomax shape for ``"pareto"`` (``None`` means 3). Ignored
        for ``"gaussian"`` and ``"bounded"``.

    corrupted_fraction : float, default=0.0
        Fraction in :math:`[0, 1)` of corrupted users. Exactly
        ``floor(corrupted_fraction * n_users)`` users (computed with a slack
        of ``1e-9`` against floating-point rounding, so that ``0.29`` of 100
        users gives 29), chosen uniformly at random without replacement, are
        corrupted: all of their rows are replaced by
        :math:`\mu + \text{corruption\_distance}\, e_1` with
        :math:`e_1 = (1, 0, \ldots, 0)`. Their row counts are unchanged.

    corruption_distance : float, default=100.0
        Distance :math:`\geq 0` from :math:`\mu` of the corrupted rows.

    shuffle : bool, default=True
        If True, rows (together with their user ids) are shuffled so that
        users are interleaved. If False, rows are grouped by user in the
        order ``0, 1, ..., n_users - 1``.

    random_state : None, int, numpy.random.RandomState or \
            numpy.random.SeedSequence, default=None
        ``None`` uses fresh operating-system entropy; a non-negative ``int``
        gives reproducible output. See :mod:`skuserdp.utils._random`.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features), dtype float64
        The rows, ``n_rows`` being the sum of the users' row counts.

    groups : ndarray of shape (n_rows,), dtype int64
        User id of each row, in ``{0, ..., n_users - 1}``. Every user has at
        least one row.

    true_mean : ndarray of shape (n_features,), dtype float64
        The clean population mean :math:`\mu` (not the empirical mean of
        ``X``, and unaffected by corruption).

    Notes
    -----
    All draws come from one :class:`numpy.random.Generator` built from the
    root seed sequence, in this order: :math:`\mu` (if ``mean=None``), row
    counts (if random), user offsets, row noise, the shuffling permutation
    and, last, the corrupted users. With a fixed integer seed, changing
    ``corrupted_fraction`` therefore leaves the rows of clean users, and
    their positions, unchanged.

    A seeded dataset is for experiments only; it is of course not private.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.datasets import make_user_samples
    >>> X, groups, true_mean = make_user_samples(
    ...     n_users=50, n_features=3, samples_per_user=(2, 8), random_state=0
    ... )
    >>> X.shape[1], X.dtype, groups.dtype
    (3, dtype('float64'), dtype('int64'))
    >>> len(np.unique(groups))
    50
    >>> counts = np.bincount(groups)
    >>> bool(counts.min() >= 2 and counts.max() <= 8)
    True
    >>> bool(X.shape[0] == counts.sum())
    True
    >>> X, groups, true_mean = make_user_samples(
    ...     n_users=10, mean=0.0, corrupted_fraction=0.2, random_state=0
    ... )
    >>> true_mean
    array([0., 0.])
    >>> corrupted = np.unique(groups[X[:, 0] == 100.0])
    >>> len(corrupted)
    2
    """
    n_users = int(n_users)
    n_features = int(n_features)

    low, high = _check_samples_per_user(samples_per_user)
    mean = _check_mean(mean, n_features)
    if distribution in _DEFAULT_TAIL_INDEX:
        if tail_index is None:
            tail_index = _DEFAULT_TAIL_INDEX[distribution]
        tail_index = float(tail_index)

    n_corrupted = math.floor(corrupted_fraction * n_users + _FLOOR_SLACK)
    # floor(f * n) <= n - 1 for f < 1; guard against rounding up to n.
    n_corrupted = min(max(n_corrupted, 0), n_users - 1)

    rng = generator_from(data_seed_sequence(random_state))

    # Population mean.
    if mean is None:
        mu = rng.uniform(-1.0, 1.0, size=n_features)
    else:
        mu = mean

    # Row counts and user id of each row (grouped by user).
    if low == high:
        counts = np.full(n_users, low, dtype=np.int64)
    else:
        counts = rng.integers(low, high, size=n_users, endpoint=True, dtype=np.int64)
    groups = np.repeat(np.arange(n_users, dtype=np.int64), counts)
    n_rows = groups.shape[0]

    # User means mu_u = mu + user_spread * xi_u.
    if distribution == "bounded":
        xi = rng.uniform(-_SQRT3, _SQRT3, size=(n_users, n_features))
    else:
        xi = rng.standard_normal(size=(n_users, n_features))
    user_means = mu + user_spread * xi

    # Within-user noise eta, one i.i.d. vector per row.
    shape = (n_rows, n_features)
    if distribution == "gaussian":
        eta = rng.standard_normal(size=shape)
    elif distribution == "bounded":
        eta = rng.uniform(-_SQRT3, _SQRT3, size=shape)
    elif distribution == "student_t":
        eta = rng.standard_t(tail_index, size=shape)
    else:  # "pareto": symmetric Lomax
        magnitude = rng.pareto(tail_index, size=shape)
        sign = np.where(rng.random(size=shape) < 0.5, -1.0, 1.0)
        eta = sign * magnitude

    X = user_means[groups] + sample_spread * eta

    if shuffle:
        order = rng.permutation(n_rows)
    else:
        order = None

    if n_corrupted > 0:
        corrupted_users = rng.choice(n_users, size=n_corrupted, replace=False)
        is_corrupted = np.zeros(n_users, dtype=bool)
        is_corrupted[corrupted_users] = True
        outlier = mu.copy()
        outlier[0] += corruption_distance
        X[is_corrupted[groups]] = outlier

    if order is not None:
        X = X[order]
        groups = groups[order]

    X = np.ascontiguousarray(X, dtype=np.float64)
    return X, groups, np.array(mu, dtype=np.float64)


def _check_samples_per_user(samples_per_user):
    """Return ``(low, high)``; an int ``m`` gives ``(m, m)``."""
    if isinstance(samples_per_user, tuple):
        if len(samples_per_user) != 2 or not all(
            isinstance(v, Integral) and not isinstance(v, bool)
            for v in samples_per_user
        ):
            raise ValueError(
                "samples_per_user must be an int >= 1 or a tuple (low, high) of "
                f"two ints; got {samples_per_user!r}."
            )
        low, high = (int(v) for v in samples_per_user)
        if not 1 <= low <= high:
            raise ValueError(
                "samples_per_user=(low, high) requires 1 <= low <= high; got "
                f"{samples_per_user!r}."
            )
        return low, high
    m = int(samples_per_user)
    return m, m


def _check_mean(mean, n_features):
    """Return ``mean`` as a float64 array of shape (n_features,), or None."""
    return None if mean is None else check_center(mean, n_features, name="mean")
