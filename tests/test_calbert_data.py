"""Romanisation (Devanagari -> ITRANS) and the sentiment readers (SAIL 2017, IITP product reviews)."""

from __future__ import annotations

import pytest

from codeswitch.common.romanize import has_devanagari, to_itrans
from codeswitch.common.sentiment import LABELS, SentimentFormatError, load_sentiment_splits, read_label_text_csv, read_text_label_tsv


# --------------------------------------------------------------------------- romanisation
@pytest.mark.parametrize(
    "devanagari, itrans",
    [
        ("जिसके जवाब में", "jisake javAba meM"),  # inherent a, anusvara
        ("ऋण", "RRiNa"),  # vocalic r, retroflex n
        ("संस्कृति", "saMskRRiti"),
        ("अच्छी शुरुआत", "achChI shuruAta"),
        ("२०२०", "2020"),  # Devanagari digits
        ("दुःख", "duHkha"),  # visarga
        ("है।", "hai|"),  # danda
    ],
)
def test_to_itrans_standard_letters(devanagari, itrans):
    assert to_itrans(devanagari) == itrans


def test_to_itrans_leaves_latin_text_alone():
    assert to_itrans("Sky Li ने कहा A71 के ज़रिए #tech http://t.co/x") == "Sky Li ne kahA A71 ke zarie #tech http://t.co/x"
    latin = "cafe\u0301 ## {x} ok"  # decomposed accent and ITRANS control sequences stay byte for byte
    assert to_itrans(latin) == latin
    assert to_itrans("") == ""


def test_to_itrans_normalisations():
    # precomposed nukta letter U+095D (NFC splits it into ढ + nukta)
    assert to_itrans("\u095d") == to_itrans("\u0922\u093c") == ".Dha"
    # candra o (English loanwords), also typed as aa-sign + candra e
    assert to_itrans("मॉडल") == "moDala"
    assert to_itrans("एंडरा\u0945यड") == "eMDaroyaDa"
    assert to_itrans("ऑफ़र") == "ofara"  # nukta pha is f
    # zero-width joiner inside a word; a stray nukta after a vowel sign
    assert to_itrans("क\u200dरना") == "karanA"
    assert to_itrans("बा\u093cत") == "bAta"
    # the result of real Hindi text is plain ASCII
    assert to_itrans("यह फ़ोन बहुत अच्छा है, लेकिन बैटरी कमज़ोर है ।").isascii()


def test_to_itrans_lowercase_matches_calbert_pairs():
    # CalBERT Table 2 prints lower-cased ITRANS: "shuruata", "rrina"
    assert to_itrans("शुरुआत ऋण", lowercase=True) == "shuruata rrina"
    assert to_itrans("Pakistan ने", lowercase=True) == "Pakistan ne"  # Latin keeps its case


def test_to_itrans_rejects_non_strings():
    assert has_devanagari("abc क") and not has_devanagari("abc")
    with pytest.raises(TypeError, match="expects a str"):
        to_itrans(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- readers
def test_read_tsv(tmp_path):
    p = tmp_path / "train.txt"
    p.write_text("Han wo bhi baat hai\tneutral\nkya bakwas hai\tNegative\r\n\nmast movie\tpositive\n", encoding="utf-8")
    rows = read_text_label_tsv(p)
    assert [(r.text, r.label) for r in rows] == [("Han wo bhi baat hai", 1), ("kya bakwas hai", 0), ("mast movie", 2)]
    assert LABELS == ("negative", "neutral", "positive")


def test_read_tsv_unlabelled_test_file(tmp_path):
    p = tmp_path / "test.txt"
    p.write_text("one\ntwo\n", encoding="utf-8")
    assert [r.label for r in read_text_label_tsv(p)] == [None, None]


def test_read_csv(tmp_path):
    p = tmp_path / "hi-train.csv"
    p.write_text('negative,यह थोड़ा पीछे है ।\npositive,"अच्छा, सस्ता और टिकाऊ"\n', encoding="utf-8")
    rows = read_label_text_csv(p)
    assert [(r.text, r.label) for r in rows] == [("यह थोड़ा पीछे है ।", 0), ("अच्छा, सस्ता और टिकाऊ", 2)]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("train.txt", "good\tpositive\nbad\tawful\n", r"train\.txt, row 2, field 'label': 'awful' is not one of"),
        ("train.txt", "good\tpositive\n\tneutral\n", r"train\.txt, row 2, field 'text': empty"),
        ("train.txt", "good\tpositive\na\tb\tc\n", r"train\.txt, row 2: expected 'text<TAB>label', found 3"),
        ("train.txt", "good\tpositive\nno label here\n", r"train\.txt, row 2, field 'label': missing"),
        ("train.txt", "\n", r"train\.txt: no rows"),
        ("hi-train.csv", "negative,ok\nneutral,a,b\n", r"hi-train\.csv, row 2: expected 'label,text', found 3 fields"),
        ("hi-train.csv", 'negative,ok\nneutral,"multi\nline"\ngood,x\n', r"hi-train\.csv, row 4, field 'label': 'good'"),
        ("hi-train.csv", "negative,ok\npositive,  \n", r"hi-train\.csv, row 2, field 'text': empty"),
    ],
)
def test_read_errors_name_file_row_field(tmp_path, name, content, message):
    """Both readers (SAIL's text<TAB>label, IITP's label,text) name the file, the row and the field of a bad row."""
    p = tmp_path / name
    p.write_text(content, encoding="utf-8")
    read = read_text_label_tsv if name.endswith(".txt") else read_label_text_csv
    with pytest.raises(SentimentFormatError, match=message):
        read(p)


def test_load_splits_folder(tmp_path):
    (tmp_path / "train.txt").write_text("a\tpositive\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="no validation file"):
        load_sentiment_splits(tmp_path, "sail")
    (tmp_path / "validation.txt").write_text("b\tnegative\n", encoding="utf-8")
    splits = load_sentiment_splits(tmp_path, "sail")
    assert sorted(splits) == ["train", "validation"]
    (tmp_path / "test.txt").write_text("c\n", encoding="utf-8")
    assert load_sentiment_splits(tmp_path, "sail")["test"][0].label is None
    with pytest.raises(ValueError, match="unknown sentiment format"):
        load_sentiment_splits(tmp_path, "imdb")


# --------------------------------------------------------------------------- real samples
@pytest.mark.shared
def test_real_sail2017(shared_data):
    splits = load_sentiment_splits(shared_data / "sail2017", "sail")
    assert len(splits["train"]) == 10080 and len(splits["validation"]) == 1260
    assert [sum(r.label == i for r in splits["validation"]) for i in range(3)] == [283, 578, 399]


@pytest.mark.shared
def test_real_iitp_romanises_to_ascii(shared_data):
    splits = load_sentiment_splits(shared_data / "iitp_product_reviews", "iitp")
    assert len(splits["train"]) == 4182 and len(splits["validation"]) == 523
    first = splits["train"][0]
    assert first.label == 0 and to_itrans(first.text) == "eMDaroyaDa ke mAmale meM yaha tho.DA pIChe hai |"
    # no Devanagari survives romanisation in the validation split
    assert not any(has_devanagari(to_itrans(r.text)) for r in splits["validation"])
