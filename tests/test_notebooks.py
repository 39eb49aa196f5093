"""Every notebook runs under the smoke profile and writes its artifacts; notebooks are committed clean."""

from __future__ import annotations

import nbformat
import pytest

from codeswitch.core import pipeline

from .conftest import REPO, SmokeRun
from .helpers import check_artifacts

SPECS = pipeline.available(REPO)


def test_notebooks_are_registered():
    files = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    registered = {s.file for s in pipeline.NOTEBOOKS}
    assert [f for f in files if f not in registered] == [], "every notebook in notebooks/ must be registered in codeswitch.core.pipeline.NOTEBOOKS"


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name}: a code cell has outputs"
            assert cell.execution_count is None, f"{path.name}: a code cell has an execution count"
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: needs exactly one cell tagged 'parameters'"
    assert "profile" in tagged[0].source and "overrides" in tagged[0].source
    assert "trust_remote_code=True" not in "\n".join(c.source for c in nb.cells)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.stem)
def test_notebook_writes_its_artifacts(spec, smoke_run):
    executed = smoke_run.ensure(spec)
    fig_dir = smoke_run.root / "figures" / "smoke"
    assert executed == smoke_run.root / "runs" / "smoke" / "notebooks" / spec.file and executed.is_file()
    check_artifacts(fig_dir, spec)


@pytest.mark.slow
def test_smoke_run_is_deterministic(smoke_run, tmp_path_factory):
    """A second smoke run of every notebook, from an empty cache, gives byte-identical result CSVs."""
    if not SPECS:
        pytest.skip("no notebooks yet")
    first = smoke_run.ensure_all()
    second = SmokeRun(tmp_path_factory.mktemp("smoke_run_b")).ensure_all()
    a_dir, b_dir = first.root / "figures" / "smoke", second.root / "figures" / "smoke"
    a = sorted(p.name for p in a_dir.glob("*.csv"))
    assert a and a == sorted(p.name for p in b_dir.glob("*.csv"))
    for name in a:
        assert (a_dir / name).read_text() == (b_dir / name).read_text(), f"{name} differs between two smoke runs"
