"""Every code block of README.md and docs/*.md runs as shown (docs are code).

Found by scanning the Markdown, so blocks added later are picked up:

- ```` ```python ```` blocks run as a script (``__main__``) in an empty folder,
  or as a doctest when they start with ``>>>`` (outputs compared);
- plain ```` ``` ```` blocks whose first line is ``$ overlap ...`` or
  ``$ python -m metrics ...`` run that command in an empty folder (holding the
  files of the blocks marked ``<!-- doc-test: file NAME -->``) and must exit 0; the lines after the
  command are its expected stdout, compared after normalising timings
  (``1.23 s``, ``45 ms``, ``0.07s``) and the thread count;
- other blocks (install lines, output listings, shell sketches) are not run.

- ```` ``` ```` blocks whose first line is ``$ python SCRIPT ARGS`` show a
  script's output: ``<!-- doc-test: shape ARGS2 -->`` before such a block runs
  ``python SCRIPT ARGS2`` (smaller, for a test), where ``SCRIPT`` is the
  ```` ```python ```` block of any doc marked ``<!-- doc-test: file SCRIPT -->``,
  and compares the output's shape: every line, with each number replaced.
  Every ``$ `` block is run in one of these ways or names why not (skip).

``<!-- doc-test: plain-install -->`` before a block runs it as after a plain
``pip install .`` (the optional extras hidden).  Opt out with an HTML comment
on the line before the opening fence:
``<!-- doc-test: skip REASON -->`` (illustrative only: needs a cluster, takes
minutes...).  A block whose text names ``dailydialog/`` (or ``mint/``) runs
against the shared DailyDialog (MINT) data (``../shared/data``) and is skipped,
with that reason, without it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import overlap as _overlap_pkg
from reference.datadir import shared_data_dir

ROOT = Path(__file__).resolve().parents[2]
PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\s*(.*?)\s*-->")
PLAIN = re.compile(r"<!--\s*doc-test:\s*plain-install\s*-->")
FILE = re.compile(r"<!--\s*doc-test:\s*file\s+(\S+)\s*-->")
SHAPE = re.compile(r"<!--\s*doc-test:\s*shape\s+(.*?)\s*-->")
#: ``$`` blocks run as shown, their stdout compared
COMMANDS = ("$ overlap ", "$ python -m metrics ")
EXTRAS = ("tqdm", "matplotlib", "pandas", "pyarrow", "dask", "distributed", "datasets",
          "isal")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")  # also indented, inside a list


def _blocks(path: Path) -> list[tuple[str, int, str, str | None, bool, str]]:
    """(language, first line, text, skip reason, plain install, marker line) of every block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip()
                for ln in lines[start + 1:j]]
        prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        sk = SKIP.search(prev)
        out.append((lang, start + 1, "\n".join(body),
                    (sk.group(1) or "marked doc-test: skip") if sk else None,
                    bool(PLAIN.search(prev)), prev))
        i = j + 1
    return out


def _cases():
    for path in DOCS:
        for lang, line, text, skip, plain, prev in _blocks(path):
            if FILE.search(prev):
                continue  # a file (a script, an input) that ``$`` blocks use
            if lang == "python" or (lang == "" and text.startswith(COMMANDS)):
                yield pytest.param(lang, text, skip, plain, id=f"{path.name}:{line}")


def _script_files() -> dict[str, str]:
    """Every ``doc-test: file NAME`` block of the docs, by NAME."""
    files = {}
    for path in DOCS:
        for _, _, text, _, _, prev in _blocks(path):
            m = FILE.search(prev)
            if m:
                assert m.group(1) not in files, f"two doc blocks are {m.group(1)}"
                files[m.group(1)] = text
    return files


def _shape_cases():
    for path in DOCS:
        for lang, line, text, skip, _, prev in _blocks(path):
            if lang == "" and text.startswith("$ python ") and not text.startswith(COMMANDS):
                m = SHAPE.search(prev)
                yield pytest.param(text, m.group(1) if m else None, skip,
                                   id=f"{path.name}:{line}")


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def shape(text: str) -> list[str]:
    """The lines of ``text`` with every number replaced and white space runs folded."""
    lines = (" ".join(_NUMBER.sub("#", line).split()) for line in text.strip().splitlines())
    return [line for line in lines if line]


_FLOAT = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _round_floats(text: str) -> str:
    """Floats to 12 significant digits: docs show values, not their last bit."""
    return _FLOAT.sub(lambda m: f"{float(m.group()):.12g}", text)


class _FloatChecker:
    """doctest's checker, with floats compared to 12 significant digits."""

    def __init__(self) -> None:
        import doctest

        self._base = doctest.OutputChecker()

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        return self._base.check_output(_round_floats(want), _round_floats(got), optionflags)

    def output_difference(self, example, got: str, optionflags: int) -> str:
        return self._base.output_difference(example, got, optionflags)


_TIMES = re.compile(r"\d+(?:\.\d+)?\s?(?:s|ms)\b")
_THREADS = re.compile(r"on \d+ thread\(s\)")


def normalise(text: str) -> str:
    text = _TIMES.sub("<T>", text)
    text = _THREADS.sub("on <N> thread(s)", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _env(cwd: Path, plain: bool = False) -> dict:
    path = [PKG_ROOT]
    if plain:  # a plain ``pip install .``: every optional extra fails to import
        shadow = cwd.parent / f"{cwd.name}-shadow"
        for mod in EXTRAS:
            (shadow / mod).mkdir(parents=True, exist_ok=True)
            (shadow / mod / "__init__.py").write_text("raise ImportError('not installed')\n")
        path.insert(0, str(shadow))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


# an import statement, in a script or after a doctest prompt
_IMPORTS = re.compile(r"^\s*(?:(?:>>>|\.\.\.)\s+)?(?:from|import)\s+([A-Za-z_]\w*)", re.M)


def _skip_missing_extras(text: str) -> None:
    """A block that imports an optional extra runs only where it is installed."""
    missing = sorted({m for m in _IMPORTS.findall(text)
                      if m in EXTRAS and importlib.util.find_spec(m) is None})
    if missing:
        pytest.skip(f"needs the optional extra(s) {', '.join(missing)} (not installed)")


_DATASETS = {"dailydialog": "DailyDialog", "mint": "MINT"}


def _data_link(text: str, cwd: Path) -> None:
    for folder, name in _DATASETS.items():
        if f"{folder}/" not in text:
            continue
        data = shared_data_dir()
        if data is None or not (data / folder).is_dir():
            pytest.skip(f"needs the {name} data in ../shared/data")
        (cwd / folder).symlink_to(data / folder)


@pytest.mark.parametrize("lang,text,skip,plain", list(_cases()))
def test_doc_block_runs_as_shown(lang, text, skip, plain, tmp_path):
    if skip:
        pytest.skip(skip)
    if not plain:
        _skip_missing_extras(text)
    _data_link(text, tmp_path)
    if lang == "python" and text.lstrip().startswith(">>>"):  # a doctest session
        import doctest

        test = doctest.DocTestParser().get_doctest(text, {}, "block", None, 0)
        runner = doctest.DocTestRunner(checker=_FloatChecker(), optionflags=doctest.ELLIPSIS |
                                       doctest.NORMALIZE_WHITESPACE)
        os.chdir(tmp_path)
        try:
            runner.run(test)
        finally:
            os.chdir(ROOT)
        assert runner.failures == 0, "doctest failed (see the output above)"
        return
    if lang == "python":
        script = tmp_path / "snippet.py"
        script.write_text(text + "\n", encoding="utf-8")
        r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(tmp_path, plain),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return
    command, *expected = text.splitlines()
    for name, body in _script_files().items():  # the inputs the docs show
        (tmp_path / name).write_text(body + "\n", encoding="utf-8")
    words = shlex.split(command[2:])
    argv = ["-m", "overlap", *words[1:]] if words[0] == "overlap" else words[1:]
    r = subprocess.run([sys.executable, *argv], cwd=tmp_path,
                       env=_env(tmp_path, plain),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    if expected:
        assert normalise(r.stdout) == normalise("\n".join(expected))


@pytest.mark.parametrize("text,args,skip", list(_shape_cases()))
def test_script_output_has_the_shape_shown(text, args, skip, tmp_path):
    if skip:
        pytest.skip(skip)
    command, *expected = text.splitlines()
    name = command.split()[2]
    files = _script_files()
    assert name in files, f"no doc block is marked <!-- doc-test: file {name} -->"
    assert args is not None, f"{command!r}: mark it <!-- doc-test: shape ARGS --> or skip it"
    _skip_missing_extras(files[name])
    (tmp_path / name).write_text(files[name] + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, name, *args.split()], cwd=tmp_path, env=_env(tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert shape(r.stdout) == shape("\n".join(expected))


def test_every_dollar_block_is_run_or_says_why_not():
    """An output listing that no test runs goes stale (docs are code)."""
    unchecked = []
    for path in DOCS:
        for lang, line, text, skip, _, prev in _blocks(path):
            shown = lang == "" and text.startswith("$ ")
            run = text.startswith(COMMANDS) or (text.startswith("$ python ")
                                                   and SHAPE.search(prev))
            if shown and not run and not skip:
                unchecked.append(f"{path.name}:{line}")
    assert not unchecked, f"output blocks no test checks: {unchecked}"


def test_shape_keeps_words_and_hides_numbers():
    assert shape("local  max_overlap(n_threads=2):   36.13s\n\n") == \
        ["local max_overlap(n_threads=#): #s"]
    assert shape("references 1,000,000 |  >0.5 4.93%") == ["references # | ># #%"]


def test_every_doc_has_blocks_and_the_runner_sees_them():
    assert len(list(_cases())) >= 4  # README's demo, Python tour and Dask blocks at least


def test_normalise_hides_only_timings():
    assert normalise("Time: 2.06 s on 2 thread(s) (read 8.1 ms, scan 0.56 s)") == \
        "Time: <T> on <N> thread(s) (read <T>, scan <T>)"
    assert normalise("[   0.07s] read") == "[   <T>] read"
    assert normalise("eval: 6,740 samples | ≥0.8: 85 (0.62%)") == \
        "eval: 6,740 samples | ≥0.8: 85 (0.62%)"


def test_user_docs_cite_no_file_users_lack():
    """README and the CLI guide stand alone: no SPEC, no ../shared paths."""
    for path in (ROOT / "README.md", ROOT / "docs" / "cli.md"):
        text = path.read_text(encoding="utf-8")
        assert "SPEC" not in text and "../shared/SPEC" not in text, path.name
