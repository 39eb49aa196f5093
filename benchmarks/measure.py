"""Timing, model FLOPs and memory for the benchmark: one :class:`Measurement` per hot path.

Model FLOPs (what MFU counts: the arithmetic the model needs, not what the kernels
happen to do; padding is never counted)::

    N      = weights of the Linear layers inside the transformer's encoder stack
             (embedding tables are look-ups, no FLOPs; heads on one token per
             sequence — pooler, dense-tanh, classifier — are < 1 % and left out)
    T      = non-padding tokens of a forward,  L_s = length of sequence s
    ℓ, H   = layers, hidden size

    forward    2 · N · T  +  4 · ℓ · H · Σ_s L_s²          (QKᵀ and AV: 2·L²·H each)
    training   3 × forward   (backward = 2 × forward)  =  6·N·T + 12·ℓ·H·Σ L_s²

    MFU = model FLOPs of the timed steps ÷ elapsed seconds ÷ the GPU's dense bf16 peak

(the 6·N·T convention of Kaplan et al. 2020 and PaLM's MFU, with the attention term
of the actual, unpadded lengths).  The peak comes from :data:`PEAK_BF16_TFLOPS`, keyed
by the name ``torch.cuda.get_device_name()`` reports; on CPU only tokens/s are reported.
"""

from __future__ import annotations

import gc
import os
import resource
from pathlib import Path
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch import nn


def code_commit() -> str:
    """The commit of the code measured, all 40 hex digits, ``-dirty`` with uncommitted changes to tracked files
    (:func:`codeswitch.core.provenance.git_state`: ``$CODESWITCH_COMMIT`` first, which the device scripts set from the
    carried ``runs/paper-gpu-carry/COMMIT``)."""
    from codeswitch.core.provenance import git_state

    sha, dirty = git_state(Path(__file__).resolve().parents[1], full=True)
    return sha + ("-dirty" if dirty else "")


# Dense (no structured sparsity) bf16 tensor-core peak in TFLOP/s, from NVIDIA's data
# sheets; the first entry whose key occurs in the device name wins (so "H100 PCIe"
# must come before "H100").  Other GPUs: pass --peak-tflops.
PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H200", 989.0),
    ("GH200", 989.0),
    ("H100 PCIe", 756.0),
    ("H100", 989.0),  # SXM ("NVIDIA H100 80GB HBM3")
    ("A100", 312.0),
    ("L40S", 362.0),
)


def peak_tflops(device: torch.device, override: float | None = None) -> float | None:
    """The dense bf16 peak of ``device`` in TFLOP/s (``None`` on CPU or for an unknown GPU)."""
    if override:
        return float(override)
    if device.type != "cuda":
        return None
    return peak_for_name(torch.cuda.get_device_name(device))


def peak_for_name(name: str) -> float | None:
    """The first entry of :data:`PEAK_BF16_TFLOPS` whose key occurs in the GPU's name."""
    return next((value for key, value in PEAK_BF16_TFLOPS if key in name), None)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


# --------------------------------------------------------------------------- FLOPs
def encoder_stack(model: nn.Module) -> nn.Module:
    """The transformer layers of a Hugging Face model (``model.encoder`` or ``<base>.encoder``)."""
    for name, module in model.named_modules():
        if name.split(".")[-1] == "encoder" and any(isinstance(m, nn.Linear) for m in module.modules()):
            return module
    return model


def linear_params(module: nn.Module) -> int:
    """N: the weights of every ``nn.Linear`` in ``module`` (biases are O(H), left out)."""
    return sum(m.weight.numel() for m in module.modules() if isinstance(m, nn.Linear))


@dataclass(frozen=True)
class FlopModel:
    """The FLOPs of one encoder architecture (see the module docstring)."""

    linear: int  # N
    layers: int  # ℓ
    hidden: int  # H

    @classmethod
    def of(cls, model: nn.Module) -> "FlopModel":
        config = model.config
        return cls(linear_params(encoder_stack(model)), int(config.num_hidden_layers), int(config.hidden_size))

    def forward(self, lengths: Sequence[int] | torch.Tensor) -> float:
        """Model FLOPs of one forward over sequences of these (unpadded) lengths."""
        lengths = torch.as_tensor(lengths, dtype=torch.float64)
        tokens = float(lengths.sum())
        return 2.0 * self.linear * tokens + 4.0 * self.layers * self.hidden * float((lengths**2).sum())

    def train(self, lengths: Sequence[int] | torch.Tensor) -> float:
        return 3.0 * self.forward(lengths)


# --------------------------------------------------------------------------- one measurement
@dataclass
class Measurement:
    """One row of the benchmark table."""

    key: str  # "a", "a_ref", "b", …
    path: str  # what was measured, in words
    model: str  # architecture and size
    batch: str  # the batch, in words
    steps: int = 0
    step_time_s: float | None = None
    sequences_per_s: float | None = None
    tokens_per_s: float | None = None  # non-padding tokens
    padding: float | None = None  # share of the computed token positions that are padding
    tflops: float | None = None  # achieved model TFLOP/s
    mfu: float | None = None  # tflops ÷ peak
    peak_mem_gib: float | None = None  # GPU: max allocated; CPU: the process's peak RSS so far
    speedup: float | None = None  # reference step time ÷ this step time (rows with a reference)
    host_syncs: int | None = None  # GPU: synchronising CUDA calls in one step (torch.cuda sync debug mode)
    status: str = "ok"  # "ok" | "unavailable: <why>" | "failed: <why>" | "skipped: <why>" (not on this device)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Step:
    """What one timed call of a step function processed (the step function returns it)."""

    sequences: int
    tokens: int  # non-padding
    positions: int  # computed token positions, padding included
    flops: float  # model FLOPs (training or inference)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def host_peak_gib() -> float:
    """The process's peak resident memory so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024**3 if sys.platform == "darwin" else 1024**2)


def time_steps(
    step: Callable[[int], Step],
    *,
    device: torch.device,
    warmup: int,
    steps: int,
    peak: float | None,
    into: Measurement,
) -> Measurement:
    """Run ``step(i)`` ``warmup`` times, then ``steps`` timed times; fill ``into``'s numbers.

    The clock starts and stops after ``torch.cuda.synchronize`` (GPU work is
    asynchronous); between them nothing waits for the GPU unless the step itself does.
    """
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for i in range(warmup):
        step(i)
    synchronize(device)
    done: list[Step] = []
    start = time.perf_counter()
    for i in range(warmup, warmup + steps):
        done.append(step(i))
    synchronize(device)
    elapsed = time.perf_counter() - start
    seqs = sum(s.sequences for s in done)
    tokens = sum(s.tokens for s in done)
    positions = sum(s.positions for s in done)
    flops = sum(s.flops for s in done)
    into.steps = steps
    into.step_time_s = elapsed / steps
    into.sequences_per_s = seqs / elapsed
    into.tokens_per_s = tokens / elapsed
    into.padding = 1.0 - tokens / positions if positions else 0.0
    into.tflops = flops / elapsed / 1e12
    into.mfu = into.tflops / peak if peak else None
    into.peak_mem_gib = torch.cuda.max_memory_allocated(device) / 1024**3 if device.type == "cuda" else host_peak_gib()
    into.host_syncs = count_host_syncs(step, warmup, device)
    if os.environ.get("CODESWITCH_BENCH_PROFILE"):
        profile_steps(step, warmup, device, Path(os.environ["CODESWITCH_BENCH_PROFILE"]), f"{into.key} {into.path}")
    return into


def profile_steps(step: Callable[[int], Step], i: int, device: torch.device, folder: Path, label: str, *, steps: int = 3) -> Path:
    """Run ``steps`` more steps under ``torch.profiler`` and write ``folder/<label>.txt``: the operators by device
    time and by host time, and how much of the wall-clock time the device was busy (``bench --profile DIR``)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    synchronize(device)
    start = time.perf_counter()
    with profile(activities=acts, record_shapes=False) as prof:
        for _ in range(steps):
            step(i)  # the step count_host_syncs replays: its inputs exist whatever the path prepared
        synchronize(device)
    wall = time.perf_counter() - start
    ka = prof.key_averages()
    dev_key = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    busy_us = device_time_us(ka) if device.type == "cuda" else None
    slug = "".join(ch if ch.isalnum() else "_" for ch in label).strip("_")[:60]
    folder.mkdir(parents=True, exist_ok=True)
    head = f"# {label}\n{steps} steps, wall {wall * 1e3:.1f} ms"
    if busy_us is not None:
        head += (f", kernel time {busy_us / 1e3:.1f} ms ({busy_us / 1e6 / wall:.0%} of wall; the profiler's device total: "
                 f"device events only, each counted once)")
    text = "\n\n".join([
        head,
        "## by device time\n" + ka.table(sort_by=dev_key, row_limit=30, max_name_column_width=70),
        "## by host time\n" + ka.table(sort_by="cpu_time_total", row_limit=30, max_name_column_width=70),
    ])
    out = folder / f"{slug}.txt"
    out.write_text(text + "\n", encoding="utf-8")
    return out


def device_time_us(events) -> float:
    """The profiler's device total in µs (what its table prints as "Self CUDA time total"): the self time of the
    *device* events (kernels, copies, sets) only.

    Summing ``self_device_time_total`` over every row double-counts: an operator's
    row (a host event) carries the time of the kernels it launched, and those
    kernels have rows of their own.
    """
    from torch.autograd import DeviceType

    device_types = {DeviceType.CUDA} | {getattr(DeviceType, n) for n in ("PrivateUse1", "MTIA", "XPU") if hasattr(DeviceType, n)}
    return float(sum(e.self_device_time_total for e in events
                     if e.device_type in device_types and not getattr(e, "is_user_annotation", False)))


def count_host_syncs(step: Callable[[int], Step], i: int, device: torch.device) -> int | None:
    """How many CUDA calls of one more ``step(i)`` made the host wait for the GPU (``None`` on CPU).

    Counted with ``torch.cuda.set_sync_debug_mode("warn")``, which warns at each
    synchronising call (``.item()``, ``bool(tensor)``, blocking copies, …).
    """
    if device.type != "cuda":
        return None
    import warnings

    synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step(i)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    synchronize(device)
    return sum("synchroniz" in str(w.message) for w in caught)


def interleave(step: Callable[[int], Step], settings: dict[str, Callable[[], Any]], *, device: torch.device, first: int,
               steps: int, rounds: int = 5, warmup: int = 1) -> dict:
    """Time ``step`` under each of two settings, interleaved A/B/A/B … ``rounds`` times in this one process.

    ``settings`` maps a name to a function returning a context manager that puts
    the setting in force.  Each round runs, under each setting in turn, ``warmup``
    untimed steps then ``steps`` timed ones (``step(first)`` … ``step(first +
    steps - 1)``, the same batches every time).  Interleaving puts the two settings
    under the same drift of a shared host (its load, clocks, caches), which
    separate processes started minutes apart do not: three starts of the same
    step can differ by 1.7×.  Returns ms per step for each setting and round, the
    per-round ratio B/A, its median, and whether every round agrees on the side
    of 1 (the difference is more than the rounds' noise).
    """
    if len(settings) != 2:
        raise ValueError(f"interleave compares two settings, got {list(settings)}")
    (a, set_a), (b, set_b) = settings.items()
    ms: dict[str, list[float]] = {a: [], b: []}
    for _ in range(rounds):
        for name, setting in ((a, set_a), (b, set_b)):
            with setting():
                for _ in range(warmup):
                    step(first)
                synchronize(device)
                start = time.perf_counter()
                for i in range(first, first + steps):
                    step(i)
                synchronize(device)
                ms[name].append((time.perf_counter() - start) / steps * 1e3)
    ratios = [mb / ma for ma, mb in zip(ms[a], ms[b])]
    med = sorted(ratios)[len(ratios) // 2]
    return {
        "a": a, "b": b, "rounds": rounds, "steps_per_round": steps,
        "ms": ms,
        "median_ms": {k: sorted(v)[len(v) // 2] for k, v in ms.items()},
        "ratio_b_over_a": ratios,
        "median_ratio": med,
        "consistent": all(r > 1 for r in ratios) or all(r < 1 for r in ratios),
    }


def release(device: torch.device) -> None:
    """Free what the last hot path left behind before the next one is built."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------- the table
COLUMNS = (
    ("path", "hot path"),
    ("model", "model"),
    ("batch", "batch"),
    ("step_time_s", "step (ms)"),
    ("sequences_per_s", "sequences/s"),
    ("tokens_per_s", "tokens/s (non-pad)"),
    ("padding", "padding"),
    ("tflops", "model TFLOP/s"),
    ("mfu", "MFU"),
    ("peak_mem_gib", "peak mem (GiB)"),
    ("speedup", "× reference"),
    ("host_syncs", "host syncs/step"),
)


def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key == "step_time_s":
        return f"{value * 1000:.1f}"
    if key in ("sequences_per_s", "tokens_per_s"):
        return f"{value:,.0f}"
    if key in ("padding", "mfu"):
        return f"{100 * value:.1f} %"
    if key == "tflops":
        return f"{value:.2f}" if value < 10 else f"{value:.0f}"
    if key == "peak_mem_gib":
        return f"{value:.2f}"
    if key == "speedup":
        return f"{value:.2f}×"
    if key == "host_syncs":
        return str(value)
    return str(value).replace("|", "/")


def with_speedups(rows: list[Measurement]) -> list[Measurement]:
    """Every ConCSE row's speed-up over the released-code row of the table (``a_ref``; for rows added from a later
    call, ``record --add``, the filed run's: same machine, not a measured ratio)."""
    ref = next((r for r in rows if r.key == "a_ref" and r.step_time_s), None)
    for r in rows:
        if ref is not None and r.key.startswith("a") and r.step_time_s:  # a_ref itself: 1.0
            r.speedup = ref.step_time_s / r.step_time_s
    return rows


def markdown_table(rows: Sequence[Measurement], *, cpu: bool) -> str:
    """The measurements as one Markdown table (MFU left out on CPU, where there is no peak to divide by)."""
    cols = [(k, h) for k, h in COLUMNS if not (cpu and k in ("mfu", "host_syncs"))]
    if cpu:
        cols = [(k, "peak host RSS (GiB)" if k == "peak_mem_gib" else h) for k, h in cols]
    lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        if r.status != "ok":
            cells = [r.path, r.model, r.batch, r.status] + [""] * (len(cols) - 4)
        else:
            cells = [_fmt(k, getattr(r, k)) for k, _ in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
