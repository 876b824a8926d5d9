"""Run scipy's correlation tests against a checkout's ``metrics`` and count by class.

    python -m tests.reference.scipy_suite [--code DIR] [--json OUT] [-- extra pytest args]

``--code`` is the checkout whose ``metrics`` is measured (default: this one).
Prints passed/failed/errors per test class (module-level tests are grouped
under ``<module>``) and the total.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TEST_FILES = ("stats/tests/test_stats.py", "stats/tests/test_mstats_basic.py")


def scipy_test_files() -> list[Path]:
    """scipy's installed test files, or [] when scipy ships without its tests."""
    try:
        import scipy
    except ImportError:
        return []
    root = Path(scipy.__file__).resolve().parent
    files = [root / f for f in TEST_FILES]
    return files if all(f.is_file() for f in files) else []


def run(code: Path, extra: list[str] = ()) -> dict:
    """Run the suite in a subprocess; return {class: Counter(outcome)}."""
    files = scipy_test_files()
    if not files:
        raise FileNotFoundError("scipy's tests are not installed with scipy")
    import scipy

    scipy_root = Path(scipy.__file__).resolve().parent
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(code), str(REPO)])
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "tests.reference.scipy_suite.plugin", f"--rootdir={scipy_root}",
               f"--junitxml={report}", "-o", "junit_family=xunit1",
               *map(str, files), *extra]
        subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        tree = ET.parse(report)
    counts: dict = defaultdict(Counter)
    failures = []
    for case in tree.iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        if cls.startswith("test_"):
            cls = f"<{cls}>"
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "failed", "error": "errors"}.get(tag, tag)
        counts[cls][outcome] += 1
        if outcome in ("failed", "errors"):
            failures.append(f"{cls}::{case.get('name')}")
    return {"by_class": {k: dict(v) for k, v in sorted(counts.items())},
            "failures": sorted(failures)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, default=REPO,
                    help="checkout whose metrics package is measured")
    ap.add_argument("--json", type=Path, help="also write the counts and failures here")
    ap.add_argument("extra", nargs="*", help="extra pytest arguments")
    args = ap.parse_args(argv)
    res = run(args.code.resolve(), args.extra)
    total = Counter()
    print(f"{'class':32s} {'passed':>7s} {'failed':>7s} {'errors':>7s} {'skipped':>8s}")
    for cls, c in res["by_class"].items():
        total.update(c)
        print(f"{cls:32s} {c.get('passed', 0):7d} {c.get('failed', 0):7d} "
              f"{c.get('errors', 0):7d} {c.get('skipped', 0):8d}")
    print(f"{'TOTAL':32s} {total['passed']:7d} {total['failed']:7d} "
          f"{total['errors']:7d} {total['skipped']:8d}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
