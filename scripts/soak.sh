#!/usr/bin/env bash
# Soak run (not in CI): every learning learner learns a drifting stream in the compiled C for HOURS hours
# (default 1) with saves, restores, resets and torn images; see scripts/soak.py.
set -euo pipefail
cd "$(dirname "$0")/.."
HOURS="${1:-1}"
exec .venv/bin/python scripts/soak.py --minutes "$(python3 -c "print(float('$HOURS') * 60)")" "${@:2}"
