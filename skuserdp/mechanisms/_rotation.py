"""Random Hadamard rotation by an in-place fast Walsh–Hadamard transform.

Implements the rotation ``U = H D / √d′`` of Levy et al. [LSA+21]_,
Algorithm 2 line 2 and Lemma 2 (docs: :ref:`papers-levy`,
:ref:`papers-levy-padding`): ``D`` is a diagonal of independent random signs and
``H`` the d′ × d′ Sylvester–Hadamard matrix (entries ±1, ``H Hᵀ = d′ I``),
with d′ = 2^⌈log₂ d⌉; vectors are zero-padded to d′. ``U`` is orthogonal, so
``U⁻¹ = Uᵀ = D H / √d′``.

The signs must be drawn independently of the data (privacy holds for every
*fixed* ``D``; a data-dependent ``D`` voids it). ``H`` is never materialised:
the transform costs O(d′ log d′) per vector and is vectorised over the other
axis.
"""

import math

import numpy as np

from ..utils._random import generator_from, make_seed_sequence

__all__ = ["fwht", "padded_dimension", "RandomHadamardRotation"]


def padded_dimension(n_features):
    """Smallest power of two ``>= n_features``.

    Parameters
    ----------
    n_features : int
        Dimension, ``>= 1``.

    Returns
    -------
    d_padded : int
        ``2^⌈log₂ n_features⌉``.

    Examples
    --------
    >>> from skuserdp.mechanisms import padded_dimension
    >>> padded_dimension(1), padded_dimension(100), padded_dimension(128)
    (1, 128, 128)
    """
    n_features = int(n_features)
    if n_features < 1:
        raise ValueError(f"n_features must be >= 1, got {n_features}.")
    return 1 << (n_features - 1).bit_length()


def fwht(a, *, axis=0, inplace=False):
    """Unnormalised fast Walsh–Hadamard transform ``H a`` along ``axis``.

    ``H`` is the Sylvester–Hadamard matrix (``scipy.linalg.hadamard``), so
    ``fwht(fwht(a)) == len · a``. The butterflies run in place on a C-ordered
    float64 array, vectorised over every other axis; cost O(N log N) per
    vector of length N.

    Parameters
    ----------
    a : array-like
        Input; its length along ``axis`` must be a power of two.
    axis : int, default=0
        Axis to transform.
    inplace : bool, default=False
        Transform ``a`` itself (it must then be a C-contiguous float64 array
        and ``axis`` must be 0); otherwise a new array is returned and ``a``
        is not modified.

    Returns
    -------
    out : ndarray
        ``H a`` along ``axis`` (``a`` itself when ``inplace``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import hadamard
    >>> from skuserdp.mechanisms import fwht
    >>> x = np.arange(4.0)
    >>> fwht(x)
    array([ 6., -2., -4.,  0.])
    >>> bool(np.allclose(fwht(x), hadamard(4) @ x))
    True
    """
    if inplace:
        if not (isinstance(a, np.ndarray) and a.dtype == np.float64
                and a.flags.c_contiguous and a.flags.writeable):
            raise ValueError(
                "inplace=True needs a writeable C-contiguous float64 array."
            )
        if axis != 0:
            raise ValueError("inplace=True transforms axis 0 only.")
        out = a
    else:
        out = np.ascontiguousarray(np.moveaxis(np.array(a, dtype=np.float64), axis, 0))
    n = out.shape[0] if out.ndim else 0
    if n < 1 or n & (n - 1):
        raise ValueError(f"the transformed length must be a power of two, got {n}.")
    rest = out.reshape(n, -1)
    h = 1
    while h < n:
        v = rest.reshape(n // (2 * h), 2, h, rest.shape[1])
        top = v[:, 0]
        bottom = v[:, 1]
        top += bottom  # x + y
        bottom *= -2.0
        bottom += top  # (x + y) - 2y = x - y
        h *= 2
    if inplace:
        return out
    return np.moveaxis(out, 0, axis)


class RandomHadamardRotation:
    """The random orthogonal rotation ``U = H D / √d′`` of Levy et al.

    Parameters
    ----------
    n_features : int
        Dimension d of the vectors to rotate; they are zero-padded to
        ``d′ = padded_dimension(d)``.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the random signs (never the data). ``None`` draws fresh OS
        entropy.

    Attributes
    ----------
    n_features : int
        The dimension d.
    n_padded : int
        The padded dimension d′.
    signs : ndarray of shape (n_padded,)
        The diagonal of ``D`` (±1.0).

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import RandomHadamardRotation
    >>> rot = RandomHadamardRotation(3, random_state=0)
    >>> X = np.array([[1.0, 2.0, 3.0]])
    >>> Y = rot.rotate(X)
    >>> Y.shape
    (1, 4)
    >>> bool(np.isclose(np.linalg.norm(Y), np.linalg.norm(X)))
    True
    >>> bool(np.allclose(rot.unrotate(Y), X))
    True
    """

    def __init__(self, n_features, random_state=None):
        self.n_features = int(n_features)
        self.n_padded = padded_dimension(self.n_features)
        rng = generator_from(make_seed_sequence(random_state))
        self.signs = rng.choice(np.array([-1.0, 1.0]), size=self.n_padded)

    def rotate_columns(self, Xt, *, inplace=False):
        """Rotate column vectors: ``U Xt`` for ``Xt`` of shape (d′, n).

        Parameters
        ----------
        Xt : ndarray of shape (n_padded, n)
            Padded vectors as columns.
        inplace : bool, default=False
            Overwrite ``Xt`` (C-contiguous float64) instead of copying.

        Returns
        -------
        Yt : ndarray of shape (n_padded, n)
            The rotated columns.
        """
        Yt = self._columns(Xt, inplace)
        self._flip_signs(Yt)
        self._hadamard(Yt)
        return Yt

    def unrotate_columns(self, Yt, *, inplace=False):
        """Inverse rotation ``Uᵀ Yt`` for ``Yt`` of shape (d′, n).

        Parameters
        ----------
        Yt : ndarray of shape (n_padded, n)
            Rotated vectors as columns.
        inplace : bool, default=False
            Overwrite ``Yt`` (C-contiguous float64) instead of copying.

        Returns
        -------
        Xt : ndarray of shape (n_padded, n)
            The vectors in the original basis (still padded).
        """
        Xt = self._columns(Yt, inplace)
        self._hadamard(Xt)
        self._flip_signs(Xt)
        return Xt

    def rotate(self, X):
        """Rotate row vectors.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Vectors in the original basis (not modified).

        Returns
        -------
        Y : ndarray of shape (n, n_padded)
            ``(U [X, 0]ᵀ)ᵀ``.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n, {self.n_features}), got {X.shape}."
            )
        Xt = np.zeros((self.n_padded, X.shape[0]))
        Xt[: self.n_features] = X.T
        return self.rotate_columns(Xt, inplace=True).T

    def unrotate(self, Y):
        """Inverse rotation of row vectors, dropping the padding.

        Parameters
        ----------
        Y : array-like of shape (n, n_padded)
            Rotated vectors (not modified).

        Returns
        -------
        X : ndarray of shape (n, n_features)
            The first ``n_features`` coordinates of ``Uᵀ y`` for every row.
        """
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[1] != self.n_padded:
            raise ValueError(f"Y must have shape (n, {self.n_padded}), got {Y.shape}.")
        Xt = self.unrotate_columns(np.array(Y.T, order="C"), inplace=True)
        return np.ascontiguousarray(Xt[: self.n_features].T)

    def _columns(self, A, inplace):
        """``A`` itself (``inplace``) or a C-contiguous float64 copy, with
        ``n_padded`` rows."""
        A = A if inplace else np.array(A, dtype=np.float64, order="C")
        self._check_rows(A)
        return A

    def _flip_signs(self, A):
        """``A ← D A`` (the random signs, one per row), in place."""
        A *= self.signs.reshape((-1,) + (1,) * (A.ndim - 1))

    def _hadamard(self, A):
        """``A ← H A/√d′`` (the orthonormal Walsh–Hadamard transform), in place."""
        fwht(A, inplace=True)
        A *= 1.0 / math.sqrt(self.n_padded)

    def _check_rows(self, A):
        if A.shape[0] != self.n_padded:
            raise ValueError(
                f"expected {self.n_padded} rows (the padded dimension), got "
                f"{A.shape[0]}."
            )
