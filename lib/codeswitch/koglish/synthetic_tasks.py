"""The tasks of the mini Koglish (:mod:`codeswitch.koglish.synthetic`): each task's generator and the rule
that sets its label, over the grammar of :mod:`codeswitch.koglish.synthetic_grammar`; :func:`generate_raw`
draws ``n`` raw items of one task with their gold trees.

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
"""

from __future__ import annotations

import random
import zlib
from typing import Callable

import pandas as pd

from .synthetic_grammar import (ADJ2, ATTRIBUTIVE, COLA_NOUNS, FINITE, HYPERNYM, NEGATIVE, NEUTRAL, NOUN_CLASSES, PLAIN_ADJ,
                                PLURAL, POSITIVE, QUESTIONS, SST_NOUNS, VPS, Concept, Sentence, _capitalise, _det,
                                _maybe_excludable, _np, _other, _other_two_form, _random_concept, _sentence)

__all__ = ["GLUE_GENERATORS", "STS_SETS", "generate_raw"]


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

