#!/usr/bin/env bash
# Step through the notebooks in JupyterLab, on the project's environment.
#
#   ./lab.sh                 # JupyterLab at the repository root, opened on notebooks/ (prints the URL with its token)
#   ./lab.sh --port 8890     # any `jupyter lab` option passes through
#
# The file browser starts in notebooks/ and reaches the whole repository: figures/ (tables,
# figures, INDEX.md) and runs/ (the executed notebooks).  The environment is the one
# ./reproduce.sh and ./test.sh use (scripts/env.sh: the active one if it has the pins, else
# .venv/).  Pick the kernel "Python 3 (ipykernel)": it is this environment's Python.
# First it installs the git filter that strips notebook outputs on commit (nbstripout, pinned in
# requirements.txt; .gitattributes names the filter), so running a notebook here leaves nothing to
# commit.  As root, --allow-root is added.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
case "${1:-}" in
  -h|--help)
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
    exit 0 ;;
esac
source scripts/env.sh
scripts/strip_filter.sh .
export HF_HUB_DISABLE_PROGRESS_BARS=1  # no "Writing model shards" bars; the library's own bars remain
args=(--ServerApp.root_dir="$PWD" --FileContentsManager.preferred_dir=notebooks --LabApp.default_url=/lab/tree/notebooks)
if [ "$(id -u)" = 0 ]; then args+=(--allow-root); fi
exec python -m jupyter lab "${args[@]}" "$@"
