"""UserDPLinearRegression: one private release of per-user sufficient statistics.

Not from one of the three papers: the non-iterative baseline practitioners
compare user-level DP-SGD against (issue 6, item 5; the sufficient-statistics
perturbation of Sheffet 2017 / Wang 2018, made user-level by averaging per
user first, as the library survey recommends, spec
``dp_library_survey.md`` §2.0).

Algorithm (replace-one user neighbours, n users public):

1. Rows are projected onto the public feature ball and targets clipped to the
   public bound; with an intercept the rows are augmented, ``x̃ = (x, 1)``.
2. Every user ``u`` contributes ``v_u = (vech(S_u), b_u)`` with
   ``S_u = mean_j x̃_j x̃_jᵀ`` (its upper triangle, off-diagonal entries times
   √2 so that ``‖vech(S)‖₂ = ‖S‖_F``) and ``b_u = mean_j x̃_j y_j``. The
   intercept's own entry of ``S_u`` is the constant 1 and is not released.
   ``‖S_u‖_F ≤ b²`` and ``‖b_u‖ ≤ b·B_y`` (b the augmented row bound), so
   ``‖v_u‖ ≤ √(b⁴ − [intercept] + b²B_y²)``: the clip radius of "auto".
3. One clip-and-noise release of the mean of the ``v_u``
   (:func:`skuserdp.mean.plan_clip_noise`: lattice, discrete Gaussian or
   Laplace noise).
4. Post-processing: rebuild S and b, project S onto the PSD cone (clip
   negative eigenvalues), solve ``(S + α·I_coef) w = b`` (least squares) with
   a public ridge α; ``alpha="auto"`` is the expected operator norm of the
   noise matrix, ``σ√(2p)`` (σ the noise of a released coordinate, so σ/√2
   on the off-diagonal entries of S; p the dimension; public).

No centring of the data: centres would have to be public or private.
"""

import math
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..mean._clip_noise import clip_noise_from_plan, plan_clip_noise
from ..privacy import ApproxDP, PureDP
from ..utils._docstrings import fill_doc
from ._base import _UserDPLinearModel

__all__ = ["UserDPLinearRegression"]

#: most parameters (features + intercept) the one-shot release accepts: it
#: releases p(p+3)/2 statistics per user, and its noise grows with them.
MAX_PARAMS = 300


def _vech_layout(p, drop_last_diagonal):
    """Indices (rows, cols) of the released upper triangle and their scale."""
    rows, cols = np.triu_indices(p)
    if drop_last_diagonal:
        keep = ~((rows == p - 1) & (cols == p - 1))
        rows, cols = rows[keep], cols[keep]
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    return rows, cols, scale


#: float64 elements per working buffer of the streamed statistics (1 MiB, so
#: that a chunk's buffers stay in cache)
CHUNK_ELEMENTS = 2 ** 17


def _rows_by_count(codes, n_users):
    """Row order grouping users by row count, each user's rows contiguous.

    Users are ordered by row count (stable: by code within a count) and rows
    by that user order (stable: a user's rows keep their order in ``X``).

    Returns
    -------
    counts : ndarray of shape (n_users,)
        Rows per user.
    user_order : ndarray of shape (n_users,) or None
        Users by increasing row count; ``None`` for ``0, 1, ..., n_users-1``.
    row_order : ndarray of shape (n_samples,) or None
        Rows of ``user_order[0]``, then of ``user_order[1]``, ...; ``None``
        when the rows are already in that order.
    """
    counts = np.bincount(codes, minlength=n_users)
    user_order = np.argsort(counts, kind="stable")
    identity = bool(np.all(user_order[1:] > user_order[:-1]))
    if identity:
        user_order = None
        key = codes
    else:
        rank = np.empty(n_users, dtype=np.intp)
        rank[user_order] = np.arange(n_users)
        key = rank[codes]
    if np.all(key[1:] >= key[:-1]):
        return counts, user_order, None  # rows already grouped in this order
    if n_users <= np.iinfo(np.uint16).max + 1:
        key = key.astype(np.uint16)  # numpy's stable sort is a radix sort here
    return counts, user_order, np.argsort(key, kind="stable")


def _streamed_statistics(X, y, codes, n_users, *, drop_last_diagonal,
                         feature_bound=None, intercept=False,
                         chunk_elements=None):
    """Per-user ``(vech(S_u), b_u)`` streamed over chunks of users.

    The rows used are those of ``X``, projected onto the ball of radius
    ``feature_bound`` (when given, exactly as :func:`project_rows`, up to
    the rounding of the row norms) and followed by a column of ones when
    ``intercept``. Rows are grouped by user (one stable sort of the codes,
    skipped when they are already grouped) and users of equal row count
    ``m`` are processed together: their rows, with the target as an extra
    column, form a ``(k, m, p + 1)`` block whose per-user Gram matrices
    ``Z_uᵀZ_u`` are one batched matrix product. Working memory is a few
    buffers of ``chunk_elements`` floats plus the ``(n_users, n_stats)``
    output: no array of ``n_samples × p²`` is formed and ``X`` is read, not
    copied. Each user's statistics depend on that user's rows only.
    """
    chunk_elements = CHUNK_ELEMENTS if chunk_elements is None else chunk_elements
    d = X.shape[1]
    p = d + (1 if intercept else 0)
    rows, cols, scale = _vech_layout(p, drop_last_diagonal)
    q = p + 1
    # flat positions in the (p+1)x(p+1) Gram matrix of the released entries
    take = np.r_[rows * q + cols, np.arange(p) * q + p]
    mult = np.r_[scale, np.ones(p)]
    V = np.zeros((n_users, take.shape[0]))
    counts, user_order, row_order = _rows_by_count(codes, n_users)
    grouped = row_order is None
    sorted_counts = counts if user_order is None else counts[user_order]
    # runs of users with the same row count
    starts = np.flatnonzero(np.r_[True, sorted_counts[1:] != sorted_counts[:-1]])
    ends = np.r_[starts[1:], n_users]
    row_start = np.r_[0, np.cumsum(sorted_counts)]
    bound = None if feature_bound is None else float(feature_bound)
    for a, b in zip(starts, ends):
        m = int(sorted_counts[a])
        if m == 0:
            continue  # users without rows (not produced by fit) keep zeros
        step = max(1, min(chunk_elements // (m * q), chunk_elements // (q * q)))
        for u0 in range(a, b, step):
            u1 = min(b, u0 + step)
            r0, r1 = int(row_start[u0]), int(row_start[u1])
            Z = np.empty((r1 - r0, q))
            if grouped:
                Z[:, :d] = X[r0:r1]
                Z[:, p] = y[r0:r1]
            else:
                idx = row_order[r0:r1]
                np.take(X, idx, axis=0, out=Z[:, :d], mode="clip")
                np.take(y, idx, out=Z[:, p], mode="clip")
            if bound is not None:
                Xc = Z[:, :d]
                norms = np.sqrt(np.einsum("ij,ij->i", Xc, Xc))
                outside = norms > bound
                if outside.any():
                    Xc[outside] *= (bound / norms[outside])[:, None]
            if intercept:
                Z[:, d] = 1.0
            Zb = Z.reshape(u1 - u0, m, q)
            G = np.matmul(Zb.transpose(0, 2, 1), Zb).reshape(u1 - u0, q * q)
            part = np.take(G, take, axis=1)
            part *= mult / m
            if user_order is None:
                V[u0:u1] = part
            else:
                V[user_order[u0:u1]] = part
    return V


def sufficient_statistics(Xa, y, codes, n_users, *, drop_last_diagonal):
    """Per-user ``(vech(S_u), b_u)``, one row per user.

    ``S_u`` is the mean of user ``u``'s ``x̃x̃ᵀ`` (upper triangle, row by
    row, off-diagonal entries times √2) and ``b_u`` the mean of its ``x̃y``.
    Streamed: memory ``O(n_users · p²)`` plus a few chunks of rows, never
    ``O(n_samples · p²)``; ``Xa`` is not copied.

    Parameters
    ----------
    Xa : ndarray of shape (n_samples, p)
        Augmented, projected rows.
    y : ndarray of shape (n_samples,)
        Clipped targets.
    codes : ndarray of shape (n_samples,)
        User code of every row.
    n_users : int
    drop_last_diagonal : bool
        Whether the last diagonal entry (the intercept's constant 1) is left
        out.

    Returns
    -------
    V : ndarray of shape (n_users, n_stats)
        Users without rows get zeros.
    """
    Xa = np.asarray(Xa, dtype=np.float64)
    return _streamed_statistics(Xa, np.asarray(y, dtype=np.float64), codes, n_users,
                                drop_last_diagonal=drop_last_diagonal)


def _unpack(v, p, drop_last_diagonal):
    rows, cols, scale = _vech_layout(p, drop_last_diagonal)
    n_tri = rows.shape[0]
    S = np.zeros((p, p))
    S[rows, cols] = v[:n_tri] / scale
    S[cols, rows] = v[:n_tri] / scale
    if drop_last_diagonal:
        S[p - 1, p - 1] = 1.0
    return S, v[n_tri:]


@fill_doc
class UserDPLinearRegression(RegressorMixin, _UserDPLinearModel):
    """User-level private ridge regression from noisy sufficient statistics.

    Each user's average second-moment matrix ``mean x̃x̃ᵀ`` and cross-moment
    ``mean x̃y`` are clipped jointly and released once with lattice noise; the
    coefficients solve the ridge normal equations of the noisy statistics
    (post-processing). One release, no iterations, no step sizes: the
    baseline to compare :class:`UserDPSGDRegressor` with.

    {user_level_note}

    Parameters
    ----------
    {epsilon}
    {delta}
    alpha : float or "auto", default="auto"
        Public ridge added to the noisy second-moment matrix (not to the
        intercept). ``"auto"``: ``σ√(2p)``, the expected operator norm of
        the noise matrix (σ the noise standard deviation of a released
        coordinate, p the number of parameters) — public, computed before
        seeing the data. A ridge shrinks the coefficients towards 0.
    fit_intercept : bool, default=True
        Whether to fit an intercept.
    feature_bound : float, default=1.0
        Public bound on the ℓ2 norm of every row of ``X``; rows are projected
        onto this ball at fit and predict time.
    target_bound : float, default=1.0
        Public bound on ``|y|``; targets are clipped to it.
    clip_radius : float or "auto", default="auto"
        Public ℓ2 clip radius of each user's statistics vector. ``"auto"``
        is its largest possible norm (no clipping bias).
    {calibration}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The private coefficients.
    intercept_ : float
        The private intercept.
    alpha_ : float
        The ridge used.
    n_users_ : int
        Number of users.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.
    privacy_loss_ : ZCDP or PureDP
        The privacy loss of the release.
    epsilon_, delta_ : float
        That loss as (ε, δ); at most the targets.
    rho_ : float or None
        The zCDP ρ spent.

    See Also
    --------
    UserDPSGDRegressor : Iterative user-level DP-SGD.

    Notes
    -----
    The number of released statistics grows as ``p²/2``; for many features
    the noise dominates and DP-SGD is the better choice (at most 300
    parameters are accepted). Scale features with
    *public* ranges (see :class:`UserDPSGDRegressor`); fitting a scaler on
    the private data is itself a leak.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.linear_model import UserDPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(5000), 10)
    >>> X = rng.uniform(-0.5, 0.5, size=(50000, 2))
    >>> y = X @ [0.8, -0.4] + 0.1 + 0.05 * rng.normal(size=50000)
    >>> reg = UserDPLinearRegression(epsilon=1.0, random_state=0)
    >>> coef = reg.fit(X, y, groups=groups).coef_
    >>> bool(np.abs(coef - [0.8, -0.4]).max() < 0.15), reg.epsilon_ <= 1.0
    (True, True)
    """

    _parameter_constraints: dict = {
        **_UserDPLinearModel._parameter_constraints,
        "alpha": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "target_bound": [Interval(Real, 0, None, closed="neither")],
        "clip_radius": [StrOptions({"auto"}),
                        Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, alpha="auto", fit_intercept=True,
                 feature_bound=1.0, target_bound=1.0, clip_radius="auto",
                 calibration="tight", random_state=None, n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.feature_bound = feature_bound
        self.target_bound = target_bound
        self.clip_radius = clip_radius
        self.calibration = calibration
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _max_radius(self):
        b2 = self._row_bound ** 2
        return math.sqrt(b2 * b2 - (1.0 if self.fit_intercept else 0.0)
                         + b2 * self.target_bound ** 2)

    def _user_statistics(self, X, y, codes, n_users):
        """:func:`sufficient_statistics` of the augmented, projected rows,
        computed chunk by chunk from ``X`` (never copied whole)."""
        return _streamed_statistics(X, y, codes, n_users,
                                    drop_last_diagonal=bool(self.fit_intercept),
                                    feature_bound=self.feature_bound,
                                    intercept=bool(self.fit_intercept))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, groups=None):
        """Fit the private ridge regression.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of all users. Not modified.
        y : array-like of shape (n_samples,)
            Targets. Not modified.
        groups : array-like of shape (n_samples,), default=None
            User id of every row; the unit of privacy. ``None`` treats every
            row as its own user and emits an
            :class:`~skuserdp.exceptions.ItemLevelPrivacyWarning`.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y, codes, n_users = self._validate_supervised(X, y, groups)
        yc = np.clip(y.astype(np.float64), -self.target_bound, self.target_bound)
        p = X.shape[1] + (1 if self.fit_intercept else 0)
        if p > MAX_PARAMS:
            raise ValueError(
                f"UserDPLinearRegression releases p(p+3)/2 statistics per user; with "
                f"p = {p} parameters that is {p * (p + 3) // 2}, more than this "
                f"estimator accepts (p <= {MAX_PARAMS}), and the noise would swamp "
                "them. Use UserDPSGDRegressor for many features."
            )
        drop = bool(self.fit_intercept)
        V = self._user_statistics(X, yc, codes, n_users)
        radius = (self._max_radius() if self.clip_radius == "auto"
                  else float(self.clip_radius))
        if self.delta == 0:
            budget = PureDP(self.epsilon)
        else:
            budget = ApproxDP(self.epsilon, self.delta)
        plan = plan_clip_noise(n_users, V.shape[1], budget=budget, radius=radius,
                               calibration=self.calibration)
        released = clip_noise_from_plan(V, plan, random_state=self.random_state,
                                        n_jobs=self.n_jobs)
        S, b = _unpack(released, p, drop)
        eigval, eigvec = np.linalg.eigh(S)
        S = (eigvec * np.maximum(eigval, 0.0)) @ eigvec.T
        if self.alpha == "auto":
            alpha = math.sqrt(2.0 * p * plan.noise_variance)
        else:
            alpha = float(self.alpha)
        ridge = np.full(p, alpha)
        if self.fit_intercept:
            ridge[-1] = 0.0
        w = np.linalg.lstsq(S + np.diag(ridge), b, rcond=None)[0]
        coef, intercept = self._set_coef(w[None, :])
        self.coef_ = coef[0]
        self.intercept_ = float(intercept[0])
        self.alpha_ = alpha
        self.n_users_ = n_users
        self._set_spend(plan.loss)
        return self

    def predict(self, X):
        """Predict with the private model (rows projected onto the feature ball).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predictions.
        """
        return self._decision(X)[:, 0]

    def score(self, X, y, sample_weight=None, *, groups=None):
        """R² of the predictions on held-out rows.

        The score uses the held-out data without noise: it is for evaluation
        on synthetic, public or held-out data; choosing hyper-parameters with
        it on private data is not differentially private.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Held-out rows.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.
        groups : array-like of shape (n_samples,), default=None
            Ignored (R² is a row-level score); accepted so that metadata
            routing, which sends ``groups`` to ``score``, works.

        Returns
        -------
        score : float
            The coefficient of determination.
        """
        return RegressorMixin.score(self, X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
