"""User-level private model selection.

Levy et al.'s Algorithm 5 ("Learning with User-Level Privacy", NeurIPS 2021,
Appendix A; :ref:`papers-levy-selection`): private
selection among K candidates with Liu & Talwar's random stopping, each
candidate's loss released by the one-dimensional WinsorizedMean at ε/3.
Pure ε-DP for the uncapped loop; the loop is capped at a cost of a tiny,
reported δ.

:class:`BudgetedEstimator` charges every fit of an estimator to one
:class:`~skuserdp.privacy.BudgetAccountant`, and :class:`PrivateGridSearch`
chooses hyper-parameters privately within one budget: by a K-way split, or
by Papernot & Steinke's repeat-and-select (``tuning="papernot_steinke"``,
:class:`RandomRunsResult`).
"""

from ._budgeted import BudgetedEstimator
from ._search import PrivateGridSearch
from ._random_runs import RandomRunsResult
from ._private_selection import (
    SelectionResult,
    Theorem6Bound,
    private_selection,
    select_model_privately,
    theorem6_error_bound,
)

__all__ = [
    "BudgetedEstimator",
    "PrivateGridSearch",
    "private_selection",
    "select_model_privately",
    "theorem6_error_bound",
    "SelectionResult",
    "RandomRunsResult",
    "Theorem6Bound",
]
