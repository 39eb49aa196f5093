#!/usr/bin/env bash
# The quick profile on local copies of the real data (issue 38, item 4):
#
#   scripts/quick_local.sh DATA_DIR [--only 02,03,04,06,07] [--out DIR] [--record FILE] [--packing] [--times FILE]
#                          [--note TEXT] [reproduce.sh options...]
#
# DATA_DIR has the layout of ../shared/data/README.md (koglish_sample, sail2017, iitp_product_reviews, cfilt_en_hi,
# hinglish_pairs, muse).  The script
#   1. writes a delta profile, DIR/<name of DIR>.yaml (default runs/quick-local/quick-local.yaml), that extends this repository's
#      configs/quick.yaml and points every dataset at DATA_DIR and every fine-tuned encoder at the bundled MiniLM
#      (sentence-transformers/all-MiniLM-L6-v2), offline (codeswitch.pipeline.quick_local);
#   2. runs ./reproduce.sh --profile DIR/quick-local.yaml --only NN for each notebook, timing each;
#   3. writes the record (default docs/quick.md): every table with its claim verdicts, each notebook's wall time, the
#      commit and the machine.  Runs of some notebooks each (--only) into the same --out add up: DIR/times.tsv keeps
#      the times of earlier runs (a notebook run again: its last time), so the record covers every notebook run.
#      A notebook that the record already at FILE holds and that no run into this --out has timed is carried from
#      it, its row marked "carried" and each of its sections under a line naming the record (date, commit) that wrote
#      it: a record of some notebooks never drops the others' (codeswitch.pipeline.quick_local.earlier_record).
# --packing keeps quick's packed training steps (a GPU's fast path; the default trains padded, faster on a CPU).
# --times FILE: the runs were computed elsewhere (scripts/quick_gpu.sh: a GPU, with --runs-only) and their caches copied
# into --out: the notebooks build here from them and the record takes the times in FILE, not this machine's.
# --note TEXT: a line under the record's header (repeatable).
# Relative paths are relative to the directory the command is typed in.  Exit code: reproduce.sh's worst.
set -euo pipefail
export CODESWITCH_CWD="${CODESWITCH_CWD:-$PWD}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
abs() { case "$1" in /*) echo "$1" ;; *) echo "$CODESWITCH_CWD/$1" ;; esac; }
if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
data_dir="$(abs "$1")"; shift
only="02,03,04,06,07"; out="$here/runs/quick-local"; record="$here/docs/quick.md"; extra=(); packing=(); times_from=""; notes=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --only=*) only="${1#--only=}"; shift ;;
    --out) out="$(abs "$2")"; shift 2 ;;
    --record) record="$(abs "$2")"; shift 2 ;;
    --packing) packing=(--packing); shift ;;
    --times) times_from="$(abs "$2")"; shift 2 ;;
    --note) notes+=(--note "$2"); shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
cd "$here"
source scripts/env.sh
profile="$(python -m codeswitch.pipeline.quick_local delta "$data_dir" "$out/$(basename "$out").yaml" --only "$only" ${packing[@]+"${packing[@]}"})"
times="$out/times.tsv"
: > "$times.partial"
worst=0
for nb in ${only//,/ }; do
  start=$(date +%s%N)
  rc=0
  ./reproduce.sh --profile "$profile" --only "$nb" ${extra[@]+"${extra[@]}"} || rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%s\t%d.%03d\t%d\n' "$nb" $((ms / 1000)) $((ms % 1000)) "$rc" >> "$times.partial"
  (( rc > worst )) && worst=$rc
done
[[ -n "$times_from" ]] && cp "$times_from" "$times.partial"  # computed elsewhere: that machine's times, not the build's
merge=("$times.partial"); [[ -f "$times" ]] && merge=("$times" "$times.partial")  # earlier runs' times, kept
python -m codeswitch.pipeline.quick_local times "$times" "${merge[@]}" >/dev/null && rm -f "$times.partial"
# the figures and run-cache folders of that profile (with --set: <name>+<hash>), as the CLI names them
figures="$(python - "$profile" ${extra[@]+"${extra[@]}"} <<'PY'
import sys
from codeswitch.core.deltas import parse_overrides
from codeswitch.core.profiles import load_profile
args, sets = sys.argv[2:], []
for i, a in enumerate(args):
    if a == "--set" and i + 1 < len(args):
        sets.append(args[i + 1])
    elif a.startswith("--set="):
        sets.append(a[len("--set="):])
p = load_profile(sys.argv[1], parse_overrides(sets))
print(p.figures_dir)
print(p.runs_dir)
PY
)"
runs="${figures#*$'\n'}"; figures="${figures%%$'\n'*}"  # the two lines: figures folder, run-cache folder
python -m codeswitch.pipeline.quick_local record "$figures" "$times" "$record" --data-dir "$data_dir" --profile "$profile" --runs "$runs" \
  ${notes[@]+"${notes[@]}"}
exit "$worst"
