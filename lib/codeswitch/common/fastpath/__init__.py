"""The fast-path helpers several experiments share, one idea a module: length bucketing (:mod:`.buckets`), packing
(:mod:`.packing`), ``torch_compile`` (:mod:`.torch_compile`), SDPA-ready masks (:mod:`.sdpa`), prefetching
(:mod:`.prefetch`), the corpus encoder (:mod:`.encode`).  Import from here: the names below are the public API.

* :func:`length_buckets` / :func:`bucket_features` / :func:`embed_length_buckets`:
  one training step cut into length buckets where that saves padding (ConCSE).
* :func:`token_budgets` / :func:`pack_features` / :func:`embed_packed`: one training
  step packed without padding into ``R × width`` tokens, ``R`` from at most four
  budgets, block-diagonal attention, per-sentence positions (issue 24).
* :func:`uses_sdpa` / :func:`sdpa_ready`: padding masks decided on the host, so
  transformers never synchronises with the device to inspect them.
* :func:`compile_for_training` / :func:`cudagraph_step_begin`: a model's training forward
  under ``torch.compile`` (every trainer's ``torch_compile`` setting: ``true`` or
  ``reduce-overhead``, CUDA graphs over the packed budgets), and the step marks CUDA
  graph trees need.
* :func:`prefetched`: the next items computed in background threads.
* :func:`encode_corpus` / :func:`encode_texts`: the resumable, length-sorted corpus
  encoder (``.npy`` rows written in windows, resumed after an interruption), its batches
  optionally padded to fixed-width buckets (:func:`encode_bucket_widths`); the design
  notes are in :mod:`codeswitch.contrastivemix.evaluate`.
"""

from .buckets import DEFAULT_BUCKET_COST, bucket_features, embed_length_buckets, length_buckets
from .encode import encode_bucket_widths, encode_corpus, encode_texts
from .packing import PACK_WIDTH, embed_packed, first_fit, grouped_budgets, least_padding, pack_features, sampled_budgets, token_budgets
from .prefetch import prefetched
from .sdpa import sdpa_ready, uses_sdpa
from .torch_compile import REDUCE_OVERHEAD, TorchCompile, check_torch_compile, compile_for_training, cudagraph_step_begin

__all__ = [
    "DEFAULT_BUCKET_COST", "length_buckets", "bucket_features", "embed_length_buckets",
    "PACK_WIDTH", "token_budgets", "sampled_budgets", "grouped_budgets", "least_padding", "first_fit", "pack_features", "embed_packed",
    "REDUCE_OVERHEAD", "TorchCompile", "check_torch_compile", "compile_for_training", "cudagraph_step_begin", "uses_sdpa", "sdpa_ready",
    "prefetched", "encode_bucket_widths", "encode_corpus", "encode_texts",
]
