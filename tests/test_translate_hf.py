"""The Hugging Face translator through a real (tiny, random-weight, locally made) NLLB-architecture model.

No fake pipeline: the stand-in folder is loaded with AutoTokenizer / AutoModelForSeq2SeqLM
exactly as facebook/nllb-200-distilled-600M would be, and generation is forced to start
with the target-language token.  A backend that cannot run raises before any item.
"""

from __future__ import annotations

import json

import pytest

from codeswitch.core.hub import MissingResourceError
from codeswitch.pipeline.standins import build_standin
from codeswitch.koglish import translate as T


@pytest.fixture(scope="module")
def nllb(tmp_path_factory):
    return build_standin("nllb", tmp_path_factory.mktemp("standins"))


def test_standin_has_the_real_classes(nllb):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(nllb, src_lang="eng_Latn")
    model = AutoModelForSeq2SeqLM.from_pretrained(nllb)
    assert type(tok).__name__ == "NllbTokenizer" and type(model).__name__ == "M2M100ForConditionalGeneration"
    assert tok.convert_tokens_to_ids("kor_Hang") != tok.unk_token_id
    assert tok("the movie").input_ids[0] == tok.convert_tokens_to_ids("eng_Latn")  # NLLB: src language token first


def test_hf_translator_runs_the_real_model(nllb):
    phrases = ["the boring movie", "the mother of the student", "a big car"]
    h = T.HFTranslator(str(nllb), batch_size=2, max_length=8)
    out = h.translate(phrases)
    assert [r.source for r in out] == phrases
    assert all(r.ok and r.text and "\n" not in r.text for r in out), out
    # padding must not change a translation: batched == one at a time (greedy decoding)
    single = [T.HFTranslator(str(nllb), batch_size=1, max_length=8).translate([p])[0].text for p in phrases]
    assert [r.text for r in out] == single
    # generation starts with the forced target-language token
    tok, model, forced = h._load()
    import torch

    ids = model.generate(**tok(phrases[:1], return_tensors="pt"), forced_bos_token_id=forced, max_new_tokens=4)
    assert ids[0, 1].item() == forced == tok.convert_tokens_to_ids("kor_Hang")


def test_hf_translator_through_the_cache_and_factory(nllb, tmp_path):
    t = T.make_translator("hf", hf_model=str(nllb), cache=tmp_path / "mt.sqlite")
    first = t.translate(["the boring movie", "the boring movie"])
    again = T.make_translator("hf", hf_model=str(nllb), cache=tmp_path / "mt.sqlite")
    assert [r.text for r in again.translate(["the boring movie"])] == [first[0].text]
    assert again.hits == 1 and again.misses == 0


def test_a_missing_model_stops_the_build(tmp_path):
    h = T.HFTranslator(str(tmp_path / "no-such-model"))
    with pytest.raises(MissingResourceError, match="no-such-model"):
        h.translate(["the dog"])


def test_an_unloadable_model_is_a_translation_error(tmp_path):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(T.TranslationError, match="cannot load"):
        T.HFTranslator(str(bad)).translate(["the dog"])


def test_an_unknown_target_language_is_a_translation_error(nllb):
    with pytest.raises(T.TranslationError, match="hf_tgt_lang"):
        T.HFTranslator(str(nllb), tgt_lang="xyz_Latn").translate(["the dog"])


def test_a_backend_failing_on_everything_raises_and_caches_nothing(nllb, tmp_path, monkeypatch):
    h = T.HFTranslator(str(nllb), batch_size=2)
    h._load()

    def boom(batch):
        raise RuntimeError("removed API")

    monkeypatch.setattr(h, "_call", boom)
    cached = T.CachedTranslator(h, tmp_path / "mt.sqlite")
    with pytest.raises(T.TranslationError, match="every item"):
        cached.translate(["a dog", "a cat", "a cow"])
    assert len(cached) == 0
