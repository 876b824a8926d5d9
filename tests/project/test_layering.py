"""The import graph is layered and acyclic, and no private name crosses a module.

Layers of ``overlap`` (lower layers never import higher ones)::

    kernel   compiled modules (*.pyx) and the *.pxd files they cimport
    core     tokensets, search, dedup and their private helpers; the package face
    dask     overlap.dask                        (dask and app never import
    app      overlap.pipeline                     each other)
    cli      cli, __main__

``metrics`` uses only ``overlap``'s public names (``overlap.__all__``), never a
module of ``overlap`` (also not at compile time: it has its own ``_openmp.pxd``).

The graph is read from what the interpreter and the compiler read: every
``import`` statement (also those inside functions, except under
``if TYPE_CHECKING:``), every ``cimport`` and ``import`` line of the ``.pyx``
and ``.pxd`` files, and every dynamic import with a literal name
(``importlib.import_module``, ``__import__``, ``overlap._optional.require``;
relative names resolved against the package argument).  A dynamic import whose
name is computed is an error unless ``COMPUTED_IMPORTS`` says how it is read:
``overlap``'s and ``metrics``' lazy public names are their tables ``_EXPORTS``,
read here as imports.  So neither a lazy import nor a kernel can hide a violation.

Private names
-------------
A *private module* (``overlap/_validation.py``, ``_progress.py``,
``_limits.pxd``, ``metrics/_checks.pxd``, ...) is its package's internal API:
any module of the package may import it and the public names in it.  A
*private name* (one leading underscore: ``_dedup_first``, ``_Split``) belongs
to the module that defines it, whether that module is public or private:
``from .steps import _dedup_first``, ``from ._validation import _asarray``,
``steps._dedup_first`` and ``OverlapIndex._build`` (a private attribute of an
object imported from another module) in another module are crossings.  A helper that two
modules need gets a public name in a private module (``_validation.as_array``,
``pipeline/_splits.py``).  Dunder names (``__version__``) are not private.

Modules added later are placed by rule: compiled or ``.pxd`` -> kernel,
``_private`` -> core, anything else (including subpackages) -> app; list them in
LAYERS when that guess is wrong.

``overlap/__init__.py`` never names ``overlap.pipeline`` (the application layer
is imported as ``overlap.pipeline``, never reached from the core's face).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import metrics
import overlap

PACKAGES = {"overlap": Path(overlap.__file__).parent, "metrics": Path(metrics.__file__).parent}
COMPILED = (".pyx", ".pxd")

RANK = {"kernel": 0, "core": 1, "dask": 2, "app": 2, "cli": 3}
LAYERS = {
    "overlap": "core",
    "overlap._index": "core",
    "overlap._order": "core",
    "overlap._threads": "core",
    "overlap._validation": "core",
    "overlap._progress": "core",
    "overlap.tokensets": "core",
    "overlap.search": "core",
    "overlap.dedup": "core",
    "overlap.stream": "core",
    "overlap.stream_readers": "core",
    "overlap.contamination": "core",
    "overlap.dask": "dask",
    "overlap.pipeline": "app",
    "overlap.cli": "cli",
    "overlap.__main__": "cli",
}

# Dynamic imports whose module name is computed, and how this test reads them:
# module -> (the module-level dict {name: module} they import from, or None
# when they import only third-party modules, why).
COMPUTED_IMPORTS: dict[str, tuple[str | None, str]] = {
    "overlap": ("_EXPORTS", "__getattr__ loads the public names lazily from _EXPORTS"),
    "metrics": ("_EXPORTS", "__getattr__ loads the public names and modules lazily from _EXPORTS"),
    "overlap._optional": (None, "require(module) imports an optional third-party extra; "
                                "its callers pass literal names, read as imports here"),
}

# Violations found when this test was written; each is fixed by the module's
# owner, and strict xfail makes the fixed test fail until the mark is removed.
KNOWN_LAYER_VIOLATIONS: dict[str, str] = {}
KNOWN_PRIVATE_USES: dict[str, str] = {}
KNOWN_PRIVATE_CROSSINGS: dict[str, str] = {}


def _modules() -> dict[str, tuple[Path, ...]]:
    """Every module of both packages and its source files: .py, .pyx and .pxd
    (``_openmp`` is both), subpackages."""
    found: dict[str, tuple[Path, ...]] = {}
    for pkg, root in PACKAGES.items():
        paths = sorted(p for ext in ("*.py", *("*" + c for c in COMPILED)) for p in root.rglob(ext))
        for path in paths:
            rel = path.relative_to(root).with_suffix("")
            parts = [pkg, *rel.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(parts)
            found[name] = found.get(name, ()) + (path,)
    return found


MODULES = _modules()


def is_compiled(module: str) -> bool:
    return any(p.suffix in COMPILED for p in MODULES.get(module, ()))


def layer_of(module: str) -> str:
    if module in LAYERS:
        return LAYERS[module]
    if is_compiled(module):
        return "kernel"
    last = module.split(".")
    if len(last) == 2 and last[1].startswith("_"):
        return "core"
    return "app"


def is_private_name(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Edge:
    """One import: ``target`` module, the ``name`` taken from it ('' for the
    module itself), where, and how (import, cimport, dynamic)."""

    target: str
    name: str
    where: str
    how: str


def _package_of(module: str) -> str:
    paths = MODULES[module]
    return module if paths[0].name == "__init__.py" else module.rpartition(".")[0]


def _resolve(module: str, name: str, level: int) -> str:
    """The absolute module of ``from <level dots><name> import``."""
    if not level:
        return name
    base = _package_of(module).split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _from_edges(module: str, target: str, names: list[str], where: str, how: str) -> list[Edge]:
    out = []
    for name in names:
        sub = f"{target}.{name}"
        if sub in MODULES:  # `from . import dialogue` imports a module
            out.append(Edge(sub, "", where, how))
        else:
            out.append(Edge(target, name, where, how))
    return out


# ------------------------------------------------------------------ Python files
def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST):
    """Every node, except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


_DYNAMIC = {"import_module", "__import__", "require"}


def _dynamic_name(call: ast.Call) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name if name in _DYNAMIC else None


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dict_of(tree: ast.Module, name: str) -> dict[str, str]:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"no module-level dict {name}")


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _python_attribute_edges(module: str, tree: ast.AST, rel: str) -> list[Edge]:
    """``mod._name`` where ``mod`` is a name bound to a project module, and
    ``Obj._name`` (``mod.Obj._name``) where ``Obj`` is a name imported from one
    (``from .search import OverlapIndex``: ``OverlapIndex._build``)."""
    aliases: dict[str, str] = {}
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node.module or "", node.level)
            for a in node.names:  # a module, or an object of one (read as its path)
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{target}.{a.name}"
    return _attribute_edges(aliases, [
        (_dotted(n.value), n.attr, f"{rel}:{n.lineno}")
        for n in _nodes(tree) if isinstance(n, ast.Attribute) and is_private_name(n.attr)])


def _attribute_edges(aliases: dict[str, str], uses) -> list[Edge]:
    """Edges of ``dotted.attr`` uses: ``dotted`` starts with a name bound to a
    project module or to an object imported from one.  The edge's target is the
    module, its name the rest of the path (``_name`` or ``Obj._name``)."""
    out = []
    for dotted, attr, where in uses:
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head not in aliases:
            continue
        path = aliases[head] + (f".{rest}" if rest else "")
        if f"{path}.{attr}" in MODULES:  # a submodule
            continue
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):  # the longest prefix that is a module
            target = ".".join(parts[:cut])
            if target in MODULES:
                out.append(Edge(target, ".".join(parts[cut:] + [attr]), where, "attribute"))
                break
    return out


def _python_edges(module: str, path: Path) -> tuple[list[Edge], list[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = f"{path.relative_to(PACKAGES[module.split('.')[0]].parent)}"
    out: list[Edge] = []
    computed: list[str] = []
    for node in _nodes(tree):
        where = f"{rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            out += [Edge(a.name, "", where, "import") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node.module or "", node.level)
            out += _from_edges(module, target, [a.name for a in node.names], where, "import")
        elif isinstance(node, ast.Call) and _dynamic_name(node):
            first = node.args[0] if node.args else None
            name = _literal(first)
            if name is None:
                computed.append(f"{where}: {ast.unparse(node)}")
                continue
            level = len(name) - len(name.lstrip("."))
            out.append(Edge(_resolve(module, name.lstrip("."), level), "", where, "dynamic"))
    out += _python_attribute_edges(module, tree, rel)
    table = COMPUTED_IMPORTS.get(module, (None, ""))[0]
    if table is not None:
        for name, where_from in _dict_of(tree, table).items():
            level = len(where_from) - len(where_from.lstrip("."))
            target = _resolve(module, where_from.lstrip("."), level)
            out += _from_edges(module, target, [name], f"{rel}:{table}", "dynamic")
    return out, computed


# ------------------------------------------------------------------ Cython files
_STRING = re.compile(r'("""|\'\'\')(?:.|\n)*?\1|#[^\n]*')
_CIMPORT = re.compile(r"^[ \t]*cimport[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+"
                      r"(?:[ \t]+as[ \t]+\w+)?)*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+"
                     r"(?:[ \t]+as[ \t]+\w+)?)*)", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+(c?import)[ \t]+(\([^)]*\)|[^\n]*)", re.M)


def _cython_edges(module: str, path: Path) -> list[Edge]:
    text = path.read_text(encoding="utf-8")
    code = _STRING.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # lines kept
    rel = f"{path.relative_to(PACKAGES[module.split('.')[0]].parent)}"

    def where(m: re.Match) -> str:
        return f"{rel}:{code.count(chr(10), 0, m.start()) + 1}"

    out: list[Edge] = []
    aliases: dict[str, str] = {}  # names bound to modules, for `mod._name`
    for pattern, how in ((_CIMPORT, "cimport"), (_IMPORT, "import")):
        for m in pattern.finditer(code):
            for part in m.group(1).split(","):
                words = part.split()  # `a.b` or `a.b as c`
                out.append(Edge(words[0], "", where(m), how))
                if len(words) == 3:
                    aliases[words[2]] = words[0]
                else:
                    aliases[words[0].split(".")[0]] = words[0].split(".")[0]
    for m in _FROM.finditer(code):
        dotted = m.group(1)
        level = len(dotted) - len(dotted.lstrip("."))
        target = _resolve(module, dotted.lstrip("."), level)
        parts = [n.split() for n in m.group(3).strip("()").replace("\n", " ").split(",")]
        parts = [p for p in parts if p]
        out += _from_edges(module, target, [p[0] for p in parts], where(m), m.group(2))
        for p in parts:  # a module, or an object of one (read as its path)
            aliases[p[-1]] = f"{target}.{p[0]}"
    uses = [(m.group(1), m.group(2), where(m))
            for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*(?:\.\w+)*)\.(_\w+)", code)
            if is_private_name(m.group(2))]
    return out + _attribute_edges(aliases, uses)


def edges_of(module: str) -> tuple[list[Edge], list[str]]:
    """The imports of one module into the project (and its computed dynamic imports)."""
    out: list[Edge] = []
    computed: list[str] = []
    for path in MODULES[module]:
        if path.suffix == ".py":
            found, comp = _python_edges(module, path)
            out += found
            computed += comp
        else:
            out += _cython_edges(module, path)
    return [e for e in out if e.target.split(".")[0] in PACKAGES], computed


def imports_of(module: str) -> list[tuple[str, str]]:
    """(imported project module, name imported from it or '') for one module."""
    return [(e.target, e.name) for e in edges_of(module)[0]]


def _param(module: str, known: dict[str, str]):
    if module in known:
        return pytest.param(module, marks=pytest.mark.xfail(strict=True, reason=known[module]))
    return module


ALL_MODULES = sorted(MODULES)
OVERLAP_MODULES = sorted(m for m in MODULES if m.split(".")[0] == "overlap")
METRICS_MODULES = sorted(m for m in MODULES if m.split(".")[0] == "metrics")


def test_the_graph_is_read():
    # guards the test itself: a parser that finds nothing would pass everything
    assert any(m == "overlap.search" for m, _ in imports_of("overlap.dedup"))
    assert any(m.startswith("overlap.pipeline") for m, _ in imports_of("overlap.cli"))
    assert layer_of("overlap._kernels._postings_search") == "kernel"
    assert layer_of("metrics._corr") == "kernel"
    assert layer_of("overlap._kernels._limits") == "kernel"  # a .pxd alone
    # cimports, one name per line of a parenthesised list too
    assert ("overlap._openmp", "omp_get_thread_num") in imports_of("overlap._kernels._runner")
    assert ("overlap._kernels._runner", "push_pair") in imports_of("overlap._kernels._postings_search")
    # from overlap._kernels cimport _limits
    assert ("overlap._kernels._limits", "") in imports_of("overlap._kernels._collection")
    assert ("overlap._kernels._limits", "MAX_FIELDS") in imports_of("overlap._kernels._checks")
    sets = {n for m, n in imports_of("overlap._tokenize") if m == "overlap._kernels._hash"}
    assert len(sets) > 1, sets
    assert ("metrics._sortcount", "sort_count") in imports_of("metrics._corr")
    # the lazy public names are imports of the package
    assert ("overlap.search", "OverlapIndex") in imports_of("overlap")
    assert ("overlap._openmp", "openmp_enabled") in imports_of("overlap")


def test_the_parsers_read_every_form(tmp_path, monkeypatch):
    pkg = tmp_path / "overlap"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text(
        "import importlib\n"
        "from . import b\n"
        "from .b import _hidden, shown, Thing\n"
        "import overlap.sub.b as bee\n"
        "def f():\n"
        "    importlib.import_module('.b', __package__)\n"
        "    importlib.import_module('overlap.sub.c')\n"
        "    importlib.import_module(name)\n"
        "    return b._one, bee._two, b.__doc__, Thing._three, bee.Thing._four, shown.ok\n"
    )
    (pkg / "sub" / "b.py").write_text("")
    (pkg / "sub" / "c.py").write_text("")
    (pkg / "k.pyx").write_text(
        '"""from overlap.sub import a   (a docstring, not an import)"""\n'
        "cimport overlap.q as q\n"
        "from overlap.q cimport (one,\n    two as deux)\n"
        "from overlap cimport q as qq  # from overlap.sub import c\n"
        "import overlap.sub.c\n"
        "x = q._private + qq._other + qq.__dunder__\n"
    )
    (pkg / "q.pxd").write_text("")
    monkeypatch.setitem(PACKAGES, "overlap", pkg)
    monkeypatch.setitem(globals(), "MODULES", _modules())
    edges, computed = edges_of("overlap.sub.a")
    got = {(e.target, e.name, e.how) for e in edges}
    assert got == {
        ("overlap.sub.b", "", "import"),
        ("overlap.sub.b", "_hidden", "import"),
        ("overlap.sub.b", "shown", "import"),
        ("overlap.sub.b", "Thing", "import"),
        ("overlap.sub.b", "Thing._three", "attribute"),
        ("overlap.sub.b", "Thing._four", "attribute"),
        ("overlap.sub.b", "", "dynamic"),
        ("overlap.sub.c", "", "dynamic"),
        ("overlap.sub.b", "_one", "attribute"),
        ("overlap.sub.b", "_two", "attribute"),
    }
    assert len(computed) == 1 and "import_module(name)" in computed[0]
    got = {(e.target, e.name, e.how) for e in edges_of("overlap.k")[0]}
    assert got == {
        ("overlap.q", "", "cimport"),
        ("overlap.q", "one", "cimport"),
        ("overlap.q", "two", "cimport"),
        ("overlap.q", "_private", "attribute"),
        ("overlap.q", "_other", "attribute"),
        ("overlap.sub.c", "", "import"),
    }
    assert layer_of("overlap.k") == layer_of("overlap.q") == "kernel"


@pytest.mark.parametrize("module", [_param(m, KNOWN_LAYER_VIOLATIONS) for m in OVERLAP_MODULES])
def test_overlap_module_imports_only_lower_layers(module):
    mine = layer_of(module)
    bad = []
    for e in edges_of(module)[0]:
        if e.target.split(".")[0] != "overlap" or e.target == module:
            continue
        theirs = layer_of(e.target)
        sibling = mine != theirs and RANK[mine] == RANK[theirs]
        if RANK[theirs] > RANK[mine] or sibling:
            what = f"{e.target}.{e.name}" if e.name else e.target
            bad.append(f"{e.where}: {module} ({mine}) {e.how}s {what} ({theirs})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", [_param(m, KNOWN_PRIVATE_USES) for m in METRICS_MODULES])
def test_metrics_uses_only_public_overlap_names(module):
    public = set(overlap.__all__)
    bad = []
    for e in edges_of(module)[0]:
        if e.target.split(".")[0] != "overlap":
            continue
        if e.target != "overlap":
            bad.append(f"{e.where}: {module} {e.how}s the module {e.target}"
                       + (f" ({e.name})" if e.name else ""))
        elif e.name and e.name not in public and not e.name.startswith("__"):
            bad.append(f"{e.where}: {module} {e.how}s overlap.{e.name}, not in overlap.__all__")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", [_param(m, KNOWN_PRIVATE_CROSSINGS) for m in ALL_MODULES])
def test_no_private_name_crosses_a_module(module):
    # e.name is `_name` or `Obj._name`: a private name of the module or of its object
    bad = [f"{e.where}: {module} {e.how}s {e.target}.{e.name}"
           for e in edges_of(module)[0]
           if e.name and any(is_private_name(part) for part in e.name.split("."))
           and e.target != module]
    assert not bad, "\n".join(bad)


def test_the_core_does_not_name_the_pipeline():
    """``overlap/__init__.py`` (the core's face) never loads the application
    layer, not even lazily by a name in a table: users import ``overlap.pipeline``."""
    path = PACKAGES["overlap"] / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # a module name in a string: an _EXPORTS value, an import_module argument
    named = [f"overlap/__init__.py:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and re.fullmatch(r"(overlap)?\.pipeline(\.\w+)*", n.value.strip())]
    named += [f"{e.where}: {e.how}s {e.target}" for e in edges_of("overlap")[0]
              if e.target == "overlap.pipeline" or e.target.startswith("overlap.pipeline.")]
    assert not named, "\n".join(named)


@pytest.mark.parametrize("module", ALL_MODULES)
def test_every_dynamic_import_is_read(module):
    computed = edges_of(module)[1]
    if module in COMPUTED_IMPORTS:
        return
    assert not computed, ("a dynamic import with a computed name hides an edge of the graph; use "
                          "a literal name or read it in COMPUTED_IMPORTS:\n" + "\n".join(computed))


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


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert not cycles, f"import cycles: {[sorted(c) for c in cycles]}"
