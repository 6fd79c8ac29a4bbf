"""Per-user average gradients of the data term of the linear models.

The private optimisers (:mod:`skuserdp.linear_model._sgd`) release, at every
step, a private mean of the users' *average* gradients

.. math::

    g_u(W) = \\frac{1}{m_u} \\sum_{i \\in u} f(W \\tilde x_i, y_i) \\otimes \\tilde x_i,

one row per user: ``f = loss.residual_factor`` is ``∂ℓ/∂z`` of a row's loss
at its prediction ``z = W x̃`` (``n_outputs`` values), ``x̃`` the augmented
row (features, and ``1`` for an intercept) and ``m_u`` the user's row
count. The row of user ``u`` is ``(g_u[0], ..., g_u[K-1])``, the gradient
of every output after the other (``K = n_outputs``), i.e. ``W``'s rows
flattened. This module computes those rows without forming an
``n_rows × p`` array per output at every step:

* **Second moments** (``method="moments"``; the squared loss, whose
  residual factor ``z − y`` is affine in the prediction): once,
  ``S_u = (1/m_u) Σ_i x̃_i x̃_iᵀ`` and ``b_u = (1/m_u) Σ_i y_i x̃_i``; then
  every step is ``g_u[k] = S_u w_k − b_u``, a batched matrix–vector product
  over users (``n_users × p²`` work, no pass over the rows). This is the
  same quantity as the row formula, since
  ``(1/m_u) Σ_i (x̃_iᵀw_k − y_i) x̃_i = S_u w_k − b_u`` exactly in real
  arithmetic: the two differ only by the rounding of the sums. ``S_u`` is
  streamed over users of equal row count (one batched Gram product per chunk
  of users; rows gathered chunk by chunk, ``Xa`` never copied), so the
  precomputation holds ``O(n_users · p²)`` memory; above
  :data:`MAX_MOMENT_BYTES` the row path is used instead.
* **Rows** (``method="rows"``; every loss): the rows are put in user order
  once (one stable sort of the codes, so each user's rows keep their order
  and the sums run in the same order as the sparse averaging matrix's). The
  averaging matrix ``A`` (``A[u, i] = 1/m_u`` for the rows of ``u``) is a
  CSR matrix over the sorted rows whose sparsity pattern is kept; at every
  step its values become ``f_k(x̃_i)/m_u`` for one output ``k`` after the
  other, and ``A_k @ X̃_sorted`` is user ``u``'s gradient of output ``k``.
  That is ``Σ_i (f_{ik}/m_u) x̃_i``, the reference
  ``Σ_i (1/m_u)(f_{ik} x̃_i)`` up to the rounding of one product per
  term. The sorted rows are read in order (contiguous blocks), which is what
  makes the product fast.

``method="auto"`` takes the second moments for the squared loss when they
fit in :data:`MAX_MOMENT_BYTES` and a step over them is not more work than a
step over the rows (``n_users · p ≤ 2 · n_rows``: the rows path reads the
rows twice per step, for the predictions and for the sums), and the rows
otherwise.

Threads: the precomputation of the moments is many small Gram products,
run with BLAS limited to one thread (threads only add overhead there, and
much of it when the cores are busy); the rows path's predictions are an
``einsum`` (single-threaded, as fast as BLAS for these thin products, and not
slowed down by busy cores).

A subset of users (Phased ERM's disjoint blocks) gets its own gradient
function whose rows follow the order of the users given; a user given twice
gets two equal rows, a user without rows a zero row. Each user's row
depends on that user's data only, in every path.
"""

import contextlib
import functools
import threading

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from ._linear_regression import _user_blocks
from ._losses import SquaredError

__all__ = ["user_gradient_fn", "user_second_moments"]

#: largest size in bytes of the per-user second moments (``n_users · p² · 8``)
#: for which ``method="auto"`` precomputes them (OUR CHOICE)
MAX_MOMENT_BYTES = 2 * 1024 ** 3

#: float64 elements per working buffer of the moments' precomputation (1 MiB,
#: so that a chunk's buffers stay in cache)
MOMENT_CHUNK_ELEMENTS = 2 ** 17

METHODS = ("auto", "moments", "rows")


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's controller of the BLAS libraries loaded when it was
    first needed (numpy's and scipy's), built once: building one scans every
    library of the process, ~4 ms, which was half of a small DP-SGD fit. A
    library loaded later is not limited, which only costs time."""
    return ThreadpoolController()


#: guards the shared BLAS limit of :func:`_one_blas_thread`
_BLAS_LOCK = threading.Lock()
#: [number of threads inside _one_blas_thread, the limiter they share]
_BLAS_STATE = [0, None]


@contextlib.contextmanager
def _one_blas_thread():
    """Run the block with BLAS limited to one thread, safely across threads.

    The BLAS thread count is process-wide. With threadpoolctl's ``limit``
    entered by two threads at once, the second saves the first's limit (1)
    as "original" and, leaving last, restores it: BLAS would stay at one
    thread for the rest of the process. Here the first thread in sets the
    limit and the last one out restores the original.
    """
    with _BLAS_LOCK:
        if _BLAS_STATE[0] == 0:
            _BLAS_STATE[1] = _blas_controller().limit(limits=1, user_api="blas")
        _BLAS_STATE[0] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_STATE[0] -= 1
            if _BLAS_STATE[0] == 0:
                _BLAS_STATE[1].restore_original_limits()
                _BLAS_STATE[1] = None


def user_second_moments(Xa, y, codes, n_users, *, chunk_elements=None):
    """Per-user second moments ``S_u = mean x̃x̃ᵀ`` and ``b_u = mean y·x̃``.

    Users of equal row count are processed together: their rows, with the
    target as an extra column, form a ``(k, m, p + 1)`` block whose per-user
    Gram matrices are one batched matrix product. Rows are gathered chunk by
    chunk (``Xa`` is read, never copied or modified).

    Parameters
    ----------
    Xa : ndarray of shape (n_samples, p)
        Augmented rows.
    y : ndarray of shape (n_samples,)
        Targets.
    codes : ndarray of shape (n_samples,)
        User code (``0..n_users-1``) of every row.
    n_users : int
        Number of users.
    chunk_elements : int, default=None
        Float64 elements of one working buffer (``None``:
        :data:`MOMENT_CHUNK_ELEMENTS`).

    Returns
    -------
    S : ndarray of shape (n_users, p, p)
        Every user's mean ``x̃x̃ᵀ`` (zeros for a user without rows).
    b : ndarray of shape (n_users, p)
        Every user's mean ``y·x̃`` (zeros for a user without rows).
    """
    chunk_elements = MOMENT_CHUNK_ELEMENTS if chunk_elements is None else chunk_elements
    Xa = np.asarray(Xa, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    p = Xa.shape[1]
    q = p + 1
    S = np.zeros((n_users, p, p))
    b = np.zeros((n_users, p))
    blocks = _user_blocks(Xa, y, np.asarray(codes), n_users, width=q,
                          n_block_users=lambda m: max(1, chunk_elements // (m * q)))
    # many small Gram products, for which BLAS threads only add overhead
    with _one_blas_thread():
        for m, users, Z in blocks:
            Zb = Z.reshape(Z.shape[0] // m, m, q)
            G = np.matmul(Zb.transpose(0, 2, 1), Zb)  # (k, q, q) Gram
            G /= m
            S[users] = G[:, :p, :p]
            b[users] = G[:, :p, p]
    return S, b


def _select_users(users, n_users):
    users = np.asarray(users)
    if users.ndim != 1 or (users.size and users.dtype.kind not in "iu"):
        raise ValueError("users must be a 1-D array of user indices.")
    users = users.astype(np.intp, copy=False)
    if users.size and (users.min() < 0 or users.max() >= n_users):
        raise ValueError(f"user indices must be in [0, {n_users}).")
    return users


class _MomentGradients:
    """The second-moments path (affine residual factor ``z − y``)."""

    def __init__(self, Xa, y, codes, n_users, n_outputs):
        S, b = user_second_moments(Xa, y, codes, n_users)
        self._set(S, b, n_outputs)

    @classmethod
    def from_moments(cls, S, b, n_outputs):
        """From precomputed per-user moments (e.g. gathered from Dask)."""
        self = cls.__new__(cls)
        self._set(S, b, n_outputs)
        return self

    def _set(self, S, b, n_outputs):
        self.S, self.b = S, b
        self.n_users = S.shape[0]
        self.n_outputs = n_outputs
        self._all = None

    def for_users(self, users=None):
        if users is None:
            if self._all is None:
                self._all = self._gradients(self.S, self.b)
            return self._all
        users = _select_users(users, self.n_users)
        return self._gradients(self.S[users], self.b[users])

    def _gradients(self, S, b):
        n_sel, p = b.shape
        K = self.n_outputs

        def gradients(theta):
            W = np.asarray(theta, dtype=np.float64).reshape(K, p)
            out = np.empty((n_sel, K, p))
            for k in range(K):
                # batched (not BLAS-threaded) matrix-vector products
                out[:, k, :] = np.matmul(S, W[k])
            out -= b[:, None, :]
            return out.reshape(n_sel, K * p)

        return gradients


class _RowGradients:
    """The rows path (any loss): a CSR averaging matrix over sorted rows."""

    def __init__(self, loss, Xa, y, codes, n_users, n_outputs):
        self.loss = loss
        self.Xa = Xa
        self.y = y
        self.n_users = n_users
        self.n_outputs = n_outputs
        codes = np.asarray(codes)
        self.counts = np.bincount(codes, minlength=n_users)
        self.indptr = np.r_[0, np.cumsum(self.counts)].astype(np.intp)
        if codes.shape[0] < 2 or np.all(codes[1:] >= codes[:-1]):
            self.order = None  # already grouped by user, in code order
        else:
            key = codes.astype(np.uint16) if n_users <= 2 ** 16 else codes
            # stable: a user's rows keep their order (radix sort for uint16)
            self.order = np.argsort(key, kind="stable")
        self._all = None

    def _rows(self, positions):
        """Rows and targets at ``positions`` of the user-sorted order."""
        if positions is None:
            if self.order is None:
                return np.ascontiguousarray(self.Xa), self.y
            rows = self.order
        else:
            rows = positions if self.order is None else self.order[positions]
        return np.take(self.Xa, rows, axis=0), np.take(self.y, rows)

    def for_users(self, users=None):
        if users is None:
            if self._all is None:
                Xr, yr = self._rows(None)
                self._all = self._gradients(Xr, yr, self.counts)
            return self._all
        users = _select_users(users, self.n_users)
        counts = self.counts[users]
        start = self.indptr[users]
        new_start = np.cumsum(counts) - counts
        positions = (np.arange(int(counts.sum()), dtype=np.intp)
                     + np.repeat(start - new_start, counts))
        Xr, yr = self._rows(positions)
        return self._gradients(Xr, yr, counts)

    def _gradients(self, Xr, yr, counts):
        n_sel = counts.shape[0]
        n_rows, p = Xr.shape
        K = self.n_outputs
        loss = self.loss
        indptr = np.r_[0, np.cumsum(counts)].astype(np.intp)
        with np.errstate(divide="ignore"):
            inv = np.repeat(1.0 / counts, counts)  # 1/m_u of every row
        A = sp.csr_array((np.empty(n_rows), np.arange(n_rows, dtype=np.intp),
                          indptr), shape=(n_sel, n_rows))

        def gradients(theta):
            W = np.asarray(theta, dtype=np.float64).reshape(K, p)
            # predictions (rows, n_outputs) by einsum, single-threaded: as
            # fast as BLAS here, whose threaded thin products can be tens of
            # times slower when the cores are busy
            F = loss.residual_factor(np.einsum("ij,kj->ik", Xr, W), yr)
            out = np.empty((n_sel, K, p))
            for k in range(K):
                np.multiply(F[:, k], inv, out=A.data)
                out[:, k, :] = A @ Xr
            return out.reshape(n_sel, K * p)

        return gradients


def _moments_fit(n_rows, n_users, p, max_bytes):
    return n_users * p * p * 8 <= max_bytes and n_users * p <= 2 * n_rows


def user_gradient_fn(loss, Xa, y, codes, n_users, n_outputs, *, method="auto",
                     max_moment_bytes=None):
    """``users -> (theta -> per-user average gradients)`` of the data term.

    Parameters
    ----------
    loss : loss object
        From :func:`skuserdp.linear_model._losses.get_loss`; its
        ``residual_factor(Z, y)`` gives ``∂ℓ/∂z`` of every row.
    Xa : ndarray of shape (n_samples, p)
        Augmented rows (not modified; the rows path keeps a copy sorted by
        user, the moments path none).
    y : ndarray of shape (n_samples,)
        Targets or class codes (not modified).
    codes : ndarray of shape (n_samples,)
        User code (``0..n_users-1``) of every row.
    n_users : int
        Number of users.
    n_outputs : int
        Rows of the parameter matrix ``W`` (``theta`` is ``W`` flattened).
    method : {"auto", "moments", "rows"}, default="auto"
        ``"moments"``: precomputed second moments (squared loss only);
        ``"rows"``: a pass over the rows every step; ``"auto"``: the moments
        for the squared loss when they fit in ``max_moment_bytes`` and are
        not more work per step (see the module docstring), else the rows.
    max_moment_bytes : int, default=None
        Memory cap of the moments for ``"auto"`` (``None``:
        :data:`MAX_MOMENT_BYTES`).

    Returns
    -------
    for_users : callable
        ``for_users(users=None)`` returns ``gradients(theta) -> ndarray of
        shape (n_selected, n_outputs * p)``: row ``j`` is the average
        gradient of user ``users[j]`` (of every user, in code order, for
        ``None``), the ``p`` entries of output 0, then of output 1, ...
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    Xa = np.asarray(Xa, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    affine = type(loss) is SquaredError
    if method == "moments" and not affine:
        raise ValueError("method='moments' needs the squared loss (a residual "
                         f"factor affine in the prediction), got {loss.name!r}.")
    if method == "auto":
        cap = MAX_MOMENT_BYTES if max_moment_bytes is None else max_moment_bytes
        method = ("moments" if affine and _moments_fit(Xa.shape[0], n_users,
                                                       Xa.shape[1], cap)
                  else "rows")
    if method == "moments":
        return _MomentGradients(Xa, y, codes, n_users, n_outputs).for_users
    return _RowGradients(loss, Xa, y, codes, n_users, n_outputs).for_users
