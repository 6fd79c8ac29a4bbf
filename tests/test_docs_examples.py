"""Run every Python example of README.md and docs/*.rst, as a reader would.

A page's examples are run in order, in one namespace (a later example may use
the names of an earlier one, as a reader who copies them one after the other
would), from a fresh working directory. Every warning fails the test (all
are recorded, whatever the filters, except ``ResourceWarning``, which Python
hides and which a library's garbage reports wherever the collector runs): an
example that warns tells the reader something the text does not say.

What is an example:

* README.md: every fenced block tagged ```python;
* docs/*.rst: every ``.. code-block:: python`` (``.. code::``,
  ``.. sourcecode::``) and every doctest block (``>>>`` paragraphs, whose
  printed output is compared as a doctest does);
* ``.. plot::`` (the gallery): each plot runs in a namespace of its own, with
  the plot directive's default pre-code (``import numpy as np`` and
  ``from matplotlib import pyplot as plt``), as ``sphinx`` runs it; a plot
  with the ``:context:`` option continues the previous plot's namespace.

An untagged literal block (``::``) that parses as Python fails
:func:`test_python_blocks_are_tagged`: tag it ``.. code-block:: python`` (so
that it runs here) or ``.. code-block:: text``.

An example that imports a module that is not installed (an optional extra:
``linearmodels`` of ``[docs]``, say) is skipped with the module's name, and so
are the examples after it on the same page, whose names it may define.
"""

import ast
import doctest
import importlib.util
import re
import sys
import textwrap
import traceback
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ["README.md"] + sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.rst")
)

_DIRECTIVE = re.compile(
    r"^(?P<indent> *)\.\. (?:(?P<code>code-block|code|sourcecode)::[ ]*(?P<lang>\S*)"
    r"|(?P<plot>plot)::)[ ]*$"
)
_OPTION = re.compile(r"^ *:[\w-]+:")
_PLOT_PRE_CODE = "import numpy as np\nfrom matplotlib import pyplot as plt\n"


class Block:
    """One example: its code, where it starts, and how it runs."""

    def __init__(self, path, lineno, code, kind, context=True):
        self.path, self.lineno, self.code = path, lineno, code
        self.kind = kind  # "code", "doctest" or "plot"
        self.context = context  # continues the namespace of the block before

    @property
    def where(self):
        return f"{self.path}:{self.lineno}"


def _indented_body(lines, start, indent):
    """The lines from ``start`` indented more than ``indent``: (first, body, end).

    ``first`` is the index of the body's first non-blank line, ``end`` the
    index of the first line after the body.
    """
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = start
    while end < len(lines):
        line = lines[end]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        end += 1
    body = lines[start:end]
    while body and not body[-1].strip():
        body.pop()
    return start, textwrap.dedent("\n".join(body)) + "\n", end


def _rst_blocks(path, text):
    """The examples of a reStructuredText page, in order; also its untagged
    literal blocks, as ``kind="literal"``."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _DIRECTIVE.match(line)
        if m:
            indent = len(m["indent"])
            j = i + 1
            options = []
            while j < len(lines) and _OPTION.match(lines[j]):
                options.append(lines[j].strip())
                j += 1
            first, body, end = _indented_body(lines, j, indent)
            if m["plot"]:
                blocks.append(Block(path, first + 1, body, "plot", context=any(
                    o.startswith(":context:") for o in options)))
            elif m["lang"] in ("python", "py", "python3"):
                blocks.append(Block(path, first + 1, body, "code"))
            i = end
            continue
        if line.lstrip().startswith(">>>"):
            start = i
            while i < len(lines) and lines[i].strip():
                i += 1
            blocks.append(Block(path, start + 1,
                                textwrap.dedent("\n".join(lines[start:i])) + "\n",
                                "doctest"))
            continue
        stripped = line.rstrip()
        if stripped.endswith("::") and not stripped.lstrip().startswith(".."):
            # a literal block follows after a blank line, indented
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines):
                indent = len(line) - len(line.lstrip())
                if len(lines[j]) - len(lines[j].lstrip()) > indent:
                    first, body, end = _indented_body(lines, j, indent)
                    blocks.append(Block(path, first + 1, body, "literal"))
                    i = end
                    continue
        i += 1
    return blocks


def _markdown_blocks(path, text):
    blocks = []
    for m in re.finditer(r"^```(?:python|py)[ ]*\n(.*?)^```", text, re.S | re.M):
        lineno = text.count("\n", 0, m.start(1)) + 1
        blocks.append(Block(path, lineno, m.group(1), "code"))
    return blocks


def blocks_of(path):
    text = (ROOT / path).read_text("utf-8")
    if path.endswith(".md"):
        return _markdown_blocks(path, text)
    return _rst_blocks(path, text)


def _units(path):
    """The blocks of a page grouped into runs that share one namespace."""
    units = []
    for block in blocks_of(path):
        if block.kind == "literal":
            continue
        if block.kind == "plot" and not block.context:
            units.append([block])  # a plot of its own
        elif units and (block.kind != "plot" or units[-1][-1].kind == "plot"):
            units[-1].append(block)
        else:
            units.append([block])
    return units


def _cases():
    cases = []
    for path in FILES:
        units = _units(path)
        if len(units) == 1:
            cases.append(pytest.param(path, 0, id=path))
        else:
            cases.extend(pytest.param(path, k, id=f"{path}[{k}]")
                         for k in range(len(units)))
    return cases


def _missing_modules(code):
    """Top-level modules imported by ``code`` that are not installed."""
    missing = []
    if "parquet" in code and importlib.util.find_spec("pyarrow") is None:
        missing.append("pyarrow")  # pandas and Dask read and write parquet with it
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if importlib.util.find_spec(top) is None and top not in missing:
                missing.append(top)
    return missing


def _run(block, namespace):
    if block.kind == "doctest":
        test = doctest.DocTestParser().get_doctest(
            block.code, namespace, block.where, block.path, block.lineno - 1)
        runner = doctest.DocTestRunner(
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test, clear_globs=False)
        assert runner.failures == 0, f"doctest at {block.where} failed"
        return
    code = block.code
    if block.kind == "plot" and not block.context:
        code = _PLOT_PRE_CODE + code
        # line numbers of the tracebacks are those of the page
        lineno = block.lineno - _PLOT_PRE_CODE.count("\n")
    else:
        lineno = block.lineno
    # the page's own path and line numbers, so a traceback quotes the page
    compiled = compile("\n" * (lineno - 1) + code, str(ROOT / block.path), "exec")
    try:
        exec(compiled, namespace)
    except Exception:
        pytest.fail(f"the example at {block.where} raises:\n"
                    + traceback.format_exc(), pytrace=False)


@pytest.mark.parametrize("path,unit", _cases())
def test_examples_run_without_warnings(path, unit, tmp_path, monkeypatch):
    blocks = _units(path)[unit]
    if not blocks:
        pytest.skip(f"{path} has no Python example")
    if any(b.kind == "plot" for b in blocks):
        mpl = pytest.importorskip("matplotlib", reason="the gallery draws with it")
        mpl.use("Agg", force=True)
    monkeypatch.chdir(tmp_path)  # files an example writes stay in tmp_path
    namespace = {"__name__": "__docs_example__"}
    for block in blocks:
        missing = _missing_modules(
            "\n".join(line[4:] for line in block.code.splitlines()
                      if line.lstrip().startswith((">>>", "..."))) + "\n"
            if block.kind == "doctest" else block.code)
        if missing:
            pytest.skip(f"{block.where} and what follows need {', '.join(missing)}"
                        " (an optional extra that is not installed)")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # a socket or file that a library leaves to the garbage collector
            # warns whenever the collector runs, not where the example is
            # wrong (and Python hides ResourceWarning by default)
            warnings.filterwarnings("ignore", category=ResourceWarning)
            try:
                _run(block, namespace)
            finally:
                if "matplotlib.pyplot" in sys.modules:
                    sys.modules["matplotlib.pyplot"].close("all")
        assert not caught, f"the example at {block.where} warns:\n" + "\n".join(
            f"  {w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
            for w in caught)


@pytest.mark.parametrize("path", FILES)
def test_python_blocks_are_tagged(path):
    """A literal block (``::``) that is Python must say so, or it is not run."""
    untagged = []
    for block in blocks_of(path):
        if block.kind != "literal":
            continue
        try:
            ast.parse(block.code)
        except SyntaxError:
            continue
        untagged.append(block.where)
    assert not untagged, (
        "Python in untagged literal blocks (use '.. code-block:: python'): "
        + ", ".join(untagged))


def test_the_extraction_finds_the_examples():
    """A check of the parser itself on the pages it must understand."""
    kinds = [b.kind for b in blocks_of("docs/gallery.rst")]
    assert kinds.count("plot") >= 5
    readme = blocks_of("README.md")
    assert len(readme) >= 2 and "make_user_samples" in readme[0].code
    quick = blocks_of("docs/quickstart.rst")
    assert quick and all(b.kind == "code" for b in quick)
    assert quick[0].code.startswith("from skuserdp.datasets import")


@pytest.mark.parametrize("path", FILES)
def test_cited_tests_exist(path):
    """Every test a page names (``tests/file.py::test``, or ``::test`` for
    another test of the file named last) is a test function of that file."""
    text = (ROOT / path).read_text("utf-8")
    missing, current = [], None
    for m in re.finditer(r"``(tests/[\w/]+\.py)?::(\w+)``", text):
        current = m[1] or current
        assert current is not None, f"{path}: ``::{m[2]}`` follows no test file"
        file = ROOT / current
        source = file.read_text("utf-8") if file.exists() else ""
        if not re.search(rf"^def {m[2]}\(", source, re.M):
            missing.append(f"{current}::{m[2]}")
    assert not missing, f"{path} names tests that do not exist: {missing}"
