"""``python -m benchmarks``: run the hot paths and print the table (see :mod:`benchmarks`).

Sub-commands::

    python -m benchmarks [options]          the benchmark (default: CI-sized, CPU)
    python -m benchmarks lengths ...        regenerate the recorded length histograms (Koglish, alignment, CalBERT)
    python -m benchmarks cost BENCH.json    estimated GPU-hours per notebook from measured rates
    python -m benchmarks batched [--sizes smoke,paper --ks 1,4,10]   K small fine-tunes stacked vs one by one (CPU)
    python -m benchmarks traced [DOC.md ...]   measured numbers of docs/performance.md, docs/cost.md with no record
    python -m benchmarks budgets [--out FILE]   padding of b_pk's packed batches: random vs length-grouped budgets
    python -m benchmarks overhead [--models mbert-base,xlmr-large]   a run's loading, saving and evaluation, timed apart
    python -m benchmarks memory --passages N   host memory and passages/s of the real corpus-encoding pipeline
    python -m benchmarks record [--from DIR]   write the recorded measurements into docs/cost.md, docs/performance.md, README.md
    python -m benchmarks ab --compare NAME ... two settings of each hot path interleaved A/B/A/B (×5) in one process
    python -m benchmarks gpu-notebooks ...     the notebooks at paper size on a GPU: wheels, report, record (scripts/gpu_notebooks.sh)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from .measure import Measurement, code_commit, device_name, markdown_table, peak_tflops, release, with_speedups


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full", action="store_true", help="the paper's sizes (mBERT-base, XLM-R large, paper batches); default: tiny, CI-sized")
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N | auto (default: auto with --full, else cpu)")
    p.add_argument("--precision", default="auto", choices=("auto", "bf16", "fp16", "fp32"),
                   help="autocast of the fast paths: auto = bf16 on GPUs that have it, fp16 on those that do not, fp32 on CPU")
    p.add_argument("--paths", default=None, help="comma-separated hot paths (a, b, b_rnd, c, c_sep, d, d_srt, t_a, t_d); default: all")
    p.add_argument("--no-reference", action="store_true", help="(a) without the released-code reference loop")
    p.add_argument("--steps", type=int, default=None, help="timed steps per path (default: 10 with --full, else 2)")
    p.add_argument("--warmup", type=int, default=None, help="untimed steps first (default: 3 with --full, else 1)")
    p.add_argument("--layers", type=int, default=None, help="cap every model at this many layers (quick checks)")
    p.add_argument("--batch-scale", type=float, default=1.0, help="multiply every batch size (quick checks of --full on a CPU)")
    p.add_argument("--bucket-cost", type=int, default=None,
                   help="(a): padded tokens an extra length bucket must save (default: the trainer's; -1: one forward per step)")
    p.add_argument("--compile", action="store_true", help="also time (a) with torch.compile (dynamic shapes)")
    p.add_argument("--nondeterministic", action="store_true",
                   help="leave torch's deterministic-algorithm mode off (the trainers turn it on through codeswitch.core.utils.set_seed)")
    p.add_argument("--peak-tflops", type=float, default=None, help="the device's dense bf16 peak, for GPUs not in the table")
    p.add_argument("--lengths", default=None, help="a length table JSON (default: the shipped benchmarks/lengths.json)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="folder for bench.json and bench.md")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="after timing each path, profile 3 more steps with torch.profiler into DIR/<path>.txt")
    return p


def _report(rows: list[Measurement], ctx, args, argv) -> tuple[str, dict]:
    """The markdown table and the JSON-able report of ``rows``."""
    device, amp, sizes, peak = ctx.device, ctx.amp, ctx.sizes, ctx.peak
    rows = with_speedups(rows)
    table = markdown_table(rows, cpu=device.type != "cuda")
    report = {
        "environment": _environment(device, peak, amp),
        "command": "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:]),
        "sizes": asdict(sizes),
        "models": {"concse": asdict(ctx.concse_arch), "glue": asdict(ctx.glue_arch), "retrieval": asdict(ctx.ir_arch), "layers_cap": args.layers},
        "warmup": ctx.warmup,
        "steps": ctx.steps,
        "deterministic_algorithms": not args.nondeterministic,
        "flops": "training 6·N·T + 12·ℓ·H·Σ L²; inference 2·N·T + 4·ℓ·H·Σ L² (N: Linear weights of the encoder stack, "
        "T: non-padding tokens); MFU = model FLOPs / elapsed / dense bf16 peak",
        "measurements": [r.as_dict() for r in rows],
        "table_markdown": table,
    }
    return table, report


def _write(folder, header: str, table: str, report: dict) -> Path:
    from codeswitch.core.atomic import atomic_write_json, atomic_write_text

    out = Path(folder)
    atomic_write_json(out / "bench.json", report)
    atomic_write_text(out / "bench.md", header + "\n\n" + table + "\n")
    return out


def run(argv: Sequence[str] | None = None) -> tuple[list[Measurement], dict]:
    """Run the benchmark with command-line ``argv``; return the measurements and the JSON-able report."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    rows: list[Measurement] = []
    with _context(args) as ctx:
        header = _header(ctx, args)
        print(header, flush=True)
        for key in _keys(args):
            started = time.perf_counter()
            print(f"[bench] {key}: {_hot_paths()[key][0]} …", flush=True)
            rows += _guarded(key, ctx, args)
            release(ctx.device)  # what the path built (models, optimiser state) goes before the next path starts
            print(f"[bench] {key}: done in {time.perf_counter() - started:.1f} s", flush=True)
            if args.out:  # the rows so far, after every path: a run stopped at its time limit keeps what it measured
                _write(args.out, header, *_report(rows, ctx, args, argv))
    table, report = _report(rows, ctx, args, argv)
    print("\n" + table + "\n", flush=True)
    if args.out:
        out = _write(args.out, header, table, report)
        print(f"[bench] wrote {out / 'bench.json'} and {out / 'bench.md'}", flush=True)
    return rows, report


def _hot_paths() -> dict:
    from . import hotpaths as H

    return H.HOT_PATHS


def _keys(args) -> list[str]:
    from . import hotpaths as H

    keys = [k.strip() for k in (args.paths or ",".join(H.DEFAULT_PATHS)).split(",") if k.strip()]
    unknown = [k for k in keys if k not in H.HOT_PATHS]
    if unknown:
        raise SystemExit(f"--paths: unknown hot path(s) {unknown}; known: {list(H.HOT_PATHS)}")
    return keys


@contextlib.contextmanager
def _context(args):
    """The :class:`benchmarks.hotpaths.Context` of parsed ``args`` (torch set up as the trainers run), in a scratch folder."""
    import torch

    from . import hotpaths as H

    if args.profile:
        os.environ["CODESWITCH_BENCH_PROFILE"] = str(Path(args.profile).resolve())
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before cuBLAS starts, as codeswitch.core.utils.set_seed
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        torch.set_num_threads(args.threads)
    dev_arg = args.device or ("auto" if args.full else "cpu")
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if dev_arg == "auto" else dev_arg)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {dev_arg}: no CUDA GPU is visible")
    if device.type == "cuda" and device.index is not None:  # "cuda" alone: the current device (set_device needs an index)
        torch.cuda.set_device(device)
    amp = _amp(args.precision, device)
    if not args.nondeterministic:
        from codeswitch.core.utils import deterministic_mode

        deterministic_mode(True)  # what the trainers run under (codeswitch.core.utils.set_seed)

    sizes = (H.FULL if args.full else H.CI).scaled(args.batch_scale)
    if args.bucket_cost is not None:
        sizes = dataclasses.replace(sizes, bucket_cost=None if args.bucket_cost < 0 else args.bucket_cost)
    peak = peak_tflops(device, args.peak_tflops)
    with tempfile.TemporaryDirectory(prefix="codeswitch-bench-") as work:
        ctx = H.Context(
            device=device, amp=amp, sizes=sizes,
            concse_arch=H.MBERT_BASE if args.full else H.TINY_BERT,
            glue_arch=H.XLMR_LARGE if args.full else H.TINY_XLMR,
            ir_arch=H.MBERT_BASE if args.full else H.TINY_BERT,
            warmup=args.warmup if args.warmup is not None else (3 if args.full else 1),
            steps=args.steps if args.steps is not None else (10 if args.full else 2),
            peak=peak, seed=args.seed, layers=args.layers, compile=args.compile, deterministic=not args.nondeterministic,
            workdir=Path(work), length_table=args.lengths,
        )
        yield ctx


def _amp(precision: str, device):
    """The autocast dtype of ``--precision`` on ``device`` (:func:`codeswitch.core.profiles.resolve_precision`)."""
    from codeswitch.core.profiles import resolve_precision

    return resolve_precision(precision, device, where="--precision")[0]


def _guarded(key: str, ctx, args) -> list[Measurement]:
    """One hot path; a missing module makes it 'unavailable', an error 'failed' (the others still run)."""
    from . import hotpaths as H

    try:
        if key == "a":
            return H.concse(ctx, reference=not args.no_reference)
        return H.HOT_PATHS[key][1](ctx)
    except ImportError as exc:
        return [Measurement(key, f"({key}) {H.HOT_PATHS[key][0]}", "–", "–", status=f"unavailable: {exc}")]
    except Exception as exc:  # noqa: BLE001 - reported in the table, and the exit status
        import traceback

        traceback.print_exc()
        return [Measurement(key, f"({key}) {H.HOT_PATHS[key][0]}", "–", "–", status=f"failed: {type(exc).__name__}: {exc}")]


def _environment(device, peak, amp) -> dict:
    import platform

    import torch
    import transformers

    return {
        "device": device_name(device),
        "device_type": device.type,
        "peak_bf16_tflops": peak,
        "autocast": None if amp is None else str(amp).replace("torch.", ""),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": code_commit(),
    }


def _header(ctx, args) -> str:
    peak = f"{ctx.peak:g} TFLOP/s dense bf16" if ctx.peak else "none (CPU or unknown GPU: no MFU)"
    return "\n".join([
        f"# codeswitch benchmark ({'full' if args.full else 'CI-sized'})",
        f"device: {device_name(ctx.device)}; peak: {peak}; autocast: {ctx.amp}; "
        f"deterministic algorithms: {not args.nondeterministic}",
        f"warm-up {ctx.warmup} + timed {ctx.steps} steps per path; batch scale {args.batch_scale}; layers cap {args.layers}",
    ])


# --------------------------------------------------------------------------- ab: interleaved comparisons
def _settings(name: str, device) -> dict:
    """The two settings of comparison ``name`` (:data:`COMPARISONS`), each a function returning a context manager."""
    import torch

    from codeswitch.core.utils import deterministic_mode

    @contextlib.contextmanager
    def determinism(on: bool, fill: bool = False):
        before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
        deterministic_mode(on, fill_uninitialized_memory=fill)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(before[0], warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = before[1]

    @contextlib.contextmanager
    def blas(library: str):
        before = torch.backends.cuda.preferred_blas_library()
        torch.backends.cuda.preferred_blas_library(library)
        try:
            yield
        finally:
            torch.backends.cuda.preferred_blas_library(before)

    if name == "deterministic":
        return {"deterministic": lambda: determinism(True), "nondeterministic": lambda: determinism(False)}
    if name == "fill":
        return {"fill_on": lambda: determinism(True, fill=True), "fill_off": lambda: determinism(True, fill=False)}
    if name == "cublaslt":
        if device.type != "cuda":
            raise SystemExit("ab --compare cublaslt: needs a CUDA device")
        return {"cublaslt": lambda: blas("cublaslt"), "cublas": lambda: blas("cublas")}
    raise SystemExit(f"ab --compare: unknown comparison {name!r}; known: {', '.join(COMPARISONS)}")


COMPARISONS = {
    "deterministic": "torch's deterministic-algorithm mode on (as the trainers) against off",
    "fill": "deterministic mode with fill_uninitialized_memory on (torch's default) against off (the trainers')",
    "cublaslt": "cuBLASLt against cuBLAS as the preferred BLAS library (CUDA)",
}


def ab(argv: Sequence[str]) -> dict:
    """``python -m benchmarks ab --compare NAME [bench options]``: each hot path's step under two settings,
    interleaved A/B/A/B in one process (:func:`benchmarks.measure.interleave`); prints and returns the comparison."""
    from . import hotpaths as H
    from .measure import interleave

    p = _parser()
    p.prog = "python -m benchmarks ab"
    p.add_argument("--compare", required=True, choices=sorted(COMPARISONS), help="; ".join(f"{k}: {v}" for k, v in COMPARISONS.items()))
    p.add_argument("--rounds", type=int, default=5, help="A/B rounds (default 5)")
    args = p.parse_args(list(argv))
    results = []
    with _context(args) as ctx:
        settings = _settings(args.compare, ctx.device)
        print(_header(ctx, args) + f"\ncomparison: {COMPARISONS[args.compare]}; {args.rounds} interleaved rounds", flush=True)
        for key in _keys(args):
            if key in H.TRAINER_PATHS or key == "host" or key.startswith("t_"):
                print(f"[ab] {key}: skipped (the Trainer owns its loop, or a host row)", flush=True)
                continue
            ctx.capture = []
            _guarded(key, ctx, args)
            for step, row in ctx.capture:
                res = interleave(step, settings, device=ctx.device, first=ctx.warmup, steps=ctx.steps, rounds=args.rounds)
                results.append({"key": row.key, "path": row.path} | res)
                a, b = res["a"], res["b"]
                print(f"[ab] {row.key}: {a} {res['median_ms'][a]:.1f} ms, {b} {res['median_ms'][b]:.1f} ms; "
                      f"{b}/{a} median {res['median_ratio']:.3f}, rounds {', '.join(f'{r:.3f}' for r in res['ratio_b_over_a'])}"
                      f"{'' if res['consistent'] else ' (within noise: the rounds disagree)'}", flush=True)
            ctx.capture = None
            release(ctx.device)
        report = {"environment": _environment(ctx.device, ctx.peak, ctx.amp), "comparison": args.compare,
                  "command": "python -m benchmarks ab " + " ".join(argv), "results": results}
    if args.out:
        from codeswitch.core.atomic import atomic_write_json

        atomic_write_json(Path(args.out) / f"ab_{args.compare}.json", report)
    return report


# --------------------------------------------------------------------------- sub-commands
def _lengths_command(argv: Sequence[str]) -> int:
    from transformers import AutoTokenizer

    from codeswitch.core.hub import resolve
    from .lengths import LENGTHS_FILE, alignment_histograms, calbert_histograms, koglish_histograms, write_table

    p = argparse.ArgumentParser(prog="python -m benchmarks lengths",
                                description="Rewrite entries of the length table (Koglish, alignment, CalBERT) from data folders "
                                            "and a tokenizer; the other entries are kept.")
    p.add_argument("--koglish", default=None, help="a Koglish folder in the released layout (Koglish_NLI/, Koglish_GLUE/)")
    p.add_argument("--alignment", default=None,
                   help="an English-Hindi parallel folder (the authors' layout: Devanagari/ and Romanized/ valid.tsv)")
    p.add_argument("--sail", default=None, help="a SAIL 2017 folder (train.txt, validation.txt): CalBERT's SAIL fine-tunes")
    p.add_argument("--iitp", default=None, help="an IITP product reviews folder (hi-train.csv, hi-valid.csv): CalBERT's IITP fine-tunes")
    p.add_argument("--tokenizer", required=True, help="hub id or folder of the tokenizer (e.g. bert-base-multilingual-uncased)")
    p.add_argument("--tokenizer-name", default=None,
                   help="how each entry's source names the tokenizer (default: the --tokenizer argument)")
    p.add_argument("--max-rows", type=int, default=None, help="rows per set (default: all)")
    p.add_argument("--out", default=str(LENGTHS_FILE))
    a = p.parse_args(list(argv))
    if not (a.koglish or a.alignment or a.sail or a.iitp):
        p.error("give at least one of --koglish, --alignment, --sail, --iitp")
    tok = AutoTokenizer.from_pretrained(resolve(a.tokenizer, kind="model", what="--tokenizer"))
    entries, kw = {}, {"max_rows": a.max_rows, "name": a.tokenizer_name or a.tokenizer}
    if a.koglish:
        entries |= koglish_histograms(a.koglish, tok, **kw)
    if a.alignment:
        entries |= alignment_histograms(a.alignment, tok, **kw)
    calbert = {task: folder for task, folder in (("sail", a.sail), ("iitp", a.iitp)) if folder}
    if calbert:
        entries |= calbert_histograms(calbert, tok, **kw)
    path = write_table(entries, a.out)
    print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "lengths":
        return _lengths_command(argv[1:])
    if argv and argv[0] == "batched":
        from .batched_runs import main as batched_main

        return batched_main(argv[1:])
    if argv and argv[0] == "traced":
        from .traced import main as traced_main

        return traced_main(argv[1:])
    if argv and argv[0] == "budgets":
        from .packing_budgets import main as budgets_main

        return budgets_main(argv[1:])
    if argv and argv[0] == "overhead":
        from .overhead import main as overhead_main

        return overhead_main(argv[1:])
    if argv and argv[0] == "memory":
        from .memory import main as memory_main

        return memory_main(argv[1:])
    if argv and argv[0] == "record":
        from .record import main as record_main

        return record_main(argv[1:])
    if argv and argv[0] == "ab":
        ab(argv[1:])
        return 0
    if argv and argv[0] == "cost":
        from .cost import main as cost_main

        return cost_main(argv[1:])
    if argv and argv[0] == "gpu-notebooks":
        from .gpu_notebooks import main as gpu_notebooks_main

        return gpu_notebooks_main(argv[1:])
    rows, report = run(argv)
    # a full-size run is for the record: a hot path that could not run (a missing package) fails it too; a row skipped
    # on this device (a CUDA-graph row on a CPU) does not
    full = report["sizes"]["concse_batch"] >= 128 and "--full" in argv
    return 1 if any(r.status.startswith("failed") or (full and r.status != "ok" and not r.status.startswith("skipped"))
                    for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
