"""Notebook 06's stand-in data in the released layouts: the IIT Bombay corpus as the hub repository
(``data/{train,validation,test}-*.parquet`` with a ``translation`` column), GLUECoS's processed folders and
the MUSE en-hi lexicon, from the project's shipped synthetic sets.

The shipped GLUECoS QA look-alike (``assets/alignment/gluecos/QA_EN_HI``) is written by :func:`squad_standin`
(``python -m codeswitch.alignment.standins`` rewrites it): template contexts over the words of the tokenizer's
corpus, each context's three sentences in one of three rotations, so that an answer's place varies."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

#: contexts (5 questions each, one unanswerable) of the shipped QA look-alike.  Issue 23: with 6 dev contexts (30
#: questions) SQuAD v2 F1 moved in steps of 3.3 points and seeds tied; 30 (150 questions) cost ~0.4 s per fine-tune
QA_CONTEXTS = {"train": 20, "dev": 30}
_NAMES = ("Amit", "Anjali", "Arjun", "Kavya", "Neha", "Pooja", "Rahul", "Rohit", "Sanjay", "Sneha", "Vikram")
_CITIES = ("Bhopal", "Delhi", "Indore", "Jaipur", "Lucknow", "Mumbai", "Patna", "Pune")
_GAMES = ("chess", "cricket", "football", "hockey", "kabaddi", "tennis")
_FOODS = ("biryani", "chole", "dosa", "momos", "paneer", "samosa")


def squad_standin(n_contexts: int, *, seed: int, first: int = 0) -> dict:
    """A SQuAD v2 document of ``n_contexts`` template paragraphs (titles ``para_<first>``...), drawn with ``seed``."""
    rng = random.Random(seed)
    data = []
    for i in range(first, first + n_contexts):
        a, b = rng.sample(_NAMES, 2)
        home, work = rng.sample(_CITIES, 2)
        game, food = rng.choice(_GAMES), rng.choice(_FOODS)
        sentences = [f"{a} {home} mein rehta hai aur roz office jaata hai.", f"Uski behen {b} {work} mein kaam karti hai.",
                     f"{a} ka favourite game {game} hai, aur {b} ko {food} bahut pasand hai."]
        r = i % 3
        context = " ".join(sentences[r:] + sentences[:r])

        def answer(text: str, anchor: str) -> list[dict]:
            return [{"text": text, "answer_start": context.index(anchor) + anchor.index(text)}]

        questions = [(f"{a} kahan rehta hai?", answer(home, f"{a} {home} mein rehta")),
                     (f"{b} kahan kaam karti hai?", answer(work, f"{b} {work} mein kaam")),
                     (f"{a} ka favourite game kya hai?", answer(game, f"game {game} hai")),
                     (f"{b} ko kya khana pasand hai?", answer(food, f"{b} ko {food} bahut")),
                     (f"{a} ki car kaunsi hai?", [])]
        qas = [{"id": f"q{i:03d}_{k}", "question": q, "answers": ans, "is_impossible": not ans} for k, (q, ans) in enumerate(questions)]
        data.append({"title": f"para_{i:03d}", "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "v2.0", "data": data}


def write_qa_standin(folder: Path) -> None:
    """``folder/{train,dev}-v2.0.json``: the shipped QA look-alike (train and dev drawn apart: other seeds, other titles)."""
    from ..core.runs import atomic_write_text

    folder.mkdir(parents=True, exist_ok=True)
    for split, seed, first in (("train", 0, 0), ("dev", 1, 1000)):
        doc = squad_standin(QA_CONTEXTS[split], seed=seed, first=first)
        atomic_write_text(folder / f"{split}-v2.0.json", json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def build(root: Path) -> dict[str, Path]:
    from datasets import Dataset

    from .data import load_parallel
    from .experiment import ASSETS, SYNTHETIC_GLUECOS

    iitb = root / "iitb-english-hindi" / "data"
    iitb.mkdir(parents=True, exist_ok=True)
    for split, name in (("train", "train"), ("validation", "validation"), ("validation", "test")):
        pairs = load_parallel("synthetic", split).pairs
        Dataset.from_dict({"translation": [{"en": en, "hi": hi} for en, hi in pairs]}).to_parquet(
            str(iitb / f"{name}-00000-of-00001.parquet"))
    gluecos = root / "GLUECoS" / "Data" / "Processed_Data"
    shutil.copytree(SYNTHETIC_GLUECOS, gluecos, dirs_exist_ok=True)
    lexicon = root / "muse-en-hi" / "en-hi.txt"
    lexicon.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ASSETS / "lexicon_en_hi.txt", lexicon)
    return {"iitb-english-hindi": iitb.parent, "gluecos": gluecos, "lexicon": lexicon}


if __name__ == "__main__":  # python -m codeswitch.alignment.standins: rewrite the shipped QA look-alike
    from .experiment import SYNTHETIC_GLUECOS

    write_qa_standin(SYNTHETIC_GLUECOS / "QA_EN_HI")
