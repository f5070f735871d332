#!/usr/bin/env bash
# The main job on the built-in data: train, export, simulate the C bundle and check parity.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/edgestream demo "$@"
