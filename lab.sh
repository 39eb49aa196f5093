#!/usr/bin/env bash
# Step through the notebooks in JupyterLab, on the project's environment.
#
#   ./lab.sh                 # opens JupyterLab on notebooks/ (prints the URL with its token)
#   ./lab.sh --port 8890     # any `jupyter lab` option passes through
#
# The environment is the one ./reproduce.sh and ./test.sh use (scripts/env.sh: the active
# one if it has the pins, else .venv/).  Pick the kernel "Python 3 (ipykernel)": it is
# this environment's Python.  As root, --allow-root is added.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
case "${1:-}" in
  -h|--help)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 0 ;;
esac
source scripts/env.sh
export HF_HUB_DISABLE_PROGRESS_BARS=1  # no "Writing model shards" bars; the library's own bars remain
args=(--notebook-dir=notebooks)
if [ "$(id -u)" = 0 ]; then args+=(--allow-root); fi
exec python -m jupyter lab "${args[@]}" "$@"
