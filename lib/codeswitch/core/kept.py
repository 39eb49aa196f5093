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

``./reproduce.sh export --profile P [--set K=V ...] [--only NN] DIR`` copies exactly the kept models of the plan
of that profile and those ``--set`` values (:func:`plan_export`) into ``DIR/<paper>/<table>/<row>/``
(:func:`export_models`: every file hashed against its manifest first; new folders only unless ``force``, which
never deletes a file an export did not write; the rows without a model listed); ``--push-to-hub ORG`` uploads them
with ``huggingface_hub`` (:func:`push_to_hub`; the token from ``$HF_TOKEN`` only).

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
from .runs import atomic_directory, atomic_write_json, atomic_write_text, report_warning

__all__ = ["KEEP_MODELS", "FORMATS", "Row", "check_setting", "wanted", "keep_also", "keeping", "kept_dir", "keep", "kept_ok", "read_meta",
           "asked", "select_best", "prune_to_best", "kept_model", "kept_models", "export", "push_to_hub",
           "ExportError", "PlanRun", "ExportPlan", "plan_export", "export_targets", "export_models", "disk_use", "model_card", "META", "CARD",
           "Planned", "Estimate", "planned_to_keep", "parameter_count", "backbone_config", "estimate"]

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
        return f"{self.paper}/{self.table}/{_slug(self.row + ''.join(f'-{x}' for x in (self.column, self.part) if x is not None))}"


def _slug(text: str) -> str:
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
def _row_key(row: Row) -> tuple:
    return (row.paper, row.table, row.row, row.column) + (() if row.part is None else (row.part,))


def select_best(candidates: Iterable[tuple[Any, Row, float | None]]) -> dict[tuple, Any]:
    """``{(paper, table, row, column[, part]): spec}``: per row (and column, where a row has one model per column), the
    candidate with the highest score (``None`` scores never win; ties go to the first, i.e. the earlier seed in plan
    order)."""
    best: dict[tuple, tuple[Any, float]] = {}
    for spec, row, score in candidates:
        k = _row_key(row)
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


# --------------------------------------------------------------------------- listing, export, hub
def kept_models(runs_dir: str | Path, notebooks: Sequence[str] | None = None) -> list[tuple[Path, dict]]:
    """``[(folder, meta)]`` of every kept model under ``runs/<profile>/`` (``notebooks``: only theirs), sorted."""
    out = []
    for meta_file in sorted(Path(runs_dir).glob(f"*/{MODELS}/*/{META}")) + sorted(Path(runs_dir).glob(f"*/*/{MODELS}/*/{META}")):
        meta = read_meta(meta_file.parent)
        if meta is not None and (notebooks is None or meta.get("notebook") in notebooks):
            out.append((meta_file.parent, meta))
    return out


class ExportError(Exception):
    """Why an export is refused; the message names the path."""


@dataclass(frozen=True)
class PlanRun:
    """A run of the exported plan that keeps a model (a package's ``kept_plan``): its section and that section's
    ``keep_models``, its spec, row and kept folder (the package's ``kept_dir(profile, spec)``)."""

    section: str
    setting: str
    spec: Any
    row: Row
    folder: Path


@dataclass(frozen=True)
class ExportPlan:
    """What an export copies: ``models`` ``[(kept folder, meta)]`` (each the model of a run of the plan, its stored key
    checked) and ``missing``: the rows ``keep_models`` asks a model for that have none."""

    models: tuple[tuple[Path, dict], ...]
    missing: tuple[str, ...]


def _row_text(row: Row, seed: bool = False) -> str:
    return row.folder() + (f" (seed {row.seed})" if seed and row.seed is not None else "")


def plan_export(runs: Sequence[PlanRun]) -> ExportPlan:
    """The kept models of the plan ``runs`` and the rows without one: ``best`` expects one model per row (any of its
    runs'), ``all`` one per run, ``none`` nothing (the models a notebook kept to load are exported where present).  A
    folder whose ``codeswitch.json`` names another run is refused (:class:`ExportError`, naming it)."""
    models: dict[Path, dict] = {}
    expected: dict[tuple, list[PlanRun]] = {}
    for r in runs:
        check_setting(r.setting, where=f"{r.section}.keep_models")
        if r.setting == "best":
            expected.setdefault((r.section, *_row_key(r.row)), []).append(r)
        elif r.setting == "all":
            expected.setdefault((r.section, *_row_key(r.row), r.row.seed, r.spec.key_hash()), []).append(r)
        folder = Path(r.folder)
        if folder in models or not folder.exists():
            continue
        meta = read_meta(folder)
        if meta is None or meta.get("key_hash") != r.spec.key_hash():
            raise ExportError(f"{folder}: its {META} is unreadable or names another run than the plan's "
                              f"({_row_text(r.row, True)}, key {r.spec.key_hash()}); remove the folder and rerun its notebook")
        models[folder] = meta
    missing = [_row_text(rs[0].row, rs[0].setting == "all") for rs in expected.values()
               if not any(Path(r.folder) in models for r in rs)]
    return ExportPlan(tuple(models.items()), tuple(dict.fromkeys(missing)))


def export_targets(items: Sequence[tuple[Path, dict]], dest: str | Path) -> list[tuple[Path, Path, dict]]:
    """``[(kept folder, target, meta)]``: ``dest/<paper>/<table>/<row>/`` (``.../seed-<seed>/`` where a row has several
    models).  Two models that would share a target are refused (:class:`ExportError` naming both), never decided by
    the order they were found in."""
    per_row: dict[str, int] = {}
    for _, m in items:
        per_row[Row(**m["row"]).folder()] = per_row.get(Row(**m["row"]).folder(), 0) + 1
    out, seen = [], {}
    for folder, meta in items:
        row = Row(**meta["row"])
        target = Path(dest) / row.folder()
        if per_row[row.folder()] > 1:
            target = target / f"seed-{row.seed}"
        if target in seen:
            raise ExportError(f"{target}: two kept models of the plan would be exported there, {seen[target]} and {folder} "
                              "(the same row and seed); export refuses to pick one")
        seen[target] = folder
        out.append((Path(folder), target, meta))
    return out


def _verified_copy(folder: Path, tmp: Path) -> list[str]:
    """Copy ``folder`` into ``tmp`` and check the copy against the manifest, every file hashed now (publication:
    no cached digest trusted); the manifest's file list.  :class:`ExportError` names the file that fails."""
    from .checkpoints import verify_manifest

    problems = verify_manifest(folder, fresh=True)
    if problems:
        raise ExportError(f"{folder}: not exported, its files do not match its manifest: {'; '.join(problems)} "
                          "(run its notebook again to rebuild it)")
    shutil.copytree(folder, tmp, dirs_exist_ok=True)
    problems = verify_manifest(tmp, fresh=True)
    if problems:
        raise ExportError(f"{folder}: the copy in {tmp} does not match the manifest: {'; '.join(problems)}")
    from .identity import MANIFEST

    return sorted(json.loads((tmp / MANIFEST).read_text(encoding="utf-8"))["files"]) + [MANIFEST]


def _written_before(target: Path) -> set[str]:
    """The files an earlier export wrote into ``target`` (its manifest's, and the manifest): the only ones --force
    may replace or remove."""
    from .identity import MANIFEST

    try:
        return set(json.loads((target / MANIFEST).read_text(encoding="utf-8"))["files"]) | {MANIFEST}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def export_models(items: Sequence[tuple[Path, dict]], dest: str | Path, *, force: bool = False,
                  notes: Callable[[str], Any] | None = None) -> list[Path]:
    """Copy each kept model ``(folder, meta)`` into its target (:func:`export_targets`), each verified against its
    manifest with every file hashed now (a swapped weight file is refused, naming it).  An existing target is refused
    (:class:`ExportError` naming it) before anything is written, unless ``force``: then the model's files replace
    theirs and the files an earlier export wrote that this model lacks are removed; no other file is deleted (each
    one left is passed to ``notes``).  Returns the targets written."""
    targets = export_targets(items, dest)
    taken = [t for _, t, _ in targets if t.exists()]
    if taken and not force:
        raise ExportError(f"{taken[0]}: already exists" + (f" (and {len(taken) - 1} other target(s))" if len(taken) > 1 else "")
                          + "; export writes only into new folders: choose another DIR, or give --force to replace the "
                          "files an export wrote there (no other file is deleted)")
    from .checkpoints import verify_manifest

    for folder, _, _ in targets:  # every model verified before anything is written: no partial publication
        problems = verify_manifest(folder, fresh=True)
        if problems:
            raise ExportError(f"{folder}: not exported, its files do not match its manifest: {'; '.join(problems)} "
                              "(run its notebook again to rebuild it); nothing was exported")
    written = []
    for folder, target, _ in targets:
        if not target.exists():
            with atomic_directory(target) as tmp:
                _verified_copy(folder, tmp)
            written.append(target)
            continue
        if not target.is_dir():
            raise ExportError(f"{target}: exists and is not a folder")
        ours_before = _written_before(target)
        import tempfile

        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.export-", dir=target.parent))
        try:
            files = _verified_copy(folder, tmp)
            for rel in files:  # each file replaced by a rename: never half-written
                dst = target / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / rel, dst)
            for rel in sorted(ours_before - set(files)):  # what the earlier export wrote and this model lacks
                (target / rel).unlink(missing_ok=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        others = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()
                        and p.relative_to(target).as_posix() not in set(files))
        if others and notes:
            notes(f"{target}: kept {len(others)} file(s) that export did not write: {', '.join(others[:5])}"
                  + (" …" if len(others) > 5 else ""))
        written.append(target)
    return written


def export(runs_dir: str | Path, dest: str | Path, notebooks: Sequence[str] | None = None, *, force: bool = False) -> list[Path]:
    """Copy every kept model under ``runs_dir`` (of ``notebooks``) with :func:`export_models`: for a library caller who
    has one plan's cache.  ``./reproduce.sh export`` exports exactly the kept models of one plan instead
    (:func:`plan_export`), those of other configurations in the same cache left out."""
    return export_models([(f, m) for f, m in kept_models(runs_dir, notebooks)], dest, force=force)


def push_to_hub(folders: Iterable[str | Path], org: str, *, api=None, private: bool = True) -> list[str]:
    """Upload each exported folder as the model repository ``<org>/<paper>-<table>-<row>[-seed-N]``; the token is
    read from the environment only (``$HF_TOKEN``; ``HfApi`` reads it).  ``api``: an ``HfApi`` (tests pass a fake
    hub).  Returns the repository ids."""
    if api is None:
        from huggingface_hub import HfApi

        if not os.environ.get("HF_TOKEN"):
            raise PermissionError("--push-to-hub: set HF_TOKEN in the environment (a write token); it is read from nowhere else")
        api = HfApi(token=os.environ["HF_TOKEN"])
    repos = []
    for folder in folders:
        folder = Path(folder)
        meta = read_meta(folder) or {}
        row = Row(**meta["row"]) if "row" in meta else None
        name = _slug(f"{row.paper}-{row.table}-{row.row}" + (f"-seed-{row.seed}" if folder.name.startswith("seed-") else "")
                     if row else folder.name)
        repo = f"{org}/{name}"
        api.create_repo(repo, repo_type="model", private=private, exist_ok=True)
        api.upload_folder(repo_id=repo, repo_type="model", folder_path=str(folder),
                          commit_message=f"codeswitch: {name} (run {meta.get('key_hash')}, commit {meta.get('git_commit')})")
        repos.append(repo)
    return repos


def disk_use(runs_dir: str | Path) -> dict[str, tuple[int, int]]:
    """``{section: (kept models, bytes)}`` under ``runs/<profile>/`` (what ``--check`` prints)."""
    out: dict[str, tuple[int, int]] = {}
    for folder, meta in kept_models(runs_dir):
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        n, b = out.get(meta["section"], (0, 0))
        out[meta["section"]] = (n + 1, b + size)
    return out


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
    return list({_row_key(p.row): p for p in reversed(planned)}.values())[::-1]


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

    from .hub import _cached_snapshot
    from .models import TINY_BACKBONES, TINY_PRETRAINED, TINY_VOCAB, _tiny_config, backbone_cache_dir, backbone_id, is_tiny

    if is_tiny(ref):
        built = backbone_cache_dir(Path(root)) / backbone_id(ref) / "config.json"
        if built.is_file():
            return AutoConfig.from_pretrained(built.parent)
        base = TINY_PRETRAINED.get(ref, {}).get("base", ref)
        return _tiny_config(base, TINY_VOCAB) if base in TINY_BACKBONES else None
    local = Path(os.path.expanduser(ref))
    local = local if local.is_absolute() else Path(root) / local
    if (local / "config.json").is_file():
        return AutoConfig.from_pretrained(local)
    snapshot = _cached_snapshot(ref, "model") if "/" in ref or not local.exists() else None
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
