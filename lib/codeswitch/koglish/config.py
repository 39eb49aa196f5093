"""The ``koglish`` section of a profile: :class:`Config` (defaults = the paper profile's settings), and :class:`KoglishRun`.

Koglish trains nothing: a run is the construction of one task (parse, walk the noun
phrases, translate, switch), whose statistics (items in, kept, excluded by reason)
are cached.  The section has no backbones and no training hyperparameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, ClassVar

from . import data as K
from ..core.experiment import RunSpec
from ..core.sections import check_fields
from .construct import EXCLUSIONS, PRONOUN_LISTS
from .synthetic import SyntheticConfig

SECTION = "koglish"


@dataclass(frozen=True)
class Config:
    """The ``koglish`` section of a profile.  Defaults are the paper profile's settings, written here only."""

    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)  # the smoke profile's mini Koglish
    # where the construction run (walk-through, exclusion statistics) takes its English from:
    # "glue" = the original GLUE sentences from the hub; "synthetic" = the mini Koglish grammar
    construct_source: str = "glue"
    glue_hub: str = "nyu-mll/glue"  # hub id or local folder of GLUE (datasets format)
    construct_n: int = 2000  # sentences per GLUE task (train split, from the top); 0 = all
    parser: str = "benepar"  # "benepar" (benepar_en3) | "ptb" (gold PTB trees; the synthetic data has them)
    benepar_model: str = "benepar_en3"
    translator: str = "hf"  # "hf" | "google" | "dictionary" (the paper used Google Translate)
    dictionary: str = ""  # MUSE-format en-ko file for "dictionary"; "" = the shipped glossary
    hf_model: str = "facebook/nllb-200-distilled-600M"  # any en->ko translation model (hub id or folder)
    hf_src_lang: str = "eng_Latn"
    hf_tgt_lang: str = "kor_Hang"
    google_key_env: str = "GOOGLE_TRANSLATE_API_KEY"  # the *name* of the variable holding the key
    np_order: str = "preorder"  # top-down walk over NP nodes: "preorder" | "level"
    replace: str = "first_occurrence"  # released data: first occurrence of the NP; "span": the parsed span
    min_np_tokens: int = 2
    # which NPs are "only pronouns" (passed over): "broad" = about 60 pronouns, determiners and quantifiers and the tags
    # PRP, PRP$, EX, WP, WP$, WDT | "paper" = It, That, This alone (§3.2 names these three, after "e.g.")
    pronouns: str = "broad"
    # "all" = every exclusion of construct.REASONS | "paper" = without np_not_token_aligned and translation_unchanged,
    # which the paper does not name (construct.EXCLUSIONS)
    exclusions: str = "all"
    split_seed: int = 20240820  # seeds the 0.64/0.16/0.20 split of what the construction run builds
    walkthrough_task: str = "cola"  # the GLUE task whose raw sentences the walk-through shows
    walkthrough_n: int = 6  # sentences shown step by step

    def __post_init__(self):
        checks = {
            "construct_source": ("glue", "synthetic"),
            "parser": ("benepar", "ptb"),
            "translator": ("hf", "google", "dictionary"),
            "np_order": ("preorder", "level"),
            "replace": ("first_occurrence", "span"),
            "pronouns": PRONOUN_LISTS,
            "exclusions": tuple(EXCLUSIONS),
            "walkthrough_task": K.GLUE_TASKS,
        }
        for key, allowed in checks.items():
            if getattr(self, key) not in allowed:
                raise ValueError(f"koglish.{key} = {getattr(self, key)!r}; allowed: {', '.join(allowed)}")
        check_fields(self)  # sizes and counts in their domains (core.sections.RANGES)


def load(profile) -> Config:
    """The profile's ``koglish`` section as a :class:`Config` (errors name the YAML file and key)."""
    return profile.section(SECTION, Config)


# --------------------------------------------------------------------------- the run spec
@dataclass(frozen=True)
class KoglishRun(RunSpec):
    """One construction run: one task through parse -> NP walk -> translation -> switch; its statistics are the result.

    Built by :func:`codeswitch.koglish.plan.spec`; its key is everything that
    determines the statistics, and only that: the settings of the other source are
    ``None`` and stay out of it (e.g. no ``glue_hub`` for the synthetic source).  For
    the synthetic source the data identity is the generator's settings and ``code``
    (a hash of the grammar, the pipeline and the glossary); for GLUE it is
    ``glue_hub`` with ``construct_n``.
    """

    # the package's one spec class, so the one place its version is set: bump it when a change of this
    # experiment's method code (data handling, construction) changes its results; every run key changes,
    # so no old record is reused
    RESULT_VERSION: ClassVar[int] = 1

    experiment: str
    task: str  # a GLUE task, or "nli:nli" / "sts:<task>" (synthetic source only)
    construct_source: str
    parser: str
    translator: str
    np_order: str
    replace: str
    min_np_tokens: int
    pronouns: str | None = None  # "paper": the paper's three pronouns (None: the default broad list, out of the key)
    exclusions: str | None = None  # "paper": the paper's exclusions only (None: all, out of the key)
    synthetic: SyntheticConfig | None = None  # synthetic source: the generator's settings
    code: str | None = None  # synthetic source: hash of the grammar, pipeline and glossary
    glue_hub: str | None = None  # GLUE source
    construct_n: int | None = None
    split_seed: int | None = None
    hf: tuple[str, str, str] | None = None  # translator "hf": model, source and target language
    benepar_model: str | None = None  # parser "benepar"
    dictionary: str | None = None  # translator "dictionary": the file, or "glossary" (the shipped one)

    def inputs(self) -> Mapping[str, str]:
        out: dict[str, Any] = {}
        if self.glue_hub is not None:
            out["glue"] = self.glue_hub
        if self.hf is not None:
            out["translator"] = self.hf[0]
        if self.dictionary not in (None, "glossary"):
            out["dictionary"] = self.dictionary
        return out
