#!/usr/bin/env bash
# The project's test command (README, step 2). CI runs exactly this: system packages the tests need, a venv with
# the test extras, ruff, a strict mypy check of niceeval/, and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/coding-clis.sh
bash scripts/docker.sh start  # a Docker daemon (stopped on exit if this started it) and the base image
trap 'bash scripts/docker.sh stop' EXIT
python3 -m venv .venv
.venv/bin/pip install -q -e '.[test]'
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest -n 2  # 2 workers: the CI machine has 2 cores, and many tests wait on subprocesses
