#!/usr/bin/env bash
# Run the test suite (unit tests, every notebook under the smoke profile, determinism).
#   ./test.sh              # everything
#   ./test.sh -k losses    # any pytest arguments
# In CI (CI set, as .ci/run runs it) the suite runs on $CODESWITCH_TEST_WORKERS pytest-xdist workers (default 2; 0: one
# process) and prints its 25 slowest tests.  Elsewhere set CODESWITCH_TEST_WORKERS=2 for the same.  tests/conftest.py
# groups the tests so that the smoke run's notebooks execute once, on one worker, and each module stays on one worker.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source scripts/env.sh
workers="${CODESWITCH_TEST_WORKERS:-}"
if [ -n "${CI:-}" ]; then
  workers="${workers:-2}"
  set -- --durations=25 "$@"
fi
if [ -n "$workers" ] && [ "$workers" != 0 ] && ! python -c "import xdist" 2>/dev/null; then
  echo "[test.sh] pytest-xdist is not installed (requirements.txt pins it): one process" >&2
  workers=0
fi
if [ -n "$workers" ] && [ "$workers" != 0 ]; then
  set -- -n "$workers" --dist loadgroup --no-loadscope-reorder "$@"
fi
exec python -m pytest "$@"
