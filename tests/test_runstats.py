"""codeswitch.core.runstats: what a run used, stored beside its result (steps, sequences, non-padding tokens; GPU peak)."""

from __future__ import annotations

import json

import pytest


def _tiny_bert():
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32))


def test_counts_steps_sequences_and_non_padding_tokens(monkeypatch):
    import torch

    from codeswitch.core import runstats

    monkeypatch.setenv(runstats.ENV_VAR, "1")
    model = _tiny_bert()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.ones(3, 5, dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    with runstats.measure() as stats:
        model(input_ids=ids, attention_mask=mask)  # the first forward of a model registers its hook: not counted
        for _ in range(2):
            model(input_ids=ids, attention_mask=mask).last_hidden_state.sum().backward()
            opt.step()
        with torch.no_grad():
            model(input_ids=ids[:2], attention_mask=mask[:2])
    d = stats.as_dict()
    assert d["optimizer_steps"] == 2
    assert (d["train_forwards"], d["train_sequences"], d["train_tokens"]) == (2, 6, 18)
    assert (d["eval_forwards"], d["eval_sequences"], d["eval_tokens"]) == (1, 2, 8)
    embeddings = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding))
    assert d["params"] == {"BertModel": sum(p.numel() for p in model.parameters()) - embeddings}
    assert d["models"] == {"BertModel": {"params": d["params"]["BertModel"], "train_tokens": 18, "eval_tokens": 8}}
    assert d["train_span_s"] >= 0 and d["device"] == "cpu" and d["peak_memory_bytes"] is None
    assert (d["input_devices"], d["autocast"], d["max_train_batch"], d["max_eval_batch"]) == (["cpu"], ["off"], 3, 2)
    with runstats.measure() as after:  # hooks are removed with the last measured run; a later run counts afresh
        model(input_ids=ids, attention_mask=mask)
    assert after.as_dict()["train_forwards"] == 1 and after.as_dict()["optimizer_steps"] == 0


def test_off_by_default_and_stored_beside_the_result(tmp_path, monkeypatch):
    from codeswitch.core import runstats
    from codeswitch.core.runs import RunCache

    monkeypatch.delenv(runstats.ENV_VAR, raising=False)
    cache = RunCache(tmp_path)
    assert cache.run({"a": 1}, lambda: {"x": 1.0}) == {"x": 1.0}
    record = json.loads(cache.path({"a": 1}).read_text())
    assert "optimizer_steps" not in record.get("stats", {})
    monkeypatch.setenv(runstats.ENV_VAR, "1")
    cache.run({"a": 2}, lambda: {"x": 2.0})
    record = json.loads(cache.path({"a": 2}).read_text())
    assert record["stats"]["optimizer_steps"] == 0 and record["result"] == {"x": 2.0}
    assert cache.get({"a": 2}) == {"x": 2.0}  # the stats are outside the checksum


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_peak_memory_on_cuda():
    import torch

    from codeswitch.core import runstats

    with runstats.measure() as stats:
        x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        del x
    assert stats.peak_memory_bytes >= 64 << 20 and stats.device


def test_counts_sentence_transformers_forwards(tmp_path, monkeypatch):
    """sentence-transformers calls its transformers model's forward directly, past module hooks (found on the GPU:
    ConCSE records without forwards); its Transformer module is counted instead, once, with the features' mask."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertTokenizerFast

    from codeswitch.core import runstats

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]) + "\n")
    _tiny_bert().save_pretrained(tmp_path / "m")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(tmp_path / "m")
    word = models.Transformer(str(tmp_path / "m"), max_seq_length=8)
    st = SentenceTransformer(modules=[word, models.Pooling(word.get_word_embedding_dimension(), "cls")], device="cpu")
    monkeypatch.setenv(runstats.ENV_VAR, "1")
    features = st.tokenize(["a b c", "a"])  # 5 and 3 tokens with [CLS]/[SEP]
    with runstats.measure() as stats:
        st(dict(features))["sentence_embedding"].sum().backward()
        with torch.no_grad():
            st(dict(features))
    d = stats.as_dict()
    assert (d["train_forwards"], d["train_sequences"], d["train_tokens"]) == (1, 2, 8)
    assert (d["eval_forwards"], d["eval_sequences"], d["eval_tokens"]) == (1, 2, 8)
    assert list(d["params"]) == ["BertModel"] and d["input_devices"] == ["cpu"]


def test_nested_runs_with_equal_stats_each_leave_their_own(monkeypatch):
    """A run inside a run (ContrastiveMix's training inside its evaluation): both stats start equal, and leaving the
    inner one must not remove the outer one (list.remove compares by ==: notebook 05 failed with 'x not in list')."""
    from codeswitch.core import runstats

    monkeypatch.delenv(runstats.ENV_VAR, raising=False)
    with runstats.measure() as outer:
        with runstats.measure() as inner:
            assert inner == outer and inner is not outer
        assert runstats._ACTIVE == [outer] and runstats._ACTIVE[0] is outer
    assert runstats._ACTIVE == []


def test_reads_the_autocast_that_accelerate_enters_inside_the_forward(monkeypatch):
    """The HF Trainer's mixed precision (accelerate) wraps the model's ``forward`` in autocast, past the model's own
    hooks: read from there, GLUE, ConCSE and CalBERT fine-tuning records said ``autocast: off`` on the GPU while they
    trained in bf16.  The same wrapping on the CPU (bf16 autocast) shows it."""
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from codeswitch.core import runstats

    monkeypatch.setenv(runstats.ENV_VAR, "1")
    AcceleratorState._reset_state(reset_partial_state=True)  # a singleton: an earlier test in this worker set it up
    try:
        model = Accelerator(mixed_precision="bf16", cpu=True).prepare_model(_tiny_bert())
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)  # leave none behind for the next test
    ids = torch.ones(2, 4, dtype=torch.long)
    with runstats.measure() as stats:
        model(input_ids=ids)  # registers the model's hook
        model(input_ids=ids).last_hidden_state.sum().backward()
    assert stats.as_dict()["autocast"] == ["bfloat16"]
    with runstats.measure() as plain, torch.no_grad():  # eval forwards record no autocast; nothing left pending
        model(input_ids=ids)
    assert plain.as_dict()["autocast"] == [] and runstats._AMP_PENDING[0] is None
