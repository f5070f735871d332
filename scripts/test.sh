#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up, then run pytest on every core (pytest-xdist).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/pytest -n auto "$@"
