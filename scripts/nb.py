"""Author notebooks as plain text, commit them as output-free .ipynb.

    python scripts/nb.py build  SRC.py  notebooks/NN_name.ipynb   # percent-format -> ipynb
    python scripts/nb.py dump   notebooks/NN_name.ipynb           # ipynb -> percent-format on stdout
    python scripts/nb.py strip  notebooks/*.ipynb                 # remove outputs / execution counts

Percent format: cells start with ``# %%`` (code), ``# %% [markdown]`` (Markdown,
every line prefixed with ``# ``), or ``# %% tags=["parameters"]`` (the papermill
parameters cell).  ``dump`` writes each cell's id and its other metadata into its
header (``# %% id="cell-07" metadata={"jupyter": {"source_hidden": true}}``) and
``build`` keeps them, so a dump–edit–build round trip changes only what was edited;
a cell written without an id gets a new one that no other cell has.
"""

import json
import re
import sys
from pathlib import Path

import nbformat

HEADER = re.compile(r"^# %%(?P<md> \[markdown\])?(?P<rest>.*)$")
FIELDS = ("id", "tags", "metadata")  # header fields, each ``name=<JSON>``, in this order


def _header_fields(line: str, where: str) -> dict:
    """The ``name=<JSON>`` fields after ``# %%`` / ``# %% [markdown]`` (``where``: file:line, for errors)."""
    rest, out = HEADER.match(line).group("rest").strip(), {}
    decoder = json.JSONDecoder()
    while rest:
        name, eq, tail = rest.partition("=")
        name = name.strip()
        if not eq or name not in FIELDS:
            raise SystemExit(f"{where}: cell header {line!r}: expected {', '.join(f'{f}=<JSON>' for f in FIELDS)}")
        try:
            value, end = decoder.raw_decode(tail)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{where}: cell header {line!r}: field {name!r} is not JSON ({e.msg})") from None
        out[name] = value
        rest = tail[end:].strip()
    return out


def build(src: Path, dst: Path) -> None:
    cells, ids, kind, fields, buf = [], [], None, {}, []

    def flush():
        if kind is None:
            return
        text = "\n".join(buf).strip("\n")
        if kind == "markdown":
            text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in text.splitlines())
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
        cell.metadata.update(fields.get("metadata", {}))
        if fields.get("tags"):
            cell.metadata["tags"] = fields["tags"]
        cells.append(cell)
        ids.append(fields.get("id"))  # None: given one below

    for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
        if HEADER.match(line):
            flush()
            kind = "markdown" if HEADER.match(line).group("md") else "code"
            fields, buf = _header_fields(line, f"{src}:{n}"), []
        else:
            buf.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    # the kernel ipykernel installs ("Python 3 (ipykernel)"): with another display name Lab marks a notebook unsaved on opening
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    taken = [i for i in ids if i]
    twice = sorted({i for i in taken if taken.count(i) > 1})
    if twice:
        raise SystemExit(f"{src}: cell ids used twice: {', '.join(twice)}")
    fresh = (f"cell-{i:02d}" for i in range(10**6) if f"cell-{i:02d}" not in set(taken))
    for c, i in zip(nb.cells, ids):
        c["id"] = i or next(fresh)
    dst.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


def dump(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    out = []
    for c in nb.cells:
        meta = {k: v for k, v in c.metadata.items() if k != "tags"}
        head = "# %%" + (" [markdown]" if c.cell_type == "markdown" else "")
        head += f" id={json.dumps(c.get('id'))}" if c.get("id") else ""
        head += f" tags={json.dumps(c.metadata['tags'])}" if c.metadata.get("tags") else ""
        head += f" metadata={json.dumps(meta, sort_keys=True)}" if meta else ""
        out.append(head)
        if c.cell_type == "markdown":
            out.extend(("# " + line) if line else "#" for line in c.source.splitlines())
        else:
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
