"""The benchmark harness: how fast the paper profile's hot paths run, in one table.

``python -m benchmarks`` (CI-sized: tiny models, a few steps, CPU) or
``python -m benchmarks --full`` (the paper's sizes, on the GPU) runs each hot
path of :mod:`benchmarks.hotpaths` for ``--warmup`` steps, then ``--steps``
timed steps, and prints one Markdown table: step time, sequences/s, non-padding
tokens/s, padding share, model TFLOP/s and MFU (on GPU; FLOPs formula in
:mod:`benchmarks.measure`), peak memory, and for the ConCSE step the speed-up
over a released-code-style reference loop measured in the same run.  ``--out DIR``
also writes ``bench.json`` and ``bench.md``.

Example::

    python -m benchmarks --full --out runs/bench            # on one GPU
    python -m benchmarks --full --device cpu --steps 1 --warmup 0 --layers 1 --batch-scale 0.05
    python -m benchmarks lengths --koglish /data/koglish --tokenizer bert-base-multilingual-uncased

The estimated GPU-hours of each notebook follow from the measured rates
(:mod:`benchmarks.cost`, ``python -m benchmarks cost runs/bench/bench.json``).
"""

from __future__ import annotations

from .measure import PEAK_BF16_TFLOPS, FlopModel, Measurement, markdown_table

__all__ = ["PEAK_BF16_TFLOPS", "FlopModel", "Measurement", "markdown_table", "run", "write_report"]


def run(*args, **kwargs):
    """See :func:`benchmarks.__main__.run`."""
    from .__main__ import run as _run

    return _run(*args, **kwargs)


def write_report(out, report: dict) -> None:
    """Write a benchmark's JSON record to ``out`` atomically (its folder made if needed): one way for every command."""
    import json
    from pathlib import Path

    from codeswitch.core.atomic import atomic_write_text

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(out), json.dumps(report, indent=2) + "\n")
