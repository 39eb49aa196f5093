"""Alignment training, awesome-align extraction, checkpoints and GLUECoS fine-tuning on tiny models."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from codeswitch.alignment.data import ParallelData, load_parallel
from codeswitch.alignment.train import Aligner, AlignmentArgs, embed_words, encode_words, extract_alignments, load_aligner, save_aligner, train_alignment


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models on a shared CPU: one torch thread avoids contention (as the smoke profile's cpu_threads: 1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(backbones_dir):
    from transformers import AutoTokenizer

    from codeswitch.core.models import resolve_model

    path = resolve_model("tiny-bert")
    return path, AutoTokenizer.from_pretrained(path)


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
    assert extract_alignments(enc, tok, pairs, layer=1) == [[(0, 1), (1, 2), (2, 0)], [(0, 0)]]
    assert extract_alignments(enc, tok, pairs, layer=1, prob_threshold=0.9) == [[(0, 1), (1, 2), (2, 0)], [(0, 0)]]
    with pytest.raises(ValueError, match="align layer 5 does not exist"):
        extract_alignments(enc, tok, pairs, layer=5)


@pytest.mark.parametrize("mode,objective", [("all_layers", "sentence"), ("linear_head", "word")])
def test_alignment_training_restores_the_best_epoch_and_round_trips(tiny, tmp_path, mode, objective):
    from transformers import AutoModel

    path, tok = tiny
    train = load_parallel("synthetic", "train", limit=24)
    valid = load_parallel("synthetic", "validation", limit=8)
    torch.manual_seed(0)
    aligner = Aligner(AutoModel.from_pretrained(path), mode)
    args = AlignmentArgs(mode=mode, objective=objective, lr=1e-2, temperature=0.05, reg_weight=0.1, batch_size=8, max_epochs=2, patience=2, max_length=32)
    h = train_alignment(aligner, tok, train, valid, args, seed=1)
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


def test_word_objective_needs_alignments(tiny):
    from transformers import AutoModel

    path, tok = tiny
    data = ParallelData((("a b", "x y"),), None, "test", "train", "devanagari")
    aligner = Aligner(AutoModel.from_pretrained(path), "all_layers")
    with pytest.raises(ValueError, match="needs word alignments"):
        train_alignment(aligner, tok, data, data, AlignmentArgs(objective="word", max_epochs=1), seed=0)


@pytest.mark.parametrize("task", ["sentiment", "ner", "qa"])
def test_finetune_each_task_kind(tiny, task):
    from transformers import AutoModel

    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_train import FinetuneArgs, finetune

    path, tok = tiny
    data = {k: v[:12] for k, v in load_task(SYNTHETIC_GLUECOS, task).items()}
    args = FinetuneArgs(epochs=2, batch_size=8, lr=1e-3, max_length=64, doc_stride=32)
    head = nn.Linear(64, 64) if task == "ner" else None  # the aligned-head path
    r = finetune(task, data, AutoModel.from_pretrained(path), tok, args, seed=3, aligned_head=head)
    assert [row["epoch"] for row in r["per_epoch"]] == [1, 2]
    assert 0.0 <= r["validation"] <= 100.0 and r["validation"] == max(row["validation"] for row in r["per_epoch"])
    assert (r["test"] is None) == (task == "qa")  # the QA look-alike has no test split
    again = finetune(task, data, AutoModel.from_pretrained(path), tok, args, seed=3, aligned_head=None if head is None else head)
    if head is None:
        assert again["per_epoch"] == r["per_epoch"]  # seeded: the same run twice


def test_alignment_grids_run_with_the_profile_cpu_threads(tmp_path, monkeypatch):
    """run_finetuning (and the run_alignment it starts), as notebook 06 calls them, train under the profile's cpu_threads."""
    from codeswitch.alignment import experiment as A
    from codeswitch.core.profiles import load_profile

    cfg = load_profile("smoke", output_root=tmp_path)
    seen = []
    monkeypatch.setattr(A, "run_grid", lambda cache, configs, fn, desc="": seen.append((desc, torch.get_num_threads())) or [])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # something earlier in the process changed the count
        A.run_finetuning(cfg)
    finally:
        torch.set_num_threads(before)
    assert seen == [("alignment", 1), ("GLUECoS fine-tuning", 1)]


def test_alignment_and_gluecos_training_honour_precision(tiny, monkeypatch):
    """Notebook 06 trains under the profile's precision: the encoder's matmuls run in bf16 autocast (CPU has it)."""
    from transformers import AutoModel

    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_train import FinetuneArgs, finetune

    path, tok = tiny
    seen = []

    def spy(module, args, out):
        seen.append(out.dtype)

    encoder = AutoModel.from_pretrained(path)
    encoder.encoder.layer[0].attention.self.query.register_forward_hook(spy)  # a matmul: autocast runs it in bf16
    train = load_parallel("synthetic", "train", limit=8)
    args = AlignmentArgs(mode="all_layers", objective="sentence", lr=1e-3, batch_size=8, max_epochs=1, patience=1, max_length=32)
    h = train_alignment(Aligner(encoder, "all_layers"), tok, train, train, args, seed=1, amp_dtype=torch.bfloat16)
    assert all(math.isfinite(v) for v in h["valid_loss"]) and set(seen) == {torch.bfloat16}
    seen.clear()
    data = {k: v[:8] for k, v in load_task(SYNTHETIC_GLUECOS, "sentiment").items()}
    r = finetune("sentiment", data, encoder, tok, FinetuneArgs(epochs=1, batch_size=8, lr=1e-3, max_length=64), seed=3, amp_dtype=torch.bfloat16)
    assert math.isfinite(r["validation"]) and set(seen) == {torch.bfloat16}
    seen.clear()
    finetune("sentiment", data, encoder, tok, FinetuneArgs(epochs=1, batch_size=8, lr=1e-3, max_length=64), seed=3)
    assert set(seen) == {torch.float32}  # None: full fp32


def test_alignment_run_keys_carry_the_resolved_precision(tmp_path):
    from codeswitch.alignment import experiment as A
    from codeswitch.core.profiles import load_profile

    cfg = load_profile("smoke", output_root=tmp_path)
    keys = A.align_configs(cfg)
    assert keys and all(k["precision"] == "fp32" for k in keys)
    bf = load_profile("smoke", overrides={"precision": "bf16"}, output_root=tmp_path)
    assert all(k["precision"] == "bf16" for k in A.align_configs(bf))
