"""The mini Koglish of the smoke profile: a tiny grammar with gold trees, through the real pipeline.

The smoke profile cannot download GLUE, SNLI or a parser, so it makes its own
English: a small grammar emits every sentence *together with its gold PTB tree*.
The trees then go through exactly the construction pipeline of the paper
profile (:mod:`codeswitch.koglish.construct`: tree -> NP selection -> translation
with the project's en->ko glossary ``assets/koglish/en-ko.txt`` -> switch) and
come out in the released layout, so every notebook reads them with the same
loaders as the real Koglish.

The data are built to be *learnable by tiny models* (2 layers, hidden 64,
random init, a few epochs) and to show the paper's effect: each task's label
lives in the words of a noun phrase that gets switched, so a model trained on
English only meets unseen Korean words at test time (EN2CS), while one trained
on code-switched data (CS2CS) has seen them.  For the pair tasks the label is
carried by a semantically apt word inside sentence 2's NP (a paraphrase says
*the same* car, a non-paraphrase *another* car), because a random-init model
cannot learn cross-sentence relations from a few hundred examples in seconds.

This file builds it: :class:`SyntheticConfig` (its sizes), :func:`build_mini_koglish`
(generate, construct, write), :func:`ensure_mini_koglish` (once per profile, cached)
and :func:`corpus_text` (the smoke tokenizers' corpus).  The grammar is
:mod:`codeswitch.koglish.synthetic_grammar`; each task's label rule is in
:mod:`codeswitch.koglish.synthetic_tasks`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..core.profiles import as_dict
from ..core.sections import build_dataclass
from ..core.checkpoints import checkpoint_directory, checkpoint_ok
from ..core.runs import config_hash
from ..core.atomic import atomic_write_json
from .construct import BuildResult, CodeSwitcher, build, build_stats
from .layout import write_glue, write_nli, write_sts
from .parse import BracketParser
from .synthetic_grammar import (ATTRIBUTIVE, FINITE, HYPERNYM, NEGATIVE, NEUTRAL, NOUN_CLASSES, OOV, PLAIN_ADJ, PLURAL, POSITIVE,
                                SST_NOUNS, VPS)
from .synthetic_tasks import GLUE_GENERATORS, STS_SETS, generate_raw
from .translate import DictionaryTranslator

__all__ = ["SyntheticConfig", "GLOSSARY", "build_mini_koglish", "ensure_mini_koglish", "corpus_text", "generate_raw", "construction_stats",
           "code_fingerprint"]


ASSETS = Path(__file__).resolve().parents[1] / "assets"
GLOSSARY = ASSETS / "koglish" / "en-ko.txt"
CORPUS = ASSETS / "corpus" / "koglish.txt"
STATS_FILE = "_construction/stats.json"
TREES_FILE = "_construction/trees.json"


@dataclass(frozen=True)
class SyntheticConfig:
    """Sizes of the mini Koglish (raw items, before the pipeline's exclusions)."""

    seed: int = 20240820
    glue_size: int = 400  # raw items per GLUE task, split 0.64/0.16/0.20 after construction
    nli_size: int = 520  # raw NLI triplets (unsplit)
    stsb_size: int = 300  # raw STS-B pairs for Koglish-STS, split 0.5/0.5 into valid/test
    sts_size: int = 160  # raw pairs per STS12-16 / SICK-R test set
    # share of the classification tasks' raw items whose label is flipped (annotators disagree):
    # without it every rule above is learnt perfectly, and Table 2's English scores sit at 100
    glue_label_noise: float = 0.05
    glue_split: tuple[float, ...] = (0.64, 0.16, 0.20)  # ConCSE §3.2 step 3
    sts_split: tuple[float, ...] = (0.5, 0.5)

    def __post_init__(self):
        if not 0.0 <= self.glue_label_noise < 0.5:  # at 0.5 the labels say nothing
            raise ValueError(f"glue_label_noise must be in [0, 0.5), got {self.glue_label_noise!r}")


# --------------------------------------------------------------------------- the build
def build_mini_koglish(out: str | Path, config: SyntheticConfig = SyntheticConfig()) -> Path:
    """Generate, construct and write the whole mini Koglish under ``out`` (released layout)."""
    out = Path(out)
    translator = DictionaryTranslator.from_muse(GLOSSARY)
    stats: dict[str, dict] = {"glue": {}, "nli": {}, "sts": {}}
    all_trees: dict[str, str] = {}

    def construct(name: str, n: int, kind: str) -> BuildResult:
        raw, trees = generate_raw(name, n, config.seed, label_noise=config.glue_label_noise)
        all_trees.update(trees)
        return build(raw, CodeSwitcher(BracketParser(trees), translator), kind)

    for i, (task, (kind, _)) in enumerate(GLUE_GENERATORS.items()):
        res = construct(task, config.glue_size, kind)
        write_glue(out, task, res, seed=config.seed + i, ratios=config.glue_split)
        stats["glue"][task] = build_stats(res)

    res = construct("nli", config.nli_size, "nli")
    write_nli(out, res)
    stats["nli"]["nli"] = build_stats(res)

    res = construct("sts:stsb", config.stsb_size, "pair")
    write_sts(out, "stsb", res, seed=config.seed, ratios=config.sts_split)
    stats["sts"]["stsb"] = build_stats(res)
    for name in STS_SETS:
        if name != "stsb":  # like the authors' repository: the test half only
            res = construct(f"sts:{name}", config.sts_size, "pair")
            write_sts(out, name, res, seed=config.seed, ratios=None)
            stats["sts"][name] = build_stats(res)

    atomic_write_json(out / TREES_FILE, dict(sorted(all_trees.items())))
    atomic_write_json(out / STATS_FILE, {"config": as_dict(config), "translator": translator.key, "parser": "ptb (gold trees)", **stats})
    return out


#: the code a build runs: the grammar, the tasks, the pipeline (parse, construct, translate, write)
_CODE = ("synthetic.py", "synthetic_grammar.py", "synthetic_tasks.py", "parse.py", "construct.py", "translate.py", "layout.py")


def code_fingerprint() -> str:
    """Changes whenever the grammar, the pipeline or the glossary does, so a stale build is never reused."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in (*(here / f for f in _CODE), GLOSSARY):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def synthetic_config(profile) -> SyntheticConfig:
    """The ``koglish.synthetic`` subsection of a profile (strict keys)."""
    raw = dict(((profile.sections.get("koglish") or {}).get("synthetic")) or {})
    return build_dataclass(SyntheticConfig, raw, where=f"{profile.source_file}: section 'koglish.synthetic'")


def ensure_mini_koglish(profile) -> Path:
    """Build the mini Koglish for ``profile`` once; return its folder.

    The folder is ``profile.runs_dir / "koglish_synthetic" / <hash>`` where the hash
    covers the settings and the code/glossary fingerprint.  It is written to a
    temporary sibling and renamed into place, so a killed build leaves nothing
    half-written and two notebooks building at once cannot collide.
    """
    syn = synthetic_config(profile)
    key = config_hash({"synthetic": as_dict(syn), "code": code_fingerprint()})
    dest = Path(profile.runs_dir) / "koglish_synthetic" / key
    if checkpoint_ok(dest, what="synthetic Koglish"):
        return dest
    # another process may finish first: theirs is identical (a damaged folder is replaced)
    with checkpoint_directory(dest, replace=dest.exists()) as tmp:
        build_mini_koglish(tmp, syn)
    return dest


def construction_stats(source: str | Path) -> dict | None:
    """The exclusion statistics a build wrote next to its data (``None`` for released data, which has none)."""
    p = Path(source) / STATS_FILE
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None


# --------------------------------------------------------------------------- tokenizer corpus
def corpus_text(n_sentences: int = 120, seed: int = 7) -> str:
    """The lines of ``assets/corpus/koglish.txt``: every glossary pair and sample sentences, English and switched.

    The tiny smoke tokenizers are trained on it, so every word of the mini
    Koglish, English or Korean, is in their vocabulary.  Regenerate with
    ``python -m codeswitch.koglish corpus`` after changing the grammar or glossary
    (a test checks the file is current).
    """
    from ..common.muse import first_translations

    lines = [f"{en} {ko}" for en, ko in first_translations(GLOSSARY).items()]
    words = set()
    for forms in NOUN_CLASSES.values():
        for f in forms:
            words.update(f)
    words.update(SST_NOUNS + POSITIVE + NEGATIVE + NEUTRAL + ATTRIBUTIVE + FINITE + PLAIN_ADJ + OOV + list(HYPERNYM.values()) + list(PLURAL.values()))
    lines.append(" ".join(sorted(words)))
    lines += [" ".join(v[0] for v in pair) for pair in VPS]
    translator = DictionaryTranslator.from_muse(GLOSSARY)
    sample = []
    for name in list(GLUE_GENERATORS) + ["nli", "sts:stsb"]:
        raw, trees = generate_raw(name, n_sentences // 8, seed)
        kind = GLUE_GENERATORS[name][0] if name in GLUE_GENERATORS else ("nli" if name == "nli" else "pair")
        res = build(raw, CodeSwitcher(BracketParser(trees), translator), kind)
        for col in res.cross.columns:
            if col.startswith(("sentence", "cross", "hard_neg")):
                sample.extend(res.cross[col].tolist())
    lines += list(dict.fromkeys(sample))
    return "\n".join(lines) + "\n"

