#!/usr/bin/env bash
# Regenerate every table and figure: run the numbered notebooks headlessly with papermill.
#
#   ./reproduce.sh                       # smoke profile: CPU, no network, minutes
#   ./reproduce.sh --profile paper       # the papers' settings (GPU, Hugging Face hub)
#   ./reproduce.sh --only 02,03          # some notebooks
#   ./reproduce.sh --list                # what each notebook writes
#   ./reproduce.sh --set seeds=[1]       # override a profile value (JSON)
#   ./reproduce.sh --executor local --workers 8          # runs in 8 worker processes (one GPU each), then the notebooks
#   ./reproduce.sh --only 07 --executor local --runs-per-gpu 8   # 8 small runs side by side on each GPU
#   ./reproduce.sh --executor slurm --partition gpu      # runs as Slurm job arrays (submitit), then the notebooks
#   ./reproduce.sh --profile paper --check         # what the profile needs, present or not (no network)
#   ./reproduce.sh --profile paper --dry-run       # check profile, --set values and resources; run nothing (1: missing)
#   ./reproduce.sh --profile paper --prepare DIR   # download it all into DIR; then --profile DIR/profile.yaml
#   ./reproduce.sh export --profile paper --only 03 DIR   # copy the kept models (keep_models) into DIR/<paper>/<table>/<row>/; docs/models.md
#
# Executed notebooks: runs/<profile>/notebooks/.  Tables and figures:
# figures/<profile>/ with INDEX.md (with --set: figures/<profile>+<hash of the overrides>/, and the
# executed notebooks beside them in runs/<profile>+<hash>/notebooks/).
# Interrupt at any moment and run again: finished runs are cached under runs/<profile>/
# and are not redone.
set -euo pipefail
# relative paths on the command line (--profile ./my.yaml, --set key=../data, export DIR) are relative to the
# directory the command was typed in, not to the repository this script changes into: codeswitch.pipeline.cli
export CODESWITCH_CWD="${CODESWITCH_CWD:-$PWD}"
cd "$(dirname "${BASH_SOURCE[0]}")"
case "${1:-}" in
  -h|--help)
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
    echo
    source scripts/env.sh
    exec python -m codeswitch.pipeline --help ;;  # every option, from the one parser
esac
source scripts/env.sh
exec python -m codeswitch.pipeline "$@"
