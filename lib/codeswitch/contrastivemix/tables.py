"""ContrastiveMix's Tables 1–4 (notebook 05), built from the results of :func:`codeswitch.contrastivemix.experiment.run` alone.

:func:`scores` turns the results into one long frame (one row per model, target,
setting and metric, plus BM25) and the per-query scores the significance tests read;
:func:`tables` writes the four tables beside the paper's numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core import claims, reported
from ..core.experiment import Results
from ..core.learning import KEY as LEARNING_KEY
from ..core.profiles import Profile, seeds_for
from ..core.provenance import records_inputs
from .config import Bm25Run, Config, EvalRun, load
from . import search
from .plan import MAIN_VARIANTS, VARIANTS
from .synthetic import CONSTRUCTIONS

__all__ = ["Scores", "scores", "query_note", "tables", "table1", "table2", "table3", "table4", "SETTINGS", "METRIC_KEYS"]

SETTINGS = {
    "hybrid": "",  # the tables' main rows
    "hybrid_report_split": " · tuned on {split} (released code)",
    "dense": " · dense only",
}
METRIC_KEYS = {"MRR@100": "mrr@100", "Recall@100": "recall@100"}
BM25_SEED = -1  # BM25 has no seed: its rows carry this placeholder


@dataclass
class Scores:
    """The scores of the grid: ``frame`` (one row per model, target, setting and metric) and per-query scores."""

    frame: pd.DataFrame
    per_query: dict = field(repr=False)  # (variant, benchmark, language, setting) -> {seed: {metric: {qid: value}}}
    align_search: dict = field(default_factory=dict, repr=False)  # {variant: its align_weight search record} (search.selection)
    # (variant, benchmark, language, run label, result["learning"]) of each evaluation read: what a table's claims are
    # read beside (:func:`_runs`, core.claims.learned)
    learning: list = field(default_factory=list, repr=False)
    # (benchmark, language) -> the BM25 record's "query_sample" (eval_max_queries: each split's sampled and whole counts)
    query_sample: dict = field(default_factory=dict, repr=False)

    def _repr_html_(self):  # pragma: no cover - notebook display
        return self.summary()._repr_html_()

    def summary(self) -> pd.DataFrame:
        """Mean over seeds of every (method, benchmark, language) under the main setting."""
        f = self.frame[self.frame["setting"].isin(["hybrid", "bm25"])]
        return f.pivot_table(index=["benchmark", "language"], columns=["row", "metric"], values="value", aggfunc="mean", sort=False).round(2)


def scores(results: Results) -> Scores:
    """The evaluations and BM25 runs of ``results`` as :class:`Scores` (nothing is computed)."""
    rows, per_query, bm25, chosen, learned = [], {}, {}, search.selection(results), []
    for spec, rec in results:
        if isinstance(spec, Bm25Run):
            bm25[(spec.benchmark, spec.language)] = (spec, rec)
        if not isinstance(spec, EvalRun) or not search.is_selected(spec.model, chosen):  # under a search: the kept w's models
            continue
        m, b = spec.model, spec.bm25
        v = VARIANTS[m.variant]
        if rec.get(LEARNING_KEY):
            learned.append((v.key, b.benchmark, b.language, f"{v.label or v.ablation_label} seed {m.seed} ({b.benchmark}-{b.language})",
                            rec[LEARNING_KEY]))
        for setting in SETTINGS:
            res = rec[setting]
            for metric, value in res["mean"].items():
                rows.append(dict(variant=v.key, row=v.label or v.ablation_label, benchmark=b.benchmark, language=b.language,
                                 seed=m.seed, setting=setting, metric=metric, value=value, weight=res.get("weight"),
                                 report_split=b.report_split))
            per_query.setdefault((v.key, b.benchmark, b.language, setting), {})[m.seed] = res["per_query"]
    for t in sorted({(x["benchmark"], x["language"]) for x in rows}):
        spec, rec = bm25[t]
        for metric, value in rec["mean"].items():
            rows.append(dict(variant="bm25", row="BM25", benchmark=t[0], language=t[1], seed=BM25_SEED, setting="bm25",
                             metric=metric, value=value, weight=None, report_split=spec.report_split))
    sampled = {t: rec["query_sample"] for t, (_, rec) in bm25.items() if "query_sample" in rec}
    return Scores(pd.DataFrame(rows), per_query, chosen, learned, sampled)


def _runs(results: Scores, benchmark: str, variants: Sequence[str], languages: Sequence[str]) -> list:
    """``(label, result["learning"])`` of the evaluations a table summarises: its benchmark, variants and languages."""
    return [(label, value) for v, b, lang, label, value in results.learning
            if b == benchmark and v in variants and lang in languages]


@records_inputs
def tables(results: Results, profile: Profile) -> dict[str, dict[str, Path]]:
    """Write Tables 1–4; return ``{name: paths}``."""
    s, c = scores(results), load(profile)
    return {name: fn(s, profile, c) for name, fn in (("contrastivemix_table1", table1), ("contrastivemix_table2", table2),
                                                    ("contrastivemix_table3", table3), ("contrastivemix_table4", table4))}


# --------------------------------------------------------------------------- the tables
def _col(language: str, benchmark: str) -> str:
    return language.capitalize() if benchmark == "mrtydi" else language


def _p_value(results: Scores, variant: str, benchmark: str, language: str, metric: str) -> float:
    """Paired t-test against mDPR on per-query scores averaged over seeds (main setting)."""
    from .evaluate import paired_t_test

    def averaged(key):
        seeds = results.per_query.get((key, benchmark, language, "hybrid"), {})
        qids = sorted(set.intersection(*(set(s[metric]) for s in seeds.values()))) if seeds else []
        return {q: float(np.mean([s[metric][q] for s in seeds.values()])) for q in qids}

    return paired_t_test(averaged(variant), averaged("mdpr"))


def _language_table(results: Scores, c: Config, benchmark: str, groups: Sequence[tuple[Sequence[str], str | None]], metric: str, table_id: str):
    """Rows: methods × settings (+ BM25); columns: languages and group averages; mean ± std over seeds."""
    from ..core.report import comparison

    f = results.frame
    f = f[(f["benchmark"] == benchmark) & (f["metric"] == METRIC_KEYS[metric])]
    report_split = c.splits(benchmark)[0]
    cells, order_rows, order_cols, pvals = [], [], [], {}
    for setting, suffix in [*SETTINGS.items(), ("bm25", None)]:
        variants = MAIN_VARIANTS if setting != "bm25" else ("bm25",)
        for key in variants:
            label = "BM25" if key == "bm25" else VARIANTS[key].label + suffix.format(split=report_split)
            sub = f[(f["variant"] == key) & (f["setting"] == setting)]
            if sub.empty:
                continue
            order_rows.append(label)
            for languages, avg_label in groups:
                per_seed = {}
                for lang in languages:
                    vals = sub[sub["language"] == lang]
                    if vals.empty:
                        continue
                    col = _col(lang, benchmark)
                    cells.append(dict(row=label, column=col, mean=vals["value"].mean(), std=vals["value"].std(ddof=1) if len(vals) > 1 else 0.0, n=len(vals)))
                    order_cols.append(col)
                    for seed, v in zip(vals["seed"], vals["value"]):
                        per_seed.setdefault(seed, []).append(v)
                    if setting == "hybrid" and key not in ("mdpr", "bm25"):
                        pvals[(label, col)] = _p_value(results, key, benchmark, lang, METRIC_KEYS[metric])
                if avg_label and per_seed:
                    avgs = [float(np.mean(v)) for v in per_seed.values()]
                    cells.append(dict(row=label, column=avg_label, mean=float(np.mean(avgs)), std=float(np.std(avgs, ddof=1)) if len(avgs) > 1 else 0.0, n=len(avgs)))
                    order_cols.append(avg_label)
    measured = pd.DataFrame(cells)
    wide, long = comparison(measured, paper="contrastivemix", table=table_id, row_order=order_rows, column_order=list(dict.fromkeys(order_cols)))
    long["p_value"] = [pvals.get((r, col), np.nan) for r, col in zip(long["row"], long["column"])]
    long["significant"] = [int(p < 0.05) if not math.isnan(p) else 0 for p in long["p_value"]]
    return _mark_stars(wide, long), long


def _mark_stars(wide: pd.DataFrame, long: pd.DataFrame) -> pd.DataFrame:
    """``*`` after our mean where p < 0.05 against mDPR, and after the paper's value where the paper stars it."""
    from dataclasses import replace

    from ..core.render import Cell
    from ..core.reported.contrastivemix import STAR

    wide = wide.copy()
    for rec in long.itertuples():
        if rec.row not in wide.index or rec.column not in wide.columns:
            continue
        cell = wide.loc[rec.row, rec.column]
        if not isinstance(cell, Cell):
            continue
        if rec.significant:
            cell = replace(cell, ours=re.sub(r"^(-?\d+\.\d+)", r"\1*", cell.ours))
        if STAR in (rec.paper_note or "") and cell.paper:
            cell = replace(cell, paper=cell.paper + "*")
        wide.loc[rec.row, rec.column] = cell
    return wide


def _mrtydi_groups(c: Config):
    return [(c.low_similarity, "Avg (low)" if c.low_similarity else None), (c.high_similarity, "Avg (high)" if c.high_similarity else None)]


def _languages_of(groups) -> list[str]:
    return [lang for languages, _ in groups for lang in languages]


def corpus_note(c: Config) -> str:
    """What a reduced corpus (``contrastivemix.corpus_sample``) is, said in every table that scores the dense retriever."""
    return (f"Reduced corpora (contrastivemix.corpus_sample {c.corpus_sample:,}): the dense retriever searches, per target, "
            f"every passage judged for a reported or tuning query, BM25's top {c.depth} of each of those queries and "
            f"{c.corpus_sample:,} passages drawn at random (one fixed seed), not the whole corpus; BM25 ranks the whole "
            "corpus.  Scores are not comparable with the paper's full-corpus ones (easier: fewer distractors).")


def query_note(results: Scores, c: Config, benchmark: str, languages: Sequence[str]) -> list[str]:
    """What a sample of the evaluation queries (``contrastivemix.eval_max_queries``) is, said in every table that
    scores one: per split and language, N of M queries (M the split's real count; "all M" where it has no more)."""
    if c.eval_max_queries is None:
        return []
    splits = []
    for name, what in (("report", "scored on"), ("tune", "hybrid weight tuned on")):
        cells = [(lang, results.query_sample[(benchmark, lang)][name]) for lang in languages if (benchmark, lang) in results.query_sample]
        if cells:
            counts = ", ".join(f"{_col(lang, benchmark)} " + (f"all {q['of']:,}" if q["n"] == q["of"] else f"{q['n']:,} of {q['of']:,}")
                               for lang, q in cells)
            splits.append(f"{what} {cells[0][1]['split']}: {counts}")
    return [f"Evaluation queries: at most {c.eval_max_queries:,} per language and split, N of M below (seeded sample, "
            "contrastivemix.eval_max_queries; one fixed seed: every method, seed and BM25 reads the same queries, and the "
            "reduced corpus and the tuning read only these)" + (f" -- {'; '.join(splits)} queries." if splits else ".")]


def _notes(profile: Profile, c: Config, benchmark: str) -> list[str]:
    from ..core.report import spread_note

    report, tune = c.splits(benchmark)
    n = len(seeds_for(profile, c.seeds))
    notes = [
        f"Main rows: BM25 + dense hybrid, weight on dense tuned on {tune} (MRR@100), scored on {report}; "
        f"'tuned on {report} (released code)': the weight tuned on the reported split itself; 'dense only': no BM25.",
        f"{spread_note(n)}; * after our mean: paired t-test against mDPR on per-query scores (averaged over seeds), p < 0.05; "
        "* after the paper's value: starred in the paper.",
        "Averages: over the configured languages of the group, per seed, then over seeds.",
    ]
    if c.corpus_sample is not None:
        notes.append(corpus_note(c))
    if c.train_data == "synthetic" and profile.name != "smoke":  # the smoke profile's tables carry claims.SMOKE_NOTE
        notes.append(f"synthetic data: {c.backbone.name} ({c.backbone.model}) encoders trained a few steps on the synthetic "
                     "retrieval set; the dense rows show the retrievers learning (each evaluation's learning entry: dense "
                     "MRR@100 vs the untrained encoder, Recall@100 vs a random ranking), not the paper's effect sizes.")
    return notes


def _fallback_note(results: Scores, benchmark: str) -> list[str]:
    """A note naming the cells whose tuned hybrid weight is w = 0: the hybrid falls back to BM25 there, so a tie
    with BM25's row is that fallback, not two systems scoring alike by chance (issue 42.7)."""
    f = results.frame
    weight = pd.to_numeric(f["weight"], errors="coerce")
    zero = f[(f["benchmark"] == benchmark) & (weight == 0.0)]
    if zero.empty:
        return []
    cells = sorted({f"{row} ({lang}, seed {seed})" for row, lang, seed in zip(zero["row"], zero["language"], zero["seed"])})
    return [f"Tuned hybrid weight w = 0 (the hybrid falls back to BM25) for: {'; '.join(cells)}. Where every seed of a "
            "cell fell back, it equals BM25's."]


def _save(profile: Profile, wide, long, name, caption, notes, claim=None, learning=()):
    """Save a table; its own claim (the first: the artifact's) marked built in where the synthetic set decides it
    (:data:`.synthetic.CONSTRUCTIONS`); ``learning``: its evaluations' learning entries (:func:`_runs`)."""
    from ..core.report import save_table

    checked = [claim] if isinstance(claim, claims.Claim) else list(claim or ())
    if checked:
        checked[0] = claims.built_into(checked[0], CONSTRUCTIONS.get(name))
    return save_table(wide, name, profile, caption=caption, long=long, notes=notes, claim=checked, learning=learning)


# --------------------------------------------------------------------------- the paper's claims (§4.4, contrastivemix.txt)
CM, MDPR, NAIVE = (VARIANTS[k].label for k in ("contrastivemix", "mdpr", "naivemix"))
SOURCE = "ContrastiveMix §4.4 Result (contrastivemix.txt)"


def _starred(long: pd.DataFrame) -> pd.DataFrame:
    """The paper's own significance marks (a star: p < 0.05, paired t-test against mDPR) as the ``significant`` column
    a measured table computes (:func:`_p_value`), so one claim reads both."""
    from ..core.reported.contrastivemix import STAR

    return long.assign(significant=[int(STAR in str(n)) for n in long["paper_note"]])


def _significant(long: pd.DataFrame) -> dict[tuple[str, str], bool]:
    if "significant" not in long:
        return {}
    return {(str(r), str(c)): bool(v) for r, c, v in zip(long["row"], long["column"], long["significant"]) if pd.notna(v)}


def _stars(long: pd.DataFrame) -> claims.Significance:
    """The paper's test, against mDPR only: the paired t-test over queries, p < 0.05 — the run's ``p_value`` column
    where it has one, else the paper's stars (``significant``, :func:`_starred`)."""
    pv = ({(str(r), str(c)): float(v) for r, c, v in zip(long["row"], long["column"], long["p_value"]) if pd.notna(v)}
          if "p_value" in long else None)
    stars = _significant(long)

    def significant(better: str, worse: str, column: str) -> bool | None:
        if MDPR not in (better, worse):
            return None
        row = better if worse == MDPR else worse  # the row tested against mDPR
        if pv is not None:
            return pv[(row, column)] < claims.ALPHA if (row, column) in pv else None
        return stars.get((row, column))

    return claims.Significance("paired t-test over queries", significant, claims.ALPHA, "the paper's test is against mDPR only")


def _languages(long: pd.DataFrame, languages: Sequence[str], benchmark: str) -> list[str]:
    present = set(map(str, long["column"]))
    return [_col(lang, benchmark) for lang in languages if _col(lang, benchmark) in present]


def _section(profile: Profile | None) -> Config:
    """The section a registered claim reads (:func:`codeswitch.core.claims.on_paper` passes a profile, or none: the
    paper's defaults); the table builders pass their own :class:`Config` to the checks instead."""
    return load(profile) if profile is not None else Config()


# Each claim: a check of (long, c), which the table builders call with their Config, and the claim core registers,
# ``fn(long, profile)``, which builds that Config once from the profile it is given.
def _table1_check(long: pd.DataFrame, c: Config) -> claims.Claim:
    """§4.4: "in our target group for cross-lingual transfer into the low similarity group (Ar, Th, Ko, Ja, Id, Fi),
    ContrastiveMix significantly outperforms mDPR and NaiveMix in terms of MRR@100 across all languages"; "NaiveMix
    models show a performance drop".  Checked: in every low-similarity language ContrastiveMix > mDPR, significantly (the
    paired t-test over queries, p < 0.05: the table's stars; the paper's stars test against mDPR only), and >
    NaiveMix; NaiveMix < mDPR on the low-similarity average."""
    text = ("ContrastiveMix significantly outperforms mDPR (paired t-test over queries, p < 0.05) and outperforms NaiveMix in "
            "MRR@100 in every low-similarity language; NaiveMix falls below mDPR on their average")
    langs = _languages(long, c.low_similarity, "mrtydi")
    sig = _stars(long)
    beats = claims.greater(long, text, pairs=[(CM, MDPR), (CM, NAIVE)], columns=langs, source=SOURCE, significance=sig)
    drop = claims.greater(long, text, pairs=[(MDPR, NAIVE)], columns=["Avg (low)"], source=SOURCE, significance=sig)
    if beats.holds is None or drop.holds is None:
        return claims.Claim(text, None, (beats if beats.holds is None else drop).detail, SOURCE)
    not_sig = [col for col in langs if not sig.significant(CM, MDPR, col)]
    detail = (f"{beats.detail}" + (f"; not significant against mDPR: {', '.join(not_sig)}" if not_sig else "")
              + f"; NaiveMix vs mDPR on Avg (low): {drop.detail}")
    return claims.Claim(text, bool(beats.holds and drop.holds and not not_sig), detail, SOURCE)


@claims.register("contrastivemix_table1", paper="contrastivemix", table="table1", prepare=_starred)
def table1_claim(long: pd.DataFrame, profile: Profile | None = None) -> claims.Claim:
    """Table 1's claim (:func:`_table1_check`)."""
    return _table1_check(long, _section(profile))


def _groups_check(long: pd.DataFrame) -> claims.Claim:
    """§1 Introduction (contrastivemix.txt): "the impact of ContrastiveMix is notably more pronounced in the low similarity
    group, resulting in a widened performance gap of 1.29 MRR@100 when compared to mDPR".  Checked: ContrastiveMix −
    mDPR on Avg (low) above the same gain on Avg (high) (the paper's: +1.29 against −0.08), and the low group's gain of
    the stated size (:func:`codeswitch.core.claims.magnitude`'s rule); on the paper's own cells the 1.29 is checked to
    the printed digit.  Reads no setting."""
    source = "ContrastiveMix §1 Introduction and §4.4 Result, Table 1 (contrastivemix.txt)"
    stated = reported.lookup("contrastivemix", "headline", "§1 Introduction", "gap (low)").value
    text = f"ContrastiveMix's MRR@100 gain over mDPR is larger in the low-similarity group than in the high one, {stated:g} there"

    def gain(cells, col):
        return cells[(CM, col)] - cells[(MDPR, col)] if (CM, col) in cells and (MDPR, col) in cells else None

    ours = claims.means(long)
    low, high = gain(ours, "Avg (low)"), gain(ours, "Avg (high)")
    if low is None or high is None:
        larger = claims.Claim(text, None, "Avg (low) or Avg (high) not run for ContrastiveMix and mDPR", source)
    else:
        larger = claims.Claim(text, low > high, claims.tally(int(low > high), 1, why_untested="the paper's test is per "
                              "language; none on the group averages") + f"; gain {low:+.2f} (low) vs {high:+.2f} (high)", source)
    printed = gain(claims.paper_values("contrastivemix", "table1"), "Avg (low)")
    mismatch = "" if printed is None else claims.arithmetic("§1's gap in the low-similarity group", stated, printed)
    size = claims.magnitude(text, [("Avg (low)", low, stated)], source=source, unit=" MRR@100")
    return claims.all_of(text, [("larger in the low group", larger), ("the stated size", size)], source=source,
                         contradiction=mismatch)


@claims.register("contrastivemix_table1_groups", paper="contrastivemix", table="headline",
                 prepare=lambda _: claims.reported_long("contrastivemix", "table1"))
def table1_groups_claim(long: pd.DataFrame, profile: Profile | None = None) -> claims.Claim:
    """The low-similarity group's larger gain (:func:`_groups_check`)."""
    return _groups_check(long)


def _table2_check(long: pd.DataFrame, c: Config) -> claims.Claim:
    """§4.4: "Results on the MIRACL dataset shown in Table 2 also exhibit similar trends": ContrastiveMix > mDPR and >
    NaiveMix in MRR@100 on every MIRACL target language (the paper marks no significance for ContrastiveMix here)."""
    langs = _languages(long, c.miracl_target, "miracl")
    return claims.greater(long, "ContrastiveMix > mDPR and > NaiveMix in MRR@100 on every MIRACL target language (\"similar trends\")",
                          pairs=[(CM, MDPR), (CM, NAIVE)], columns=langs, source=SOURCE + ", Table 2", significance=_stars(long))


@claims.register("contrastivemix_table2", paper="contrastivemix", table="table2")
def table2_claim(long: pd.DataFrame, profile: Profile | None = None) -> claims.Claim:
    """Table 2's claim (:func:`_table2_check`)."""
    return _table2_check(long, _section(profile))


@claims.register("contrastivemix_table3", paper="contrastivemix", table="table3")
def table3_claim(long: pd.DataFrame, profile: Profile | None = None) -> claims.Claim:
    """§4.4: "Query-only ContrastiveMix, our proposed method, shows the best performance" (Table 3): the best MRR@100
    and the best Recall@100 of the mixing variants (ties: every tied variant counts as the best).  Reads no setting."""
    expected = VARIANTS["contrastivemix"].ablation_label
    text = f"{expected} (query-only ContrastiveMix) has the best MRR@100 and the best Recall@100 of the mixing variants"
    parts = [claims.best_is(long, text, expected=expected, where=col, source=SOURCE + ", Table 3") for col in METRIC_KEYS]
    if any(c.holds is None for c in parts):
        return next(c for c in parts if c.holds is None)
    return claims.Claim(text, all(c.holds for c in parts), "; ".join(f"{col}: {c.detail}" for col, c in zip(METRIC_KEYS, parts)),
                        SOURCE + ", Table 3")


def _table4_check(long: pd.DataFrame, c: Config) -> claims.Claim:
    """§4.4: "unlike NaiveMix, there was no significant performance degradation in terms of Recall@100 in any case, as
    shown in Table 4".  Checked over every language (both groups): no language where ContrastiveMix is below mDPR
    with p < 0.05 (paired t-test over queries: the stars), and at least one where NaiveMix is."""
    text = ("no significant Recall@100 degradation against mDPR for ContrastiveMix in any language (paired t-test over "
            "queries, p < 0.05), unlike NaiveMix")
    langs = _languages(long, c.low_similarity + c.high_similarity, "mrtydi")
    means, sig = claims.means(long), _significant(long)
    if not langs or any((r, lang) not in means for r in (CM, NAIVE, MDPR) for lang in langs):
        return claims.Claim(text, None, "a row or language not run", SOURCE + ", Table 4")

    def drops(row):
        return [lang for lang in langs if means[(row, lang)] < means[(MDPR, lang)] and sig.get((row, lang), False)]

    cm, naive = drops(CM), drops(NAIVE)
    below = {row: sum(means[(row, lang)] < means[(MDPR, lang)] for lang in langs) for row in (CM, NAIVE)}
    detail = (f"below mDPR: ContrastiveMix in {below[CM]}/{len(langs)} languages, NaiveMix in {below[NAIVE]}/{len(langs)}; "
              f"significant drops (paired t-test over queries, α = {claims.ALPHA:g}): ContrastiveMix {', '.join(cm) or 'none'}, "
              f"NaiveMix {', '.join(naive) or 'none'}")
    return claims.Claim(text, not cm and bool(naive), detail, SOURCE + ", Table 4")


@claims.register("contrastivemix_table4", paper="contrastivemix", table="table4", prepare=_starred)
def table4_claim(long: pd.DataFrame, profile: Profile | None = None) -> claims.Claim:
    """Table 4's claim (:func:`_table4_check`)."""
    return _table4_check(long, _section(profile))


def table1(results: Scores, profile: Profile, c: Config) -> dict[str, Path]:
    """Table 1: MRR@100 on Mr.TyDi, low- and high-similarity groups."""
    wide, long = _language_table(results, c, "mrtydi", _mrtydi_groups(c), "MRR@100", "table1")
    return _save(profile, wide, long, "contrastivemix_table1", "MRR@100 on Mr.TyDi (ContrastiveMix Table 1)", _notes(profile, c, "mrtydi") + query_note(results, c, "mrtydi", _languages_of(_mrtydi_groups(c))) + _fallback_note(results, "mrtydi") + search.note(results.align_search),
                 [_table1_check(long, c), _groups_check(long)], _runs(results, "mrtydi", MAIN_VARIANTS, _languages_of(_mrtydi_groups(c))))


def table2(results: Scores, profile: Profile, c: Config) -> dict[str, Path]:
    """Table 2: MRR@100 on MIRACL (dev)."""
    groups = [(c.miracl_target, None), (c.miracl_high_similarity, "Avg (high)" if c.miracl_high_similarity else None)]
    wide, long = _language_table(results, c, "miracl", groups, "MRR@100", "table2")
    return _save(profile, wide, long, "contrastivemix_table2", "MRR@100 on MIRACL dev (ContrastiveMix Table 2)", _notes(profile, c, "miracl") + query_note(results, c, "miracl", _languages_of(groups)) + _fallback_note(results, "miracl") + search.note(results.align_search),
                 _table2_check(long, c), _runs(results, "miracl", MAIN_VARIANTS, _languages_of(groups)))


def table4(results: Scores, profile: Profile, c: Config) -> dict[str, Path]:
    """Table 4: Recall@100 on Mr.TyDi."""
    wide, long = _language_table(results, c, "mrtydi", _mrtydi_groups(c), "Recall@100", "table4")
    return _save(profile, wide, long, "contrastivemix_table4", "Recall@100 on Mr.TyDi (ContrastiveMix Table 4)", _notes(profile, c, "mrtydi") + query_note(results, c, "mrtydi", _languages_of(_mrtydi_groups(c))) + _fallback_note(results, "mrtydi") + search.note(results.align_search),
                 _table4_check(long, c), _runs(results, "mrtydi", MAIN_VARIANTS, _languages_of(_mrtydi_groups(c))))


def table3(results: Scores, profile: Profile, c: Config) -> dict[str, Path]:
    """Table 3: query-/passage-side mixing, averages over the low-similarity languages (main setting)."""
    from ..core.report import comparison

    f = results.frame
    f = f[(f["benchmark"] == "mrtydi") & (f["setting"] == "hybrid") & (f["language"].isin(c.table3_languages))]
    order = ["mdpr", "naivemix", "naivemix-passage", "naivemix-query", "contrastivemix-both", "contrastivemix-passage", "contrastivemix"]
    cells = []
    for key in order:
        for col, metric in METRIC_KEYS.items():
            sub = f[(f["variant"] == key) & (f["metric"] == metric)]
            if sub.empty:
                continue
            avgs = sub.groupby("seed", sort=True)["value"].mean().to_numpy()
            cells.append(dict(row=VARIANTS[key].ablation_label, column=col, mean=float(avgs.mean()),
                              std=float(avgs.std(ddof=1)) if len(avgs) > 1 else 0.0, n=len(avgs)))
    wide, long = comparison(pd.DataFrame(cells), paper="contrastivemix", table="table3",
                            row_order=[VARIANTS[k].ablation_label for k in order], column_order=list(METRIC_KEYS))
    n = f["seed"].nunique()
    over = "mean ± std over seeds" if n > 1 else "the one seed's value, no ±"
    notes = [
        (f"Averages over the low-similarity languages {list(c.low_similarity)} (per seed, then {over}); "
         if c.ablation_languages is None else
         f"Averages over {list(c.ablation_languages)} alone (ablation_languages; the paper averages over the whole "
         f"low-similarity group, configured here as {list(c.low_similarity)}), per seed, then {over}; ")
        + "hybrid with the weight tuned on Mr.TyDi dev.",
        "(query) / (passage) / (query+passage): the side(s) that are code-mixed.",
    ] + search.note(results.align_search) + ([corpus_note(c)] if c.corpus_sample is not None else []) \
      + query_note(results, c, "mrtydi", c.table3_languages)
    claim = table3_claim(long)
    return _save(profile, wide, long, "contrastivemix_table3", "Code-mixing queries and/or passages, low-similarity average (ContrastiveMix Table 3)", notes, claim,
                 _runs(results, "mrtydi", order, c.table3_languages))
