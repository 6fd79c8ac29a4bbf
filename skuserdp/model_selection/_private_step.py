"""The private step of a searched estimator, and the rule for the others.

:class:`~skuserdp.model_selection.PrivateGridSearch` fits every candidate on
the private training users and publishes the winner. Its guarantee covers
what the *private step* (a skuserdp estimator) releases, at the budget the
search sets on it. Every other fitted part of the candidate is released too:
a preprocessing step fitted on the private rows is a non-private release
unless it learns nothing from them. So the search accepts (OUR RULE, issue
26; review findings 1-5 and 14):

* a skuserdp estimator with ``epsilon`` and ``delta`` parameters (the private
  step itself);
* a scikit-learn ``Pipeline`` whose last step is one of these and whose
  other steps learn nothing from the data (:func:`check_learns_nothing`):
  their fit only checks shapes, or sets a state that is fully declared --
  and whose *behaviour* depends on no data value either: no step may choose
  its output's format from the data (a ``ColumnTransformer`` needs
  ``sparse_threshold=0``), choose columns by a dtype inferred from the
  values (``make_column_selector`` only with ``pattern=``), warn on some
  data (``FunctionTransformer`` with ``inverse_func`` needs
  ``check_inverse=False``; a ``OneHotEncoder`` with ``drop``), or turn a
  finite row into NaN or infinity, which the private step would refuse
  (``PolynomialFeatures`` overflows; an ``OrdinalEncoder`` with
  ``unknown_value=np.nan``).

Any other estimator or step is refused by name, with the reason, before
anything is fitted. Other meta-estimators are refused: what they spend is
not known (e.g. ``TransformedTargetRegressor`` fits a clone of its regressor
and a transformer on ``y``; a bagging ensemble fits many clones), and a
``BudgetedEstimator``'s accountant would not see the selection.

The search runs the steps itself (:func:`fit_candidate`,
:func:`private_rows`): their errors are raised without data values (the
step is named), the declared categories of every fitted encoder are checked
to have survived the cast to the column's dtype, and the private step gets
``groups`` directly. The search also drops every warning that is not
skuserdp's own while the candidates are fitted (see ``PrivateGridSearch``).

A step's transform must also act on each row alone, as the private step's
sensitivity (one user changes only their rows) and the search's per-row
validation losses assume. That holds for every step below except
``FunctionTransformer``, whose ``func`` the search cannot inspect (nor a
``FrozenEstimator``'s transform): it must be row-wise (``np.log``,
``np.clip``; not ``X - X.mean(0)``) and map every finite row to a finite
row without warnings that depend on the values (clip first:
``np.log1p(np.clip(X, 0, None))``).
"""

import math
import numbers

from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import (
    Binarizer,
    FunctionTransformer,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
)

from ..base import UserLevelMixin
from ..utils._validation import _column_names, error_without_values
from ._budgeted import BudgetedEstimator

__all__ = ["private_step_prefix", "check_learns_nothing", "fitted_privacy_loss",
           "fit_candidate", "private_rows", "private_step_name"]

#: the way out named in every refusal
WAY_OUT = (
    "Allowed: steps that learn nothing from the data -- FunctionTransformer "
    "(with a row-wise func; check_inverse=False with an inverse_func), "
    "Normalizer, Binarizer, OneHotEncoder/OrdinalEncoder with declared "
    "categories=[...], SimpleImputer(strategy='constant', "
    "keep_empty_features=True) -- and ColumnTransformer (sparse_threshold=0), "
    "Pipeline or FeatureUnion of such. A step fitted on public data can be "
    "used frozen: sklearn.frozen.FrozenEstimator(step.fit(X_public)). For "
    "scaling, skuserdp's estimators clip and scale rows to their declared (or "
    "privately learned) bounds themselves.")


def _is_ours(estimator):
    # (a user's subclass of a skuserdp estimator is one too)
    return isinstance(estimator, UserLevelMixin)


def _refuse(name, step, reason):
    raise ValueError(
        f"PrivateGridSearch cannot fit the step {name!r} "
        f"({type(step).__name__}) on the private users: {reason} It would be "
        "published with the winner without any privacy, outside the search's "
        f"(epsilon, delta). {WAY_OUT}")


def _is_passthrough(step):
    return step is None or (isinstance(step, str) and step in ("passthrough",
                                                               "drop"))


def _is_nan(value):
    return isinstance(value, numbers.Real) and value != value  # (any float type)


def _not_finite(value):
    """Whether a number (any float type, NumPy's included) is NaN or ±inf."""
    return isinstance(value, numbers.Real) and not math.isfinite(value)


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
    if kind == "OneHotEncoder" and step.drop is not None:
        _refuse(name, step, f"with drop={step.drop!r} and "
                "handle_unknown='ignore', its transform warns when some row "
                "holds a value outside the declared categories (the warning "
                "reveals that such a user exists). Use drop=None.")
    if kind == "OrdinalEncoder":
        value = step.unknown_value
        if value is None or _not_finite(value):
            _refuse(name, step, f"unknown_value={value!r} encodes a value "
                    "outside the declared categories as NaN or infinity, which "
                    "the private step refuses: whether it refuses would reveal "
                    "that such a user exists. Use a number, e.g. "
                    "unknown_value=-1.")


def _check_function_transformer(name, step):
    if step.inverse_func is not None and step.check_inverse:
        _refuse(name, step, "with inverse_func and check_inverse=True its fit "
                "checks the inverse on a sample of the private rows and warns "
                "when it fails (the warning depends on those rows). Pass "
                "check_inverse=False.")


def _check_imputer(name, step):
    if step.strategy != "constant":
        _refuse(name, step, f"strategy={step.strategy!r} reads the "
                "statistics of the rows (a mean, a median, a most frequent "
                "value). Use strategy='constant' with a public fill_value.")
    if not step.keep_empty_features:
        _refuse(name, step, "with keep_empty_features=False it drops the "
                "columns in which every row is missing (read off the data, "
                "with a warning). Pass keep_empty_features=True.")
    if step.add_indicator:
        _refuse(name, step, "add_indicator=True adds an indicator for the "
                "columns that have missing values in the data. Leave it False.")
    fill = step.fill_value
    if _not_finite(fill):
        _refuse(name, step, f"fill_value={fill!r} is not finite: the private "
                "step would refuse the rows it fills, so whether it refuses "
                "would reveal a missing value. Use a finite public value.")


def _column_transformer_parts(name, step):
    if step.sparse_threshold != 0:
        _refuse(name, step, f"with sparse_threshold={step.sparse_threshold!r} "
                "its output is sparse when some part's output is (a "
                "FrozenEstimator or a FunctionTransformer may give sparse "
                "rows) and the density of the data is below the threshold: "
                "whether the fit succeeds (skuserdp's estimators refuse "
                "sparse rows) would be read off the data. Pass "
                "sparse_threshold=0 (dense output always).")
    parts = [(f"{part}", trans) for part, trans, _ in step.transformers]
    parts.append(("remainder", step.remainder))
    for part, _, columns in step.transformers:
        if isinstance(columns, make_column_selector):
            if columns.dtype_include is not None or columns.dtype_exclude is not None:
                _refuse(f"{name}__{part}", step, "make_column_selector with "
                        "dtype_include/dtype_exclude chooses the columns by "
                        "their dtypes, which pandas infers from the values "
                        "(one user's 2.5 turns an int column into a float "
                        "one). Name the columns, or select them by "
                        "make_column_selector(pattern=...).")
        elif callable(columns):
            _refuse(f"{name}__{part}", step, "its columns are chosen by a "
                    "callable, which may read the data. Name the columns, or "
                    "use sklearn.compose.make_column_selector(pattern=...).")
    return parts


def check_learns_nothing(step, name):
    """Refuse a preprocessing ``step`` whose fit learns from the data, or
    whose behaviour (an error, a warning, its output's format, a NaN from a
    finite row) depends on it.

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
    if _is_passthrough(step):
        return
    kind = type(step)
    if kind is FrozenEstimator or kind in (Normalizer, Binarizer):
        return
    if kind is FunctionTransformer:
        _check_function_transformer(name, step)
        return
    if kind in (OneHotEncoder, OrdinalEncoder):
        _check_encoder(name, step)
        return
    if kind is SimpleImputer:
        _check_imputer(name, step)
        return
    if kind is ColumnTransformer:
        parts = _column_transformer_parts(name, step)
    elif kind is Pipeline:
        parts = list(step.steps)
    elif kind is FeatureUnion:
        parts = list(step.transformer_list)
    else:
        if kind is PolynomialFeatures:
            reason = (
                "its products of finite values can overflow to infinity (and "
                "to NaN from degree 3, or after another step): the private "
                "step would then refuse the rows, and whether it refuses would "
                "reveal that some user has such values. Clip to the public box "
                "first and expand in one FunctionTransformer, e.g. "
                "FunctionTransformer(lambda X: PolynomialFeatures(2)"
                ".fit_transform(np.clip(X, lower, upper))).")
        elif _is_ours(step):
            reason = ("it is a private skuserdp estimator, and only the last "
                      "step of the pipeline gets the search's budget.")
        else:
            reason = ("its fit may learn from the rows (e.g. a StandardScaler "
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


def _fitted_encoders(step, name):
    """``(name, encoder)`` for every encoder fitted inside a fitted ``step``
    (not inside a FrozenEstimator: fitted on public data)."""
    kind = type(step)
    if kind in (OneHotEncoder, OrdinalEncoder):
        yield name, step
    elif kind is ColumnTransformer:
        for part, trans, _ in getattr(step, "transformers_", []):
            yield from _fitted_encoders(trans, f"{name}__{part}")
    elif kind is Pipeline:
        for part, trans in step.steps:
            yield from _fitted_encoders(trans, f"{name}__{part}")
    elif kind is FeatureUnion:
        for part, trans in step.transformer_list:
            yield from _fitted_encoders(trans, f"{name}__{part}")


def _same_category(declared, fitted):
    try:
        return bool(declared == fitted) or (_is_nan(declared) and _is_nan(fitted))
    except Exception:  # noqa: BLE001 -- (uncomparable: not the same)
        return False


def _check_declared_categories(step, name):
    """Refuse a fitted encoder whose declared categories did not survive the
    cast to the dtype of their column of X (scikit-learn casts them: 2.5 on
    an int column becomes 2). The result depends on the declared categories
    and the dtypes of X (its public schema) only, never on the values."""
    for part, encoder in _fitted_encoders(step, name):
        for i, (declared, fitted) in enumerate(zip(encoder.categories,
                                                   encoder.categories_)):
            declared = [d.item() if hasattr(d, "item") else d for d in declared]
            if len(declared) != len(fitted) or not all(
                    _same_category(d, f) for d, f in zip(declared, fitted)):
                raise ValueError(
                    f"The declared categories {declared!r} of column {i} of the "
                    f"step {part!r} ({type(encoder).__name__}) became "
                    f"{fitted.tolist()!r} when cast to that column's dtype "
                    f"({fitted.dtype}): declare them in the dtype of the column. "
                    "The dtypes of X are part of its public schema: set them "
                    "(e.g. X.astype(schema)) rather than letting pandas infer "
                    "them from the values.")


def _run_step(name, step, X, y, fit):
    """``step``'s (fit_)transform of ``X``; an error is raised again naming the
    step, without data values (``utils._validation.error_without_values``)
    and without the original in its chain."""
    try:
        if not fit:
            return step.transform(X)
        if hasattr(step, "fit_transform"):  # (as Pipeline does)
            return step.fit_transform(X, y)
        return step.fit(X, y).transform(X)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 -- any step's error, rewritten
        safe = error_without_values(exc, X, _column_names(X))
        error = type(safe)(f"The step {name!r} ({type(step).__name__}) of the "
                           f"searched pipeline failed on the private rows: {safe}")
    raise error  # (outside the except clause: no context to print)


def _through_head(pipeline, X, y, fit, prefix):
    """``X`` through the steps of ``pipeline`` before its last one."""
    for name, step in pipeline.steps[:-1]:
        if _is_passthrough(step):
            continue
        X = _run_step(prefix + name, step, X, y, fit)
        if fit:
            _check_declared_categories(step, prefix + name)
    return X


def _to_private_step(estimator, X, y, fit):
    """The private step of ``estimator`` (itself, or the last step of its
    nested Pipelines) and ``X`` through the steps before it (fitting them
    when ``fit``)."""
    node, prefix = estimator, ""
    while type(node) is Pipeline:
        X = _through_head(node, X, y, fit, prefix)
        name, node = node.steps[-1]
        prefix += f"{name}__"
    return node, X


def fit_candidate(estimator, X, y, groups):
    """Fit a candidate of the search: the steps before the private one (as
    ``Pipeline.fit`` does, each in turn, with errors that show no data value
    and a check of the encoders' declared categories), then the private step
    on the rows they give, with ``groups=``. A Pipeline's ``memory`` is not
    used (no transformed private rows are cached).

    Returns
    -------
    estimator : the fitted ``estimator``
    """
    node, X = _to_private_step(estimator, X, y, True)
    node.fit(X, y, groups=groups)
    return estimator


def private_rows(fitted, X):
    """The private step of the fitted candidate ``fitted`` and ``X`` as that
    step sees it (through the steps before it, as in :func:`fit_candidate`:
    errors show no data value)."""
    return _to_private_step(fitted, X, None, False)
