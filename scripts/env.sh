# Sourced by ./reproduce.sh, ./test.sh and ./lab.sh: make sure a suitable Python environment is active.
# Sourced by hand (`source scripts/env.sh`, bash or zsh, at the repository root), it enters that
# environment in the current shell, so that `python -m …`, `python scripts/…` and `hf …` work there.
#
# "Suitable" = Python >= 3.11 with every pin of requirements.txt installed and the
# `codeswitch` package importable from this checkout (scripts/check_env.py says).
# If the active environment (a venv or conda env) is suitable it is used as is;
# otherwise a local .venv at the repository root is created (once) and filled from
# requirements.txt + constraints.txt (torch stays on 2.13.0, CPU build on a CPU
# machine), then re-synced whenever those files change.
# The caller's shell options (-e, -u, pipefail, …) are restored when this file returns, whatever they were: a batch
# script or a Slurm setup line that runs under `set -euo pipefail` keeps it (tests/test_env_sh.py).
_cs_saved_opts="$(set +o)"  # bash and zsh: the commands that set every option back
case $- in *e*) _cs_saved_opts="$_cs_saved_opts; set -e" ;; esac  # a command substitution does not inherit -e: from $-
_cs_restore_opts() { eval "$_cs_saved_opts"; unset _cs_saved_opts; }
case $- in  # in an interactive shell, a failing command must not close the terminal: no -e there
  *i*) _cs_interactive=1 ;;
  *) _cs_interactive=""; set -euo pipefail ;;
esac
_cs_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
_cs_stamp_of() { cat "$_cs_root/requirements.txt" "$_cs_root/requirements-nodeps.txt" "$_cs_root/constraints.txt" "$_cs_root/pyproject.toml" | sha256sum | cut -c1-16; }

_cs_pip() {  # pip, minus the noise of unreadable local index folders some machines configure
  "$_cs_venv/bin/python" -m pip "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

_cs_reason=""
_cs_suitable() {  # $1 = python executable; what is missing or off ends up in $_cs_reason
  _cs_reason="$("$1" "$_cs_root/scripts/check_env.py" "$_cs_root" 2>&1)"
}

_cs_pick_python() {
  for py in python3.11 python3.12 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 12) else 1)' 2>/dev/null; then
      command -v "$py"; return 0
    fi
  done
  echo "error: Python 3.11 or 3.12 is needed (found none on PATH); or use conda: conda env create -f environment.yml" >&2
  return 1
}

if [ -n "${VIRTUAL_ENV:-}${CONDA_PREFIX:-}" ] && [ "${VIRTUAL_ENV:-}" != "$_cs_root/.venv" ] && _cs_suitable python; then
  echo "[env] using the active environment: $(command -v python)" >&2
else
  if [ -n "${VIRTUAL_ENV:-}${CONDA_PREFIX:-}" ] && [ "${VIRTUAL_ENV:-}" != "$_cs_root/.venv" ]; then
    echo "[env] not using the active environment ${VIRTUAL_ENV:-${CONDA_PREFIX:-}}: it does not match the pinned set:" >&2
    printf '%s\n' "$_cs_reason" | head -n 8 >&2
    echo "[env] (install the pins there: pip install -r requirements.txt -c constraints.txt && pip install --no-deps -r requirements-nodeps.txt && pip install --no-deps -e .; or deactivate it)" >&2
  fi
  _cs_venv="$_cs_root/.venv"
  if [ ! -x "$_cs_venv/bin/python" ]; then
    _cs_py="$(_cs_pick_python)" || { _cs_restore_opts; return 1; }
    echo "[env] creating $_cs_venv with $_cs_py" >&2
    "$_cs_py" -m venv "$_cs_venv" || { _cs_restore_opts; return 1; }
  fi
  _cs_want="$(_cs_stamp_of)"
  if [ "$(cat "$_cs_venv/.codeswitch-stamp" 2>/dev/null)" != "$_cs_want" ] || ! _cs_suitable "$_cs_venv/bin/python"; then
    echo "[env] installing the pinned dependency set into .venv (first time: several minutes)" >&2
    _cs_pip install --quiet --upgrade pip setuptools wheel >&2 || true
    _cs_pip install --quiet -r "$_cs_root/requirements.txt" -c "$_cs_root/constraints.txt" >&2 || { _cs_restore_opts; return 1; }
    _cs_pip install --quiet --no-deps -r "$_cs_root/requirements-nodeps.txt" >&2 || { _cs_restore_opts; return 1; }
    _cs_pip install --quiet --no-deps --no-build-isolation -e "$_cs_root" >&2 || { _cs_restore_opts; return 1; }
    "$_cs_venv/bin/python" "$_cs_root/scripts/check_env.py" "$_cs_root" >&2 || { _cs_restore_opts; return 1; }
    echo "$_cs_want" > "$_cs_venv/.codeswitch-stamp"
  fi
  export VIRTUAL_ENV="$_cs_venv"
  export PATH="$_cs_venv/bin:$PATH"
  unset PYTHONHOME || true
fi
export TOKENIZERS_PARALLELISM="${TOKENIZERS_PARALLELISM:-false}"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
_cs_restore_opts  # the caller's -e/-u/pipefail as they were (not switched off: issue 42)
