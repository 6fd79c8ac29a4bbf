"""Discovery of the public skuserdp estimators (for tests, the demo and docs)."""

import inspect
import pkgutil
from importlib import import_module
from pathlib import Path

from sklearn.base import BaseEstimator

__all__ = ["all_estimators"]

_SKIP = {"tests", "testing", "utils", "_demo", "__main__"}


def all_estimators():
    """List the public estimators of skuserdp.

    Returns
    -------
    estimators : list of (name, class) tuples
        Sorted by name; base classes (module :mod:`skuserdp.base` and the
        subpackages' ``_base`` modules) excluded.

    Examples
    --------
    >>> from skuserdp.utils.discovery import all_estimators
    >>> "ClipNoiseMeanEstimator" in dict(all_estimators())
    True
    """
    # the package's folder, walked without importing the package from here:
    # its modules are imported by name (reflection, not a dependency of utils)
    package = str(Path(__file__).resolve().parents[1])
    found = {}
    for info in pkgutil.walk_packages([package], prefix="skuserdp."):
        parts = info.name.split(".")
        if any(p in _SKIP for p in parts[1:]):
            continue
        module = import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, BaseEstimator)
                and not name.startswith("_")
                and cls.__module__.startswith("skuserdp.")
                and cls.__module__.rsplit(".", 1)[-1] not in ("base", "_base")
                # meta-estimators (they wrap another estimator) are checked
                # on their own, with an inner estimator
                and "estimator" not in inspect.signature(cls).parameters
            ):
                found[name] = cls
    return sorted(found.items())
