"""`./lab.sh`: JupyterLab at the repository root, opened on notebooks/, with the git filter that strips outputs on commit.

Both tests work on a throwaway clone, so that the filter is never configured in the developer's own repository."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

from .conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _env(clone) -> dict:
    env = dict(os.environ)
    env.update(VIRTUAL_ENV=sys.prefix, PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
               PYTHONPATH=str(clone / "lib"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x")
    return env


@pytest.fixture
def clone(tmp_path):
    """A clone of this checkout's working tree as committed, plus the scripts as they are here (uncommitted edits too)."""
    dest = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{REPO}", str(dest)], check=True, capture_output=True)
    for f in ("lab.sh", "scripts/strip_filter.sh", "scripts/env.sh", "scripts/check_env.py", ".gitattributes",
              "requirements.txt", "requirements-nodeps.txt"):
        shutil.copy2(REPO / f, dest / f)
    return dest


def _git(clone, *args, env) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True, text=True, env=env).stdout


def test_strip_filter_is_installed_and_strips_outputs_on_commit(clone):
    env = _env(clone)
    r = subprocess.run(["scripts/strip_filter.sh", "."], cwd=clone, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "nbstripout --keep-id" in _git(clone, "config", "filter.nbstripout.clean", env=env)
    assert _git(clone, "check-attr", "filter", "notebooks/03_concse.ipynb", env=env).strip().endswith("filter: nbstripout")
    # committed notebooks pass through the filter unchanged (no spurious "modified" after installing it)
    assert "notebooks/" not in _git(clone, "status", "--porcelain", "--", "notebooks", env=env)
    # a notebook run in Lab: outputs and execution counts in the file, none in the commit
    path = clone / "notebooks" / "03_concse.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.execution_count = 7
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a result\n")]
    nbformat.write(nb, path)
    assert "notebooks/03_concse.ipynb" in _git(clone, "status", "--porcelain", env=env)  # the tree sees the outputs...
    _git(clone, "add", "notebooks/03_concse.ipynb", env=env)
    assert not _git(clone, "diff", "--cached", "--", "notebooks", env=env).strip()  # ...the index gets the stripped file
    committed = nbformat.reads(_git(clone, "show", "HEAD:notebooks/03_concse.ipynb", env=env), as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in committed.cells if c.cell_type == "code")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_lab_opens_the_repository_root_on_notebooks(clone):
    env = _env(clone)
    port, token = _free_port(), "codeswitch-test"
    proc = subprocess.Popen(["./lab.sh", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
                             f"--IdentityProvider.token={token}"], cwd=clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline, root = time.time() + 120, None
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=5) as resp:
                    root = json.load(resp)
                break
            except OSError:
                time.sleep(1)
        assert root is not None, proc.stdout.read() if proc.poll() is not None else "JupyterLab did not answer in 120 s"
        names = {item["name"] for item in root["content"]}
        assert {"notebooks", "figures", "lib", "README.md"} <= names, names  # the repository root, not notebooks/
        with urllib.request.urlopen(f"{base}/?token={token}", timeout=10) as resp:  # / redirects to the notebooks folder
            assert resp.geturl().split("?")[0].endswith("/lab/tree/notebooks"), resp.geturl()
        assert "nbstripout --keep-id" in _git(clone, "config", "filter.nbstripout.clean", env=env)  # lab.sh installed it
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def test_notebooks_name_the_kernel_lab_starts():
    """Issue 42: a notebook whose kernelspec display name differs from the kernel's ("Python 3" against
    "Python 3 (ipykernel)") is marked unsaved as soon as Lab opens it. Each names ipykernel's python3 kernel as installed."""
    import json

    from ipykernel.kernelspec import get_kernel_dict

    want = {"name": "python3", "display_name": get_kernel_dict()["display_name"], "language": "python"}
    assert want["display_name"] == "Python 3 (ipykernel)"
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        assert json.loads(path.read_text(encoding="utf-8"))["metadata"]["kernelspec"] == want, path.name
