"""The paper-ci profile: the paper profile at CI size, every reference a local stand-in.

* drift: paper-ci may differ from paper only in sizes and in references (which must point at
  ${CODESWITCH_STANDINS}); any other difference fails here, so the two cannot drift apart;
* the stand-ins exist in the released layouts and load through the paper path's loaders;
* the preflight finds everything paper-ci needs once the stand-ins are built.
"""

from __future__ import annotations

import pytest
import yaml

from codeswitch.core.profiles import STANDINS_VAR, load_profile, project_root

ROOT = project_root()

#: keys whose values are sizes: seeds, epochs/steps, row caps, batch sizes, lengths, model dimensions
SIZE_KEYS = {
    "seeds", "epochs", "num_train_epochs", "per_device_eval_batch_size", "per_device_train_batch_size", "max_epochs", "patience", "batch_size", "eval_batch_size", "simcse_batch_size", "concse_batch_size",
    "train_batch_size", "released_simcse_batch_size", "max_train_samples", "max_eval_samples", "max_train_rows",
    "max_eval_rows", "construct_n", "train_max_queries", "tune_max_queries", "umap_points", "parallel_train_size",
    "parallel_valid_size", "lexicon_valid_size", "max_pairs", "heldout_pairs", "warmup_steps", "max_length",
    "max_seq_length", "doc_stride", "align_layer", "tsne_perplexity",
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",  # CalBERT's from-scratch models
}
#: keys whose values are model or dataset references
REFERENCE_KEYS = {
    "koglish_source", "glue_hub", "hf_model", "model", "backbone", "train_data", "mrtydi", "mrtydi_corpus", "miracl",
    "miracl_corpus", "muse", "parallel_source", "lexicon_source", "gluecos_dir", "ref", "pairs", "source",
}
METADATA_KEYS = {"description"}


def _raw(name: str) -> dict:
    return yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text(encoding="utf-8"))


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
        if key in REFERENCE_KEYS and isinstance(c, str) and c.startswith(STANDINS_VAR + "/"):
            continue
        bad.append((".".join(map(str, path)), p, c))
    assert bad == [], f"paper-ci differs from paper beyond sizes and stand-in references: {bad}"


def test_the_drift_check_can_fail():
    paper = _raw("paper")
    changed = yaml.safe_load(yaml.safe_dump(paper))
    changed["concse"]["temperature"] = 0.1
    changed["glue"]["backbones"][0]["model"] = "bert-base-uncased"  # a reference, but not a stand-in
    diffs = {".".join(map(str, p)) for p, _, _ in _differences(paper, changed)}
    assert diffs == {"concse.temperature", "glue.backbones.0.model"}


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


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    import os

    from codeswitch.core.standins import build_all

    root = tmp_path_factory.mktemp("standins")
    build_all(root)
    old = os.environ.get("CODESWITCH_STANDINS")
    os.environ["CODESWITCH_STANDINS"] = str(root)
    yield root
    if old is None:
        os.environ.pop("CODESWITCH_STANDINS", None)
    else:
        os.environ["CODESWITCH_STANDINS"] = old


def test_paper_ci_resolves_to_the_standins_and_the_preflight_finds_them(standins, monkeypatch):
    import nltk

    from codeswitch.core import preflight

    cfg = load_profile("paper-ci")
    assert cfg.koglish_source == f"{standins}/data/koglish"
    monkeypatch.setattr(nltk.data, "find", lambda name: f"/nltk/{name}")  # benepar's model: an NLTK package, not a stand-in
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
    c = cfg.sections["contrastivemix"]
    en = load_queries("mrtydi", c["mrtydi"], "en", "dev")
    ko = load_queries("mrtydi", c["mrtydi"], "ko", "test")
    assert len(en) > 0 and len(ko) > 0 and set(en.qrels) == {q for q in en.queries}
    assert len(load_collection("miracl", c["miracl_corpus"], "zh")) > 0 and len(load_queries("miracl", c["miracl"], "fa", "dev")) > 0
    assert len(load_train_set(c["train_data"])) > 0
    a = cfg.sections["alignment"]
    assert len(load_parallel(a["parallel_source"], "train", limit=4)) == 4
    assert len(load_pairs(cfg.sections["calbert"]["pretrain"]["pairs"])) > 0


@pytest.mark.slow
def test_notebook_07_runs_under_paper_ci(standins, tmp_path):
    """The paper's code path end to end through papermill: CalBERT's five backbone classes (BERT, RoBERTa,
    DistilBERT, XLM-R, ALBERT) and tokenizers, the IITB corpus as a hub copy, SAIL and IITP in their layouts.

    Only 07 runs here: on 2 CPU cores 02 takes ~3.5 min and 06 ~5 min under paper-ci (the suite's budget is
    15 min); ./reproduce.sh --profile paper-ci --only 02,06 runs them by hand."""
    from codeswitch.core import pipeline

    from .helpers import check_artifacts

    spec = next(s for s in pipeline.available(ROOT) if s.number == "07")
    executed = pipeline.run_notebook(spec, "paper-ci", output_root=tmp_path, root=ROOT, log_output=False)
    pipeline.write_index("paper-ci", output_root=tmp_path, root=ROOT)
    assert executed.is_file()
    check_artifacts(tmp_path / "figures" / "paper-ci", spec)
