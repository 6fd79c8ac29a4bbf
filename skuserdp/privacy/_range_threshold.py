"""Threshold of a noisy histogram whose top (or bottom) passing cell is released.

A range finder in the style of Google's ApproxBounds (not from the papers;
the spec's §3.5) adds noise to *every* cell of a fixed public grid of
``C`` cells and keeps the cells whose noisy count reaches a threshold ``T``;
the outermost kept cells give the range. The threshold does not touch
privacy (every cell is noised; the release is the plain Gaussian or Laplace
mechanism on the whole count vector), it sets accuracy: ``T`` is chosen so
that, with probability at least ``1 − β``, *no* empty cell is kept (a kept
empty cell far from the data would make the range, and every later noise
scale, absurdly wide). With noise scale ``s`` per cell:

* Gaussian (σ = s): ``T = ⌈σ·Φ⁻¹(1 − β/C)⌉`` (union bound over the ``C``
  cells; the discrete Gaussian is sub-Gaussian with parameter σ, CKS 2020);
* Laplace (scale b = s): ApproxBounds' closed form
  ``T = ⌈−b·ln(2 − 2(1 − β)^(1/C))⌉``: an empty cell stays below ``T``
  with probability ``1 − ½e^(−T/b)`` and all ``C`` of them with probability
  ``(1 − ½e^(−T/b))^C = 1 − β``. The scale must be the replace-one one
  (``2k/ε`` for ``k`` histograms released together, not add/remove's
  ``k/ε``).

Both are computed from public values only (the noise scale, the grid size
and β).
"""

import math

from scipy.special import ndtri

from ._budget import _check_count, _check_open_unit
from ._budget import _check_positive_finite as _positive

__all__ = ["histogram_pass_threshold"]


def histogram_pass_threshold(noise_scale, n_cells, beta, *, kind, n_summed=1):
    """Integer count a noisy cell must reach to be kept (top-bin rule).

    With ``n_summed = k > 1`` the "cell" is a sum of ``k`` noisy cells
    (e.g. the two cells of one magnitude on either side of the origin): its
    Gaussian noise has σ√k, so ``T = ⌈σ√k·Φ⁻¹(1 − β/C)⌉``; a sum of ``k``
    Laplace noises reaches ``t`` only if one of them reaches ``t/k``, so
    ``T = k·T₁`` with ``T₁`` the Laplace threshold for ``k·C`` cells.

    Parameters
    ----------
    noise_scale : float
        σ of the Gaussian or scale b of the Laplace noise of one cell, ``> 0``.
    n_cells : int
        Number of noisy cells in the release, ``>= 1``.
    beta : float
        Probability, in ``(0, 1)``, that some empty cell is kept.
    kind : {"gaussian", "laplace"}
        The noise.
    n_summed : int, default=1
        Number of noisy cells summed into each tested count.

    Returns
    -------
    threshold : int
        ``⌈σ·Φ⁻¹(1 − β/C)⌉`` or ``⌈−b·ln(2 − 2(1 − β)^(1/C))⌉`` (module
        docstring), at least 1.

    Examples
    --------
    >>> from skuserdp.privacy import histogram_pass_threshold
    >>> histogram_pass_threshold(10.0, 1000, 0.01, kind="gaussian")
    43
    >>> histogram_pass_threshold(2.0, 4093, 1e-9, kind="laplace")
    57
    >>> histogram_pass_threshold(10.0, 1000, 0.01, kind="gaussian", n_summed=2)
    61
    """
    s = _positive("noise_scale", noise_scale)
    c = _check_count("n_cells", n_cells)
    k = _check_count("n_summed", n_summed)
    beta = float(_check_open_unit("beta", beta))
    if kind == "gaussian":
        t = s * math.sqrt(k) * float(-ndtri(beta / c))
    elif kind == "laplace":
        # 2 - 2(1 - beta)^(1/(kC)), without cancellation
        t = -k * s * math.log(-2.0 * math.expm1(math.log1p(-beta) / (k * c)))
    else:
        raise ValueError(f"kind must be 'gaussian' or 'laplace', got {kind!r}.")
    return max(1, math.ceil(t))
