"""The claims whose smoke outcome the mini Koglish decides by how it is made (:mod:`codeswitch.koglish.synthetic`).

:data:`CONSTRUCTIONS` is the one list of them, for the koglish, glue and concse tables: claim artifact -> how the
data decide it, in one sentence.  Under the smoke profile on the mini Koglish a claim listed here reads "built into
the smoke data: <how>", never "holds" or "does not hold" (:func:`codeswitch.core.claims.built_into`, called where
``koglish.tables`` and ``glue.tables`` build their tables); on real Koglish (``--set koglish_source=<a copy>``) and in
the quick and paper profiles its verdict is computed.  The smoke data demonstrate the mechanism; the evidence is the
quick and paper profiles'.

The list sits beside the generator rather than in it: ``synthetic.py``, ``synthetic_grammar.py`` and
``synthetic_tasks.py`` are hashed into the mini Koglish's identity (:func:`codeswitch.koglish.synthetic.code_fingerprint`),
so a sentence edited here would otherwise rebuild the data and re-key every ConCSE run that reads it.  The numbers in
the sentences are read from the generator (:data:`~codeswitch.koglish.synthetic_grammar.EXCLUDABLE`,
:class:`~codeswitch.koglish.synthetic.SyntheticConfig`), never typed; the paper's are not repeated here.
"""

from __future__ import annotations

from .synthetic import SyntheticConfig
from .synthetic_grammar import EXCLUDABLE

__all__ = ["CONSTRUCTIONS"]

_DEFAULT = SyntheticConfig()

CONSTRUCTIONS: dict[str, str] = {
    "concse_table2": (
        "each task's label is set by words inside a noun phrase that the pipeline switches to Korean in most sentences "
        "(synthetic_tasks), so a model trained on English alone (EN2CS) meets its label words only as unseen Korean "
        "words at test time while CS2CS trains on them: CS2CS beats EN2CS because the mini Koglish is made so"),
    "concse_table1_exclusions": (
        f"the grammar plants {sum(EXCLUDABLE['cola'].values()):.0%} of CoLA's raw sentences as ones the pipeline must "
        "exclude (synthetic_grammar.EXCLUDABLE: fragments, pronoun-only subjects, imperatives, adjectives missing from "
        "the glossary), a share chosen near the paper's, so the measured rate lands near it by construction"),
    "concse_table1": (
        f"the mini Koglish's row counts follow from its generator's sizes (koglish.synthetic; by default "
        f"{_DEFAULT.glue_size} raw items per GLUE task, {_DEFAULT.nli_size} NLI triplets, {_DEFAULT.sts_size} pairs per "
        "STS test set) and its planted exclusions, not from the paper's data, so no count can match Table 1"),
}
