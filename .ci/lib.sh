# Helpers shared by .ci/run and .ci/extended (sourced, not run).
#
# Layout under the repository root (ignored by git):
#   .ci-work/venv-JOB/     one virtual environment per job
#   .ci-work/src-VARIANT/  a copy of the work tree per compiled variant, so
#                          variants never share generated C, objects or modules
#   .ci-work/logs/JOB.log  the job's full output (also streamed to stdout)
#   .ci-work/junit/JOB.xml pytest's counts, summed by ci_finish
#   .ci-work/wheel/        the package's wheel, built by the first job of the run
#                          that installs it (all, floor)
#   .ci-work/status        one "JOB STATUS SECONDS" line per finished job

CI_ROOT=$(pwd)
CI_WORK="$CI_ROOT/.ci-work"
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off
export PYTHONDONTWRITEBYTECODE=1
# two cores: build two modules at once unless told otherwise
export OVERLAP_BUILD_JOBS=${OVERLAP_BUILD_JOBS:-2}

ci_start() {
  mkdir -p "$CI_WORK/logs" "$CI_WORK/junit"
  # the wheel of an earlier run is of an earlier tree (.ci/extended, ci_wheel)
  rm -rf "$CI_WORK/wheel"
  : > "$CI_WORK/status"
  CI_T0=$(date +%s)
}

# ci_venv NAME: create (or reuse) .ci-work/venv-NAME and activate it.
ci_venv() {
  local dir="$CI_WORK/venv-$1"
  if [ ! -x "$dir/bin/python" ]; then
    "$PY" -m venv "$dir"
  fi
  # shellcheck disable=SC1091
  . "$dir/bin/activate"
  python -m pip install --quiet --upgrade pip
}

# ci_requirements GROUP...: requirement strings from pyproject.toml; GROUP is
# "build" (build-system.requires), "core" (dependencies) or an extra's name.
ci_requirements() {
  python - "$CI_ROOT/pyproject.toml" "$@" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as fh:
    meta = tomllib.load(fh)
out = []
for group in sys.argv[2:]:
    if group == "build":
        out += meta["build-system"]["requires"]
    elif group == "core":
        out += meta["project"]["dependencies"]
    else:
        out += meta["project"]["optional-dependencies"][group]
print("\n".join(out))
EOF
}

# ci_copy_tree DEST: the work tree's files (tracked and untracked, not ignored),
# without build products, into DEST.
ci_copy_tree() {
  rm -rf "$1"
  mkdir -p "$1"
  (cd "$CI_ROOT" && git ls-files -z -co --exclude-standard) \
    | (cd "$CI_ROOT" && tar --null -T - -cf -) | tar -xf - -C "$1"
}

# ci_pytest JOB ARGS...: run pytest with junit output; exit 5 (nothing
# collected) is a failure, not a pass. `python -m pytest` puts the current
# directory first on sys.path (for in-place builds); jobs that test the
# installed package set CI_PYTEST=pytest.
ci_pytest() {
  local job=$1
  shift
  local rc=0
  ${CI_PYTEST:-python -m pytest} -p no:cacheprovider --junitxml="$CI_WORK/junit/$job.xml" "$@" || rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "ci: pytest collected no tests in job $job" >&2
  fi
  return "$rc"
}

# ci_known JOB: set CI_KNOWN to the pytest arguments that mark the tests listed
# in .ci/JOB-known-failures.txt xfail(strict=True) (empty if there is no list).
ci_known() {
  local list="$CI_ROOT/.ci/$1-known-failures.txt"
  CI_KNOWN=""
  if [ -f "$list" ]; then
    export PYTHONPATH="$CI_ROOT/.ci${PYTHONPATH:+:$PYTHONPATH}"
    export OVERLAP_CI_XFAIL_LIST="$list"
    CI_KNOWN="-p xfail_listed"
    echo "known failures (xfail strict): $(grep -c '^tests' "$list") listed in .ci/$1-known-failures.txt"
  fi
}

# ci_job NAME FUNCTION: run FUNCTION in a subshell, log it, record the status.
ci_job() {
  local name=$1 fn=$2 t0 rc
  t0=$(date +%s)
  echo "=== ci job $name: start $(date -u +%H:%M:%S)"
  set +e
  ( set -euo pipefail; "$fn" ) 2>&1 | tee "$CI_WORK/logs/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  local secs=$(( $(date +%s) - t0 ))
  local word=passed
  [ "$rc" -eq 0 ] || word="FAILED(exit $rc)"
  echo "$name $word ${secs}s" >> "$CI_WORK/status"
  echo "=== ci job $name: $word in ${secs}s"
  return 0
}

# ci_finish: print the per-job table and the summed test counts; exit 1 if any
# job failed.
ci_finish() {
  local total=$(( $(date +%s) - CI_T0 ))
  echo "=== ci summary (wall ${total}s)"
  cat "$CI_WORK/status"
  "$PY" - "$CI_WORK/junit" <<'EOF'
import glob, sys
import xml.etree.ElementTree as ET
tests = failures = errors = skipped = 0
for path in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    for suite in ET.parse(path).getroot().iter("testsuite"):
        tests += int(suite.get("tests", 0))
        failures += int(suite.get("failures", 0))
        errors += int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
passed = tests - failures - errors - skipped
print(f"ci: {passed} passed, {failures + errors} failed, {skipped} skipped")
EOF
  if grep -qv ' passed ' "$CI_WORK/status"; then
    echo "ci: failed jobs: $(grep -v ' passed ' "$CI_WORK/status" | cut -d' ' -f1 | tr '\n' ' ')" >&2
    exit 1
  fi
}
