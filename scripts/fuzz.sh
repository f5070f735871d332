#!/usr/bin/env bash
# Long fuzz runs of every target (libFuzzer, ASan, UBSan): scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# Builds into build/fuzz (corpora grow there between runs; crashes are written there as <target>-crash-*).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
command -v clang >/dev/null || { echo "clang is missing: run scripts/setup.sh" >&2; exit 2; }
exec .venv/bin/python -m edgestream.fuzzing --out build/fuzz --seconds "$seconds" ${1:+--only "$@"}
