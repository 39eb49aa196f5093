#!/usr/bin/env bash
# Install the git filter that strips notebook outputs on commit, in the repository at $1 (default: here).
#
#   scripts/strip_filter.sh [REPO]     (./lab.sh runs it; run it yourself to commit notebooks from elsewhere)
#
# The filter is nbstripout (pinned in requirements.txt), run by this environment's python with
# --keep-id, so that a notebook committed by `python scripts/nb.py strip` passes through unchanged;
# .gitattributes (committed) names it for *.ipynb (filter=nbstripout, diff=ipynb).  git config is
# per repository (shared by its worktrees): a clone without it commits notebooks as they are, and
# tests/test_notebooks.py fails on outputs.
set -euo pipefail
repo="${1:-.}"
py="$(command -v python)"
"$py" -c 'import nbstripout' 2>/dev/null || { echo "strip_filter: nbstripout is not installed in $py (pip install -r requirements.txt -c constraints.txt)" >&2; exit 1; }
git -C "$repo" config filter.nbstripout.clean "\"$py\" -m nbstripout --keep-id"
git -C "$repo" config filter.nbstripout.smudge cat
git -C "$repo" config filter.nbstripout.required true
git -C "$repo" config diff.ipynb.textconv "\"$py\" -m nbstripout --keep-id -t"
grep -qs '^\*\.ipynb filter=nbstripout' "$repo/.gitattributes" || echo "warning: $repo/.gitattributes does not name the filter for *.ipynb" >&2
