"""How much host memory, and how much time, corpus encoding takes (issue 8 (d)).

``python -m benchmarks memory --passages N [--model tiny|random:mbert-base|PATH] [--batch 512] [--window 32] [--models 1] [--out DIR]``

The target: encoding a million passages never holds more than the current batches'
text in memory (peak host memory under 4 GB), at ≥ 20,000 passages/s for mBERT-base
on one H200.  The measurement takes the experiment's own path, end to end:

1. **write** (a child process): a synthetic Mr.TyDi-like corpus of ``N`` passages in
   the layout the experiment reads, ``<dir>/mrtydi-v1.1-korean/corpus.jsonl.gz``
   (one JSON object per line: ``docid``, ``title``, ``text``), written in chunks of
   10,000 passages — never the whole corpus in a list.  Passage lengths (in tokens,
   ``[CLS]``/``[SEP]`` included, before truncation) are drawn from
   :func:`benchmarks.lengths.mrtydi` ``("passages")``; the words are those of
   the project's tokenizer corpus (``lib/codeswitch/assets/corpus/*.txt``), as many
   as the encoder's tokenizer needs on average to reach the drawn length.  The child
   then loads it once with :func:`codeswitch.contrastivemix.data.load_collection`, which
   converts it to the memory-mapped Arrow table the experiment reads (in a private
   ``HF_DATASETS_CACHE`` inside the work folder).
2. **encode** (a fresh child process, so that its peak belongs to the encoding):
   imports, the collection (memory-mapped), the tokenizer and the passage encoder
   (``tiny`` = the tiny-bert backbone of :mod:`codeswitch.core.models`, or a folder / hub
   id such as mBERT) are loaded; the resident memory is read (*RSS before*); then
   :func:`codeswitch.common.fastpath.encode_corpus` encodes the corpus into a
   float16 ``.npy`` exactly as notebook 05 does (length-sorted windows of
   ``--window`` batches of ``--batch`` passages, ``--max-length`` 128, bf16 autocast
   and SDPA on a GPU).  Afterwards the process's peak resident memory
   (``VmHWM``, reset just before encoding; ``ru_maxrss`` where there is no /proc) is read (*peak RSS*).

*peak − before* is what encoding added to the process at its worst.  It counts
anonymous memory (text, token ids, embeddings, tensors) and the pages of
memory-mapped files the process touched (the Arrow table it reads: reclaimable page
cache, but resident while mapped).  The child also samples ``RssAnon`` /
``RssFile`` of ``/proc/self/status`` every 10 ms (Linux) and reports their peaks,
so the two can be told apart.  The embeddings file is written with ``pwrite``, not
through a writable memory map, so it does not count.  Afterwards the parent checks
the file: ``(N, H)`` float16, finite, no all-zero row (a row never written).

Output: one Markdown table; ``--out DIR`` also writes ``DIR/memory.json``
(atomically).  ``--keep`` keeps the work folder (corpus, Arrow cache, embeddings).

``--compare-buckets STEP [--repeats R]`` (issue 40, item 3) measures instead, in phase 2's one
process, passages/s end to end from the token shards to the written ``.npy`` of the current
path (each batch padded to its longest row) against fixed-width buckets
(``encode_bucket_step = STEP``: widths STEP, 2·STEP, …, ``--max-length``), interleaved
A B A B … after one untimed round of each, ``R`` timed rounds; it reports the median, min and max
of each, the per-round ratio, the distinct input shapes each path gave the encoder, and how far
the bucketed files are from the current path's (float16 rounding).  ``--out FILE.json`` writes that record.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

__all__ = ["measure", "markdown", "main", "write_corpus"]

LANGUAGE = "ko"  # any Mr.TyDi language: only the folder name depends on it
RESULT_MARK = "CODESWITCH-MEMORY-RESULT "
CHUNK = 10_000  # passages generated and written at a time


# --------------------------------------------------------------------------- memory readings
def _status_mb() -> dict[str, float]:
    """Resident memory now, from /proc/self/status (Linux): VmRSS, RssAnon, RssFile in MB; {} elsewhere."""
    out = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(value.split()[0]) / 1024  # kB -> MB
    except OSError:
        pass
    return out


def _maxrss_mb() -> float:
    """The process's peak resident memory so far, in MB.

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this process's own
    memory (reset by :func:`_reset_peak`).  Not ``ru_maxrss``: a child started by fork
    and exec inherits in it the *parent's* size at the fork (a test process that has run
    the notebooks, ~1 GB), which is not the encoder's.  Elsewhere ``ru_maxrss``.
    """
    hwm = _status_mb().get("VmHWM")
    if hwm is not None:
        return hwm
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _reset_peak() -> None:
    """Reset ``VmHWM`` to the current resident size (Linux ≥ 4.0: ``echo 5 > /proc/self/clear_refs``); else nothing."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


class _Sampler:
    """A background thread that keeps the peaks of RssAnon and RssFile (sampled every ``interval`` s)."""

    def __init__(self, interval: float = 0.01):
        import threading

        self.interval, self.peak = interval, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="codeswitch-rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for k, v in _status_mb().items():
                self.peak[k] = max(self.peak.get(k, 0.0), v)
            self._stop.wait(self.interval)

    def __enter__(self) -> "_Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# --------------------------------------------------------------------------- phase 1: the corpus
def _words() -> list[str]:
    """The distinct words of the project's tokenizer corpus (sorted: the same list on every machine)."""
    from codeswitch.core.models import corpus_files

    words: set[str] = set()
    for path in corpus_files():
        words.update(re.findall(r"\w+", path.read_text(encoding="utf-8")))
    if not words:
        raise RuntimeError("benchmarks.memory: the tokenizer corpus (lib/codeswitch/assets/corpus/*.txt) has no words")
    return sorted(words)


def write_corpus(root: Path, n: int, tokenizer, *, seed: int = 0) -> dict:
    """Write ``n`` synthetic passages to ``root/mrtydi-v1.1-korean/corpus.jsonl.gz`` in chunks; return facts about it.

    A passage's drawn length ``L`` (tokens, specials included) becomes
    ``max(2, round((L − 2) / t))`` words, ``t`` = the tokenizer's mean tokens per
    word of this vocabulary (measured on 200 samples); the first two words are the title.
    """
    import numpy as np

    from codeswitch.contrastivemix.data import MRTYDI_LANGUAGES
    from . import lengths as L

    words = np.array(_words(), dtype=object)
    rng = np.random.default_rng(seed)
    sample = [" ".join(words[rng.integers(0, len(words), 50)]) for _ in range(200)]
    tokens_per_word = float(np.mean([len(ids) for ids in tokenizer(sample, add_special_tokens=False)["input_ids"]])) / 50
    dist = L.mrtydi("passages")
    path = Path(root) / f"mrtydi-v1.1-{MRTYDI_LANGUAGES[LANGUAGE]}" / "corpus.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    n_words_total = 0
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=1) as fh:
        for lo in range(0, n, CHUNK):
            m = min(CHUNK, n - lo)
            lengths = dist.sample(m, rng, max_length=int(dist.values.max()))
            n_words = np.maximum(2, np.round((lengths - 2) / tokens_per_word)).astype(np.int64)
            ids = rng.integers(0, len(words), int(n_words.sum()))
            n_words_total += int(n_words.sum())
            lines = []
            for i, chosen in enumerate(np.split(words[ids], np.cumsum(n_words)[:-1])):
                lines.append(json.dumps({"docid": f"{lo + i}#0", "title": " ".join(chosen[:2]), "text": " ".join(chosen[2:])},
                                        ensure_ascii=False))
            fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return {"corpus_file": str(path), "corpus_file_mb": path.stat().st_size / 2**20, "tokens_per_word": tokens_per_word,
            "mean_words": n_words_total / max(n, 1), "vocabulary_words": len(words)}


def _write_phase(args: dict) -> dict:
    import datasets
    from transformers import AutoTokenizer

    from codeswitch.contrastivemix.data import load_collection

    datasets.disable_progress_bars()
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(args["model"])
    info = write_corpus(Path(args["root"]), args["passages"], tokenizer, seed=args["seed"])
    coll = load_collection("mrtydi", args["root"], LANGUAGE, what="bench memory corpus")  # json -> Arrow, once
    if len(coll) != args["passages"]:
        raise RuntimeError(f"{info['corpus_file']}: {len(coll)} passages read back, {args['passages']} written")
    arrow = sum(f.stat().st_size for f in Path(os.environ["HF_DATASETS_CACHE"]).rglob("*.arrow"))
    return {**info, "arrow_mb": arrow / 2**20, "write_seconds": time.perf_counter() - started}


# --------------------------------------------------------------------------- phase 2: encoding
def _loaded(args: dict):
    """``(collection, tokenizer, encoder, device, autocast dtype)`` of an encoding phase."""
    import datasets
    import torch
    from transformers import AutoTokenizer

    from codeswitch.contrastivemix.data import load_collection
    from codeswitch.core.encoders import load_encoder
    from codeswitch.core.utils import quiet_transformers

    datasets.disable_progress_bars()
    if args["threads"]:
        torch.set_num_threads(args["threads"])
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args["device"] == "auto" else args["device"])
    amp = None
    if device.type == "cuda":
        amp = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    coll = load_collection("mrtydi", args["root"], LANGUAGE, what="bench memory corpus")  # memory-mapped
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(args["model"])
        encoder = load_encoder(args["model"]).to(device).eval()
    return coll, tokenizer, encoder, device, amp


def _encode_phase(args: dict) -> dict:
    started = time.perf_counter()
    import torch

    import numpy as np

    from codeswitch.common import tokens as T
    from codeswitch.common.fastpath import encode_corpus

    coll, tokenizer, encoder, device, amp = _loaded(args)
    import gc

    gc.collect()
    _reset_peak()  # the peak from here on belongs to the encoding
    before, peak_before = _status_mb(), _maxrss_mb()
    setup = time.perf_counter() - started
    n, out_npy = len(coll), Path(args["out_npy"])
    times = []  # (tokenise or look up, encode) per model
    same = []  # each later model's file equals the first's
    with _Sampler() as sampler:
        for i in range(args["models"]):
            t0 = time.perf_counter()
            tokens = T.tokenised_corpus(tokenizer, coll.texts, n, max_length=args["max_length"], desc="tokenise")
            t1 = time.perf_counter()
            path = out_npy if i == 0 else out_npy.with_name(f"{out_npy.stem}-{i}.npy")
            emb = encode_corpus(encoder, tokenizer, coll.texts, n, path, max_length=args["max_length"],
                                batch_size=args["batch"], sort_window=args["window"], device=device, amp_dtype=amp,
                                desc="encode", tokens=tokens)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append((t1 - t0, time.perf_counter() - t1))
            if i:  # a later model (the same weights): compared with the first file in chunks, then removed
                first = np.load(out_npy, mmap_mode="r")
                same.append(all(np.array_equal(emb[lo : lo + 65536], first[lo : lo + 65536]) for lo in range(0, n, 65536)))
                del emb, first
                for p in path.parent.glob(f"{path.stem}.*"):
                    p.unlink()
            del tokens
    seconds = sum(times[0])
    later = [sum(t) for t in times[1:]]
    peak = _maxrss_mb()
    rss_before = before.get("VmRSS", peak_before)
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)",
        "autocast": None if amp is None else str(amp).replace("torch.", ""),
        "attention": encoder.config._attn_implementation,
        "hidden_size": encoder.config.hidden_size,
        "setup_seconds": setup,
        "tokenise_seconds": times[0][0],
        "tokenise_processes": T.tokenise_processes() if n >= T.PROCESS_MIN_TEXTS else 1,
        "encode_seconds": seconds,
        "passages_per_second": n / seconds if seconds > 0 else float("nan"),
        "models": args["models"],
        "from_shards_seconds": float(np.mean(later)) if later else None,
        "passages_per_second_from_shards": n / float(np.mean(later)) if later else None,
        "later_models_same_embeddings": all(same) if same else None,
        "rss_before_mb": rss_before,
        "peak_rss_before_mb": peak_before,
        "peak_rss_mb": peak,
        "peak_minus_before_mb": peak - rss_before,
        "anon_before_mb": before.get("RssAnon"),
        "peak_anon_mb": sampler.peak.get("RssAnon"),
        "file_before_mb": before.get("RssFile"),
        "peak_file_mb": sampler.peak.get("RssFile"),
    }


def _spread(xs) -> dict:
    import numpy as np

    return {"median": float(np.median(xs)), "min": float(min(xs)), "max": float(max(xs))}


def _buckets_phase(args: dict) -> dict:
    """The current path (padded to each batch's longest) against fixed-width buckets, interleaved in this process,
    end to end from the token shards to the written file; see the module docstring (``--compare-buckets``)."""
    import numpy as np

    from codeswitch.common import tokens as T
    from codeswitch.common.fastpath import encode_bucket_widths, encode_corpus

    coll, tokenizer, encoder, device, amp = _loaded(args)
    n, step, out_npy = len(coll), args["compare_buckets"], Path(args["out_npy"])
    tokens = T.tokenised_corpus(tokenizer, coll.texts, n, max_length=args["max_length"], desc="tokenise")
    arms = {"own_longest": 0, f"buckets_{step}": step}
    seconds, shapes = {a: [] for a in arms}, {a: set() for a in arms}
    hook_to = []
    encoder.register_forward_pre_hook(lambda m, a, kw: shapes[hook_to[-1]].add(tuple(kw["input_ids"].shape)), with_kwargs=True)
    max_abs, identical = 0.0, []
    for r in range(args["repeats"] + 1):  # round 0 warms both paths up, untimed
        for arm, bucket_step in arms.items():
            path = out_npy.with_name(f"{out_npy.stem}-{arm}.npy")
            for p in path.parent.glob(f"{path.stem}.*"):  # a finished file would be returned without encoding
                p.unlink()
            hook_to.append(arm)
            t0 = time.perf_counter()
            encode_corpus(encoder, tokenizer, coll.texts, n, path, max_length=args["max_length"], batch_size=args["batch"],
                          sort_window=args["window"], device=device, amp_dtype=amp, desc="encode", tokens=tokens,
                          bucket_step=bucket_step)
            if r:
                seconds[arm].append(time.perf_counter() - t0)
        a, b = (np.load(out_npy.with_name(f"{out_npy.stem}-{arm}.npy"), mmap_mode="r") for arm in arms)
        for lo in range(0, n, 65536):
            x, y = np.asarray(a[lo : lo + 65536], np.float32), np.asarray(b[lo : lo + 65536], np.float32)
            max_abs = max(max_abs, float(np.abs(x - y).max()))
            identical.append(int(np.all(x == y, axis=1).sum()))
        del a, b
    rate = {arm: [n / t for t in ts] for arm, ts in seconds.items()}
    (name_a, ra), (name_b, rb) = rate.items()
    return {"passages": n, "bucket_widths": list(encode_bucket_widths(step, args["max_length"])), "rounds": args["repeats"],
            "order": "one untimed round of each, then " + " ".join(["A B"] * args["repeats"]) + f" (A = {name_a}, B = {name_b})",
            "seconds": seconds, "passages_per_second": rate,
            "passages_per_second_spread": {arm: _spread(v) for arm, v in rate.items()},
            "ratio_b_over_a": [y / x for x, y in zip(ra, rb)], "ratio_b_over_a_spread": _spread([y / x for x, y in zip(ra, rb)]),
            "distinct_input_shapes": {arm: len(v) for arm, v in shapes.items()},
            "max_abs_difference_b_vs_a": max_abs, "rows_identical_b_vs_a": min(identical) / n if n else None,
            "hidden_size": encoder.config.hidden_size, "attention": encoder.config._attn_implementation,
            "device": _device_name(device), "autocast": None if amp is None else str(amp).replace("torch.", "")}


def _device_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"


def _child(phase: str, args: dict, env: dict) -> dict:
    """Run one phase in a fresh Python process; return the dict it prints."""
    cmd = [sys.executable, "-m", "benchmarks.memory", f"_{phase}", json.dumps(args)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-4000:]
        raise RuntimeError(f"benchmarks.memory: the {phase} phase failed (exit {proc.returncode}):\n{tail}")
    return json.loads(lines[-1][len(RESULT_MARK):])


def _check_embeddings(path: Path, n: int, dim: int) -> dict:
    """Shape, dtype, and rows that are all zero (never written) or not finite, read in chunks."""
    import numpy as np

    arr = np.load(path, mmap_mode="r")
    zero = bad = 0
    for lo in range(0, arr.shape[0], 65536):
        chunk = np.asarray(arr[lo : lo + 65536], dtype=np.float32)
        zero += int(np.all(chunk == 0, axis=1).sum())
        bad += int((~np.isfinite(chunk)).any(axis=1).sum())
    return {"shape": list(arr.shape), "dtype": str(arr.dtype), "expected_shape": [n, dim], "zero_rows": zero, "nonfinite_rows": bad,
            "embeddings_mb": path.stat().st_size / 2**20}


# --------------------------------------------------------------------------- the measurement
def measure(passages: int, *, model: str = "tiny", batch: int = 512, window: int = 32, max_length: int = 128,
            device: str = "auto", threads: int | None = None, seed: int = 0, workdir: str | Path | None = None,
            keep: bool = False, models: int = 1, compare_buckets: int = 0, repeats: int = 3) -> dict:
    """Write a synthetic corpus of ``passages`` passages, encode it in a fresh process (``models`` times: the first
    tokenises it once, the others read its token shards), and report time and memory; with ``compare_buckets`` > 0,
    compare instead the current path with fixed-width buckets of that step, interleaved over ``repeats`` rounds."""
    from codeswitch.core.models import resolve_model

    if passages < 1:
        raise ValueError(f"--passages must be at least 1, got {passages}")
    if models < 1:
        raise ValueError(f"--models must be at least 1, got {models}")
    if compare_buckets < 0 or repeats < 1:
        raise ValueError(f"--compare-buckets must be >= 0 and --repeats >= 1, got {compare_buckets} and {repeats}")
    model_path = None if model.startswith("random:") else resolve_model("tiny-bert" if model == "tiny" else model, what="--model")
    work = Path(tempfile.mkdtemp(prefix="codeswitch-memory-", dir=workdir))
    model_note = None
    env = {**os.environ, "HF_DATASETS_CACHE": str(work / "hf-datasets"), "CODESWITCH_TOKEN_CACHE": str(work / "tokens"),
           "CODESWITCH_NO_PROGRESS": "1",
           "PYTHONWARNINGS": "ignore"}
    try:
        if model_path is None:  # random:NAME, a paper-size encoder with random weights (nothing downloads)
            from .hotpaths import save_random_backbone

            model_path, model_note = save_random_backbone(model.split(":", 1)[1], work / "model", seed=seed)
        args = {"root": str(work / "corpus"), "passages": passages, "model": str(model_path), "seed": seed, "batch": batch,
                "window": window, "max_length": max_length, "device": device, "threads": threads, "out_npy": str(work / "emb.npy"),
                "models": models, "compare_buckets": compare_buckets, "repeats": repeats}
        written = _child("write", args, env)
        if compare_buckets:
            return {"model": model if model == "tiny" else str(model), "model_note": model_note, "batch": batch,
                    "window": window, "max_length": max_length, "corpus_tokens_per_word": written["tokens_per_word"],
                    **_child("buckets", args, env)}
        encoded = _child("encode", args, env)
        check = _check_embeddings(Path(args["out_npy"]), passages, encoded["hidden_size"])
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return {
        "passages": passages,
        "model": model if model == "tiny" else str(model),
        "model_note": model_note,
        "batch": batch,
        "window": window,
        "max_length": max_length,
        "workdir": str(work) if keep else None,
        **written,
        **encoded,
        **check,
    }


def markdown(r: dict) -> str:
    """One small Markdown table of a :func:`measure` result."""
    def mb(x):
        return "–" if x is None else f"{x:,.0f}"

    shards = r.get("passages_per_second_from_shards")
    head = ("| passages | model | batch × window | device | texts → file (s) | of which tokenise once (s) | passages/s "
            "| later model, from the shards (passages/s) | RSS before (MB) | peak RSS (MB) "
            "| peak − before (MB) | peak anon (MB) | peak file-backed (MB) | embeddings (MB) |")
    row = (f"| {r['passages']:,} | {r['model']} (H = {r['hidden_size']}) | {r['batch']} × {r['window']} | {r['device']}, "
           f"{r['autocast'] or 'fp32'}, {r['attention']} | {r['encode_seconds']:.1f} "
           f"| {r['tokenise_seconds']:.1f} ({r['tokenise_processes']} proc.) | {r['passages_per_second']:,.0f} "
           f"| {'–' if shards is None else f'{shards:,.0f}'} "
           f"| {mb(r['rss_before_mb'])} | {mb(r['peak_rss_mb'])} | {mb(r['peak_minus_before_mb'])} | {mb(r['peak_anon_mb'])} "
           f"| {mb(r['peak_file_mb'])} | {r['embeddings_mb']:,.1f} |")
    return "\n".join([head, "|" + "---|" * 14, row])


def markdown_buckets(r: dict) -> str:
    """The interleaved comparison of :func:`measure` with ``compare_buckets`` as a small Markdown table."""
    lines = ["| path | passages/s, median (min–max) | distinct input shapes |", "|---|---|---|"]
    for arm, sp in r["passages_per_second_spread"].items():
        lines.append(f"| {arm} | {sp['median']:,.0f} ({sp['min']:,.0f}–{sp['max']:,.0f}) | {r['distinct_input_shapes'][arm]} |")
    q = r["ratio_b_over_a_spread"]
    lines.append(f"\n{r['passages']:,} passages, {r['model']} (H = {r['hidden_size']}), batch {r['batch']} × window "
                 f"{r['window']}, widths {r['bucket_widths']}, {r['device']}; B / A per round: median {q['median']:.3f} "
                 f"({q['min']:.3f}–{q['max']:.3f}); max |B − A| {r['max_abs_difference_b_vs_a']:.2e} (float16 file).")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks memory", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--passages", type=int, required=True, help="corpus size")
    p.add_argument("--model", default="tiny",
                   help="tiny (the tiny-bert backbone), random:mbert-base (paper size, random weights, nothing downloads), "
                        "or a folder / hub id of the passage encoder")
    p.add_argument("--batch", type=int, default=512, help="passages per batch")
    p.add_argument("--window", type=int, default=32, help="batches sorted by length together (0: corpus order)")
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads in the encoding process")
    p.add_argument("--models", type=int, default=1,
                   help="encodings of the corpus: the first tokenises it once, the later ones read its token shards")
    p.add_argument("--compare-buckets", type=int, default=0, metavar="STEP",
                   help="compare the current path with fixed-width buckets of STEP tokens, interleaved (0: off)")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds of --compare-buckets")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workdir", default=None, help="where the temporary corpus, Arrow cache and embeddings go (default: the system's)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--out", default=None, help="folder for memory.json (--compare-buckets: the record's .json file)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("_write", "_encode", "_buckets"):  # a child process of measure()
        phase = {"_write": _write_phase, "_encode": _encode_phase, "_buckets": _buckets_phase}[argv[0]]
        result = phase(json.loads(argv[1]))
        print(RESULT_MARK + json.dumps(result), flush=True)
        return 0
    a = _parser().parse_args(argv)
    load_before = os.getloadavg()
    from .measure import code_commit

    commit = code_commit()  # the code measured: read before the run
    result = measure(a.passages, model=a.model, batch=a.batch, window=a.window, max_length=a.max_length, device=a.device,
                     threads=a.threads, seed=a.seed, workdir=a.workdir, keep=a.keep,
                     models=a.models, compare_buckets=a.compare_buckets, repeats=a.repeats)
    if a.compare_buckets:
        return _buckets_report(result, argv, a.out, load_before, commit)
    table = markdown(result)
    print(table, flush=True)
    if a.out:
        from codeswitch.core.atomic import atomic_write_json

        command = "python -m benchmarks memory " + " ".join(argv)
        stamp = {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}  # what and when (issue 43)
        path = atomic_write_json(Path(a.out) / "memory.json", {**result, **stamp, "command": command, "table_markdown": table})
        print(f"[bench memory] wrote {path}", flush=True)
    ok = result["shape"] == result["expected_shape"] and result["zero_rows"] == 0 and result["nonfinite_rows"] == 0
    return 0 if ok else 1


def _buckets_report(result: dict, argv: list, out: str | None, load_before, commit: str) -> int:
    import platform

    import torch

    from . import write_report

    report = {"what": "corpus encoding end to end (token shards -> float16 .npy), padded to each batch's longest (A) "
                      "against fixed-width buckets (B), interleaved in one process (issue 40, item 3)",
              "commit": commit, "command": "python -m benchmarks memory " + " ".join(argv),
              "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "torch": torch.__version__,
                          "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
                          "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()]},
              **result}
    report["table_markdown"] = markdown_buckets(report)
    print(report["table_markdown"], flush=True)
    if out:
        write_report(out, report)
        print(f"[bench memory] wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
