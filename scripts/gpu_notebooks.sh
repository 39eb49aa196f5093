#!/usr/bin/env bash
# Every notebook's paper path at paper size on one GPU (issue 25): profile paper-gpu, headless, into archives.
#
#   scripts/gpu_notebooks.sh [NN ...]     on the GPU machine: the notebooks given (default: 01 02 03 04 05 06 07)
#   scripts/gpu_notebooks.sh --bm25       HERE, where Pyserini and Java are: 05's BM25 runs into the run cache
#                                         (runs/paper-gpu/contrastivemix/bm25/) and the paper-size stand-in data
#                                         (runs/paper-gpu-carry/data-paper/): carry both with the device call
#
# On the GPU machine (python3 = the image's, with torch): installs the carried ./wheelhouse into a private folder
# (only distributions the image lacks, and transformers at the project's pin), builds the paper-size stand-ins the
# chosen notebooks need (python -m codeswitch.pipeline.standins --sizes paper --only ...), runs each notebook through
# the project's papermill runner (python -m codeswitch.pipeline --profile paper-gpu --only NN) with a time limit,
# then writes report.{md,json} (python -m benchmarks gpu-notebooks report): per notebook wall time, peak GPU memory,
# precision/batch sizes/device its runs recorded, finite artifacts; per run kind steps/s, sequences/s, MFU.
# Output ($OUT, else runs/gpu_notebooks): gpu_notebooks-<NN-NN>.tar.gz (logs, environment, nvidia-smi, the command,
# run records, tables, report), gpu_notebooks-<NN-NN>-notebooks.tar.gz (executed notebooks, figure images),
# report.md and log.txt; written at the end, also when a stage fails or runs out of time (trap; internal deadline).
# Back here: python -m benchmarks gpu-notebooks record <archives> --dest docs/bench/gpu/notebooks-<date> (an existing record is never written over without --force).
#
# Variables: PYTHON (default python3); DEADLINE_S (seconds after the start by which everything is archived; default
# 570, inside the device's 600 s per command); CODESWITCH_STANDINS (default /tmp/codeswitch-standins: the same
# absolute path here and there, as the BM25 records' keys hold the data paths);
# GPU_NOTEBOOKS_CPU_CHECK=1: the CPU rehearsal: device cpu, tiny caps (--set), small stand-ins with the real
# vocabulary sizes (--sizes vocab), the wheelhouse checked for CPython 3.12 manylinux but not imported (this machine's
# Python is another), the same runner, report and archives.
# GPU_NOTEBOOKS_PARALLEL=1: every notebook at once on the one GPU (each with all the time left, nproc/N CPU threads;
# the report then says the wall times are under shared load, and attributes records by their run cache folder).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
t0=$(date +%s)
py="${PYTHON:-python3}"
deadline=${DEADLINE_S:-570}
cpu_check="${GPU_NOTEBOOKS_CPU_CHECK:-}"
parallel="${GPU_NOTEBOOKS_PARALLEL:-}"
export CODESWITCH_STANDINS="${CODESWITCH_STANDINS:-/tmp/codeswitch-standins}"
carry="runs/paper-gpu-carry"  # the stand-in data travels from here (computed with the BM25 records)
bm25="runs/paper-gpu/contrastivemix/bm25"
export PYTHONPATH="$root/lib:$root${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 PYTHONHASHSEED=0
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export CODESWITCH_RUN_STATS=1  # steps, sequences and tokens in every run record (codeswitch.core.runstats)

say() { printf '[gpu_notebooks %s +%ss] %s\n' "$(date +%H:%M:%S)" "$(( $(date +%s) - t0 ))" "$*"; }
left() { echo $(( deadline - ($(date +%s) - t0) )); }

# ------------------------------------------------------------------ here: BM25 + the stand-in data, for carrying
if [ "${1:-}" = "--bm25" ]; then
  set -e
  sizes=paper; [ -n "$cpu_check" ] && sizes=vocab
  say "stand-in data (--sizes $sizes) into $CODESWITCH_STANDINS/data-paper"
  "$py" - "$sizes" <<'PY'
import sys
from codeswitch.pipeline.standins import build_data, default_root
print(build_data(default_root(), sys.argv[1]))
PY
  rm -rf "$carry.partial" && mkdir -p "$carry.partial" && cp -a "$CODESWITCH_STANDINS/data-paper" "$carry.partial/data-paper"
  rm -rf "$carry" && mv "$carry.partial" "$carry"
  say "05's BM25 runs (Pyserini) into $bm25"
  "$py" - <<'PY'
from codeswitch.contrastivemix import experiment as E
from codeswitch.contrastivemix.lucene import pyserini_version
from codeswitch.core.profiles import load_profile

prof = load_profile("paper-gpu")
stage = {s.name: s for s in E.stages(prof)}["bm25"]
stage.run(E.run_one, prof)
(stage.cache_dir / "PYSERINI_VERSION").write_text(pyserini_version() + "\n")
print(f"{len(stage)} BM25 runs cached in {stage.cache_dir} (Pyserini {pyserini_version()})")
PY
  du -sh "$carry" "$bm25"
  exit 0
fi

# ------------------------------------------------------------------ the device run
notebooks=("$@")
[ ${#notebooks[@]} -eq 0 ] && notebooks=(01 02 03 04 05 06 07)
label="$(IFS=-; echo "${notebooks[*]}")"
out="${OUT:-runs/gpu_notebooks}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
work="${TMPDIR:-/tmp}/gpu_notebooks-$label-$$"
mkdir -p "$work"/{env,logs,runs,figures,notebooks}
exec > >(tee -a "$work/log.txt") 2>&1
printf 'notebook\trc\tseconds\tstatus\tstart\n' > "$work/timings.tsv"  # start: epoch seconds (the report attributes records by time)
echo "cd $root && $(printf '%q ' env ${OUT:+OUT=$OUT} ${cpu_check:+GPU_NOTEBOOKS_CPU_CHECK=1} ${parallel:+GPU_NOTEBOOKS_PARALLEL=1} DEADLINE_S=$deadline scripts/gpu_notebooks.sh "$@")" > "$work/env/command.txt"
done_archiving=""

finish() {  # collect, report, archive: always, once
  [ -n "$done_archiving" ] && return
  done_archiving=1
  say "collecting run records, tables and executed notebooks"
  (cd "$root" && for d in runs/paper-gpu*/; do [ -d "$d" ] && find "${d%/}" -name '*.json' -size -4M -not -path '*/checkpoints/*'; done 2> /dev/null |
     while read -r f; do grep -q '"checksum"' "$f" && mkdir -p "$work/runs/$(dirname "${f#runs/}")" && cp -p "$f" "$work/runs/${f#runs/}"; done)  # -p: the mtime says which notebook wrote it
  for d in "$root"/figures/paper-gpu*/; do [ -d "$d" ] && cp -r "$d". "$work/figures/"; done
  for d in "$root"/runs/paper-gpu*/notebooks/; do [ -d "$d" ] && cp "$d"*.ipynb "$work/notebooks/" 2> /dev/null; done
  timeout 60 "$py" -m benchmarks gpu-notebooks report "$work" > /dev/null 2>> "$work/log.txt" || say "report: see report.md (some notebook not ok, or the report failed)"
  (cd "$work" && tar czf "$out/gpu_notebooks-$label.tar.gz" --exclude='*.png' --exclude='*.pdf' --exclude='*.svg' env logs runs figures timings.tsv log.txt report.md report.json 2> /dev/null)
  (cd "$work" && tar czf "$out/gpu_notebooks-$label-notebooks.tar.gz" notebooks figures 2> /dev/null)
  cp "$work/report.md" "$out/report.md" 2> /dev/null
  cp "$work/log.txt" "$out/log.txt"
  ls -la "$out"
  cat "$work/report.md" 2> /dev/null
}
trap finish EXIT
stop_notebooks() {  # parallel mode's notebooks: each background job's `timeout` (it passes the signal on), then the job
  local j
  for j in $(jobs -p); do pkill -TERM -P "$j" 2> /dev/null; kill "$j" 2> /dev/null; done
}
trap 'say "interrupted"; stop_notebooks; exit 130' INT TERM

# environment: the GPU, versions, the command, the commit: the carried COMMIT file first (written here before the call by
# `git describe --always --dirty --abbrev=40 > runs/paper-gpu-carry/COMMIT`; the device's copy holds a .git of the
# session's first commit, not of the one sent)
if [ -z "${CODESWITCH_COMMIT:-}" ] && [ -f "$carry/COMMIT" ]; then  # else git's own (codeswitch.core.provenance.git_state)
  CODESWITCH_COMMIT="$(cat "$carry/COMMIT")"; export CODESWITCH_COMMIT  # what every record, figure and report names
fi
{ nvidia-smi || echo "nvidia-smi: not available"; } > "$work/env/nvidia-smi.txt" 2>&1

# wheels: into a private folder, only what the image lacks (and transformers at the pin)
site="${TMPDIR:-/tmp}/codeswitch-site"
if compgen -G "wheelhouse/*.whl" > /dev/null; then
  mapfile -t wheels < <("$py" - wheelhouse/*.whl <<'PY'
import importlib.metadata as md, re, sys
pinned = {"transformers"}
for path in sys.argv[1:]:
    name, version = re.match(r"([^-]+)-([^-]+)-", path.rsplit("/", 1)[-1]).groups()
    key = re.sub(r"[-_.]+", "-", name).lower()
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        have = None
    if have is None or (key in pinned and have.split("+")[0] != version):
        print(path)
PY
)
  say "wheelhouse: ${#wheels[@]} of $(ls wheelhouse/*.whl | wc -l) wheels to install into $site"
  if [ -n "$cpu_check" ]; then  # another Python here: check that every wheel installs on the image, do not import them
    rm -rf "$site.check"
    "$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --no-compile --target "$site.check" \
      --python-version 3.12 --implementation cp --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 --platform any wheelhouse/*.whl \
      && say "wheelhouse: every wheel installs for CPython 3.12 manylinux x86-64 ($(ls "$site.check" | wc -l) entries)" \
      || say "wheelhouse: FAILED to install for CPython 3.12"
  elif [ ${#wheels[@]} -gt 0 ]; then
    "$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --no-compile --target "$site" "${wheels[@]}" \
      || say "wheelhouse: install FAILED"
    export PYTHONPATH="$PYTHONPATH:$site"
    case " ${wheels[*]} " in *transformers-*) export PYTHONPATH="$root/lib:$root:$site" ;; esac  # the pin before the image's
  fi
else
  say "no wheelhouse/ (scripts/make_wheelhouse.sh): using the packages there are"
fi
if [ -d "$bm25" ] && ! "$py" -c "import pyserini" 2> /dev/null; then  # its keys then name the pinned version (lucene.pyserini_version)
  say "BM25: Pyserini not here; $(ls "$bm25"/*.json 2> /dev/null | wc -l) carried BM25 records (Pyserini $(cat "$bm25/PYSERINI_VERSION" 2> /dev/null))"
fi

"$py" - "$work/env/environment.json" <<'PY' || say "environment check FAILED (a package is missing: see above)"
import importlib, json, platform, sys, time, torch, transformers
from benchmarks.measure import code_commit, peak_for_name
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda, "transformers": transformers.__version__,
       "transformers_from": transformers.__file__, "gpu": gpu, "bf16": torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
       "peak_bf16_tflops": peak_for_name(gpu) if torch.cuda.is_available() else None,
       "commit": code_commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
missing = []
for mod in ("papermill", "nbclient", "ipykernel", "datasets", "umap", "pynndescent", "bm25s", "seqeval", "nltk", "torch_struct", "benepar",
            "indic_transliteration", "ir_measures", "pytrec_eval", "submitit", "codeswitch.pipeline.cli", "benchmarks.gpu_notebooks"):
    try:
        m = importlib.import_module(mod)
        env.setdefault("modules", {})[mod] = getattr(m, "__version__", "") or ""
    except Exception as exc:
        missing.append(f"{mod}: {type(exc).__name__}: {exc}")
env["missing"] = missing
json.dump(env, open(sys.argv[1], "w"), indent=1)
print(json.dumps({k: v for k, v in env.items() if k != "modules"}))
sys.exit(1 if missing else 0)
PY

# the stand-in data (carried) and the paper-size models the chosen notebooks need
sizes=paper; [ -n "$cpu_check" ] && sizes=vocab
mkdir -p "$CODESWITCH_STANDINS"
if [ -d "$carry/data-paper" ] && [ ! -d "$CODESWITCH_STANDINS/data-paper" ]; then
  cp -a "$carry/data-paper" "$CODESWITCH_STANDINS/data-paper"
fi
names="$("$py" - "${notebooks[@]}" <<'PY'
import sys, yaml
prof = yaml.safe_load(open("configs/paper-gpu.yaml"))
section = {"01": "koglish", "02": "glue", "03": "concse", "04": "concse", "05": "contrastivemix", "06": "alignment", "07": "calbert"}
def refs(node):
    if isinstance(node, dict):
        for v in node.values(): yield from refs(v)
    elif isinstance(node, list):
        for v in node: yield from refs(v)
    elif isinstance(node, str) and "/models-paper/" in node:
        yield node.split("/models-paper/")[1]
print(",".join(sorted({n for nb in sys.argv[1:] for n in refs(prof.get(section[nb], {}))})))
PY
)"
say "stand-ins (--sizes $sizes): ${names:-none} + benepar + data, into $CODESWITCH_STANDINS"
s0=$(date +%s)
timeout -k 5 "$(( $(left) - 30 ))" "$py" -m codeswitch.pipeline.standins "$CODESWITCH_STANDINS" --sizes "$sizes" --only "${names:+$names,}benepar" \
  > "$work/logs/standins.log" 2>&1 || say "stand-ins: FAILED (logs/standins.log)"
say "stand-ins built in $(( $(date +%s) - s0 )) s; $(du -sh "$CODESWITCH_STANDINS" | cut -f1) on disk"
printf 'standins\t0\t%s\tbuilt\t%s\n' "$(( $(date +%s) - s0 ))" "$s0" >> "$work/timings.tsv"

sets=()
if [ -n "$cpu_check" ]; then
  sets=(--set device='"cpu"' --set cpu_threads=2 --set glue.max_train_samples=64 --set glue.num_train_epochs=1
        --set concse.max_train_rows=256 --set contrastivemix.train_max_queries=128 --set alignment.parallel_train_size=16
        --set alignment.linear_head.num_train_epochs=1 --set alignment.sentiment.num_train_epochs=1 --set alignment.ner.num_train_epochs=1
        --set alignment.qa.num_train_epochs=1 --set alignment.all_layers.num_train_epochs=1 --set calbert.pretrain.max_pairs=64
        --set alignment.align_layer=1)  # the vocab-size stand-ins have 2 layers (paper: 8 of mBERT's 12)
fi
run_notebook() {  # $1 = notebook, $2 = its time limit in seconds
  local nb="$1" budget="$2" s0 rc status
  if [ "$budget" -lt 20 ]; then
    say "$nb: skipped (no time left)"; printf '%s\t-1\t0\tskipped\t\n' "$nb" >> "$work/timings.tsv"; return
  fi
  say "$nb: start (limit $budget s)"
  s0=$(date +%s)
  timeout -k 10 "$budget" "$py" -m codeswitch.pipeline --profile paper-gpu --only "$nb" "${sets[@]}" > "$work/logs/$nb.log" 2>&1
  rc=$?
  status=ok; [ $rc -ne 0 ] && status=failed; [ $rc -eq 124 ] || [ $rc -eq 137 ] && status=timeout
  printf '%s\t%s\t%s\t%s\t%s\n' "$nb" "$rc" "$(( $(date +%s) - s0 ))" "$status" "$s0" >> "$work/timings.tsv"  # one short write: atomic
  say "$nb: $status (rc $rc) in $(( $(date +%s) - s0 )) s"
  tail -n 4 "$work/logs/$nb.log"
}
# kept models (keep_models: best in the paper profile) fill the device's 64 GiB disk when several notebooks run at paper
# size (seen: ENOSPC in all five training notebooks at once); GPU_NOTEBOOKS_KEEP_MODELS=none|best|all (default: none
# with GPU_NOTEBOOKS_PARALLEL, else the profile's).  keep_models enters no run key and no figures folder.
keep="${GPU_NOTEBOOKS_KEEP_MODELS:-${parallel:+none}}"
if [ -n "$keep" ]; then
  for section in glue concse contrastivemix alignment calbert; do sets+=(--set "$section.keep_models=$keep"); done
fi
if [ -n "$parallel" ]; then  # every notebook at once on the one GPU, each with all the time left (the report says so)
  per=$(( $(nproc) / ${#notebooks[@]} )); [ "$per" -lt 1 ] && per=1
  export OMP_NUM_THREADS="$per" MKL_NUM_THREADS="$per"
  export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"  # less fragmentation among the processes
  say "parallel: ${#notebooks[*]} notebooks at once, $per CPU threads each"
  budget=$(( $(left) - 30 ))  # 30 s kept for the report and the archives
  pids=()
  for nb in "${notebooks[@]}"; do run_notebook "$nb" "$budget" & pids+=($!); done
  wait "${pids[@]}"  # these PIDs: a bare `wait` also waits for the log's tee (process substitution) and never returns
else
  for nb in "${notebooks[@]}"; do run_notebook "$nb" $(( $(left) - 30 )); done  # 30 s kept for the report and the archives
fi
exit 0
