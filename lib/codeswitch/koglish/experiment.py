"""Notebook 01: constructing Koglish (ConCSE §3) — walk-through, Table 1, Figure 1, exclusions.

The notebook calls one function per section:

* :func:`walkthrough` — sentences through parse -> NP walk -> translation -> switch;
* :func:`np_agreement` — our NP choice against the released ``source_np0`` column;
* :func:`table1` — rows per task and split *as loaded* from ``koglish_source``,
  beside the paper's Table 1;
* :func:`figure1` — a parse tree with the switched NP highlighted, beside its
  code-switched sentence (the paper's Fig. 1-(a));
* :func:`exclusions` — items dropped per task and reason (the paper: 29.1% of CoLA).

The construction run behind the exclusion statistics is cached in the run cache
(``runs/<profile>/koglish/<hash>.json``), keyed by its complete configuration.
Smoke profile: the mini Koglish (gold trees, the shipped glossary).  Paper
profile: the original GLUE sentences from the hub, parsed with benepar and
translated by a Hugging Face MT model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from . import data as K
from .construct import REASONS, BeneparParser, BracketParser, CachedParser, CodeSwitcher, Selection, build, write_glue
from .synthetic import GLOSSARY, TREES_FILE, SyntheticConfig, construction_stats, generate_raw
from .translate import make_translator
from ..core.profiles import Profile
from ..core.experiment import Results, Stage
from ..core.runs import config_hash
from ..core.provenance import records_inputs
from .config import SECTION, Config, KoglishRun, load

__all__ = [
    "Config",
    "KoglishRun",
    "load",
    "spec",
    "plan",
    "run_one",
    "run",
    "tables",
    "figures",
    "make_switcher",
    "pretokenize",
    "walkthrough",
    "np_agreement",
    "table1",
    "exclusions",
    "figure1",
    "TASK_LABELS",
    "REASONS",
    "invariant_report",
]

#: row labels of Table 1 (the paper's task names; the prefix tells the GLUE and STS STS-B apart)
TASK_LABELS = {
    **{("glue", t): f"GLUE/{n}" for t, n in zip(K.GLUE_TASKS, ("CoLA", "SST-2", "MRPC", "STS-B", "QNLI", "RTE"))},
    **{("sts", t): f"STS/{n}" for t, n in zip(K.STS_TASKS, ("STS-B", "STS12", "STS13", "STS14", "STS15", "STS16", "SICK-R"))},
    ("nli", "nli"): "NLI/NLI",
}
TABLE1_ROWS = [TASK_LABELS[("glue", t)] for t in ("qnli", "sst2", "cola", "stsb", "mrpc", "rte")] + [
    TASK_LABELS[("sts", t)] for t in K.STS_TASKS
] + ["NLI/NLI"]
SPLIT_COLUMNS = {"train": "Train", "valid": "Dev", "test": "Test"}
# the original GLUE columns -> the released Koglish names
_GLUE_COLUMNS = {
    "cola": {"sentence": "sentence"},
    "sst2": {"sentence": "sentence"},
    "mrpc": {"sentence1": "sentence1", "sentence2": "sentence2"},
    "stsb": {"sentence1": "sentence1", "sentence2": "sentence2"},
    "qnli": {"question": "sentence1", "sentence": "sentence2"},
    "rte": {"sentence1": "sentence1", "sentence2": "sentence2"},
}


# --------------------------------------------------------------------------- the pipeline for a profile
def pretokenize(text: str) -> str:
    """Split off every punctuation character, as the released Koglish text is (``Dell ' s``, ``$ 721 , 154``)."""
    return " ".join(re.findall(r"\w+|[^\w\s]", str(text)))


def _cache_dir(cfg: Profile) -> Path:
    return cfg.runs_dir / "koglish_cache"


def make_switcher(cfg: Profile, kc: Config, trees: Mapping[str, str] | None = None) -> CodeSwitcher:
    """The parser + translator of this profile, with persistent caches under ``runs/<profile>/koglish_cache``."""
    if kc.parser == "ptb":
        if trees is None:
            raise ValueError("koglish.parser = 'ptb' needs gold trees (the synthetic data carries them); use 'benepar' for real text")
        parser = BracketParser(trees)
    else:
        parser = CachedParser(BeneparParser(kc.benepar_model), _cache_dir(cfg) / "parses.sqlite")
    translator = make_translator(
        kc.translator,
        dictionary=kc.dictionary or GLOSSARY,
        hf_model=kc.hf_model,
        hf_src_lang=kc.hf_src_lang,
        hf_tgt_lang=kc.hf_tgt_lang,
        google_key_env=kc.google_key_env,
        cache=None if kc.translator == "dictionary" else _cache_dir(cfg) / "translations.sqlite",
        device=None if kc.translator != "hf" else str(cfg.torch_device()),
    )
    return CodeSwitcher(parser, translator, order=kc.np_order, min_np_tokens=kc.min_np_tokens, replace=kc.replace)


def _raw_glue(kc: Config, task: str) -> pd.DataFrame:
    """The first ``construct_n`` training items of an original GLUE task, pre-tokenised, in Koglish column names."""
    from datasets import load_dataset

    from ..core.hub import resolve

    ref = resolve(kc.glue_hub, kind="dataset", what="koglish.glue_hub")
    split = "train" if not kc.construct_n else f"train[:{kc.construct_n}]"
    df = load_dataset(ref, task, split=split).to_pandas()
    df = df.rename(columns=_GLUE_COLUMNS[task])[[*_GLUE_COLUMNS[task].values(), "label"]]
    for col in _GLUE_COLUMNS[task].values():
        df[col] = df[col].map(pretokenize)
    return df


def _raw(cfg: Profile, kc: Config, task: str) -> tuple[pd.DataFrame, dict[str, str] | None]:
    if kc.construct_source == "synthetic":
        return generate_raw(task, kc.synthetic.glue_size, kc.synthetic.seed)
    return _raw_glue(kc, task), None


# --------------------------------------------------------------------------- walk-through
def _describe(sel: Selection) -> str:
    marks = {"selected": "✓", "pronoun": "✗ pronoun", "too_short": "✗ 1 token", "whole_sentence": "✗ whole sentence"}
    if not sel.trace:
        return {"sentence_is_np": "(the sentence is one NP)", "no_np": "(no NP node)"}.get(sel.reason or "", f"({sel.reason})")
    return " → ".join(f"[{c.text}] {marks[c.verdict]}" for c in sel.trace)


def _story(o) -> tuple:
    """What an example teaches: switched (after which rejections) or excluded (why)."""
    if o.ok:
        return ("switched", tuple(sorted({c.verdict for c in o.selection.trace if c.verdict != "selected"})))
    return ("excluded", o.reason)


def walkthrough(cfg: Profile, kc: Config | None = None, pool: int = 200) -> tuple[pd.DataFrame, list]:
    """A few raw sentences of ``koglish.walkthrough_task`` through every step, one per kind of outcome.

    From the first ``pool`` raw sentences, the first example of each *story*
    (switched at once; switched after rejecting a pronoun or a one-token NP;
    excluded for each reason) is shown, in order of appearance, up to
    ``koglish.walkthrough_n`` rows.  Returns a table (sentence, the NP walk, NP₀,
    translation, result) and the outcomes with their trees, for :func:`figure1`.
    """
    kc = kc or load(cfg)
    raw, trees = _raw(cfg, kc, kc.walkthrough_task)
    raw = raw.head(max(pool, kc.walkthrough_n))
    col = "sentence" if "sentence" in raw.columns else "sentence1"
    sw = make_switcher(cfg, kc, trees)
    outcomes = sw.switch_many(raw[col].tolist())
    chosen, seen = [], set()
    for o in outcomes:
        if _story(o) not in seen:
            seen.add(_story(o))
            chosen.append(o)
    for o in outcomes:  # fill up with the first sentences when there are few stories
        if len(chosen) >= kc.walkthrough_n:
            break
        if o not in chosen:
            chosen.append(o)
    chosen = chosen[: kc.walkthrough_n]
    parsed = sw.parser.parse_many([o.sentence for o in chosen])
    rows = []
    for o in chosen:
        rows.append(
            {
                "sentence": o.sentence,
                "NP walk (top-down)": _describe(o.selection) if o.selection else "",
                "NP₀": o.source_np0 or "",
                "translation": o.target_np0 or "",
                "code-switched / excluded": o.cross if o.ok else f"excluded: {o.reason}" + (f" ({o.detail})" if o.detail else ""),
            }
        )
    return pd.DataFrame(rows), list(zip(chosen, parsed))


def np_agreement(cfg: Profile, source: str, kc: Config | None = None, task: str = "cola", n: int = 200) -> pd.DataFrame:
    """How often our NP rule picks the released ``source_np0`` on the released English sentences.

    Uses this profile's parser (gold trees for the synthetic data, benepar for
    the released data); one row per split with the agreement rate.
    """
    kc = kc or load(cfg)
    trees = _synthetic_trees(source) if kc.parser == "ptb" else None
    sw = make_switcher(cfg, kc, trees)
    rows = []
    for split in K.GLUE_SPLITS:
        df = K.load_glue(source, task, split).head(n)
        s_col, np_col = ("sentence", "source_np0") if "sentence" in df.columns else ("sentence1", "source1_np0")
        sel = sw.select_many(df[s_col].tolist())
        same = [s.np == ref for s, ref in zip(sel, df[np_col])]
        rows.append({"task": task, "split": split, "sentences": len(df), "same NP as released": sum(same), "agreement %": 100.0 * sum(same) / max(len(df), 1)})
    return pd.DataFrame(rows)


def _synthetic_trees(source: str) -> dict[str, str]:
    import json

    p = Path(source) / TREES_FILE
    if not p.is_file():
        raise ValueError(f"{source}: no gold trees ({TREES_FILE}); the 'ptb' parser only works on data this project built")
    return json.loads(p.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- invariants
def _tables(source: str):
    """Every table of a source as (dataset, task, split, loader)."""
    for t in K.GLUE_TASKS:
        for s in K.GLUE_SPLITS:
            yield "glue", t, s, lambda t=t, s=s: K.load_glue(source, t, s, invalid_rows="keep")
    yield "nli", "nli", "train", lambda: K.load_nli(source, invalid_rows="keep")
    for t in K.STS_TASKS:
        for s in ("valid", "test"):
            yield "sts", t, s, lambda t=t, s=s: K.load_sts(source, t, s, invalid_rows="keep")


def invariant_report(source: str) -> pd.DataFrame:
    """Load (and so validate) every table of ``source``; rows and invariant violations per table.

    Splits the source does not have (e.g. STS12-16 dev in the repository layout)
    are skipped.  See :func:`codeswitch.koglish.construct.invariant_violations`.
    """
    from .construct import invariant_violations

    rows = []
    for group, task, split, load in _tables(source):
        try:
            df = load()
        except K.KoglishFormatError as exc:
            if "no file found" in str(exc):
                continue
            raise
        bad = invariant_violations(df)
        s_col, np_col = ("sentence", "source_np0") if "sentence" in df.columns else ("sentence1", "source1_np0")
        starts = sum(s.startswith(n) for s, n in zip(df[s_col], df[np_col]))
        rows.append(
            {
                "table": f"{TASK_LABELS[(group, task)]} {split}",
                "dataset": group,
                "task": task,
                "split": split,
                "rows": len(df),
                "violations": len(bad),
                "first violation": "" if bad.empty else f"row {bad.iloc[0]['row']}, {bad.iloc[0]['field']}: {bad.iloc[0]['rule']}",
                "NP at first token %": round(100.0 * starts / len(df), 1),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Table 1
def table1_counts(source: str, report: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows per task and split of the data as loaded (validated) from ``source``; long: ``row, column, mean``.

    ``report`` (from :func:`invariant_report`) saves loading everything a second time.
    """
    report = invariant_report(source) if report is None else report
    rows = []
    for (group, task), part in report.groupby(["dataset", "task"], sort=False):
        label = TASK_LABELS[(group, task)]
        for split, n in zip(part["split"], part["rows"]):
            rows.append({"row": label, "column": SPLIT_COLUMNS[split], "mean": float(n)})
        rows.append({"row": label, "column": "Total", "mean": float(part["rows"].sum())})
    out = pd.DataFrame(rows)
    order = {r: i for i, r in enumerate(TABLE1_ROWS)}
    return out.sort_values("row", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)  # the paper's row order


def table1(source: str, report: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 1 (wide, long): measured counts beside the paper's."""
    from ..core.report import comparison

    return comparison(
        table1_counts(source, report),
        paper="concse",
        table="table1",
        digits=0,
        row_order=TABLE1_ROWS,
        column_order=["Train", "Dev", "Test", "Total"],
    )


def totals_note() -> str:
    """Where the paper's printed Table 1 totals differ from the sums of its printed splits (computed, not typed)."""
    from ..core.claims import paper_values

    values = paper_values("concse", "table1")
    out = []
    for row in dict.fromkeys(r for r, _ in values):
        parts = [values[(row, c)] for c in ("Train", "Dev", "Test") if (row, c) in values]
        total = values.get((row, "Total"))
        if total is not None and len(parts) > 1 and sum(parts) != total:
            out.append(f"{row.split('/')[1]} {total:,.0f} printed vs {sum(parts):,.0f} summed ({total - sum(parts):+,.0f})")
    return "the paper's totals differ from the sum of its splits: " + "; ".join(out) if out else ""


def table1_claim(long: pd.DataFrame, profile=None):
    """ConCSE §3 and Table 1 (concse.md): the Koglish datasets' sizes.  Checked on the splits (Train, Dev, Test);
    Total is this project's sum of the splits, so the paper's printed totals that are not their splits' sum are a note
    (:func:`totals_note`), not part of the check."""
    from ..core import claims

    splits = long[long["column"].astype(str) != "Total"]
    c = claims.within(splits, "the Koglish data has the paper's row count in every task and split (Train, Dev, Test)",
                      tolerance=0.5, source="ConCSE §3, Table 1 (concse.md)")
    return claims.Claim(c.text, c.holds, c.detail, c.source, totals_note())


def exclusions_claim(long: pd.DataFrame, profile=None):
    """ConCSE §3.2 step 1 (concse.md): "GLUE's COLA task data excluded 29.1% of the entire data" (no usable noun
    phrase); within 5 points counts as reproduced."""
    from ..core import claims

    return claims.within(long, "the construction excludes about the paper's share of CoLA (29.1 %, within 5 points)", tolerance=5.0,
                         source="ConCSE §3.2 step 1 (concse.md)", unit=" points")


def _register():
    from ..core import claims

    claims.register("concse_table1", paper="concse", table="table1")(table1_claim)
    claims.register("concse_table1_exclusions", paper="concse", table="table1_exclusions")(exclusions_claim)


_register()


# --------------------------------------------------------------------------- exclusions
def spec(kc: Config, task: str) -> KoglishRun:
    """The construction run of ``task`` under ``kc``: everything that determines its statistics (the run-cache key)."""
    common = dict(experiment="koglish_construction", task=task, construct_source=kc.construct_source, parser=kc.parser,
                  translator=kc.translator, np_order=kc.np_order, replace=kc.replace, min_np_tokens=kc.min_np_tokens)
    if kc.construct_source == "synthetic":
        from .synthetic import _fingerprint

        return KoglishRun(**common, synthetic=kc.synthetic, code=_fingerprint())
    return KoglishRun(
        **common, glue_hub=kc.glue_hub, construct_n=kc.construct_n, split_seed=kc.split_seed,
        hf=(kc.hf_model, kc.hf_src_lang, kc.hf_tgt_lang) if kc.translator == "hf" else None,
        benepar_model=kc.benepar_model if kc.parser == "benepar" else None,
        dictionary=(kc.dictionary or "glossary") if kc.translator == "dictionary" else None,
    )


def plan(profile: Profile) -> list[KoglishRun]:
    """One construction run per task: the six GLUE tasks (and, for the synthetic source, NLI and the seven STS sets)."""
    kc = load(profile)
    tasks = list(K.GLUE_TASKS)
    if kc.construct_source == "synthetic":
        tasks += ["nli:nli"] + [f"sts:{t}" for t in K.STS_TASKS]
    return [spec(kc, t) for t in tasks]


def run_one(spec: KoglishRun, profile: Profile) -> dict:
    """One construction run, computed (no cache): ``{"input", "kept", "excluded", "details", "splits"}``.

    The parser and translator are built from the profile's section (the API-key
    variable's *name* is not part of a run); the spec must be one the profile plans.
    """
    kc = load(profile)
    expected = globals()["spec"](kc, spec.task)
    if spec.key() != expected.key():
        raise ValueError(f"koglish: the spec of task {spec.task!r} is not the one the profile {profile.name!r} plans "
                         f"(key {spec.key_hash()} vs {expected.key_hash()})")
    task = spec.task
    if spec.construct_source == "synthetic":
        # the mini Koglish build *is* the construction run: read its statistics
        from .synthetic import ensure_mini_koglish

        stats = construction_stats(ensure_mini_koglish(profile))
        group = "glue" if task in K.GLUE_TASKS else task.split(":")[0]
        name = task.split(":")[-1]
        return stats[group][name]
    raw, trees = _raw(profile, kc, task)
    res = build(raw, make_switcher(profile, kc, trees), K.GLUE_KIND[task])
    # what was built is kept, in the released layout, so it can be loaded like Koglish (koglish_source=<folder>)
    folder = built_folder(profile, spec)
    sizes = write_glue(folder, task, res, seed=spec.split_seed)
    return {
        "input": res.n_input,
        "kept": res.n_kept,
        "excluded": dict(sorted(res.exclusions.items())),
        "details": dict(sorted(res.details.items())),
        "splits": sizes,
    }


def built_folder(profile: Profile, run: KoglishRun) -> Path:
    """Where a construction run on real GLUE writes its Koglish-GLUE (one folder per construction setting, every task)."""
    key = config_hash({k: v for k, v in run.key().items() if k != "task"})
    return profile.runs_dir / "koglish_built" / key


def stages(profile: Profile) -> list[Stage]:
    """One stage: every construction run of :func:`plan` (independent of each other), cached in ``runs/<profile>/koglish/``."""
    return [Stage("construction", plan(profile), profile.runs_dir / "koglish")]


def run(profile: Profile) -> Results:
    """Every construction run of :func:`plan` through the run cache (``runs/<profile>/koglish/``)."""
    (construction,) = stages(profile)
    return construction.run(run_one, profile)


@records_inputs
def tables(results: Results, profile: Profile) -> dict[str, dict]:
    """Write Table 1 (rows per task and split of the profile's Koglish, as loaded) and the exclusion table (from ``results``).

    Table 1 counts the data itself — loading and validating it is the measurement —
    so it reads ``koglish_source``, not the run cache.  Returns ``{name: paths}``.
    """
    from ..core.report import save_table

    source = K.resolve_source(profile)
    wide, long = table1(source, invariant_report(source))
    out = {"concse_table1": save_table(wide, "concse_table1", profile, caption="Summary of the Koglish datasets: rows per task and split, as loaded",
                                       long=long, claim=table1_claim(long), inputs={"koglish": [str(profile.koglish_source)]})}
    wide, long = exclusions({s.task: record for s, record in results})
    out["concse_table1_exclusions"] = save_table(
        wide, "concse_table1_exclusions", profile, caption="Items excluded by the construction pipeline, per task and reason", long=long,
        notes=[f"{k}: {v}" for k, v in REASONS.items()], claim=exclusions_claim(long),
    )
    return out


@records_inputs
def figures(results: Results, profile: Profile) -> dict[str, dict]:
    """Write Figure 1: the walk-through example that shows most of the NP rule, as a parse tree (:func:`figure1`).

    The example comes from the walk-through (parsing a few sentences, seconds), not
    from ``results``: the construction statistics hold no trees.
    """
    import matplotlib.pyplot as plt

    from ..core.report import save_figure

    _, examples = walkthrough(profile)
    fig = figure1(pick_example(examples))
    paths = save_figure(fig, "concse_figure1", profile,
                        caption="Parse tree with the switched noun phrase highlighted, and the code-switched sentence (cf. ConCSE Fig. 1-(a))")
    plt.close(fig)
    return {"concse_figure1": paths}


def _label(task: str) -> str:
    if task in K.GLUE_TASKS:
        return TASK_LABELS[("glue", task)]
    group, name = task.split(":")
    return TASK_LABELS[(group, name)]


def exclusions(stats: Mapping[str, Mapping]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exclusion table (wide, long): input, kept, excluded %, and items per reason, beside the paper's 29.1% for CoLA."""
    from ..core.report import comparison

    rows = []
    for task, st in stats.items():
        label = _label(task)
        rows.append({"row": label, "column": "input", "mean": float(st["input"])})
        rows.append({"row": label, "column": "kept", "mean": float(st["kept"])})
        rows.append({"row": label, "column": "excluded %", "mean": 100.0 * (1 - st["kept"] / st["input"]) if st["input"] else 0.0})
        for reason in REASONS:
            rows.append({"row": label, "column": reason, "mean": float(st["excluded"].get(reason, 0))})
    wide, long = comparison(
        pd.DataFrame(rows), paper="concse", table="table1_exclusions", digits=1, column_order=["input", "kept", "excluded %", *REASONS]
    )
    for r, c, m in zip(long["row"], long["column"], long["mean"]):
        if c != "excluded %":
            wide.loc[r, c] = f"{int(m)}"  # counts read better without decimals
    return wide, long


# --------------------------------------------------------------------------- Figure 1
def hangul_font():
    """A font with Hangul glyphs for matplotlib (NanumGothic from the ``koreanize-matplotlib`` wheel, or a system one)."""
    import importlib.util

    from matplotlib import font_manager

    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / "fonts" / "NanumGothic.ttf"
        if path.is_file():
            font_manager.fontManager.addfont(str(path))
            return font_manager.FontProperties(fname=str(path))
    for f in font_manager.fontManager.ttflist:
        if any(k in f.name for k in ("Nanum", "Noto Sans CJK", "Noto Sans KR", "Malgun", "AppleGothic", "Unifont")):
            return font_manager.FontProperties(fname=f.fname)
    import warnings

    warnings.warn("no font with Hangul glyphs found: Korean text in figures will show as boxes (pip install koreanize-matplotlib)", stacklevel=2)
    return font_manager.FontProperties()


def pick_example(examples: Sequence) -> tuple:
    """The walk-through example that shows the most of the rule: switched, with a rejected NP before the chosen one."""
    switched = [(o, t) for o, t in examples if o.ok and t is not None]
    if not switched:
        raise ValueError("no sentence of the walk-through was switched: nothing to draw")
    for o, t in switched:
        if len(o.selection.trace) > 1:
            return o, t
    return switched[0]


def _layout(tree) -> tuple[dict, dict, int]:
    """x, y of every node (tree positions): leaves evenly spaced on the bottom row, parents centred over children."""
    leaves = tree.treepositions("leaves")
    depth = max(len(p) for p in leaves)
    x = {p: float(i) for i, p in enumerate(leaves)}
    for p in sorted(tree.treepositions(), key=len, reverse=True):
        if p not in x:
            kids = [p + (i,) for i in range(len(tree[p]))]
            x[p] = (x[kids[0]] + x[kids[-1]]) / 2
    y = {p: -float(len(p)) if p not in set(leaves) else -float(depth) for p in tree.treepositions()}
    return x, y, depth


def _pieces(text: str, part: str, colour: str) -> list[tuple[str, str]]:
    """``text`` cut around the first occurrence of ``part`` (the switched NP), which gets ``colour``."""
    i = text.find(part)
    if i < 0:
        return [(text, "black")]
    return [(t, c) for t, c in ((text[:i], "black"), (part, colour), (text[i + len(part):], "black")) if t]


def _rich_text(ax, x: float, y: float, pieces: Sequence[tuple[str, str]], font) -> None:
    """Several coloured strings on one line, each placed right after the previous one (matplotlib's rainbow-text recipe)."""
    prev = None
    for text, colour in pieces:
        kw = dict(fontproperties=font, fontsize=11, color=colour, va="center")
        if prev is None:
            prev = ax.text(x, y, text.replace(" ", "\u00a0"), transform=ax.transAxes, **kw)
        else:
            prev = ax.annotate(text.replace(" ", "\u00a0"), xycoords=prev, xy=(1, 0.5), **kw)


def figure1(example: tuple, *, title: str = ""):
    """Draw a parse tree with the switched NP highlighted, and the sentence before and after switching."""
    import matplotlib.pyplot as plt

    outcome, tree = example
    from .construct import _unwrap

    tree = _unwrap(tree)
    x, y, depth = _layout(tree)
    sel = outcome.selection
    start, end = sel.span
    leaves = tree.treepositions("leaves")
    leaf_index = {p: i for i, p in enumerate(leaves)}
    np_pos = next(
        p
        for p in tree.treepositions()
        if not isinstance(tree[p], str)
        and tree[p].label().split("-")[0] == "NP"
        and [leaf_index[p + q] for q in tree[p].treepositions("leaves")] == list(range(start, end))
    )
    rejected = {(c.start, c.end) for c in sel.trace if c.verdict != "selected"}
    font = hangul_font()
    hi, grey = "#c0392b", "#7f8c8d"
    width = max(7.0, 0.85 * len(leaves) + 1.5)
    fig, (ax, ax_txt) = plt.subplots(2, 1, figsize=(width, 0.55 * depth + 3.2), gridspec_kw={"height_ratios": [depth + 1, 2.2]})
    for p in tree.treepositions():
        inside = p[: len(np_pos)] == np_pos
        if not isinstance(tree[p], str):
            for i in range(len(tree[p])):
                c = p + (i,)
                ax.plot([x[p], x[c]], [y[p] - 0.12, y[c] + 0.12], color=hi if inside and c[: len(np_pos)] == np_pos else "#bdc3c7", lw=1.6 if inside else 1.0, zorder=1)
        if isinstance(tree[p], str):
            label, colour, weight = tree[p], (hi if inside else "black"), ("bold" if inside else "normal")
        else:
            label = tree[p].label()
            span = [leaf_index[p + q] for q in tree[p].treepositions("leaves")]
            is_rejected = label.split("-")[0] == "NP" and (min(span), max(span) + 1) in rejected
            colour = hi if inside else (grey if is_rejected else "#2c3e50")
            weight = "bold" if p == np_pos else "normal"
            if is_rejected:
                label += " ✗"
        ax.text(x[p], y[p], label, ha="center", va="center", color=colour, fontweight=weight, fontsize=10,
                bbox=dict(boxstyle="round,pad=0.2", fc="#fdecea" if p == np_pos else "white", ec=hi if p == np_pos else "none"), zorder=2)
    ax.set_xlim(-0.8, len(leaves) - 0.2)
    ax.set_ylim(-depth - 0.6, 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=11)
    ax_txt.axis("off")
    rows = [
        ("English", _pieces(outcome.sentence, outcome.source_np0, hi)),
        ("NP₀ → Korean", [(f"{outcome.source_np0}  →  {outcome.target_np0}", hi)]),
        ("Code-switched", _pieces(outcome.cross, outcome.target_np0, hi)),
    ]
    for k, (head, pieces) in enumerate(rows):
        yy = 0.85 - 0.36 * k
        ax_txt.text(0.0, yy, head, fontweight="bold", fontsize=10, va="center", transform=ax_txt.transAxes)
        _rich_text(ax_txt, 0.2, yy, pieces, font)
    fig.tight_layout()
    return fig
