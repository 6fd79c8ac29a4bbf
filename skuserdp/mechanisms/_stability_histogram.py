"""Argmax of a stability-based histogram on an unbounded grid (approximate DP).

The (ε, δ)-DP coarse step of Agarwal et al. [AKM+24]_ (Algorithm 1 with
δ > 0; Lemma 2.8; docs: :ref:`papers-akmmsu`): values are
binned at a public width on the whole real line (bucket ``⌊x/w⌋``, no range
bound needed), exact discrete Laplace noise is added to the counts of the
*occupied* buckets only, buckets whose noisy count is below an integer
threshold are suppressed, and the midpoint of the kept bucket with the
largest noisy count is released (None if none is kept). The scale and
threshold, and why this is (ε, δ)-DP under replace-one neighbours, are in
:mod:`skuserdp.privacy._stability`. Ties go to the lowest bucket
(post-processing).
"""

import numpy as np

from ..privacy import stability_histogram_privacy, stability_histogram_threshold
from ..utils._random import generator_from, make_seed_sequence
from ..utils._validation import check_positive_scalar
from ._samplers import sample_discrete_laplace

__all__ = ["stability_histogram_argmax"]

# Bucket indices are clipped to +-2^62 (a per-user map: privacy unaffected).
_MAX_INDEX = float(2**62)


def stability_histogram_argmax(values, *, epsilon, delta, width, random_state=None):
    """Midpoint of the heaviest kept bucket of an (ε, δ)-DP stability histogram.

    Parameters
    ----------
    values : array-like of shape (n,) or (k, n)
        One value per user; with two dimensions, ``k`` independent instances
        (e.g. coordinates), each (ε, δ)-DP.
    epsilon : float
        ε of each instance, ``> 0``.
    delta : float
        δ of each instance, in ``(0, 1)``.
    width : float
        Public bucket width w; buckets ``[jw, (j + 1)w)`` for all integers j.
    random_state : int, RandomState, SeedSequence or None, default=None
        Source of the noise.

    Returns
    -------
    midpoints : float or ndarray of shape (k,)
        ``(j + 1/2)·w`` of the chosen bucket, NaN where no bucket was kept.
    loss : ApproxDP
        The guarantee of each instance.

    Examples
    --------
    >>> import numpy as np
    >>> from skuserdp.mechanisms import stability_histogram_argmax
    >>> x = np.random.default_rng(0).normal(1e6, 0.1, size=500)
    >>> mid, loss = stability_histogram_argmax(x, epsilon=1.0, delta=1e-6,
    ...                                        width=0.5, random_state=0)
    >>> bool(abs(mid - 1e6) < 0.75), loss.epsilon
    (True, 1.0)
    """
    V = np.asarray(values, dtype=np.float64)
    single = V.ndim == 1
    V = np.atleast_2d(V)
    if not np.isfinite(V).all():
        raise ValueError("values must be finite.")
    w = check_positive_scalar(width, "width")
    scale, threshold = stability_histogram_threshold(epsilon, delta)
    rng = generator_from(make_seed_sequence(random_state))
    idx = np.clip(np.floor(V / w), -_MAX_INDEX, _MAX_INDEX).astype(np.int64)
    out = np.full(V.shape[0], np.nan)
    for row in range(V.shape[0]):
        buckets, counts = np.unique(idx[row], return_counts=True)
        noisy = counts + sample_discrete_laplace(scale, buckets.size, rng)
        kept = noisy >= threshold
        if kept.any():
            best = np.flatnonzero(kept)[np.argmax(noisy[kept])]
            out[row] = (buckets[best] + 0.5) * w
    loss = stability_histogram_privacy(scale, threshold)
    return (float(out[0]) if single else out), loss
