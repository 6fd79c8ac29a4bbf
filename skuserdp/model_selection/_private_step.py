"""The private step of a searched estimator, and the rule for the others.

:class:`~skuserdp.model_selection.PrivateGridSearch` fits every candidate on
the private training users and publishes the winner. Its guarantee covers
what the *private step* (a skuserdp estimator) releases, at the budget the
search sets on it. Every other fitted part of the candidate is released too:
a preprocessing step fitted on the private rows is a non-private release
unless it learns nothing from them. So the search accepts (OUR RULE, issue
26):

* a skuserdp estimator with ``epsilon`` and ``delta`` parameters (the private
  step itself);
* a scikit-learn ``Pipeline`` whose last step is one of these and whose
  other steps learn nothing from the data (:func:`check_learns_nothing`):
  their fit only checks shapes, or sets a state that is fully declared.

Any other estimator or step is refused by name, with the reason, before
anything is fitted. Other meta-estimators are refused: what they spend is
not known (e.g. ``TransformedTargetRegressor`` fits a clone of its regressor
and a transformer on ``y``; a bagging ensemble fits many clones).

A step's transform must also act on each row alone, as the private step's
sensitivity (one user changes only their rows) and the search's per-row
validation losses assume. That holds for every step below except
``FunctionTransformer``, whose ``func`` the search cannot inspect: it must
be row-wise (``np.log``, ``np.clip``; not ``X - X.mean(0)``).
"""

from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import (
    Binarizer,
    FunctionTransformer,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
)

from ._budgeted import BudgetedEstimator

__all__ = ["private_step_prefix", "check_learns_nothing", "fitted_privacy_loss",
           "groups_fit_params", "private_step_name", "mean_step_and_rows"]

#: steps whose fit reads nothing but the shape (and dtypes) of X
STATELESS_STEPS = (FunctionTransformer, Normalizer, Binarizer, PolynomialFeatures)
#: the way out named in every refusal
WAY_OUT = (
    "Allowed: steps that learn nothing from the data -- FunctionTransformer "
    "(with a row-wise func), Normalizer, Binarizer, PolynomialFeatures, "
    "OneHotEncoder/OrdinalEncoder with declared categories=[...] -- and "
    "ColumnTransformer, Pipeline or FeatureUnion of such. A step fitted on "
    "public data can be used frozen: "
    "sklearn.frozen.FrozenEstimator(step.fit(X_public)). For scaling, "
    "skuserdp's estimators clip and scale rows to their declared (or "
    "privately learned) bounds themselves.")


def _is_ours(estimator):
    return type(estimator).__module__.split(".")[0] == "skuserdp"


def _refuse(name, step, reason):
    raise ValueError(
        f"PrivateGridSearch cannot fit the step {name!r} "
        f"({type(step).__name__}) on the private users: {reason} It would be "
        "published with the winner without any privacy, outside the search's "
        f"(epsilon, delta). {WAY_OUT}")


def _check_encoder(name, step):
    kind = type(step).__name__
    if isinstance(step.categories, str):  # "auto"
        _refuse(name, step, f"with categories={step.categories!r} a {kind} "
                "learns the categories present in the data (a rare value "
                "reveals its user). Declare them: categories=[[...], ...].")
    for param in ("min_frequency", "max_categories"):
        if getattr(step, param) is not None:
            _refuse(name, step, f"{param}={getattr(step, param)!r} counts the "
                    "categories in the data. Leave it None.")
    wanted = "ignore" if kind == "OneHotEncoder" else "use_encoded_value"
    if step.handle_unknown != wanted:
        _refuse(name, step, f"with handle_unknown={step.handle_unknown!r}, "
                "whether a value outside the declared categories occurs is read "
                f"off the data (an error or a warning). Use "
                f"handle_unknown={wanted!r}.")
    if kind == "OneHotEncoder" and step.sparse_output:
        _refuse(name, step, "sparse_output=True gives sparse rows, which "
                "skuserdp's estimators refuse (and within a ColumnTransformer "
                "whether its output is sparse is read off the data). Use "
                "sparse_output=False.")


def _column_transformer_parts(step):
    parts = [(f"{name}", trans) for name, trans, _ in step.transformers]
    parts.append(("remainder", step.remainder))
    for name, _, columns in step.transformers:
        if callable(columns) and not isinstance(columns, make_column_selector):
            _refuse(name, step, "its columns are chosen by a callable, which "
                    "may read the data. Name the columns, or use "
                    "sklearn.compose.make_column_selector (names and dtypes).")
    return parts


def check_learns_nothing(step, name):
    """Refuse a preprocessing ``step`` whose fit learns from the data.

    Parameters
    ----------
    step : estimator, ``"passthrough"``, ``"drop"`` or None
        A step before the private one (or a part of such a step).
    name : str
        Its name, for the message.

    Raises
    ------
    ValueError
        Naming the step, the reason and what is allowed.
    """
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return
    kind = type(step)
    if kind is FrozenEstimator or kind in STATELESS_STEPS:
        return
    if kind in (OneHotEncoder, OrdinalEncoder):
        _check_encoder(name, step)
        return
    if kind is ColumnTransformer:
        parts = _column_transformer_parts(step)
    elif kind is Pipeline:
        parts = list(step.steps)
    elif kind is FeatureUnion:
        parts = list(step.transformer_list)
    else:
        reason = ("it is a private skuserdp estimator, and only the last step "
                  "of the pipeline gets the search's budget."
                  if _is_ours(step) else
                  "its fit may learn from the rows (e.g. a StandardScaler "
                  "reads their means and variances), and the search cannot "
                  "tell what it learns.")
        _refuse(name, step, reason)
    for part_name, part in parts:
        check_learns_nothing(part, f"{name}__{part_name}")


def private_step_prefix(estimator):
    """The parameter prefix of the private step of ``estimator``.

    ``""`` for a skuserdp estimator with ``epsilon``/``delta`` parameters,
    ``"userdpsgdregressor__"`` for a Pipeline ending in one (nested
    Pipelines too)
    (the search sets ``prefix + "epsilon"`` and ``prefix + "delta"``).
    The other steps of a Pipeline are checked by
    :func:`check_learns_nothing`.

    Raises
    ------
    TypeError
        When no private step is found, or a meta-estimator whose spend is
        not known is in the way.
    ValueError
        From :func:`check_learns_nothing`.
    """
    params = estimator.get_params(deep=False)
    if _is_ours(estimator) and "epsilon" in params and "delta" in params:
        return ""
    if type(estimator) is Pipeline:
        *steps, (last_name, last) = estimator.steps
        for name, step in steps:
            check_learns_nothing(step, name)
        return f"{last_name}__" + private_step_prefix(last)
    if isinstance(estimator, BudgetedEstimator):
        raise TypeError(
            f"PrivateGridSearch cannot search a {type(estimator).__name__}: its "
            "accountant would be charged the candidates' fits but not the "
            "selection on the validation users, which reads them too (it would "
            "under-charge the search). Search the estimator itself and pass "
            "the accountant to the search: PrivateGridSearch(estimator, ..., "
            "accountant=accountant) charges the search's whole spend.")
    if _is_ours(estimator):
        raise TypeError(f"{type(estimator).__name__} has no epsilon/delta "
                        "parameters: PrivateGridSearch sets the per-fit budget "
                        "there.")
    raise TypeError(
        f"{type(estimator).__name__} has no epsilon/delta parameters: only "
        "skuserdp estimators can be searched, alone or in a Pipeline (as its "
        "last step, after steps that learn nothing from the data). Other "
        "meta-estimators are refused: the search "
        "cannot tell what they spend or learn (they may fit their estimator "
        "several times, or fit other parts on the data).")


def private_step_name(estimator):
    """The class name of the private step (for messages and labels)."""
    prefix = private_step_prefix(estimator)
    step = estimator.get_params()[prefix[:-2]] if prefix else estimator
    return type(step).__name__


def fitted_privacy_loss(fitted):
    """The ``privacy_loss_`` of a fitted candidate: its own, or (a Pipeline)
    its last step's."""
    while not hasattr(fitted, "privacy_loss_"):
        if type(fitted) is not Pipeline:
            raise TypeError(
                f"{type(fitted).__name__} records no privacy_loss_ after fit: "
                "only skuserdp estimators can be searched.")
        fitted = fitted.steps[-1][1]
    return fitted.privacy_loss_


def groups_fit_params(estimator, groups, routing):
    """The keyword arguments that send ``groups`` to the private step's fit.

    With metadata routing on, ``groups=`` (skuserdp estimators request it by
    default); off, a Pipeline takes ``laststep__groups=``.
    """
    if routing or type(estimator) is not Pipeline:
        return {"groups": groups}
    name, last = estimator.steps[-1]
    return {f"{name}__{key}": value
            for key, value in groups_fit_params(last, groups, routing).items()}


def mean_step_and_rows(fitted, X):
    """The fitted mean estimator inside ``fitted`` and the rows it sees."""
    while not hasattr(fitted, "mean_"):
        if type(fitted) is Pipeline:
            if len(fitted) > 1:
                X = fitted[:-1].transform(X)
            fitted = fitted[-1]
        else:  # a skuserdp meta-estimator: its fitted estimator
            fitted = fitted.estimator_
    return fitted, X
