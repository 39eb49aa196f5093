"""Local stand-ins for the paper profile's models: same class and tokenizer type, random weights, small.

A stand-in is an ordinary Hugging Face folder (``config.json``, ``model.safetensors``,
tokenizer files) that a user's pre-downloaded copy would also be, so loading it
takes the same ``from_pretrained`` path as the real model.  Only the sizes differ;
the weights are random (seeded: the same folder on every machine), so a stand-in
proves that the code path runs, never what the real model would score.

==================  ==================================  ==========================================
name                stands in for                       class / tokenizer
==================  ==================================  ==========================================
``nllb``            ``facebook/nllb-200-distilled-600M`` ``M2M100ForConditionalGeneration`` /
                    (the Koglish translator)             ``NllbTokenizer`` (BPE over the project's
                                                         corpus; language tokens ``eng_Latn``,
                                                         ``kor_Hang``)
==================  ==================================  ==========================================
"""

from __future__ import annotations

import json
from pathlib import Path

from .models import corpus_files
from .runs import atomic_directory

__all__ = ["STANDINS", "build_standin"]

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
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = M2M100ForConditionalGeneration(config)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)


#: name -> builder(dest)
STANDINS = {"nllb": _nllb}


def build_standin(name: str, root: str | Path) -> Path:
    """Build (once) the stand-in ``name`` under ``root`` and return its folder."""
    if name not in STANDINS:
        raise KeyError(f"no stand-in {name!r}; known: {', '.join(sorted(STANDINS))}")
    dest = Path(root) / name
    if (dest / "config.json").is_file():
        return dest
    with atomic_directory(dest, replace=False) as tmp:
        STANDINS[name](Path(tmp))
    return dest
