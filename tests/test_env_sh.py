"""``source scripts/env.sh`` leaves the caller's shell options as they were (issue 42, item 5).

A batch script or a Slurm setup line under ``set -euo pipefail`` keeps it after sourcing (it used to be switched
off); a shell without them does not get them.  Run by bash, in the active environment (so nothing is installed).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import REPO

SHOW = 'echo "flags=$-"; shopt -qo pipefail && echo pipefail=on || echo pipefail=off'


def _env() -> dict:
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = sys.prefix  # the active environment: env.sh uses it as it is, or says why not (then: skip)
    r = subprocess.run([sys.executable, "scripts/check_env.py", str(REPO)], cwd=REPO, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"the active environment is not the pinned set, so env.sh would install: {r.stdout.strip()[:200]}")
    return env


def _state(prelude: str) -> dict:
    r = subprocess.run(["bash", "-c", f"{prelude}\nsource scripts/env.sh\n{SHOW}"], cwd=REPO, env=_env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = dict(line.split("=", 1) for line in r.stdout.split() if "=" in line)
    return {"e": "e" in out["flags"], "u": "u" in out["flags"], "pipefail": out["pipefail"] == "on"}


def test_env_sh_keeps_the_callers_strict_mode():
    assert _state("set -euo pipefail") == {"e": True, "u": True, "pipefail": True}


def test_env_sh_adds_no_strict_mode_to_a_lenient_shell():
    assert _state("set +euo pipefail") == {"e": False, "u": False, "pipefail": False}
    assert _state("set -u") == {"e": False, "u": True, "pipefail": False}
