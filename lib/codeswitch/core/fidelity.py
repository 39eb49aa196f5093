"""The fidelity ledger: every known difference between a paper, its authors' released code and this project.

One registry, :data:`LEDGER`, of typed :class:`Deviation` entries: what the paper says,
what the released code does, this project's default (the paper profile's), the profile
option that switches to the other reading (section, key, value — only options that exist;
a test builds each one into its profile section), the artifacts it affects, a status, and the
released files the released-code column read (``source``: ``owner/repo@commit:path``; required
of every row that says what released code does, :data:`SOURCE_RULE`).
``docs/fidelity.md`` is generated from it (a test fails when the file is stale)::

    python -m codeswitch.core.fidelity            # rewrite docs/fidelity.md
    python -m codeswitch.core.fidelity --check    # exit 1 if docs/fidelity.md is stale

and each notebook's first cells show their paper's rows: ``fidelity.table("05")``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["Option", "Deviation", "LEDGER", "STATUSES", "PAPERS", "NOTEBOOK_PAPERS", "RELEASED_REPOS", "SOURCE_RULE",
           "cites_released_code", "source_problems", "entries", "table", "show", "render", "main"]

PAPERS = ("ConCSE", "ContrastiveMix", "Alignment", "CalBERT")
NOTEBOOK_PAPERS = {"01": "ConCSE", "02": "ConCSE", "03": "ConCSE", "04": "ConCSE", "05": "ContrastiveMix", "06": "Alignment", "07": "CalBERT"}

STATUSES = {
    "named option": "the default is one reading; the option switches to the other",
    "both shown": "the generated table shows both readings (extra rows or columns)",
    "ablation only": "the other reading is run as an ablation artifact, not as an option of the main table",
    "no option": "a documented choice with no switch",
    "not yet an option": "a known difference this project does not let you switch yet",
    "not yet reproduced": "the paper's analysis or table is not produced yet",
    "not reproducible": "the paper's step cannot be repeated from what was released",
}


#: the authors' released repositories (GitHub), per paper
RELEASED_REPOS = {
    "ConCSE": ("jjy961228/ConCSE",),
    "ContrastiveMix": ("DoJunggeun/contrastivemix",),
    "Alignment": ("BarahFazili/AlignmentForCS",),
    "CalBERT": ("aditeyabaral/calbert",),
}
NOT_RELEASED = "not released"
#: one cited released file: repository, commit (7-40 hex digits) and the file's path at that commit (a glob or
#: ``{a,b}`` brace list may name several files of one folder)
SOURCE_RE = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)@(?P<commit>[0-9a-f]{7,40}):(?P<path>[^\s;@]+)$")
SOURCE_RULE = (
    "a row whose released_code says what the released code does (anything but '—' and texts beginning 'not released') "
    "names, in source, at least one 'owner/repo@commit:path': the paper's released repository (RELEASED_REPOS), the "
    "commit read and the file's path at that commit"
)


@dataclass(frozen=True)
class Option:
    """A profile setting: ``<section>.<key>`` (dotted into nested mappings) set to ``value``; section ``""``: a
    top-level key of the profile (``precision``)."""

    section: str
    key: str
    value: Any

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.key}" if self.section else self.key

    def __str__(self) -> str:
        return f"{self.dotted}: {json.dumps(self.value, ensure_ascii=False)}"


@dataclass(frozen=True)
class Deviation:
    id: str
    paper: str  # one of PAPERS
    notebooks: tuple[str, ...]  # "01" … "07"
    topic: str
    paper_says: str
    released_code: str
    default: str  # this project's default (the paper profile)
    option: Option | None  # the switch to the other reading; None: none exists (see status)
    artifacts: tuple[str, ...]
    status: str  # one of STATUSES
    issue: str = ""  # where it was raised, e.g. "#18.1"
    # the released files the released_code column reads, each "owner/repo@commit:path" (SOURCE_RULE)
    source: tuple[str, ...] = ()

    def __post_init__(self):
        if self.paper not in PAPERS:
            raise ValueError(f"{self.id}: paper {self.paper!r} not in {PAPERS}")
        if self.status not in STATUSES:
            raise ValueError(f"{self.id}: status {self.status!r} not in {sorted(STATUSES)}")
        if (self.option is None) == (self.status == "named option"):
            raise ValueError(f"{self.id}: status 'named option' needs an option, and only it has one")
        bad = [n for n in self.notebooks if NOTEBOOK_PAPERS.get(n) != self.paper]
        if bad:
            raise ValueError(f"{self.id}: notebook(s) {bad} are not {self.paper}'s")
        problems = source_problems(self)
        if problems:
            raise ValueError(f"{self.id}: " + "; ".join(problems))


def cites_released_code(released_code: str) -> bool:
    """Whether a row's ``released_code`` says what released code does: all but "—" (the code says nothing about it,
    or there is no such code) and texts that begin "not released" (no code for it; the released data may be
    described after a semicolon)."""
    text = released_code.strip()
    return text != "—" and not text.startswith(NOT_RELEASED)


def source_problems(d: "Deviation") -> list[str]:
    """What :data:`SOURCE_RULE` finds wrong with a row's ``source`` (empty: nothing)."""
    out = []
    if isinstance(d.source, str):
        return [f"source must be a tuple of 'owner/repo@commit:path' strings, not the string {d.source!r}"]
    if cites_released_code(d.released_code) and not d.source:
        out.append("its released_code cites released code, so source must name the file(s) and commit(s): "
                   "'owner/repo@commit:path' (or begin released_code with 'not released', or write '—')")
    for cite in d.source:
        m = SOURCE_RE.match(cite)
        if m is None:
            out.append(f"source {cite!r} is not 'owner/repo@commit:path' (a 7-40 digit hex commit, a file path)")
        elif m["repo"] not in RELEASED_REPOS[d.paper]:
            out.append(f"source {cite!r}: {m['repo']} is not {d.paper}'s released repository ({', '.join(RELEASED_REPOS[d.paper])})")
        elif m["path"].endswith("/"):
            out.append(f"source {cite!r} names a folder, not a file")
    return out


_D = Deviation
_O = Option
LEDGER: tuple[Deviation, ...] = (
    # ------------------------------------------------------------------ ConCSE / Koglish (01–04)
    _D("koglish-replace", "ConCSE", ("01",), "where the noun phrase is switched",
       "the selected NP is replaced by its translation (§3.2)",
       "not released (the construction code); in every row of the released datasets the NP's first occurrence in the sentence is replaced",
       "first occurrence (as the released data)", _O("koglish", "replace", "span"),
       ("concse_table1", "concse_table1_exclusions"), "named option"),
    _D("koglish-np-order", "ConCSE", ("01",), "which noun phrase is selected",
       "one NP, chosen top-down in the parse tree", "not released",
       "pre-order walk over NP nodes", _O("koglish", "np_order", "level"),
       ("concse_table1", "concse_table1_exclusions"), "named option"),
    _D("koglish-translator", "ConCSE", ("01",), "NP translation",
       "Google Translate", "not released (the datasets only)",
       "an open Hugging Face MT model (paper profile); a glossary in smoke", _O("koglish", "translator", "google"),
       ("concse_table1",), "named option"),
    _D("koglish-table1-totals", "ConCSE", ("01",), "Table 1 totals",
       "CoLA 6,759, STS12 4,286, STS14 3,112 in the Total column", "not released (no totals); the released datasets' rows",
       "Total is the sum of the splits; the paper's totals that differ from the sums of its own splits (CoLA −27, STS12 "
       "+2, STS14 −10) are a note under the table, computed from core.reported, and left out of its claim",
       None, ("concse_table1",), "no option", "#26.1"),
    _D("koglish-parser", "ConCSE", ("01",), "constituency parser",
       "\"a pre-trained Constituency parser [21]\" (§1, §2, §3.2 step 1): [21] is Joshi, Peters & Hopkins (2018), the "
       "span-based parser AllenNLP ships", "not released",
       "benepar (benepar_en3, Kitaev & Klein); koglish.parser: ptb reads gold trees (the smoke data's), not the paper's "
       "parser.  Still no option: AllenNLP's span parser needs allennlp (last release 2.10.1, 2022, pinned to torch < 1.13 "
       "and transformers < 4.21, against this project's pins) and its ELMo model archive, which this environment can "
       "neither install beside the project nor download; no stand-in is offered under its name",
       None, ("concse_table1", "concse_table1_exclusions"), "not yet an option", "#39.2"),
    _D("koglish-np-length", "ConCSE", ("01",), "shortest noun phrase switched",
       "\"we selectively extracted the NP nodes, ensuring the inclusion of nouns and noun phrases\" (§3.2 step 1): a single "
       "noun may be switched",
       "not released (the construction code); issue 39 reports that the released rows agree with at least 2 tokens "
       "(not checked here)",
       "an NP of at least 2 tokens (koglish.min_np_tokens: 2)", _O("koglish", "min_np_tokens", 1),
       ("concse_table1", "concse_table1_exclusions"), "named option", "#39.2"),
    _D("koglish-pronouns", "ConCSE", ("01",), "pronoun-only noun phrases",
       "an NP_0 that \"contained only pronouns (e.g., It, That, This)\" is passed over for the next NP (§3.2 step 1)",
       "not released",
       "a broader list: about 60 pronouns, determiners and quantifiers (codeswitch.koglish.construct.PRONOUNS) and the tags "
       "PRP, PRP$, EX, WP, WP$, WDT (koglish.pronouns: broad); the paper's three follow \"e.g.\": examples, not a list, "
       "so the option (It, That, This alone: construct.PAPER_PRONOUNS) is the narrowest reading, not the paper's list",
       _O("koglish", "pronouns", "paper"), ("concse_table1", "concse_table1_exclusions"), "named option", "#39.2"),
    _D("koglish-extra-exclusions", "ConCSE", ("01",), "exclusions beyond the paper's",
       "excluded: a sentence that is all one NP, and one where no NP qualifies down to the leaves (§3.2 step 1)",
       "not released",
       "also excluded: np_not_token_aligned (the NP's first occurrence is inside another word) and translation_unchanged "
       "(the translation is empty or the English NP itself); concse_table1_exclusions counts each reason in its own column "
       "(koglish.exclusions: all); the option keeps those rows, switched by the rule (the first occurrence, inside a word "
       "too; an unchanged translation leaves the sentence as it was)",
       _O("koglish", "exclusions", "paper"), ("concse_table1", "concse_table1_exclusions"), "named option", "#39.2"),
    _D("koglish-exclusion-sample", "ConCSE", ("01",), "sentences the exclusion rate is measured on",
       "\"GLUE's COLA task data excluded 29.1% of the entire data\" (§3.2 step 1)", "not released",
       "the first 2,000 training sentences of each GLUE task (koglish.construct_n: 2000); the option constructs the whole "
       "training split (validation and test are not constructed either way)", _O("koglish", "construct_n", 0),
       ("concse_table1_exclusions",), "named option", "#39.2"),
    _D("koglish-annotation", "ConCSE", ("01",), "manual annotation (§3.2 step 3)",
       "annotators check and correct the switched sentences", "not released",
       "not attempted; the paper profile reads the released (annotated) datasets", None,
       ("concse_table1",), "not reproducible"),
    _D("mbert-casing", "ConCSE", ("02", "03", "04"), "mBERT checkpoint",
       "mBERT-base, citing Devlin et al. [15]; no casing named (§5.1, §5.2, Tables 8 and 9)",
       "run_mbert.sh runs main.py --model mbert_uncased, for which main.py and model.py load bert-base-multilingual-uncased "
       "(model.py also knows mbert_cased, which no run script passes); ConCSE_base_run.sh: mbert_uncased too",
       "bert-base-multilingual-uncased for Koglish-GLUE and ConCSE (the released scripts'); the option: the cased model "
       "for Koglish-GLUE (ConCSE: concse.backbones.mBERT-base.model)",
       _O("glue", "backbones.mBERT-base.model", "bert-base-multilingual-cased"),
       ("concse_table2", "concse_table2_gain"), "named option", "#39.3",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/run_mbert.sh", "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/main.py", "jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/ConCSE_base_run.sh")),
    _D("glue-batch-total", "ConCSE", ("02",), "Table 8 batch size",
       "batch sizes of Table 8 (128 for mBERT and XLM-R-base, 64 for the large models), trained on two GPUs",
       "{single,pair}_sent_config.json: BATCH_SIZE 64 for every backbone; every run_*.sh sets CUDA_VISIBLE_DEVICES=0 "
       "and main.py wraps no DataParallel: one GPU, 64 in total, not 64 × 2; no released result file reproduces Table 2",
       "Table 8's batch size as the total batch over all devices (the paper's text: no released result reproduces the "
       "printed table); the released 64 per backbone is the option", _O("glue", "backbones.mBERT-base.batch_size", 64),
       ("concse_table2",), "named option", "#26.2",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/single_sent_config.json", "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/pair_sent_config.json", "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/run_mbert.sh", "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/main.py")),
    _D("glue-mbart-50", "ConCSE", ("02",), "mBART checkpoint",
       "mBART [24]: Liu et al. (2020), the 25-language model (mbart-large-cc25)",
       "model.py and main.py load facebook/mbart-large-50 (MBart50TokenizerFast)",
       "facebook/mbart-large-50 (the released code's)", _O("glue", "backbones.mBART-large.model", "facebook/mbart-large-cc25"),
       ("concse_table2", "concse_table2_gain"), "named option", "#39.2",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/model.py", "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/main.py")),
    _D("glue-group-by-length", "ConCSE", ("02",), "training batch composition",
       "—", "Loader.py: DataLoader(..., sampler=RandomSampler(ds)): batches drawn at random, padded to MAX_SEQ_LEN",
       "length-grouped batches (glue.group_by_length: true; speed): each batch holds rows of similar length, so which "
       "rows share a batch differs", _O("glue", "group_by_length", False),
       ("concse_table2", "concse_table2_gain"), "named option", "#39.2",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/Loader.py",)),
    _D("precision-bf16", "ConCSE", ("02", "03", "04"), "numeric precision",
       "—",
       "fp32: no autocast, half precision or GradScaler anywhere in the Koglish-GLUE or ConCSE scripts",
       "precision: auto = bf16 autocast on a GPU that has it (ConCSE's loss always in fp32), fp32 on CPU",
       _O("", "precision", "fp32"),
       ("concse_table2", "concse_table3", "concse_table4", "concse_table5", "concse_table6", "concse_table7"),
       "named option", "#39.2",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/trainer.py", "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/main.py", "jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/trainer.py", "jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/main.py")),
    _D("glue-mbart-head", "ConCSE", ("02",), "mBART classification head",
       "a head on [CLS]",
       "model.py: Hugging Face's BertForSequenceClassification, XLMRobertaForSequenceClassification and "
       "MBartForSequenceClassification (its head reads the last `</s>`)",
       "Hugging Face's head: first token for BERT/XLM-R, the last `</s>` for mBART (as the released code)", None,
       ("concse_table2",), "no option",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/model.py",)),
    _D("glue-cola-metric", "ConCSE", ("02",), "CoLA metric",
       "accuracy (GLUE itself uses Matthews correlation)", "trainer.py: accuracy for cola (as sst2, rte, mrpc, qnli)",
       "accuracy, Matthews correlation recorded beside it", None,
       ("concse_table2",), "both shown",
       source=("jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/trainer.py",)),
    _D("concse-dense-head", "ConCSE", ("03", "04"), "sentence vector",
       "\"we use '[CLS]' as M_φ final representation\" (§5.2; §5.1: \"the representation of the '[CLS]' token\")",
       "main.py's default --pooler_type cls (no run script sets it) adds MLPLayer, a Linear(H, H) + tanh on [CLS], not in "
       "the checkpoint (randomly initialised), in training (cl_forward, cross_forward) and in evaluation (sentemb_forward: "
       "the mlp_only_train branch commented out)",
       "the released code's: [CLS] → Linear + tanh (normal(0, initializer_range), zero bias) in training and evaluation "
       "(concse.head: dense_tanh; ConCSE and SimCSE); the option: [CLS] itself in both, no dense layer",
       _O("concse", "head", "cls"), ("concse_table3", "concse_table4", "concse_table5", "concse_table6", "concse_table7"),
       "named option", "#39.2",
       source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/model.py", "jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/main.py")),
    _D("concse-h5-negatives", "ConCSE", ("03", "04"), "H5's negative block",
       "Eq. 5: S(h, h⁻)", "S(ĥ, h⁻): anchored on the code-switched premise",
       "the released code's (variant official)", _O("concse", "variant", "paper"),
       ("concse_table3", "concse_table4", "concse_table5", "concse_table6", "concse_table7", "concse_ablation_variant"),
       "named option",
       source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/model.py",)),
    _D("concse-triplet-distance", "ConCSE", ("03", "04"), "triplet distance",
       "Eq. 7: squared Euclidean distance", "Euclidean distance ‖a − b‖₂",
       "the released code's (variant official)", _O("concse", "variant", "paper"),
       ("concse_table3", "concse_table4", "concse_table5", "concse_table6", "concse_table7", "concse_ablation_variant"),
       "named option",
       source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/model.py",)),
    _D("concse-reduction", "ConCSE", ("03", "04"), "loss reduction",
       "sums over the batch", "batch mean of every term (as SimCSE)",
       "batch mean", None, ("concse_table3",), "no option",
       source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/model.py",)),
    _D("concse-simcse-settings", "ConCSE", ("03", "04"), "SimCSE baseline settings",
       "Table 9: batch 512/512/128; maximum length not stated (\"the rest ... identical to SimCSE\")",
       "config_simcse_base.json: batch 64, maximum length 32 (large: 128, 32)",
       "the released code's for Table 3 and Table 4's SimCSE row; both settings in the ablation",
       _O("concse", "simcse_settings", "matched"),
       ("concse_table3", "concse_table4", "concse_ablation_simcse_settings"), "named option", "#18.5",
       source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/config_simcse_base.json", "jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/config_simcse_large.json")),
    _D("concse-selection", "ConCSE", ("03",), "model selection",
       "—", "ConCSE_base_run.sh trains one model per STS test set (--task stsb, sts12 … sts16, sick), each keeping its best epoch on Koglish STS-B dev (main.py's EarlyStopping)",
       "best epoch on Koglish STS-B dev; one model scored on all seven tests", None,
       ("concse_table3",), "no option",
       source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/ConCSE_base_run.sh", "jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/main.py")),
    _D("concse-std", "ConCSE", ("03", "04"), "± over seeds",
       "mean ± std (not said which std); p-values from a t-test",
       "not released", "population std (the paper's p-values follow from its ± only then)",
       _O("concse", "std_ddof", 1), ("concse_table3",), "named option"),
    # ------------------------------------------------------------------ ContrastiveMix (05)
    _D("cm-bm25", "ContrastiveMix", ("05",), "BM25 (baseline rows and the hybrid)",
       "Pyserini BM25 as Mr.TyDi's baseline: k1 0.9, b 0.4, each language's Lucene analyser (tokenisation, stemming, stop words)",
       "README.md: python -m pyserini.search --bm25 --language ${lang_abbr} --k1 0.9 --b 0.4 on the prebuilt Mr.TyDi index",
       "Pyserini/Lucene with Mr.TyDi's per-language analysers on the local corpus (both profiles)",
       _O("contrastivemix", "bm25_implementation", "bm25s"),
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4"),
       "named option", "#18.1",
       source=("DoJunggeun/contrastivemix@153f351:README.md",)),
    _D("cm-hybrid-tuning", "ContrastiveMix", ("05",), "hybrid weight tuning",
       "tuned on a split other than the reported one (§4.1)", "evaluate_hybrid.py scores every weight 0, 0.05 … 1 on --set_name's qrels and keeps the best: tuned on the reported split itself",
       "Mr.TyDi dev → test, MIRACL train → dev", None,
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table4"), "both shown",
       source=("DoJunggeun/contrastivemix@153f351:utils/evaluate_hybrid.py",)),
    _D("cm-hybrid-missing", "ContrastiveMix", ("05",), "hybrid: a passage one run did not retrieve",
       "not said (a linear combination of the BM25 and dense scores, following Zhang et al. 2021)",
       "gets that run's lowest retrieved score, before min–max normalisation",
       "the released code's rule: where BM25 retrieves fewer passages than the depth, its last ones tie at w = 0 with "
       "every passage it missed, and any w > 0 breaks those ties by the dense score", None,
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table4"), "no option",
       source=("DoJunggeun/contrastivemix@153f351:utils/evaluate_hybrid.py",)),
    _D("cm-dictionary-case", "ContrastiveMix", ("05",), "dictionary look-up",
       "words replaced by MUSE translations", "case-sensitive look-up: BasicTokenizer(do_lower_case=False) words looked up as they are in the lower-case MUSE entries (capitalised words never switch)",
       "lower-cased look-up", _O("contrastivemix", "case_sensitive", True),
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4"), "named option",
       source=("DoJunggeun/contrastivemix@153f351:utils/code_mix.py", "DoJunggeun/contrastivemix@153f351:jax_train.py")),
    _D("cm-special-tokens", "ContrastiveMix", ("05",), "special tokens of mixed inputs",
       "—", "get_codemixed_ids rebuilds the ids word by word without [CLS]/[SEP]; training.py pools position 0: the first word piece",
       "keep [CLS]/[SEP], pool [CLS]", _O("contrastivemix", "mixed_special_tokens", False),
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4"), "named option",
       source=("DoJunggeun/contrastivemix@153f351:utils/code_mix.py", "DoJunggeun/contrastivemix@153f351:tevax/training.py")),
    _D("cm-naivemix-draw", "ContrastiveMix", ("05",), "NaiveMix sentence draw",
       "sentences code-mixed with probability r_s (§3)", "get_example: one draw of r_s for the query, one for its passages (positive and negatives together)",
       "one draw of r_s for a query, one for its passages (positive and negatives together)", None, ("contrastivemix_table1", "contrastivemix_table3"), "no option",
       source=("DoJunggeun/contrastivemix@153f351:jax_data.py",)),
    _D("cm-passage-alignment", "ContrastiveMix", ("05",), "passage-side alignment (Table 3)",
       "passages aligned with their code-mixed copies",
       "retriever_train_step_contrastive: p_contrastive_loss(p_reps, cm_p_reps) over every passage (positive and hard negatives)",
       "every passage, as the released code (tevax: p_contrastive_loss(p_reps, cm_p_reps) over all passages)",
       _O("contrastivemix", "passage_align", "positives"), ("contrastivemix_table3",), "named option", "#18.2",
       source=("DoJunggeun/contrastivemix@153f351:tevax/training.py",)),
    _D("cm-align-weight", "ContrastiveMix", ("05",), "alignment loss weight w",
       "\"We determined the loss weight parameter w through grid search on the validation set in the range of "
       "[0.001, 1]\" (§4.3)",
       "README.md's ContrastiveMix command passes --cm_loss_weight 0.1 (arguments.py's default 0.0; jax_train.py copies it "
       "to the query and passage weights): one fixed value",
       "0.1 (contrastivemix.align_weight, the released command's), not searched; the option trains every ContrastiveMix "
       "model once per weight of contrastivemix.align_weight_grid (default 0.001, 0.01, 0.1, 1: the range's decades, as "
       "the paper names the range, not the points) and keeps, per variant, the weight whose hybrid MRR@100 on the tuning "
       "split (Mr.TyDi dev, MIRACL train) is best (contrastivemix.search; the selection is a run record and a table note)",
       _O("contrastivemix", "align_weight", "search"),
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4"),
       "named option", "#39.2",
       source=("DoJunggeun/contrastivemix@153f351:README.md", "DoJunggeun/contrastivemix@153f351:arguments.py", "DoJunggeun/contrastivemix@153f351:jax_train.py")),
    _D("cm-seeds-ttest", "ContrastiveMix", ("05",), "runs per row and the significance test",
       "Table 1: \"Results significantly different (p < 0.05, paired t-test) from mDPR are starred\"; the number of runs "
       "is not stated",
       "README.md's training commands pass no --seed (one run per model, the Trainer's default seed); no significance "
       "code in the repository",
       "the profile's 5 seeds, mean ± std, and the paired t-test on per-query scores averaged over the seeds; the option: "
       "one seed, the t-test on that run's per-query scores",
       _O("contrastivemix", "seeds", [11111]),
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4"),
       "named option", "#39.2",
       source=("DoJunggeun/contrastivemix@153f351:README.md",)),
    _D("cm-mixed-dropout", "ContrastiveMix", ("05",), "dropout of the code-mixed copies",
       "—",
       "retriever_train_step_contrastive encodes the code-mixed queries with the English queries' dropout key "
       "(dropout_rng=q_dropout_rng; the mixed passages with p_dropout_rng) at the same padded shape (jax_data.py pads to "
       "q_max_len / p_max_len): the same dropout masks as their originals",
       "independent dropout: the English and code-mixed queries in one forward, each row its own masks; the option "
       "(contrastivemix.mixed_dropout: shared) encodes each encoder's code-mixed copies after its originals from the same "
       "random state at the same padded shape (the same masks; those models train padded, whatever packing says)",
       _O("contrastivemix", "mixed_dropout", "shared"),
       ("contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4"),
       "named option", "#39.2",
       source=("DoJunggeun/contrastivemix@153f351:tevax/training.py", "DoJunggeun/contrastivemix@153f351:jax_data.py")),
    _D("cm-section-3-3", "ContrastiveMix", ("05",), "§3.3 cosine analysis",
       "mean cosine of mBERT embeddings of NQ validation texts and their code-mixed copies: 0.944 (queries), 0.867 (passages); target languages not named", "—",
       "computed with the untrained backbone (first-token pooling) for the low-similarity languages, pooled in column 'all'", None,
       ("contrastivemix_section3_3",), "no option", "#18.2"),
    # ------------------------------------------------------------------ Alignment (06)
    _D("al-lc-denominator", "Alignment", ("06",), "Lc's denominator",
       "Eq. 1 as printed: the positive not in the denominator", "NT_Xent keeps the positive (InfoNCE: logits = [positive, negatives], cross-entropy)",
       "the released code's", _O("alignment", "contrastive_variant", "paper"),
       ("alignment_table3_1", "alignment_table3_2"), "named option",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_bert.py", "BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_linear.py")),
    _D("al-sentence-vector", "Alignment", ("06",), "sentence vector",
       "[CLS]", "final-layer [CLS] without an attention mask (align_bert.py: model(x)[0][:,0,:]); the pooler (align_linear.py: [1])",
       "final-layer [CLS] with the attention mask", _O("alignment", "sentence_vector", "pooler"),
       ("alignment_table3_1", "alignment_table3_2"), "named option",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_bert.py", "BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_linear.py")),
    _D("al-lm-target", "Alignment", ("06",), "Lm regulariser",
       "Eq. 2: aligned words pulled together", "not implemented: both scripts train NT_Xent on the sentence vectors plus η·R (reg_loss) only",
       "Eq. 2 on the [CLS] vectors", _O("alignment", "word_reg_on", "words"),
       ("alignment_table3_1", "alignment_table3_2"), "named option",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_bert.py", "BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_linear.py")),
    _D("al-lm-distance", "Alignment", ("06",), "Lm distance",
       "said to equal Wu & Dredze's L2 alignment", "not implemented (no word-level loss in either script)",
       "mean 1 − cos of aligned words: Lm is printed with S, \"a cosine similarity function\" (§2.1); §4 says Wu & Dredze's L2 alignment \"is the same as our word-level multilingual alignment objective\" (squared L2)",
       _O("alignment", "word_distance", "l2"),
       ("alignment_table3_1", "alignment_table3_2", "alignment_figure3_1"), "named option", "#18.4",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_bert.py", "BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_linear.py")),
    _D("al-tuning", "Alignment", ("06",), "τ and η",
       "\"For the contrastive objective Lc, we used a validation set to tune the scaling factor for the regularization "
       "term η and the temperature values. For the multilingual alignment Lm, we only tuned the scaling factor η\" (§3.1)",
       "fixed values, no search: align_bert.py NT_Xent(temperature=0.001), scaling = 0.1; align_linear.py "
       "NT_Xent(temperature=0.01), scaling = 100",
       "the released values, not tuned (alignment.all_layers / linear_head: temperature, reg_weight); the option "
       "(alignment.tune: true) aligns once per point of the released values × tune_factors (default 1, 0.1, 10: the "
       "paper gives no grid), τ × η for Lc and η alone for Lm, and fine-tunes from the point with the best held-out "
       "retrieval P@1 on the validation pairs (codeswitch.alignment.tuning; the choice is a run record)",
       _O("alignment", "tune", True), ("alignment_table3_1", "alignment_table3_2"), "named option", "#39.2",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_bert.py", "BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_linear.py")),
    _D("al-word-alignments", "Alignment", ("06",), "word alignments",
       "awesome-align", "the alignments only, as Pharaoh files (…/cfilt_en-hi_parallel/{train,valid}_alignments); no extraction code, and no script reads them",
       "the corpus's Pharaoh file where it has one, else awesome-align extraction (layer 8, p ≥ 0.9)",
       _O("alignment", "alignments", "extract"), ("alignment_table3_1", "alignment_table3_2", "alignment_figure3_1"), "named option",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/cfilt_en-hi_parallel/train_alignments", "BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/cfilt_en-hi_parallel/valid_alignments")),
    _D("al-prob-filter", "Alignment", ("06",), "alignment probability filter",
       "awesome-align's 0.9 probability threshold", "the released alignment files carry no probabilities; no extraction code",
       "extraction as awesome-align's code: softmax over each direction, threshold 1e-3, intersection; its probability (harmonic mean of the length-scaled softmaxes, max over sub-word pairs) ≥ 0.9; the released alignment files carry no probabilities and are used as released",
       _O("alignment", "align_prob_threshold", None),
       ("alignment_table3_1", "alignment_table3_2"), "named option", "#18.4",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/cfilt_en-hi_parallel/train_alignments",)),
    _D("al-romanisation", "Alignment", ("06",), "romanised Hindi",
       "the authors' own romanised text (informal spelling, e.g. 'unke nirdesh par')", "the romanised side ships as data (alignment/data/Romanized/: parallel pairs and MUSE lexicon); the scripts open a placeholder path ('./data/?.txt')",
       "the authors' Romanized/ files wherever the source has them; ITRANS generated only for sources without a romanised side — which includes the paper profile's hub IITB corpus and MUSE URL: point parallel_source/lexicon_source at a local copy of the authors' alignment/data/ to read their text",
       _O("alignment", "romanisation", "itrans"),
       ("alignment_table3_2",), "named option", "#18.4",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/data/Romanized/cfilt_en-hi_parallel/valid.tsv", "BarahFazili/AlignmentForCS@b8a879f:alignment/data/Romanized/muse_en-hi/train.tsv", "BarahFazili/AlignmentForCS@b8a879f:alignment/scripts/align_bert.py")),
    _D("al-lowercase", "Alignment", ("06",), "tokenizer casing (GLUECoS fine-tuning)",
       "fine-tuned with the GLUECoS scripts", "those scripts load the tokenizer with do_lower_case=True (for mBERT this also strips Devanagari vowel signs)",
       "lower-cased for sentiment and NER (do_lower_case=True, as BertSequence.py/BertToken.py), cased for QA (train_qa.sh passes no --do_lower_case)",
       _O("alignment", "sentiment.do_lower_case", False), ("alignment_table3_1", "alignment_table3_2"), "named option", "#18.4",
       source=("BarahFazili/AlignmentForCS@b8a879f:evaluation/Code/BertSequence.py", "BarahFazili/AlignmentForCS@b8a879f:evaluation/Code/BertToken.py", "BarahFazili/AlignmentForCS@b8a879f:evaluation/Code/train_qa.sh")),
    _D("al-qa-softmax", "Alignment", ("06",), "QA fine-tuning: positions the span softmax covers",
       "fine-tuned with the GLUECoS scripts",
       "run_squad.py pads every window to --max_seq_length (train_qa.sh: 512; the script's default 384) and its start/end softmax covers the padding too",
       "packed steps (alignment.gluecos_packing: true): each window's softmax covers its own tokens only (sentiment and "
       "NER equal the padded step up to float order; QA's loss does not); the option pads each batch to its longest "
       "window, nearer run_squad.py (the softmax covers that padding, not all 384 positions)",
       _O("alignment", "gluecos_packing", False), ("alignment_table3_1", "alignment_table3_2"), "named option", "#24",
       source=("BarahFazili/AlignmentForCS@b8a879f:evaluation/Code/run_squad.py", "BarahFazili/AlignmentForCS@b8a879f:evaluation/Code/train_qa.sh")),
    _D("al-selection", "Alignment", ("06",), "GLUECoS model selection",
       "GLUECoS protocol", "BertSequence.py scores test and validation after every epoch and saves the model whenever validation F1 improves",
       "best validation epoch, test at that epoch", _O("alignment", "sentiment.selection", "last_epoch"),
       ("alignment_table3_1",), "named option",
       source=("BarahFazili/AlignmentForCS@b8a879f:evaluation/Code/BertSequence.py",)),
    _D("al-sentiment-test", "Alignment", ("06",), "sentiment test column",
       "test F1 reported", "—",
       "the test column appears only when a labelled test file is given", None,
       ("alignment_table3_1",), "no option", "#18.4"),
    _D("al-parallel-size", "Alignment", ("06",), "parallel pairs for alignment",
       "the IIT Bombay parallel corpus (no size given)",
       "alignment/data/*/cfilt_en-hi_parallel/: 62,977 training pairs (train_alignments) and 850 validation pairs "
       "(valid.tsv) (the train.tsv itself is absent from the stored snapshot)",
       "the first 62,977 IITB training pairs (the released count, not the released selection); validation: the IITB dev "
       "split (520 pairs), or the authors' 850 when parallel_source points at their folder",
       _O("alignment", "parallel_train_size", 50000), ("alignment_table3_1", "alignment_table3_2"), "named option", "#26.2",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/cfilt_en-hi_parallel/train_alignments", "BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/cfilt_en-hi_parallel/valid.tsv")),
    _D("al-muse-split", "Alignment", ("06",), "MUSE lexicon split",
       "the MUSE en-hi bilingual lexicon", "alignment/data/*/muse_en-hi/{train,valid,test}.tsv: 30,577 / 3,822 / 3,822",
       "3,822 entries held out for early stopping by a seeded permutation (the released size, not its membership); "
       "from the full MUSE file the released test third is not held out (training sees 34,399 entries); from the "
       "authors' folder their train + valid files (34,399) are re-split the same way (30,577 for training)",
       _O("alignment", "lexicon_valid_size", 1000), ("alignment_table3_1", "alignment_table3_2"), "named option", "#26.2",
       source=("BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/muse_en-hi/train.tsv", "BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/muse_en-hi/valid.tsv", "BarahFazili/AlignmentForCS@b8a879f:alignment/data/Devanagari/muse_en-hi/test.tsv")),
    # ------------------------------------------------------------------ CalBERT (07)
    _D("cb-best-of", "CalBERT", ("07",), "reported run",
       "best of 10 runs on validation", "—",
       "the paper's: best of 10 runs (calbert.seeds) on validation, mean ± std over the same runs beside it",
       _O("calbert", "selection", "mean"),
       ("calbert_table6", "calbert_table7", "calbert_table8", "calbert_table12", "calbert_table13"), "named option", "#18.3"),
    _D("cb-sail-splits", "CalBERT", ("07",), "SAIL 2017 splits",
       "9,945 / 1,240 / 1,238 (Table 4)",
       "evaluation/sail2017/data/{train,validation,test}.csv (sentence,label): 9,944 / 1,240 / 1,238 rows (the .txt "
       "beside them: GLUECoS's processed files)",
       "the released CSVs where calbert.sail.source holds them (the loader reads both layouts, the CSVs first); the "
       "tables' notes give the sizes read from the files; GLUECoS's .txt layout (10,080 / 1,260 / 1,261) otherwise",
       None, ("calbert_table4", "calbert_table6", "calbert_table7", "calbert_table8"), "no option", "#26.3",
       source=("aditeyabaral/calbert@701612e:evaluation/sail2017/data/{train,validation,test}.csv",)),
    _D("cb-finetune-protocol", "CalBERT", ("07",), "fine-tuning backbones (Tables 6–8, 12, 13)",
       "BERT, DistilBERT (casing not stated)",
       "the result files that reproduce Tables 7, 8, 12 and 13 to three decimals are bert-base-cased.json and "
       "distilbert-base-cased.json (evaluation/{sail-2017,iitp-product-reviews}/results/ at d47d18c; "
       "evaluation/sail2017/results/ at ffdd481, the parent of e7f8402)",
       "bert-base-cased, distilbert-base-cased (the released runs')",
       _O("calbert", "backbones.BERT.model", "bert-base-uncased"),
       ("calbert_table6", "calbert_table7", "calbert_table12"), "named option", "#26.2",
       source=("aditeyabaral/calbert@d47d18c:evaluation/sail-2017/results/bert-base-cased.json", "aditeyabaral/calbert@d47d18c:evaluation/sail-2017/results/distilbert-base-cased.json", "aditeyabaral/calbert@d47d18c:evaluation/iitp-product-reviews/results/bert-base-cased.json", "aditeyabaral/calbert@d47d18c:evaluation/iitp-product-reviews/results/distilbert-base-cased.json", "aditeyabaral/calbert@ffdd481:evaluation/sail2017/results/distilbert-base-cased.json")),
    _D("cb-sail-epochs", "CalBERT", ("07",), "SAIL 2017 epochs",
       "15 epochs (Table 5)",
       "the SAIL result files (evaluation/sail-2017/results/*.json at d47d18c) record \"epoch\": 30.0",
       "30 epochs (the released runs, which reproduce Tables 7 and 8)", _O("calbert", "sail.num_train_epochs", 15),
       ("calbert_table6", "calbert_table7", "calbert_table8"), "named option", "#26.2",
       source=("aditeyabaral/calbert@d47d18c:evaluation/sail-2017/results/*.json",)),
    _D("cb-sail-batch", "CalBERT", ("07",), "SAIL 2017 batch",
       "batch size 4 (Table 5)",
       "the same result files: train_samples_per_second / train_steps_per_second = 8.0 samples per optimiser step",
       "8 samples per optimiser step (calbert.sail.batch_size, the total batch)", _O("calbert", "sail.batch_size", 4),
       ("calbert_table6", "calbert_table7", "calbert_table8"), "named option", "#26.2",
       source=("aditeyabaral/calbert@d47d18c:evaluation/sail-2017/results/*.json",)),
    _D("cb-iitp-protocol", "CalBERT", ("07",), "IITP epochs and batch",
       "Table 11's settings (50 epochs, batch 16)",
       "evaluation/iitp-product-reviews/results/*.json at d47d18c: 16 samples per step everywhere; \"epoch\" 50.0 for "
       "BERT, DistilBERT and RoBERTa fine-tuned directly and for CalBERT-BERT, 30.0 for IndicBERT, XLM-R, the other "
       "CalBERT runs and every from-scratch model (one file does not parse): no single rule",
       "50 epochs, batch 16 for every backbone (Table 11; the released runs follow no one setting)", _O("calbert", "iitp.num_train_epochs", 30),
       ("calbert_table12", "calbert_table13"), "named option", "#26.2",
       source=("aditeyabaral/calbert@d47d18c:evaluation/iitp-product-reviews/results/*.json",)),
    _D("cb-qualitative", "CalBERT", ("07",), "Tables 9 and 14 (predictions on example sentences)",
       "CalBERT-XLM-RoBERTa's predictions on four SAIL and five IITP sentences, beside their true labels", "—",
       "every fine-tuning run records its predictions on the printed sentences (fed as printed; the model is not "
       "kept); each CalBERT row's best run on validation is shown beside the paper's columns",
       None, ("calbert_table9", "calbert_table14"), "both shown", "#26.5"),
    _D("cb-pretrain-corpus", "CalBERT", ("07",), "Siamese pre-training corpus",
       "147,731 scraped code-mixed (translation, transliteration) pairs (Table 1)",
       "data/dataset.csv is in the repository's history (e7fa99f … 18995aa) but not in the stored snapshot (its blob is "
       "absent); data/sources/converted/*.json at 701612e hold only scraped fragments (about 9,000 readable records)",
       "a seeded draw of 147,731 IIT Bombay pairs, Hindi romanised to ITRANS (not the paper's social-media text; "
       "calbert.pretrain.pairs takes a folder of the released JSON layout); notebook 07's first cell says so",
       None, ("calbert_table6", "calbert_table7", "calbert_table8", "calbert_table12", "calbert_table13"),
       "not reproducible", "#26.4",
       source=("aditeyabaral/calbert@e7fa99f:data/dataset.csv", "aditeyabaral/calbert@701612e:data/sources/converted/*.json")),
    _D("cb-pretrain-lr", "CalBERT", ("07",), "Siamese pre-training learning rate",
       "2.5×10⁻⁵ (Table 3)",
       "model.fit(...) passes no optimizer_params: sentence-transformers' default lr 2e-5 (requirements.txt pins "
       "sentence-transformers==2.1.0)",
       "2.5e-5 (Table 3; calbert.pretrain.learning_rate)", _O("calbert", "pretrain.learning_rate", 2e-5),
       ("calbert_table6", "calbert_table7", "calbert_table8", "calbert_table12", "calbert_table13"), "named option", "#39.2",
       source=("aditeyabaral/calbert@701612e:src/siamese_pretraining.py", "aditeyabaral/calbert@a781856:src/siamese_pretraining.py", "aditeyabaral/calbert@a781856:requirements.txt")),
    _D("cb-pretrain-max-seq", "CalBERT", ("07",), "pre-training sequence length",
       "—", "src/siamese_pretraining.py sets none: the model's maximum (512 for BERT)",
       "128 tokens", _O("calbert", "pretrain.max_seq_length", 512),
       ("calbert_table6", "calbert_table7", "calbert_table12"), "named option", "#26.2",
       source=("aditeyabaral/calbert@701612e:src/siamese_pretraining.py", "aditeyabaral/calbert@a781856:src/siamese_pretraining.py")),
    _D("cb-pretrain-sample", "CalBERT", ("07",), "pre-training corpus size",
       "a 15% sample of the pairs (§7.2)", "—",
       "a seeded 15% sample of the 147,731 pairs drawn (22,160)", _O("calbert", "pretrain.sample_fraction", None),
       ("calbert_table6", "calbert_table7", "calbert_table8", "calbert_table12", "calbert_table13"), "named option", "#18.3"),
    _D("cb-mlm-baselines", "CalBERT", ("07",), "MLM-from-scratch baselines (Tables 8, 13)",
       "transformers pre-trained from scratch with MLM on as many pairs as CalBERT; 'small'/'big' not defined",
       "6 layers, hidden 768, 12 heads; tokenizer on the transliterations ('small') or on both sides ('big'); MLM on the transliterations, batch 16, lr 1e-4, 15 epochs",
       "the released settings (calbert.scratch), every architecture x tokenizer; the WordPiece tokenizers (BERT, DistilBERT) train non-deterministically in the tokenizers library (ties in hash order)",
       _O("calbert", "scratch.architectures", []), ("calbert_table8", "calbert_table13"), "named option", "#18.3",
       source=("aditeyabaral/calbert@701612e:src/pretrain_transformer.py", "aditeyabaral/calbert@701612e:src/train_tokenizer.py")),
    _D("cb-mlm-masking", "CalBERT", ("07",), "MLM masking (Tables 8, 13)",
       "masked language modelling", "15% of tokens (but the first three ids) always replaced by id 3, which is [SEP] or <unk> in the released tokenizers, not their mask token; the loss on every token, padding included",
       "transformers' DataCollatorForLanguageModeling: 15% chosen, 80/10/10 mask/random/keep, the loss on the chosen tokens",
       None, ("calbert_table8", "calbert_table13"), "no option", "#18.3",
       source=("aditeyabaral/calbert@701612e:src/pretrain_transformer.py",)),
    _D("cb-pair-field", "CalBERT", ("07",), "pre-training pair field",
       "(translation, transliteration) pairs", "the 'transliteration' field",
       "the released code's", _O("calbert", "pretrain.pair_field", "cleaned-transliteration"),
       ("calbert_table6", "calbert_table7", "calbert_table12"), "named option",
       source=("aditeyabaral/calbert@701612e:src/siamese_pretraining.py",)),
    _D("cb-itrans-case", "CalBERT", ("07",), "ITRANS casing",
       "lower-cased romanisation (Table 2: 'shuruata', 'rrina')", "not released",
       "lower-cased ITRANS", _O("calbert", "itrans_lowercase", False),
       ("calbert_table6", "calbert_table7", "calbert_table12"), "named option"),
    _D("cb-objective", "CalBERT", ("07",), "Siamese objective",
       "Siamese pre-training on code-mixed pairs",
       "CosineSimilarityLoss (a squared cosine distance to the label), mean pooling, batch 16; the label is 1 for every "
       "pair only with sample_negative off, see cb-negatives (pretrain.sample_negative)",
       "CosineSimilarityLoss with label 1 on every pair; the in-batch-negatives objective as extra CalBERT-MNRL rows", None,
       ("calbert_table6", "calbert_table7", "calbert_table12"), "both shown",
       source=("aditeyabaral/calbert@701612e:src/siamese_pretraining.py",)),
    _D("cb-negatives", "CalBERT", ("07",), "Siamese negatives",
       "—",
       "src/siamese_pretraining.py defaults to sample_negative=True with --sample_size 2 (701612e .. a781856; the README's "
       "example passes --loss cosine --sample_negative True --sample_size 2): a random half of the pairs kept as label-1 "
       "positives, each with label-0 negatives (translation vs 2 other transliterations, and 2 other translations each "
       "against the list of them, of which the first is read: English-English pairs, the first a sentence against itself)",
       "positives only (label 1 on every pair)", _O("calbert", "pretrain.sample_negative", True),
       ("calbert_table6", "calbert_table7", "calbert_table12"), "named option", "#26.2",
       source=("aditeyabaral/calbert@701612e:src/siamese_pretraining.py", "aditeyabaral/calbert@a781856:src/siamese_pretraining.py", "aditeyabaral/calbert@a781856:README.md")),
    _D("cb-added-tokens", "CalBERT", ("07",), "Siamese pre-training vocabulary",
       "—",
       "src/siamese_pretraining.py adds every lower-cased corpus word (NLTK word_tokenize, both sides) seen at least "
       "--min_count 5 times (a781856; every word at 701612e) to the tokenizer with add_tokens(special_tokens=True), then "
       "resizes the embedding matrix; such tokens match inside words too",
       "the backbone's own vocabulary; the option tokenizes without Punkt's sentence split (no download)",
       _O("calbert", "pretrain.added_tokens_min_count", 5),
       ("calbert_table6", "calbert_table7", "calbert_table12"), "named option", "#26.2",
       source=("aditeyabaral/calbert@701612e:src/siamese_pretraining.py", "aditeyabaral/calbert@a781856:src/siamese_pretraining.py")),
)


def entries(paper_or_notebook: str | None = None) -> list[Deviation]:
    """The ledger's rows for a paper ("ConCSE" …) or a notebook ("01" … "07"); all when None."""
    if paper_or_notebook is None:
        return list(LEDGER)
    key = str(paper_or_notebook)
    if key.zfill(2) in NOTEBOOK_PAPERS:
        key = key.zfill(2)
        return [d for d in LEDGER if key in d.notebooks]
    if key in PAPERS:
        return [d for d in LEDGER if d.paper == key]
    raise ValueError(f"unknown paper or notebook {paper_or_notebook!r}: one of {PAPERS} or {sorted(NOTEBOOK_PAPERS)}")


def table(paper_or_notebook: str | None = None) -> pd.DataFrame:
    """The ledger as a table (one row per difference), e.g. ``fidelity.table("05")`` in notebook 05."""
    rows = [
        {
            "topic": d.topic,
            "paper": d.paper_says,
            "released code": d.released_code,
            "default here": d.default,
            "option": str(d.option) if d.option else "—",
            "status": d.status,
            "artifacts": ", ".join(d.artifacts) or "—",
            "issue": d.issue or "",
            "source": "; ".join(d.source) or "—",
        }
        for d in entries(paper_or_notebook)
    ]
    return pd.DataFrame(rows, columns=["topic", "paper", "released code", "default here", "option", "status", "artifacts", "issue", "source"])


def show(paper_or_notebook: str | None = None) -> None:
    """Display the ledger's rows in a notebook as a Markdown table: every cell whole, wrapped (a DataFrame's HTML
    cuts long text at pandas' ``display.max_colwidth`` with "…")."""
    from IPython.display import Markdown, display

    display(Markdown(_md(table(paper_or_notebook))))


def _md(df: pd.DataFrame) -> str:
    return df.map(lambda s: str(s).replace("|", "\\|")).to_markdown(index=False)


def render() -> str:
    """The text of ``docs/fidelity.md``."""
    out = [
        "# Fidelity ledger: paper, released code, this project",
        "",
        "<!-- Generated by `python -m codeswitch.core.fidelity` from `codeswitch.core.fidelity.LEDGER`; do not edit by hand. -->",
        "",
        "Every known difference between what a paper says, what its authors' released code does and what this",
        "project does by default (the paper profile), with the profile option that switches to the other reading",
        "(`--set <option>` for `./reproduce.sh`) and the artifacts it affects. Each notebook's first cells show its",
        "paper's rows (`fidelity.table(\"NN\")`). A dash: the source says nothing about it (or there is no such code).",
        "Every row whose released-code column says what the authors' code does names, under *source*, the files it read",
        "as `owner/repo@commit:path` (the commit read, the file's path at that commit; tests/test_fidelity.py checks it).",
        "",
        "Statuses:",
        "",
        *[f"- **{k}**: {v}." for k, v in STATUSES.items()],
        "",
    ]
    for paper in PAPERS:
        nbs = ", ".join(n for n, p in NOTEBOOK_PAPERS.items() if p == paper)
        out += [f"## {paper} (notebooks {nbs})", "", _md(table(paper)), ""]
    return "\n".join(out)


def default_path() -> Path:
    return Path(__file__).resolve().parents[3] / "docs" / "fidelity.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codeswitch.core.fidelity", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="output file (default: docs/fidelity.md of this checkout)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs from the registry (nothing written)")
    args = ap.parse_args(argv)
    path = args.out or default_path()
    text = render()
    if args.check:
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != text:
            print(f"{path} is stale: run python -m codeswitch.core.fidelity", file=sys.stderr)
            return 1
        return 0
    from .atomic import atomic_write_text

    atomic_write_text(path, text)
    print(f"wrote {path} ({len(LEDGER)} entries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
