"""Discovery of the public skuserdp estimators (for tests, the demo and docs)."""

import inspect
import pkgutil
from importlib import import_module

from sklearn.base import BaseEstimator

__all__ = ["all_estimators"]

_SKIP = {"tests", "testing", "utils", "_demo", "__main__"}


def all_estimators():
    """List the public estimators of skuserdp.

    Returns
    -------
    estimators : list of (name, class) tuples
        Sorted by name; base classes (module :mod:`skuserdp.base`) excluded.

    Examples
    --------
    >>> from skuserdp.utils.discovery import all_estimators
    >>> "ClipNoiseMeanEstimator" in dict(all_estimators())
    True
    """
    import skuserdp

    found = {}
    for info in pkgutil.walk_packages(skuserdp.__path__, prefix="skuserdp."):
        parts = info.name.split(".")
        if any(p in _SKIP for p in parts[1:]):
            continue
        module = import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, BaseEstimator)
                and not name.startswith("_")
                and cls.__module__.startswith("skuserdp.")
                and cls.__module__ != "skuserdp.base"
                # meta-estimators (they wrap another estimator) are checked
                # on their own, with an inner estimator
                and "estimator" not in inspect.signature(cls).parameters
            ):
                found[name] = cls
    return sorted(found.items())
