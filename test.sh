#!/usr/bin/env bash
# Run the test suite (unit tests, every notebook under the smoke profile, determinism).
#   ./test.sh              # everything
#   ./test.sh -k losses    # any pytest arguments
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source scripts/env.sh
exec python -m pytest "$@"
