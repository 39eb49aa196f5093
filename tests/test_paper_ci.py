"""The paper-ci profile: the paper profile at CI size, every reference a local stand-in.

* drift: paper-ci may differ from paper only in sizes and in references (which must point at
  ${CODESWITCH_STANDINS}); any other difference fails here, so the two cannot drift apart;
* the stand-ins exist in the released layouts and load through the paper path's loaders;
* the preflight finds everything paper-ci needs once the stand-ins are built;
* every notebook runs under paper-ci through papermill (slow) and writes its artifacts with finite numbers.
"""

from __future__ import annotations

import pytest
import yaml

from codeswitch.core.deltas import STANDINS_VAR, read_profile_data
from codeswitch.core.profiles import load_profile, project_root

ROOT = project_root()

#: keys whose values are sizes: seeds, epochs/steps, row caps, batch sizes, lengths, model dimensions
SIZE_KEYS = {
    "seeds", "ablation_seeds", "epochs", "num_train_epochs", "per_device_eval_batch_size", "per_device_train_batch_size", "max_epochs", "patience", "batch_size", "eval_batch_size", "simcse_batch_size", "concse_batch_size",
    "train_batch_size", "released_simcse_batch_size", "max_train_samples", "max_eval_samples", "max_train_rows",
    "max_eval_rows", "construct_n", "train_max_queries", "tune_max_queries", "umap_points", "parallel_train_size",
    "parallel_valid_size", "lexicon_valid_size", "max_pairs", "heldout_pairs", "warmup_steps", "max_length",
    "max_seq_length", "doc_stride", "align_layer", "tsne_perplexity",
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",  # CalBERT's from-scratch models
}
#: keys whose values list the points of a grid (languages, tasks, ablation values).  paper-ci may keep a non-empty
#: SUBSET of the paper's list, in the paper's order: like fewer seeds, fewer grid points run the same code for each
#: point, while the suite's 15-minute budget cannot hold the whole grid (05 trains 51 models for 13 languages).  Which
#: subsets configs/paper-ci.yaml keeps, and why they still take every code path, is written in its header.
GRID_KEYS = {"tasks", "temperatures", "triplet_weights", "margins", "low_similarity", "high_similarity", "miracl_target", "miracl_high_similarity"}
#: keys whose values are model or dataset references
REFERENCE_KEYS = {
    "koglish_source", "glue_hub", "hf_model", "model", "backbone", "train_data", "mrtydi", "mrtydi_corpus", "miracl",
    "miracl_corpus", "muse", "parallel_source", "lexicon_source", "gluecos_dir", "ref", "pairs", "source", "benepar_model",
}
METADATA_KEYS = {"description"}


def _raw(name: str) -> dict:
    """A profile's settings as its file resolves them (``extends:`` applied)."""
    return read_profile_data(ROOT / "configs" / f"{name}.yaml", ROOT)


def _file(name: str) -> dict:
    """A profile file's own keys (for a delta: what it changes)."""
    return yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["paper-ci", "paper-gpu", "quick"])
def test_the_profiles_of_the_paper_path_are_deltas_on_paper(name):
    """paper-ci, paper-gpu and quick say ``extends: paper`` and list only what differs (quick-ci extends quick)."""
    own = _file(name)
    assert own["extends"] == "paper"
    resolved, paper = _raw(name), _raw("paper")
    for key, value in own.items():  # nothing the delta says is what paper says already
        if key != "extends":
            assert value != paper.get(key), f"configs/{name}.yaml repeats paper's {key!r}"
    assert "extends" not in resolved and set(paper) <= set(resolved)


def _differences(a, b, path=()):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                yield path + (k,), a.get(k, "<absent>"), b.get(k, "<absent>")
            else:
                yield from _differences(a[k], b[k], path + (k,))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(isinstance(x, dict) for x in a + b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _differences(x, y, path + (i,))
    elif a != b:
        yield path, a, b


def test_paper_ci_differs_from_paper_only_in_sizes_and_references():
    paper, ci = _raw("paper"), _raw("paper-ci")
    bad = []
    for path, p, c in _differences(paper, ci):
        key = path[-1]
        if key in METADATA_KEYS or key in SIZE_KEYS:
            continue
        if key in GRID_KEYS and _is_subset(c, p):
            continue
        if key in REFERENCE_KEYS and isinstance(c, str) and c.startswith(STANDINS_VAR + "/"):
            continue
        bad.append((".".join(map(str, path)), p, c))
    assert bad == [], f"paper-ci differs from paper beyond sizes and stand-in references: {bad}"


def _is_subset(ci, paper) -> bool:
    """``ci`` is a non-empty sub-list of ``paper``, in its order."""
    return isinstance(ci, list) and isinstance(paper, list) and len(ci) > 0 and ci == [x for x in paper if x in ci]


def test_grid_subsets_are_checked():
    assert _is_subset(["cola", "stsb"], ["cola", "sst2", "stsb"])
    assert not _is_subset([], ["cola"]) and not _is_subset(["stsb", "cola"], ["cola", "stsb"])
    assert not _is_subset(["cola", "wnli"], ["cola", "stsb"]) and not _is_subset("cola", ["cola"])


def test_the_drift_check_can_fail():
    paper = _raw("paper")
    changed = yaml.safe_load(yaml.safe_dump(paper))
    changed["concse"]["temperature"] = 0.1
    changed["glue"]["backbones"][0]["model"] = "bert-base-uncased"  # a reference, but not a stand-in
    diffs = {".".join(map(str, p)) for p, _, _ in _differences(paper, changed)}
    assert diffs == {"concse.temperature", "glue.backbones.0.model"}


#: paper-gpu (configs/paper-gpu.yaml: the paper's sizes on one GPU, bounded in steps) may differ from paper only in caps
#: on steps and rows -- never a batch size, a length, a learning rate or a model dimension --, in paper-ci's grid subsets,
#: and in references to the paper-size stand-ins (python -m codeswitch.pipeline.standins --sizes paper)
CAP_KEYS = {
    "seeds", "ablation_seeds", "num_train_epochs", "max_epochs", "patience", "max_train_samples", "max_eval_samples",
    "max_train_rows", "max_eval_rows", "construct_n", "train_max_queries", "tune_max_queries", "umap_points",
    "parallel_train_size", "parallel_valid_size", "lexicon_valid_size", "max_pairs", "heldout_pairs", "tsne_perplexity",
}
PAPER_GPU_REFERENCES = (STANDINS_VAR + "/models-paper/", STANDINS_VAR + "/data-paper/", STANDINS_VAR + "/models/benepar")


def _at(node, path):
    for k in path:
        if isinstance(node, dict):
            node = node.get(k)
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            node = node[k]
        else:
            return None
    return node


def _drift(paper: dict, other: dict, ci: dict, sizes: set, allowed) -> list:
    """The differences of ``other`` from ``paper`` beyond metadata, the keys of ``sizes``, paper-ci's grid subsets
    and what ``allowed(key, value)`` lets through."""
    bad = []
    for path, p, v in _differences(paper, other):
        key = path[-1]
        if key in METADATA_KEYS or key in sizes:
            continue
        if key in GRID_KEYS and _is_subset(v, p) and v == _at(ci, path):
            continue
        if allowed(key, v):
            continue
        bad.append((".".join(map(str, path)), p, v))
    return bad


def paper_gpu_drift(paper: dict, gpu: dict, ci: dict) -> list:
    """The differences of ``gpu`` from ``paper`` that paper-gpu may not have (see :data:`CAP_KEYS`)."""
    return _drift(paper, gpu, ci, CAP_KEYS, lambda key, g: key in REFERENCE_KEYS and isinstance(g, str)
                  and g.startswith(PAPER_GPU_REFERENCES))


def test_paper_gpu_differs_from_paper_only_in_caps_grid_subsets_and_paper_size_standins():
    assert paper_gpu_drift(_raw("paper"), _raw("paper-gpu"), _raw("paper-ci")) == []


def test_the_paper_gpu_drift_check_can_fail():
    paper, ci = _raw("paper"), _raw("paper-ci")
    gpu = yaml.safe_load(yaml.safe_dump(_raw("paper-gpu")))
    gpu["glue"]["backbones"][2]["batch_size"] = 8  # a batch size: paper-ci may, paper-gpu may not
    gpu["concse"]["max_length"] = 32  # a length
    gpu["glue"]["backbones"][0]["model"] = STANDINS_VAR + "/models/mbert-cased"  # a CI-size stand-in
    gpu["contrastivemix"]["low_similarity"] = ["ar"]  # a grid subset other than paper-ci's
    gpu["precision"] = "fp32"
    bad = {p for p, _, _ in paper_gpu_drift(paper, gpu, ci)}
    assert bad == {"glue.backbones.2.batch_size", "concse.max_length", "glue.backbones.0.model", "contrastivemix.low_similarity",
                   "precision"}


def test_every_paper_size_standin_is_used_by_paper_gpu_and_the_profile_validates():
    from codeswitch.pipeline import cli as pipeline
    from codeswitch.pipeline.standins import PAPER_SIZES

    refs = [str(v) for p, v in _leaves(_raw("paper-gpu")) if p[-1] in REFERENCE_KEYS]
    assert len(refs) >= 25 and all(r.startswith(PAPER_GPU_REFERENCES) for r in refs)
    assert {r.split("/models-paper/")[1] for r in refs if "/models-paper/" in r} == set(PAPER_SIZES)
    pipeline.validate_sections(load_profile("paper-gpu", root=ROOT))


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))
    else:
        yield path, node


def test_every_reference_of_paper_ci_is_a_standin():
    refs = [(p, v) for p, v in _leaves(_raw("paper-ci")) if p[-1] in REFERENCE_KEYS]
    assert len(refs) >= 25  # koglish, 4 GLUE + 3 ConCSE backbones, retrieval, alignment, 5 CalBERT backbones, ...
    assert [(p, v) for p, v in refs if not str(v).startswith(STANDINS_VAR + "/")] == []


def test_every_standin_model_is_used_by_paper_ci():
    """Grid subsets never drop a backbone: every model stand-in (so every model and tokenizer class) is named."""
    from codeswitch.pipeline.standins import STANDINS

    used = {str(v).split("/models/")[1] for p, v in _leaves(_raw("paper-ci")) if "/models/" in str(v)}
    assert used == set(STANDINS)


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    import os

    from codeswitch.pipeline.standins import build_all

    root = tmp_path_factory.mktemp("standins")
    build_all(root)
    old = os.environ.get("CODESWITCH_STANDINS")
    os.environ["CODESWITCH_STANDINS"] = str(root)
    yield root
    if old is None:
        os.environ.pop("CODESWITCH_STANDINS", None)
    else:
        os.environ["CODESWITCH_STANDINS"] = old


def test_paper_ci_resolves_to_the_standins_and_the_preflight_finds_them(standins):
    from codeswitch.pipeline import preflight

    cfg = load_profile("paper-ci")
    assert cfg.koglish_source == f"{standins}/data/koglish"
    statuses = preflight.check(cfg)
    missing = [(s.resource.setting, s.where, s.missing_files) for s in statuses if not s.present]
    assert missing == []
    assert {n for s in statuses for n in s.resource.notebooks} == {"01", "02", "03", "04", "05", "06", "07"}


def test_standin_datasets_load_through_the_paper_loaders(standins):
    from codeswitch.alignment.data import load_parallel
    from codeswitch.calbert.data import load_pairs
    from codeswitch.contrastivemix.data import load_collection, load_queries, load_train_set
    from codeswitch.koglish import data as K

    cfg = load_profile("paper-ci")
    src = cfg.koglish_source  # the hub layout (COLA/en_train.csv, Koglish_SICK/cs_test.csv)
    assert len(K.load_glue(src, "cola", "train")) > 0 and len(K.load_sts(src, "sick")) > 0 and len(K.load_nli(src)) > 0
    from codeswitch.koglish import experiment as KE
    from codeswitch.koglish.config import load as koglish_config

    qnli = KE._raw_glue(koglish_config(cfg), "qnli")  # nyu-mll/glue's layout: load_dataset(folder, "qnli") by its card
    assert list(qnli.columns) == ["sentence1", "sentence2", "label"] and len(qnli) == cfg.sections["koglish"]["construct_n"]
    c = cfg.sections["contrastivemix"]
    en = load_queries("mrtydi", c["mrtydi"], "en", "dev")
    ko = load_queries("mrtydi", c["mrtydi"], "ko", "test")
    assert len(en) > 0 and len(ko) > 0 and set(en.qrels) == {q for q in en.queries}
    assert len(load_collection("miracl", c["miracl_corpus"], "zh")) > 0 and len(load_queries("miracl", c["miracl"], "fa", "dev")) > 0
    assert len(load_train_set(c["train_data"])) > 0
    assert len(load_train_set(f'{c["train_data"]}/nq-dev.jsonl.gz')) > 0  # the validation split of §3.3
    a = cfg.sections["alignment"]
    assert len(load_parallel(a["parallel_source"], "train", limit=4)) == 4
    assert len(load_pairs(cfg.sections["calbert"]["pretrain"]["pairs"])) > 0


class PaperCiRun:
    """Notebooks executed under paper-ci into one output root, each at most once, in order (04 reuses 03's runs)."""

    def __init__(self, root, profile: str = "paper-ci"):
        self.root = root
        self.profile = profile
        self.executed: dict[str, object] = {}

    def ensure(self, spec):
        from codeswitch.pipeline import cli as pipeline

        if spec.number not in self.executed:
            self.executed[spec.number] = pipeline.run_notebook(spec, self.profile, output_root=self.root, root=ROOT, log_output=False)
            pipeline.write_index(self.profile, output_root=self.root, root=ROOT)
        return self.executed[spec.number]


@pytest.fixture(scope="module")
def paper_ci_run(standins, tmp_path_factory):
    return PaperCiRun(tmp_path_factory.mktemp("paper_ci_run"))


def _specs():
    from codeswitch.pipeline import cli as pipeline

    return pipeline.available(ROOT)


#: columns of the papers' numbers (codeswitch.core.reported) and their difference, empty where a paper reports none;
#: the spread, empty where it does not apply (one run, a p-value row) and finite wherever its mean is; a test's
#: p-value, empty where no test applies (the baseline's own row, BM25, group averages: ContrastiveMix Table 1)
UNCHECKED_COLUMNS = {"paper", "diff", "paper_note", "std", "p_value"}


def check_finite(fig_dir, spec) -> None:
    """Every measured number in every table a notebook writes is finite: not only the value columns check_artifacts
    reads, but every numeric column (labels such as "N/A" stay text) but the papers' and the spread."""
    import math

    import pandas as pd

    for name in spec.artifacts:
        csv = fig_dir / f"{name}.csv"
        if not csv.is_file():
            continue  # a figure
        df = pd.read_csv(csv, keep_default_na=False, na_values=["", "nan", "NaN", "NA"])  # "N/A" is a label (Table 6)
        numeric = df.select_dtypes("number")
        numeric = numeric[[c for c in numeric if c not in UNCHECKED_COLUMNS]]
        bad = [(col, i) for col in numeric for i in range(len(df)) if not math.isfinite(numeric[col].iloc[i])]
        assert bad == [], f"{name}.csv holds non-finite numbers at (column, row) {bad[:10]}"


def test_check_finite_can_fail(tmp_path):
    from types import SimpleNamespace

    spec = SimpleNamespace(artifacts=("t",))
    (tmp_path / "t.csv").write_text("row,column,mean,std,n,paper,diff\nA,N/A,1.5,,1,,\nB,x,2.0,0.1,2,3.0,-1.0\n")
    check_finite(tmp_path, spec)  # labels, reported gaps and a one-run std are not measurements
    (tmp_path / "t.csv").write_text("row,column,mean,std,n,paper,diff\nA,N/A,,,2,,\n")
    with pytest.raises(AssertionError, match="mean"):
        check_finite(tmp_path, spec)
    (tmp_path / "t.csv").write_text("row,mean,recall\nA,1.5,nan\n")
    with pytest.raises(AssertionError, match="recall"):
        check_finite(tmp_path, spec)


@pytest.mark.slow
@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.stem)
def test_notebook_runs_under_paper_ci(spec, paper_ci_run):
    """The paper's code path end to end through papermill, every notebook: the paper's backbone classes and tokenizers
    (stand-ins), its datasets in their released layouts (hub copies, local folders), benepar and the NLLB translator
    (01), every artifact written with finite numbers.  Notebooks share one output root, as ./reproduce.sh runs them."""
    from .helpers import check_artifacts

    executed = paper_ci_run.ensure(spec)
    assert executed.is_file()
    fig_dir = paper_ci_run.root / "figures" / "paper-ci"
    check_artifacts(fig_dir, spec)
    check_finite(fig_dir, spec)


#: quick (configs/quick.yaml: the paper profile scaled down by the rule in its header) may differ from paper only in
#: caps on steps and rows (paper-gpu's CAP_KEYS and the MUSE training lexicon's), an evaluation batch size (no result
#: changes), the top-level train_sample, paper-ci's grid subsets, and a backbone's model (the smallest real checkpoint
#: of the paper's family, named in the header with its licence), and ContrastiveMix's reduced corpus (corpus_sample: judged
#: passages + BM25's top 100 + a seeded sample, the rule issue 38 names), its seeded sample of evaluation queries
#: (eval_max_queries: "a seeded sample whose size is stated in every table"), and keep_models (what is saved, not what
#: is computed: it enters no run key; the rule's item 8)
QUICK_KEYS = CAP_KEYS | {"lexicon_train_size", "per_device_eval_batch_size", "train_sample", "corpus_sample", "eval_max_queries",
                         "keep_models"}


def _left_out(path: tuple, paper, quick, header: str) -> bool:
    """``quick`` is the section's ``backbones`` list of ``paper`` with some entries left out (the rule's item 6: a
    backbone one GPU-hour does not allow, whose family's smallest checkpoint is a row already), the rest unchanged and
    in order, and the header names the list (``glue.backbones``) and every entry it leaves out."""
    if path[-1] != "backbones" or not isinstance(paper, list) or not isinstance(quick, list) or not quick:
        return False
    kept = {e.get("name") for e in quick}
    out = [e["name"] for e in paper if e.get("name") not in kept]
    return (quick == [e for e in paper if e.get("name") in kept] and ".".join(map(str, path)) in header
            and all(name in header for name in out))


def quick_drift(paper: dict, quick: dict, ci: dict, header: str) -> list:
    """The differences of ``quick`` from ``paper`` that the quick rule does not allow (see :data:`QUICK_KEYS`)."""
    # a substituted backbone must be named in the rule
    bad = _drift(paper, quick, ci, QUICK_KEYS, lambda key, q: key == "model" and isinstance(q, str) and q in header)
    return [(p, a, b) for p, a, b in bad if not _left_out(tuple(p.split(".")), a, b, header)]


def _header(name: str) -> str:
    text = (ROOT / "configs" / f"{name}.yaml").read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if line.startswith("#"))


def test_quick_differs_from_paper_only_by_its_rule():
    assert quick_drift(_raw("paper"), _raw("quick"), _raw("paper-ci"), _header("quick")) == []


def test_the_quick_drift_check_can_fail():
    paper, ci = _raw("paper"), _raw("paper-ci")
    quick = yaml.safe_load(yaml.safe_dump(_raw("quick")))
    quick["concse"]["temperature"] = 0.1  # a method setting
    quick["calbert"]["sail"]["learning_rate"] = 1.0e-4  # a learning rate
    quick["alignment"]["backbones"][0]["model"] = "xlm-roberta-small"  # a backbone the header does not name
    quick["contrastivemix"]["low_similarity"] = ["ar"]  # another subset than paper-ci's
    quick["calbert"]["backbones"] = paper["calbert"]["backbones"][1:]  # a backbone left out that the header does not name
    quick["concse"]["backbones"] = quick["concse"]["backbones"][::-1]  # the kept ones, but reordered
    quick["glue"]["backbones"][0]["learning_rate"] = 1.0e-4  # one left out as the header says, but a kept one changed
    bad = {p for p, _, _ in quick_drift(paper, quick, ci, _header("quick"))}
    assert bad == {"concse.temperature", "calbert.sail.learning_rate", "alignment.backbones.0.model", "contrastivemix.low_similarity",
                   "calbert.backbones", "concse.backbones", "glue.backbones"}


def test_the_quick_header_states_every_size_and_the_rule():
    """Every row cap quick sets is stated in its header (as 2,000), with the rule and how the sizes were chosen."""
    header = _header("quick")
    caps = [(p, v) for p, v in _leaves(_file("quick")) if p[-1] in CAP_KEYS | {"lexicon_train_size"} and p[-1].startswith(("max_", "parallel_", "lexicon_", "train_max"))]
    assert len(caps) >= 8
    assert [(p, v) for p, v in caps if f"{v:,}" not in header] == []
    for words in ("train_sample: random", "before any result", "budget", "benchmarks cost", "3 seeds" if "3 seeds" in header else "Seeds: 3",
                  "CHANGES AFTER THE FIRST FULL RUN"):
        assert words in header
    assert _file("quick")["train_sample"] == "random" and len(_file("quick")["seeds"]) == 3


# --------------------------------------------------------------------------- quick-ci: the quick path on the stand-ins
#: what quick-ci may add to paper-ci's keys: caps that make quick's random rule cut the stand-ins' small sets
QUICK_CI_EXTRAS = {("calbert", "sail", "max_train_samples"), ("calbert", "iitp", "max_train_samples"), ("alignment", "lexicon_train_size")}


def _kept_backbones(path: tuple, ci, quick_ci) -> bool:
    """``quick_ci`` is a ``backbones`` list of the entries :data:`codeswitch.pipeline.quick_local.BACKBONES` keeps for
    its section, each exactly paper-ci's entry of that name: quick-ci runs the one backbone a section that
    ``scripts/quick_local.sh`` runs on real data, while paper-ci runs every backbone class."""
    from codeswitch.pipeline.quick_local import BACKBONES

    if len(path) != 2 or path[1] != "backbones" or not isinstance(ci, list) or not isinstance(quick_ci, list):
        return False
    keep = BACKBONES.get(path[0])
    return keep is not None and quick_ci == [e for e in ci if e.get("name") == keep] != []


def quick_ci_drift(ci_file: dict, quick_ci_file: dict) -> list:
    """The keys of quick-ci's file that are not paper-ci's own (same value), one of :data:`QUICK_CI_EXTRAS`, nor a
    backbone list cut to quick-local's one backbone (:func:`_kept_backbones`)."""
    bad = []
    for path, c, q in _differences({k: v for k, v in ci_file.items() if k not in ("extends", "description")},
                                   {k: v for k, v in quick_ci_file.items() if k not in ("extends", "description")}):
        if not (c == "<absent>" and path in QUICK_CI_EXTRAS) and not _kept_backbones(path, c, q):
            bad.append((".".join(map(str, path)), c, q))
    return bad


def test_quick_ci_is_quick_on_paper_ci_sizes_and_standins():
    own = _file("quick-ci")
    assert own["extends"] == "quick"
    assert quick_ci_drift(_file("paper-ci"), own) == []
    resolved = _raw("quick-ci")
    assert resolved["train_sample"] == "random"  # quick's rule, which paper-ci does not have
    refs = [(p, v) for p, v in _leaves(resolved) if p[-1] in REFERENCE_KEYS]
    assert len(refs) >= 20 and [(p, v) for p, v in refs if not str(v).startswith(STANDINS_VAR + "/")] == []
    assert {v for _, v in refs} <= {v for p, v in _leaves(_raw("paper-ci")) if p[-1] in REFERENCE_KEYS}  # paper-ci's stand-ins
    # every size is paper-ci's, or a quick cap that the stand-ins' sets are smaller than (so it changes nothing there)
    ci = _raw("paper-ci")
    for path, c, q in _differences(ci, resolved):
        assert path[-1] in QUICK_KEYS | {"description"} or path in QUICK_CI_EXTRAS or _kept_backbones(path, c, q), (path, c, q)


def test_the_quick_ci_drift_check_can_fail():
    own = yaml.safe_load(yaml.safe_dump(_file("quick-ci")))
    own["glue"]["max_train_samples"] = 64  # paper-ci says 32
    own["concse"]["temperature"] = 0.1  # a key paper-ci does not set
    del own["contrastivemix"]["umap_points"]  # a key of paper-ci's left out
    own["calbert"]["backbones"] = _file("paper-ci")["calbert"]["backbones"][1:2]  # RoBERTa: not the one quick-local keeps
    own["concse"]["backbones"][0]["concse_batch_size"] = 4  # the kept backbone, but not paper-ci's entry
    bad = {p for p, _, _ in quick_ci_drift(_file("paper-ci"), own)}
    assert bad == {"glue.max_train_samples", "concse.temperature", "contrastivemix.umap_points", "calbert.backbones",
                   "concse.backbones"}


#: the package whose runs each notebook writes (runs/<profile>/<package>/); 01 constructs data and trains nothing
RUNS_OF = {"02": "glue", "03": "concse", "04": "concse", "05": "contrastivemix", "06": "alignment", "07": "calbert"}


@pytest.fixture(scope="module")
def quick_ci_run(standins, tmp_path_factory):
    return PaperCiRun(tmp_path_factory.mktemp("quick_ci_run"), "quick-ci")


def quick_ci_records(root, number: str) -> list[dict]:
    """The run records (their ``config``: the run's key) notebook ``number`` wrote under quick-ci, in every stage's
    folder (contrastivemix/train/, .../eval/, ...); other JSON files there (checkpoints' configs) are not records."""
    import json

    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((root / "runs" / "quick-ci" / RUNS_OF[number]).rglob("*.json"))]
    return [r["config"] for r in records if isinstance(r, dict) and {"schema", "config"} <= set(r)]


def check_quick_rule(records: list[dict], models: set, standins) -> None:
    """The runs took quick's rule and quick-ci's backbones: some run's training set was cut by a seeded random sample
    (``train_sample: random`` in its key, which a head cut leaves out), no run's was cut otherwise, and every stand-in
    model a run names is one of the section's kept backbones."""
    assert records, "the notebook wrote no runs"
    samples = [c.get("train_sample") for c in records]
    assert "random" in samples and set(samples) <= {"random", None}, sorted(set(map(str, samples)))
    named = {v for c in records for _, v in _leaves(c) if isinstance(v, str) and v.startswith(f"{standins}/models/")}
    assert named and named <= models, sorted(named - models)


def test_check_quick_rule_can_fail(tmp_path):
    m = f"{tmp_path}/models/bert-cased"
    check_quick_rule([{"train_sample": "random", "model": m}, {"model": m, "seed": 1}], {m}, tmp_path)
    for records in ([{"model": m}], [{"train_sample": "random", "model": m}, {"train_sample": "head", "model": m}],
                    [{"train_sample": "random", "model": f"{tmp_path}/models/roberta"}], []):
        with pytest.raises(AssertionError):
            check_quick_rule(records, {m}, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.stem)
def test_notebook_runs_under_quick_ci(spec, quick_ci_run, standins):
    """Every notebook on the quick path (its rule: seeded random samples of the capped training sets) end to end
    through papermill on the paper-ci stand-ins, in order into one output root as ./reproduce.sh runs them: every
    artifact written with finite numbers, and the runs behind them (02-07) took the rule and quick-ci's one backbone a
    section (configs/quick-ci.yaml says why one: paper-ci runs every backbone class)."""
    from .helpers import check_artifacts

    executed = quick_ci_run.ensure(spec)
    assert executed.is_file()
    fig_dir = quick_ci_run.root / "figures" / "quick-ci"
    check_artifacts(fig_dir, spec)
    check_finite(fig_dir, spec)
    if spec.number in RUNS_OF:
        section = load_profile("quick-ci").sections[RUNS_OF[spec.number]]
        models = {b["model"] for b in section["backbones"]}
        check_quick_rule(quick_ci_records(quick_ci_run.root, spec.number), models, standins)
