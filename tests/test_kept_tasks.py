"""Kept models of issue 28, second part: GLUECoS task models (notebook 06), CalBERT's Siamese encoders (notebook 07),
and ``--check``'s estimate of the disk the kept models will take."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from codeswitch.core import kept, publish
from codeswitch.core.profiles import load_profile

SENTENCES = ["yeh movie bahut achhi thi", "I did not like the gaana at all", "kal Delhi mein barish hogi"]
QUESTIONS = (["movie kaisi thi?", "barish kab hogi?"], ["yeh movie bahut achhi thi, I loved it", "kal Delhi mein barish hogi"])

ALIGNMENT_TINY = {"seeds": [1], "alignment.sentiment.num_train_epochs": 2, "alignment.ner.num_train_epochs": 2,
                  "alignment.qa.num_train_epochs": 2}


def _recording(monkeypatch):
    """Record the task model each GLUECoS fine-tuning keeps (the run's own model, its selected epoch's weights)."""
    from codeswitch.alignment import experiment as AE

    models, keep_task_model = [], AE.keep_task_model

    def recording(spec, cfg, model, tokenizer, result):
        models.append((spec, model, tokenizer, result))
        return keep_task_model(spec, cfg, model, tokenizer, result)

    monkeypatch.setattr(AE, "keep_task_model", recording)
    return models


@pytest.mark.parametrize("row, task", [("Baseline", "sentiment"), ("Baseline (rand)", "ner"), ("Baseline (rand)", "qa")])
def test_gluecos_task_model_round_trips_as_its_transformers_head(tmp_path, backbones_dir, monkeypatch, row, task):
    import transformers

    from codeswitch import alignment as A
    from codeswitch.alignment import experiment as AE
    from codeswitch.alignment.gluecos_data import TASKS
    from codeswitch.alignment.gluecos_export import AUTO_CLASSES

    cfg = load_profile("smoke", ALIGNMENT_TINY, output_root=tmp_path)
    _, fine, _ = A.stages(cfg)
    spec = next(s for s in fine if s.row == row and s.task == task)
    models = _recording(monkeypatch)
    folder = AE.kept_model(spec, cfg)  # keep_models: none (smoke): fine-tuned again here, its model kept
    assert len(models) == 1
    _, model, tokenizer, result = models[0]
    meta = kept.read_meta(folder)
    assert meta["row"]["row"] == row and meta["row"]["part"] == task and meta["row"]["table"] == spec.table
    assert meta["format"] == AE.FORMAT_OF[AUTO_CLASSES[TASKS[task].kind]]
    written = publish.export(cfg.runs_dir, tmp_path / "export", notebooks=["06"])
    assert [p.relative_to(tmp_path / "export").as_posix() for p in written] == [kept.Row(**meta["row"]).folder()]
    loaded = getattr(transformers, AUTO_CLASSES[TASKS[task].kind]).from_pretrained(written[0]).eval()
    reloaded_tokenizer = transformers.AutoTokenizer.from_pretrained(written[0])
    if task == "qa":
        enc = tokenizer(*QUESTIONS, padding=True, return_tensors="pt")
    else:
        enc = tokenizer(SENTENCES, padding=True, return_tensors="pt")
        labels = result["labels"]
        assert loaded.config.id2label == dict(enumerate(labels)) and loaded.config.label2id == {n: i for i, n in enumerate(labels)}
    again = reloaded_tokenizer(*(QUESTIONS if task == "qa" else [SENTENCES]), padding=True, return_tensors="pt")
    assert torch.equal(again["input_ids"], enc["input_ids"])  # the kept tokenizer is the run's
    if row == "Baseline (rand)":
        assert model.aligned_head is not None  # the folded linear head (Table 3.2)
    with torch.no_grad():
        ours = model.eval()(**{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")})
        out = loaded(**enc)
        theirs = torch.stack([out.start_logits, out.end_logits], -1) if task == "qa" else out.logits
    np.testing.assert_allclose(theirs.numpy(), ours.numpy(), atol=1e-6)
    # the run's own evaluation scores these weights: the record's validation score is the kept epoch's
    assert result["validation"] == max(r["validation"] for r in result["per_epoch"])
    card = (written[0] / "README.md").read_text(encoding="utf-8")
    assert f"row **{row}**" in card and spec.key_hash() in card and "`gluecos_dir`: `synthetic`" in card
    paper_columns = [c for c, t, _ in AE.TABLES[spec.table].columns if t == task]
    assert meta["paper_columns"] == paper_columns and all(f"| {c} |" in card for c in paper_columns)
    assert AE.kept_model(spec, cfg) == folder and len(models) == 1  # kept: not trained again


def test_gluecos_task_model_with_a_failing_manifest_is_rebuilt_never_exported(tmp_path, backbones_dir, monkeypatch):
    from codeswitch import alignment as A
    from codeswitch.alignment import experiment as AE

    cfg = load_profile("smoke", {**ALIGNMENT_TINY, "alignment.keep_models": "all"}, output_root=tmp_path)
    _, fine, _ = A.stages(cfg)
    spec = next(s for s in fine if s.row == "Baseline" and s.task == "sentiment")
    models = _recording(monkeypatch)
    folder = AE.kept_model(spec, cfg)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(publish.ExportError, match=r"not exported, its files do not match its manifest: model\.safetensors"):
        publish.export(cfg.runs_dir, tmp_path / "export", notebooks=["06"])  # publication: refused, naming the file
    assert not (tmp_path / "export").exists()
    with pytest.warns(UserWarning, match="kept model"):
        assert AE.kept_model(spec, cfg) == folder
    assert len(models) == 2 and kept.kept_ok(folder, spec)


def test_calbert_siamese_encoder_round_trips(tmp_path, backbones_dir):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    from codeswitch import calbert as CB
    from codeswitch.calbert import experiment as calbert
    from codeswitch.calbert import train as CT

    cfg = load_profile("smoke", {"seeds": [1], "calbert.backbones": [{"name": "tiny", "model": "tiny-bert"}],
                                 "calbert.pretrain.num_train_epochs": 1, "calbert.scratch.architectures": []},
                       output_root=tmp_path)
    spec = next(s for s in CB.plan(cfg) if isinstance(s, CB.PretrainRun))
    trained = []
    siamese_pretrain = CT.siamese_pretrain

    def recording(*a, keep=None, **k):
        def keep_and_record(model, result):
            trained.append(model)
            return keep(model, result)

        return siamese_pretrain(*a, keep=keep_and_record if keep else None, **k)

    import unittest.mock

    with unittest.mock.patch.object(calbert, "siamese_pretrain", recording):
        folder = calbert.kept_model(spec, cfg)
    assert len(trained) == 1
    meta = kept.read_meta(folder)
    assert meta["format"] == "sentence-transformers" and meta["row"]["part"] == "siamese encoder"
    assert meta["row"]["table"] == "table6" and meta["row"]["row"] == calbert.row_label("tiny", spec.objective)
    assert "sentence_gap_after" in meta["scores"] or any(k.endswith("_after") for k in meta["scores"])
    written = publish.export(cfg.runs_dir, tmp_path / "export", notebooks=["07"])
    assert [p.relative_to(tmp_path / "export").as_posix() for p in written] == [kept.Row(**meta["row"]).folder()]
    st = SentenceTransformer(str(written[0]))
    np.testing.assert_allclose(st.encode(SENTENCES), trained[0].encode(SENTENCES), atol=1e-6)
    # the same folder as a plain transformers model: the adapted transformer, as fine-tuning reads it
    auto = AutoModel.from_pretrained(written[0]).eval()
    ck = AutoModel.from_pretrained(calbert.checkpoint_dir(cfg, spec)).eval()
    enc = st.tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        np.testing.assert_allclose(auto(**enc).last_hidden_state.numpy(), ck(**enc).last_hidden_state.numpy(), atol=1e-6)
    card = (written[0] / "README.md").read_text(encoding="utf-8")
    assert f"row **{meta['row']['row']}**" in card and spec.key_hash() in card and "AutoModel.from_pretrained(path)" in card
    assert "F1 (val)" not in card  # an encoder stands for no classifier's paper score


def test_check_estimates_the_disk_the_plan_will_keep(tmp_path, backbones_dir):
    """On a profile whose sizes are known (tiny backbones): models x parameters x 4 bytes, per keep_models."""
    from codeswitch.pipeline import preflight
    from codeswitch.core.models import resolve_model
    from transformers import AutoModel

    over = {"glue.seeds": [1, 2], "glue.tasks": ["sst2", "cola"], "glue.backbones": [
        {"name": "tiny-bert", "model": "tiny-bert", "batch_size": 16, "learning_rate": 1e-3}]}
    sizes = {}
    for ref in ("tiny-bert",):
        model = AutoModel.from_pretrained(resolve_model(ref))  # the real model, built: its own parameter count
        sizes[ref] = sum(p.numel() for p in model.parameters()) * 4
    from codeswitch.glue import experiment as G

    rows = {kept.Row(**{**vars(p.row)}).folder() for p in G.kept_plan(load_profile("smoke", over))}
    runs = len(G.kept_plan(load_profile("smoke", over)))
    assert runs == 2 * len(rows)  # two seeds per row
    for setting, n in (("all", runs), ("best", len(rows))):
        prof = load_profile("smoke", {**over, "glue.keep_models": setting}, output_root=tmp_path)
        (est,) = [e for e in preflight.kept_estimates(prof) if e.section == "glue"]
        assert (est.models, est.bytes, est.unknown, est.unsized) == (n, n * sizes["tiny-bert"], (), 0)
    assert preflight.kept_estimates(load_profile("smoke", over)) == []  # keep_models: none everywhere
    # a backbone whose configuration is not here: counted, its size unknown (never guessed)
    prof = load_profile("smoke", {**over, "glue.keep_models": "best",
                                  "glue.backbones": [{"name": "x", "model": "no-such-org/no-such-model", "batch_size": 16, "learning_rate": 1e-3}]}, output_root=tmp_path)
    (est,) = preflight.kept_estimates(prof)
    assert (est.bytes, est.unknown, est.unsized, est.models) == (0, ("no-such-org/no-such-model",), len(rows), len(rows))
    unknown = preflight.render_kept([est], {})  # issue 42: not "≈0.00 GB + 4 of unknown size"
    assert "≈0.00 GB" not in unknown and f"glue: keep_models best, {len(rows)} model(s), size not known: " in unknown, unknown
    assert "no-such-org/no-such-model" in unknown and f"not known for any of the {len(rows)} model(s)" in unknown
    text = preflight.render_kept(preflight.kept_estimates(load_profile("smoke", {**over, "glue.keep_models": "all"})), {})
    assert f"glue: keep_models all, {runs} model(s), ≈{runs * sizes['tiny-bert'] / 1e9:.2f} GB" in text


def test_best_prunes_the_other_seeds_but_not_a_model_a_notebook_asked_for(tmp_path, monkeypatch):
    monkeypatch.delenv(kept.ALSO_VAR, raising=False)
    a, b, c = (type("S", (), {"key_hash": lambda self, k=k: k})() for k in ("aaaa", "bbbb", "cccc"))
    row = kept.Row("alignment", "table3_2", "Baseline (rand)", part="ner")
    for s in (a, b, c):
        kept.kept_dir(tmp_path, s).mkdir(parents=True)
    with kept.keeping(c):
        removed = kept.prune_to_best(tmp_path, [(a, row, 0.5), (b, row, 0.7), (c, row, 0.1)])
    assert removed == [kept.kept_dir(tmp_path, a)] and kept.kept_dir(tmp_path, c).is_dir()
    assert kept.prune_to_best(tmp_path, [(b, row, 0.7), (c, row, 0.1)]) == [kept.kept_dir(tmp_path, c)]
    # a row's part gives it its own folder and its own best
    assert row.folder() == "alignment/table3_2/Baseline-rand-ner"
    assert len(kept.select_best([(a, row, 0.5), (b, kept.Row("alignment", "table3_2", "Baseline (rand)"), 0.1)])) == 2
