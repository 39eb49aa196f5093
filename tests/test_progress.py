"""Progress bars in a notebook a person runs (issue 42: executed exercises kept frozen ``0%`` tqdm bars).

A saved notebook keeps no widget state, so Lab (and the book) show a widget's text fallback, the bar as first
displayed. :func:`codeswitch.core.progress.progress` in a Jupyter kernel replaces each widget, once closed, with its
final line (or nothing, for an inner loop's bar): the saved outputs hold plain lines that end where the loop ended.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from .conftest import REPO

CELL = """\
from codeswitch.core.progress import progress

for run in progress(range(3), desc="outer", unit="run"):
    for epoch in progress(range(4), desc="inner", unit="epoch"):
        pass
for epoch in progress(range(5), desc="stopped early", unit="epoch"):
    if epoch == 2:
        break
"""


def saved_outputs(nb) -> list[dict]:
    return [out for cell in nb.cells for out in cell.get("outputs", [])]


@pytest.mark.slow  # starts a kernel: a few seconds
def test_a_saved_notebook_keeps_final_lines_not_frozen_bars(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    for var in ("CODESWITCH_NO_PROGRESS", "CODESWITCH_LOG_PROGRESS", "CODESWITCH_PROGRESS_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(REPO / "lib"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = saved_outputs(nb)
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert not widgets, f"widgets left in the saved notebook (Lab shows their text fallback, frozen): {widgets}"
    text = "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in outputs)
    assert not re.search(r"\b0%\|", text), text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 2, lines  # the outer loop's final line and the stopped loop's; the inner bars left nothing
    assert lines[0].startswith("[outer] 3/3 run  100% | "), lines
    assert lines[1].startswith("[stopped early] 2/5 epoch ") or lines[1].startswith("[stopped early] 3/5 epoch "), lines


@pytest.mark.parametrize("n, shown", [(3, False), (5, True)])
def test_min_total_hides_the_bar_of_a_loop_that_finishes_at_once(n, shown, monkeypatch):
    """``progress(..., min_total=k)``: no bar for fewer than k items (from ``total``, else the iterable's length), so
    smoke's small corpora and query lists do not fill the log; a bar otherwise (``CODESWITCH_NO_PROGRESS`` unset)."""
    from codeswitch.core.progress import progress

    monkeypatch.delenv("CODESWITCH_NO_PROGRESS", raising=False)
    bar = progress(range(n), desc="queries", min_total=4)
    assert bar.disable is not shown and list(bar) == list(range(n))
    bar = progress(total=n, desc="passages", min_total=4)
    assert bar.disable is not shown
    bar.close()
    monkeypatch.setenv("CODESWITCH_NO_PROGRESS", "1")
    assert progress(range(10), min_total=4).disable  # the switch still wins
