"""Building Koglish: parse -> pick a noun phrase -> translate it -> switch (ConCSE §3.2).

The authors released the Koglish data but not the code that made it; this is an
open implementation of the recipe of §3.2, checked against the released files.

1. **Parse** every English sentence into a constituency tree (benepar
   ``benepar_en3`` via :class:`~codeswitch.koglish.parse.BeneparParser`, or gold PTB
   bracket strings via :class:`~codeswitch.koglish.parse.BracketParser`; both cached:
   :mod:`codeswitch.koglish.parse`).
2. **Select** one noun phrase, :func:`select_np`: walk the tree top-down (pre-order,
   left to right) over NP nodes and take the first that qualifies —
   at least two tokens, not only pronouns (*It, That, This* mistranslate), not
   the whole sentence.  A sentence that *is* a noun phrase is dropped (switching
   it would give a monolingual sentence); so is one where nothing qualifies down
   to the leaves.
3. **Translate** the phrase (:mod:`codeswitch.koglish.translate`).
4. **Switch**: ``cross = sentence.replace(source_np0, target_np0, 1)`` — the first
   occurrence, exactly as in every row of the released data.

Every dropped item is counted by reason (:data:`REASONS`); the paper reports 29.1%
of CoLA excluded.  Builders (:func:`build`) keep a pair only if both sentences
switch and an NLI triplet only if all three do, and emit the released column
layout (``parsed_*``/``cross_*``), so one loader (:mod:`codeswitch.koglish.data`)
reads built and released data alike; :mod:`codeswitch.koglish.layout` writes them.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from .parse import Parser
from .translate import Translator

__all__ = [
    "REASONS",
    "PRONOUNS",
    "PAPER_PRONOUNS",
    "PRONOUN_LISTS",
    "EXCLUSIONS",
    "Candidate",
    "Selection",
    "Outcome",
    "select_np",
    "CodeSwitcher",
    "FIELDS",
    "KINDS",
    "BuildResult",
    "build",
    "build_stats",
    "invariant_violations",
]

# --------------------------------------------------------------------------- exclusion reasons
#: why an item was dropped, in the order the pipeline checks them
REASONS: dict[str, str] = {
    "empty_sentence": "the sentence is empty",
    "parse_failed": "the parser raised, or the tree does not match the tokens",
    "sentence_is_np": "the whole sentence is a noun phrase (switching it leaves no English)",
    "no_np": "the tree has no NP node",
    "no_qualifying_np": "every NP is a pronoun, a single token or the whole sentence",
    "np_not_token_aligned": "the NP's first occurrence in the sentence is inside another word",
    "translation_failed": "the translation backend failed on the NP (after retries)",
    "translation_unchanged": "the translation is empty or identical to the English NP",
}

#: words that make an NP "only a pronoun" (ConCSE §3.2: It, That, This, ...), lower-cased
PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers herself "
    "it its itself we us our ours ourselves they them their theirs themselves this that these those "
    "there here who whom whose which what one ones someone something anyone anything everyone everything "
    "nobody nothing somebody everybody all both each either neither".split()
)
PRONOUN_TAGS = frozenset({"PRP", "PRP$", "EX", "WP", "WP$", "WDT"})
#: the paper's own three (§3.2 step 1: "contained only pronouns (e.g., It, That, This)"; "e.g.": examples, not a list)
PAPER_PRONOUNS = frozenset({"it", "that", "this"})
#: koglish.pronouns: "broad" = PRONOUNS and the PRONOUN_TAGS (this project's default), "paper" = PAPER_PRONOUNS alone
PRONOUN_LISTS = ("broad", "paper")
#: koglish.exclusions: "all" = every reason of REASONS, "paper" = without these two, which the paper does not name (a
#: row whose NP sits inside another word is switched there; one whose translation is empty or the NP itself is kept)
EXCLUSIONS = {"all": (), "paper": ("np_not_token_aligned", "translation_unchanged")}
PUNCT_TAGS = frozenset({".", ",", ":", "``", "''", "-LRB-", "-RRB-", "#", "$", "HYPH", "NFP"})
_WRAPPERS = frozenset({"ROOT", "TOP", ""})


# --------------------------------------------------------------------------- NP selection
@dataclass(frozen=True)
class Candidate:
    """One NP node met on the top-down walk, and what was decided about it."""

    start: int  # token span [start, end)
    end: int
    text: str
    verdict: str  # "selected" | "pronoun" | "too_short" | "whole_sentence"
    depth: int


@dataclass(frozen=True)
class Selection:
    """The NP chosen for one sentence, or the reason there is none, with the walk that led there."""

    sentence: str
    np: str | None
    span: tuple[int, int] | None
    reason: str | None  # a key of REASONS when np is None
    trace: tuple[Candidate, ...] = ()

    @property
    def ok(self) -> bool:
        return self.np is not None


def _unwrap(tree):
    while tree.label() in _WRAPPERS and len(tree) == 1 and not isinstance(tree[0], str):
        tree = tree[0]
    return tree


def _base_label(label: str) -> str:
    # PTB function tags: NP-SBJ, NP-TMP -> NP (but keep -LRB- etc. intact)
    return label if label.startswith("-") else label.split("-")[0].split("=")[0]


def _constituents(tree) -> list[tuple]:
    """``(subtree, depth, start, end)`` of every constituent in pre-order; ``[start, end)`` is its token span.

    One recursive pass with a running leaf counter (looking nodes up by tree
    position is quadratic in nltk).
    """
    out: list = []

    def walk(t, depth: int, start: int) -> int:
        slot = len(out)
        out.append(None)
        pos = start
        for child in t:
            pos = pos + 1 if isinstance(child, str) else walk(child, depth + 1, pos)
        out[slot] = (t, depth, start, pos)
        return pos

    walk(tree, 0, 0)
    return out


def _np_nodes(tree, order: str) -> list[tuple]:
    """Every NP constituent, top-down: pre-order (default) or level order (shallowest first, then left to right)."""
    nodes = [n for n in _constituents(tree) if _base_label(n[0].label()) == "NP"]
    if order == "level":
        nodes.sort(key=lambda n: n[1])  # stable: pre-order within a level is left to right
    elif order != "preorder":
        raise ValueError(f"unknown NP search order {order!r} (preorder | level)")
    return nodes


def select_np(tree, tokens: Sequence[str] | None = None, *, order: str = "preorder", min_tokens: int = 2,
              pronouns: str = "broad") -> Selection:
    """Pick the noun phrase to switch (ConCSE §3.2 step 1).

    Walk the NP nodes top-down and return the first with at least ``min_tokens``
    tokens that is neither only pronouns nor the whole sentence (punctuation
    aside).  A rejected NP is not final: the walk goes on into its children and
    on to the next NPs, down to the leaves.  ``tokens`` (default: the tree's
    leaves) are the sentence's words; the NP's text is cut from them, so PTB
    escapes in the leaves (``-LRB-``) never leak into the output.  ``pronouns`` (:data:`PRONOUN_LISTS`): which
    words make an NP "only pronouns".
    """
    if pronouns not in PRONOUN_LISTS:
        raise ValueError(f"pronouns must be one of {PRONOUN_LISTS}, got {pronouns!r}")
    tree = _unwrap(tree)
    pos_tags = tree.pos()  # [(leaf, preterminal label)]
    toks = list(tokens) if tokens is not None else [w for w, _ in pos_tags]
    sentence = " ".join(toks)
    if len(pos_tags) != len(toks):
        return Selection(sentence, None, None, "parse_failed")
    if not toks:
        return Selection(sentence, None, None, "empty_sentence")
    tags = [t for _, t in pos_tags]
    # "made solely of noun phrases": the root is an NP, or an NP plus punctuation (FRAG (NP ...) (. .))
    top = [c for c in tree if not isinstance(c, str) and c.label() not in PUNCT_TAGS]
    if _base_label(tree.label()) == "NP" or (len(top) == 1 and _base_label(top[0].label()) == "NP"):
        return Selection(sentence, None, None, "sentence_is_np")
    content = [i for i, t in enumerate(tags) if t not in PUNCT_TAGS]
    nodes = _np_nodes(tree, order)
    if not nodes:
        return Selection(sentence, None, None, "no_np")
    trace = []
    words_of, tags_of = (PRONOUNS, PRONOUN_TAGS) if pronouns == "broad" else (PAPER_PRONOUNS, frozenset())
    for _, depth, start, end in nodes:
        text = " ".join(toks[start:end])
        words = range(start, end)
        if all(tags[i] in tags_of or toks[i].lower() in words_of or tags[i] in PUNCT_TAGS for i in words):
            verdict = "pronoun"
        elif end - start < min_tokens:
            verdict = "too_short"
        elif all(i in words for i in content):
            verdict = "whole_sentence"
        else:
            trace.append(Candidate(start, end, text, "selected", depth))
            return Selection(sentence, text, (start, end), None, tuple(trace))
        trace.append(Candidate(start, end, text, verdict, depth))
    return Selection(sentence, None, None, "no_qualifying_np", tuple(trace))


# --------------------------------------------------------------------------- switching
@dataclass(frozen=True)
class Outcome:
    """One sentence through the whole pipeline."""

    sentence: str
    cross: str | None
    source_np0: str | None
    target_np0: str | None
    reason: str | None  # a key of REASONS when the sentence could not be switched
    detail: str = ""  # e.g. the translation backend's error
    selection: Selection | None = None

    @property
    def ok(self) -> bool:
        return self.cross is not None


def _token_aligned(sentence: str, np_text: str) -> bool:
    i = sentence.find(np_text)
    j = i + len(np_text)
    return i >= 0 and (i == 0 or sentence[i - 1] == " ") and (j == len(sentence) or sentence[j] == " ")


class CodeSwitcher:
    """parse -> select NP -> translate -> switch, for many sentences at once.

    Parsing and translation are batched over the unique sentences / phrases (a
    dataset repeats many), and both go through whatever cache the parser and
    translator carry.

    ``replace="first_occurrence"`` (default) switches the NP's first occurrence
    in the sentence, which is what every row of the released data shows
    (``sentence.replace(np, translation, 1)``) even when the parser chose a later
    occurrence; ``replace="span"`` switches exactly the tokens the parser chose.
    """

    def __init__(
        self,
        parser: Parser,
        translator: Translator,
        *,
        order: str = "preorder",
        min_np_tokens: int = 2,
        replace: str = "first_occurrence",
        pronouns: str = "broad",
        exclusions: str = "all",
    ):
        if replace not in ("first_occurrence", "span"):
            raise ValueError(f"replace must be 'first_occurrence' (the released data) or 'span', got {replace!r}")
        if exclusions not in EXCLUSIONS:
            raise ValueError(f"exclusions must be one of {list(EXCLUSIONS)}, got {exclusions!r}")
        self.parser, self.translator, self.order, self.min_np_tokens = parser, translator, order, min_np_tokens
        self.replace, self.pronouns, self.skipped = replace, pronouns, frozenset(EXCLUSIONS[exclusions])

    def select_many(self, sentences: Sequence[str]) -> list[Selection]:
        norm = [" ".join(str(s).split()) for s in sentences]
        uniq = [s for s in dict.fromkeys(norm) if s]
        trees = dict(zip(uniq, self.parser.parse_many(uniq))) if uniq else {}
        out = []
        for s in norm:
            if not s:
                out.append(Selection(s, None, None, "empty_sentence"))
            elif trees.get(s) is None:
                out.append(Selection(s, None, None, "parse_failed"))
            else:
                out.append(select_np(trees[s], s.split(), order=self.order, min_tokens=self.min_np_tokens,
                                     pronouns=self.pronouns))
        return out

    def switch_many(self, sentences: Sequence[str]) -> list[Outcome]:
        selections = self.select_many(sentences)
        aligned = self.replace == "span" or "np_not_token_aligned" in self.skipped
        phrases = sorted({sel.np for sel in selections if sel.ok and (aligned or _token_aligned(sel.sentence, sel.np))})
        translations = {t.source: t for t in self.translator.translate(phrases)} if phrases else {}
        out = []
        for sel in selections:
            if not sel.ok:
                out.append(Outcome(sel.sentence, None, None, None, sel.reason, selection=sel))
                continue
            if not aligned and not _token_aligned(sel.sentence, sel.np):
                out.append(Outcome(sel.sentence, None, sel.np, None, "np_not_token_aligned", selection=sel))
                continue
            tr = translations[sel.np]
            if not tr.ok:
                out.append(Outcome(sel.sentence, None, sel.np, None, "translation_failed", tr.error or "", sel))
                continue
            target = tr.text.strip()
            if (not target or target == sel.np) and "translation_unchanged" not in self.skipped:
                out.append(Outcome(sel.sentence, None, sel.np, target, "translation_unchanged", selection=sel))
                continue
            if self.replace == "span":
                toks = sel.sentence.split()
                start, end = sel.span
                cross = " ".join([*toks[:start], target, *toks[end:]])
            else:
                cross = sel.sentence.replace(sel.np, target, 1)  # first occurrence: the released convention
            out.append(Outcome(sel.sentence, cross, sel.np, target, None, selection=sel))
        return out


# --------------------------------------------------------------------------- builders
#: per text field: (English column, code-switched column, source NP column, target NP column)
FIELDS: dict[str, tuple[str, str, str, str]] = {
    "sentence": ("sentence", "cross", "source_np0", "target_np0"),
    "sentence1": ("sentence1", "cross1", "source1_np0", "target1_np0"),
    "sentence2": ("sentence2", "cross2", "source2_np0", "target2_np0"),
    "hard_neg": ("hard_neg", "cross_hard_neg", "hard_neg_source_np0", "target_hard_neg_np0"),
}
#: the released layouts: which text fields an item has, and whether it has a label
KINDS: dict[str, tuple[tuple[str, ...], bool]] = {
    "single": (("sentence",), True),  # CoLA, SST-2
    "pair": (("sentence1", "sentence2"), True),  # MRPC, STS-B, QNLI, RTE, the STS sets
    "nli": (("sentence1", "sentence2", "hard_neg"), False),  # premise, entailment, contradiction
}


def english_columns(kind: str) -> list[str]:
    fields, labelled = KINDS[kind]
    cols = [c for f in fields for c in (FIELDS[f][0], FIELDS[f][2])]
    return cols + (["label"] if labelled else [])


def cross_columns(kind: str) -> list[str]:
    fields, labelled = KINDS[kind]
    cols = [c for f in fields for c in FIELDS[f]]
    return cols + (["label"] if labelled else [])


@dataclass
class BuildResult:
    """What a builder made from one input table."""

    english: pd.DataFrame  # the ``parsed_*`` / ``en_*`` columns
    cross: pd.DataFrame  # the ``cross_*`` columns
    n_input: int
    exclusions: collections.Counter = field(default_factory=collections.Counter)  # reason -> items
    details: collections.Counter = field(default_factory=collections.Counter)  # e.g. "oov: 'quixotic'" -> items

    @property
    def n_kept(self) -> int:
        return len(self.cross)

    @property
    def excluded_rate(self) -> float:
        return 1.0 - self.n_kept / self.n_input if self.n_input else 0.0


def build(df: pd.DataFrame, switcher: CodeSwitcher, kind: str) -> BuildResult:
    """Switch every text field of every row; keep a row only if all its fields switched.

    ``df`` has the English columns of ``kind`` (``sentence`` | ``sentence1, sentence2``
    | ``sentence1, sentence2, hard_neg``) and ``label`` unless ``kind == "nli"``.
    An excluded row is counted once, under the reason of its first failing field.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} ({', '.join(KINDS)})")
    fields, labelled = KINDS[kind]
    need = [FIELDS[f][0] for f in fields] + (["label"] if labelled else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise KeyError(f"build({kind!r}): input has no column(s) {missing}; it has {list(df.columns)}")
    texts = [str(x) for f in fields for x in df[FIELDS[f][0]].tolist()]
    outcomes = switcher.switch_many(texts)
    n = len(df)
    per_field = {f: outcomes[k * n : (k + 1) * n] for k, f in enumerate(fields)}
    rows_en, rows_cs = [], []
    exclusions: collections.Counter = collections.Counter()
    details: collections.Counter = collections.Counter()
    labels = df["label"].tolist() if labelled else [None] * n
    for i in range(n):
        outs = [per_field[f][i] for f in fields]
        bad = next((o for o in outs if not o.ok), None)
        if bad is not None:
            exclusions[bad.reason] += 1
            if bad.detail:
                details[bad.detail] += 1
            continue
        en, cs = {}, {}
        for f, o in zip(fields, outs):
            s_col, c_col, src_col, tgt_col = FIELDS[f]
            en[s_col], en[src_col] = o.sentence, o.source_np0
            cs[s_col], cs[c_col], cs[src_col], cs[tgt_col] = o.sentence, o.cross, o.source_np0, o.target_np0
        if labelled:
            en["label"] = cs["label"] = labels[i]
        rows_en.append(en)
        rows_cs.append(cs)
    english = pd.DataFrame(rows_en, columns=english_columns(kind))
    cross = pd.DataFrame(rows_cs, columns=cross_columns(kind))
    return BuildResult(english, cross, n, exclusions, details)


def build_stats(result: BuildResult) -> dict:
    """What a build did, as a construction run records it: items in, kept, excluded per reason, details."""
    return {
        "input": result.n_input,
        "kept": result.n_kept,
        "excluded": dict(sorted(result.exclusions.items())),
        "details": dict(sorted(result.details.items())),
    }


# --------------------------------------------------------------------------- invariants
def switch_problem(sentence: str, cross: str, source_np: str, target_np: str) -> str | None:
    """What breaks the switch rule ``cross == sentence.replace(source_np, target_np, 1)`` (``None``: it holds).

    The one statement of the rule: :func:`invariant_violations` counts it (notebook 01),
    the Koglish loaders enforce it (:mod:`codeswitch.koglish.data`).
    """
    if source_np not in sentence:
        return f"the NP {source_np!r} does not occur in the sentence {sentence!r}"
    expected = sentence.replace(source_np, target_np, 1)
    if expected != cross:
        return f"{cross!r} is not the sentence with {source_np!r} replaced by {target_np!r} (expected {expected!r})"
    return None


def invariant_violations(df: pd.DataFrame, *, min_np_tokens: int = 2) -> pd.DataFrame:
    """Rows of a ``cross_*`` table that break the released data's invariants.

    For every text field present: ``cross == sentence.replace(source_np0, target_np0, 1)``;
    the NP has at least ``min_np_tokens`` tokens; the NP is not the whole sentence.
    Returns one row per violation (``row, field, rule``); empty when all hold.
    """
    bad = []
    for f, (s_col, c_col, src_col, tgt_col) in FIELDS.items():
        if c_col not in df.columns:
            continue
        for i, (s, c, src, tgt) in enumerate(zip(df[s_col], df[c_col], df[src_col], df[tgt_col])):
            s, c, src, tgt = str(s), str(c), str(src), str(tgt)
            if switch_problem(s, c, src, tgt) is not None:
                bad.append((i, f, "cross != sentence.replace(source_np0, target_np0, 1)"))
            if len(src.split()) < min_np_tokens:
                bad.append((i, f, f"NP has fewer than {min_np_tokens} tokens"))
            if src.strip() == s.strip():
                bad.append((i, f, "NP is the whole sentence"))
    return pd.DataFrame(bad, columns=["row", "field", "rule"])
