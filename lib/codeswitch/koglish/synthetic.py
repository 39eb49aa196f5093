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

===========  ==========================================================================
task         the rule that sets the label (all inside a switched NP)
===========  ==========================================================================
cola         1 if the NP's modifier is attributive (*the sleeping dog*), 0 if it is a
             finite verb (*the sleeps dog*; Korean *잔다 개* is as wrong)
sst2         1 if the NP's adjective is positive (*the charming movie*), else 0
mrpc         1 if sentence 2 re-describes the same thing in synonyms (*The same large
             automobile came early*), 0 if it is *another* / *a different* one
stsb         0-5 by sentence 2's determiner: *the same* 5, *a similar* 3.8, *another*
             2.4, *a different* 1.2, *no* 0 (±0.3 annotator noise)
qnli         0 (entailment) if the sentence says what the NP asked about did
             (*The large automobile went to the station*), 1 if it says *no* such thing did
rte          0 (entailment) if the hypothesis generalises to *a(n) / the <class>*,
             1 if to *every / all / most / no <class>* (the premise is about one thing)
NLI          (premise, paraphrase in synonyms, same verb phrase but another noun)
STS sets     0-5 from shared meaning slots (noun, adjective, verb phrase) with per-set
             weights; SICK-R on 1-5.  Synonyms share one Korean word
             (*car*, *automobile* -> 자동차), as translation does.
===========  ==========================================================================

The rules are exact, so a tiny model learns them perfectly; a share of the
two-class GLUE items (``glue_label_noise``, 5 %) have their label flipped, as
annotators disagree, so that no score sits at 100 and a run's gain over the
majority class is measured below a ceiling of about 95.

A share of each task is made of sentences the pipeline must *exclude*
(fragments that are only an NP, pronoun-only subjects, imperatives without an
NP, adjectives missing from the glossary), so the exclusion statistics of
notebook 01 have something to count.  These shares are set here by design
(``EXCLUDABLE``); they say nothing about the real data's rates.
"""

from __future__ import annotations

import hashlib
import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from ..core.profiles import as_dict, build_dataclass
from ..core.checkpoints import checkpoint_directory, checkpoint_ok
from ..core.runs import atomic_write_json, atomic_write_text, config_hash
from .construct import BracketParser, BuildResult, CodeSwitcher, build, write_glue, write_nli, write_sts
from .translate import DictionaryTranslator

__all__ = ["SyntheticConfig", "GLOSSARY", "build_mini_koglish", "ensure_mini_koglish", "corpus_text", "generate_raw", "construction_stats"]

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


# --------------------------------------------------------------------------- lexicon (English only)
# Korean comes from the glossary through the translator, never from here.
# Concepts with two English forms (synonyms that share one Korean word).
NOUN_CLASSES: dict[str, list[tuple[str, ...]]] = {
    "person": [("child", "kid"), ("doctor", "physician"), ("student", "pupil"), ("chef", "cook"), ("farmer",), ("singer",), ("baby",)],
    "animal": [("rabbit", "bunny"), ("cat", "kitty"), ("pig", "hog"), ("dog",), ("horse",), ("bird",), ("tiger",)],
    "vehicle": [("car", "automobile"), ("bike", "bicycle"), ("boat", "ship"), ("bus",), ("train",)],
}
HYPERNYM = {"person": "person", "animal": "animal", "vehicle": "vehicle"}
PLURAL = {"person": "people", "animal": "animals", "vehicle": "vehicles"}
ADJ2: dict[str, list[tuple[str, str]]] = {  # two-form adjectives that suit each class
    "person": [("big", "large"), ("small", "little"), ("angry", "mad"), ("sick", "ill"), ("smart", "clever"), ("quiet", "silent")],
    "animal": [("big", "large"), ("small", "little"), ("fast", "quick"), ("angry", "mad"), ("sick", "ill"), ("quiet", "silent")],
    "vehicle": [("big", "large"), ("small", "little"), ("fast", "quick"), ("quiet", "silent")],
}
SST_NOUNS = ["movie", "film", "book", "song", "play", "novel", "story", "album", "meal", "cake", "soup", "show"]
POSITIVE = ["good", "wonderful", "beautiful", "brilliant", "charming", "funny", "lovely", "excellent"]
NEGATIVE = ["bad", "boring", "terrible", "awful", "dull", "ugly", "stupid", "messy"]
NEUTRAL = ["old", "new", "long", "short"]
ATTRIBUTIVE = ["sleeping", "running", "smiling", "crying", "singing", "dancing", "swimming", "walking"]
FINITE = ["sleeps", "runs", "smiles", "cries", "sings", "dances", "swims", "walks"]
PLAIN_ADJ = ["young", "hungry", "tired", "busy", "lazy"]
COLA_NOUNS = ["child", "kid", "doctor", "student", "chef", "farmer", "singer", "baby", "dog", "cat", "rabbit", "horse", "bird", "tiger"]
#: English adjectives deliberately missing from the glossary: their NPs fail translation
OOV = ["quixotic", "lugubrious", "obstreperous", "mellifluous"]

# Verb-phrase concepts: two paraphrases each, as (tokens, PTB subtree).
VPS: list[tuple[tuple[str, str], tuple[str, str]]] = [
    (("arrived early", "(VP (VBD arrived) (ADVP (RB early)))"), ("came early", "(VP (VBD came) (ADVP (RB early)))")),
    (("left yesterday", "(VP (VBD left) (NP-TMP (NN yesterday)))"), ("departed yesterday", "(VP (VBD departed) (NP-TMP (NN yesterday)))")),
    (("waited outside", "(VP (VBD waited) (ADVP (RB outside)))"), ("stayed outside", "(VP (VBD stayed) (ADVP (RB outside)))")),
    (("stopped suddenly", "(VP (VBD stopped) (ADVP (RB suddenly)))"), ("halted suddenly", "(VP (VBD halted) (ADVP (RB suddenly)))")),
    (("moved slowly", "(VP (VBD moved) (ADVP (RB slowly)))"), ("went slowly", "(VP (VBD went) (ADVP (RB slowly)))")),
    (("vanished quickly", "(VP (VBD vanished) (ADVP (RB quickly)))"), ("disappeared quickly", "(VP (VBD disappeared) (ADVP (RB quickly)))")),
    (
        ("rested at the park", "(VP (VBD rested) (PP (IN at) (NP (DT the) (NN park))))"),
        ("relaxed at the park", "(VP (VBD relaxed) (PP (IN at) (NP (DT the) (NN park))))"),
    ),
    (
        ("stayed near the river", "(VP (VBD stayed) (PP (IN near) (NP (DT the) (NN river))))"),
        ("remained near the river", "(VP (VBD remained) (PP (IN near) (NP (DT the) (NN river))))"),
    ),
]
# QNLI: question (wh-word, verb) and the verb phrase that answers it
QUESTIONS = [
    ("where", "go", ("went to the station", "(VP (VBD went) (PP (TO to) (NP (DT the) (NN station))))")),
    ("when", "arrive", ("arrived in the evening", "(VP (VBD arrived) (PP (IN in) (NP (DT the) (NN evening))))")),
    ("why", "stop", ("stopped because of the rain", "(VP (VBD stopped) (PP (IN because) (PP (IN of) (NP (DT the) (NN rain)))))")),
]
# Sentence openings: (tokens, how to wrap (np_tree, vp_tree)); two of them put a
# 2-token NP *before* the subject, so the switched NP is not the labelled one
# (as for "Last month , ..." in the released MRPC).
INTROS: list[tuple[float, str]] = [
    (0.52, "none"),
    (0.12, "yesterday"),
    (0.12, "she_said"),
    (0.12, "i_think"),
    (0.06, "in_the_morning"),
    (0.06, "in_my_opinion"),
]
#: share of raw items built to be excluded, per dataset: fragments, pronoun-only, imperatives, OOV
EXCLUDABLE: dict[str, dict[str, float]] = {
    "cola": {"fragment": 0.04, "pronoun": 0.13, "imperative": 0.05, "oov": 0.04},
    "sst2": {"fragment": 0.07, "pronoun": 0.02, "imperative": 0.0, "oov": 0.03},
    "pair": {"fragment": 0.01, "pronoun": 0.03, "imperative": 0.0, "oov": 0.02},  # per sentence
    "nli": {"fragment": 0.0, "pronoun": 0.02, "imperative": 0.0, "oov": 0.01},  # per sentence
}
PRONOUN_SENTENCES = [("he", "slept"), ("she", "laughed"), ("they", "left"), ("it", "stopped"), ("we", "waited")]
IMPERATIVES = [("wait", "here", "VB", "RB"), ("run", "quickly", "VB", "RB"), ("sit", "down", "VB", "RP"), ("come", "back", "VB", "RB")]


# --------------------------------------------------------------------------- trees
class Sentence(tuple):
    """(tokens as one string, PTB bracket string)."""

    @property
    def text(self) -> str:
        return self[0]

    @property
    def tree(self) -> str:
        return self[1]


def _np(words: list[tuple[str, str]]) -> tuple[str, str]:
    """An NP from (word, tag) pairs."""
    return " ".join(w for w, _ in words), "(NP " + " ".join(f"({t} {w})" for w, t in words) + ")"


def _det(noun: str, definite: bool = True) -> tuple[str, str]:
    if definite:
        return ("the", "DT")
    return ("an" if noun[0] in "aeiou" else "a", "DT")


def _clause(np: tuple[str, str], vp: tuple[str, str]) -> tuple[str, str]:
    return f"{np[0]} {vp[0]}", f"(S {np[1]} {vp[1]})"


def _sentence(rng: random.Random, np: tuple[str, str], vp: tuple[str, str], *, intro: str | None = None, end: str = ".") -> Sentence:
    """Wrap subject NP + VP in an opening, add the full stop, capitalise the first word."""
    intro = intro or _choose_weighted(rng, INTROS)
    dot = f"(. {end})"
    if intro == "none":
        text, tree = f"{np[0]} {vp[0]} {end}", f"(ROOT (S {np[1]} {vp[1]} {dot}))"
    elif intro == "yesterday":
        text, tree = f"yesterday , {np[0]} {vp[0]} {end}", f"(ROOT (S (NP-TMP (NN yesterday)) (, ,) {np[1]} {vp[1]} {dot}))"
    elif intro == "she_said":
        c = _clause(np, vp)
        text, tree = f"she said that {c[0]} {end}", f"(ROOT (S (NP (PRP she)) (VP (VBD said) (SBAR (IN that) {c[1]})) {dot}))"
    elif intro == "i_think":
        c = _clause(np, vp)
        text, tree = f"i think {c[0]} {end}", f"(ROOT (S (NP (PRP i)) (VP (VBP think) (SBAR {c[1]})) {dot}))"
    elif intro == "in_the_morning":
        text = f"in the morning , {np[0]} {vp[0]} {end}"
        tree = f"(ROOT (S (PP (IN in) (NP (DT the) (NN morning))) (, ,) {np[1]} {vp[1]} {dot}))"
    elif intro == "in_my_opinion":
        text = f"in my opinion , {np[0]} {vp[0]} {end}"
        tree = f"(ROOT (S (PP (IN in) (NP (PRP$ my) (NN opinion))) (, ,) {np[1]} {vp[1]} {dot}))"
    else:
        raise ValueError(intro)
    return _capitalise(text, tree)


def _capitalise(text: str, tree: str) -> Sentence:
    first = text.split(" ", 1)[0]
    cap = first[:1].upper() + first[1:]
    # the first leaf in the bracket string is the first occurrence of " first)"
    tree = tree.replace(f" {first})", f" {cap})", 1)
    return Sentence((cap + text[len(first):], tree))


def _choose_weighted(rng: random.Random, options: list[tuple[float, str]]) -> str:
    x, acc = rng.random(), 0.0
    for w, name in options:
        acc += w
        if x < acc:
            return name
    return options[-1][1]


def _excludable(rng: random.Random, kind: str) -> Sentence:
    """A sentence the pipeline must drop, of the given kind."""
    if kind == "fragment":
        adj, noun = rng.choice(POSITIVE + NEGATIVE + NEUTRAL), rng.choice(SST_NOUNS)
        det = _det(adj, definite=False)[0]
        text, tree = f"{det} {adj} {noun} .", f"(ROOT (NP (NP (DT {det}) (JJ {adj}) (NN {noun})) (. .)))"
        return _capitalise(text, tree)
    if kind == "pronoun":
        pro, verb = rng.choice(PRONOUN_SENTENCES)
        return _capitalise(f"{pro} {verb} .", f"(ROOT (S (NP (PRP {pro})) (VP (VBD {verb})) (. .)))")
    if kind == "imperative":
        v, adv, vt, at = rng.choice(IMPERATIVES)
        phrase = "PRT" if at == "RP" else "ADVP"
        return _capitalise(f"{v} {adv} .", f"(ROOT (S (VP ({vt} {v}) ({phrase} ({at} {adv}))) (. .)))")
    if kind == "oov":
        cls = rng.choice(sorted(NOUN_CLASSES))
        noun = rng.choice(rng.choice(NOUN_CLASSES[cls]))
        vp = rng.choice(VPS)[0]
        return _sentence(rng, _np([_det(noun), (rng.choice(OOV), "JJ"), (noun, "NN")]), vp, intro="none")
    raise ValueError(kind)


def _maybe_excludable(rng: random.Random, dataset: str) -> Sentence | None:
    x, acc = rng.random(), 0.0
    for kind, p in EXCLUDABLE[dataset].items():
        acc += p
        if x < acc:
            return _excludable(rng, kind)
    return None


# --------------------------------------------------------------------------- concepts
@dataclass(frozen=True)
class Concept:
    """A subject: noun concept (class, index), adjective concept (index or None), verb-phrase concept."""

    cls: str
    noun: int
    adj: int | None
    vp: int

    def np(self, rng: random.Random, *, form: int | None = None) -> tuple[str, str]:
        """The NP in surface form ``form`` (0/1 picks the synonym; None: random)."""
        nouns = NOUN_CLASSES[self.cls][self.noun]
        noun = nouns[(form if form is not None else rng.randrange(2)) % len(nouns)]
        words = [_det(noun)]
        if self.adj is not None:
            adjs = ADJ2[self.cls][self.adj]
            words.append((adjs[(form if form is not None else rng.randrange(2)) % 2], "JJ"))
        words.append((noun, "NN"))
        return _np(words)

    def vp_form(self, form: int) -> tuple[str, str]:
        return VPS[self.vp][form % 2]


def _two_form_nouns(cls: str) -> list[int]:
    return [i for i, forms in enumerate(NOUN_CLASSES[cls]) if len(forms) == 2]


def _random_concept(rng: random.Random, *, two_forms: bool) -> Concept:
    cls = rng.choice(sorted(NOUN_CLASSES))
    nouns = _two_form_nouns(cls) if two_forms else list(range(len(NOUN_CLASSES[cls])))
    return Concept(cls, rng.choice(nouns), rng.randrange(len(ADJ2[cls])), rng.randrange(len(VPS)))


def _other(rng: random.Random, n: int, not_this: int) -> int:
    return rng.choice([i for i in range(n) if i != not_this])


def _other_two_form(rng: random.Random, cls: str, not_this: int) -> int:
    return rng.choice([i for i in _two_form_nouns(cls) if i != not_this])


# --------------------------------------------------------------------------- GLUE-style tasks
Row = dict


def _gen_cola(rng: random.Random) -> Row:
    label = rng.randrange(2)
    noun = rng.choice(COLA_NOUNS)
    if label == 1:
        mod = (rng.choice(ATTRIBUTIVE), "VBG") if rng.random() < 0.6 else (rng.choice(PLAIN_ADJ), "JJ")
    else:
        mod = (rng.choice(FINITE), "VBZ")
    s = _maybe_excludable(rng, "cola") or _sentence(rng, _np([_det(noun), mod, (noun, "NN")]), rng.choice(VPS)[rng.randrange(2)])
    return {"sentence": s, "label": label}


def _gen_sst2(rng: random.Random) -> Row:
    label = rng.randrange(2)
    noun = rng.choice(SST_NOUNS)
    words = [_det(noun), (rng.choice(POSITIVE if label else NEGATIVE), "JJ")]
    if rng.random() < 0.3:
        words.append((rng.choice(NEUTRAL), "JJ"))
    words.append((noun, "NN"))
    s = _maybe_excludable(rng, "sst2") or _sentence(rng, _np(words), rng.choice(VPS)[rng.randrange(2)])
    return {"sentence": s, "label": label}


def _pair_sentence(rng: random.Random, s: Sentence) -> Sentence:
    return _maybe_excludable(rng, "pair") or s


#: sentence 2's determiner and the similarity it implies (mrpc: 1 = "same"; stsb: the score)
SAME = [(("the", "DT"), ("same", "JJ"))]
DIFFERENT = [(("another", "DT"),), (("a", "DT"), ("different", "JJ"))]
STSB_CUES: list[tuple[tuple[tuple[str, str], ...], float]] = [
    ((("the", "DT"), ("same", "JJ")), 5.0),
    ((("a", "DT"), ("similar", "JJ")), 3.8),
    ((("another", "DT"),), 2.4),
    ((("a", "DT"), ("different", "JJ")), 1.2),
    ((("no", "DT"),), 0.0),
]


def _with_det(c: Concept, det: tuple[tuple[str, str], ...], form: int) -> tuple[str, str]:
    """The concept's NP (adjective + noun in synonym ``form``) after the determiner words ``det``."""
    nouns = NOUN_CLASSES[c.cls][c.noun]
    words = list(det)
    if c.adj is not None:
        words.append((ADJ2[c.cls][c.adj][form % 2], "JJ"))
    words.append((nouns[form % len(nouns)], "NN"))
    return _np(words)


def _restatement(rng: random.Random, det: tuple[tuple[str, str], ...], vp: tuple[str, str] | None = None) -> tuple[Sentence, Sentence]:
    """Sentence 1 about a thing; sentence 2 about it again in synonyms, after determiner ``det``."""
    a = _random_concept(rng, two_forms=True)
    f = rng.randrange(2)
    s1 = _sentence(rng, a.np(rng, form=f), a.vp_form(f))
    s2 = _sentence(rng, _with_det(a, det, 1 - f), vp or a.vp_form(1 - f))
    return s1, s2


def _gen_mrpc(rng: random.Random) -> Row:
    label = rng.randrange(2)  # 1 = paraphrase
    s1, s2 = _restatement(rng, rng.choice(SAME if label else DIFFERENT))
    return {"sentence1": _pair_sentence(rng, s1), "sentence2": _pair_sentence(rng, s2), "label": label}


def _similarity_pair(rng: random.Random, weights: tuple[float, float, float], *, synonyms: bool) -> tuple[Sentence, Sentence, float]:
    """Two sentences sharing each meaning slot (noun, adjective, verb phrase) with probability 1/2; score in [0, 1]."""
    a = _random_concept(rng, two_forms=True)
    same = [rng.random() < 0.5 for _ in range(3)]
    noun = a.noun if same[0] else _other_two_form(rng, a.cls, a.noun)
    adj = a.adj if same[1] else _other(rng, len(ADJ2[a.cls]), a.adj)
    vp = a.vp if same[2] else _other(rng, len(VPS), a.vp)
    b = Concept(a.cls, noun, adj, vp)
    f = rng.randrange(2)
    g = 1 - f if synonyms else rng.randrange(2)
    s1 = _sentence(rng, a.np(rng, form=f), a.vp_form(f))
    s2 = _sentence(rng, b.np(rng, form=g), b.vp_form(g))
    score = sum(w for w, s in zip(weights, same) if s)
    return s1, s2, score


def _graded(rng: random.Random, score01: float, lo: float, hi: float, noise: float = 0.15) -> float:
    jitter = rng.uniform(-noise, noise)  # annotators disagree a little
    return round(min(hi, max(lo, lo + (hi - lo) * score01 + jitter)), 2)


def _gen_stsb(rng: random.Random) -> Row:
    det, score = rng.choice(STSB_CUES)
    s1, s2 = _restatement(rng, det)
    return {"sentence1": _pair_sentence(rng, s1), "sentence2": _pair_sentence(rng, s2), "label": _graded(rng, score / 5.0, 0.0, 5.0, 0.3)}


def _gen_qnli(rng: random.Random) -> Row:
    label = rng.randrange(2)  # GLUE: 0 = entailment (the sentence answers the question)
    a = _random_concept(rng, two_forms=True)
    f = rng.randrange(2)
    wh, verb, answer = rng.choice(QUESTIONS)
    np = a.np(rng, form=f)
    q = _capitalise(f"{wh} did {np[0]} {verb} ?", f"(ROOT (SBARQ (WHADVP (WRB {wh})) (SQ (VBD did) {np[1]} (VP (VB {verb}))) (. ?)))")
    det = (("the", "DT"),) if label == 0 else (("no", "DT"),)
    s = _sentence(rng, _with_det(a, det, 1 - f), answer)
    return {"sentence1": _pair_sentence(rng, q), "sentence2": _pair_sentence(rng, s), "label": label}


#: hypothesis determiners: entailed by a sentence about one thing, or not
ENTAILED = [("a", False), ("the", False)]
NOT_ENTAILED = [("every", False), ("all", True), ("most", True), ("no", False)]


def _gen_rte(rng: random.Random) -> Row:
    label = rng.randrange(2)  # GLUE: 0 = entailment
    a = _random_concept(rng, two_forms=False)
    f = rng.randrange(2)
    adj = a.adj if rng.random() < 0.7 else None
    premise = _sentence(rng, Concept(a.cls, a.noun, adj, a.vp).np(rng, form=f), a.vp_form(f))
    det, plural = rng.choice(NOT_ENTAILED if label else ENTAILED)
    hyper = HYPERNYM[a.cls]
    if det == "a":
        det = _det(hyper, definite=False)[0]
    noun = (PLURAL[hyper], "NNS") if plural else (hyper, "NN")
    h = _sentence(rng, _np([(det, "DT"), noun]), a.vp_form(1 - f), intro="none")
    return {"sentence1": _pair_sentence(rng, premise), "sentence2": _pair_sentence(rng, h), "label": label}


GLUE_GENERATORS: dict[str, tuple[str, Callable[[random.Random], Row]]] = {
    "cola": ("single", _gen_cola),
    "sst2": ("single", _gen_sst2),
    "mrpc": ("pair", _gen_mrpc),
    "stsb": ("pair", _gen_stsb),
    "qnli": ("pair", _gen_qnli),
    "rte": ("pair", _gen_rte),
}

# --------------------------------------------------------------------------- NLI and STS
#: slot weights (noun, adjective, verb phrase) and label range of each STS set
STS_SETS: dict[str, tuple[tuple[float, float, float], float, float]] = {
    "stsb": ((0.5, 0.3, 0.2), 0.0, 5.0),
    "sts12": ((0.4, 0.3, 0.3), 0.0, 5.0),
    "sts13": ((0.6, 0.2, 0.2), 0.0, 5.0),
    "sts14": ((0.5, 0.25, 0.25), 0.0, 5.0),
    "sts15": ((0.45, 0.35, 0.2), 0.0, 5.0),
    "sts16": ((0.55, 0.3, 0.15), 0.0, 5.0),
    "sick": ((0.5, 0.3, 0.2), 1.0, 5.0),  # SICK-R relatedness is on 1-5
}


def _gen_nli(rng: random.Random) -> Row:
    """(premise, entailment: same meaning in synonyms, contradiction: same verb phrase, other noun)."""
    a = _random_concept(rng, two_forms=True)
    f = rng.randrange(2)
    other_noun = rng.choice([i for i in range(len(NOUN_CLASSES[a.cls])) if i != a.noun])
    c = Concept(a.cls, other_noun, a.adj if rng.random() < 0.5 else _other(rng, len(ADJ2[a.cls]), a.adj), a.vp)
    premise = _sentence(rng, a.np(rng, form=f), a.vp_form(f))
    entail = _sentence(rng, a.np(rng, form=1 - f), a.vp_form(1 - f))
    contra = _sentence(rng, c.np(rng, form=f), a.vp_form(f))
    pick = lambda s: _maybe_excludable(rng, "nli") or s  # noqa: E731
    return {"sentence1": pick(premise), "sentence2": pick(entail), "hard_neg": pick(contra)}


def _gen_sts(name: str) -> Callable[[random.Random], Row]:
    weights, lo, hi = STS_SETS[name]

    def gen(rng: random.Random) -> Row:
        s1, s2, score = _similarity_pair(rng, weights, synonyms=False)
        return {"sentence1": _pair_sentence(rng, s1), "sentence2": _pair_sentence(rng, s2), "label": _graded(rng, score, lo, hi)}

    return gen


def _rng(seed: int, name: str) -> random.Random:
    return random.Random(seed * 1_000_003 + zlib.crc32(name.encode()))


def generate_raw(name: str, n: int, seed: int, *, label_noise: float = 0.0) -> tuple[pd.DataFrame, dict[str, str]]:
    """``n`` raw items of dataset ``name`` (a GLUE task, ``"nli"`` or ``"sts:<set>"``) and their gold trees.

    ``label_noise``: for the two-class GLUE tasks, the probability that an item's label is
    flipped (drawn from a generator of its own, so the sentences are the same at any noise).
    """
    if name in GLUE_GENERATORS:
        gen = GLUE_GENERATORS[name][1]
    elif name == "nli":
        gen = _gen_nli
    elif name.startswith("sts:"):
        gen = _gen_sts(name[4:])
    else:
        raise ValueError(f"unknown synthetic dataset {name!r}")
    rng = _rng(seed, name)
    rows, trees = [], {}
    for _ in range(n):
        row = gen(rng)
        out = {}
        for k, v in row.items():
            if isinstance(v, Sentence):
                trees.setdefault(v.text, v.tree)
                out[k] = v.text
            else:
                out[k] = v
        rows.append(out)
    df = pd.DataFrame(rows)
    if label_noise and name in GLUE_GENERATORS and name != "stsb":  # STS-B's scores carry their own noise
        if not 0.0 <= label_noise < 0.5:
            raise ValueError(f"label_noise must be in [0, 0.5), got {label_noise}")
        noise = _rng(seed, f"{name}:label_noise")
        flip = [noise.random() < label_noise for _ in range(len(df))]
        df["label"] = [1 - y if f else y for y, f in zip(df["label"], flip)]
    return df, trees


# --------------------------------------------------------------------------- the build
def _stats(result: BuildResult) -> dict:
    return {
        "input": result.n_input,
        "kept": result.n_kept,
        "excluded": dict(sorted(result.exclusions.items())),
        "details": dict(sorted(result.details.items())),
    }


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
        stats["glue"][task] = _stats(res)

    res = construct("nli", config.nli_size, "nli")
    write_nli(out, res)
    stats["nli"]["nli"] = _stats(res)

    res = construct("sts:stsb", config.stsb_size, "pair")
    write_sts(out, "stsb", res, seed=config.seed, ratios=config.sts_split)
    stats["sts"]["stsb"] = _stats(res)
    for name in STS_SETS:
        if name != "stsb":  # like the authors' repository: the test half only
            res = construct(f"sts:{name}", config.sts_size, "pair")
            write_sts(out, name, res, seed=config.seed, ratios=None)
            stats["sts"][name] = _stats(res)

    atomic_write_json(out / TREES_FILE, dict(sorted(all_trees.items())))
    atomic_write_json(out / STATS_FILE, {"config": as_dict(config), "translator": translator.key, "parser": "ptb (gold trees)", **stats})
    return out


def _fingerprint() -> str:
    """Changes whenever the grammar, the pipeline or the glossary does, so a stale build is never reused."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in (here / "synthetic.py", here / "construct.py", here / "translate.py", GLOSSARY):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def synthetic_config(cfg) -> SyntheticConfig:
    """The ``koglish.synthetic`` subsection of a profile (strict keys)."""
    raw = dict(((cfg.sections.get("koglish") or {}).get("synthetic")) or {})
    return build_dataclass(SyntheticConfig, raw, where=f"{cfg.source_file}: section 'koglish.synthetic'")


def ensure_mini_koglish(cfg) -> Path:
    """Build the mini Koglish for profile ``cfg`` once; return its folder.

    The folder is ``cfg.runs_dir / "koglish_synthetic" / <hash>`` where the hash
    covers the settings and the code/glossary fingerprint.  It is written to a
    temporary sibling and renamed into place, so a killed build leaves nothing
    half-written and two notebooks building at once cannot collide.
    """
    syn = synthetic_config(cfg)
    key = config_hash({"synthetic": as_dict(syn), "code": _fingerprint()})
    dest = Path(cfg.runs_dir) / "koglish_synthetic" / key
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
    ``python -m codeswitch.koglish.synthetic`` after changing the grammar or glossary
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


if __name__ == "__main__":  # regenerate the tokenizer corpus file
    atomic_write_text(CORPUS, corpus_text())
    print(f"wrote {CORPUS} ({CORPUS.stat().st_size} bytes)")
