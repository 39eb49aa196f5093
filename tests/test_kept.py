"""Kept models (issue 28): keep, export, load with the ecosystem's own loader, push to a fake hub."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from codeswitch import concse as C
from codeswitch.concse import experiment as CE
from codeswitch.core import kept, publish
from codeswitch.core.profiles import load_profile, overrides_hash

SENTENCES = ["나는 coffee를 좋아한다", "I like 커피 very much", "the weather is 좋다 today"]

CONCSE_TINY = {
    "seeds": [1],
    "concse.backbones": [dict(name="mBERT-base", model="tiny-bert", simcse_batch_size=16, concse_batch_size=8, learning_rate=1e-3)],
    "concse.num_train_epochs": 1,
    "concse.max_train_rows": 16,
    "concse.max_eval_rows": 24,
}


def test_setting_is_checked_and_changes_no_result_folder():
    with pytest.raises(Exception, match="keep_models must be one of"):
        CE.load(load_profile("smoke", {"concse.keep_models": "some"}))
    assert CE.load(load_profile("smoke")).keep_models == "none"
    assert CE.load(load_profile("paper")).keep_models == "best"
    assert overrides_hash({"concse.keep_models": "all"}) is None  # what is saved, not what is computed


def test_select_best_per_row_ties_to_the_first():
    a, b, c = (type("S", (), {"key_hash": lambda self, k=k: k})() for k in "abc")
    row = kept.Row("concse", "table3", "ConCSE-mBERT-base")
    other = kept.Row("concse", "table3", "SimCSE-mBERT-base")
    best = kept.select_best([(a, row, 70.0), (b, row, 71.0), (c, other, None)])
    assert best[("concse", "table3", "ConCSE-mBERT-base", None)] is b and best[("concse", "table3", "SimCSE-mBERT-base", None)] is c
    assert kept.select_best([(a, row, 70.0), (b, row, 70.0)])[("concse", "table3", "ConCSE-mBERT-base", None)] is a
    # a row with one model per column (a task, a language) keeps one per column
    ko, ar = (kept.Row("contrastivemix", "table1", "NaiveMix", column=col) for col in ("Ko", "Ar"))
    assert len(kept.select_best([(a, ko, 1.0), (b, ar, 0.5), (c, ko, 2.0)])) == 2


def _capture(monkeypatch, module, name):
    """Replace ``module.name`` (a trainer returning ``(model, info)``) by itself, recording the models it returns."""
    got, fn = [], getattr(module, name)

    def wrapped(*a, **k):
        out = fn(*a, **k)
        got.append(out[0])
        return out

    monkeypatch.setattr(module, name, wrapped)
    return got


def test_concse_none_keeps_nothing_all_round_trips(tmp_path, backbones_dir, monkeypatch):
    from sentence_transformers import SentenceTransformer

    import codeswitch.concse.train as T

    cfg = load_profile("smoke", CONCSE_TINY, output_root=tmp_path)
    C.run(cfg, ["table3"])
    assert publish.kept_models(cfg.runs_dir) == []  # keep_models: none (smoke) keeps nothing
    assert not (cfg.runs_dir / "concse" / kept.MODELS).exists()

    out = tmp_path / "out2"
    cfg = load_profile("smoke", {**CONCSE_TINY, "concse.keep_models": "all"}, output_root=out)
    models = _capture(monkeypatch, T, "train_encoder")
    results = C.run(cfg, ["table3"])
    assert len(models) == 2
    found = publish.kept_models(cfg.runs_dir)
    assert len(found) == 2 and {m["row"]["row"] for _, m in found} == {"ConCSE-mBERT-base", "SimCSE-mBERT-base"}
    written = publish.export(cfg.runs_dir, tmp_path / "export", notebooks=["03"])
    assert sorted(p.relative_to(tmp_path / "export").as_posix() for p in written) == [
        "concse/table3/ConCSE-mBERT-base", "concse/table3/SimCSE-mBERT-base"]
    by_row = {s.method: s for s, _ in results}
    for spec, model in zip([s for s, _ in results], models):
        loaded = SentenceTransformer(str(tmp_path / "export" / kept.Row(**kept.read_meta(CE.kept_dir(cfg, spec))["row"]).folder()))
        np.testing.assert_allclose(loaded.encode(SENTENCES), model.encode(SENTENCES), atol=1e-6)
        # trained without a pooler (the embedding never reads it), loaded without one: no weight newly initialised
        assert model[0].auto_model.pooler is None and loaded[0].auto_model.pooler is None
    # the card names its row, its inputs and the scores beside the paper's
    card = (tmp_path / "export" / "concse/table3/ConCSE-mBERT-base" / "README.md").read_text(encoding="utf-8")
    spec = by_row["concse"]
    assert "row **ConCSE-mBERT-base**" in card and spec.key_hash() in card and spec.koglish in card
    assert "| Avg. |" in card and "79.95" not in card.split("| STS-B |")[0]  # a measured row, then the paper's value
    assert "## Fidelity ledger rows that apply" in card and "koglish" in card.lower()


def test_kept_model_is_rebuilt_when_its_manifest_fails_and_never_stale(tmp_path, backbones_dir, monkeypatch):
    import codeswitch.concse.train as T

    cfg = load_profile("smoke", {**CONCSE_TINY, "concse.keep_models": "all"}, output_root=tmp_path)
    results = C.run(cfg, ["table3"])
    spec = next(s for s, _ in results if s.method == "simcse")
    folder = CE.kept_dir(cfg, spec)
    assert kept.kept_ok(folder, spec)
    # a changed weight file: not exported, rebuilt on demand (the run trained again, its record rewritten)
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(publish.ExportError, match=r"not exported, its files do not match its manifest: model\.safetensors"):
        publish.export(cfg.runs_dir, tmp_path / "export")  # publication: refused, naming the file; nothing exported
    assert not (tmp_path / "export").exists()
    trained = _capture(monkeypatch, T, "train_encoder")
    with pytest.warns(UserWarning, match="kept model"):
        assert CE.kept_model(spec, cfg) == folder
    assert len(trained) == 1 and kept.kept_ok(folder, spec)
    # another spec (one setting changed) has another key, hence another folder: the old model is never its model
    other = load_profile("smoke", {**CONCSE_TINY, "concse.keep_models": "all", "concse.num_train_epochs": 2}, output_root=tmp_path)
    spec2 = next(s for s in C.plan(other, ["table3"]) if s.method == "simcse")
    assert CE.kept_dir(other, spec2) != folder and not kept.kept_ok(CE.kept_dir(other, spec2), spec2)
    # a folder of another run copied in place of this one's is refused (its stored key differs)
    shutil.copytree(folder, CE.kept_dir(other, spec2))
    with pytest.warns(UserWarning, match="of another run"):
        assert not kept.kept_ok(CE.kept_dir(other, spec2), spec2)


def test_best_keeps_the_selected_seed_only(tmp_path, backbones_dir):
    cfg = load_profile("smoke", {**CONCSE_TINY, "seeds": [1, 2], "concse.keep_models": "best"}, output_root=tmp_path)
    results = C.run(cfg, ["table3"])
    found = publish.kept_models(cfg.runs_dir)
    assert len(found) == 2  # one per row of Table 3 (two methods), not one per seed
    for _, meta in found:
        row = [(s, r) for s, r in results if f"{'ConCSE' if s.method == 'concse' else 'SimCSE'}-mBERT-base" == meta["row"]["row"]]
        assert meta["row"]["seed"] == max(row, key=lambda sr: (sr[1]["dev"], -sr[0].seed))[0].seed


class FakeHub:
    """A local stand-in of the hub's HfApi: records each repository and the files uploaded to it."""

    def __init__(self, root):
        self.root, self.calls = root, []

    def create_repo(self, repo_id, repo_type="model", private=True, exist_ok=False):
        self.calls.append(("create", repo_id))
        (self.root / repo_id).mkdir(parents=True, exist_ok=exist_ok)

    def upload_folder(self, repo_id, repo_type, folder_path, commit_message=""):
        self.calls.append(("upload", repo_id))
        shutil.copytree(folder_path, self.root / repo_id, dirs_exist_ok=True)


def test_push_to_hub_uploads_each_export_and_needs_a_token(tmp_path, monkeypatch):
    folder = tmp_path / "export" / "concse" / "table3" / "ConCSE-mBERT-base"
    folder.mkdir(parents=True)
    (folder / kept.META).write_text(json.dumps({"row": {"paper": "concse", "table": "table3", "row": "ConCSE-mBERT-base",
                                                        "seed": 1, "rule": ""}, "key_hash": "abc", "git_commit": "x"}))
    (folder / "model.safetensors").write_bytes(b"w")
    hub = FakeHub(tmp_path / "hub")
    assert publish.push_to_hub([folder], "my-org", api=hub) == ["my-org/concse-table3-ConCSE-mBERT-base"]
    assert (tmp_path / "hub" / "my-org/concse-table3-ConCSE-mBERT-base" / "model.safetensors").read_bytes() == b"w"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(PermissionError, match="HF_TOKEN"):
        publish.push_to_hub([folder], "my-org")


def test_contrastivemix_pair_round_trips_and_old_key_is_refused(tmp_path, backbones_dir):
    from sentence_transformers import SentenceTransformer

    from codeswitch import contrastivemix as CM
    from codeswitch.contrastivemix import experiment as CX
    from codeswitch.contrastivemix.config import TrainRun
    from codeswitch.core.encoders import load_dual_encoder
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match="keep_checkpoints.*keep_models"):
        CM.load(load_profile("smoke", {"contrastivemix.keep_checkpoints": True}))
    cfg = load_profile("smoke", {"contrastivemix.train_max_queries": 32}, output_root=tmp_path)
    spec = next(s for s in CM.plan(cfg) if isinstance(s, TrainRun) and s.variant == "contrastivemix")
    folder = CX.keep_model(spec, cfg)  # trains it (no checkpoint yet), keeps it from the checkpoint the evaluations read
    meta = kept.read_meta(folder)
    assert meta["format"] == "sentence-transformers-pair" and meta["row"]["column"] == "Ko" and meta["row"]["table"] == "table1"
    model, tokenizer = load_dual_encoder(CX.checkpoint_dir(cfg, spec))  # what the run's evaluation encodes with
    enc_q, enc_p = CX.encoders(model, tokenizer, cfg, query_max_length=spec.query_max_length,
                               passage_max_length=spec.passage_max_length, batch_size=2, sort_window=0)
    written = publish.export(cfg.runs_dir, tmp_path / "export", notebooks=["05"])
    assert [p.relative_to(tmp_path / "export").as_posix() for p in written] == ["contrastivemix/table1/ContrastiveMix-ours-Ko"]
    for side, enc in (("query", enc_q), ("passage", enc_p)):
        st = SentenceTransformer(str(written[0] / side))
        np.testing.assert_allclose(st.encode(SENTENCES), enc(SENTENCES), atol=1e-6)
    card = (written[0] / "README.md").read_text(encoding="utf-8")
    assert "ContrastiveMix (ours) (Ko)" in card and "| Ko | — | 38.43 |" in card  # no evaluation cached yet; the paper's cell


def test_calbert_classifier_round_trips_with_its_label_maps(tmp_path, backbones_dir, monkeypatch):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from codeswitch import calbert as CB
    from codeswitch.calbert import experiment as calbert
    from codeswitch.common.sentiment import LABELS

    cfg = load_profile("smoke", {"seeds": [1], "calbert.backbones": [{"name": "tiny", "model": "tiny-bert"}],
                                 "calbert.sail.num_train_epochs": 1, "calbert.sail.max_seq_length": 16,
                                 "calbert.scratch.architectures": []}, output_root=tmp_path)
    spec = next(s for s in CB.plan(cfg) if isinstance(s, CB.FinetuneRun) and s.task == "sail" and s.variant == "none")
    models, fine_tune = [], calbert.finetune_classifier

    def recording(*a, keep=None, **k):
        def keep_and_record(model, tokenizer, results):
            models.append((model, tokenizer))
            return keep(model, tokenizer, results)

        return fine_tune(*a, keep=keep_and_record if keep else None, **k)

    monkeypatch.setattr(calbert, "finetune_classifier", recording)
    folder = calbert.kept_model(spec, cfg)  # keep_models: none (smoke), so the run is fine-tuned again here and kept
    assert len(models) == 1
    meta = kept.read_meta(folder)
    assert meta["row"] == {"paper": "calbert", "table": "table7", "row": "tiny", "seed": 1, "rule": calbert.SELECTION_RULE,
                           "column": None, "part": None}
    assert "f1 (validation)" in meta["scores"]
    written = publish.export(cfg.runs_dir, tmp_path / "export", notebooks=["07"])
    assert [p.relative_to(tmp_path / "export").as_posix() for p in written] == ["calbert/table7/tiny"]
    loaded = AutoModelForSequenceClassification.from_pretrained(written[0]).eval()
    assert loaded.config.id2label == dict(enumerate(LABELS)) and loaded.config.label2id == {n: i for i, n in enumerate(LABELS)}
    model, tokenizer = models[0]
    enc = AutoTokenizer.from_pretrained(written[0])(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        np.testing.assert_allclose(loaded(**enc).logits.numpy(), model.eval().cpu()(**enc).logits.numpy(), atol=1e-6)
    assert calbert.kept_model(spec, cfg) == folder and len(models) == 1  # kept: not trained again
    # the command line: ./reproduce.sh export --profile smoke --only 07 DIR [--push-to-hub ORG], and --check's disk line
    import huggingface_hub

    from codeswitch.pipeline import cli as pipeline

    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    hub = FakeHub(tmp_path / "hub")
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: hub if token == "t0ken" else pytest.fail("token"))
    monkeypatch.setenv("HF_TOKEN", "t0ken")
    sets = [a for k, v in {"seeds": [1], "calbert.backbones": [{"name": "tiny", "model": "tiny-bert"}], "calbert.sail.num_train_epochs": 1,
                           "calbert.sail.max_seq_length": 16, "calbert.scratch.architectures": [], "offline": False}.items()
            for a in ("--set", f"{k}={json.dumps(v)}")]  # the run's own --set values: export exports its plan's models
    assert pipeline.main(["export", "--profile", "smoke", "--only", "07", str(tmp_path / "cli"), *sets, "--push-to-hub", "org"]) == 0
    assert (tmp_path / "cli" / "calbert/table7/tiny/README.md").is_file()
    assert (tmp_path / "hub" / "org/calbert-table7-tiny" / "config.json").is_file()
    assert pipeline.main(["export", "--profile", "smoke", "--only", "03", str(tmp_path / "none")]) == 1  # nothing kept there
    assert "already kept: calbert 1 (" in pipeline._kept_models_line(load_profile("smoke"))


def test_glue_classifier_keeps_the_best_epoch_with_label_names(tmp_path, backbones_dir, monkeypatch):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from codeswitch.glue import experiment as G, plan

    cfg = load_profile("smoke", {"seeds": [1], "glue.tasks": ["sst2"], "glue.backbones": [
        {"name": "tiny-bert", "model": "tiny-bert", "batch_size": 16, "learning_rate": 6.0e-3}], "glue.num_train_epochs": 2,
        "glue.max_train_samples": 64, "glue.max_eval_samples": 32}, output_root=tmp_path)
    spec = next(s for s in plan(cfg) if s.train == "en")
    models, fine_tune = [], G.fine_tune

    def recording(*a, keep=None, **k):
        def keep_and_record(model, tokenizer, result):
            models.append(model)
            return keep(model, tokenizer, result)

        return fine_tune(*a, keep=keep_and_record if keep else None, **k)

    monkeypatch.setattr(G, "fine_tune", recording)
    folder = G.kept_model(spec, cfg)
    meta = kept.read_meta(folder)
    assert meta["row"]["row"] == "EN2EN · tiny-bert" and meta["row"]["column"] == "SST-2" and meta["notebook"] == "02"
    loaded = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    assert loaded.config.id2label == {0: "negative", 1: "positive"}
    enc = AutoTokenizer.from_pretrained(folder)(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        np.testing.assert_allclose(loaded(**enc).logits.numpy(), models[0].eval().cpu()(**enc).logits.numpy(), atol=1e-6)


def test_alignment_backbone_round_trips_as_auto_model(tmp_path, backbones_dir):
    from transformers import AutoModel, AutoTokenizer

    from codeswitch import alignment as A
    from codeswitch.alignment import experiment as AE
    from codeswitch.alignment.train import load_aligner

    cfg = load_profile("smoke", {"alignment.all_layers.num_train_epochs": 1}, output_root=tmp_path)
    aligns, _, _ = A.stages(cfg)
    spec = next(s for s in aligns if s.mode == "all_layers")
    folder = AE.kept_model(spec, cfg)
    meta = kept.read_meta(folder)
    assert meta["format"] == "auto-model" and meta["row"]["table"] == "table3_1" and meta["notebook"] == "06"
    encoder, head = load_aligner(AE.checkpoint_dir(cfg, spec), "unused")  # what fine-tuning starts from
    assert head is None
    loaded = AutoModel.from_pretrained(folder).eval()
    enc = AutoTokenizer.from_pretrained(folder)(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        np.testing.assert_allclose(loaded(**enc).last_hidden_state.numpy(), encoder.eval()(**enc).last_hidden_state.numpy(),
                                   atol=1e-6)


def test_every_checkpoint_a_profile_names_has_its_licence():
    """Every real checkpoint the paper and quick profiles name (a backbone's ``model``, 01's translator) and the bundled
    MiniLM that quick-local runs has an entry in BACKBONE_LICENCES: the model cards and docs/quick.md state it."""
    from codeswitch.core.kept import BACKBONE_LICENCES
    from codeswitch.core.deltas import read_profile_data
    from codeswitch.pipeline.quick_local import MINILM

    def models(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("model", "hf_model") and isinstance(value, str):
                    yield value
                else:
                    yield from models(value)
        elif isinstance(node, list):
            for value in node:
                yield from models(value)

    root = Path(__file__).resolve().parents[1]
    named = {MINILM} | {m for name in ("paper", "quick") for m in models(read_profile_data(root / "configs" / f"{name}.yaml", root))}
    assert len(named) >= 10 and {"facebook/mbart-large-50", "ai4bharat/indic-bert", MINILM} <= named
    assert sorted(named - set(BACKBONE_LICENCES)) == []
