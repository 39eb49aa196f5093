"""Every model stand-in loads through the same from_pretrained path, class and tokenizer type as the real model."""

from __future__ import annotations

import pytest
import torch

from codeswitch.pipeline.standins import FOR_HUB_ID, STANDINS, build_standin

EXPECTED = {  # stand-in -> (model class, tokenizer class) of the real hub model
    "mbert-cased": ("BertModel", "BertTokenizer"),
    "mbert-uncased": ("BertModel", "BertTokenizer"),
    "bert-cased": ("BertModel", "BertTokenizer"),
    "xlmr-base": ("XLMRobertaModel", "XLMRobertaTokenizer"),
    "xlmr-large": ("XLMRobertaModel", "XLMRobertaTokenizer"),
    "mbart50": ("MBartModel", "MBart50Tokenizer"),
    "roberta": ("RobertaModel", "RobertaTokenizer"),
    "distilbert-cased": ("DistilBertModel", "DistilBertTokenizer"),
    "indicbert": ("AlbertModel", "AlbertTokenizer"),
    "nllb": ("M2M100Model", "NllbTokenizer"),
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("standins")


def test_every_paper_backbone_has_a_standin():
    assert set(EXPECTED) | {"benepar"} == set(STANDINS) and set(FOR_HUB_ID.values()) <= set(STANDINS)


def test_benepar_standin_parses_through_benepar(root):
    """The parser stand-in is a folder in benepar's released format: benepar.Parser(folder) loads it (with the
    transformers-5 tokenizer shim of BeneparParser) and returns constituency trees over the given tokens."""
    from codeswitch.koglish.parse import BeneparParser

    folder = build_standin("benepar", root)
    assert (folder / "benepar_model.bin").is_file() and (folder / "config.json").is_file()
    sentences = ["The boy drinks water in the big house .", "A cat sat ."]
    trees = BeneparParser(str(folder), download=False).parse_many(sentences)
    assert [t.leaves() for t in trees] == [s.split() for s in sentences]
    assert any(st.label() == "NP" for t in trees for st in t.subtrees())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_standin_loads_like_the_real_model(root, name):
    from transformers import AutoModel, AutoTokenizer

    folder = build_standin(name, root)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder)
    assert (type(model).__name__, type(tok).__name__) == EXPECTED[name]
    enc = tok(["The boy drinks water.", "학생의 어머니 पानी"], padding=True, return_tensors="pt")
    assert tok.unk_token_id not in enc["input_ids"][0].tolist()  # the corpus-trained vocabulary covers plain English
    if "uncased" in name:
        assert tok.tokenize("WATER") == tok.tokenize("water")
    kwargs = {"decoder_input_ids": enc["input_ids"][:, :2]} if model.config.is_encoder_decoder else {}
    with torch.no_grad():
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], **kwargs)
    assert torch.isfinite(out.last_hidden_state).all()


def test_benepar_tokenizer_shim_puts_the_special_tokens_around_ids(root):
    """transformers 5 removed build_inputs_with_special_tokens, which benepar 0.2.0 calls while loading; the shim
    rebuilds it from the tokenizer's own post-processor, only for as long as a benepar model loads."""
    from transformers import AutoTokenizer, PreTrainedTokenizerBase

    from codeswitch.core.models import benepar_tokenizer_compat

    bert = AutoTokenizer.from_pretrained(build_standin("mbert-cased", root))
    xlmr = AutoTokenizer.from_pretrained(build_standin("xlmr-base", root))
    with benepar_tokenizer_compat():
        assert bert.build_inputs_with_special_tokens([-100]) == [bert.cls_token_id, -100, bert.sep_token_id]
        assert xlmr.build_inputs_with_special_tokens([-100, 7]) == [xlmr.bos_token_id, -100, 7, xlmr.eos_token_id]
    assert not hasattr(PreTrainedTokenizerBase, "build_inputs_with_special_tokens")
