"""Local stand-ins for the paper profile's models: same class and tokenizer type, random weights, small.

A stand-in is an ordinary Hugging Face folder (``config.json``, ``model.safetensors``,
tokenizer files) that a user's pre-downloaded copy would also be, so loading it
takes the same ``from_pretrained`` path as the real model.  Only the sizes differ;
the weights are random (seeded: the same folder on every machine) and the
tokenizer's vocabulary is trained on the project's own corpus, so a stand-in
proves that the code path runs, never what the real model would score.

=========================  ===========================================  ===========================================
stand-in                   stands in for                                model / tokenizer class
=========================  ===========================================  ===========================================
``mbert-cased``            bert-base-multilingual-cased                 ``BertModel`` / ``BertTokenizer`` (WordPiece, cased)
``mbert-uncased``          bert-base-multilingual-uncased               ``BertModel`` / ``BertTokenizer`` (lower-cased)
``bert-cased``             bert-base-cased                              ``BertModel`` / ``BertTokenizer`` (cased)
``xlmr-base``              xlm-roberta-base                             ``XLMRobertaModel`` / ``XLMRobertaTokenizer`` (Unigram)
``xlmr-large``             xlm-roberta-large                            the same, another size
``mbart50``                facebook/mbart-large-50                      ``MBartModel`` / ``MBart50Tokenizer`` (Unigram + language codes)
``roberta``                roberta-base                                 ``RobertaModel`` / ``RobertaTokenizer`` (byte-level BPE)
``distilbert-cased``       distilbert-base-cased                        ``DistilBertModel`` / ``DistilBertTokenizer`` (cased)
``indicbert``              ai4bharat/indic-bert                         ``AlbertModel`` / ``AlbertTokenizer`` (Unigram)
``nllb``                   facebook/nllb-200-distilled-600M             ``M2M100ForConditionalGeneration`` / ``NllbTokenizer``
``benepar``                benepar_en3 (an NLTK package, not a hub id)  benepar's ``ChartParser`` (released folder format) over a BERT encoder
=========================  ===========================================  ===========================================

:data:`FOR_HUB_ID` maps each hub id of the paper profile to its stand-in.
``python -m codeswitch.pipeline.standins DIR`` builds them all into ``DIR/models/<name>``.

Sizes (``--sizes``): ``ci`` (the default) builds the small models above into ``DIR/models/``;
``paper`` builds every model of :data:`PAPER_SIZES` with the real model's configuration (layers,
widths, heads, vocabulary and position sizes; what the ``paper-gpu`` profile reads) into
``DIR/models-paper/``: random weights, nothing downloaded, GBs on disk (built where they run);
``vocab`` builds the small models with the real vocabulary sizes into ``DIR/models-paper/`` too
(a CPU rehearsal of ``paper-gpu``: every embedding table and id range as at paper size).  The
tokenizers are always the small stand-ins' (their ids all fit the real vocabularies; NLLB, a
generator, keeps its tokenizer's vocabulary, as it must emit ids that decode), and the benepar
stand-in keeps its small size under every choice (benepar_en3 is not a hub model).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Sequence

from ..core.models import corpus_files
from ..core.atomic import atomic_directory

__all__ = ["STANDINS", "FOR_HUB_ID", "PAPER_SIZES", "SIZES", "build_standin", "build_all"]

#: language tokens of the NLLB stand-in (the real model has 202; the translator uses these two)
NLLB_LANGS = ["eng_Latn", "kor_Hang"]


def _nllb(dest: Path, *, vocab_size: int = 1200, d_model: int = 32) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    specials = ["<s>", "<pad>", "</s>", "<unk>"]  # NLLB's fairseq ids 0..3
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    lines = [ln.strip() for p in corpus_files() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    bpe.train_from_iterator(lines, trainer=trainer)
    state = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]
    tokenizer = NllbTokenizer(
        vocab=state["vocab"], merges=merges, src_lang=NLLB_LANGS[0], tgt_lang=NLLB_LANGS[1], extra_special_tokens=NLLB_LANGS
    )
    config = M2M100Config(
        vocab_size=len(tokenizer),
        d_model=d_model,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=2 * d_model,
        decoder_ffn_dim=2 * d_model,
        max_position_embeddings=256,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,  # NLLB: </s> starts the decoder, then the forced language token
    )
    config = _sized(config)
    dev = _init_device()
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []), torch.device(dev):
        torch.manual_seed(0)
        model = M2M100ForConditionalGeneration(config)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)


def _corpus() -> list[str]:
    return [ln.strip() for p in corpus_files() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _unigram(specials: list[str], vocab_size: int = 800) -> list[tuple[str, float]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(_corpus(), trainer)
    return [tuple(v) for v in json.loads(tok.to_str())["model"]["vocab"]]


def _wordpiece(lowercase: bool, vocab_size: int = 800) -> dict[str, int]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False)
    tok.train_from_iterator(_corpus(), trainer)
    return json.loads(tok.to_str())["model"]["vocab"]


def _byte_bpe(vocab_size: int = 800) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(), trainer)
    state = json.loads(tok.to_str())["model"]
    return state["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]


_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


#: the real models' configurations (their hub config.json): stand-in -> config keys that replace the small ones.
#: Vocabulary and position sizes are the real ones (but NLLB's, a generator: see there); the tokenizer stays the small
#: stand-in's (its ids fit).
_BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
_BART_LARGE = dict(d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16, decoder_attention_heads=16,
                   encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024)
PAPER_SIZES: dict[str, dict] = {
    "mbert-cased": {**_BASE, "vocab_size": 119547},                   # bert-base-multilingual-cased
    "mbert-uncased": {**_BASE, "vocab_size": 105879},                 # bert-base-multilingual-uncased
    "bert-cased": {**_BASE, "vocab_size": 28996},                     # bert-base-cased
    "xlmr-base": {**_BASE, "vocab_size": 250002},                     # xlm-roberta-base
    "xlmr-large": {**_LARGE, "vocab_size": 250002},                   # xlm-roberta-large
    "mbart50": {**_BART_LARGE, "vocab_size": 250054},                 # facebook/mbart-large-50
    "roberta": {**_BASE, "vocab_size": 50265},                        # roberta-base
    "distilbert-cased": dict(dim=768, n_layers=6, n_heads=12, hidden_dim=3072, vocab_size=28996),  # distilbert-base-cased
    "indicbert": {**_BASE, "embedding_size": 128, "vocab_size": 200000},  # ai4bharat/indic-bert (ALBERT base)
    # facebook/nllb-200-distilled-600M, but its vocabulary (256,206): a generator must only emit ids its tokenizer
    # can decode, and the stand-in's tokenizer has about 1,200 (with 256,206 every translation decoded to nothing and
    # notebook 01 had no switched sentence); the output layer is thus 1,200 wide, not 256,206 (01 is not a measured path)
    "nllb": dict(_BART_LARGE),
}
#: the real vocabulary sizes alone (``--sizes vocab``)
VOCAB_SIZES: dict[str, dict] = {name: {"vocab_size": cfg["vocab_size"]} for name, cfg in PAPER_SIZES.items() if "vocab_size" in cfg}
#: --sizes -> (the folder under the stand-ins root, config keys per stand-in)
SIZES: dict[str, tuple[str, dict[str, dict]]] = {"ci": ("models", {}), "paper": ("models-paper", PAPER_SIZES),
                                                 "vocab": ("models-paper", VOCAB_SIZES)}

_size: dict = {}  # the config keys of the build in progress (set by build_standin)


def _sized(config):
    """``config`` rebuilt with the keys of the size being built (none for ``ci``): through the class, so that what its
    ``__init__`` derives from them (mBART's ``num_hidden_layers`` from ``encoder_layers``) follows."""
    return type(config).from_dict({**config.to_dict(), **_size}) if _size else config


def _init_device():
    """Where random weights are drawn: the GPU when there is one (a large model initialises in seconds there, minutes on a
    CPU).  The weights differ between the two (different generators); a stand-in's weights carry no meaning."""
    import torch

    return torch.device("cuda") if _size and torch.cuda.is_available() else torch.device("cpu")


def _save(dest: Path, tokenizer, config) -> None:
    import torch
    from transformers import AutoModel

    config = _sized(config)
    dev = _init_device()
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []), torch.device(dev):
        torch.manual_seed(0)
        model = AutoModel.from_config(config)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)


def _bert(lowercase: bool):
    def build(dest: Path) -> None:
        from transformers import BertConfig, BertTokenizer

        tok = BertTokenizer(vocab=_wordpiece(lowercase), do_lower_case=lowercase)
        _save(dest, tok, BertConfig(vocab_size=len(tok), max_position_embeddings=512, pad_token_id=tok.pad_token_id, **_SMALL))

    return build


def _xlmr(layers: int):
    def build(dest: Path) -> None:
        from transformers import XLMRobertaConfig, XLMRobertaTokenizer

        tok = XLMRobertaTokenizer(vocab=_unigram(["<s>", "<pad>", "</s>", "<unk>"]))
        cfg = XLMRobertaConfig(vocab_size=len(tok), max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, bos_token_id=0,
                               eos_token_id=2, **{**_SMALL, "num_hidden_layers": layers})
        _save(dest, tok, cfg)

    return build


def _mbart50(dest: Path) -> None:
    from transformers import MBart50Tokenizer, MBartConfig

    tok = MBart50Tokenizer(vocab=_unigram(["<s>", "<pad>", "</s>", "<unk>"]), src_lang="en_XX", tgt_lang="en_XX")
    cfg = MBartConfig(vocab_size=len(tok), d_model=32, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2,
                      decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=512,
                      pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2, scale_embedding=True)
    _save(dest, tok, cfg)


def _roberta(dest: Path) -> None:
    from transformers import RobertaConfig, RobertaTokenizer

    vocab, merges = _byte_bpe()
    tok = RobertaTokenizer(vocab=vocab, merges=merges)
    _save(dest, tok, RobertaConfig(vocab_size=len(tok), max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
                                   bos_token_id=0, eos_token_id=2, **_SMALL))


def _distilbert(dest: Path, lower: bool = False) -> None:
    from transformers import DistilBertConfig, DistilBertTokenizer

    tok = DistilBertTokenizer(vocab=_wordpiece(lower), do_lower_case=lower)
    _save(dest, tok, DistilBertConfig(vocab_size=len(tok), dim=32, n_layers=2, n_heads=2, hidden_dim=64, pad_token_id=tok.pad_token_id))


def _indicbert(dest: Path) -> None:
    from transformers import AlbertConfig, AlbertTokenizer

    vocab = [(t, 0.0) for t in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")]
    vocab += [v for v in _unigram(["<s>", "<pad>", "</s>", "<unk>"]) if v[0] not in ("<s>", "<pad>", "</s>", "<unk>")]
    tok = AlbertTokenizer(vocab=vocab)
    _save(dest, tok, AlbertConfig(vocab_size=len(tok), embedding_size=16, pad_token_id=0, bos_token_id=2, eos_token_id=3, **_SMALL))


#: the Penn Treebank tags and phrase labels the benepar stand-in predicts (unary chains joined by "::", as benepar's vocabularies)
PTB_TAGS = ("CC CD DT EX FW IN JJ JJR JJS LS MD NN NNP NNPS NNS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ "
            "WDT WP WP$ WRB . , : `` '' -LRB- -RRB- # $ HYPH NFP").split()
PTB_LABELS = ("S NP VP PP ADJP ADVP SBAR WHNP QP PRN S::VP NP::NP").split()


def _benepar(dest: Path, *, d_model: int = 32, np_bias: float = 0.5, s_bias: float = 1.0) -> None:
    """benepar's released multi-file format (what ``benepar.download('benepar_en3')`` unpacks and
    ``benepar.Parser(path)`` loads): ``config.json`` = the pretrained encoder's config plus a ``benepar``
    entry (vocabularies, hyperparameters), its tokenizer files, and ``benepar_model.bin`` (the state dict).
    The chart parser is benepar's own ``ChartParser`` with its partitioned-transformer encoder, at small
    size over a small BERT; the weights are random except the biases of the S and NP labels, raised so that
    random trees look like sentences with noun phrases in them (on the stand-in GLUE sentences about 60% get a
    qualifying NP; the rest are excluded for the reasons the construction names)."""
    import torch
    from benepar.nkutil import HParams
    from benepar.parse_chart import ChartParser
    from transformers import BertConfig, BertTokenizer

    from ..core.models import benepar_tokenizer_compat

    tok = BertTokenizer(vocab=_wordpiece(False), do_lower_case=False)
    enc = BertConfig(vocab_size=len(tok), max_position_embeddings=512, pad_token_id=tok.pad_token_id, **_SMALL)
    enc.save_pretrained(dest)
    tok.save_pretrained(dest)
    hparams = dict(d_model=d_model, num_layers=1, num_heads=2, d_kv=8, d_ff=2 * d_model, d_label_hidden=d_model,
                   d_tag_hidden=d_model, tag_loss_scale=5.0, encoder_max_len=512, use_chars_lstm=False, d_char_emb=8,
                   char_lstm_input_dropout=0.0, use_pretrained=True, pretrained_model="bert-base-cased", use_encoder=True,
                   predict_tags=True, morpho_emb_dropout=0.0, attention_dropout=0.0, relu_dropout=0.0, residual_dropout=0.0,
                   force_root_constituent=True)
    vocab = {"tag_vocab": {t: i for i, t in enumerate(PTB_TAGS)}, "label_vocab": {x: i for i, x in enumerate(["", *PTB_LABELS])},
             "char_vocab": None}
    with torch.random.fork_rng(devices=[]), benepar_tokenizer_compat():
        torch.manual_seed(0)
        parser = ChartParser(**vocab, hparams=HParams(**hparams), pretrained_model_path=str(dest))
    with torch.no_grad():  # f_label's last layer scores labels 1..n (0, the empty label, scores 0)
        parser.f_label[-1].bias[vocab["label_vocab"]["NP"] - 1] += np_bias
        parser.f_label[-1].bias[vocab["label_vocab"]["S"] - 1] += s_bias
    torch.save(parser.state_dict(), dest / "benepar_model.bin")
    enc.benepar = {**vocab, "hparams": hparams}
    enc.save_pretrained(dest)


#: name -> builder(dest)
STANDINS = {
    "mbert-cased": _bert(False),
    "mbert-uncased": _bert(True),
    "bert-cased": _bert(False),
    "xlmr-base": _xlmr(2),
    "xlmr-large": _xlmr(3),
    "mbart50": _mbart50,
    "roberta": _roberta,
    "distilbert-cased": _distilbert,
    "indicbert": _indicbert,
    "nllb": _nllb,
    "benepar": _benepar,
}

#: the paper profile's hub ids -> their stand-ins
FOR_HUB_ID = {
    "bert-base-multilingual-cased": "mbert-cased",
    "bert-base-multilingual-uncased": "mbert-uncased",
    "bert-base-cased": "bert-cased",
    "xlm-roberta-base": "xlmr-base",
    "xlm-roberta-large": "xlmr-large",
    "facebook/mbart-large-50": "mbart50",
    "roberta-base": "roberta",
    "distilbert-base-cased": "distilbert-cased",
    "ai4bharat/indic-bert": "indicbert",
    "facebook/nllb-200-distilled-600M": "nllb",
}


def build_standin(name: str, root: str | Path, sizes: str = "ci") -> Path:
    """Build (once) the stand-in ``name`` under ``root`` at ``sizes`` (:data:`SIZES`) and return its folder."""
    if name not in STANDINS:
        raise KeyError(f"no stand-in {name!r}; known: {', '.join(sorted(STANDINS))}")
    if sizes not in SIZES:
        raise KeyError(f"no stand-in sizes {sizes!r}; known: {', '.join(SIZES)}")
    dest = Path(root) / name
    if (dest / "config.json").is_file():
        return dest
    _size.clear()
    _size.update(SIZES[sizes][1].get(name, {}))
    try:
        with atomic_directory(dest, replace=False) as tmp:
            STANDINS[name](Path(tmp))
    finally:
        _size.clear()
    return dest


#: bump when the way stand-ins are built changes (the data folder is rebuilt)
VERSION = 2


#: ``--sizes paper``/``vocab``: each training file of the stand-in datasets repeated so that a run trains on full
#: batches at the paper's batch sizes (paper-gpu; the stand-ins hold a few dozen rows each): glob under data/ ->
#: (format, copies).  The copies are the same rows (query ids and row indices renumbered where a loader keys on them);
#: validation and test splits, corpora and dictionaries are left as built.  Targets: GLUE 512 rows (4 batches of 128),
#: NLI 2,048 (4 SimCSE batches of 512), NQ 1,280 queries (10 batches of 128), IITB 2,400 pairs (alignment's and
#: CalBERT's pre-training caps), SAIL 180 and IITP 330 rows (about 20 batches), GLUECoS about 20 batches of 16.
TRAIN_COPIES: dict[str, tuple[str, int]] = {
    "koglish/Koglish_GLUE/*/*_train.csv": ("csv-index", 3),
    "koglish/Koglish_NLI/*_train.csv": ("csv-index", 5),
    "wikipedia-nq/nq-train.jsonl.gz": ("jsonl-gz", 23),
    "iitb-english-hindi/data/train-*.parquet": ("parquet", 20),
    "sail2017/train.txt": ("lines", 6),
    "iitp-product-reviews/hi-train.csv": ("lines", 11),
    "GLUECoS/Data/Processed_Data/Sentiment_EN_HI/*/train.txt": ("lines", 3),  # 120 rows shipped
    "GLUECoS/Data/Processed_Data/NER_EN_HI/*/train.txt": ("blocks", 10),
    "GLUECoS/Data/Processed_Data/QA_EN_HI/train-v2.0.json": ("squad", 2),
}


def _repeat_file(path: Path, kind: str, copies: int) -> None:
    """Rewrite ``path`` as ``copies`` copies of its rows, in its own format (see :data:`TRAIN_COPIES`)."""
    import csv
    import gzip
    import io

    if kind == "csv-index":  # header, then rows whose first column is a row index
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
        out = io.StringIO(newline="")
        w = csv.writer(out, lineterminator="\n")
        w.writerow(rows[0])
        body = rows[1:]
        for i in range(copies * len(body)):
            w.writerow([str(i), *body[i % len(body)][1:]])
        path.write_text(out.getvalue(), encoding="utf-8")
    elif kind == "jsonl-gz":  # one record a line; query ids made unique per copy
        lines = [ln for ln in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines() if ln.strip()]
        out = []
        for k in range(copies):
            for ln in lines:
                rec = json.loads(ln)
                if k and "query_id" in rec:
                    rec["query_id"] = f"{rec['query_id']}-copy{k}"
                out.append(json.dumps(rec, ensure_ascii=False))
        path.write_bytes(gzip.compress(("\n".join(out) + "\n").encode("utf-8"), mtime=0))
    elif kind == "parquet":
        import pandas as pd

        df = pd.read_parquet(path)
        pd.concat([df] * copies, ignore_index=True).to_parquet(path, index=False)
    elif kind in ("lines", "blocks"):  # text lines; blocks: sentences separated by a blank line (CoNLL)
        text = path.read_text(encoding="utf-8")
        text = text if text.endswith("\n") else text + "\n"
        sep = "\n" if kind == "blocks" and not text.endswith("\n\n") else ""
        path.write_text(sep.join([text] * copies), encoding="utf-8")
    elif kind == "squad":  # SQuAD JSON: the articles repeated, question ids made unique per copy
        doc = json.loads(path.read_text(encoding="utf-8"))
        articles = []
        for k in range(copies):
            for art in json.loads(json.dumps(doc["data"])):
                for par in art.get("paragraphs", []):
                    for qa in par.get("qas", []):
                        if k and "id" in qa:
                            qa["id"] = f"{qa['id']}-copy{k}"
                articles.append(art)
        path.write_text(json.dumps({**doc, "data": articles}, ensure_ascii=False), encoding="utf-8")
    else:
        raise ValueError(f"{path}: unknown stand-in file format {kind!r}")


#: --sizes -> the data folder under the stand-ins root (paper sizes: the training files repeated, :data:`TRAIN_COPIES`)
DATA_FOLDERS = {"ci": "data", "paper": "data-paper", "vocab": "data-paper"}


def build_data(root: str | Path, sizes: str = "ci") -> Path:
    """Every stand-in dataset under ``root/data/`` in its released layout (built once, atomically); at ``paper`` or
    ``vocab`` sizes under ``root/data-paper/``, the training files repeated (:data:`TRAIN_COPIES`)."""
    from .registry import packages

    dest = Path(root) / DATA_FOLDERS[sizes]
    if (dest / f".complete-v{VERSION}").is_file():
        return dest
    with atomic_directory(dest, replace=True) as tmp:
        for pkg in packages():  # each package's stand-in data (build_standins(root) -> {name: folder}; None: it has none)
            if pkg.build_standins is not None:
                pkg.build_standins(Path(tmp))
        shutil.rmtree(Path(tmp) / "_mini", ignore_errors=True)
        if DATA_FOLDERS[sizes] != "data":
            for pattern, (kind, copies) in TRAIN_COPIES.items():
                found = sorted(Path(tmp).glob(pattern))
                if not found:
                    raise FileNotFoundError(f"stand-in data: no file matches {pattern} under {tmp}")
                for path in found:
                    _repeat_file(path, kind, copies)
        (Path(tmp) / f".complete-v{VERSION}").write_text("")
    return dest


def build_all(root: str | Path, sizes: str = "ci", only: Sequence[str] | None = None) -> dict[str, Path]:
    """Every model stand-in (or those named in ``only``) under ``root/<SIZES folder>/`` and every dataset under
    ``root/data/``; returns name -> folder.  At ``paper``/``vocab`` sizes the benepar stand-in is the ``ci`` one
    (``root/models/benepar``), which the paper-gpu profile names."""
    if sizes not in SIZES:
        raise KeyError(f"no stand-in sizes {sizes!r}; known: {', '.join(SIZES)}")
    names = list(STANDINS) if only is None else list(only)
    unknown = [n for n in names if n not in STANDINS]
    if unknown:
        raise KeyError(f"no stand-in {', '.join(map(repr, unknown))}; known: {', '.join(sorted(STANDINS))}")
    out = {}
    for name in names:  # every model the paper profile names at the chosen size (its folder); benepar at ci size
        at_size = sizes if name in PAPER_SIZES or sizes == "ci" else "ci"
        out[name] = build_standin(name, Path(root) / SIZES[at_size][0], at_size)
    out["data"] = build_data(root, sizes)
    return out


def default_root() -> Path:
    """Where the paper-ci profile's ``${CODESWITCH_STANDINS}`` points: the variable, else ``runs/_standins``."""
    from ..core.deltas import standins_root
    from ..core.profiles import project_root

    return standins_root(project_root())


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m codeswitch.pipeline.standins",
                                     description="Build the paper-ci profile's local stand-in models and datasets.")
    parser.add_argument("dir", nargs="?", default=None,
                        help="where to build them (default: $CODESWITCH_STANDINS or runs/_standins)")
    parser.add_argument("--sizes", default="ci", choices=tuple(SIZES),
                        help="ci: small models into DIR/models (paper-ci); paper: the real models' configurations into "
                             "DIR/models-paper (paper-gpu; GBs, random weights); vocab: small models with the real "
                             "vocabulary sizes into DIR/models-paper (a CPU rehearsal of paper-gpu)")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help=f"comma-separated stand-ins to build (default: all of {', '.join(STANDINS)})")
    args = parser.parse_args()
    only = None if args.only is None else [n for n in args.only.split(",") if n]
    for name, path in build_all(args.dir if args.dir is not None else default_root(), args.sizes, only).items():
        print(f"{name:<20} {path}")
