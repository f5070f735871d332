#!/usr/bin/env bash
# Run pytest arguments with the C runtime that the tests load through cffi built by clang with AddressSanitizer
# and UndefinedBehaviorSanitizer (the first report stops the run with a non-zero status); e.g.
#     bash scripts/sanitize.sh tests/test_lifetime.py
# The host engine compiled into the package is not rebuilt: tests that compare against the cffi runtime (the
# lifetime, parity and checkpoint tests) exercise the device C under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
export CC=clang
export CFLAGS="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"  # Python's own allocations are not ours to report
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
LD_PRELOAD="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
export LD_PRELOAD
exec .venv/bin/pytest -p no:cacheprovider --capture=sys "$@"  # reports go to the real stderr
