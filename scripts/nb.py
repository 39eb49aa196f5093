"""Author notebooks as plain text, commit them as output-free .ipynb.

    python scripts/nb.py build  SRC.py  notebooks/NN_name.ipynb   # percent-format -> ipynb
    python scripts/nb.py dump   notebooks/NN_name.ipynb           # ipynb -> percent-format on stdout
    python scripts/nb.py strip  notebooks/*.ipynb                 # remove outputs / execution counts

Percent format: cells start with ``# %%`` (code), ``# %% [markdown]`` (Markdown,
every line prefixed with ``# ``), or ``# %% tags=["parameters"]`` (the papermill
parameters cell).
"""

import json
import re
import sys
from pathlib import Path

import nbformat

HEADER = re.compile(r"^# %%(?P<md> \[markdown\])?(?: tags=(?P<tags>\[.*\]))?\s*$")


def build(src: Path, dst: Path) -> None:
    cells, kind, tags, buf = [], None, [], []

    def flush():
        if kind is None:
            return
        text = "\n".join(buf).strip("\n")
        if kind == "markdown":
            text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in text.splitlines())
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
            if tags:
                cell.metadata["tags"] = tags
        cells.append(cell)

    for line in src.read_text(encoding="utf-8").splitlines():
        m = HEADER.match(line)
        if m:
            flush()
            kind = "markdown" if m.group("md") else "code"
            tags = json.loads(m.group("tags")) if m.group("tags") else []
            buf = []
        else:
            buf.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i:02d}"
    dst.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


def dump(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    out = []
    for c in nb.cells:
        if c.cell_type == "markdown":
            out.append("# %% [markdown]")
            out.extend(("# " + line) if line else "#" for line in c.source.splitlines())
        else:
            tags = c.metadata.get("tags")
            out.append("# %%" + (f" tags={json.dumps(tags)}" if tags else ""))
            out.append(c.source)
        out.append("")
    return "\n".join(out)


def strip(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
        c.metadata.pop("execution", None)
        c.metadata.pop("papermill", None)
    nb.metadata.pop("papermill", None)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:] or [""]
    if cmd in ("-h", "--help"):
        print(__doc__)
    elif cmd == "build":
        build(Path(args[0]), Path(args[1]))
    elif cmd == "dump":
        print(dump(Path(args[0])))
    elif cmd == "strip":
        for a in args:
            strip(Path(a))
    else:
        sys.exit(__doc__)
