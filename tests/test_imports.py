"""The package's layers: no import cycle between subpackages, lazy imports included.

Every ``import`` and ``from ... import`` statement of ``skuserdp/`` -- at module
level or inside a function -- is an edge from the importing subpackage
(``mean``, ``users``, ...; a top-level module such as ``base`` is its own
node, the package's ``__init__`` is ``<root>``) to the imported one. The
graph must be acyclic, so that each layer can be read, tested and changed
knowing only the layers below it.
"""

import ast
import collections
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skuserdp"


def _node(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def _imports(path, module, package):
    """Every skuserdp module named by an import statement of one file."""
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.Import):
            yield from (a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = package.split(".")[: len(package.split(".")) - n.level + 1]
                target = ".".join(base + ([n.module] if n.module else []))
            else:
                target = n.module
            if n.module is None:  # from . import x: x may be a module
                yield from (f"{target}.{a.name}" for a in n.names)
            else:
                yield target


def import_graph(root=PACKAGE):
    """``{node: {node it imports: [files]}}`` over the package's files."""
    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        module = ".".join(rel.parts)
        if module.endswith(".__init__"):
            module = package = module[: -len(".__init__")]
        else:
            package = module.rsplit(".", 1)[0]
        source = _node(module)
        for target in _imports(path, module, package):
            if target == "skuserdp" or target.startswith("skuserdp."):
                if _node(target) != source:
                    edges[source][_node(target)].append(str(rel))
    return edges


def find_cycle(edges):
    """One cycle of the graph as a list of nodes, or None."""
    state, stack = {}, []

    def visit(u):
        state[u] = "open"
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == "open":
                return stack[stack.index(v):] + [v]
            if v not in state:
                found = visit(v)
                if found:
                    return found
        state[u] = "done"
        stack.pop()
        return None

    for u in sorted(edges):
        if u not in state:
            found = visit(u)
            if found:
                return found
    return None


def test_no_import_cycle_between_subpackages():
    edges = import_graph()
    cycle = find_cycle(edges)
    where = ("" if cycle is None else "; ".join(
        f"{a} -> {b} in {sorted(set(edges[a][b]))}" for a, b in zip(cycle, cycle[1:])))
    assert cycle is None, f"import cycle {' -> '.join(cycle)}: {where}"


def test_the_layers_below_import_nothing_above():
    edges = import_graph()
    # the privacy core is a leaf (but for the exceptions); noise and the
    # users' tables sit on it; the estimators above
    assert set(edges["privacy"]) <= {"exceptions"}
    assert set(edges["mechanisms"]) <= {"exceptions", "privacy", "utils"}
    assert set(edges["users"]) <= {"exceptions", "utils"}
    assert set(edges["utils"]) <= {"exceptions"}


def test_the_check_finds_a_planted_lazy_cycle(tmp_path):
    # positive control: a lazy import inside a function closes a cycle
    pkg = tmp_path / "skuserdp"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "_x.py").write_text("from ..b._y import f\n")
    (pkg / "b" / "_y.py").write_text(
        "def f():\n    from ..a import _x  # lazy\n    return _x\n")
    edges = import_graph(pkg)
    assert find_cycle(edges) in (["a", "b", "a"], ["b", "a", "b"])
    (pkg / "b" / "_y.py").write_text("def f():\n    return 1\n")
    assert find_cycle(import_graph(pkg)) is None


@pytest.mark.parametrize("statement, expected", [
    ("from ..mean import x", "skuserdp.mean"),
    ("from . import _y", "skuserdp.users._y"),
    ("import skuserdp.privacy", "skuserdp.privacy"),
])
def test_relative_imports_resolve(tmp_path, statement, expected):
    f = tmp_path / "m.py"
    f.write_text(statement + "\n")
    assert expected in list(_imports(f, "skuserdp.users._m", "skuserdp.users"))
