"""Alignment training, awesome-align extraction, checkpoints and GLUECoS fine-tuning on tiny models."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from codeswitch.alignment.data import ParallelData, load_parallel
from codeswitch.alignment.evaluate import embed_words, extract_alignments
from codeswitch.alignment.train import Aligner, encode_words, load_aligner, save_aligner, train_alignment

from .helpers import alignment_smoke, tiny_bert


EXTRACTION = {"softmax_threshold": 1e-3, "prob_threshold": None, "max_length": 128}  # awesome-align's threshold; no probability filter


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models on a shared CPU: one torch thread avoids contention (as the smoke profile's cpu_threads: 1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def specs():
    """The smoke profile's specs (alignment, fine-tuning): tests change a few fields with dataclasses.replace."""
    _, aligns, fine, _ = alignment_smoke()
    return aligns, fine


def align_spec(specs, **changes):
    import dataclasses

    return dataclasses.replace(specs[0][0], **changes)


@pytest.fixture(scope="module")
def tiny(backbones_dir):
    return tiny_bert()


class OneHotEncoder(nn.Module):
    """A stand-in encoder whose every layer maps token t to 10·e_t: equal tokens have similarity 100, others 0."""

    def __init__(self, vocab: int):
        super().__init__()
        self.config = SimpleNamespace(hidden_size=vocab)
        self.vocab = vocab

    def forward(self, input_ids, attention_mask=None, output_hidden_states=False):
        h = 10.0 * nn.functional.one_hot(input_ids, self.vocab).float()  # (B, T, V)
        return SimpleNamespace(last_hidden_state=h, hidden_states=(h, h, h), pooler_output=None)


def test_encode_words_keeps_word_membership(tiny):
    _, tok = tiny
    b = encode_words(tok, [["water", "pAnI"], ["a"]], max_length=32)
    assert b.word_index.shape == b.input_ids.shape and b.n_words == 2
    row = b.word_index[0].tolist()
    assert row[0] == -1 and sorted(set(row) - {-1}) == [0, 1]  # [CLS] belongs to no word
    assert b.word_index[1][b.attention_mask[1] == 0].eq(-1).all()  # padding belongs to no word


def test_extractor_on_a_tiny_example(tiny):
    _, tok = tiny
    enc = OneHotEncoder(len(tok))
    pairs = [("water book house", "house water book"), ("water tree", "water")]
    # Identical words share sub-words, hence similarity; an unmatched word's column/row loses the softmax.
    assert extract_alignments(enc, tok, pairs, layer=1, **EXTRACTION) == [[(0, 1), (1, 2), (2, 0)], [(0, 0)]]
    assert extract_alignments(enc, tok, pairs, layer=1, **(EXTRACTION | {"prob_threshold": 0.9})) == [[(0, 1), (1, 2), (2, 0)], [(0, 0)]]
    with pytest.raises(ValueError, match="align layer 5 does not exist"):
        extract_alignments(enc, tok, pairs, layer=5, **EXTRACTION)


@pytest.mark.parametrize("mode,objective", [("all_layers", "sentence"), ("linear_head", "word")])
def test_alignment_training_restores_the_best_epoch_and_round_trips(tiny, specs, tmp_path, mode, objective):
    from transformers import AutoModel

    path, tok = tiny
    train = load_parallel("synthetic", "train", limit=24)
    valid = load_parallel("synthetic", "validation", limit=8)
    torch.manual_seed(0)
    aligner = Aligner(AutoModel.from_pretrained(path), mode)
    args = align_spec(specs, mode=mode, objective=objective, learning_rate=1e-2, temperature=0.05, reg_weight=0.1, batch_size=8,
                      num_train_epochs=2, patience=2, max_length=32, seed=1)
    h = train_alignment(aligner, tok, train, valid, args)
    assert h["epochs_run"] == 2 and h["steps"] == 6 and all(math.isfinite(v) for v in h["valid_loss"])
    best = min([h["initial_valid_loss"], *h["valid_loss"]])
    assert h["best_valid_loss"] == pytest.approx(best)
    if mode == "linear_head":  # only the head trains; the encoder stays the initial one
        fresh = AutoModel.from_pretrained(path)
        assert all(torch.equal(a, b) for a, b in zip(aligner.encoder.state_dict().values(), fresh.state_dict().values()))
    folder = save_aligner(aligner, tok, tmp_path / "aligned")
    encoder, head = load_aligner(folder, path)
    assert (head is None) == (mode == "all_layers")
    again = Aligner(encoder, mode, head=head)
    sents, targets = ["The boy drinks water.", "लड़का पानी पीता है।"], [3, 1]
    assert torch.allclose(embed_words(aligner, tok, sents, targets), embed_words(again, tok, sents, targets), atol=1e-6)


def test_alignment_training_is_deterministic(tiny, tmp_path):
    """One alignment run (run_one, as notebook 06 runs it), twice from scratch into two output roots with the global
    random state changed in between, gives the same record and the same weights bit for bit.  The suite's determinism
    test (tests/test_notebooks.py) reruns notebooks 02 and 07 only: notebook 06's trainer is checked here, on a tiny
    model."""
    import random

    from codeswitch import alignment as A
    from codeswitch.alignment import experiment as AE

    def run(root, noise):
        cfg, aligns, _, _ = alignment_smoke({"alignment.all_layers.num_train_epochs": 1}, output_root=root)
        spec = next(s for s in aligns if s.mode == "all_layers")
        torch.manual_seed(noise), random.seed(noise)  # run_one seeds what it draws: the state before it must not matter
        record = A.run_one(spec, cfg)
        weights = {p.relative_to(AE.checkpoint_dir(cfg, spec)): p.read_bytes() for p in sorted(AE.checkpoint_dir(cfg, spec).rglob("*"))
                   if p.is_file() and p.suffix in (".safetensors", ".bin", ".pt")}
        return record, weights

    (r1, w1), (r2, w2) = run(tmp_path / "a", 1), run(tmp_path / "b", 2)
    timing = {"seconds", "wall_s", "train_seconds", "elapsed"}
    assert {k: v for k, v in r1.items() if k not in timing} == {k: v for k, v in r2.items() if k not in timing}
    assert w1 and w1 == w2


def test_word_objective_needs_alignments(tiny, specs):
    from transformers import AutoModel

    path, tok = tiny
    data = ParallelData((("a b", "x y"),), None, "test", "train", "devanagari")
    aligner = Aligner(AutoModel.from_pretrained(path), "all_layers")
    with pytest.raises(ValueError, match="needs word alignments"):
        train_alignment(aligner, tok, data, data, align_spec(specs, objective="word", num_train_epochs=1, seed=0))


def test_heldout_word_p1_is_undefined_without_aligned_word_pairs_and_says_so(tiny):
    """Paper-ci's 06: no held-out link survived extraction, so word P@1 is nan, and the count beside it says why."""
    from transformers import AutoModel

    from codeswitch.alignment.evaluate import heldout_retrieval

    path, tok = tiny
    pairs = (("a good movie", "x y z"), ("the cat", "u v"))
    aligner = Aligner(AutoModel.from_pretrained(path), "all_layers")
    none = heldout_retrieval(aligner, tok, ParallelData(pairs, None, "test", "valid", "devanagari"), max_length=16)
    empty = heldout_retrieval(aligner, tok, ParallelData(pairs, ([], []), "test", "valid", "devanagari"), max_length=16)
    linked = heldout_retrieval(aligner, tok, ParallelData(pairs, ([(0, 0), (2, 2)], [(1, 1)]), "test", "valid", "devanagari"),
                               max_length=16)
    for out in (none, empty):
        assert out["word_pairs"] == 0 and math.isnan(out["word_p1"]) and 0 <= out["sentence_p1"] <= 1
    assert linked["word_pairs"] == 3 and 0 <= linked["word_p1"] <= 1


@pytest.mark.parametrize("task", ["sentiment", "ner", "qa"])
def test_finetune_each_task_kind(tiny, specs, task):
    import dataclasses

    from transformers import AutoModel

    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_train import finetune

    path, tok = tiny
    data = {k: v[:12] for k, v in load_task(SYNTHETIC_GLUECOS, task).items()}
    base = next(s for s in specs[1] if s.task == task)
    args = dataclasses.replace(base, num_train_epochs=2, batch_size=8, learning_rate=1e-3, max_length=64, doc_stride=32, warmup_ratio=0.1,
                               seed=3)
    head = nn.Linear(64, 64) if task == "ner" else None  # the aligned-head path
    r = finetune(task, data, AutoModel.from_pretrained(path), tok, args, aligned_head=head)
    assert [row["epoch"] for row in r["per_epoch"]] == [1, 2]
    assert 0.0 <= r["validation"] <= 100.0 and r["validation"] == max(row["validation"] for row in r["per_epoch"])
    assert (r["test"] is None) == (task == "qa")  # the QA look-alike has no test split
    again = finetune(task, data, AutoModel.from_pretrained(path), tok, args, aligned_head=None if head is None else head)
    if head is None:
        assert again["per_epoch"] == r["per_epoch"]  # seeded: the same run twice


def test_alignment_grids_run_with_the_profile_cpu_threads(tmp_path, monkeypatch):
    """alignment.run (as notebook 06 calls it) trains every stage under the profile's cpu_threads."""
    from codeswitch import alignment as A
    from codeswitch.core import experiment as CE
    from codeswitch.core.profiles import load_profile

    cfg = load_profile("smoke", output_root=tmp_path)
    seen = []
    # every stage's grid goes through core.experiment.run_specs (Stage.run)
    monkeypatch.setattr(CE, "run_specs", lambda specs, fn, profile, cache_dir, desc: seen.append((desc, torch.get_num_threads()))
                        or CE.Results(tuple(specs), tuple({} for _ in specs)))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # something earlier in the process changed the count
        A.run(cfg)
    finally:
        torch.set_num_threads(before)
    assert seen == [("alignment", 1), ("GLUECoS fine-tuning", 1), ("Figure 3.1", 1)]


def test_an_align_layer_the_backbone_lacks_stops_the_run_before_anything_trains(tmp_path, monkeypatch):
    """alignment.align_layer is checked against each backbone's depth when alignment.run starts: a layer the backbone
    lacks is a ConfigError naming the key and the depth, and no stage runs (before, the extraction check found it
    after the whole grid)."""
    from codeswitch import alignment as A
    from codeswitch.core import experiment as CE
    from codeswitch.core.deltas import parse_overrides
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    seen = []
    monkeypatch.setattr(CE, "run_specs", lambda specs, fn, profile, cache_dir, desc: seen.append(desc)
                        or CE.Results(tuple(specs), tuple({} for _ in specs)))
    for layer in (0, 2):  # tiny-bert-mlm's 2 layers: hidden states 0..2
        A.run(load_profile("smoke", overrides=parse_overrides([f"alignment.align_layer={layer}"]), output_root=tmp_path))
    assert seen == ["alignment", "GLUECoS fine-tuning", "Figure 3.1"] * 2
    seen.clear()
    with pytest.raises(ConfigError, match=r"alignment\.align_layer = 3 .*tiny-bert-mlm.*2 layers, hidden states 0\.\.2") as e:
        A.run(load_profile("smoke", overrides=parse_overrides(["alignment.align_layer=3"]), output_root=tmp_path))
    assert e.value.path == ("alignment", "align_layer") and "smoke.yaml" in str(e.value)
    assert seen == []


def test_run_one_aligns_saves_and_a_later_stage_realigns_missing_weights(tiny, tmp_path, monkeypatch):
    """run_one on an AlignRun writes its weights under its key; a FinetuneRun whose weights are gone aligns first."""
    import dataclasses

    from codeswitch import alignment as A
    from codeswitch.alignment import experiment as AE

    cfg, _, fine, _ = alignment_smoke({"alignment.linear_head.num_train_epochs": 1}, output_root=tmp_path)
    tuned = next(s for s in fine if s.alignment is not None and s.alignment.mode == "linear_head" and s.task == "ner")
    tuned = dataclasses.replace(tuned, num_train_epochs=1)
    record = A.run_one(tuned.alignment, cfg)
    assert record["checkpoint"] == tuned.alignment.key_hash() and record["epochs_run"] == 1
    folder = AE.checkpoint_dir(cfg, tuned.alignment)
    assert (folder / "aligner.json").is_file()

    import shutil

    shutil.rmtree(folder)
    calls = []
    real = AE._align
    monkeypatch.setattr(AE, "_align", lambda spec, profile, c: calls.append(spec) or real(spec, profile, c))
    out = A.run_one(tuned, cfg)
    assert calls == [tuned.alignment] and (folder / "aligner.json").is_file()
    assert 0.0 <= out["validation"] <= 100.0 and [r["epoch"] for r in out["per_epoch"]] == [1]


def test_alignment_run_keys_carry_the_resolved_precision(tmp_path):
    """A bf16 run is not an fp32 one: the resolved precision is in every alignment and fine-tuning key."""
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    def precisions(cfg):
        specs = [s for stage in A.stages(cfg) for s in stage]
        return {s.key()["precision"] for s in specs if "precision" in s.key()}

    assert precisions(load_profile("smoke", output_root=tmp_path)) == {"fp32"}
    assert precisions(load_profile("smoke", overrides={"precision": "bf16"}, output_root=tmp_path)) == {"bf16"}
