"""Every command in the README's ```bash blocks runs as written, at a level CI can afford:
``./reproduce.sh …`` with ``--dry-run`` (profile and every ``--set`` checked, nothing run; a
profile file given by path is a local stand-in), ``./lab.sh`` / ``./test.sh`` with ``--version``,
``python -m benchmarks …`` and ``hf download`` with ``--help`` (and the options the README
uses must exist).  Install commands and GPU scripts are listed as not run."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from codeswitch.core import pipeline

from .conftest import REPO

NOT_RUN = ("conda ", "python3.11 -m venv", ".venv/bin/pip", "scripts/device_bench.sh")  # installs, GPU machines


def readme_commands() -> list[list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(words)
    return out


COMMANDS = readme_commands()


def test_readme_has_the_commands_a_newcomer_needs():
    first = [c[0] for c in COMMANDS]
    for cmd in ("./reproduce.sh", "./test.sh", "./lab.sh", "hf"):
        assert cmd in first, f"the README has no {cmd} command"
    assert not any(c[0] == "huggingface-cli" for c in COMMANDS), "huggingface_hub's CLI is `hf` now"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "lib") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("VIRTUAL_ENV", sys.prefix)  # scripts/env.sh: use this (suitable) environment
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


@pytest.mark.parametrize("words", [c for c in COMMANDS if c[0] == "./reproduce.sh"], ids=shlex.join)
def test_reproduce_examples_pass_a_dry_run(words, tmp_path, monkeypatch, capsys):
    args = words[1:]
    if "--profile" in args:
        name = args[args.index("--profile") + 1]
        if name.startswith("/"):
            pytest.skip(f"{name} is what --prepare writes (tests/test_preflight.py checks such a profile)")
        if name.endswith((".yaml", ".yml")):  # "your own profile file": a local stand-in, a copy of smoke
            shutil.copy(REPO / "configs" / "smoke.yaml", tmp_path / name)
            monkeypatch.chdir(tmp_path)
    if "--prepare" in args:
        pytest.skip("--prepare downloads (tested against a fake hub in tests/test_preflight.py)")
    if "--check" in args:  # the preflight: 0 when everything is present, 1 with the list of what is missing
        if "paper-ci" in args:
            pytest.skip("needs the stand-ins built first (tests/test_paper_ci.py checks paper-ci with the preflight)")
        rc = pipeline.main(args)
        out = capsys.readouterr()
        assert rc in (0, 1), out.err
        assert re.search(r"^\d+ resources, \d+ present, \d+ missing$", out.out, re.M), out.out[-500:]
        return
    if "--list" not in args and "--dry-run" not in args:
        args = args + ["--dry-run"]
    assert pipeline.main(args) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert ("dry run" in out) or ("--list" in args and "writes:" in out)


def test_reproduce_rejects_a_bad_set_value_naming_the_key(capsys):
    assert pipeline.main(["--profile", "paper", "--only", "02", "--set", 'glue.backbones=["/data/mbert"]', "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "glue.backbones[0]" in err and "mBERT-base" in err
    assert pipeline.main(["--profile", "no_such_profile", "--dry-run"]) == 2
    assert "no profile 'no_such_profile'" in capsys.readouterr().err


@pytest.mark.parametrize("script", ["./reproduce.sh", "./lab.sh", "./test.sh"])
def test_scripts_start_in_this_environment(script):
    flag = "--help" if script == "./reproduce.sh" else "--version"
    r = subprocess.run([script, flag], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[env] creating" not in r.stderr and "installing" not in r.stderr


def test_bench_and_hf_commands_exist_with_the_options_used():
    env = _env()
    for words in COMMANDS:
        if words[:3] == ["python", "-m", "benchmarks"]:
            sub = [w for w in words[3:4] if not w.startswith("-")]
            r = subprocess.run([sys.executable, "-m", "benchmarks", *sub, "--help"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, (words, r.stderr[-1500:])
            for opt in (w for w in words[3:] if w.startswith("--")):
                assert opt in r.stdout, f"{shlex.join(words)}: no option {opt}"
        elif words[:2] == ["hf", "download"]:
            hf = shutil.which("hf", path=env["PATH"])
            assert hf, "the hf CLI (huggingface_hub) is not installed"
            r = subprocess.run([hf, "download", "--help"], env=env, capture_output=True, text=True, timeout=60)
            assert r.returncode == 0
            for opt in (w for w in words[2:] if w.startswith("--")):
                assert opt in r.stdout, f"{shlex.join(words)}: no option {opt}"
        elif words[:3] == ["python", "-m", "codeswitch.core.standins"]:
            continue  # builds the stand-ins: tests/test_standins.py runs and checks it
        elif words[0] in ("./reproduce.sh", "./test.sh", "./lab.sh") or words[0].startswith(NOT_RUN) or shlex.join(words).startswith(NOT_RUN):
            continue
        else:
            pytest.fail(f"README command not covered by this test: {shlex.join(words)}")
