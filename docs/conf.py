"""Sphinx configuration for the skuserdp documentation.

Build (must stay warning-free)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The build machine and CI have no internet access (package registries only), so
nothing in this file may fetch from the network: intersphinx is enabled but its
mapping is empty, and references to external objects (``joblib``, ``numpy``,
``scipy``, ``sklearn``) stay plain text because ``nitpicky`` is off.
"""

import inspect
import re

import skuserdp

# -- Project -----------------------------------------------------------------

project = "skuserdp"
author = "The skuserdp developers"
copyright = "The skuserdp developers"
version = skuserdp.__version__
release = skuserdp.__version__

# -- General -----------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "matplotlib.sphinxext.plot_directive",
]

# The gallery (gallery.rst): every plot's code runs at build time and is
# shown above its figure.
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]
plot_rcparams = {"figure.figsize": (7.0, 4.2)}

root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Unresolvable cross-references (e.g. :obj:`joblib.parallel_backend` or
# :class:`numpy.random.SeedSequence` with no intersphinx inventory) are
# rendered as plain literals instead of warnings. This is the Sphinx default;
# it is spelled out because the -W build relies on it.
nitpicky = False

# -- Intersphinx ---------------------------------------------------------------

# Left empty on purpose: the build has no internet access and intersphinx would
# warn (and fail the -W build) when it cannot download the inventories. With
# network access, the mapping would be:
#
#   "python": ("https://docs.python.org/3", None),
#   "numpy": ("https://numpy.org/doc/stable", None),
#   "scipy": ("https://docs.scipy.org/doc/scipy", None),
#   "sklearn": ("https://scikit-learn.org/stable", None),
#   "joblib": ("https://joblib.readthedocs.io/en/stable", None),
intersphinx_mapping = {}

# -- Autodoc / autosummary -----------------------------------------------------

# Stub pages for every object of api.rst are written to docs/generated/
# (git-ignored); see the ``:toctree: generated/`` options in api.rst.
autosummary_generate = True
autodoc_typehints = "none"

# -- numpydoc ------------------------------------------------------------------

# Class pages list their methods through autodoc (see
# _templates/autosummary/class.rst), not through numpydoc's member tables.
numpydoc_show_class_members = False

# Validate every docstring that the API reference renders, with all checks
# except the following, which are style choices of this codebase rather than
# defects:
#
# * ES01 (no extended summary): short helpers such as ``laplace_scale`` or
#   ``fit`` are fully described by their summary line and sections.
# * SA01 (no "See Also" section): cross-links are added where they help, not
#   on every object.
# * RT02 (Returns line should hold only the type): skuserdp names its return
#   values (``self : ClipNoiseMeanEstimator``, ``mean : ndarray``, ``loss :
#   PureDP or ZCDP``), as the numpydoc standard and scikit-learn allow; RT02
#   rejects that form even for a single value.
# * EX01 (no "Examples" section): methods (``fit``, ``score``, ``sample``),
#   result records and warning classes are exercised by the examples of the
#   estimator or function that produces them. Every public function and
#   estimator class *does* carry an Examples section (checked when this list
#   was written); keep it that way for new estimators.
numpydoc_validation_checks = {"all", "ES01", "SA01", "RT02", "EX01"}

# Objects that are not validated at all:
#
# * ``get_params`` and ``set_params``, inherited from scikit-learn (their
#   docstrings are scikit-learn's, not ours; the metadata-routing methods are
#   not rendered at all, see ``_skip_member`` below);
# * module-level constants (numpydoc validation is meant for callables and
#   classes: a constant has at most a ``#:`` doc comment).
numpydoc_validation_exclude = {
    r"\.get_params$",
    r"\.set_params$",
    r"^skuserdp\.privacy\.NORMS$",
    r"^skuserdp\.privacy\.LATTICE_ROUNDING_TAU$",
}

# Per-check overrides: a check is skipped for a docstring that matches one of
# its patterns (numpydoc searches the whole cleaned docstring).
#
# 1. Mathematical notation. Sentences in this codebase legitimately start with
#    a symbol (``ρ-zCDP for ...``, ``σ = Δ₂/√(2ρ)``, ``ℓ2 sensitivity``,
#    ``δ from Corollary 13``, ``zCDP parameter``), which SS02, PR08 and RT04
#    read as "does not start with a capital letter". The patterns only match
#    a summary / description that starts with a non-ASCII symbol or "zCDP",
#    so ordinary lower-case starts are still reported. SS02 also accepts the
#    numpydoc property style ``bool : Whether ...``.
_MATH_START = r"(?:[^\x00-\x7f]|zCDP\b)"
_OVERRIDES = {
    "SS02": [r"\A" + _MATH_START, r"\A\w+ : "],
    "PR08": [r"(?m)^\w+ : .*\n    " + _MATH_START],
    "RT04": [r"(?m)^\w+ : .*\n    " + _MATH_START],
}

# 2. Known docstring problems in the package, reported to the maintainers and
#    to be fixed there. Each entry silences ONE check for ONE docstring,
#    matched by the start of its summary line; delete the entry once the
#    docstring is fixed (a stale entry is harmless: it matches nothing).
_KNOWN_PROBLEMS = {
    # Return value without a description.
    "RT03": [
        "Privacy map of (discrete) Laplace noise",  # privacy.laplace_privacy
        "Laplace scale b = ",  # privacy.laplace_scale
        "Privacy map of (discrete) Gaussian noise",  # privacy.gaussian_privacy
        "σ = Δ₂/√(2ρ): the Gaussian noise",  # privacy.gaussian_sigma_for_rho
        "Smallest σ for which the continuous Gaussian",  # analytic_gaussian_sigma
        "Classical Gaussian mechanism σ",  # privacy.classical_gaussian_sigma
        "Gaussian noise σ for a target",  # privacy.gaussian_sigma
        "Sensitivity ``2R`` of a sum",  # privacy.replace_one_sum_sensitivity
        "Sensitivity ``2R/n`` of the mean",  # privacy.replace_one_mean_sensitivity
        "Add integer noise to an integer statistic",  # mechanisms.add_noise
        "Exact column sums of int64",  # mechanisms.exact_sum
        "Sample the continuous Gaussian",  # mechanisms.sample_gaussian
        "Sample the continuous Laplace",  # mechanisms.sample_laplace
        "Neighbouring datasets that are the worst case",  # testing.worst_case_...
    ],
    # Parameters not documented: public methods of the noise classes have a
    # one-line docstring only; the result records document their fields under
    # "Attributes" but not the constructor parameters.
    "PR01": [
        "Pure DP for an integer statistic",  # DiscreteLaplaceNoise.privacy
        "ρ-zCDP for an integer statistic",  # DiscreteGaussianNoise.privacy
        "Draw exact samples",  # Discrete{Laplace,Gaussian}Noise.sample
        "Result of :func:`user_means`",  # users.UserMeans
        "Outcome of an empirical privacy audit",  # testing.AuditResult
    ],
    # No Returns section (same noise-class methods).
    "RT01": [
        "Pure DP for an integer statistic",
        "ρ-zCDP for an integer statistic",
        "Draw exact samples",
    ],
}
for _check, _summaries in _KNOWN_PROBLEMS.items():
    _OVERRIDES.setdefault(_check, []).extend(
        r"\A" + re.escape(_summary) for _summary in _summaries
    )
numpydoc_validation_overrides = _OVERRIDES


def _join_raw_continuations(app, what, name, obj, options, lines):
    r"""Join parameter type lines split with a backslash in a raw docstring.

    scikit-learn style splits a long parameter type line with a trailing
    backslash (``distribution : {...}, \`` + newline + ``default=...``). That
    only works in a non-raw docstring, where Python removes the backslash and
    the newline. In a raw docstring (``r\"\"\"...``) both survive, and the
    continuation line is parsed as a block quote (a docutils warning that fails
    the -W build). Known case: ``skuserdp.datasets.make_user_samples``
    (``skuserdp/datasets/_synthetic.py``, parameters ``distribution`` and
    ``random_state``). This hook restores what a non-raw string would give;
    it changes nothing once the docstring is fixed.
    """
    header = re.compile(r"^\s*\*?\*?\w+\*?\*? : .*\\$")
    i = 0
    while i < len(lines) - 1:
        if header.match(lines[i]):
            lines[i] = lines[i][:-1].rstrip() + " " + lines.pop(i + 1).strip()
        else:
            i += 1


# scikit-learn's metadata-routing methods. Their docstrings refer to labels and
# glossary terms of the scikit-learn documentation (``:ref:`metadata_routing```,
# ``:term:`meta-estimator```), which cannot resolve offline. skuserdp
# estimators request ``groups`` for ``fit`` and ``score`` by default, which the
# quick start explains; these methods are not needed to use them.
_SKIPPED_METHODS = re.compile(r"^(get_metadata_routing|set_\w+_request)$")


def _skip_member(app, what, name, obj, skip, options):
    """Skip scikit-learn's routing methods and namedtuple field accessors."""
    if what == "class" and _SKIPPED_METHODS.match(name):
        return True
    # A NamedTuple's fields are accessors documented "Alias for field number
    # k"; the record's "Attributes" section documents them already.
    if type(obj).__name__ == "_tuplegetter":
        return True
    return None


def _drop_type_docstring(app, what, name, obj, options, lines):
    """Do not show a builtin type's docstring as the doc of a constant.

    A module-level constant without a ``#:`` doc comment (e.g.
    ``skuserdp.privacy.NORMS``, a tuple) is otherwise documented with the
    docstring of its type ("Built-in immutable sequence..."). api.rst gives
    such constants their description in the directive's content instead.
    """
    if what in ("data", "attribute") and lines:
        type_doc = type(obj).__doc__
        if type_doc and "\n".join(lines).strip() == inspect.cleandoc(type_doc):
            lines.clear()


def setup(app):
    # Run before numpydoc's own handler (priority 500) so numpydoc parses the
    # repaired lines.
    app.connect("autodoc-process-docstring", _join_raw_continuations, priority=400)
    app.connect("autodoc-process-docstring", _drop_type_docstring, priority=400)
    app.connect("autodoc-skip-member", _skip_member)


# -- HTML ----------------------------------------------------------------------

html_theme = "alabaster"
html_static_path = []
html_title = f"skuserdp {release}"
