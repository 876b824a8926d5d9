"""tests/ mirrors the packages, and its files import nothing from one another.

pytest imports each test file by its base name, with its folder on sys.path
(no ``__init__.py``, so an installed ``overlap`` is tested, not the source
tree): two test files of the same name would collide, and a test file that
imports another depends on which folders happen to be on sys.path.  What
test files share lives in ``tests/reference/``.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = {"overlap", "metrics", "api", "project", "reference"}


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_test_files_sit_in_the_package_folders_with_distinct_names():
    files = _test_files()
    assert len(files) > 40
    flat = [p.name for p in files if p.parent == TESTS]
    assert not flat, f"test files directly in tests/ (put them in a folder): {flat}"
    outside = [str(p.relative_to(TESTS)) for p in files
               if p.relative_to(TESTS).parts[0] not in FOLDERS]
    assert not outside, outside
    twice = [name for name, n in Counter(p.name for p in files).items() if n > 1]
    assert not twice, f"test files with the same name: {twice}"


def test_only_the_reference_package_has_an_init():
    inits = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")
                   if "__pycache__" not in p.parts)
    assert all(i.startswith("reference/") for i in inits), inits
    assert "reference/__init__.py" in inits


def test_no_test_file_imports_another():
    own = {p.stem for p in _test_files()} | {"conftest"}
    found = {}
    for path in [*_test_files(), *(TESTS / "reference").rglob("*.py")]:
        bad = {name for name in _imported(path) if name.split(".")[0] in own}
        if bad:
            found[str(path.relative_to(TESTS))] = sorted(bad)
    assert not found, f"import from tests/reference/ instead: {found}"
