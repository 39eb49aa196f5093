"""Compile guards of the packed steps beside ConCSE's (issue 24, item 7), on the CPU: each traces as one graph with
its loss, 0 graph breaks (``torch._dynamo.explain``) — the packed sequence classifier that Koglish-GLUE and CalBERT
fine-tune (``common.packed_classifier``; an epoch of its packed batches also compiles at most one graph per shape,
``torch.compile(fullgraph=True, dynamic=False)`` on the eager backend: tracing only), ContrastiveMix's packed step
(both encoders and the loss) and the packed sentence-alignment step (from its host-prepared batch).  ConCSE's own:
``tests/test_perf_guards.py``."""

from __future__ import annotations

import pytest

from .helpers import assert_compiles_whole
from .test_glue_packing import _pairs
from .test_perf_guards_alignment import spec, tiny  # noqa: F401  (fixtures)


@pytest.mark.parametrize("model_name", ["tiny-bert", "tiny-xlmr"])
def test_packed_classifier_step_compiles_whole_and_once_per_budget(backbones_dir, model_name):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from codeswitch.common.packed_classifier import PackRows, packed_forward
    from codeswitch.core.models import resolve_model

    path = resolve_model(model_name)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2).train()
    packed_forward(model)
    df = _pairs(96, 1)
    enc = tok(list(df["sentence1"]), list(df["sentence2"]), truncation=True, max_length=64)
    rows = [{**{k: enc[k][i] for k in enc}, "labels": int(df["label"][i])} for i in range(len(df))]
    pack = PackRows.for_lengths(tok, [len(r["input_ids"]) for r in rows], batch_size=8, max_length=64, seed=0)
    batches = [pack(rows[i:i + 8]) for i in range(0, len(rows), 8)]  # 12 steps
    budgets_seen = {b["input_ids"].shape for b in batches}
    assert 1 <= len(budgets_seen) <= len(pack.budgets) <= 4

    def step_loss(batch):
        return model(**batch).loss

    assert_compiles_whole(step_loss, *batches)  # one graph; compiled, and once per shape at most


def test_packed_contrastivemix_step_compiles_whole(backbones_dir):
    """ContrastiveMix's packed step (``contrastivemix.packing``): both encoders' forwards and the loss, one graph."""
    from codeswitch.contrastivemix.loss import contrastivemix_loss

    from .test_contrastivemix_packing import _spec, _step_inputs
    from codeswitch.core.encoders import load_dual_encoder
    from codeswitch.core.models import resolve_model

    model, tokenizer = load_dual_encoder(resolve_model("tiny-bert"))
    model.train()
    spec = _spec()
    sides, inputs, _ = _step_inputs(tokenizer, spec, packed=True)

    def step_loss(inputs):
        out = model(**inputs)
        emb = {n: chunk for side, names in sides.items() for n, chunk in zip(names, out[side].split(spec.batch_size))}
        return contrastivemix_loss(emb["query"], emb["pos"], emb["neg"], emb.get("query_mixed"), weight=spec.align_weight,
                                   p_mixed=emb.get("pos_mixed"), n_mixed=emb.get("neg_mixed"))["total"]

    assert_compiles_whole(step_loss, inputs)


def test_packed_sentence_alignment_step_compiles_whole(tiny, spec):  # noqa: F811
    """The packed sentence-alignment (Lc) step, from the host-prepared batch (``PairTokens.batch``): the encoder and its
    frozen copy over the packed pairs, and the loss."""
    import dataclasses

    from transformers import AutoModel

    from codeswitch.alignment.data import load_parallel
    from codeswitch.alignment.train import Aligner, PairTokens, _step_loss

    path, tok = tiny
    args = dataclasses.replace(spec, mode="all_layers", objective="sentence")
    data = load_parallel("synthetic", "train", limit=8)
    aligner = Aligner(AutoModel.from_pretrained(path, attn_implementation="sdpa"), "all_layers")
    aligner.freeze_reference()
    aligner.train()
    prepared = PairTokens.packed(tok, data, args.max_length, batch_size=8, seed=0).batch(list(range(8)))  # on the host

    def step_loss(prepared):
        return _step_loss(aligner, prepared, None, args, "cpu")["total"]

    assert_compiles_whole(step_loss, prepared)
