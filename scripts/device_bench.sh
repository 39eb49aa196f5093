#!/usr/bin/env bash
# Every GPU measurement of the performance issue, in one call, into one folder.
#
#   scripts/device_bench.sh [STAGE ...]        stages: env bench memory cost ab packing (default: the first five)
#
# DEADLINE_S (seconds from the start): each stage runs under `timeout` of the time left, and a stage
# with under 20 s left is skipped, so a device call with a hard limit always ends with its files
# written (the bench writes its rows after every hot path).  `packing`: scripts/check_packing.py,
# the real ConCSE trainer with buckets, packing and packing + torch.compile (PACKING_ARGS).
#
# Output folder: $OUT if set (the device tool's output folder), else runs/bench.
# Then, back on a checkout:  python -m benchmarks record --from <that folder>
#
# Runs with the machine's own python3 and packages (a GPU image with torch and
# transformers; nothing is downloaded: every model has random weights).  Packages the
# image lacks come from ./wheelhouse (scripts/make_wheelhouse.sh builds it on a machine
# with a package index) and are installed into a private folder, never over the image's.
# Variables: PYTHON (default python3); BENCH_ARGS / MEMORY_ARGS replace the default
# arguments of the two measurements (e.g. for a quick check on a CPU, see
# docs/performance.md); PASSAGES (default 1000000).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
out="${OUT:-runs/bench}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
py="${PYTHON:-python3}"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(env bench memory cost ab)

export PYTHONPATH="$root/lib${PYTHONPATH:+:$PYTHONPATH}"
# the commit measured (bench.json, every record): the carried file first (the device's copy may hold a .git of another
# commit; write it before the call: git describe --always --dirty --abbrev=40 > runs/paper-gpu-carry/COMMIT)
if [ -z "${CODESWITCH_COMMIT:-}" ] && [ -f runs/paper-gpu-carry/COMMIT ]; then
  CODESWITCH_COMMIT="$(cat runs/paper-gpu-carry/COMMIT)"; export CODESWITCH_COMMIT
fi
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
if compgen -G "wheelhouse/*.whl" > /dev/null && ! "$py" -c "import datasets" 2> /dev/null; then
  site="${TMPDIR:-/tmp}/codeswitch-site"
  # a warm machine's earlier call (this script or gpu_notebooks.sh) may have installed them: not again (pip would warn
  # for every package already in the target), unless the wheelhouse changed
  if ! ls wheelhouse/*.whl | cmp -s - "$site/.codeswitch-wheelhouse" 2> /dev/null; then
    "$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --upgrade --target "$site" wheelhouse/*.whl
    ls wheelhouse/*.whl > "$site/.codeswitch-wheelhouse"
  fi
  export PYTHONPATH="$PYTHONPATH:$site"  # on PYTHONPATH, so before the image's site-packages: the carried pins win
fi
if [ -d wheelhouse/tokenizer ] && [ -z "${CODESWITCH_BENCH_TOKENIZER:-}" ]; then
  export CODESWITCH_BENCH_TOKENIZER="$root/wheelhouse/tokenizer"
fi

say() { printf '\n[device_bench %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
deadline=$(( $(date +%s) + ${DEADLINE_S:-1000000} ))

stage_env() {
  { nvidia-smi || echo "nvidia-smi: not available"; } > "$out/nvidia-smi.txt" 2>&1
  "$py" - <<'PY' | tee "$out/environment.txt"
import platform, torch, transformers
print("python", platform.python_version(), "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| transformers", transformers.__version__)
print("gpu:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
      "| bf16:", torch.cuda.is_available() and torch.cuda.is_bf16_supported())
import datasets  # carried from ./wheelhouse when the image lacks it
import benchmarks.hotpaths as H, benchmarks.memory, benchmarks.cost  # every import the stages need
import codeswitch.concse.train, codeswitch.glue.train, codeswitch.contrastivemix.train, codeswitch.contrastivemix.evaluate
print("tokenizer for host rows:", H.wordpiece_folder()[1])
PY
}
# The rows never measured first: (c)'s CUDA graphs (torch_compile: reduce-overhead; its six packed shapes over two
# encoders compile for minutes: it was cut off after 195 s on the H200, 2026-11-28) and e_bt (calbert.batched_runs'
# stacked step at K = 1, 4, 10: rows e_bt1, e_bt4, e_bt; issue 40); then the packed rows the cost model prices, the
# CUDA-graph rows of (a), (e), (f) (measured 2026-11-28, filed with `record --add`), the padded ones, and (a) last: its
# dynamic-shape compile took 255 s of the H200 call.  A call cut off by its time limit keeps the rows measured before
# it (the bench writes them after every path).
BENCH_PATHS="c_pk_cg,e_bt,host,a_pk,b_pk,c_pk,e_pk,f_pk,b_hf_pk,a_pk_cg,e_pk_cg,f_pk_cg,b,c,d,d_srt,e,f,b_hf,b_rnd,c_sep,t_a,t_d,a"
export BENCH_PATHS
stage_bench() {  # the hot paths, (a) and (a_pk) also under torch.compile
  # shellcheck disable=SC2086
  "$py" -m benchmarks ${BENCH_ARGS:---full --compile --paths $BENCH_PATHS} --out "$out" 2>&1 | tee "$out/bench.log"
}
stage_memory() {  # the end-to-end corpus encoder, texts on disk -> float16 file (tokenised once), then a 2nd model from the shards
  # shellcheck disable=SC2086
  "$py" -m benchmarks memory ${MEMORY_ARGS:---passages ${PASSAGES:-1000000} --model random:mbert-base --device cuda --models 2} \
    --workdir "${TMPDIR:-/tmp}" --out "$out" 2>&1 | tee "$out/memory.log"
}
stage_cost() {  # GPU-hours per notebook from the measured rates
  local rate=()
  if [ -f "$out/memory.json" ]; then
    rate=(--encode-rate "$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["passages_per_second"])' "$out/memory.json")")
  fi
  "$py" -m benchmarks cost "$out/bench.json" "${rate[@]}" 2>&1 | tee "$out/cost.md"
}

stage_ab() {  # each comparison interleaved A/B/A/B (×5) in one process: NaN fill on/off, cuBLASLt/cuBLAS
  local cmp
  for cmp in ${AB_COMPARISONS:-fill cublaslt}; do
    # shellcheck disable=SC2086
    "$py" -m benchmarks ab --compare "$cmp" ${AB_ARGS:---full --paths a,b,c} --out "$out" 2>&1 | tee "$out/ab_$cmp.log"
  done
}

stage_packing() {  # the real trainer, packed and compiled, on this device (a check that the settings run, with their times)
  # shellcheck disable=SC2086
  "$py" scripts/check_packing.py --device "${PACKING_DEVICE:-cuda}" ${PACKING_ARGS:-} 2> "$out/check_packing.log" | tee "$out/check_packing.jsonl"
}

failed=()
for stage in "${stages[@]}"; do
  case "$stage" in
    env|bench|memory|cost|ab|packing) ;;
    *) echo "scripts/device_bench.sh: unknown stage '$stage' (env, bench, memory, cost, ab, packing)" >&2; exit 2 ;;
  esac
  left=$(( deadline - $(date +%s) ))
  if [ "$left" -lt 20 ]; then
    say "$stage: SKIPPED (${left} s left of DEADLINE_S)"
    failed+=("$stage")
    continue
  fi
  say "$stage"
  started=$(date +%s)
  export -f "stage_$stage" say
  export out py root
  if timeout --kill-after=10 "$left" bash -c "set -euo pipefail; stage_$stage"; then
    say "$stage: done in $(( $(date +%s) - started )) s"
  else
    say "$stage: FAILED after $(( $(date +%s) - started )) s (the next stages still run)"
    failed+=("$stage")
  fi
done
say "files in $out: $(ls "$out" | tr '\n' ' ')"
if [ ${#failed[@]} -gt 0 ]; then
  say "failed stages: ${failed[*]}"
  exit 1
fi
