"""The import graph is layered and acyclic.

Layers of ``overlap`` (lower layers never import higher ones)::

    kernel   compiled modules (*.pyx)
    core     tokensets, search, dedup and their private helpers; the package face
    dask     overlap.dask                        (dask and app never import
    app      pipeline, dialogue, io, plot, demo   each other)
    cli      cli, __main__

``metrics`` uses only ``overlap``'s public names (``overlap.__all__``).  The graph
is read from the source (every import statement, also those inside functions,
except under ``if TYPE_CHECKING:``), so a lazy import cannot hide a violation.
Modules added later are placed by rule: compiled -> kernel, ``_private`` ->
core, anything else (including subpackages) -> app; list them in LAYERS when
that guess is wrong.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import metrics
import overlap

PACKAGES = {"overlap": Path(overlap.__file__).parent, "metrics": Path(metrics.__file__).parent}

RANK = {"kernel": 0, "core": 1, "dask": 2, "app": 2, "cli": 3}
LAYERS = {
    "overlap": "core",
    "overlap._index": "core",
    "overlap._order": "core",
    "overlap._threads": "core",
    "overlap._validation": "core",
    "overlap._progress": "core",
    "overlap._datadir": "core",
    "overlap.tokensets": "core",
    "overlap.search": "core",
    "overlap.dedup": "core",
    "overlap.stream": "core",
    "overlap.stream_readers": "core",
    "overlap.dask": "dask",
    "overlap.pipeline": "app",
    "overlap.dialogue": "app",
    "overlap.io": "app",
    "overlap.plot": "app",
    "overlap.demo": "app",
    "overlap.cli": "cli",
    "overlap.__main__": "cli",
}

# Violations found when this test was written; each is fixed by the module's
# owner, and strict xfail makes the fixed test fail until the mark is removed.
KNOWN_LAYER_VIOLATIONS: dict[str, str] = {}
KNOWN_PRIVATE_USES: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    """Every module of both packages: .py files, compiled .pyx, subpackages."""
    found: dict[str, Path] = {}
    for pkg, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.pyx")):
            rel = path.relative_to(root).with_suffix("")
            parts = [pkg, *rel.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.setdefault(".".join(parts), path)
    return found


MODULES = _modules()


def layer_of(module: str) -> str:
    if module in LAYERS:
        return LAYERS[module]
    path = MODULES.get(module)
    if path is not None and path.suffix == ".pyx":
        return "kernel"
    last = module.split(".")
    if len(last) == 2 and last[1].startswith("_"):
        return "core"
    return "app"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(module: str) -> list[tuple[str, str]]:
    """(imported project module, name imported from it or '') for one module."""
    path = MODULES[module]
    if path.suffix != ".py":
        return []  # kernels: cimports are compile-time, checked by the build
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    out: list[tuple[str, str]] = []
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            if sub in MODULES:  # `from . import dialogue` imports a module
                out.append((sub, ""))
            else:
                out.append((target, alias.name))
    return [(m, n) for m, n in out if m.split(".")[0] in PACKAGES]


def _param(module: str, known: dict[str, str]):
    if module in known:
        return pytest.param(module, marks=pytest.mark.xfail(strict=True, reason=known[module]))
    return module


OVERLAP_MODULES = sorted(m for m in MODULES if m.split(".")[0] == "overlap")
METRICS_MODULES = sorted(m for m in MODULES if m.split(".")[0] == "metrics")


def test_the_graph_is_read():
    # guards the test itself: a parser that finds nothing would pass everything
    assert ("overlap.search", "") in imports_of("overlap.dedup") or any(
        m == "overlap.search" for m, _ in imports_of("overlap.dedup"))
    assert any(m.startswith("overlap.pipeline") for m, _ in imports_of("overlap.cli"))
    assert layer_of("overlap._search") == "kernel"
    assert layer_of("metrics._corr") == "kernel"


@pytest.mark.parametrize("module", [_param(m, KNOWN_LAYER_VIOLATIONS) for m in OVERLAP_MODULES])
def test_overlap_module_imports_only_lower_layers(module):
    mine = layer_of(module)
    bad = []
    for target, name in imports_of(module):
        if target.split(".")[0] != "overlap" or target == module:
            continue
        theirs = layer_of(target)
        sibling = mine != theirs and RANK[mine] == RANK[theirs]
        if RANK[theirs] > RANK[mine] or sibling:
            what = f"{target}.{name}" if name else target
            bad.append(f"{module} ({mine}) imports {what} ({theirs})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", [_param(m, KNOWN_PRIVATE_USES) for m in METRICS_MODULES])
def test_metrics_uses_only_public_overlap_names(module):
    public = set(overlap.__all__)
    bad = []
    for target, name in imports_of(module):
        if target.split(".")[0] != "overlap":
            continue
        if target != "overlap":
            bad.append(f"{module} imports the module {target}" + (f" ({name})" if name else ""))
        elif name and name not in public:
            bad.append(f"{module} imports overlap.{name}, not in overlap.__all__")
    assert not bad, "\n".join(bad)


def _graph() -> dict[str, list[str]]:
    return {m: sorted({t for t, _ in imports_of(m) if t in MODULES and t != m}) for m in MODULES}


def _cycles(graph: dict[str, list[str]]) -> list[frozenset[str]]:
    """The import cycles: strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return out


def test_cycle_finder_finds_a_cycle():
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}
    assert _cycles(graph) == [frozenset("abc")]
    assert _cycles({"a": ["b"], "b": []}) == []


_CYCLES = _cycles(_graph())


def test_no_other_import_cycles():
    assert not _CYCLES, f"import cycles: {[sorted(c) for c in _CYCLES]}"
