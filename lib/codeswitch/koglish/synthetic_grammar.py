"""The grammar of the mini Koglish (:mod:`codeswitch.koglish.synthetic`): its English lexicon, the
sentences it builds together with their gold PTB trees, the sentences the pipeline must exclude, and
the meaning concepts that the tasks' label rules (:mod:`codeswitch.koglish.synthetic_tasks`) draw from.

A share of each task is made of sentences the pipeline must *exclude*
(fragments that are only an NP, pronoun-only subjects, imperatives without an
NP, adjectives missing from the glossary), so the exclusion statistics of
notebook 01 have something to count.  These shares are set here by design
(``EXCLUDABLE``); they say nothing about the real data's rates.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


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

