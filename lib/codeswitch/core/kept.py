"""Kept models (issue 28): the trained model of a run is a result too, saved beside its record.

A profile section's ``keep_models`` says which runs keep their model:

=========  ==================================================================================
``none``   nothing is kept (the smoke default: the scores are the result)
``best``   for each table row, the run that the paper's selection rule picks (the paper
           default); every candidate is kept while the grid runs, the others are removed
           once it has finished (:func:`prune_to_best`).  The rule of each paper is
           written where its package calls :func:`select_best`
``all``    every run's model
=========  ==================================================================================

A kept model lives in the run cache beside the records, ``runs/<profile>/<section>/models/<key>/``,
named by its run's key hash (:meth:`~codeswitch.core.experiment.RunSpec.key_hash`): a run whose
spec, inputs or result version change has another key, so a kept model is never stale.  The
folder is built by :func:`~codeswitch.core.checkpoints.checkpoint_directory` (a hidden temporary
sibling, ``MANIFEST.sha256.json`` written last, then renamed): never half-written; a folder whose
manifest fails is not used (:func:`kept_ok`) — it is rebuilt by training the run again, never
exported.  It holds the model in the format its ecosystem loads (:data:`FORMATS`), its model card
(``README.md``, :func:`model_card`) and ``codeswitch.json`` (what the card is written from: the
run's key, paper, table, row, scores, provenance).

``keep_models`` enters no run key (it changes what is saved, not what is computed) and no figures
folder name.  A notebook's loading section needs one model even where ``keep_models: none``:
``keep_also(spec)`` before the notebook's run keeps the model of that run when it is trained
(:func:`keep_also`; :func:`keeping` for a block);
:func:`kept_model` trains a run again (and rewrites its record, so record and model come from one
training) only when its model is not there.

Listing, exporting and publishing kept models: :mod:`codeswitch.core.publish`.

Example::

    if kept.wanted(c.keep_models, spec):
        kept.keep(kept_dir(profile, SECTION, spec), spec, kept.Row("concse", "table3", "ConCSE-mBERT-base", seed=1),
                  fmt="sentence-transformers", save=model.save_pretrained, profile=profile, notebook="03", scores=...)
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .checkpoints import CheckpointWarning, checkpoint_directory, checkpoint_ok
from .runs import report_warning
from .atomic import atomic_write_json, atomic_write_text

__all__ = ["KEEP_MODELS", "FORMATS", "Row", "check_setting", "wanted", "keep_also", "keeping", "kept_dir", "keep", "kept_ok", "read_meta",
           "asked", "select_best", "prune_to_best", "kept_model", "model_card", "META", "CARD", "MODELS", "PAPERS",
           "Planned", "Estimate", "planned_to_keep", "parameter_count", "backbone_config", "estimate", "row_key", "slug"]

KEEP_MODELS = ("none", "best", "all")
#: the formats a kept model is saved in, and how each is loaded (what the card says)
FORMATS = {
    "sentence-transformers": "from sentence_transformers import SentenceTransformer\nmodel = SentenceTransformer(\"{path}\")",
    "sentence-transformers-pair": ("from sentence_transformers import SentenceTransformer\n"
                                   "query_encoder = SentenceTransformer(\"{path}/query\")\n"
                                   "passage_encoder = SentenceTransformer(\"{path}/passage\")"),
    "sequence-classification": ("from transformers import AutoModelForSequenceClassification, AutoTokenizer\n"
                                "model = AutoModelForSequenceClassification.from_pretrained(\"{path}\")\n"
                                "tokenizer = AutoTokenizer.from_pretrained(\"{path}\")"),
    "token-classification": ("from transformers import AutoModelForTokenClassification, AutoTokenizer\n"
                             "model = AutoModelForTokenClassification.from_pretrained(\"{path}\")\n"
                             "tokenizer = AutoTokenizer.from_pretrained(\"{path}\")"),
    "question-answering": ("from transformers import AutoModelForQuestionAnswering, AutoTokenizer\n"
                           "model = AutoModelForQuestionAnswering.from_pretrained(\"{path}\")\n"
                           "tokenizer = AutoTokenizer.from_pretrained(\"{path}\")"),
    "auto-model": ("from transformers import AutoModel, AutoTokenizer\n"
                   "model = AutoModel.from_pretrained(\"{path}\")\ntokenizer = AutoTokenizer.from_pretrained(\"{path}\")"),
}
META = "codeswitch.json"
CARD = "README.md"
MODELS = "models"  # the folder of kept models in a section's run cache
ALSO_VAR = "CODESWITCH_KEEP_ALSO"  # key hashes kept whatever keep_models says (:func:`keeping`); read by worker processes too

#: the papers, as the cards cite them
PAPERS = {
    "concse": "Jeon et al., ConCSE: Unified Contrastive Learning and Augmentation for Code-Switched Embeddings (ICPR 2024)",
    "glue": "Jeon et al., ConCSE (ICPR 2024), §5.1: Koglish-GLUE",
    "contrastivemix": ("Do, Lee & Hwang, ContrastiveMix: Overcoming Code-Mixing Dilemma in Cross-Lingual Transfer for "
                       "Information Retrieval (NAACL 2024)"),
    "alignment": "the alignment-objectives paper (notebook 06)",
    "calbert": "CalBERT – Code-mixed Adaptive Language representations using BERT",
}
#: backbone licences this project knows (anything else: "see its model card", never guessed)
BACKBONE_LICENCES = {
    "bert-base-multilingual-uncased": "Apache-2.0", "bert-base-multilingual-cased": "Apache-2.0",
    "xlm-roberta-base": "MIT", "xlm-roberta-large": "MIT", "FacebookAI/xlm-roberta-base": "MIT",
    "FacebookAI/xlm-roberta-large": "MIT", "google-bert/bert-base-multilingual-cased": "Apache-2.0",
    "google-bert/bert-base-multilingual-uncased": "Apache-2.0", "roberta-base": "MIT", "bert-base-uncased": "Apache-2.0",
    "minilm-l1l6": "Apache-2.0 (cut from sentence-transformers/all-MiniLM-L6-v2)",
    # checked on 2026-11-29 against stored copies of the model cards (no network here): every checkpoint a profile names
    # (tests/test_kept.py checks that none lacks an entry) and the bundled MiniLM (its package's model/README.md)
    "bert-base-cased": "Apache-2.0", "distilbert-base-cased": "Apache-2.0", "facebook/mbart-large-50": "MIT",
    "ai4bharat/indic-bert": "MIT", "facebook/nllb-200-distilled-600M": "CC-BY-NC-4.0",
    "sentence-transformers/all-MiniLM-L6-v2": "Apache-2.0",
}
PROJECT_LICENCE = "MIT (built by this project)"


@dataclass(frozen=True)
class Row:
    """Where a run's model belongs: the paper's table and row (the export folder, the card's title)."""

    paper: str  # a section: "concse", "contrastivemix", "calbert", ...
    table: str  # "table3"
    row: str  # the row label as codeswitch.core.reported names it ("ConCSE-mBERT-base")
    seed: int | None = None
    rule: str = ""  # the paper's selection rule among the row's runs (what ``best`` keeps)
    column: str | None = None  # the one column the model stands for (a language), where a row has one model per column
    part: str | None = None  # which of a row's models this is, where a row keeps several kinds (a GLUECoS task model
    # beside the row's aligned backbone, CalBERT's Siamese encoder beside its classifiers): its own folder

    def folder(self) -> str:
        """``<paper>/<table>/<row>[-<column>][-<part>]`` with the row as a folder name."""
        return f"{self.paper}/{self.table}/{slug(self.row + ''.join(f'-{x}' for x in (self.column, self.part) if x is not None))}"


def slug(text: str) -> str:
    """``text`` as a folder name: runs of characters other than letters, digits and ``._+-`` become one ``-``."""
    import re

    return re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._+-]+", "-", text)).strip("-") or "row"


def check_setting(value: Any, *, where: str = "keep_models") -> str:
    """``value`` if it is one of :data:`KEEP_MODELS`; a ``ValueError`` naming the key otherwise."""
    if value not in KEEP_MODELS:
        raise ValueError(f"{where} must be one of {list(KEEP_MODELS)}, got {value!r}")
    return value


def wanted(setting: str, spec) -> bool:
    """Whether the run ``spec`` saves its model: ``keep_models`` is ``best`` or ``all`` (``best``: a candidate,
    pruned later), or the run is asked for by :func:`keeping`."""
    return check_setting(setting) != "none" or asked(spec)


def asked(spec) -> bool:
    """Whether :func:`keeping` asks for the model of ``spec`` (kept whatever ``keep_models`` says)."""
    return spec.key_hash() in os.environ.get(ALSO_VAR, "").split(",")


def keep_also(*specs) -> None:
    """Keep the models of ``specs`` whenever they are trained in this process (and its workers) from now on, whatever
    ``keep_models`` says: a notebook's loading section asks for the model of one run it trains anyway (no extra
    training).  :func:`keeping` is the same for a block."""
    os.environ[ALSO_VAR] = ",".join(dict.fromkeys(filter(None, [*os.environ.get(ALSO_VAR, "").split(","),
                                                                 *(s.key_hash() for s in specs)])))


@contextmanager
def keeping(*specs) -> Iterator[None]:
    """Keep the models of ``specs`` when they are trained in the block, whatever ``keep_models`` says (a notebook's
    loading section: the model of one run the notebook trains anyway).  An environment variable, so the worker
    processes of an executor see it too."""
    old = os.environ.get(ALSO_VAR)
    keep_also(*specs)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ALSO_VAR, None)
        else:
            os.environ[ALSO_VAR] = old


def kept_dir(section_root: str | Path, spec) -> Path:
    """``<section's run cache>/models/<key hash>``: where the model of ``spec`` is kept."""
    return Path(section_root) / MODELS / spec.key_hash()


def read_meta(folder: str | Path) -> dict | None:
    try:
        return json.loads((Path(folder) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def kept_ok(folder: str | Path, spec=None) -> bool:
    """``True`` when ``folder`` holds a complete kept model (its manifest verifies) of ``spec`` (its stored key is
    ``spec``'s); ``False`` otherwise, with a warning when it exists but fails."""
    if not checkpoint_ok(folder, what="kept model"):
        return False
    meta = read_meta(folder)
    if meta is None or (spec is not None and meta.get("key_hash") != spec.key_hash()):
        report_warning(f"kept model {folder} is not used and will be rebuilt: its {META} is unreadable or of another run",
                       CheckpointWarning, stacklevel=2)
        return False
    return True


def keep(folder: str | Path, spec, row: Row, *, fmt: str, save: Callable[[Path], Any], profile, notebook: str,
         scores: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None) -> Path:
    """Save a run's model into ``folder`` atomically: ``save(tmp)`` writes the model, then the metadata, the card and
    the manifest (last); the folder appears complete or not at all.  Returns ``folder``."""
    from .provenance import git_state

    if fmt not in FORMATS:
        raise ValueError(f"kept model format {fmt!r}: one of {list(FORMATS)}")
    commit, dirty = git_state(Path(profile.root))
    key = spec.key()
    meta = {
        "schema": 1,
        "section": row.paper,
        "notebook": notebook,
        "row": asdict(row),
        "format": fmt,
        "key_hash": spec.key_hash(),
        "key": json.loads(json.dumps(key, default=str)),
        "inputs": key.get("inputs", {}),
        "backbone": getattr(spec, "model", None),
        "profile": profile.name,
        "overrides": {k: profile.overrides[k] for k in sorted(profile.overrides)},
        "git_commit": commit + ("-dirty" if dirty else ""),
        "scores": dict(scores or {}),
        **dict(extra or {}),
    }
    with checkpoint_directory(folder) as tmp:
        save(tmp)
        if fmt.startswith("sentence-transformers"):
            _load_without_pooler(tmp)
        atomic_write_json(tmp / META, meta)
        atomic_write_text(tmp / CARD, model_card(json.loads((tmp / META).read_text(encoding="utf-8"))))
    return Path(folder)


def _load_without_pooler(folder: Path) -> None:
    """Every sentence-transformers encoder under ``folder`` whose weights hold no pooler (the trainers build BERT-like
    encoders with ``add_pooling_layer=False``: the sentence embedding never reads it) is told to load the same way
    (``model_kwargs`` in its ``sentence_bert_config.json``), so ``SentenceTransformer(folder)`` loads every weight it
    saved and initialises none ("pooler MISSING" in transformers' load report otherwise)."""
    import inspect

    from safetensors import safe_open
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    for config_file in sorted(folder.rglob("sentence_bert_config.json")):
        module = config_file.parent
        weights = module / "model.safetensors"
        if not (weights.is_file() and (module / "config.json").is_file()):
            continue
        with safe_open(str(weights), "pt") as f:
            if any(k.startswith("pooler.") for k in f.keys()):
                continue
        model_class = MODEL_MAPPING.get(type(AutoConfig.from_pretrained(module)), None)
        if model_class is None or "add_pooling_layer" not in inspect.signature(model_class.__init__).parameters:
            continue
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config.setdefault("model_kwargs", {})["add_pooling_layer"] = False
        atomic_write_json(config_file, config)


def kept_model(spec, profile, *, folder: str | Path, run_one: Callable, cache_dir: str | Path) -> Path:
    """``folder`` when it holds the verified kept model of ``spec``; otherwise the run is computed again with its model
    kept (:func:`keeping`) and its record rewritten (record and model from one training).  Returns ``folder``."""
    from .runs import RunCache, run_lock

    folder = Path(folder)
    if kept_ok(folder, spec):
        return folder
    cache = RunCache(cache_dir)
    with run_lock(cache.path(spec.key())):
        if not kept_ok(folder, spec):
            with keeping(spec):
                result = run_one(spec, profile)
            cache.put(spec.key(), result)
    if not kept_ok(folder, spec):
        raise RuntimeError(f"{spec.label()}: its run finished but kept no model in {folder}")
    return folder


# --------------------------------------------------------------------------- best per row
def row_key(row: Row) -> tuple:
    """A table cell's identity: (paper, table, row, column[, part]); one kept model a key."""
    return (row.paper, row.table, row.row, row.column) + (() if row.part is None else (row.part,))


def select_best(candidates: Iterable[tuple[Any, Row, float | None]]) -> dict[tuple, Any]:
    """``{(paper, table, row, column[, part]): spec}``: per row (and column, where a row has one model per column), the
    candidate with the highest score (``None`` scores never win; ties go to the first, i.e. the earlier seed in plan
    order)."""
    best: dict[tuple, tuple[Any, float]] = {}
    for spec, row, score in candidates:
        k = row_key(row)
        if score is None:
            best.setdefault(k, (spec, float("-inf")))
        elif k not in best or score > best[k][1]:
            best[k] = (spec, score)
    return {k: v[0] for k, v in best.items()}


def prune_to_best(section_root: str | Path, candidates: Sequence[tuple[Any, Row, float | None]]) -> list[Path]:
    """``keep_models: best`` after a grid: remove the kept models of ``candidates`` that :func:`select_best` does not
    pick.  Only the candidates' own folders are touched (models of other plans in the same cache stay), and a model
    :func:`keeping` asks for stays (a notebook's loading section reads it next)."""
    chosen = {s.key_hash() for s in select_best(candidates).values()}
    removed = []
    for spec, _, _ in candidates:
        folder = kept_dir(section_root, spec)
        if spec.key_hash() not in chosen and not asked(spec) and folder.exists():
            shutil.rmtree(folder)
            removed.append(folder)
    return removed


# --------------------------------------------------------------------------- the model card
def model_card(meta: Mapping[str, Any]) -> str:
    """The generated ``README.md`` of a kept model: paper, table and row; profile, overrides, commit; data identity;
    measured scores beside the paper's (:mod:`codeswitch.core.reported`); licences; the fidelity ledger's rows."""
    from . import fidelity, reported

    row = meta["row"]
    paper, table = row["paper"], row["table"]
    title = f"{row['row']}" + "".join(f" ({row[k]})" for k in ("column", "part") if row.get(k)) + f" — {paper} {table}" + (f", seed {row['seed']}" if row.get("seed") is not None else "")
    lines = ["---", "library_name: " + ("sentence-transformers" if meta["format"].startswith("sentence") else "transformers"),
             "tags: [codeswitch, code-switching]", "---", "", f"# {title}", "",
             f"Trained by the `codeswitch` companion (notebook {meta['notebook']}): {PAPERS.get(paper, paper)}, "
             f"{table}, row **{row['row']}**.", ""]
    if row.get("rule"):
        lines += [f"Which run of the row this is: {row['rule']}.", ""]
    lines += ["## Loading", "", "```python", FORMATS[meta["format"]].format(path="PATH/TO/THIS/FOLDER"), "```", ""]
    if meta.get("note"):
        lines += [meta["note"], ""]
    lines += [
              "## Provenance", "",
              f"- profile: `{meta['profile']}`; overrides: `{json.dumps(meta['overrides'], ensure_ascii=False)}`",
              f"- git commit: `{meta['git_commit']}`",
              f"- run key: `{meta['key_hash']}` (the run cache's record of the same key holds the scores below)",
              f"- backbone: `{meta.get('backbone')}`", "- training data and model inputs (identity):"]
    inputs = meta.get("inputs") or {}
    data_fields = {k: v for k, v in (meta.get("key") or {}).items()
                   if any(w in k for w in ("source", "data", "koglish", "task", "muse", "language", "pairs", "gluecos", "files"))
                   and not isinstance(v, dict)}
    for k, v in sorted({**data_fields, **inputs}.items()):
        lines.append(f"  - `{k}`: `{v}`")
    if not inputs and not data_fields:
        lines.append("  - (none named)")
    lines += ["", "## Scores", "", f"Measured by this run under profile `{meta['profile']}`, beside the paper's reported value "
              "(where the paper prints one)" + (": the smoke profile's tiny models and synthetic data are not comparable with "
                                                "the paper's" if meta["profile"] == "smoke" else "") + ".", "",
              "| column | measured | paper (reported) |", "|---|---|---|"]
    rep = {r.column: r for r in reported.table(paper, table) if r.row == row["row"] and (not row.get("column") or r.column == row[
        "column"] or row["column"] in r.column)} if paper in reported.PAPERS else {}
    if meta.get("paper_columns") is not None:  # the paper's columns this model stands for (a task model: its task's)
        rep = {c: r for c, r in rep.items() if c in meta["paper_columns"]}
    scores = meta.get("scores") or {}
    for col in list(scores) + [c for c in rep if c not in scores]:
        got = scores.get(col)
        r = rep.get(col)
        paper_value = "—" if r is None or r.value is None else (f"{r.value:g}" + (f" ± {r.std:g}" if r.std is not None else ""))
        lines.append(f"| {col} | {'—' if got is None else (f'{got:.4g}' if isinstance(got, (int, float)) else got)} | {paper_value} |")
    backbone = str(meta.get("backbone"))
    lic = BACKBONE_LICENCES.get(backbone, PROJECT_LICENCE if backbone.startswith("tiny-") else
                                f"unknown here: see the model card of `{backbone}`")
    synthetic = any(str(v).split("/")[0] in ("synthetic", "shipped") for v in data_fields.values())
    lines += ["", "## Licences", "", f"- backbone: {lic}",
              "- training data: " + (PROJECT_LICENCE if synthetic else "that of each dataset named above (see its own card); "
                                     "not restated here"),
              "- this card and the code that trained the model: MIT (the codeswitch project)", ""]
    rows = fidelity.entries(meta["notebook"]) if meta.get("notebook") else []
    if rows:
        lines += ["## Fidelity ledger rows that apply", "", "| id | topic | this project's default |", "|---|---|---|"]
        lines += [f"| {d.id} | {d.topic} | {d.default} |" for d in rows]
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- --check: the disk the plan's kept models will take
#: bytes per parameter of a kept model: ``save_pretrained`` writes the weights in their dtype, float32 (the trainers'
#: mixed precision keeps float32 master weights)
BYTES_PER_PARAMETER = 4


@dataclass(frozen=True)
class Planned:
    """A run of a plan that keeps a model when ``keep_models`` asks for it (each package's ``experiment.kept_plan``):
    its row (what ``best`` groups by), the backbone whose configuration sizes it, how many encoders it saves (a
    ContrastiveMix pair: 2)."""

    spec: Any  # the run's spec, or any value naming the run where its spec needs data not read yet
    row: Row
    backbone: str
    encoders: int = 1


@dataclass(frozen=True)
class Estimate:
    """``--check``'s estimate for one section: how many models ``keep_models`` will keep and the bytes of those whose
    backbone's configuration is here; ``unknown``: the backbones that is not true of, ``unsized``: how many models
    they account for (their size is not guessed)."""

    section: str
    setting: str
    models: int
    bytes: int
    unknown: tuple[str, ...] = ()
    unsized: int = 0


def planned_to_keep(setting: str, planned: Sequence[Planned]) -> list[Planned]:
    """The planned runs whose models ``setting`` keeps at the end of the run: ``all`` every one, ``best`` one per row
    (which seed wins is known only after the run; each row's first stands for it: same backbone, same size)."""
    if check_setting(setting) == "none":
        return []
    if setting == "all":
        return list(planned)
    return list({row_key(p.row): p for p in reversed(planned)}.values())[::-1]


def _run_of(spec) -> str:
    """A run's identity without computing its inputs' identities (no file hashing, no hub look-up): the fields in its
    key (a run two tables show, with two display labels, is one run and keeps one model); anything else as it is."""
    import dataclasses

    if not dataclasses.is_dataclass(spec):
        return repr(spec)
    return repr([(f.name, getattr(spec, f.name)) for f in dataclasses.fields(spec) if f.metadata.get("key", True)])


def parameter_count(config) -> int:
    """The parameters of ``AutoModel.from_config(config)``, counted on the meta device (no weights allocated, no
    download): the backbone a kept model saves (a task head adds a few thousand)."""
    import torch
    from transformers import AutoModel

    with torch.device("meta"):
        model = AutoModel.from_config(config)
    return sum(p.numel() for p in model.parameters())


def backbone_config(ref: str, root: str | Path):
    """The ``transformers`` configuration of a backbone reference without network or building anything: a local
    folder's or the Hugging Face cache's ``config.json``, a project-built ``tiny-*`` backbone's (built folder, or its
    recipe); ``None`` when it is not here."""
    from transformers import AutoConfig

    from .hub import cached_snapshot
    from .models import TINY_BACKBONES, TINY_PRETRAINED, TINY_VOCAB, tiny_config, backbone_cache_dir, backbone_id, is_tiny

    if is_tiny(ref):
        built = backbone_cache_dir(Path(root)) / backbone_id(ref) / "config.json"
        if built.is_file():
            return AutoConfig.from_pretrained(built.parent)
        base = TINY_PRETRAINED.get(ref, {}).get("base", ref)
        return tiny_config(base, TINY_VOCAB) if base in TINY_BACKBONES else None
    local = Path(os.path.expanduser(ref))
    local = local if local.is_absolute() else Path(root) / local
    if (local / "config.json").is_file():
        return AutoConfig.from_pretrained(local)
    snapshot = cached_snapshot(ref, "model") if "/" in ref or not local.exists() else None
    if snapshot and (Path(snapshot) / "config.json").is_file():
        return AutoConfig.from_pretrained(snapshot)
    return None


def estimate(section: str, setting: str, planned: Sequence[Planned], root: str | Path) -> Estimate:
    """The disk ``setting`` will take for ``planned``: parameters of each backbone (:func:`parameter_count`) x
    :data:`BYTES_PER_PARAMETER` x encoders, summed over the models kept (:func:`planned_to_keep`; a run planned twice
    counts once)."""
    keep = planned_to_keep(setting, list({_run_of(p.spec): p for p in reversed(planned)}.values())[::-1])
    sizes: dict[str, int | None] = {}
    for ref in dict.fromkeys(p.backbone for p in keep):
        config = backbone_config(ref, root)
        sizes[ref] = None if config is None else parameter_count(config) * BYTES_PER_PARAMETER
    unknown = tuple(ref for ref, b in sizes.items() if b is None)
    total = sum(sizes[p.backbone] * p.encoders for p in keep if sizes[p.backbone] is not None)
    return Estimate(section, setting, len(keep), total, unknown, sum(sizes[p.backbone] is None for p in keep))
