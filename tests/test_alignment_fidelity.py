"""Issue 18 item 4: the alignment paper's inputs as the authors had them.

* Lm's distance: 1 − cos (default) or the squared L2 of Wu & Dredze (``word_distance: l2``);
* GLUECoS's lower-casing tokenizer (``<task>.do_lower_case``), refused where a tokenizer cannot lower-case;
* the authors' own romanised text where their files provide it, ITRANS only where generated
  (``romanisation: authors | itrans``);
* awesome-align's extraction and probability filter, against a batched re-computation written
  from awesome-align's description (padded batch, additive masks, softmax in both directions).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from codeswitch.alignment import config as acfg
from codeswitch import alignment as ae
from codeswitch.alignment.data import ROMANISATIONS, load_lexicon, load_parallel, roman_text_source
from codeswitch.alignment.loss import word_alignment_loss
from codeswitch.core.profiles import load_profile

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "cfilt_en_hi"


# --------------------------------------------------------------------------- Lm's distance
def test_word_distance_l2_is_the_mean_squared_euclidean_distance():
    x = torch.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    y = torch.tensor([[3.0, 4.0], [1.0, 1.0], [0.0, 1.0]])
    anchors = torch.randn(4, 2)
    l2 = word_alignment_loss(x, y, anchors, anchors.clone(), reg_weight=1.0, distance="l2")
    assert float(l2["alignment"]) == pytest.approx((25 + 0 + 2) / 3)
    cos = word_alignment_loss(x, y, anchors, anchors.clone(), reg_weight=1.0)
    # 1 − cos: [0,0] vs [3,4] has cos 0 (zero vector, eps), equal vectors 0, orthogonal 1
    assert float(cos["alignment"]) == pytest.approx((1 + 0 + 1) / 3, abs=1e-6)
    assert float(l2["total"]) == pytest.approx(float(l2["alignment"]), abs=1e-6)  # reg 0: anchors unchanged
    with pytest.raises(ValueError, match="distance must be one of"):
        word_alignment_loss(x, y, anchors, anchors, reg_weight=1.0, distance="l1")


def test_word_distance_reaches_the_word_run_specs_only():
    paper = ae.plan(load_profile("paper"))
    words = [s for s in paper if isinstance(s, acfg.AlignRun) and s.objective == "word"]
    sentences = [s for s in paper if isinstance(s, acfg.AlignRun) and s.objective == "sentence"]
    assert words and sentences
    assert {s.word_distance for s in words} == {"cosine"} and {s.word_distance for s in sentences} == {None}
    l2 = ae.plan(load_profile("paper", overrides={"alignment.word_distance": "l2"}))
    assert {s.word_distance for s in l2 if isinstance(s, acfg.AlignRun) and s.objective == "word"} == {"l2"}
    with pytest.raises(Exception, match="word_distance"):
        acfg.load(load_profile("paper", overrides={"alignment.word_distance": "euclid"}))


# --------------------------------------------------------------------------- lower-casing
def _bert_tokenizer(folder: Path, *, lowercase: bool) -> Path:
    from transformers import BertTokenizer  # transformers 5: the fast (tokenizers) implementation

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "A", "a", "É", "e", "न", "म", "स", "त", "े", "्", "##स", "##्", "##त", "##े"]
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=lowercase, strip_accents=None)
    out = folder / ("lower" if lowercase else "cased")
    tok.save_pretrained(out)
    return out


def test_load_tokenizer_lower_cases_a_cased_bert_tokenizer_as_gluecos_does(tmp_path):
    from codeswitch.alignment.gluecos_train import load_tokenizer

    path = _bert_tokenizer(tmp_path, lowercase=False)
    cased = load_tokenizer(str(path), do_lower_case=False)
    lower = load_tokenizer(str(path), do_lower_case=True)
    assert cased.tokenize("A É") == ["A", "É"]
    assert lower.tokenize("A É") == ["a", "e"]
    # accent stripping removes Unicode Mn: the virama (U+094D) and the vowel sign e (U+0947) go
    assert cased.backend_tokenizer.normalizer.normalize_str("नमस्ते") == "नमस्ते"
    assert lower.backend_tokenizer.normalizer.normalize_str("नमस्ते") == "नमसत"  # virama and vowel sign e (Mn) gone


def test_load_tokenizer_refuses_a_tokenizer_that_cannot_lower_case(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from codeswitch.alignment.gluecos_train import load_tokenizer

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    bpe.train_from_iterator(["A a É e"] * 4, trainers.BpeTrainer(vocab_size=40, special_tokens=["<unk>"], show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>").save_pretrained(tmp_path / "bpe")
    assert load_tokenizer(str(tmp_path / "bpe"), do_lower_case=False) is not None
    with pytest.raises(ValueError, match="does not lower-case"):
        load_tokenizer(str(tmp_path / "bpe"), do_lower_case=True)


def test_do_lower_case_defaults_are_the_gluecos_scripts_and_reach_the_finetune_specs():
    a = acfg.load(load_profile("paper"))
    assert (a.sentiment.do_lower_case, a.ner.do_lower_case, a.qa.do_lower_case) == (True, True, False)
    fine = [s for s in ae.plan(load_profile("paper")) if isinstance(s, acfg.FinetuneRun)]
    by_task = {t: {s.do_lower_case for s in fine if s.task == t} for t in ("sentiment", "ner", "qa")}
    assert by_task == {"sentiment": {True}, "ner": {True}, "qa": {False}}
    cased = ae.plan(load_profile("paper", overrides={"alignment.sentiment.do_lower_case": False}))
    assert {s.do_lower_case for s in cased if isinstance(s, acfg.FinetuneRun) and s.task == "sentiment"} == {False}


# --------------------------------------------------------------------------- romanisation
def _authors_layout(root: Path, *, repo_layout: bool) -> Path:
    """A folder laid out as the authors' release: <Script>/[cfilt_en-hi_parallel|muse_en-hi/]<split>.tsv."""
    rows = {
        "Devanagari": ("his orders\tउनके निर्देश\n", "0-0 1-1\n", "since\tजबसे\nsugar\tचीनी\n"),
        "Romanized": ("his orders\tunke nirdesh\n", "0-0 1-1\n", "since\tjabase\nsugar\tcheeni\n"),
    }
    for script, (parallel, align, lexicon) in rows.items():
        par = root / script / "cfilt_en-hi_parallel" if repo_layout else root / script
        lex = root / script / "muse_en-hi"
        par.mkdir(parents=True, exist_ok=True)
        lex.mkdir(parents=True, exist_ok=True)
        for split in ("train", "valid"):
            (par / f"{split}.tsv").write_text(parallel, encoding="utf-8")
            (par / f"{split}_alignments").write_text(align, encoding="utf-8")
        (lex / "train.tsv").write_text(lexicon, encoding="utf-8")
        (lex / "valid.tsv").write_text(lexicon.splitlines()[0] + "\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("repo_layout", [False, True], ids=["script-folders", "released-repo-folders"])
def test_roman_rows_read_the_authors_romanised_text_and_itrans_only_on_request(tmp_path, repo_layout):
    root = _authors_layout(tmp_path, repo_layout=repo_layout)
    authors = load_parallel(str(root), "train", script="roman")
    assert authors.pairs == (("his orders", "unke nirdesh"),) and authors.alignments == (((0, 0), (1, 1)),)
    assert "Romanized" in authors.source
    itrans = load_parallel(str(root), "train", script="roman", romanisation="itrans")
    assert itrans.pairs == (("his orders", "unake nirdesha"),) and "Devanagari" in itrans.source
    assert itrans.alignments == authors.alignments
    deva = load_parallel(str(root), "validation", script="devanagari", romanisation="itrans")  # no effect on Devanagari
    assert deva.pairs == (("his orders", "उनके निर्देश"),)
    assert load_lexicon(str(root), script="roman") == [("since", "jabase"), ("sugar", "cheeni")]
    assert load_lexicon(str(root), script="roman", romanisation="itrans") == [("since", "jabase"), ("sugar", "chInI")]
    assert load_lexicon(str(root), script="devanagari") == [("since", "जबसे"), ("sugar", "चीनी")]
    with pytest.raises(ValueError, match="romanisation must be one of"):
        load_parallel(str(root), "train", script="roman", romanisation="iast")
    assert [roman_text_source(str(root), w) for w in ("parallel", "lexicon")] == ["authors", "authors"]
    assert roman_text_source(str(root), "parallel", "itrans") == "itrans"
    assert roman_text_source("synthetic", "parallel") == roman_text_source("cfilt/iitb-english-hindi", "parallel") == "itrans"


def test_sources_without_a_romanised_side_generate_itrans_either_way():
    for r in ROMANISATIONS:
        data = load_parallel("synthetic", "train", script="roman", romanisation=r, limit=3)
        deva = load_parallel("synthetic", "train", script="devanagari", limit=3)
        from codeswitch.common.romanize import to_itrans

        assert [hi for _, hi in data.pairs] == [to_itrans(hi) for _, hi in deva.pairs]


def test_romanisation_is_in_the_roman_specs_keys_only():
    specs = [s for s in ae.plan(load_profile("paper")) if isinstance(s, acfg.AlignRun)]
    assert {s.romanisation for s in specs if s.script == "roman"} == {"authors"}
    assert {s.romanisation for s in specs if s.script == "devanagari"} == {None}
    other = [s for s in ae.plan(load_profile("paper", overrides={"alignment.romanisation": "itrans"})) if isinstance(s, acfg.AlignRun)]
    assert {s.key_hash() for s in specs if s.script == "roman"}.isdisjoint({s.key_hash() for s in other if s.script == "roman"})
    assert {s.key_hash() for s in specs if s.script == "devanagari"} == {s.key_hash() for s in other if s.script == "devanagari"}


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data (the authors' release samples) is absent")
def test_the_authors_release_sample_gives_their_informal_spelling():
    authors = load_parallel(str(SHARED), "validation", script="roman", limit=1)
    itrans = load_parallel(str(SHARED), "validation", script="roman", limit=1, romanisation="itrans")
    assert authors.pairs[0][1].startswith("unke nirdesh par")
    assert itrans.pairs[0][1].startswith("unake nirdesha para")
    assert len(authors.pairs[0][1].split()) == len(itrans.pairs[0][1].split())  # word for word: alignments carry over


# --------------------------------------------------------------------------- awesome-align's extraction
def _reference_awesome_align(hx, hy, lx, ly, softmax_threshold, prob_threshold, word_x, word_y):
    """Batched as awesome-align computes it: padded (B, T) scores, additive -10000 masks on the other
    side's special/padding positions, softmax over each direction, threshold, intersection; probability
    = harmonic mean of the softmaxes of scores / sqrt(other side's length), max over sub-word pairs."""
    B = hx.shape[0]
    scores = hx @ hy.transpose(1, 2)  # (B, Tx, Ty)
    mx = torch.zeros(hx.shape[:2])
    my = torch.zeros(hy.shape[:2])
    for b in range(B):
        mx[b, 1 + lx[b]:] = -10000.0  # the [SEP] and padding after the sub-words ...
        my[b, 1 + ly[b]:] = -10000.0
    mx[:, 0] = -10000.0  # ... and [CLS]
    my[:, 0] = -10000.0
    src = scores + my[:, None, :]
    tgt = scores + mx[:, :, None]
    a, b_ = src.softmax(-1), tgt.softmax(-2)
    keep = (a > softmax_threshold) & (b_ > softmax_threshold)
    lenx = torch.tensor(lx, dtype=torch.float).view(-1, 1, 1)
    leny = torch.tensor(ly, dtype=torch.float).view(-1, 1, 1)
    pa, pb = (src / leny.sqrt()).softmax(-1), (tgt / lenx.sqrt()).softmax(-2)
    prob = 2 * pa * pb / (pa + pb + 1e-9)
    out = []
    for k in range(B):
        best = {}
        for i, j in keep[k, 1:1 + lx[k], 1:1 + ly[k]].nonzero().tolist():
            key = (word_x[k][i], word_y[k][j])
            best[key] = max(best.get(key, 0.0), float(prob[k, 1 + i, 1 + j]))
        out.append(sorted(p for p, v in best.items() if prob_threshold is None or v >= prob_threshold))
    return out


def test_extraction_and_its_probability_filter_match_awesome_align(tmp_path):
    from transformers import BertConfig, BertModel, BertTokenizer

    from codeswitch.alignment.evaluate import extract_alignments
    from codeswitch.alignment.train import encode_words

    chars = list("abcdefghijklmnopqrstuvwxyz")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + [f"##{c}" for c in chars]
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)
    torch.manual_seed(0)
    enc = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=64)).eval()
    pairs = [("the cat sat", "bi lli baith gayi"), ("a dog", "ek kutta"), ("go home now quickly", "ab ghar jao")]
    filtered = extract_alignments(enc, tok, pairs, layer=1, softmax_threshold=1e-3, prob_threshold=0.3, max_length=32)
    unfiltered = extract_alignments(enc, tok, pairs, layer=1, softmax_threshold=1e-3, prob_threshold=None, max_length=32)
    sides = []
    for k in (0, 1):
        batch = encode_words(tok, [p[k].split() for p in pairs], 32)
        with torch.no_grad():
            hs = enc(input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True).hidden_states[1]
        lengths = [int((row >= 0).sum()) for row in batch.word_index]
        word_of = [[int(w) for w in row if w >= 0] for row in batch.word_index]
        sides.append((hs, lengths, word_of))
    (hx, lx, wx), (hy, ly, wy) = sides
    assert unfiltered == _reference_awesome_align(hx, hy, lx, ly, 1e-3, None, wx, wy)
    assert filtered == _reference_awesome_align(hx, hy, lx, ly, 1e-3, 0.3, wx, wy)
    assert sum(map(len, filtered)) < sum(map(len, unfiltered))  # the filter removes links here
    assert all(set(f) <= set(u) for f, u in zip(filtered, unfiltered))
    assert math.isfinite(sum(map(len, unfiltered)))
