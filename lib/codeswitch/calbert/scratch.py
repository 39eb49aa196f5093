"""CalBERT's baselines of Tables 8 and 13: transformers pre-trained from scratch with masked language modelling.

The paper's baselines: a transformer pre-trained only on the code-mixed pairs, with
masked language modelling.  As the released script: a tokenizer trained with the
``tokenizers`` library (``BertWordPieceTokenizer`` for BERT and DistilBERT,
``ByteLevelBPETokenizer`` for RoBERTa) on the code-mixed side ("small") or on both
sides ("big"); a randomly initialised 6-layer model; the MLM loss

    L_mlm = mean over masked positions m of −log p(x_m | x with 15% of tokens masked)

(transformers' ``DataCollatorForLanguageModeling``: of the chosen 15%, 80% become
the mask token, 10% a random token, 10% stay; the released loop masks all of them
and scores every token), AdamW at a constant learning rate.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Sequence

from .config import ScratchRun
from .data import Pair
from .train import epoch_printer
from ..core.checkpoints import checkpoint_directory
from ..core.learning import learning
from ..core.training import quiet_trainer, training_arguments
from ..core.utils import quiet_transformers, set_seed, trainer_optim

__all__ = ["train_scratch_tokenizer", "mlm_from_scratch"]

# The released script's position table (RoBERTa's positions start after the padding index): room for the
# fine-tuning lengths, which may exceed the pre-training's max_seq_length.
MAX_POSITIONS = 514

def train_scratch_tokenizer(spec: ScratchRun, pairs: Sequence[Pair]):
    """The run's tokenizer, trained on its pairs (code-mixed side; both sides for "big"), as a transformers fast tokenizer."""
    from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer
    from transformers import BertTokenizerFast, DistilBertTokenizerFast, RobertaTokenizerFast

    texts = [p.codemixed for p in pairs] + ([p.english for p in pairs] if spec.tokenizer == "big" else [])
    with tempfile.TemporaryDirectory(prefix="calbert-tok.") as tmp:
        if spec.architecture == "RoBERTa":
            tok = ByteLevelBPETokenizer()
            tok.train_from_iterator(texts, vocab_size=spec.vocab_size, min_frequency=spec.min_frequency,
                                    special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
            tok.save_model(tmp)  # vocab.json + merges.txt: what from_pretrained reads
            return RobertaTokenizerFast.from_pretrained(tmp, model_max_length=MAX_POSITIONS - 2)
        tok = BertWordPieceTokenizer()  # lower-cases, as the released tokenizers
        tok.train_from_iterator(texts, vocab_size=spec.vocab_size, min_frequency=spec.min_frequency,
                                special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False)
        tok.save_model(tmp)  # vocab.txt
        cls = DistilBertTokenizerFast if spec.architecture == "DistilBERT" else BertTokenizerFast
        return cls.from_pretrained(tmp, model_max_length=MAX_POSITIONS - 2, do_lower_case=True)


def _scratch_config(spec: ScratchRun, tokenizer):
    from transformers import BertConfig, DistilBertConfig, RobertaConfig

    size = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    if spec.initializer_range is not None:  # else the config class's default, 0.02 (the released script's)
        size["initializer_range"] = spec.initializer_range
    if spec.architecture == "DistilBERT":
        return DistilBertConfig(dim=spec.hidden_size, n_layers=spec.num_hidden_layers, n_heads=spec.num_attention_heads,
                                hidden_dim=spec.intermediate_size, max_position_embeddings=MAX_POSITIONS, **size)
    cls = RobertaConfig if spec.architecture == "RoBERTa" else BertConfig
    extra = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, type_vocab_size=1) if cls is RobertaConfig else {}
    return cls(hidden_size=spec.hidden_size, num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
               intermediate_size=spec.intermediate_size, max_position_embeddings=MAX_POSITIONS, **size, **extra)


def mlm_from_scratch(spec: ScratchRun, pairs: Sequence[Pair], *, output_dir: str | Path, device: str = "cpu",
                     desc: str = "mlm") -> dict:
    """Train a tokenizer and a masked language model from scratch on ``pairs`` as ``spec`` says; save both to ``output_dir``.

    ``output_dir`` receives an ordinary Hugging Face folder (written atomically) that
    ``AutoModelForSequenceClassification.from_pretrained`` opens.  Returns the
    training loss, the step count, the number of texts and the vocabulary size.
    """
    from datasets import Dataset
    from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling, Trainer

    if len(pairs) < 2:
        raise ValueError(f"pre-training from scratch needs at least 2 pairs, got {len(pairs)}")
    set_seed(spec.seed)  # before the model is built: its random initialisation
    tokenizer = train_scratch_tokenizer(spec, pairs)
    with quiet_transformers():
        model = AutoModelForMaskedLM.from_config(_scratch_config(spec, tokenizer))
    texts = [p.codemixed for p in pairs]  # the model learns from the code-mixed side (released: the transliterations)
    enc = tokenizer(texts, truncation=True, max_length=spec.max_seq_length, return_special_tokens_mask=True)
    train = Dataset.from_dict(dict(enc))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=spec.mlm_probability)

    output_dir = Path(output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".trainer.", dir=output_dir.parent) as scratch:
        targs = training_arguments(
            output_dir=scratch, device=device, precision=spec.precision, seed=spec.seed, total_batch_size=spec.batch_size,
            num_train_epochs=spec.num_train_epochs,
            learning_rate=spec.learning_rate,
            lr_scheduler_type="constant",  # the released loop: plain AdamW, no schedule
            weight_decay=0.0,
            optim=trainer_optim(device, cpu="fused"),  # fused AdamW (CPU too: smoke results)
            logging_strategy="epoch",
            save_strategy="no",
            dataloader_num_workers=0,
            dataloader_persistent_workers=False,
        )
        with quiet_transformers():
            trainer = quiet_trainer(Trainer)(model=model, args=targs, train_dataset=train, data_collator=collator,
                                             callbacks=[epoch_printer(desc, spec.num_train_epochs)])
            out = trainer.train()
        with checkpoint_directory(output_dir) as tmp, quiet_transformers():
            model.save_pretrained(tmp, safe_serialization=True)
            tokenizer.save_pretrained(tmp)
    loss = float(out.training_loss)
    # chance: a model that predicts every masked token uniformly over the vocabulary has loss ln |V|
    entry = learning("MLM loss (training, nats)", loss, math.log(len(tokenizer)), baseline_name="chance", margin=MLM_MARGIN,
                     higher_is_better=False)
    return {"train_loss": loss, "steps": int(out.global_step), "texts": len(texts), "vocab_size": len(tokenizer), "learning": entry}


#: how far (nats) the mean MLM training loss must fall below ln |V|, the loss of uniform guessing
MLM_MARGIN = 0.3
