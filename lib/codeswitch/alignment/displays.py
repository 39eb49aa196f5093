"""What notebook 06 shows one level below the tables: the data as the runs read it, the loss terms on one real batch,
the alignment runs' records, and awesome-align's extraction against the alignment file."""

from __future__ import annotations

import pandas as pd

from ..core.experiment import Results, run_specs
from ..core.profiles import Profile
from .config import AlignRun, ExtractionRun, load
from .experiment import _setup, _with_alignments, align_inputs, run_one
from .plan import EXPERIMENT, TABLES, cache_dir, tiny_id

__all__ = ["first_batch_losses", "alignment_runs_table", "data_preview", "romanisation_preview", "extraction_check"]


# --------------------------------------------------------------------------- one level deeper: the loss on one batch
def first_batch_losses(spec: AlignRun, profile: Profile, n: int = 8) -> dict[str, float]:
    """The loss terms of ``spec``'s objective on its first ``n`` training pairs, with the initial encoder (nothing trained)."""
    import torch

    from .train import Aligner, PairTokens, _batch_loss

    _setup(profile)
    device, tokenizer, encoder, train, _ = align_inputs(spec, profile)
    if spec.objective == "word":
        train, _ = _with_alignments(profile, spec, train, encoder, tokenizer, device)
    aligner = Aligner(encoder, spec.mode, sentence_vector=spec.sentence_vector).to(device)
    aligner.freeze_reference()
    if aligner.frozen is not None:
        aligner.frozen.to(device)
    aligner.eval()
    with torch.no_grad():
        terms = _batch_loss(aligner, train, list(range(min(n, len(train)))), PairTokens(tokenizer, train, spec.max_length), spec,
                            device)
    return {k: float(v) for k, v in terms.items()}


# --------------------------------------------------------------------------- the data and the runs
def alignment_runs_table(results: Results) -> pd.DataFrame:
    """One line per alignment run (from its record): what was aligned and how the validation loss moved."""
    rows_of = {}
    for t in TABLES.values():
        for s in t.rows:
            rows_of.setdefault((s.objective, s.data, s.script, t.mode), []).append((t.table, s.row))
    rows = []
    for spec, r in results:
        if not isinstance(spec, AlignRun):
            continue
        for table, row in rows_of.get((spec.objective, spec.data, spec.script, spec.mode), []):
            rows.append({
                "table": table, "row": row, "mode": spec.mode, "pairs (train)": r["train_pairs"],
                "aligned word pairs": r["aligned_word_pairs"], "valid loss before": round(r["initial_valid_loss"], 4),
                "best valid loss": round(r["best_valid_loss"], 4), "best epoch": r["best_epoch"], "epochs run": r["epochs_run"],
                "held-out aligned word pairs": r.get("word_pairs_after"),  # 0: held-out word P@1 is undefined (nan)
                **{f"held-out {label} P@1 {when}": round(r[f"{key}_{when}"], 3) for key, label in (("sentence_p1", "sentence"), ("word_p1", "word"))
                   for when in ("before", "after") if f"{key}_{when}" in r},
            })
    return pd.DataFrame(rows)


def data_preview(profile: Profile, n: int = 3) -> pd.DataFrame:
    """A few training pairs of the parallel corpus in both scripts, with their aligned word pairs spelled out."""
    from .data import hold_out, load_parallel, words

    c = load(profile)
    rows = []
    for script in ("devanagari", "roman"):
        if c.parallel_holdout is not None:  # no train split: the training part of the held-out split
            rest = hold_out(load_parallel(c.parallel_source, "validation", script=script, romanisation=c.romanisation),
                            c.parallel_holdout)[0]
            d = rest.subset(range(min(n, len(rest))))
        else:
            d = load_parallel(c.parallel_source, "train", script=script, limit=n, romanisation=c.romanisation)
        for (en, hi), al in zip(d.pairs, d.alignments or [()] * len(d)):
            we, wh = words(en), words(hi)
            links = ", ".join(f"{we[i]}–{wh[j]}" for i, j in al) or "(no file)"
            rows.append({"script": script, "english": en, "hindi": hi, "aligned words": links})
    return pd.DataFrame(rows)


def romanisation_preview(profile: Profile) -> pd.DataFrame:
    """Per data source of the Roman rows: the setting, whether the authors' romanised text is read or ITRANS generated, and one example."""
    from .data import load_lexicon, load_parallel, roman_text_source

    c = load(profile)
    parallel = load_parallel(c.parallel_source, "validation", script="roman", limit=1, romanisation=c.romanisation).pairs[0]
    lexicon = load_lexicon(c.lexicon_source, script="roman", cache_dir=profile.runs_dir / "_downloads", romanisation=c.romanisation)[0]
    said = {"authors": "the authors' Romanized/ files, as released", "itrans": "ITRANS generated from the Devanagari side"}
    return pd.DataFrame([
        {"data": what, "source": source, "romanisation": c.romanisation, "Roman rows read": said[roman_text_source(source, what, c.romanisation)],
         "example": f"{en} ↔ {hi}"}
        for what, source, (en, hi) in (("parallel", c.parallel_source, parallel), ("lexicon", c.lexicon_source, lexicon))
    ])


def extraction_check(profile: Profile, n: int = 32) -> pd.DataFrame:
    """awesome-align extraction from the initial encoder vs the alignment file, on the first ``n`` validation pairs.

    Precision, recall and AER (1 − 2|A∩G| / (|A| + |G|), all gold links "sure") per
    probability threshold; cached.  Meaningful with a real mBERT; the smoke
    profile's random tiny encoder shows the code path, not the quality.
    """
    from .data import load_parallel

    _setup(profile)
    c = load(profile)
    gold = load_parallel(c.parallel_source, "validation", script="devanagari", limit=n)
    if gold.alignments is None:
        return pd.DataFrame()
    thresholds = (None, c.align_prob_threshold) if c.align_prob_threshold is not None else (None,)
    spec = ExtractionRun(experiment=EXPERIMENT, stage="extraction_check", model=c.backbone.model, source=c.parallel_source, n=n,
                         thresholds=thresholds, align_layer=c.align_layer, softmax_threshold=c.softmax_threshold,
                         max_length=c.max_length, backbone_id=tiny_id(c.backbone.model))
    columns = ["probability threshold", "layer", "links", "gold links", "precision", "recall", "AER"]
    (_, record), = run_specs([spec], run_one, profile, cache_dir=cache_dir(profile), desc="extraction check")
    return pd.DataFrame(record["rows"])[columns]

