"""The rows and columns of the alignment paper's Tables 3.1 and 3.2: which systems (how the encoder was aligned before
fine-tuning) each table compares, on which GLUECoS tasks and splits.  Data only: the Config checks its
``figure_system`` against them and :mod:`codeswitch.alignment.plan` builds the runs from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["System", "AlignTable", "TABLE3_1", "TABLE3_2", "TABLES"]


@dataclass(frozen=True)
class System:
    """One row of Table 3.1/3.2: how the encoder was aligned before fine-tuning."""

    row: str
    objective: Literal["sentence", "word"] | None = None  # Lc, Lm, or no alignment
    data: Literal["parallel", "lexicon"] | None = None
    script: Literal["devanagari", "roman"] = "devanagari"
    random_head: bool = False  # "Baseline (rand)": an untrained linear head


@dataclass(frozen=True)
class AlignTable:
    name: str  # artifact name
    table: str  # reported.* table id
    mode: Literal["all_layers", "linear_head"]
    columns: tuple[tuple[str, str, str], ...]  # (column label, task, split)
    rows: tuple[System, ...]
    skip: frozenset = frozenset()  # (row, task) pairs the paper did not run
    caption: str = ""


TABLE3_1 = AlignTable(
    name="alignment_table3_1",
    table="table3_1",
    mode="all_layers",
    columns=(("dev", "sentiment", "validation"), ("test", "sentiment", "test")),
    rows=(
        System("Baseline"),
        System("Lc (|| Devanagari)", "sentence", "parallel", "devanagari"),
        System("Lm (|| Devanagari)", "word", "parallel", "devanagari"),
        System("Lc (MUSE Devanagari)", "sentence", "lexicon", "devanagari"),
        System("Lm (MUSE Devanagari)", "word", "lexicon", "devanagari"),
    ),
    caption="GLUECoS Hi–En sentiment (weighted F1) after aligning all encoder layers (Table 3.1)",
)
TABLE3_2 = AlignTable(
    name="alignment_table3_2",
    table="table3_2",
    mode="linear_head",
    columns=(("NER dev", "ner", "validation"), ("QA dev", "qa", "validation")),
    rows=(
        System("Baseline"),
        System("Baseline (rand)", random_head=True),
        System("Lm (|| Roman)", "word", "parallel", "roman"),
        System("Lc (|| Roman)", "sentence", "parallel", "roman"),
        System("Lm (|| Devanagari)", "word", "parallel", "devanagari"),
        System("Lc (|| Devanagari)", "sentence", "parallel", "devanagari"),
        System("Lc (MUSE Roman)", "sentence", "lexicon", "roman"),
        System("Lm (MUSE Roman)", "word", "lexicon", "roman"),
    ),
    skip=frozenset({("Lc (MUSE Roman)", "ner"), ("Lm (MUSE Roman)", "ner")}),
    caption="GLUECoS Hi–En NER (entity F1) and QA (SQuAD v2 F1) with an aligned linear head on the frozen encoder (Table 3.2)",
)
TABLES = {"table3_1": TABLE3_1, "table3_2": TABLE3_2}
