"""Notebook 07's stand-in data in the released layouts: SAIL 2017 as GLUECoS processes it
(``train.txt``/``validation.txt``/``test.txt``) and IndicGLUE's IITP reviews (``hi-{train,valid,test}.csv``),
copied from the project's shipped sets.

The shipped sets (``assets/calbert/{sail,iitp}``) are the hand-written sentences followed by template sentences
written by :func:`template_sentences` (``python -m codeswitch.calbert.standins`` rewrites them from the
hand-written part): a topic and a sentiment phrase; the train split draws from 70% of each class's phrases,
validation and test from all, so a model is scored partly on phrasings it has not seen."""

from __future__ import annotations

import csv
import io
import random
import shutil
from pathlib import Path

#: sentences per split, each balanced over the three labels: the hand-written ones first (30 / 18 / 18), then
#: template sentences.  Issue 23: on 18 validation sentences accuracy moved in steps of 5.6 points and two
#: fine-tunes tied; 30 training sentences left several fine-tunes near chance
SIZES = {"train": 90, "validation": 90, "test": 90}
HAND_WRITTEN = {"train": 30, "validation": 18, "test": 18}
#: The claims whose smoke outcome the shipped sets decide by how they are made: claim artifact -> how, in one sentence.
#: Under the smoke profile on the shipped sets a claim listed here reads "built into the smoke data: <how>", never
#: "holds" or "does not hold" (``codeswitch.core.claims.built_into``, where :mod:`.tables` saves Tables 4 and 10); on
#: real SAIL 2017 / IITP copies and in the quick and paper profiles its verdict is computed.
CONSTRUCTIONS: dict[str, str] = {
    f"calbert_{table}": (f"the shipped {name} look-alike (assets/calbert/{task}) is written for the project with "
                         f"{' / '.join(str(SIZES[s]) for s in ('train', 'validation', 'test'))} sentences per split "
                         f"(standins.SIZES), so its split sizes cannot match the paper's {table.replace('table', 'Table ')}")
    for table, task, name in (("table4", "sail", "SAIL 2017"), ("table10", "iitp", "IITP product reviews"))
}
#: file names of each task's splits
FILES = {"sail": {"train": "train.txt", "validation": "validation.txt", "test": "test.txt"},
         "iitp": {"train": "hi-train.csv", "validation": "hi-valid.csv", "test": "hi-test.csv"}}

_TOPICS = {
    "sail": ("yeh movie", "naya phone", "aaj ka match", "is hotel ka khana", "yeh gaana", "team india ka game",
             "naya laptop", "is restaurant ki service", "kal ki party", "yeh web series", "online delivery",
             "bhai ka naya album", "office ka canteen", "metro ki service", "is app ka update", "college ka fest"),
    "iitp": ("इस फ़ोन का कैमरा", "लैपटॉप की बैटरी", "हेडफ़ोन की आवाज़", "इसकी स्क्रीन", "यह टैबलेट", "कीबोर्ड",
             "इसका चार्जर", "स्पीकर", "इस घड़ी का डिज़ाइन", "सॉफ़्टवेयर", "टचस्क्रीन", "इसकी बिल्ड क्वालिटी"),
}
_PHRASES = {
    "sail": {
        "positive": ("bahut mast hai yaar", "ekdum zabardast tha", "full paisa vasool hai", "dekh ke dil khush ho gaya",
                     "superhit hai, love it", "bahut badiya laga", "kamaal ka hai bhai", "sach mein awesome tha",
                     "bahut achha laga, thanks", "ekdum first class hai"),
        "negative": ("bilkul bekaar hai", "time waste tha yaar", "bahut bura laga", "worst experience tha",
                     "ekdum ghatiya hai", "se bahut gussa aa raha hai", "bakwas tha, paisa barbaad", "bahut disappointing tha",
                     "kharab hai, mat lena", "se pareshan ho gaye"),
        "neutral": ("kal release hoga", "ke baare mein news aayi hai", "ka schedule kal aayega", "kitne baje shuru hoga",
                    "ki details share karo", "somvar ko announce hoga", "ka price kya hai", "ke liye form bharna hai",
                    "agle hafte aa raha hai", "ki report kal milegi"),
    },
    "iitp": {
        "positive": ("बहुत अच्छा है ।", "शानदार है और मज़ा आता है ।", "बहुत तेज़ और आरामदायक है ।", "कीमत के हिसाब से बढ़िया है ।",
                     "मज़बूत और साफ़ है ।", "उम्मीद से बेहतर निकला ।", "मुझे बहुत पसंद आया ।", "दमदार है ।"),
        "negative": ("बहुत ख़राब है ।", "जल्दी ख़त्म हो जाता है ।", "ठीक से काम नहीं करता ।", "बहुत धीमा और कमज़ोर है ।",
                     "दो दिन में ख़राब हो गया ।", "बिल्कुल बेकार निकला ।", "पैसे की बर्बादी है ।", "बार बार अटक जाता है ।"),
        "neutral": ("तीन रंगों में उपलब्ध है ।", "अगले हफ़्ते से मिलेगा ।", "के साथ एक केबल आती है ।", "पिछले महीने लॉन्च हुआ था ।",
                    "का आकार छह इंच है ।", "एंड्रॉयड पर चलता है ।", "का वज़न दो सौ ग्राम है ।", "की जानकारी वेबसाइट पर है ।"),
    },
}


def template_sentences(task: str, sizes: dict[str, int], *, seed: int, exclude: set[str] = frozenset()) -> dict[str, list[tuple[str, str]]]:
    """``{split: [(text, label), ...]}``, ``sizes[split] // 3`` per label, no sentence twice (nor one of ``exclude``)."""
    rng = random.Random(seed)
    out: dict[str, list[tuple[str, str]]] = {split: [] for split in sizes}
    used = set(exclude)
    for label, phrases in _PHRASES[task].items():
        seen = phrases[: len(phrases) * 7 // 10]
        for split, n in sizes.items():
            pool = seen if split == "train" else phrases
            for _ in range(n // 3):
                text = next(t for t in iter(lambda: f"{rng.choice(_TOPICS[task])} {rng.choice(pool)}", None) if t not in used)
                used.add(text)
                out[split].append((text, label))
    for rows in out.values():
        rng.shuffle(rows)
    return out


def _read(task: str, path: Path) -> list[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    if task == "sail":
        return [tuple(line.split("\t")) for line in text.splitlines()]
    return [(t, lab) for lab, t in csv.reader(io.StringIO(text))]


def _format(task: str, rows: list[tuple[str, str]]) -> str:
    if task == "sail":
        return "".join(f"{t}\t{lab}\n" for t, lab in rows)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows((lab, t) for t, lab in rows)
    return buf.getvalue()


def write_shipped(assets: Path) -> None:
    """Rewrite ``assets/{sail,iitp}``: each split's hand-written sentences (its first lines, kept) and then template ones."""
    from ..core.atomic import atomic_write_text

    for k, task in enumerate(FILES):
        hand = {s: _read(task, assets / task / f)[: HAND_WRITTEN[s]] for s, f in FILES[task].items()}
        extra = template_sentences(task, {s: SIZES[s] - HAND_WRITTEN[s] for s in SIZES}, seed=k,
                                   exclude={t for rows in hand.values() for t, _ in rows})
        for s, f in FILES[task].items():
            atomic_write_text(assets / task / f, _format(task, hand[s] + extra[s]))


def build(root: Path) -> dict[str, Path]:
    from .data import ASSETS

    out = {}
    for task, name in (("sail", "sail2017"), ("iitp", "iitp-product-reviews")):
        shutil.copytree(ASSETS / task, root / name, dirs_exist_ok=True)
        out[name] = root / name
    return out


if __name__ == "__main__":  # python -m codeswitch.calbert.standins: rewrite the shipped sentiment sets
    from .data import ASSETS

    write_shipped(ASSETS)
