"""Every command of the README (and of the docs it sends a newcomer to) runs as written.

* Every ``python …`` and ``hf …`` command — in a ```bash block or inline in the README's text —
  runs in a **fresh shell**: no inherited ``VIRTUAL_ENV``/``PYTHONPATH``, the environment's
  ``bin/`` off ``PATH``, after the README's own ``source scripts/env.sh``.  Read-only commands
  run as printed; those that write into the repository, need a GPU or take minutes run with
  ``--help`` (which still imports the module in that shell: "No module named 'codeswitch'"
  would fail here).
* ``./reproduce.sh …`` with ``--dry-run`` (profile, every ``--set`` and every resource checked,
  nothing run; a profile file given by path is a local stand-in), ``./lab.sh`` / ``./test.sh``
  with ``--version``, from a fresh shell too.
Install commands and GPU scripts are listed as not run."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from codeswitch.pipeline import cli as pipeline

from .conftest import REPO

NOT_RUN = ("conda ", "python3.11 -m venv", ".venv/bin/pip", "scripts/device_bench.sh", "source ",
           "scripts/quick_local.sh")  # installs, GPU machines, the quick rule on real samples (notebooks: an hour)
#: the files whose ```bash blocks are checked: the README and the details it links for running things
FILES = ("README.md", "docs/running.md", "docs/performance.md")
ENTER = "source scripts/env.sh"  # the README's way into the environment


def bash_commands(name: str) -> list[list[str]]:
    text = (REPO / name).read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(words)
    return out


def inline_commands(name: str = "README.md") -> list[str]:
    """``python …`` / ``hf …`` commands quoted inline in the text (not the `python -m …` placeholders)."""
    text = re.sub(r"```.*?```", "", (REPO / name).read_text(encoding="utf-8"), flags=re.S)
    return [c for c in re.findall(r"`((?:python|hf) [^`]+)`", text.replace("\n", " ")) if "…" not in c and "..." not in c]


COMMANDS = [w for f in FILES for w in bash_commands(f)]
README = bash_commands("README.md")


def test_readme_has_the_commands_a_newcomer_needs():
    first = [c[0] for c in README]
    for cmd in ("./reproduce.sh", "./test.sh", "./lab.sh"):
        assert cmd in first, f"the README has no {cmd} command"
    assert "hf" in [c[0] for c in COMMANDS]
    assert not any(c[0] == "huggingface-cli" for c in COMMANDS), "huggingface_hub's CLI is `hf` now"
    # the way into the environment comes before any python/hf command of the README
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"{ENTER}" in text and text.index(ENTER) < min(text.index(f"`{c}") for c in inline_commands())


# --------------------------------------------------------------------------- a fresh shell
def _without(path: str, folder: str) -> str:
    return os.pathsep.join(p for p in path.split(os.pathsep) if p and not p.startswith(folder))


def fresh_env() -> dict:
    """A new login shell's environment: no VIRTUAL_ENV, no PYTHONPATH, no environment's bin/ on PATH.

    Where the checkout has its own ``.venv/`` (a fresh clone after the two commands, as in CI), that is all.  Where
    it has none (a developer's worktree on a shared, activated environment), the activated environment stays (as
    a conda user's would), and ``lib/`` of this checkout is added only when that environment imports ``codeswitch``
    from another checkout.
    """
    keep = ("HOME", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "NLTK_DATA",
            "CODESWITCH_STANDINS", "XDG_CACHE_HOME")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    path = _without(os.environ.get("PATH", "/usr/bin:/bin"), sys.prefix)
    if os.environ.get("VIRTUAL_ENV"):
        path = _without(path, os.environ["VIRTUAL_ENV"])
    env["PATH"] = path
    if not (REPO / ".venv" / "bin" / "python").exists():
        env["VIRTUAL_ENV"] = sys.prefix
        env["PATH"] = os.path.join(sys.prefix, "bin") + os.pathsep + path
        probe = subprocess.run([sys.executable, "scripts/check_env.py", str(REPO)], cwd=REPO, env=env, capture_output=True, text=True)
        if probe.returncode != 0:
            env["PYTHONPATH"] = str(REPO / "lib")
    return env


def _usable(env: dict) -> None:
    """Skip (not fail) where sourcing env.sh would install: the test must not build an environment."""
    py = REPO / ".venv" / "bin" / "python" if "VIRTUAL_ENV" not in env else sys.executable
    r = subprocess.run([str(py), "scripts/check_env.py", str(REPO)], cwd=REPO, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no ready environment for a fresh shell here: {r.stdout.strip()[:300]}")


def in_fresh_shell(command: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = fresh_env()
    _usable(env)
    return subprocess.run(["bash", "-c", f"{ENTER} && {command}"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


#: how a command is run: as printed (read-only, seconds), else the substitute (writes into the repository, needs a
#: GPU or a download, or takes minutes: --help imports the same module in the same fresh shell)
def as_run(command: str) -> str:
    words = shlex.split(command, comments=True)
    if words[:4] == ["python", "-m", "benchmarks", "cost"] and "docs/bench/gpu/bench.json" in words:
        return command  # the README's cost command: seconds, read-only
    if words[:3] == ["python", "scripts/nb.py", "dump"]:
        return command
    if words[:3] == ["python", "-m", "benchmarks"]:
        sub = [w for w in words[3:4] if not w.startswith("-")]
        return shlex.join(["python", "-m", "benchmarks", *sub, "--help"])
    if words[:2] == ["python", "-m"]:
        return shlex.join(words[:3] + ["--help"])
    if words[:2] == ["python", "scripts/nb.py"]:
        return "python scripts/nb.py --help"
    if words[:2] == ["hf", "download"]:
        return "hf download --help"
    return shlex.join(words[:2] + ["--help"])


PYTHON_COMMANDS = sorted({shlex.join(w) for w in COMMANDS if w[0] in ("python", "hf")} | set(inline_commands()))


@pytest.mark.parametrize("command", PYTHON_COMMANDS)
def test_python_commands_run_in_a_fresh_shell(command):
    run = as_run(command)
    r = in_fresh_shell(run)
    assert r.returncode == 0, f"{command!r} (run as {run!r}) in a fresh shell:\n{r.stderr[-2000:]}"
    assert "No module named" not in r.stderr and "[env] creating" not in r.stderr
    words = shlex.split(command, comments=True)
    if run.endswith("--help"):  # the options the docs use exist
        for opt in (w.split("=")[0] for w in words if w.startswith("--")):
            assert opt in r.stdout, f"{command}: no option {opt}"


def test_the_cost_command_prints_the_total_the_readme_shows():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    cmd = next(c for c in inline_commands() if c.startswith("python -m benchmarks cost docs/bench/gpu/bench.json"))
    shown = re.search(r"\*\*([\d.]+) GPU-hours\*\*", text).group(1)
    r = in_fresh_shell(cmd)
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(rf"^\| \*\*all\*\* \| \| \d+ \|(?: [\d,]+ \|)? \*\*{re.escape(shown)}\*\*", r.stdout, re.M), (shown, r.stdout[-1500:])  # after the runs and optimiser-steps columns


@pytest.mark.parametrize("script", ["./reproduce.sh", "./lab.sh", "./test.sh"])
def test_scripts_start_in_a_fresh_shell(script):
    flag = "--help" if script == "./reproduce.sh" else "--version"
    env = fresh_env()
    _usable(env)
    r = subprocess.run([script, flag], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[env] creating" not in r.stderr and "installing" not in r.stderr


# --------------------------------------------------------------------------- ./reproduce.sh, dry runs
@pytest.mark.parametrize("words", [c for c in COMMANDS if c[0] == "./reproduce.sh"], ids=shlex.join)
def test_reproduce_examples_pass_a_dry_run(words, tmp_path, monkeypatch, capsys):
    args = words[1:]
    if "--help" in args:
        return  # tests/test_pipeline.py checks that it lists every option
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
    rc = pipeline.main(args)
    captured = capsys.readouterr()
    out = captured.out
    if args[0] == "export":  # 1 in a fresh clone: no run has kept the plan's models yet, each row listed (issue 41)
        assert rc == 0 or (rc == 1 and "have no kept model" in captured.err and "run their notebooks" in captured.err), (
            rc, captured.err[-1500:])
    else:  # 1: valid, but something it needs is not here (the paper profile's hub models, offline): said, with the --check
        assert rc == 0 or (rc == 1 and "a real run would stop here" in out and "--check" in out), (rc, out[-1500:])
    assert ("dry run" in out) or ("--list" in args and "writes:" in out)


def test_reproduce_rejects_a_bad_set_value_naming_the_key(capsys):
    assert pipeline.main(["--profile", "paper", "--only", "02", "--set", 'glue.backbones=["/data/mbert"]', "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "glue.backbones[0]" in err and "mBERT-base" in err
    assert pipeline.main(["--profile", "no_such_profile", "--dry-run"]) == 2
    assert "no profile 'no_such_profile'" in capsys.readouterr().err


def test_every_command_is_covered():
    for words in COMMANDS:
        line = shlex.join(words)
        if words[0] in ("./reproduce.sh", "./test.sh", "./lab.sh", "python", "hf") or line.startswith(NOT_RUN) \
                or "scripts/device_bench.sh" in words:  # a GPU machine's measurement script
            continue
        pytest.fail(f"README/docs command not covered by this test: {line}")


# --------------------------------------------------------------------------- the README for newcomers
def test_readme_is_short_before_its_details_and_links_resolve():
    """At most 150 lines before the first link into docs/ (the details), and every relative link of the README and
    of docs/*.md points at a file that exists (and at a heading that exists, for #anchors)."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines, 1) if re.search(r"\]\(docs/", line))
    assert first <= 150, f"the first details link is on line {first}"
    assert "source scripts/env.sh" in "\n".join(lines[:first + 30])

    def anchors(path):
        heads = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
        return {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in heads}

    for md in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", md.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (md.parent / file).resolve() if file else md
            assert dest.exists(), f"{md.relative_to(REPO)}: link to {target} (no {dest})"
            if anchor and dest.suffix == ".md":
                assert anchor in anchors(dest), f"{md.relative_to(REPO)}: no heading #{anchor} in {dest.name}"
