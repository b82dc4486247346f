#!/usr/bin/env bash
# The project's test command (README, step 2). CI runs exactly this: system packages the tests need, one venv per
# supported Python with the test extras, ruff and a strict mypy check of niceeval/ (once), the whole pytest suite on
# the oldest and the newest supported Python, and the README's example suite on the one between.
set -euo pipefail
cd "$(dirname "$0")/.."
OLDEST=3.11
BETWEEN=3.12
NEWEST=3.13

python_of() {  # VERSION: an interpreter of that version (PATH, then pyenv's versions), or a message saying how
    local version=$1 found=""
    if command -v "python$version" >/dev/null && "python$version" -c '' 2>/dev/null; then
        found=$(command -v "python$version")
    else  # a pyenv shim answers for a version that is installed but not selected: look in pyenv's versions
        found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$version".*/bin/python 2>/dev/null | sort -V | tail -1)
    fi
    if [ -z "$found" ]; then
        echo "scripts/test.sh: Python $version is not installed (e.g. pyenv install $version); the suite runs on" \
             "$OLDEST and $NEWEST, the example suite on $BETWEEN" >&2
        exit 1
    fi
    echo "$found"
}

venv() {  # VERSION DIR: DIR, a venv of that Python with niceeval and its test extras installed
    local python
    python=$(python_of "$1")
    [ -x "$2/bin/python" ] && "$2/bin/python" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$1')" \
        || "$python" -m venv --clear "$2"
    "$2/bin/pip" install -q -e '.[test]'
}

bash scripts/system-deps.sh
bash scripts/coding-clis.sh
bash scripts/docker.sh start  # a Docker daemon (stopped on exit if this started it) and the base image
trap 'bash scripts/docker.sh stop' EXIT
venv "$OLDEST" .venv
venv "$NEWEST" ".venv-$NEWEST"
venv "$BETWEEN" ".venv-$BETWEEN"
.venv/bin/ruff check .
.venv/bin/mypy
# The example suite as a user runs it (`niceeval run`): it passes, and writes nothing to stderr (no thread left
# running, no file left open: ResourceWarnings shown).
if ! example_errors=$(".venv-$BETWEEN/bin/python" -W default::ResourceWarning -m niceeval.cli run 2>&1 >/dev/null) \
    || [ -n "$example_errors" ]; then
    echo "scripts/test.sh: the example suite on Python $BETWEEN failed or wrote to stderr:" >&2
    echo "$example_errors" >&2
    exit 1
fi
# 2 workers: the CI machine has 2 cores, and many tests wait on subprocesses
.venv/bin/python -m pytest -n 2
".venv-$NEWEST/bin/python" -m pytest -n 2
