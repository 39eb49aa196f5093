"""The seven notebooks: what each is and writes, which exist, and where their executed copies go.

Read by the CLI (:mod:`codeswitch.pipeline.cli`), which runs them, and by the book (:mod:`codeswitch.pipeline.book`),
which publishes their executed copies: a complete copy ``runs/<profile>/notebooks/<name>.ipynb``, and beside it the
partial copy of a last run that failed or was interrupted (``<name>.failed.ipynb`` / ``<name>.interrupted.ipynb``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..core.profiles import project_root

__all__ = ["NotebookSpec", "NOTEBOOKS", "notebooks_dir", "available", "select", "executed_dir", "PARTIAL", "partial_copy",
           "set_aside", "failed_notebooks"]


@dataclass(frozen=True)
class NotebookSpec:
    number: str
    file: str
    title: str
    artifacts: tuple[str, ...]  # what the notebook must write under figures/<profile>/

    @property
    def stem(self) -> str:
        return Path(self.file).stem


NOTEBOOKS: tuple[NotebookSpec, ...] = (
    NotebookSpec(
        "01", "01_koglish_dataset.ipynb", "Koglish: constructing code-switched data (ConCSE §3)",
        ("concse_table1", "concse_figure1", "concse_table1_exclusions"),
    ),
    NotebookSpec(
        "02", "02_koglish_glue.ipynb", "Koglish-GLUE: EN2EN / EN2CS / CS2CS (ConCSE §5.1)",
        ("concse_table2", "concse_table2_gain"),
    ),
    NotebookSpec(
        "03", "03_concse.ipynb", "ConCSE vs SimCSE on Koglish-STS (ConCSE §4, §5.2)",
        ("concse_table3", "concse_table3_figure"),
    ),
    NotebookSpec(
        "04", "04_concse_ablations.ipynb", "ConCSE ablations (ConCSE §5.3)",
        (
            "concse_table4", "concse_table5", "concse_table6", "concse_table7",
            "concse_table5_plot", "concse_table6_plot", "concse_table7_plot",
            "concse_ablation_variant", "concse_ablation_simcse_settings",
        ),
    ),
    NotebookSpec(
        "05", "05_contrastivemix.ipynb", "ContrastiveMix: zero-shot multilingual retrieval",
        (
            "contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4",
            "contrastivemix_figure1", "contrastivemix_figure2", "contrastivemix_figure3",
            "contrastivemix_section3_3",
        ),
    ),
    NotebookSpec(
        "06", "06_alignment.ipynb", "Sentence- and word-level alignment for code-switching",
        ("alignment_table3_1", "alignment_table3_2", "alignment_figure3_1"),
    ),
    NotebookSpec(
        "07", "07_calbert.ipynb", "CalBERT: Siamese pre-training for code-mixed text",
        ("calbert_table4", "calbert_table6", "calbert_table7", "calbert_table7_figure", "calbert_table8", "calbert_table9",
         "calbert_table10", "calbert_table12", "calbert_table13", "calbert_table14"),
    ),
)


def notebooks_dir(root: Path | None = None) -> Path:
    return (root or project_root()) / "notebooks"


def available(root: Path | None = None) -> list[NotebookSpec]:
    """The registered notebooks that exist in ``notebooks/``, in order."""
    nb_dir = notebooks_dir(root)
    return [s for s in NOTEBOOKS if (nb_dir / s.file).is_file()]


def select(specs: Sequence[NotebookSpec], only: str | None) -> list[NotebookSpec]:
    if not only:
        return list(specs)
    wanted = [w.strip().zfill(2) for w in only.split(",") if w.strip()]
    known = {s.number for s in NOTEBOOKS}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise SystemExit(f"--only: no notebook numbered {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    missing = [w for w in wanted if w not in {s.number for s in specs}]
    if missing:
        raise SystemExit(f"--only: notebook(s) {', '.join(missing)} are registered but not present in notebooks/ yet")
    return [s for s in specs if s.number in wanted]


def executed_dir(profile) -> Path:
    """Where a run's executed notebooks go: ``runs/<profile>/notebooks/``, or for a run with overrides
    ``runs/<profile>+<hash>/notebooks/``, named as its tables' folder (``figures/<profile>+<hash>/``) and never
    over the profile's own copies.  (The run cache stays ``runs/<profile>/``: runs are keyed by their spec.)"""
    return profile.runs_dir.parent / profile.figures_dir.name / "notebooks"


#: the partial executed copies a notebook may leave beside its complete one (:func:`set_aside`)
PARTIAL = ("failed", "interrupted")


def partial_copy(final: Path, what: str) -> Path:
    """``<name>.<what>.ipynb`` beside ``<name>.ipynb``: where a run that did not complete leaves its executed copy."""
    return final.with_name(f"{final.stem}.{what}.ipynb")


def set_aside(running: Path, final: Path, what: str) -> Path:
    """Move the executed copy of a run that did not complete (``what``: failed, interrupted) beside the complete copy,
    never over it: a complete executed notebook is replaced only by another complete one.  Returns where it went
    (``final`` when no copy was written: nothing ran)."""
    if not running.exists():
        return final
    target = partial_copy(final, what)
    os.replace(running, target)
    for other in PARTIAL:  # one partial copy: that of the last run
        if other != what:
            partial_copy(final, other).unlink(missing_ok=True)
    return target


def failed_notebooks(profile) -> list[tuple[str, str, Path]]:
    """``(notebook stem, reason, executed copy)`` of each notebook whose last run did not complete: the partial copy
    it left beside the complete one (:func:`set_aside`; a later complete run removes it), and the error in it."""
    import json

    folder = executed_dir(profile)
    out = []
    for spec in NOTEBOOKS:
        for what in PARTIAL:
            copy = partial_copy(folder / spec.file, what)
            if copy.is_file():
                out.append((spec.stem, _failure_reason(copy, what, json), copy))
    return out


def _failure_reason(copy: Path, what: str, json) -> str:
    """The error a partial executed copy shows (its first error output), else what happened to it."""
    try:
        nb = json.loads(copy.read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            for o in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
                if o.get("output_type") == "error":
                    return f"{what} in cell {cell.get('execution_count')}: {o.get('ename')}: {o.get('evalue')}"
    except (OSError, ValueError):
        pass
    return "interrupted (Ctrl-C or a signal)" if what == "interrupted" else f"{what} (no error recorded in the copy)"
