"""ContrastiveMix §3.3: how far code-mixing moves mBERT's embeddings of queries and of passages.

The paper motivates mixing the *query* side only with one measurement: "The average cosine
similarities of mBERT embeddings between English data, in the validation set of Natural
Questions, and their code-mixed counterparts are 0.944 (SD = 0.036) for queries and 0.867
(SD = 0.257) for passages."  Here, for every validation query ``x`` (and its first positive
passage), with the backbone *before* any retrieval training and the retriever's own pooling
(the last layer's first token; query/passage maximum lengths as in training)::

    x̃        = code_mix(x, MUSE en–ℓ, r_w)            (the training-time mixing, r_w = word_rate)
    cos(x)   = e(x) · e(x̃) / (‖e(x)‖ ‖e(x̃)‖)
    reported = mean and SD (ddof 1) of cos over the texts, per target language ℓ and pooled

The paper does not say which target languages it mixed into; this uses the low-similarity
(target) group of Table 1 and pools them in the column ``all``, the one beside the paper's
numbers.  The smoke profile has no NQ validation set: it uses the synthetic training rows.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import claims
from ..core.profiles import Profile
from ..core.runs import RunCache
from .config import SECTION, Config, load

__all__ = ["NQ_DEV_FILE", "mixed_cosines", "section3_3_config", "section3_3_results", "section3_3_table"]

NQ_DEV_FILE = "nq-dev.jsonl.gz"  # Tevatron/wikipedia-nq's validation split
ROWS = {"query": "queries", "passage": "passages"}


def mixed_cosines(encode, texts: list[str], mixed: list[str]) -> np.ndarray:
    """Cosine of each text's embedding with its code-mixed copy's (``encode``: texts -> (n, H) array)."""
    a, b = encode(texts), encode(mixed)  # (n, H) each
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)  # (n,)


def section3_3_config(c: Config) -> dict:
    from ..core.models import backbone_id

    return {
        "kind": "contrastivemix-section3_3",
        "backbone": backbone_id(c.backbone.model),
        "data": c.train_data,
        "split": "synthetic-train" if c.train_data == "synthetic" else NQ_DEV_FILE,
        "max_queries": c.train_max_queries,
        "languages": list(c.low_similarity),
        "muse": c.muse,
        "word_rate": c.word_rate,
        "case_sensitive": c.case_sensitive,
        "query_max_length": c.query_max_length,
        "passage_max_length": c.passage_max_length,
    }


def _validation_rows(c: Config):
    from .data import _repo_file, load_train_set
    from .synthetic import SYNTHETIC

    ref = c.train_data
    if ref != SYNTHETIC and not Path(ref).is_file():
        ref = str(_repo_file(ref, NQ_DEV_FILE, what="contrastivemix.train_data (its validation split)"))
    return load_train_set(ref, max_queries=c.train_max_queries)


def _compute(profile: Profile, c: Config) -> dict:
    from ..core.encoders import load_dual_encoder
    from .codemix import code_mix
    from .data import passage_text
    from .inputs import backbone_path, dictionary
    from .retrieval import encoders

    rows = _validation_rows(c)
    texts = {
        "query": list(rows["query"]),
        "passage": [passage_text(p[0].get("title"), p[0]["text"]) for p in rows["positive_passages"]],
    }
    model, tokenizer = load_dual_encoder(backbone_path(profile, c.backbone.model))  # the backbone before retrieval training
    enc = dict(zip(("query", "passage"), encoders(model, tokenizer, profile, query_max_length=c.query_max_length,
                                                  passage_max_length=c.passage_max_length, batch_size=c.per_device_eval_batch_size,
                                                  sort_window=c.encode_sort_window)))
    out = {}
    for lang in c.low_similarity:
        d = dictionary(profile, c.muse, lang)
        out[lang] = {}
        for side, xs in texts.items():
            mixed = [code_mix(x, d, c.word_rate, random.Random(f"section3_3|{lang}|{side}|{i}"), case_sensitive=c.case_sensitive)
                     for i, x in enumerate(xs)]
            out[lang][side] = mixed_cosines(enc[side], xs, mixed).astype(float).tolist()
    return {"cosines": out, "n": len(rows)}


def section3_3_results(profile: Profile, c: Config) -> dict:
    """``{"cosines": {language: {"query"|"passage": [cos, ...]}}, "n": texts}`` (cached by its config)."""
    cache = RunCache(profile.runs_dir / SECTION / "section3_3")
    return cache.run(section3_3_config(c), lambda: _compute(profile, c))


def section3_3_table(profile: Profile) -> dict[str, Path]:
    """The artifact ``contrastivemix_section3_3``: mean cosine ± SD per language and pooled, beside the paper's."""
    from ..core.report import comparison, save_table

    c = load(profile)
    rec = section3_3_results(profile, c)
    cells = []
    for side, row in ROWS.items():
        pooled = []
        for lang, by_side in rec["cosines"].items():
            v = np.asarray(by_side[side])
            pooled.append(v)
            cells.append(dict(row=row, column=lang, mean=float(v.mean()), std=float(v.std(ddof=1)) if len(v) > 1 else 0.0, n=len(v)))
        v = np.concatenate(pooled)
        cells.append(dict(row=row, column="all", mean=float(v.mean()), std=float(v.std(ddof=1)) if len(v) > 1 else 0.0, n=len(v)))
    langs = list(rec["cosines"])
    wide, long = comparison(pd.DataFrame(cells), paper="contrastivemix", table="section3_3",
                            row_order=list(ROWS.values()), column_order=["all", *langs], digits=3)
    notes = [
        f"Cosine of the untrained backbone's first-token embedding of each English text with its code-mixed copy "
        f"(r_w = {c.word_rate}), mean ± SD over {rec['n']} texts per language; 'all' pools {langs} "
        "(the paper does not name its target languages).",
        "The paper's SDs: 0.036 (queries), 0.257 (passages).",
    ]
    claim = section3_3_claim(long)
    return save_table(wide, "contrastivemix_section3_3", profile, long=long, notes=notes, claim=claim,
                      caption="English vs code-mixed embeddings, mean cosine (ContrastiveMix §3.3)",
                      inputs={"model": [c.backbone.model], "train_data": [c.train_data], "muse": [c.muse]})


@claims.register("contrastivemix_section3_3", paper="contrastivemix", table="section3_3")
def section3_3_claim(long: pd.DataFrame, profile: Profile | None = None) -> claims.Claim:
    """ContrastiveMix §3.3 (contrastivemix.txt): "similarities of mBERT embeddings between English data ... and their
    code-mixed counterparts are 0.944 (SD = 0.036) for queries and 0.867 (SD = 0.257) for passages. The lower
    similarity and substantial variation in code-mixed passages ..."  (Reads no setting.)"""
    over_texts = claims.Significance("Student's t-test over texts (the paper claims no significance)",
                                     claims.seed_ttest(long).significant, untestable="no SD over two texts or more")
    return claims.greater(long, "code-mixed passages stay less similar to their English originals than code-mixed queries "
                          "(mean cosine, all target languages pooled)",
                          pairs=[(ROWS["query"], ROWS["passage"])], columns=["all"], source="ContrastiveMix §3.3 (contrastivemix.txt)",
                          significance=over_texts)
