"""Privacy-loss values: pure ε-DP, approximate (ε, δ)-DP and ρ-zCDP.

These small immutable records are the currency of the privacy core. They hold
no arithmetic beyond validation: composition lives in
:mod:`skuserdp.privacy._composition` and conversion in
:mod:`skuserdp.privacy._conversion`.

In skuserdp every loss is with respect to *user-level* neighbouring datasets:
two datasets are neighbours when they differ in the entire data of one user
(replace-one; the number of users is public).
"""

import math
from dataclasses import dataclass

__all__ = ["PureDP", "ApproxDP", "ZCDP"]


def _check_nonneg_finite(name, value):
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    return value


def _check_positive_finite(name, value):
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


def _check_count(name, value):
    """``int(value)``, refused below 1."""
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}.")
    return value


def _check_open_unit(name, value):
    """``value`` as given, refused outside ``(0, 1)``."""
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}.")
    return value


def _check_delta_target(delta):
    """A target δ as a float, refused outside ``[0, 1)``."""
    delta = float(delta)
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    return delta


@dataclass(frozen=True)
class PureDP:
    """Pure ε-differential privacy.

    Parameters
    ----------
    epsilon : float
        Privacy-loss bound, ``>= 0``.

    Examples
    --------
    >>> from skuserdp.privacy import PureDP
    >>> PureDP(0.5)
    PureDP(epsilon=0.5)
    """

    epsilon: float

    def __post_init__(self):
        eps = _check_nonneg_finite("epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", eps)


@dataclass(frozen=True)
class ApproxDP:
    """Approximate (ε, δ)-differential privacy.

    Parameters
    ----------
    epsilon : float
        Privacy-loss bound, ``>= 0``.
    delta : float
        Failure probability in ``[0, 1]``.

    Examples
    --------
    >>> from skuserdp.privacy import ApproxDP
    >>> ApproxDP(1.0, 1e-6)
    ApproxDP(epsilon=1.0, delta=1e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self):
        eps = _check_nonneg_finite("epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        delta = _check_nonneg_finite("delta", self.delta)
        if delta > 1:
            raise ValueError(f"delta must be in [0, 1], got {delta!r}.")
        object.__setattr__(self, "delta", delta)


@dataclass(frozen=True)
class ZCDP:
    """ρ-zero-concentrated differential privacy (Bun & Steinke, 2016).

    Parameters
    ----------
    rho : float
        zCDP parameter, ``>= 0``.

    Examples
    --------
    >>> from skuserdp.privacy import ZCDP
    >>> ZCDP(0.125)
    ZCDP(rho=0.125)
    """

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", _check_nonneg_finite("rho", self.rho))
