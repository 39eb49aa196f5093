"""Write the measured performance tables into ``docs/cost.md``, ``docs/performance.md`` and the README's summary.

``python -m benchmarks record [--from DIR] [--check]``

The numbers of the cost, money and cluster tables (``docs/cost.md``), of the results and
targets sections of ``docs/performance.md`` and of the README's one-paragraph summary are
never typed by hand: they are generated from the
measurement files kept under ``docs/bench/`` and from the cost model
(:mod:`benchmarks.cost`) applied to the paper profile as it is now.

=============================  ==========================================================
``docs/bench/gpu/bench.json``  ``python -m benchmarks --full --out DIR`` on a GPU
``docs/bench/gpu/memory.json`` ``python -m benchmarks memory --passages 1000000
                               --model random:mbert-base --device cuda --out DIR``
``docs/bench/cpu/memory.json`` the same on the CPU (host memory only)
``docs/bench/smoke.json``      ``scripts/time_fresh_clone.sh``: the README's two commands
                               timed in a fresh clone
=============================  ==========================================================

``--from DIR`` (repeatable) first copies ``DIR/bench.json`` and ``DIR/memory.json`` (what
``scripts/device_bench.sh`` leaves in its output folder) into ``docs/bench/gpu/``, after
checking that they are full-size GPU measurements.  ``--add DIR`` (repeatable) adds the rows of a
partial run (a short call that measured some hot paths) to the filed ``bench.json``, each row
naming its commit and date, and keeps that run's files in ``docs/bench/gpu/added-<date>-<commit>/``.
Each generated block sits between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` in the Markdown file; the text
around the blocks is left alone.  ``--check`` writes nothing and exits 1 when a block
differs from what the files would give (a test runs it, so a change to the profile or
the cost model cannot leave stale numbers in the README).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Mapping, Sequence

from codeswitch.core.profiles import project_root
from .cost import (ADAMW_BYTES_PER_PARAM, H100_BYTES_PER_S, H100_PEAK_TFLOPS, REDUCED, Rates, assumed_report, fastest_step,
                   latest_ok_notebook_runs, measured_notebook_overheads, measured_run_overhead, overhead_fields, notebook_costs)

ROOT = project_root()
DATA = ROOT / "docs" / "bench"
README = ROOT / "README.md"
DOCS = ROOT / "docs" / "performance.md"
COST = ROOT / "docs" / "cost.md"
#: which generated blocks each file holds
TEACHING = ROOT / "docs" / "teaching.md"
BLOCKS = {README: ("smoke", "summary"), COST: ("cost", "money", "cluster"), DOCS: ("results", "cpu_memory", "targets"),
          TEACHING: ("teaching",)}

# The targets.
# issue 24's per-step targets on one H100 (bf16, MFU on non-padding tokens): (key, what, ms per step, MFU)
STEP_TARGETS = (("a", "ConCSE step", 30.0, 0.33), ("b", "Koglish-GLUE step", 30.0, 0.27), ("c", "ContrastiveMix step", 45.0, 0.35))
#: the "at the targets" column of the cost tables: each hot path at its own MFU target (01, 02, 06, 07 priced from (b))
TARGET_MFU = {key: mfu for key, _, _, mfu in STEP_TARGETS}
TARGET_SPEEDUP = 20.0  # (a) against the released-code row of the same run
TARGET_CONCURRENT_RUNS = 6  # (e): CalBERT fine-tunes side by side on one GPU ...
TARGET_FULL_GPU_HOURS = 100.0  # the full grid at the measured rates (TARGET_GPU_HOURS: the reduced grid)
TARGET_PASSAGES_PER_S = 20_000.0
TARGET_HOST_GB = 4.0
TARGET_GPU_HOURS = 12.0
TARGET_SMOKE_REPRODUCE_S = 360.0  # issue 23: the seven smoke notebooks <= 6 min on 2 cores, creating the environment excluded
TARGET_SMOKE_TEST_S = 900.0  # and the whole suite <= 15 min, as CI runs it (2 xdist workers)
TARGET_FLOOR_S = 0.004  # (e): a CalBERT step (XLM-R base) in ≤ 4 ms
ASSUMED = {"mfu": TARGET_MFU, "peak_tflops": 989.0, "passages_per_s": TARGET_PASSAGES_PER_S, "floor_s_per_step": TARGET_FLOOR_S,
           "bytes_per_s": None, "overhead": True}
# The physical limit: every model FLOP (attention included) at the H100's dense bf16 peak, AdamW's memory traffic at its
# bandwidth, no fixed cost per step or per run, encoding at the same 100 %.
PHYSICAL = {"mfu": 1.0, "peak_tflops": H100_PEAK_TFLOPS, "passages_per_s": None, "floor_s_per_step": 0.0,
            "bytes_per_s": H100_BYTES_PER_S, "overhead": False}
#: An assumption, not a quote: what one GPU-hour of an H100-class GPU is taken to cost (USD, on demand, cloud).
#: Prices differ by provider, region and commitment; every money figure scales linearly with it.
ASSUMED_USD_PER_GPU_HOUR = 3.00


class RecordError(ValueError):
    """A measurement file that cannot be recorded, or a Markdown file without its markers."""


@dataclass(frozen=True)
class Measurements:
    """The files under ``docs/bench/`` (each ``None`` when absent)."""

    gpu: dict | None
    gpu_memory: dict | None
    cpu_memory: dict | None
    smoke: dict | None

    @classmethod
    def load(cls, root: Path = DATA) -> "Measurements":
        def read(rel: str) -> dict | None:
            path = root / rel
            if not path.exists():
                return None
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise RecordError(f"{path}: not valid JSON ({e})") from None

        return cls(read("gpu/bench.json"), read("gpu/memory.json"), read("cpu/memory.json"), read("smoke.json"))

    def rows(self) -> dict[str, dict]:
        return {m["key"]: m for m in (self.gpu or {}).get("measurements", []) if m.get("status") == "ok"}

    @property
    def gpu_name(self) -> str:
        return (self.gpu or {}).get("environment", {}).get("device", "GPU")

    @property
    def encode_rate(self) -> float | None:
        """The end-to-end corpus-encoding rate on the GPU (``bench memory``), when measured."""
        m = self.gpu_memory
        return m["passages_per_second"] if m else None


# --------------------------------------------------------------------------- checks on input
def check_gpu_report(report: Mapping, path: str) -> None:
    """A report fit for the README: full sizes, on a CUDA device, no layer cap, the four hot paths measured."""
    env, models = report.get("environment", {}), report.get("models", {})
    if env.get("device_type") != "cuda":
        raise RecordError(f"{path}: field environment.device_type is {env.get('device_type')!r}, not 'cuda' — only GPU runs are recorded")
    if models.get("layers_cap") or models.get("concse", {}).get("hidden_size", 0) < 768:
        raise RecordError(f"{path}: field models: not the full sizes (layers cap {models.get('layers_cap')}) — run with --full and no --layers")
    if report.get("sizes", {}).get("concse_batch") != 128:
        raise RecordError(f"{path}: field sizes.concse_batch is {report.get('sizes', {}).get('concse_batch')}, not 128 — run without --batch-scale")
    ok = {m.get("key") for m in report.get("measurements", []) if m.get("status") == "ok"}
    missing = [k for k in ("a", "a_ref", "b", "c", "d") if k not in ok]
    if missing:
        raise RecordError(f"{path}: field measurements: hot path(s) {missing} missing or not 'ok'")


def check_gpu_memory(report: Mapping, path: str) -> None:
    if not str(report.get("device", "")).strip() or str(report.get("device", "")).startswith("cpu"):
        raise RecordError(f"{path}: field device is {report.get('device')!r} — only GPU runs are recorded under gpu/")
    if report.get("shape") != report.get("expected_shape") or report.get("zero_rows") or report.get("nonfinite_rows"):
        raise RecordError(f"{path}: the embeddings failed their check (shape {report.get('shape')}, zero rows "
                          f"{report.get('zero_rows')}, non-finite rows {report.get('nonfinite_rows')})")


def import_run(sources: Sequence[Path], dest: Path = DATA) -> list[Path]:
    """File a GPU run's ``bench.json`` (required) and ``memory.json`` under ``dest/gpu/``.

    ``sources``: the run's output folders (two when the stages ran in separate calls);
    a later folder's file wins.  A ``memory.json`` already filed from an earlier run is
    removed when the new run has none, so the two never come from different runs unnoticed.
    """
    from codeswitch.core.atomic import atomic_write_json

    def last(name: str) -> Path | None:
        found = [Path(s) / name for s in sources if (Path(s) / name).is_file()]
        return found[-1] if found else None

    bench, memory = last("bench.json"), last("memory.json")
    if bench is None:
        raise RecordError(f"no bench.json in {', '.join(map(str, sources))} (the --out folder of `python -m benchmarks --full`)")
    report = json.loads(bench.read_text(encoding="utf-8"))
    check_gpu_report(report, str(bench))
    mem = None
    if memory is not None:
        mem = json.loads(memory.read_text(encoding="utf-8"))
        check_gpu_memory(mem, str(memory))
    written = [atomic_write_json(dest / "gpu" / "bench.json", report)]
    if mem is not None:
        written.append(atomic_write_json(dest / "gpu" / "memory.json", mem))
    elif (dest / "gpu" / "memory.json").exists():
        (dest / "gpu" / "memory.json").unlink()
        print(f"[bench record] removed {dest / 'gpu' / 'memory.json'}: it came from an earlier run")
    for extra in ("bench.md", "bench.log", "memory.log", "cost.md", "environment.txt", "nvidia-smi.txt"):  # for the reader
        found = last(extra)
        if found is not None:
            shutil.copyfile(found, dest / "gpu" / extra)
            written.append(dest / "gpu" / extra)
    return written


def add_rows(source: Path, dest: Path = DATA) -> list[Path]:
    """Add the rows of a partial GPU run (``source/bench.json``: a short call that measured only some hot paths) to
    the filed ``dest/gpu/bench.json``; a row of the same key is replaced.

    Refused unless both runs are full-size, on the same GPU model, at the same sizes and step counts (one table of
    one machine).  Each added row's ``extra.measured`` names its run's commit, date and command, and the report's
    ``added`` lists every run added so; the rows of the filed run keep its ``environment``.
    """
    from codeswitch.core.atomic import atomic_write_json

    from .measure import Measurement, markdown_table, with_speedups

    path, filed_path = Path(source) / "bench.json", dest / "gpu" / "bench.json"
    if not path.is_file():
        raise RecordError(f"no bench.json in {source} (the output folder of scripts/device_bench.sh)")
    if not filed_path.is_file():
        raise RecordError(f"{filed_path}: no filed run to add rows to (file a whole run with --from first)")
    new, filed = (json.loads(p.read_text(encoding="utf-8")) for p in (path, filed_path))
    env = new.get("environment", {})
    if env.get("device_type") != "cuda":
        raise RecordError(f"{path}: field environment.device_type is {env.get('device_type')!r}, not 'cuda' — only GPU runs are recorded")
    for field_ in ("sizes", "models", "steps", "warmup", "deterministic_algorithms"):
        if new.get(field_) != filed.get(field_):
            raise RecordError(f"{path}: field {field_} differs from the filed run's ({filed_path}): the rows would not "
                              "be one table's; file the whole run with --from")
    if env.get("device") != filed.get("environment", {}).get("device"):
        raise RecordError(f"{path}: field environment.device is {env.get('device')!r}, the filed run's is "
                          f"{filed.get('environment', {}).get('device')!r}: one table holds one GPU model's rows")
    if not env.get("commit"):
        raise RecordError(f"{path}: field environment.commit is missing: an added row must name the commit it measured")
    rows = [m for m in new.get("measurements", []) if m.get("status") == "ok"]
    if not rows:
        raise RecordError(f"{path}: field measurements: no row with status 'ok' to add")
    measured = {"commit": env["commit"], "date": env.get("date"), "command": new.get("command")}
    added = {m["key"]: {**m, "extra": {**m.get("extra", {}), "measured": measured}} for m in rows}
    filed["measurements"] = [m for m in filed.get("measurements", []) if m.get("key") not in added] + list(added.values())
    filed["added"] = [*filed.get("added", []), {**measured, "keys": list(added)}]
    known = {f.name for f in fields(Measurement)}
    table = with_speedups([Measurement(**{"path": m["key"], "model": "", "batch": "", **{k: v for k, v in m.items() if k in known}})
                           for m in filed["measurements"]])
    for m, row in zip(filed["measurements"], table):  # ConCSE rows against the table's released-code row
        m["speedup"] = row.speedup
    filed["table_markdown"] = markdown_table(table, cpu=False)
    keep = dest / "gpu" / f"added-{str(env.get('date', ''))[:10]}-{env['commit'][:7]}"  # the run's own files, for the reader
    keep.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("bench.json", "bench.md", "bench.log", "environment.txt", "nvidia-smi.txt"):
        if (Path(source) / name).is_file():
            shutil.copyfile(Path(source) / name, keep / name)
            written.append(keep / name)
    return [atomic_write_json(filed_path, filed), *written]


GPU_RECORD_SUFFIXES = (".json", ".jsonl")


def record_provenance(rel: str, record: Mapping | None = None, root: Path = DATA) -> dict:
    """``{commit, gpu, date}`` of the GPU record ``docs/bench/gpu/<rel>``: its own fields where it names them
    (``environment.commit`` / ``.date`` / ``.device`` or ``.gpu``; top-level ``commit``, ``date``, ``device``),
    else its entry in ``docs/bench/gpu/provenance.json`` (reconstructed from git for the records made before they
    named it).  Missing values are None."""
    own: dict = {}
    if isinstance(record, Mapping):
        env = record.get("environment", {}) if isinstance(record.get("environment"), Mapping) else {}
        own = {"commit": env.get("commit") or record.get("commit"), "date": env.get("date") or record.get("date"),
               "gpu": env.get("gpu") or env.get("device") or record.get("device")}
    if own.get("commit") and own.get("date") and own.get("gpu"):
        return own
    listed = root / "gpu" / "provenance.json"
    entry = json.loads(listed.read_text(encoding="utf-8"))["records"].get(rel, {}) if listed.is_file() else {}
    return {k: own.get(k) or entry.get(k) for k in ("commit", "gpu", "date")}


# --------------------------------------------------------------------------- blocks
def _h(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


def _reduced_flag() -> str:
    return " ".join(f"--set {k}={json.dumps(v)}" for k, v in REDUCED.items())


def _mfu_text(mfu: Mapping[str, float]) -> str:
    return ", ".join(f"({k}) {v:.0%}" for k, v in mfu.items())


def _mfu_flag(mfu: Mapping[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in mfu.items())


def _overhead_text() -> str:
    """What a run costs outside its steps, as the cost model prices it (:func:`benchmarks.cost.measured_run_overhead`)."""
    o = measured_run_overhead()
    if not o.get("load_save_s_per_param"):
        return (f"{o['seconds']:.1f} s outside its steps (loading, evaluation set-up, saving: measured on notebook 03's runs on "
                "an H100, `docs/bench/gpu/notebooks`; an assumption for the other notebooks)")
    return (f"outside its steps and its priced forward passes, loading and saving its backbone at "
            f"{o['load_save_s_per_param'] * 1e9:.1f} s per billion parameters (measured on a CPU, `docs/bench/cpu/run_overhead.json`; "
            f"taken unscaled on the GPU's host, an assumption) and {o['seconds']:.1f} s more: notebook 03's measured "
            f"{o['whole_s_per_run']:.1f} s per run on an H100 (`docs/bench/gpu/notebooks`) less its loading and saving "
            f"({o['load_save_s_per_run']:.1f} s) and its evaluation forwards ({o['eval_s_per_run']:.1f} s: the CPU's rate "
            f"scaled by the measured GPU/CPU forward ratio {o['gpu_over_cpu_forward']:.0f}x, `docs/bench/cpu/bench_d.json`), "
            + _notebook_overheads_text())


def _notebook_overheads_text() -> str:
    """The notebooks whose runs the GPU measured whole (:func:`benchmarks.cost.measured_notebook_overheads`)."""
    per_nb = measured_notebook_overheads()
    if not per_nb:
        return "an assumption for the other notebooks"
    shared = any(v["concurrent"] for v in per_nb.values())
    return ("an assumption for the notebooks the GPU has not measured whole; those it has pay their own seconds per "
            "training run outside its training span, loading included, saving added where kept ("
            + ", ".join(f"{nb} {v['seconds']:.1f} s" for nb, v in per_nb.items())
            + f"; {', '.join(sorted({v['source'] for v in per_nb.values()}))}"
            + ("; measured with other notebooks on the same GPU: upper bounds" if shared else "") + ")")


def _assumed(a: Mapping, m: "Measurements | None" = None) -> dict:
    return assumed_report(a["mfu"], a["peak_tflops"], a["passages_per_s"], floor_s_per_step=a["floor_s_per_step"],
                          measured=m.gpu if m is not None else None, bytes_per_s=a["bytes_per_s"],
                          **(overhead_fields() if a["overhead"] else {}))


def _measured(m: "Measurements") -> dict:
    return dict(m.gpu) | overhead_fields()


def physical_command(m: "Measurements") -> str:
    tokens = " --tokens-from docs/bench/gpu/bench.json" if m.gpu else ""
    return (f"python -m benchmarks cost --assume-mfu 1 --passages-per-s 0 --peak-tflops {PHYSICAL['peak_tflops']:g} "
            f"--bandwidth {PHYSICAL['bytes_per_s'] / 1e12:g} --run-overhead-s 0{tokens}")


def targets_command(m: "Measurements") -> str:
    tokens = " --tokens-from docs/bench/gpu/bench.json" if m.gpu else ""
    return f"python -m benchmarks cost --assume-mfu {_mfu_flag(ASSUMED['mfu'])} --floor-ms {ASSUMED['floor_s_per_step'] * 1e3:g}{tokens}"


def measured_command(m: Measurements, *extra: str) -> str:
    """The ``python -m benchmarks cost`` command that gives the measured column, exactly (the end-to-end encoding
    rate of ``docs/bench/gpu/memory.json`` written out as the float it is, so the command prints the same hours)."""
    rate = f" --encode-rate {json.dumps(m.encode_rate)}" if m.encode_rate else ""
    return " ".join(("python -m benchmarks cost docs/bench/gpu/bench.json" + rate, *extra))


def _costs(m: Measurements) -> dict[str, list[dict] | None]:
    assumed, physical = _assumed(ASSUMED, m), _assumed(PHYSICAL, m)
    out: dict[str, list[dict] | None] = {
        "physical": notebook_costs(physical)[1],
        "physical_reduced": notebook_costs(physical, overrides=REDUCED)[1],
        "targets": notebook_costs(assumed)[1],
        "targets_reduced": notebook_costs(assumed, overrides=REDUCED)[1],
        "measured": None,
        "measured_reduced": None,
    }
    if m.gpu:
        out["measured"] = notebook_costs(_measured(m), encode_passages_per_s=m.encode_rate)[1]
        out["measured_reduced"] = notebook_costs(_measured(m), overrides=REDUCED, encode_passages_per_s=m.encode_rate)[1]
    return out


def cost_block(m: Measurements, costs: Mapping | None = None) -> str:
    """GPU-hours per notebook: at the targets, and from the measured rates (when a GPU report is recorded)."""
    c = costs or _costs(m)
    measured = c["measured"] is not None
    gpu = m.gpu_name if measured else "GPU"
    lines = [
        f"| notebook | training runs | optimiser steps | physical limit (100 % MFU) | same, reduced grid "
        f"| GPU-hours at the targets | same, `{_reduced_flag()}` | GPU-hours, measured rates ({gpu}) | same, reduced grid |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    names = {"01": "01 Koglish construction (NLLB translation)", "02": "02 Koglish-GLUE", "03": "03 ConCSE vs SimCSE",
             "04": "04 ConCSE ablations (runs not in 03)", "05": "05 ContrastiveMix",
             "06": "06 alignment", "07": "07 CalBERT"}
    for i, row in enumerate(c["targets"]):
        red = c["targets_reduced"][i]
        meas = c["measured"][i]["hours"] if measured else None
        meas_red = c["measured_reduced"][i]["hours"] if measured else None
        phys, phys_red = c["physical"][i]["hours"], c["physical_reduced"][i]["hours"]
        lines.append(f"| {names[row['notebook']]} | {row['runs']} | {row['steps']:,} | {_h(phys)} | {_h(phys_red)} "
                     f"| {_h(row['hours'])} | {_h(red['hours'])} ({red['runs']} runs) | {_h(meas)} | {_h(meas_red)} |")
    total = _total
    lines.append(f"| **all** | {sum(r['runs'] for r in c['targets'])} | {sum(r['steps'] for r in c['targets']):,} "
                 f"| **{_h(total(c['physical']))}** | **{_h(total(c['physical_reduced']))}** "
                 f"| **{_h(total(c['targets']))}** "
                 f"| **{_h(total(c['targets_reduced']))}** ({sum(r['runs'] for r in c['targets_reduced'])} runs) "
                 f"| **{_h(total(c['measured']))}** | **{_h(total(c['measured_reduced']))}** |")
    lines.append("")
    lines.append(
        f"*Physical limit*: every model FLOP, attention included, at the H100 SXM's {PHYSICAL['peak_tflops']:g} TFLOP/s dense bf16 "
        f"(100 % MFU), corpus encoding too, and AdamW's update as memory traffic ({ADAMW_BYTES_PER_PARAM} bytes a parameter a step: "
        f"fp32 weights, gradients and two moments read, weights and moments written) at its {PHYSICAL['bytes_per_s'] / 1e12:g} TB/s; "
        "no fixed cost per step or per run; rows of the short-sentence sets at the harness's measured tokens "
        f"(`{physical_command(m)}`): no implementation can go below it. "
        f"*At the targets*: issue 24's MFU per step — {_mfu_text(ASSUMED['mfu'])} — of {ASSUMED['peak_tflops']:g} TFLOP/s "
        "(01, 02, 06 and 07 are priced from (b)'s rate), "
        f"{ASSUMED['passages_per_s']:,.0f} passages/s and {ASSUMED['floor_s_per_step'] * 1e3:g} ms fixed cost per XLM-R-base step, "
        f"scaled per layer, and the measured cost per run (`{targets_command(m)}`). "
        + (f"*Measured*: the rates of `docs/bench/gpu/bench.json` ({m.gpu_name}, {m.gpu['environment'].get('date', '')})"
           + (", corpus encoding at the end-to-end rate of `docs/bench/gpu/memory.json`" if m.encode_rate else "")
           + f" (`{measured_command(m)}`)."
           if measured else "*Measured*: not yet — no GPU run is recorded in `docs/bench/gpu/` (no GPU has been lent to this project so far).")
        + ("" if not measured or Rates.from_report(m.gpu).floor_s_per_layer is not None else
           " The recorded run has no (e) row: its measured column prices steps by their compute only, without their fixed cost"
           " (an under-estimate, largest for CalBERT's batch-4 fine-tunes).")
        + " Every step costs max(its fixed cost, its compute) (`benchmarks.cost.step_s`); every run "
        f"{_overhead_text()}. 01 and the GLUECoS fine-tunings of 06 are "
        "not in the harness: (b)'s rate scaled per backbone, NER and QA rows at their maximum length (an upper bound). "
        "Not priced: the batched fine-tunes, several runs per GPU (CUDA MPS) and the sharded corpus encoder (issue 40, items "
        "1-3: no GPU row yet)."
    )
    return "\n".join(lines)


def _total(rows: Sequence[dict] | None) -> float | None:
    return None if rows is None else sum(r["hours"] for r in rows if not math.isnan(r["hours"]))


def _usd(hours: float | None) -> str:
    return "–" if hours is None else f"${hours * ASSUMED_USD_PER_GPU_HOUR:,.0f}"


def money_block(m: Measurements, costs: Mapping | None = None) -> str:
    """The GPU-hours of the cost table turned into money at the assumed price per GPU-hour (stated as an assumption)."""
    c = costs or _costs(m)
    measured = c["measured"] is not None
    lines = [f"| grid | GPU-hours, at the targets | money, at the targets | GPU-hours, measured rates ({m.gpu_name if measured else 'GPU'}) "
             "| money, measured rates |", "|---|---|---|---|---|"]
    for name, t, meas in (("the paper profile", "targets", "measured"), (f"reduced grid, `{_reduced_flag()}`", "targets_reduced", "measured_reduced")):
        lines.append(f"| {name} | {_h(_total(c[t]))} | {_usd(_total(c[t]))} | {_h(_total(c[meas]))} | {_usd(_total(c[meas]))} |")
    lines += ["", f"*Assumed*: ${ASSUMED_USD_PER_GPU_HOUR:.2f} per GPU-hour (an assumption, not a quote: on-demand prices of an "
              "H100-class cloud GPU differ by provider, region and commitment; every figure scales linearly with it; "
              "`benchmarks.record.ASSUMED_USD_PER_GPU_HOUR`). GPU-hours only: storage, network and CPU time are not counted."]
    return "\n".join(lines)


def summary_block(m: Measurements, costs: Mapping | None = None) -> str:
    """The README's few lines: what the paper profile costs in GPU-hours and money (details in docs/cost.md)."""
    c = costs or _costs(m)
    at, at_red = _total(c["targets"]), _total(c["targets_reduced"])
    if c["measured"] is not None:
        meas, meas_red = _total(c["measured"]), _total(c["measured_reduced"])
        head = (f"**{meas:.1f} GPU-hours** from the rates measured on an {m.gpu_name} ({_usd(meas)} at an assumed "
                f"${ASSUMED_USD_PER_GPU_HOUR:.2f} per GPU-hour), {meas_red:.1f} with the reduced grid ({_usd(meas_red)}); "
                f"{at:.1f} at the performance targets. Estimated by `{measured_command(m)}`.")
    else:
        head = (f"**{at:.1f} GPU-hours** at the performance targets ({_usd(at)} at an assumed ${ASSUMED_USD_PER_GPU_HOUR:.2f} "
                f"per GPU-hour), {at_red:.1f} with the reduced grid; no GPU run recorded yet.")
    return "The paper profile, all seven notebooks: " + head + notebook_runs_line()


def notebook_runs_line(root: Path = DATA) -> str:
    """Which notebooks have run their paper path to the end on a GPU (``paper-gpu``: the paper's sizes, batches and
    precision, stand-in weights, few steps), from the records ``python -m benchmarks gpu-notebooks record`` filed under
    ``docs/bench/gpu/notebooks*/``: the latest ok run of each, its folder, GPU and date."""
    made: dict[Path, dict] = {}  # each record's provenance, read once

    def date_of(path: Path, rec) -> str:
        made[path] = record_provenance(path.relative_to(root / "gpu").as_posix(), rec, root)
        return made[path]["date"]

    latest = {nb: (path.parent.name, str(made[path]["gpu"]), date)
              for nb, (path, rec, date) in latest_ok_notebook_runs(root / "gpu", date_of).items()}
    if not latest:
        return ""
    where: dict[tuple[str, str, str], list[str]] = {}
    for nb, rec in sorted(latest.items()):
        where.setdefault(rec, []).append(nb)
    parts = [f"{', '.join(nbs)} on an {gpu} ({date[:10]}, `docs/bench/gpu/{folder}/`)" for (folder, gpu, date), nbs in where.items()]
    return (f" Notebooks whose paper path has run to its end on a GPU at paper size (`paper-gpu`: stand-in weights, "
            f"few steps): {'; '.join(parts)}.")


def _env_note(s: dict) -> str:
    """How the record counted the environment: measured apart (env_s), or inside reproduce_s (older records)."""
    if "env_s" in s:
        return f"creating `.venv/` excluded: {_mmss(s['env_s'])} more"
    return "creating `.venv/` included"


def _test_note(s: dict) -> str:
    return f"{s['test_workers']} pytest-xdist workers, as CI" if s.get("test_workers") else "one process"


def _per_notebook(s: Mapping) -> str:
    """Each notebook's time in a record of docs/bench/smoke.json, in notebook order."""
    per = s.get("notebooks_s") or {}
    return (", ".join(f"{nb} {sec} s" if sec < 60 else f"{nb} {_mmss(sec)}" for nb, sec in sorted(per.items())) if per
            else "per notebook: not recorded")


def smoke_block(m: Measurements) -> str:
    """How long the README's two commands took in a fresh clone, and each notebook within the first
    (``docs/bench/smoke.json``)."""
    s = m.smoke
    if not s:
        return "How long: not recorded yet (`scripts/time_fresh_clone.sh` times the two commands in a fresh clone)."
    return (f"**How long**: `./reproduce.sh` took {_mmss(s['reproduce_s'])} ({_env_note(s)}; per notebook: "
            f"{_per_notebook(s)}) and `./test.sh` "
            f"{_mmss(s['test_s'])} ({s['tests_passed']} passed, {s['tests_skipped']} skipped; {_test_note(s)}), in a fresh clone of "
            f"{s['commit'][:7]} on {s['machine']} (`docs/bench/smoke.json`, timed by `scripts/time_fresh_clone.sh`); "
            "later runs reuse the run cache (finished runs are not redone).")


def teaching_block(m: Measurements) -> str:
    """docs/teaching.md's run times: each notebook's first run, from the same record as the README's (docs/bench/smoke.json)."""
    s = m.smoke
    if not s:
        return "Run times: not recorded yet (`scripts/time_fresh_clone.sh` times the notebooks in a fresh clone)."
    times = _per_notebook(s)
    return (f"Smoke profile, first run (nothing cached), in a fresh clone of {s['commit'][:7]} on {s['machine']}: {times}; "
            f"{_mmss(s['reproduce_s'])} for `./reproduce.sh` in all (`docs/bench/smoke.json`, the README's record, written by "
            "`scripts/time_fresh_clone.sh`, put here by `python -m benchmarks record`). A second run reads the cache. On a laptop "
            "shared with other work, allow two to three times as long.")


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**not met**")


def targets_block(m: Measurements, costs: Mapping | None = None) -> str:
    """One row per target of the issue: the measured value, and whether it is met."""
    c = costs or _costs(m)
    rows = m.rows()
    lines = ["| target | measured | status |", "|---|---|---|"]

    # (a), (b), (c): ms per step and MFU; (a) against the released-code loop (issue 24's table)
    for key, name, ms, mfu in STEP_TARGETS:
        r = fastest_step(rows, key) if rows else None  # the fastest variant a trainer can run
        want = f"≤ {ms:g} ms per step and ≥ {mfu:.0%} MFU" + (f", ≥ {TARGET_SPEEDUP:g}× the released-code row" if key == "a" else "")
        if r is None or not r.get("step_time_s"):
            lines.append(f"| ({key}) {name}: {want} | no GPU run recorded | {_verdict(None)} |")
            continue
        got, use = r["step_time_s"] * 1e3, r.get("mfu")
        vals = f"{got:,.1f} ms, {use:.1%} MFU" if use is not None else f"{got:,.1f} ms, no MFU (unknown peak)"
        ok = None if use is None else (got <= ms and use >= mfu)
        if key == "a":
            s_ = r.get("speedup")
            same = r["key"] in ("a", "a_compiled")  # measured in the process that measured a_ref
            vals += (f", {s_:.2f}× the released-code row (same machine" + (", same process)" if same else
                     "; the rows may come from separate calls: not a measured ratio)")) if s_ else ", no reference row"
            ok = None if ok is None or not s_ else (ok and s_ >= TARGET_SPEEDUP)
        lines.append(f"| ({key}) {name}: {want} | {vals} (`{r['key']}`, {m.gpu_name}) | {_verdict(ok)} |")

    # (d) passages/s
    if rows:
        d = rows["d"]["sequences_per_s"]
        e2e = m.encode_rate
        vals = f"device side {d:,.0f}/s" + (f"; end to end (texts → file) {e2e:,.0f}/s" if e2e else "; end to end not measured")
        ok = min(d, e2e or d) >= TARGET_PASSAGES_PER_S
    else:
        vals, ok = "no GPU run recorded", None
    lines.append(f"| (d) ≥ {TARGET_PASSAGES_PER_S:,.0f} passages/s (mBERT-base) | {vals} | {_verdict(ok)} |")

    # (e) CalBERT: several runs side by side, or a short step
    r = fastest_step(rows, "e") if rows else None
    if r is not None and r.get("step_time_s"):
        got = r["step_time_s"]
        vals = (f"{got * 1e3:,.1f} ms per step (`{r['key']}`, {m.gpu_name}); runs side by side on one GPU: an executor "
                "setting (`executor.local.runs_per_gpu`, fractional `executor.resources.<exp>.gpus`), not measured on a GPU")
        ok = True if got <= TARGET_FLOOR_S else None
    else:
        vals, ok = "no GPU run recorded", None
    lines.append(f"| (e) CalBERT: ≥ {TARGET_CONCURRENT_RUNS} runs per GPU or ≤ {TARGET_FLOOR_S * 1e3:g} ms per step | {vals} | {_verdict(ok)} |")

    # host memory, 1 M passages
    mem = next((x for x in (m.gpu_memory, m.cpu_memory) if x and x.get("passages", 0) >= 1_000_000), None)
    if mem:
        peak = mem["peak_rss_mb"] / 1000
        vals = (f"peak {peak:.1f} GB for {mem['passages']:,} passages ({mem['device']}, "
                f"{'H = ' + str(mem['hidden_size'])}, `docs/bench/{'gpu' if mem is m.gpu_memory else 'cpu'}/memory.json`)")
        ok = peak < TARGET_HOST_GB
    else:
        vals, ok = "no run of ≥ 1 M passages recorded", None
    lines.append(f"| 1 M passages encoded with < {TARGET_HOST_GB:g} GB host memory | {vals} | {_verdict(ok)} |")

    # GPU-hours
    at = sum(r["hours"] for r in c["targets"])
    red = sum(r["hours"] for r in c["targets_reduced"])
    cm = next(r for r in c["targets"] if r["notebook"] == "05")
    if c["measured"] is not None:
        meas = sum(r["hours"] for r in c["measured"])
        meas_red = sum(r["hours"] for r in c["measured_reduced"])
        lines.append(f"| reduced grid ≤ {TARGET_GPU_HOURS:g} GPU-hours, measured rates | {meas_red:.1f} GPU-hours "
                     f"({meas_red / TARGET_GPU_HOURS:.1f}× the target) | {_verdict(meas_red <= TARGET_GPU_HOURS)} |")
        lines.append(f"| full grid ≤ {TARGET_FULL_GPU_HOURS:g} GPU-hours, measured rates | {meas:.1f} GPU-hours "
                     f"({meas / TARGET_FULL_GPU_HOURS:.1f}× the target) | {_verdict(meas <= TARGET_FULL_GPU_HOURS)} |")
    else:
        vals = (f"not measured; at the targets {at:.1f} GPU-hours (ContrastiveMix {cm['hours']:.1f} of it), {red:.1f} with the "
                "reduced grid")
        lines.append(f"| reduced grid ≤ {TARGET_GPU_HOURS:g} GPU-hours, measured rates | {vals} | {_verdict(None)} |")
        lines.append(f"| full grid ≤ {TARGET_FULL_GPU_HOURS:g} GPU-hours, measured rates | {vals} | {_verdict(None)} |")

    # smoke
    s = m.smoke
    if s:
        vals = (f"`./reproduce.sh` {_mmss(s['reproduce_s'])} ({_env_note(s)}), `./test.sh` {_mmss(s['test_s'])} "
                f"({s['tests_passed']} passed, {s['tests_skipped']} skipped; {_test_note(s)}); fresh clone of {s['commit'][:7]}, {s['machine']}")
        ok = (s["reproduce_s"] <= TARGET_SMOKE_REPRODUCE_S and s["test_s"] <= TARGET_SMOKE_TEST_S and not s.get("tests_failed")
              and "env_s" in s)  # an older record counted the environment inside reproduce_s: not comparable
    else:
        vals, ok = "not recorded (`scripts/time_fresh_clone.sh`)", None
    lines.append(f"| smoke `./reproduce.sh` ≤ {TARGET_SMOKE_REPRODUCE_S / 60:g} min and tests ≤ {TARGET_SMOKE_TEST_S / 60:g} min "
                 f"on 2 CPU cores | {vals} | {_verdict(ok)} |")
    return "\n".join(lines)


def _mmss(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s"


def results_block(m: Measurements) -> str:
    """The GPU run as recorded: environment, the benchmark table, the end-to-end encoder."""
    if not m.gpu:
        return ("**No GPU run is recorded yet** (`docs/bench/gpu/` is empty): no GPU has been lent to this project so far. "
                "On a GPU machine, `scripts/device_bench.sh` runs every GPU measurement into one folder and "
                "`python -m benchmarks record --from DIR` files it under `docs/bench/gpu/` and fills the generated tables.")
    env = m.gpu["environment"]
    made = record_provenance("bench.json", m.gpu)
    added = "".join(f"; rows {', '.join(f'`{k}`' for k in a['keys'])} added from a run of {a.get('date', '')} at commit "
                    f"{a['commit'][:10]}" for a in m.gpu.get("added", []))
    lines = [
        f"Measured on **{env.get('device')}** ({env.get('date', '')}, commit {str(made['commit'])[:10]}{added}): torch {env.get('torch')}, CUDA {env.get('cuda')}, "
        f"transformers {env.get('transformers')}, Python {env.get('python')}; autocast {env.get('autocast')}; "
        f"peak {env.get('peak_bf16_tflops')} TFLOP/s dense bf16; warm-up {m.gpu.get('warmup')} + {m.gpu.get('steps')} timed steps; "
        f"deterministic algorithms {m.gpu.get('deterministic_algorithms')}.",
        f"Command: `{m.gpu.get('command', '')}` — the whole report is `docs/bench/gpu/bench.json`.",
        "",
        m.gpu["table_markdown"],
    ]
    if m.gpu_memory:
        lines += ["", f"End to end (`{m.gpu_memory.get('command', 'python -m benchmarks memory')}`; `docs/bench/gpu/memory.json`):",
                  "", m.gpu_memory["table_markdown"]]
    return "\n".join(lines)


def cpu_memory_block(m: Measurements) -> str:
    """The host-memory measurement of the corpus encoder on the CPU (``docs/bench/cpu/memory.json``)."""
    r = m.cpu_memory
    if not r:
        return "Not recorded: `python -m benchmarks memory --passages 1000000 --threads 1 --out docs/bench/cpu`."
    before = r.get("rss_before_mb") or 0.0
    return "\n".join([
        f"`{r.get('command', 'python -m benchmarks memory')}` (`docs/bench/cpu/memory.json`): "
        f"{r['passages']:,} passages, peak host memory {r['peak_rss_mb'] / 1000:.2f} GB ({before:,.0f} MB before encoding); "
        f"the Arrow corpus is {r.get('arrow_mb', float('nan')):,.0f} MB, and its mapped pages count in the file-backed peak "
        f"(reclaimable page cache); {r['zero_rows']} rows unwritten, {r['nonfinite_rows']} not finite.",
        "",
        r["table_markdown"],
    ])


# --------------------------------------------------------------------------- writing
# ---- wall-clock on N GPUs (issue 16): the README's cluster section
CLUSTER_GPUS = (1, 8, 32)


def cluster_block(m: Measurements) -> str:
    """Wall-clock hours of notebooks 02-07 on 1, 8 and 32 GPUs: at the targets, reduced grid, and measured rates when recorded."""
    from .cost import grid_jobs, wall_clock

    assumed = _assumed(ASSUMED, m)
    cols = [("at the targets", wall_clock(grid_jobs(assumed), CLUSTER_GPUS)),
            (f"at the targets, `{_reduced_flag()}`", wall_clock(grid_jobs(assumed, overrides=REDUCED), CLUSTER_GPUS))]
    if m.gpu:
        cols.append((f"measured rates ({m.gpu_name})", wall_clock(grid_jobs(_measured(m), encode_passages_per_s=m.encode_rate), CLUSTER_GPUS)))
    lines = ["| GPUs | " + " | ".join(f"wall-clock hours, {name}" for name, _ in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for n in CLUSTER_GPUS:
        lines.append(f"| {n} | " + " | ".join(f"{w['hours'][n]:.1f}" for _, w in cols) + " |")
    lines.append("")
    notes = [f"{name}: {w['runs']} jobs, {w['gpu_hours']:.1f} GPU-hours, longest single job {w['longest'][1]:.2f} h "
             f"(`{w['longest'][0]}`), critical path {w['critical_path']:.2f} h" for name, w in cols]
    lines.append("; ".join(notes) + ". One job per GPU (a training run, or 05's evaluation-only baseline of one target), list scheduling with the longest remaining path first "
                 f"(`{targets_command(m)} --gpus 1,8,32`"
                 + (f"; measured: `{measured_command(m, '--gpus 1,8,32')}`" if m.gpu else "") + "); 06 and 07 (alignment and pre-training before"
                 " their fine-tunings); 01's translation left out"
                 + ("" if m.gpu else "; no measured column yet (no GPU run recorded)") + ".")
    return "\n".join(lines)


def replace_block(text: str, name: str, body: str, path: str) -> str:
    """``text`` with the lines between ``<!-- bench:name -->`` and ``<!-- /bench:name -->`` replaced by ``body``."""
    pattern = re.compile(rf"(<!-- bench:{re.escape(name)} -->\n)(.*?)(<!-- /bench:{re.escape(name)} -->)", re.S)
    found = pattern.findall(text)
    if len(found) != 1:
        raise RecordError(f"{path}: expected one block '<!-- bench:{name} -->' … '<!-- /bench:{name} -->', found {len(found)}")
    return pattern.sub(lambda mt: mt.group(1) + body.rstrip("\n") + "\n" + mt.group(3), text)


def render(m: Measurements, files: Mapping[Path, str] | None = None) -> dict[Path, str]:
    """The new text of the files of :data:`BLOCKS` (``files``: their current text, read when not given)."""
    files = dict(files or {p: p.read_text(encoding="utf-8") for p in BLOCKS})
    costs = _costs(m)
    make = {"results": lambda: results_block(m), "cpu_memory": lambda: cpu_memory_block(m), "cost": lambda: cost_block(m, costs),
            "targets": lambda: targets_block(m, costs), "cluster": lambda: cluster_block(m), "money": lambda: money_block(m, costs),
            "summary": lambda: summary_block(m, costs), "smoke": lambda: smoke_block(m),
            "teaching": lambda: teaching_block(m)}
    out = {}
    for path, text in files.items():
        for name in BLOCKS.get(path, ()):
            text = replace_block(text, name, make[name](), str(path))
        out[path] = text
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from codeswitch.core.atomic import atomic_write_text

    p = argparse.ArgumentParser(prog="python -m benchmarks record", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="src", action="append", default=[], metavar="DIR",
                   help="a GPU run's output folder (bench.json, memory.json) to file under docs/bench/gpu/ (may repeat)")
    p.add_argument("--add", action="append", default=[], metavar="DIR",
                   help="a partial GPU run's output folder: its rows join the filed bench.json (same GPU and sizes; may repeat)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated block is out of date")
    a = p.parse_args(list(argv) if argv is not None else None)
    try:
        if a.src:
            if a.check:
                p.error("--from and --check do not go together")
            for path in import_run([Path(x) for x in a.src]):
                print(f"[bench record] filed {path.relative_to(ROOT)}")
        if a.add and a.check:
            p.error("--add and --check do not go together")
        for src in a.add:
            for path in add_rows(Path(src)):
                print(f"[bench record] added the rows of {src} to {path.relative_to(ROOT)}")
        new = render(Measurements.load())
    except RecordError as e:
        print(f"[bench record] {e}", file=sys.stderr)
        return 2
    stale = 0
    for path, text in new.items():
        old = path.read_text(encoding="utf-8")
        if old == text:
            continue
        rel = path.relative_to(ROOT)
        if a.check:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), f"{rel} (committed)", f"{rel} (from docs/bench)"))
        else:
            atomic_write_text(path, text)
            print(f"[bench record] updated {rel}")
    if a.check and stale:
        print("[bench record] out of date: run `python -m benchmarks record`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
