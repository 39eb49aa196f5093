"""Token-length distributions of the benchmark's inputs, and the batches drawn from them.

Padding decides how much of a step's compute is wasted, so the benchmark never pads
to a constant length: every sentence's length is drawn from the distribution of the
dataset the hot path trains on.  The distributions live in one small shipped file,
``benchmarks/lengths.json``:

* ``koglish_nli``: one histogram per ConCSE column (premise … cs_contradiction);
* ``koglish_glue_pairs``: one histogram per Koglish-GLUE pair task, sentence pairs
  tokenised together, mixed by the tasks' training-set sizes (ConCSE Table 1);
  ``koglish_glue_single``: the same for CoLA and SST-2 (used by the cost estimate);
* ``mrtydi_queries`` / ``mrtydi_passages``: a *synthetic* Mr.TyDi-like shape
  (discretised log-normal; see the ``source`` field of each entry);
* ``alignment_pairs``: per script (Devanagari, Roman), one histogram per side
  (English, Hindi) of the IIT Bombay parallel pairs, each side tokenised from its
  words as the alignment trainer does (``alignment.train.PairTokens``);
* ``calbert_finetune``: one histogram per CalBERT fine-tuning task (SAIL 2017,
  IITP product reviews), the training sentences as the paper profile's models see
  them (romanised where the task says so).

The recorded histograms are counts of token lengths (``[CLS] … [SEP]`` included), not
text.  They are made from folders in the released layouts and a tokenizer: the Koglish
ones by :func:`koglish_histograms`, the alignment ones by :func:`alignment_histograms`,
the CalBERT ones by :func:`calbert_histograms` (``python -m benchmarks lengths --koglish DIR
--alignment DIR --sail DIR --iitp DIR --tokenizer PATH``, any of the folders); the shipped
ones record which tokenizer and data they come from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from codeswitch.concse.loss import NLI_TO_COLUMNS
from codeswitch.core.atomic import atomic_write_text

LENGTHS_FILE = Path(__file__).resolve().parent / "lengths.json"

NLI_COLUMNS = NLI_TO_COLUMNS  # Koglish-NLI column -> ConCSE column
GLUE_PAIR_TASKS = ("qnli", "mrpc", "stsb", "rte")
GLUE_SINGLE_TASKS = ("cola", "sst2")


@dataclass(frozen=True)
class LengthDist:
    """A distribution of token lengths: ``values[i]`` occurs with probability ``probs[i]``."""

    name: str
    values: np.ndarray  # (K,) int, sorted
    probs: np.ndarray  # (K,) float, sums to 1
    source: str = ""

    def sample(self, n: int, rng: np.random.Generator, max_length: int, min_length: int = 2) -> np.ndarray:
        """``n`` lengths, truncated to ``max_length`` as the tokenizer would (at least ``min_length``: [CLS] [SEP])."""
        out = rng.choice(self.values, size=n, p=self.probs)
        return np.clip(out, min_length, max_length).astype(np.int64)

    def mean(self, max_length: int) -> float:
        return float(np.sum(np.minimum(self.values, max_length) * self.probs))

    @classmethod
    def from_histogram(cls, name: str, hist: Mapping[str | int, int | float], source: str = "") -> "LengthDist":
        if not hist:
            raise ValueError(f"length distribution '{name}': empty histogram")
        items = sorted((int(k), float(v)) for k, v in hist.items())
        values = np.array([k for k, _ in items], dtype=np.int64)
        counts = np.array([v for _, v in items], dtype=np.float64)
        if (values < 1).any() or (counts < 0).any() or counts.sum() <= 0:
            raise ValueError(f"length distribution '{name}': lengths must be >= 1 and counts >= 0 with a positive total")
        return cls(name, values, counts / counts.sum(), source)

    @classmethod
    def lognormal(cls, name: str, median: float, sigma: float, low: int, high: int, source: str = "") -> "LengthDist":
        """A log-normal with this median and σ (of log length), discretised on ``low..high`` (renormalised)."""
        from scipy.stats import lognorm

        edges = np.arange(low, high + 2) - 0.5
        cdf = lognorm.cdf(edges, s=sigma, scale=median)
        probs = np.diff(cdf)
        return cls(name, np.arange(low, high + 1), probs / probs.sum(), source)

    @classmethod
    def mixture(cls, name: str, parts: Sequence["LengthDist"], weights: Sequence[float], source: str = "") -> "LengthDist":
        values = np.unique(np.concatenate([p.values for p in parts]))
        probs = np.zeros(len(values))
        w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
        for p, wi in zip(parts, w):
            probs[np.searchsorted(values, p.values)] += wi * p.probs
        return cls(name, values, probs / probs.sum(), source)


# --------------------------------------------------------------------------- the shipped table
def load_table(path: str | Path | None = None) -> dict:
    path = Path(path or LENGTHS_FILE)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"length table {path} is missing (make it with `python -m benchmarks lengths`)") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from exc


def _entry(table: Mapping, key: str, path: str) -> Mapping:
    if key not in table:
        raise KeyError(f"{path}: no entry '{key}' (entries: {sorted(k for k in table if not k.startswith('_'))})")
    return table[key]


def _dist(name: str, spec: Mapping, where: str) -> LengthDist:
    if spec.get("kind") == "lognormal":
        try:
            return LengthDist.lognormal(name, spec["median"], spec["sigma"], spec["min"], spec["max"], spec.get("source", ""))
        except KeyError as exc:
            raise ValueError(f"{where}: lognormal entry '{name}' lacks {exc}") from exc
    return LengthDist.from_histogram(name, spec["histogram"], spec.get("source", ""))


def nli_columns(path: str | Path | None = None) -> dict[str, LengthDist]:
    """ConCSE column -> length distribution (Koglish-NLI)."""
    table, where = load_table(path), str(path or LENGTHS_FILE)
    e = _entry(table, "koglish_nli", where)
    return {col: LengthDist.from_histogram(col, hist, e.get("source", "")) for col, hist in e["columns"].items()}


def glue_pairs(path: str | Path | None = None) -> LengthDist:
    """Koglish-GLUE sentence pairs, the pair tasks mixed by their Table 1 training sizes."""
    table, where = load_table(path), str(path or LENGTHS_FILE)
    e = _entry(table, "koglish_glue_pairs", where)
    tasks = list(e["tasks"])
    parts = [LengthDist.from_histogram(t, e["tasks"][t]) for t in tasks]
    weights = [float(e["weights"][t]) for t in tasks]
    return LengthDist.mixture("koglish_glue_pairs", parts, weights, e.get("source", ""))


def glue_task(task: str, path: str | Path | None = None) -> LengthDist:
    """One Koglish-GLUE task's input lengths (pairs tokenised together), English and code-switched pooled."""
    table, where = load_table(path), str(path or LENGTHS_FILE)
    for key in ("koglish_glue_pairs", "koglish_glue_single"):
        e = _entry(table, key, where)
        if task in e["tasks"]:
            return LengthDist.from_histogram(task, e["tasks"][task], e.get("source", ""))
    raise KeyError(f"{where}: no length histogram for the GLUE task '{task}'")


def mrtydi(kind: str, path: str | Path | None = None) -> LengthDist:
    """``kind`` = "queries" | "passages": the synthetic Mr.TyDi-like length shape."""
    table, where = load_table(path), str(path or LENGTHS_FILE)
    name = f"mrtydi_{kind}"
    return _dist(name, _entry(table, name, where), where)


#: the sides of an alignment pair, in the order the packed alignment step packs them (English, then Hindi)
ALIGNMENT_SIDES = ("english", "hindi")
CALBERT_TASKS = ("sail", "iitp")


def alignment_sides(script: str = "devanagari", path: str | Path | None = None) -> dict[str, LengthDist]:
    """Side ("english", "hindi") -> length distribution of the IIT Bombay parallel pairs in ``script``."""
    table, where = load_table(path), str(path or LENGTHS_FILE)
    e = _entry(table, "alignment_pairs", where)
    if script not in e["scripts"]:
        raise KeyError(f"{where}: alignment_pairs has no script '{script}' (scripts: {sorted(e['scripts'])})")
    return {side: LengthDist.from_histogram(f"{script}/{side}", e["scripts"][script][side], e.get("source", ""))
            for side in ALIGNMENT_SIDES}


def calbert_task(task: str, path: str | Path | None = None) -> LengthDist:
    """A CalBERT fine-tuning task's ("sail", "iitp") training sentence lengths."""
    table, where = load_table(path), str(path or LENGTHS_FILE)
    e = _entry(table, "calbert_finetune", where)
    if task not in e["tasks"]:
        raise KeyError(f"{where}: calbert_finetune has no task '{task}' (tasks: {sorted(e['tasks'])})")
    return LengthDist.from_histogram(task, e["tasks"][task], e.get("source", ""))


# --------------------------------------------------------------------------- batches
def token_batch(lengths: np.ndarray, vocab_size: int, rng: np.random.Generator, *, cls_id: int, sep_id: int, pad_id: int,
                pad_to: int | None = None, n_special: int = 5) -> dict:
    """Random token ids with the given lengths, padded on the right to the longest (or ``pad_to``).

    Each row is ``[CLS] t … t [SEP]``; ``t`` uniform over the vocabulary minus the
    first ``n_special`` ids (the text does not matter for speed, the shape does).
    Returns CPU tensors ``input_ids``, ``attention_mask`` (and ``token_type_ids`` of zeros).
    """
    import torch

    n = len(lengths)
    width = int(pad_to if pad_to is not None else lengths.max())
    ids = np.full((n, width), pad_id, dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    low = min(n_special, vocab_size - 1)
    for i, length in enumerate(lengths):
        length = int(min(length, width))
        ids[i, :length] = rng.integers(low, vocab_size, size=length)
        ids[i, 0], ids[i, length - 1] = cls_id, sep_id
        mask[i, :length] = 1
    return {
        "input_ids": torch.from_numpy(ids),
        "attention_mask": torch.from_numpy(mask),
        "token_type_ids": torch.zeros((n, width), dtype=torch.long),
    }


# --------------------------------------------------------------------------- making the table
def _histogram(lengths) -> dict[str, int]:
    values, counts = np.unique(np.asarray(list(lengths), dtype=np.int64), return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts)}


def koglish_histograms(koglish_dir: str, tokenizer, *, max_rows: int | None = None, name: str | None = None) -> dict:
    """The two Koglish entries of the length table, from a folder in the released layout.

    Lengths are untruncated token counts including special tokens (the benchmark
    truncates them to each hot path's maximum length).  GLUE pair tasks are tokenised
    as pairs, English and code-switched rows pooled (the EN2EN and CS2CS scenarios).
    """
    from codeswitch.koglish.data import load_glue, load_nli

    def count(texts_a, texts_b=None):
        enc = tokenizer(list(texts_a), list(texts_b) if texts_b is not None else None, truncation=False)
        return [len(x) for x in enc["input_ids"]]

    nli = load_nli(koglish_dir)
    nli = nli.iloc[:max_rows] if max_rows else nli
    name = name or getattr(tokenizer, "name_or_path", type(tokenizer).__name__)  # how the source names the tokenizer
    out = {
        "koglish_nli": {
            "source": f"Koglish-NLI train ({len(nli)} rows of {Path(koglish_dir).name}), tokenizer {name}",
            "columns": {col: _histogram(count(nli[src].astype(str))) for src, col in NLI_COLUMNS.items()},
        }
    }
    for key, task_names, pair in (("koglish_glue_pairs", GLUE_PAIR_TASKS, True), ("koglish_glue_single", GLUE_SINGLE_TASKS, False)):
        tasks, weights = {}, {}
        for task in task_names:
            df = load_glue(koglish_dir, task, "train")
            df = df.iloc[:max_rows] if max_rows else df
            if pair:
                lengths = count(df["sentence1"].astype(str), df["sentence2"].astype(str))
                lengths += count(df["cross1"].astype(str), df["cross2"].astype(str))
            else:
                lengths = count(df["sentence"].astype(str)) + count(df["cross"].astype(str))
            tasks[task] = _histogram(lengths)
            weights[task] = _table1_train_rows(task) or 1.0
        out[key] = {
            "source": f"Koglish-GLUE {'pair' if pair else 'single-sentence'} tasks, train (up to {max_rows or 'all'} rows each, "
            f"English and code-switched), tokenizer {name}; mixed by ConCSE Table 1 training sizes",
            "tasks": tasks,
            "weights": weights,
        }
    return out


def alignment_histograms(parallel_dir: str, tokenizer, *, max_rows: int | None = None, name: str | None = None) -> dict:
    """The ``alignment_pairs`` entry of the length table, from a parallel folder (the authors' layout:
    ``Devanagari/`` and ``Romanized/`` with ``valid.tsv``, or a folder :func:`codeswitch.alignment.data.load_parallel`
    reads), its validation pairs: untruncated token counts of each side, tokenised from its words as the trainer does."""
    from codeswitch.alignment.data import load_parallel, words

    scripts, n = {}, {}
    for script in ("devanagari", "roman"):
        data = load_parallel(parallel_dir, "validation", script=script, limit=max_rows, what="--alignment")
        n[script] = len(data)
        scripts[script] = {side: _histogram(len(r) for r in tokenizer([words(p[k]) for p in data.pairs], is_split_into_words=True,
                                                                       truncation=False)["input_ids"])
                           for k, side in enumerate(ALIGNMENT_SIDES)}
    name = name or getattr(tokenizer, "name_or_path", type(tokenizer).__name__)  # how the source names the tokenizer
    return {"alignment_pairs": {
        "source": f"IIT Bombay English-Hindi validation pairs ({', '.join(f'{s}: {k}' for s, k in n.items())} of "
                  f"{Path(parallel_dir).name}), each side tokenised from its words, tokenizer {name}",
        "scripts": scripts}}


def calbert_histograms(folders: Mapping[str, str], tokenizer, *, max_rows: int | None = None, name: str | None = None) -> dict:
    """The ``calbert_finetune`` entry of the length table, from the tasks' folders (``{"sail": DIR, "iitp": DIR}``, the
    layouts :func:`codeswitch.common.sentiment.load_sentiment_splits` reads): the training sentences as the paper
    profile's models see them (romanised and lower-cased where it says so), untruncated token counts."""
    from codeswitch import calbert as C
    from codeswitch.calbert.experiment import read_task_splits
    from codeswitch.core.profiles import load_profile

    paper = C.config.load(load_profile("paper"))
    tasks, n = {}, {}
    for task, folder in folders.items():
        t = paper.task(task)
        train = list(read_task_splits(task, str(folder), t.romanise, bool(paper.itrans_lowercase))["train"])[:max_rows]
        n[task] = f"{len(train)} of {Path(folder).name}{', romanised' if t.romanise else ''}"
        enc = tokenizer([e.text for e in train], truncation=False)
        tasks[task] = _histogram(len(x) for x in enc["input_ids"])
    name = name or getattr(tokenizer, "name_or_path", type(tokenizer).__name__)  # how the source names the tokenizer
    return {"calbert_finetune": {
        "source": f"CalBERT fine-tuning training sentences ({'; '.join(f'{t}: {k}' for t, k in n.items())}), "
                  f"tokenizer {name}",
        "tasks": tasks}}


def _table1_train_rows(task: str) -> float | None:
    """The training-set size of a Koglish-GLUE task as ConCSE Table 1 prints it."""
    from codeswitch.core.reported import lookup

    label = {"stsb": "STS-B", "sst2": "SST-2", "cola": "CoLA"}.get(task, task.upper())
    rep = lookup("concse", "table1", f"GLUE/{label}", "Train")
    return rep.value if rep is not None else None


def write_table(entries: Mapping, path: str | Path | None = None, about: str | None = None) -> Path:
    """Merge ``entries`` into the length table at ``path`` (atomically); other entries are kept."""
    path = Path(path or LENGTHS_FILE)
    table = load_table(path) if path.is_file() else {}
    table.update(entries)
    if about:
        table["_about"] = about
    atomic_write_text(path, json.dumps(table, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return path
