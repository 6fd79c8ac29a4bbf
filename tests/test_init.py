"""The top-level namespace: every public estimator, one object per name."""

import importlib

import skuserdp
from skuserdp.utils.discovery import all_estimators


def test_every_public_estimator_is_exported_at_the_top_level():
    names = {name for name, _ in all_estimators()}
    assert names <= set(skuserdp.__all__)
    for name, cls in all_estimators():
        assert getattr(skuserdp, name) is cls
    for name in ("BudgetedEstimator", "PrivateGridSearch", "BudgetAccountant",
                 "make_user_samples", "user_means", "AccuracyWarning"):
        assert name in skuserdp.__all__


def test_top_level_names_are_the_submodules_objects():
    homes = ("mean", "linear_model", "model_selection", "privacy", "datasets",
             "users", "exceptions")
    for name in skuserdp.__all__:
        if name == "__version__":
            continue
        obj = getattr(skuserdp, name)
        owners = [h for h in homes
                  if getattr(importlib.import_module(f"skuserdp.{h}"), name, None)
                  is obj]
        assert owners, f"{name} is not the object of any public submodule"


def test_the_api_page_says_what_the_top_level_exports():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "api.rst").read_text()
    assert "Every public estimator" in text
    for name in skuserdp.__all__:
        if name != "__version__":
            assert name in text, name


#: estimators whose default delta differs from 1e-6, each documented in
#: docs/api.rst and in its own docstring
DEFAULT_DELTA_EXCEPTIONS = {"WinsorizedMeanEstimator": 0.0}


def test_default_budget_is_the_same_everywhere_or_documented():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "api.rst").read_text()
    for name, cls in all_estimators():
        params = cls().get_params()
        assert params["epsilon"] == 1.0, name
        expected = DEFAULT_DELTA_EXCEPTIONS.get(name, 1e-6)
        assert params["delta"] == expected, name
        if name in DEFAULT_DELTA_EXCEPTIONS:
            assert f"delta : float, default={expected}" in cls.__doc__
            assert f"{name}`, whose ``delta={expected}``" in text
