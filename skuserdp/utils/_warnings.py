"""Warnings that point at the user's line.

A warning from inside a fit is only useful if it names the line of the
user's code that called ``fit`` (``GridSearchCV.fit``, ``Pipeline.fit``,
...). A fixed ``stacklevel`` gets that wrong as soon as the call goes through
scikit-learn's fit wrapper, a meta-estimator or a helper; this module walks
the stack instead, past every frame of skuserdp, scikit-learn and joblib.
"""

import os
import sys
import warnings

import joblib
import sklearn

__all__ = ["warn_at_caller"]

#: folders whose frames are never "the caller"
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep
    for module in (sys.modules[__name__.split(".")[0]], sklearn, joblib)
)


def warn_at_caller(message, category):
    """``warnings.warn(message, category)`` attributed to the first frame of
    the call stack outside skuserdp, scikit-learn and joblib: the user's
    line (or a test's)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(
            frame.f_code.co_filename).startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
