"""Losses of the user-level linear models, with their public constants.

Every loss is written for a parameter matrix ``W`` of shape
``(n_outputs, n_params)`` acting on augmented rows ``x̃`` (the features, plus
a constant ``1`` when an intercept is fitted). For Levy et al.'s analysis
([LSA+21]_ §2.1, docs: :ref:`papers-levy`) each
loss exposes, from *public* quantities only,

* ``gradient_bound(row_bound, target_bound, radius)``: G, a bound on the ℓ2
  (Frobenius) norm of the gradient of one row's loss for every ``W`` in the
  parameter ball ``‖W‖ ≤ radius`` and every row with ``‖x̃‖ ≤ row_bound``,
  ``|y| ≤ target_bound``. A user's average gradient obeys the same bound;
* ``smoothness(row_bound)``: H, a bound on the Hessian's operator norm.

The bounds:

================  ==============================  ======================
loss              G                               H
================  ==============================  ======================
squared error     ``b·(R·b + B_y)``               ``b²``
Huber (δ_h)       ``b·min(δ_h, R·b + B_y)``       ``b²``
logistic          ``b``                           ``b²/4``
multinomial       ``√2·b``                        ``b²/2``
================  ==============================  ======================

with ``b`` the row bound, ``R`` the parameter radius and ``B_y`` the target
bound. The multinomial H uses ``λ_max(diag(p) − ppᵀ) ≤ 1/2``.
"""

import math

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax

__all__ = ["LOSSES", "get_loss"]


class _Loss:
    """One loss: per-row values and gradients, and its public constants."""

    name = None
    #: ``True`` when y holds class codes (classification)
    is_classification = False

    def n_outputs(self, n_classes):
        return 1

    def residual_factor(self, Z, y):
        """``∂ℓ/∂z`` of every row, shape ``(n_rows, n_outputs)``."""
        raise NotImplementedError

    def row_losses(self, Z, y):
        raise NotImplementedError

    def loss_at_zero(self, target_bound, n_outputs):
        """Upper bound on every row's loss at the zero model (public)."""
        raise NotImplementedError


class SquaredError(_Loss):
    name = "squared_error"

    def residual_factor(self, Z, y):
        return Z - y[:, None]

    def row_losses(self, Z, y):
        return 0.5 * (Z[:, 0] - y) ** 2

    def loss_at_zero(self, target_bound, n_outputs):
        return 0.5 * target_bound ** 2

    def gradient_bound(self, row_bound, target_bound, radius):
        return row_bound * (radius * row_bound + target_bound)

    def smoothness(self, row_bound):
        return row_bound ** 2


class Huber(_Loss):
    name = "huber"

    def __init__(self, huber_delta):
        self.huber_delta = float(huber_delta)

    def residual_factor(self, Z, y):
        return np.clip(Z - y[:, None], -self.huber_delta, self.huber_delta)

    def row_losses(self, Z, y):
        r = np.abs(Z[:, 0] - y)
        h = self.huber_delta
        return np.where(r <= h, 0.5 * r * r, h * (r - 0.5 * h))

    def loss_at_zero(self, target_bound, n_outputs):
        h, t = self.huber_delta, float(target_bound)
        return 0.5 * t * t if t <= h else h * (t - 0.5 * h)

    def gradient_bound(self, row_bound, target_bound, radius):
        return row_bound * min(self.huber_delta, radius * row_bound + target_bound)

    def smoothness(self, row_bound):
        return row_bound ** 2


class Logistic(_Loss):
    """Binary logistic loss; ``y`` in {0, 1}."""

    name = "log_loss"
    is_classification = True

    def residual_factor(self, Z, y):
        return expit(Z) - y[:, None]

    def row_losses(self, Z, y):
        z = Z[:, 0]
        return -(y * log_expit(z) + (1 - y) * log_expit(-z))

    def loss_at_zero(self, target_bound, n_outputs):
        return math.log(2.0)

    def gradient_bound(self, row_bound, target_bound, radius):
        return row_bound

    def smoothness(self, row_bound):
        return row_bound ** 2 / 4.0


class Multinomial(_Loss):
    """Softmax cross-entropy; ``y`` holds class codes ``0..K-1``."""

    name = "multinomial"
    is_classification = True

    def n_outputs(self, n_classes):
        return n_classes

    def residual_factor(self, Z, y):
        P = softmax(Z, axis=1)
        P[np.arange(Z.shape[0]), y.astype(np.intp)] -= 1.0
        return P

    def row_losses(self, Z, y):
        return -log_softmax(Z, axis=1)[np.arange(Z.shape[0]), y.astype(np.intp)]

    def loss_at_zero(self, target_bound, n_outputs):
        return math.log(n_outputs)

    def gradient_bound(self, row_bound, target_bound, radius):
        return math.sqrt(2.0) * row_bound

    def smoothness(self, row_bound):
        return row_bound ** 2 / 2.0


LOSSES = ("squared_error", "huber", "log_loss")


def get_loss(name, *, n_classes=None, huber_delta=1.35):
    """The loss object for ``name`` (``"log_loss"`` with more than two
    classes is the multinomial loss)."""
    if name == "squared_error":
        return SquaredError()
    if name == "huber":
        return Huber(huber_delta)
    if name == "log_loss":
        return Multinomial() if n_classes is not None and n_classes > 2 else Logistic()
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}.")
