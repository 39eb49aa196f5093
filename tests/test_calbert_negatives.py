"""CalBERT's Siamese pre-training as the released script runs it (issue 26, item 2): negatives and added tokens.

``calbert.pretrain.sample_negative`` (with ``negative_sample_size``) builds the released
``sample_negative=True`` examples: a random half of the pairs as label-1 positives, each
with label-0 negatives; ``calbert.pretrain.added_tokens_min_count`` adds the corpus words
seen that often to the tokenizer and resizes the embedding matrix.  Both are off in the
paper profile (the paper's reading) and leave the existing run keys alone.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from codeswitch.calbert.data import Pair, corpus_tokens, released_negatives
from codeswitch.calbert.train import build_siamese_model, siamese_objective
from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError

from .helpers import calbert_stages

PAIRS = [Pair(f"english sentence {i} .", f"hinglish vaakya {i} hai") for i in range(10)]


def test_released_negatives_follow_the_released_script():
    first, second, labels = released_negatives(PAIRS, 2, seed=3)
    english = {p.english for p in PAIRS}
    codemixed = {p.english: p.codemixed for p in PAIRS}
    assert len(first) == len(second) == len(labels) == 5 * (1 + 2 + 2)  # int(0.5 n) positives, each with 2 + 2 negatives
    assert labels == [1.0, 0.0, 0.0, 0.0, 0.0] * 5
    kept = [first[i] for i in range(0, 25, 5)]
    assert len(set(kept)) == 5  # a sample without replacement of the pairs
    for b in range(0, 25, 5):
        t = first[b]
        assert second[b] == codemixed[t]  # the positive: a real pair
        for i in (b + 1, b + 2):  # the translation against another pair's transliteration
            assert first[i] == t and second[i] in codemixed.values() and second[i] != codemixed[t]
        t1, t2 = first[b + 3], first[b + 4]  # other translations t_1, t_2, each paired with t_1 (the released bug)
        assert {t1, t2} <= english and t not in (t1, t2) and t1 != t2
        assert second[b + 3] == t1 and second[b + 4] == t1  # English-English; the first a sentence against itself
    assert released_negatives(PAIRS, 2, seed=3) == (first, second, labels)  # seeded
    assert released_negatives(PAIRS, 2, seed=4) != (first, second, labels)
    with pytest.raises(ValueError, match="cannot draw 2 negative"):
        released_negatives(PAIRS[:2], 2, seed=0)  # one other pair: no 2 negatives to draw


def test_corpus_tokens_are_lowercased_words_seen_min_count_times():
    pairs = [Pair("Mera naam Ravi.", "mera naam ravi hai"), Pair("Ravi is here", "ravi yahan hai")]
    assert corpus_tokens(pairs, 2) == ["mera", "naam", "ravi", "hai"]  # in order of first appearance
    assert corpus_tokens(pairs, 3) == ["ravi"]  # 4 times ("Ravi." is "ravi" and ".")
    assert corpus_tokens(pairs, 1) == ["mera", "naam", "ravi", ".", "is", "here", "hai", "yahan"]
    # a full stop at a text's end is split off; inside a text it stays (no Punkt sentence split: preserve_line)
    assert corpus_tokens([Pair("a b. c.", "d")], 1) == ["a", "b.", "c", ".", "d"]


def test_the_options_rekey_the_pretraining_they_change(tmp_path):
    from codeswitch import calbert as CB

    _, (cosine, mnrl), fine = calbert_stages(tmp_path)
    assert not {"negatives", "added_tokens_min_count"} & (set(cosine.key()) | set(mnrl.key()))  # off: the old keys
    _, (cos2, mnrl2), fine2 = calbert_stages(tmp_path, {"calbert.pretrain.sample_negative": True})
    assert cos2.key()["negatives"] == 2 and cos2.key_hash() != cosine.key_hash()
    assert mnrl2.key_hash() == mnrl.key_hash()  # in-batch negatives read no labels: the option leaves them alone
    changed = {s.key_hash() for s in fine} ^ {s.key_hash() for s in fine2}
    assert len(changed) == 2 * sum(s.variant == "cosine" for s in fine)  # every fine-tuning that starts from it
    _, (cos3, mnrl3), _ = calbert_stages(tmp_path, {"calbert.pretrain.added_tokens_min_count": 5})
    assert cos3.key()["added_tokens_min_count"] == mnrl3.key()["added_tokens_min_count"] == 5
    assert cos3.key_hash() != cosine.key_hash() and mnrl3.key_hash() != mnrl.key_hash()
    for bad, message in (({"calbert.pretrain.negative_sample_size": 0}, "negative_sample_size"),
                         ({"calbert.pretrain.added_tokens_min_count": 0}, "added_tokens_min_count")):
        with pytest.raises(ConfigError, match=message):
            CB.config.load(load_profile("smoke", bad))


def _spec(tmp_path, **overrides):
    cfg, pre, _ = calbert_stages(tmp_path)
    return cfg, dataclasses.replace(pre[0], **overrides)


def test_the_cosine_loss_sees_the_negatives(tmp_path):
    from codeswitch.calbert import experiment as CB

    cfg, spec = _spec(tmp_path, negatives=2)
    pairs, _ = CB.pretraining_pairs(spec, cfg)
    model = build_siamese_model(CB.resolve_backbone(spec.model, cfg), max_seq_length=spec.max_seq_length)
    data, loss = siamese_objective(spec, model, pairs[:8])
    assert len(data) == 4 * 5 and data["label"].count(0.0) == 16  # the dataset the trainer reads holds the negatives
    a = model.preprocess(data["english"])
    b = model.preprocess(data["codemixed"])
    y = torch.tensor(data["label"])
    with torch.no_grad():
        got = float(loss([a, b], y))
        u, v = model(a)["sentence_embedding"], model(b)["sentence_embedding"]
        cos = torch.nn.functional.cosine_similarity(u, v)  # (20,)
    assert got == pytest.approx(float(((y - cos) ** 2).mean()), rel=1e-4)  # (y − cos)², label 0 for the negatives
    assert got != pytest.approx(float(((1 - cos) ** 2).mean()), rel=1e-2)  # not the positives-only loss
    with pytest.raises(ValueError, match="objective 'cosine' only"):
        siamese_objective(dataclasses.replace(spec, objective="mnrl"), model, pairs[:8])
    # notebook 07's one-batch look at both objectives still runs with the option on (it shows label 1 on every pair)
    step = CB.first_batch_losses(spec, cfg, n=4)
    assert step["cosine"] == pytest.approx(float(((1 - torch.diagonal(torch.as_tensor(step["cos"]))) ** 2).mean()), rel=1e-4)


def test_added_tokens_resize_the_embeddings_and_reach_the_checkpoint(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from codeswitch.calbert import experiment as CB
    from codeswitch.calbert.train import siamese_pretrain

    min_count = 1
    cfg, spec = _spec(tmp_path, added_tokens_min_count=min_count, negatives=2, num_train_epochs=1)
    train, heldout = CB.pretraining_pairs(spec, cfg)
    train = train[:8]  # 20 examples: 2 steps
    path = CB.resolve_backbone(spec.model, cfg)
    before = len(AutoTokenizer.from_pretrained(path))
    words = corpus_tokens(train, min_count)
    new = [w for w in words if w not in AutoTokenizer.from_pretrained(path).get_vocab()]
    assert new, "the shipped pairs hold words the backbone's vocabulary lacks"
    with cfg.torch_threads():
        r = siamese_pretrain(spec, path, train, output_dir=tmp_path / "ckpt", heldout=heldout[:4])
    assert r["added_tokens"] == len(words) and r["vocab_size"] == before + len(new)
    assert r["examples"] == int(0.5 * len(train)) * 5
    tok = AutoTokenizer.from_pretrained(tmp_path / "ckpt")  # what fine-tuning reads
    assert len(tok) == before + len(new) and new[0] in tok.tokenize(f"x {new[0]} y")
    clf = AutoModelForSequenceClassification.from_pretrained(tmp_path / "ckpt", num_labels=3)
    assert clf.get_input_embeddings().weight.shape[0] == len(tok)


def test_the_cost_model_counts_the_released_examples():
    """The released negatives turn n pairs into int(n / 2) x (1 + 2k) examples: the cost model's steps follow."""
    from benchmarks.cost import Rates, assumed_report, calbert_hours, _calbert_profile

    rates = Rates.from_report(assumed_report(0.4, 989.0, 20000.0))
    base = calbert_hours(_calbert_profile("paper", {"calbert.scratch.architectures": []}), rates)
    neg = calbert_hours(_calbert_profile("paper", {"calbert.scratch.architectures": [], "calbert.pretrain.sample_negative": True}),
                        rates)
    # 147,731 x 15% = 22,160 pairs -> 11,080 x 5 = 55,400 examples; batch 16, 10 epochs; 5 backbones, cosine only
    per_run = lambda n: math.ceil(n / 16) * 10  # noqa: E731
    assert neg["steps"] - base["steps"] == 5 * (per_run(55_400) - per_run(22_160))
