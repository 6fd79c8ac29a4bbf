"""Run every docstring example of the installed package as a doctest."""

import doctest
import pkgutil
import warnings
from importlib import import_module

import pytest

import skuserdp

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(skuserdp.__path__, prefix="skuserdp.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = doctest.testmod(
            module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
            verbose=False,
        )
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"


def test_every_public_function_and_class_has_an_example():
    missing = []
    for name in ["skuserdp.privacy", "skuserdp.mechanisms", "skuserdp.users",
                 "skuserdp.mean", "skuserdp.datasets", "skuserdp.testing",
                 "skuserdp.linear_model", "skuserdp.model_selection"]:
        module = import_module(name)
        for public in module.__all__:
            obj = getattr(module, public)
            if callable(obj) and "Examples" not in (obj.__doc__ or ""):
                missing.append(f"{name}.{public}")
    assert not missing, missing
