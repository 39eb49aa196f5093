"""The synthetic retrieval set of the smoke profile: invented worlds, their facts, the glossaries that "translate" them.

**The synthetic set** (smoke profile) is made of small worlds of invented countries,
cities, people, rivers, books and mountains, with six kinds of fact.  Each fact
gives an English question and the passage that answers it; facts are split into
train / dev / test.  The collection also holds one passage per entity that
answers nothing.  One world holds 92 facts and 92 such passages; the set holds
:data:`WORLDS` worlds of the same shape with their own names (1,104 passages), so
that Recall@100 measures something (a random ranking finds a relevant passage in
the top 100 with probability 100/1,104); the other worlds ask four of the six
questions a second way, the name in the possessive (:data:`SECOND_PHRASING`), so
that BM25 cannot find every answer by its name.  The first world alone is the base world:
the tiny tokenizer's corpus (:func:`corpus_lines`) and the paper-ci stand-ins
(:mod:`.standins`) are drawn from it.  In the collections (not in the training rows: NQ's passages are not
Mr.TyDi's), every other-world passage ends with 0-3 extra sentences (:data:`EXTRA_SENTENCES`), so that
passages vary in length and wording as real ones do and BM25's scores do not tie in blocks.  The target-language version of a text replaces every word of
the shipped glossary (``assets/retrieval/en-<xx>.txt``, MUSE format) by its first
translation — word order and names stay — so "target-language" retrieval differs
from English exactly in the words code-mixing can switch.

:mod:`.data` turns the facts into a training set, query sets and collections; ``python -m
codeswitch.contrastivemix.data`` rewrites the tiny tokenizer's corpus and the word list from here (:func:`write_assets`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from ..common.muse import load_muse
from ..core.hub import MissingResourceError
from .codemix import word_spans

__all__ = ["SYNTHETIC", "CONSTRUCTIONS", "SPLITS", "Fact", "synthetic_facts", "base_facts", "synthetic_glossary_path", "translate", "corpus_lines",
           "vocabulary_words", "write_assets"]

SYNTHETIC = "synthetic"
ASSETS = Path(__file__).resolve().parents[1] / "assets"
GLOSSARY_DIR = ASSETS / "retrieval"
CORPUS_FILE = ASSETS / "corpus" / "retrieval.txt"
# every word the smoke run can tokenize (vocabulary_words): the smoke backbone keeps only their word pieces
WORDS_FILE = ASSETS / "retrieval" / "words.txt"


# --------------------------------------------------------------------------- the claims this set decides
_SAME_GLOSSARY = ("the synthetic target-language queries and passages are the English ones with every glossary word "
                  "replaced by its first translation (translate), and code-mixing switches words from that same glossary")
#: The claims whose smoke outcome this set decides by how it is made: claim artifact -> how, in one sentence.  Under the
#: smoke profile on this set a claim listed here reads "built into the smoke data: <how>", never "holds" or "does not
#: hold" (``codeswitch.core.claims.built_into``, where :mod:`.tables` saves its tables); on real Mr.TyDi / MIRACL and in
#: the quick and paper profiles its verdict is computed.  The smoke run demonstrates the mechanism; it is no evidence.
CONSTRUCTIONS: dict[str, str] = {
    "contrastivemix_table1": (
        f"{_SAME_GLOSSARY}: a model trained on code-mixed queries (ContrastiveMix, NaiveMix) has seen the words by which "
        "the test text differs from English and mDPR has not, so the comparisons with mDPR are tilted toward mixing by "
        "construction, whichever way they come out"),
    "contrastivemix_table2": (
        f"{_SAME_GLOSSARY} (the synthetic MIRACL shares Mr.TyDi's passages): a model trained on code-mixed queries has "
        "seen the words by which the test text differs from English and mDPR has not, so the comparisons with mDPR are "
        "tilted toward mixing by construction, whichever way they come out"),
    "contrastivemix_table3": (
        f"{_SAME_GLOSSARY}: a mixed passage is a partial copy of its own test-language version, not the noisy word swap "
        "that hurts relevance matching on real text, so how query-side and passage-side mixing rank is set by the "
        "construction"),
    "contrastivemix_table4": (
        f"{_SAME_GLOSSARY}: NaiveMix's mixed passages are partial copies of the test passages, so the Recall@100 "
        "degradation the paper finds for NaiveMix has no cause here, and the comparisons with mDPR are tilted toward "
        "mixing by construction"),
}


# --------------------------------------------------------------------------- the worlds
_SYLLABLES = ("ka", "lo", "ri", "van", "tel", "mor", "sa", "din", "bra", "qu", "el", "zo", "ni", "tor", "ha", "gen", "fal", "ru", "mi", "os")
# relation -> (query, title, passage); slots in braces are entity names.  Queries
# paraphrase their passage ("established" / "founded by"), and every entity occurs
# in several passages, so matching names alone (BM25's easy route) is not enough.
TEMPLATES: dict[str, tuple[str, str, str]] = {
    "capital": (
        "which city is the seat of government of {country}",
        "{country}",
        "{country} is a country near the sea . the capital of {country} is {city} , a large city .",
    ),
    "founded": (
        "who established {city}",
        "{city}",
        "{city} is an old city in {country} . the city was founded by {person} in {year} .",
    ),
    "river": (
        "what river runs through {city}",
        "{river}",
        "the {river} is a long river . it flows through {city} and {city2} .",
    ),
    "born": (
        "what is the birthplace of {person}",
        "{person}",
        "{person} was a famous writer . {person} was born in {city} in {year} .",
    ),
    "book": (
        "who is the author of {book}",
        "{book}",
        "{book} is a famous book . the book was written by {person} in {year} .",
    ),
    "mountain": (
        "what is the tallest peak in {country}",
        "{mountain}",
        "{mountain} is the highest mountain in {country} .",
    ),
}
# The other worlds ask four of the questions a second way, with the name in the possessive
# ("Vanhator's"): Lucene's Korean and Chinese analysers keep "vanhator's" as one term, so BM25
# no longer finds every answer by its name (its Recall@100 is not pinned at 100), while a
# sub-word encoder still sees the name.
SECOND_PHRASING: dict[str, str] = {
    "capital": "which city is {country}'s seat of government",
    "born": "what is {person}'s birthplace",
    "book": "who is {book}'s author",
    "mountain": "what is {country}'s tallest peak",
}
# One more passage per entity that answers no query: it shares the entity's name and
# much of the wording with the answering passages (so it competes with them) and
# makes the collection larger than the 100 passages the metrics look at.
DISTRACTORS: dict[str, str] = {
    "country": "{name} is a large country with an old city near the sea .",
    "city": "{name} is a large city near a long river .",
    "person": "{name} was a famous writer and lived in an old city .",
    "river": "the {name} is a long river near the sea .",
    "book": "{name} is a famous book .",
    "mountain": "{name} is a mountain near the sea .",
}
# Sentences that vary the other worlds' passages the way real text varies (issue 23): each passage there ends
# with 0-3 of them, drawn per passage (``random.Random(docid)``).  They state no fact a query asks about (no
# named answer; "{name}" is the passage's own title) but use the questions' words, so Lucene retrieves long
# lists for every question and its scores, which depend on a passage's length and term counts, rarely tie
# (with equal templated passages they tied in blocks: a median of 4 distinct scores per Korean query).
# The answering sentence comes first, so an encoder that reads only the first tokens still sees it.
EXTRA_SENTENCES: tuple[str, ...] = (
    "the seat of government is in the capital .",
    "the government of the country was in an old city .",
    "the birthplace of the writer is a large city near the sea .",
    "a famous writer was born in an old city .",
    "the author of the book was a famous writer .",
    "the book was written by an old author who lived near the sea .",
    "the tallest peak of the country is a mountain near the sea .",
    "the highest peak of the mountain is near the sea .",
    "a long river runs through the old city .",
    "the river flows through a large country and near the sea .",
    "the city was established near a long river .",
    "the old city which was founded near the sea is large .",
    "the writer who wrote the book lived in the city where it was written .",
    "the capital is the seat of government of the country .",
    "{name} is old .",
    "{name} is near the sea and near a long river .",
    "the writer lived with a famous author in {name} .",
    "{name} is famous .",
    # other entities of the same world, in relations no question asks about
    "{name} is near {city} .",
    "{person} lived near {name} .",
    "{person} lived with {person2} in {city} .",
    "the {river} is near {country} .",
    "{book} is a famous book in {country} .",
    "{mountain} is near {city} and the {river} .",
    "{city} is an old city near {name} .",
    "{person} was a writer who lived in {city} with {person2} .",
    "{name} is near {country} and the sea .",
    "the famous writer {person} lived near the {river} .",
    "{book} was a famous book with {person} and {person2} .",
    "{name} is near {mountain} .",
)
EXTRA_MAX = 3  # extra sentences per passage: 0 to EXTRA_MAX


_COUNTS = {"country": 12, "city": 24, "person": 16, "river": 12, "book": 16, "mountain": 12}
SPLITS = ("train", "dev", "test")
#: worlds in the synthetic set: the base world (0) and more of the same shape, with new names
WORLDS = 6


@dataclass(frozen=True)
class Fact:
    fact_id: str
    relation: str
    split: str
    query: str
    title: str
    text: str
    world: int = 0  # 0: the base world


@lru_cache(maxsize=1)
def _worlds() -> tuple[dict[str, list[str]], ...]:
    """The entities of each world; names are unique over all worlds, and the base world's are those of a one-world set."""
    used: set[str] = set()
    worlds = []
    for w in range(WORLDS):
        rng = random.Random(20240601 + w)  # a fixed world, independent of the run seeds

        def name(n_syll: int) -> str:
            while True:
                word = "".join(rng.choice(_SYLLABLES) for _ in range(n_syll)).capitalize()
                if word not in used:
                    used.add(word)
                    return word

        out = {kind: [] for kind in _COUNTS}
        for kind, n in _COUNTS.items():
            for _ in range(n):
                if kind == "person":
                    out[kind].append(f"{name(2)} {name(2)}")
                elif kind == "book":
                    out[kind].append(f"{name(2)} {name(3)}")
                else:
                    out[kind].append(name(3))
        worlds.append(out)
    return tuple(worlds)


def _entities() -> dict[str, list[str]]:
    """The base world's entities."""
    return _worlds()[0]


def _world_facts(w: int) -> list[Fact]:
    e = _worlds()[w]
    rng = random.Random(7 if w == 0 else f"7|{w}")
    prefix = "" if w == 0 else f"w{w}-"
    slots_of = {
        "capital": [dict(country=c, city=e["city"][i]) for i, c in enumerate(e["country"])],
        "founded": [dict(city=c, country=e["country"][i % 12], person=e["person"][i % 16], year=1100 + 31 * i) for i, c in enumerate(e["city"])],
        "river": [dict(river=r, city=e["city"][i], city2=e["city"][i + 12]) for i, r in enumerate(e["river"])],
        "born": [dict(person=p, city=e["city"][(i * 5) % 24], year=1700 + 13 * i) for i, p in enumerate(e["person"])],
        "book": [dict(book=b, person=e["person"][(i * 3) % 16], year=1750 + 11 * i) for i, b in enumerate(e["book"])],
        "mountain": [dict(mountain=m, country=e["country"][i]) for i, m in enumerate(e["mountain"])],
    }
    facts = []
    for relation, (q_t, title_t, text_t) in TEMPLATES.items():
        q_t = q_t if w == 0 else SECOND_PHRASING.get(relation, q_t)
        slots = slots_of[relation]
        order = list(range(len(slots)))
        rng.shuffle(order)
        for i, s in enumerate(slots):
            rank = order.index(i) / len(slots)  # half train, a quarter dev, a quarter test, per relation
            split = "train" if rank < 0.5 else ("dev" if rank < 0.75 else "test")
            facts.append(Fact(f"{relation}-{prefix}{i:02d}", relation, split, q_t.format(**s), title_t.format(**s), text_t.format(**s), w))
    return facts


@lru_cache(maxsize=1)
def synthetic_facts() -> tuple[Fact, ...]:
    """The synthetic set's facts (English), each with its split and world; the same on every machine."""
    return tuple(f for w in range(WORLDS) for f in _world_facts(w))


def base_facts() -> tuple[Fact, ...]:
    """The base world's facts (the tiny tokenizer's corpus and the paper-ci stand-ins)."""
    return tuple(f for f in synthetic_facts() if f.world == 0)


@lru_cache(maxsize=None)
def _distractors_by_world(base_only: bool = False) -> tuple[tuple[int, tuple[str, str, str]], ...]:
    """(world, (docid, title, text)) of the passages that answer no query (``base_only``: the base world's)."""
    return tuple(
        (w, (f"doc-extra-{'' if w == 0 else f'w{w}-'}{kind}-{i:02d}", name, DISTRACTORS[kind].format(name=name)))
        for w, world in enumerate(_worlds()[:1] if base_only else _worlds())
        for kind, names in world.items()
        for i, name in enumerate(names)
    )


def _distractors(base_only: bool = False) -> tuple[tuple[str, str, str], ...]:
    """(docid, title, text) of the passages that answer no query (``base_only``: the base world's)."""
    return tuple(doc for _, doc in _distractors_by_world(base_only))


def synthetic_glossary_path(language: str) -> Path:
    path = GLOSSARY_DIR / f"en-{language}.txt"
    if not path.is_file():
        known = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
        raise MissingResourceError(f"the synthetic retrieval set has no glossary for '{language}' (shipped: {', '.join(known)})")
    return path


@lru_cache(maxsize=None)
def _glossary(language: str) -> dict[str, list[str]]:
    return load_muse(synthetic_glossary_path(language))


def translate(text: str, dictionary: Mapping[str, Sequence[str]]) -> str:
    """Word-by-word 'translation': every dictionary word (matched lower-cased) becomes its first translation."""
    pieces, cursor = [], 0
    for word, start, end in word_spans(text):
        tr = dictionary.get(word.lower())
        if tr:
            pieces += [text[cursor:start], tr[0]]
            cursor = end
    return "".join(pieces) + text[cursor:]


def _in_language(text: str, language: str) -> str:
    return text if language == "en" else translate(text, _glossary(language))


def _names(text: str) -> set[str]:
    """The invented names in a synthetic text: its capitalised words (a possessive 's dropped)."""
    return {w.removesuffix("'s") for w in text.split() if w[:1].isupper()}


def _synthetic_train_rows(facts: Sequence[Fact] | None = None, *, lexical_negatives: bool = True) -> list[dict]:
    """The training rows of ``facts`` (default: the whole synthetic set), two hard negatives each.

    ``lexical_negatives``: as DPR's BM25 negatives, passages that share a name with the query (the same
    entity in another fact, or its passage that answers nothing), padded with passages of the same kind of
    fact about other entities; otherwise those only (the paper-ci stand-ins keep that older choice).
    """
    facts = synthetic_facts() if facts is None else facts
    by_relation: dict[str, list[Fact]] = {}
    for f in facts:
        by_relation.setdefault(f.relation, []).append(f)
    by_name: dict[str, list[tuple[str, str, str]]] = {}
    if lexical_negatives:
        docs = [(f"doc-{f.fact_id}", f.title, f.text) for f in facts] + list(_distractors())
        for doc in docs:
            for name in _names(f"{doc[1]} {doc[2]}"):
                by_name.setdefault(name, []).append(doc)
    rows = []
    for f in facts:
        if f.split != "train":
            continue
        same = by_relation[f.relation]
        j = same.index(f)
        shared = sorted({d for name in _names(f.query) for d in by_name.get(name, ()) if d[0] != f"doc-{f.fact_id}"})
        random.Random(f.fact_id).shuffle(shared)
        # Hard negatives: passages about the query's entity, then passages of the same kind of fact about other entities.
        negs = (shared + [(f"doc-{n.fact_id}", n.title, n.text) for n in (same[(j + k) % len(same)] for k in (1, 2))])[:2]
        rows.append({
            "query_id": f"q-{f.fact_id}",
            "query": f.query,
            "positive_passages": [{"docid": f"doc-{f.fact_id}", "title": f.title, "text": f.text}],
            "negative_passages": [{"docid": d, "title": t, "text": x} for d, t, x in negs],
        })
    return rows


def _with_extras(text: str, docid: str, name: str, world: Mapping[str, Sequence[str]]) -> str:
    """``text`` followed by 0-:data:`EXTRA_MAX` of :data:`EXTRA_SENTENCES`, drawn for passage ``docid`` (seeded by it);
    their other entities are drawn from ``world``."""
    rng = random.Random(docid)
    extra = rng.sample(EXTRA_SENTENCES, rng.randint(0, EXTRA_MAX))
    return " ".join([text, *(x.format(name=name, person2=rng.choice(world["person"]),
                                      **{kind: rng.choice(names) for kind, names in world.items()}) for x in extra)])


@lru_cache(maxsize=1)
def _collection_docs() -> tuple[tuple[str, str, str], ...]:
    """(docid, title, text) of the collection's passages (English): every fact's passage, then the passages that answer
    nothing; outside the base world each ends with its extra sentences (:data:`EXTRA_SENTENCES`)."""
    docs = [(f.world, (f"doc-{f.fact_id}", f.title, f.text)) for f in synthetic_facts()] + list(_distractors_by_world())
    return tuple((docid, title, text if w == 0 else _with_extras(text, docid, title, _worlds()[w]))
                 for w, (docid, title, text) in docs)


def corpus_lines() -> list[str]:
    """The lines of ``assets/corpus/retrieval.txt`` (the tiny tokenizer's share of this data).

    Every English query and passage of the base world, each glossary entry, and each template in every
    shipped glossary language, so the tiny BPE tokenizer has seen all of the words.
    """
    lines = []
    for f in base_facts():
        lines += [f.query, f.text]
    lines += [text for _, _, text in _distractors(base_only=True)]
    languages = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
    for lang in languages:
        g = _glossary(lang)
        lines += [f"{en} {' '.join(tr)}" for en, tr in g.items()]
        first = {r: next(f for f in base_facts() if f.relation == r) for r in TEMPLATES}
        for f in first.values():
            lines += [_in_language(f.query, lang), _in_language(f.text, lang)]
    return lines


def vocabulary_words() -> list[str]:
    """Every word (as BERT's basic tokenizer splits text) that a smoke run on the synthetic set can encode, sorted.

    The words of every query, title and passage of every world, in English and in every shipped glossary
    language, and of every glossary entry (both sides: code-mixing picks any translation).  A code-mixed
    text is made of these words, so a WordPiece vocabulary cut to their pieces tokenizes every smoke text
    exactly as the full one does (``codeswitch.core.models.PRETRAINED_SLICES``, ``vocabulary``).
    """
    languages = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
    texts = [f.query for f in synthetic_facts()] + [t for _, title, text in _collection_docs() for t in (title, text)]
    texts += [_in_language(t, lang) for lang in languages for t in list(texts)]
    texts += [w for lang in languages for en, tr in _glossary(lang).items() for w in (en, *tr)]
    return sorted({w for t in texts for w, _, _ in word_spans(t)})


def write_assets() -> None:
    """Rewrite the tiny tokenizer's corpus (:func:`corpus_lines`) and the word list (:func:`vocabulary_words`)."""
    from ..core.atomic import atomic_write_text

    atomic_write_text(CORPUS_FILE, "\n".join(corpus_lines()) + "\n")
    print(f"wrote {CORPUS_FILE} ({CORPUS_FILE.stat().st_size} bytes)")
    atomic_write_text(WORDS_FILE, "\n".join(vocabulary_words()) + "\n")
    print(f"wrote {WORDS_FILE} ({WORDS_FILE.stat().st_size} bytes)")
