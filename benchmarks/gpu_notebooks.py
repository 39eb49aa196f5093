"""``python -m benchmarks gpu-notebooks``: every notebook's paper path at paper size on one GPU (issue 25).

Sub-commands::

    python -m benchmarks gpu-notebooks wheels [--image FILE]       the distributions scripts/make_wheelhouse.sh carries
    python -m benchmarks gpu-notebooks report DIR                   what scripts/gpu_notebooks.sh ran, into DIR/report.{json,md}
    python -m benchmarks gpu-notebooks record ARCHIVE|DIR [...]     the device's archive(s) -> docs/bench/gpu/notebooks/

``report`` reads the folder scripts/gpu_notebooks.sh fills (``timings.tsv``, ``logs/``, ``runs/`` = the run
records of ``runs/paper-gpu/``, ``figures/`` = ``figures/paper-gpu/``) and checks, per notebook: it finished; the
precision, batch sizes and device its runs recorded (their keys and ``stats``); peak GPU memory (the runs'
``stats.peak_memory_bytes``, :mod:`codeswitch.core.runstats`); every table it wrote has finite numbers.  Per
run kind (the run cache folder: ``glue``, ``concse``, ``contrastivemix/train`` …) it derives steps/s, sequences/s
and MFU on non-padding tokens from the runs' stats (6·N per training token, 2·N per inference token, N = the
model's parameters outside its embedding tables; attention's L² term not counted: a lower bound).

``record`` unpacks the archive(s), writes each notebook's log, the environment and the report under
``docs/bench/gpu/notebooks/``, and a README with the summary table and, per notebook, the GPU-hours of the
full paper profile extrapolated from the measured seconds per optimiser step, beside the cost model's estimate
(``python -m benchmarks cost docs/bench/gpu/bench.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
IMAGE_PACKAGES = ROOT / "scripts" / "gpu_image_packages.txt"
DEST = ROOT / "docs" / "bench" / "gpu" / "notebooks"
BENCH = ROOT / "docs" / "bench" / "gpu" / "bench.json"

#: what the notebooks import (directly or through the library) that a GPU image may lack, as distributions
NOTEBOOK_DISTRIBUTIONS = (
    "papermill", "nbclient", "nbformat", "ipykernel", "datasets", "umap-learn", "bm25s", "seqeval", "nltk", "torch-struct",
    "benepar", "indic-transliteration", "ir_measures", "pytrec_eval-terrier", "submitit", "koreanize-matplotlib",
)
#: carried even where the image has another version: the project's pin (the code is tested against it)
PINNED_OVER_IMAGE = ("transformers", "sentence-transformers")  # the packed steps use sentence-transformers 6.2's merge helper
#: never carried: the image's (torch, its CUDA build) or not used on the device (spaCy: benepar's plugin, unused)
NEVER = ("torch", "spacy")

#: run cache folder (below runs/<profile>/) -> the notebooks it serves (the first: a carried record's)
FOLDER_NOTEBOOKS = {"koglish": ("01",), "koglish_synthetic": ("01",), "glue": ("02",), "concse": ("03", "04"),
                    "contrastivemix": ("05",), "alignment": ("06",), "calbert": ("07",)}
#: table columns that hold no measurement (the papers' numbers, spreads, p-values): as tests/test_paper_ci.py
UNCHECKED_COLUMNS = {"paper", "diff", "paper_note", "std", "p_value"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages(path: Path = IMAGE_PACKAGES) -> set[str]:
    return {_norm(ln.strip()) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")}


def wheel_list(image: set[str], top: Sequence[str] = NOTEBOOK_DISTRIBUTIONS + PINNED_OVER_IMAGE) -> dict[str, str]:
    """``{distribution: version}``: ``top`` and everything they need (this environment's versions, the pinned set),
    less what ``image`` has (but :data:`PINNED_OVER_IMAGE`) and :data:`NEVER`; requirements are those whose markers
    hold on the image (Linux x86-64, CPython 3.12, no extras)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    target = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux", "platform_system": "Linux",
              "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
              "platform_python_implementation": "CPython", "extra": ""}

    need: dict[str, str] = {}
    todo = list(top)
    while todo:
        name = todo.pop()
        key = _norm(name)
        if key in need or key in {_norm(n) for n in NEVER}:
            continue
        if key in image and key not in {_norm(n) for n in PINNED_OVER_IMAGE}:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a dependency for another platform (appnope)
        need[key] = dist.version
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate(target):
                todo.append(req.name)
    return dict(sorted(need.items()))


# --------------------------------------------------------------------------- report (on the device)
def _records(runs: Path) -> Iterable[tuple[str, dict]]:
    for p in sorted(runs.rglob("*.json")):
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(rec, dict) and "result" in rec and "config" in rec:
            parts = p.parent.relative_to(runs).parts
            rec["_mtime"] = p.stat().st_mtime  # when it was written (the archive keeps it): which notebook computed it
            yield "/".join(parts[1:] if parts and parts[0].startswith("paper-gpu") else parts), rec  # less the profile's folder


def _notebook_of(kind: str, mtime: float | None, windows: Sequence[tuple[str, float, float]]) -> str:
    """The notebook that computed a record: the one running when it was written (scripts/gpu_notebooks.sh records each
    notebook's start); where several ran then (GPU_NOTEBOOKS_PARALLEL), the one of them its run cache folder serves;
    else (a carried record) the one its folder serves (ConCSE's folder serves 03 and 04)."""
    running = [nb for nb, start, end in windows if mtime is not None and start - 1 <= mtime <= end + 1]
    if len(running) == 1:
        return running[0]
    serves = FOLDER_NOTEBOOKS.get(kind.split("/")[0], ("?",))
    served = [nb for nb in running if nb in serves]
    return served[0] if len(served) == 1 else serves[0]


def _concurrent(windows: Sequence[tuple[str, float, float]]) -> list[str]:
    """The notebooks whose run overlapped another's (they shared the GPU: their wall times are upper bounds)."""
    return sorted({a for a, s1, e1 in windows for b, s2, e2 in windows if a != b and s1 < e2 and s2 < e1})


def _batch_sizes(config: Mapping, prefix: str = "") -> dict[str, object]:
    out = {}
    for k, v in config.items():
        if isinstance(v, Mapping) and k != "inputs":
            out.update(_batch_sizes(v, f"{prefix}{k}."))
        elif "batch" in k and not isinstance(v, (list, dict)):
            out[prefix + k] = v
    return out


def _finite_problems(csv: Path) -> list[str]:
    import pandas as pd

    df = pd.read_csv(csv, keep_default_na=False, na_values=["", "nan", "NaN", "NA", "inf", "-inf"])
    numeric = df.select_dtypes("number")
    bad = [f"{c}[{i}]" for c in numeric if c not in UNCHECKED_COLUMNS for i in range(len(df))
           if not math.isfinite(float(numeric[c].iloc[i]))]
    return bad


def summarize(folder: Path, peak_tflops: float | None = None) -> dict:
    """The report of one scripts/gpu_notebooks.sh folder (see the module docstring)."""
    from codeswitch.pipeline.cli import NOTEBOOKS

    folder = Path(folder)
    timings = {}
    tsv = folder / "timings.tsv"
    if tsv.is_file():
        for line in tsv.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 4 and parts[0] != "notebook":
                timings[parts[0]] = {"rc": int(parts[1]), "seconds": float(parts[2]), "status": parts[3],
                                     "start": float(parts[4]) if len(parts) > 4 and parts[4] else None}
    windows = [(nb, t["start"], t["start"] + t["seconds"]) for nb, t in timings.items() if t.get("start") and nb.isdigit()]
    concurrent = _concurrent(windows)
    env = {}
    if (folder / "env" / "environment.json").is_file():
        env = json.loads((folder / "env" / "environment.json").read_text(encoding="utf-8"))
    peak = peak_tflops or env.get("peak_bf16_tflops")
    kinds: dict[tuple[str, str], dict] = {}
    per_nb: dict[str, dict] = {}
    for kind, rec in _records(folder / "runs"):
        stats = rec.get("stats") or {}
        cfg = rec.get("config") or {}
        nb = _notebook_of(kind, rec.get("_mtime"), windows)
        for n in nb.split("/"):
            d = per_nb.setdefault(n, {"runs": 0, "measured_runs": 0, "devices": set(), "precisions": set(), "batch_sizes": set(),
                                      "peak_memory_bytes": 0, "peak_run": None, "input_devices": set(), "autocast": set(),
                                      "max_train_batch": 0})
            d["input_devices"].update(stats.get("input_devices") or ())
            d["autocast"].update(stats.get("autocast") or ())
            d["max_train_batch"] = max(d["max_train_batch"], stats.get("max_train_batch") or 0)
            d["runs"] += 1
            if "optimizer_steps" in stats or stats.get("device"):
                d["measured_runs"] += 1
            if stats.get("device"):
                d["devices"].add(stats["device"])
            if cfg.get("precision"):
                d["precisions"].add(str(cfg["precision"]))
            d["batch_sizes"].update(f"{k}={v}" for k, v in _batch_sizes(cfg).items())
            if (stats.get("peak_memory_bytes") or 0) > d["peak_memory_bytes"]:
                d["peak_memory_bytes"], d["peak_run"] = stats["peak_memory_bytes"], f"{kind}/{rec.get('key')}"
        if "optimizer_steps" not in stats:
            continue
        k = kinds.setdefault((nb, kind), {"runs": 0, "seconds": 0.0, "steps": 0, "train_span_s": 0.0, "train_sequences": 0,
                                          "train_tokens": 0, "eval_tokens": 0, "train_flops": 0.0, "flops": 0.0})
        k["runs"] += 1
        k["seconds"] += rec.get("seconds") or 0.0
        k["steps"] += stats.get("optimizer_steps", 0)
        k["train_span_s"] += stats.get("train_span_s") or 0.0
        k["train_sequences"] += stats.get("train_sequences", 0)
        k["train_tokens"] += stats.get("train_tokens", 0)
        k["eval_tokens"] += stats.get("eval_tokens", 0)
        for m in (stats.get("models") or {}).values():
            k["train_flops"] += 6.0 * m["params"] * m["train_tokens"]
            k["flops"] += 6.0 * m["params"] * m["train_tokens"] + 2.0 * m["params"] * m["eval_tokens"]
    kind_rows = []
    for (nb, kind), k in sorted(kinds.items()):
        span = k["train_span_s"]
        kind_rows.append({
            "notebook": nb, "kind": kind, **{x: k[x] for x in ("runs", "steps", "train_sequences", "train_tokens", "eval_tokens")},
            "seconds": round(k["seconds"], 2), "train_span_s": round(span, 2),
            "steps_per_s": k["steps"] / span if span > 0 and k["steps"] else None,
            "sequences_per_s": k["train_sequences"] / span if span > 0 else None,
            "train_mfu": k["train_flops"] / (span * peak * 1e12) if span > 0 and peak else None,
            "run_mfu": k["flops"] / (k["seconds"] * peak * 1e12) if k["seconds"] > 0 and peak else None,
            "s_per_step_whole_run": k["seconds"] / k["steps"] if k["steps"] else None,
        })
    figures = folder / "figures"
    notebooks = []
    for spec in NOTEBOOKS:
        t = timings.get(spec.number)
        if t is None and spec.number not in per_nb:
            continue
        written, missing, nonfinite = [], [], {}
        for name in (spec.artifacts if t is not None else ()):  # a notebook not run here (its carried records only)
            found = sorted(figures.glob(f"{name}.*")) if figures.is_dir() else []
            (written if found else missing).append(name)
            csv = figures / f"{name}.csv"
            if csv.is_file():
                bad = _finite_problems(csv)
                if bad:
                    nonfinite[name] = bad[:10]
        d = per_nb.get(spec.number, {})
        notebooks.append({
            "notebook": spec.number, "title": spec.title, "status": (t or {}).get("status", "not run"),
            "rc": (t or {}).get("rc"), "seconds": (t or {}).get("seconds"),
            "runs": d.get("runs", 0), "measured_runs": d.get("measured_runs", 0),
            "devices": sorted(d.get("devices", ())), "precisions": sorted(d.get("precisions", ())),
            "batch_sizes": sorted(d.get("batch_sizes", ())), "input_devices": sorted(d.get("input_devices", ())),
            "autocast": sorted(d.get("autocast", ())), "max_train_batch": d.get("max_train_batch") or None,
            "peak_memory_gib": round(d["peak_memory_bytes"] / 2**30, 2) if d.get("peak_memory_bytes") else None,
            "peak_run": d.get("peak_run"),
            "artifacts_written": written, "artifacts_missing": missing, "nonfinite": nonfinite,
            "ok": t is None or (t.get("rc") == 0 and not missing and not nonfinite),
            "concurrent": spec.number in concurrent,
        })
    return {"environment": env, "peak_bf16_tflops": peak, "notebooks": notebooks, "kinds": kind_rows, "concurrent": concurrent}


def _fmt(x, digits=2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def report_markdown(rep: Mapping) -> str:
    env = rep.get("environment") or {}
    lines = ["# Notebooks at paper size on one GPU (profile paper-gpu)", "",
             f"device: {env.get('gpu', '?')} | torch {env.get('torch', '?')} | transformers {env.get('transformers', '?')} | "
             f"python {env.get('python', '?')} | peak bf16 {rep.get('peak_bf16_tflops') or '?'} TFLOP/s", ""]
    lines += [f"commit: {env.get('commit', 'not recorded')} | date: {env.get('date', 'not recorded')}", ""]
    if env.get("command"):
        lines += [f"command: `{env['command']}`", ""]
    if rep.get("concurrent"):
        lines += [f"Notebooks {', '.join(rep['concurrent'])} ran at the same time on the one GPU (GPU_NOTEBOOKS_PARALLEL): their wall "
                  "times and the rates below were measured under shared load (upper bounds on time, lower bounds on rate); "
                  "peak memory is each process's own.", ""]
    lines += ["| notebook | status | wall s | runs (measured) | peak GPU memory GiB | device | inputs on | precision (key) | "
              "autocast (training) | largest training batch | finite | artifacts missing |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in rep["notebooks"]:
        lines.append(f"| {n['notebook']} | {n['status']} | {_fmt(n['seconds'], 0)} | {n['runs']} ({n['measured_runs']}) | "
                     f"{_fmt(n['peak_memory_gib'])} | {', '.join(n['devices']) or '–'} | {', '.join(n.get('input_devices', ())) or '–'} | "
                     f"{', '.join(n['precisions']) or '–'} | {', '.join(n.get('autocast', ())) or '–'} | {_fmt(n.get('max_train_batch'))} | "
                     f"{'yes' if not n['nonfinite'] else 'NO: ' + '; '.join(n['nonfinite'])} | {', '.join(n['artifacts_missing']) or '–'} |")
    lines += ["", "Batch sizes the runs recorded (their keys):", ""]
    for n in rep["notebooks"]:
        lines.append(f"- {n['notebook']}: {', '.join(n['batch_sizes']) or '–'}")
    lines += ["", "Per run kind (training span: first to last training forward; MFU on non-padding tokens, 6·N per training "
              "token, 2·N per inference token, attention not counted):", "",
              "| notebook | kind | runs | optimiser steps | steps/s | sequences/s | train MFU | whole-run MFU | s per step (whole run) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for k in rep["kinds"]:
        mfu = lambda x: "–" if x is None else f"{100 * x:.1f}%"  # noqa: E731
        lines.append(f"| {k['notebook']} | {k['kind']} | {k['runs']} | {k['steps']} | {_fmt(k['steps_per_s'])} | "
                     f"{_fmt(k['sequences_per_s'], 1)} | {mfu(k['train_mfu'])} | {mfu(k['run_mfu'])} | {_fmt(k['s_per_step_whole_run'], 3)} |")
    return "\n".join(lines) + "\n"


def write_report(folder: Path, peak_tflops: float | None = None) -> dict:
    rep = summarize(folder, peak_tflops)
    (Path(folder) / "report.json").write_text(json.dumps(rep, indent=1, default=sorted), encoding="utf-8")
    (Path(folder) / "report.md").write_text(report_markdown(rep), encoding="utf-8")
    return rep


# --------------------------------------------------------------------------- record (back here)
def _unpack(sources: Sequence[Path], into: Path) -> list[Path]:
    """Each source (an archive, or a folder holding archives or an unpacked run) -> its unpacked run folders."""
    from codeswitch.core.utils import extract_tar

    out = []
    for src in sources:
        src = Path(src)
        archives = sorted(src.glob("*.tar.gz")) if src.is_dir() else [src]
        if src.is_dir() and not archives:
            out.append(src)
            continue
        for a in archives:
            dest = into / a.name.replace(".tar.gz", "")
            dest.mkdir(parents=True)
            with tarfile.open(a) as tar:
                extract_tar(tar, dest, source=str(a))
            tops = [p for p in dest.iterdir()]
            out.append(tops[0] if len(tops) == 1 and tops[0].is_dir() else dest)
    return out


def extrapolate(rep: Mapping, costs: Sequence[Mapping]) -> list[dict]:
    """Per notebook, the paper profile's GPU-hours from the measured runs, beside the cost model's: the paper's optimiser
    steps (the cost model's count) x the measured seconds per step, (i) of the training span alone (first to last
    training forward: the steps, and the evaluations between epochs; a lower bound, no loading or final evaluation),
    and (ii) of the whole runs (loading, evaluation, saving included: paper-gpu's runs are short, so their fixed
    costs weigh more than at paper size: an upper bound).  ``differs_over_30pct`` compares (i) with the cost model."""
    measured: dict[str, list[float]] = {}
    for k in rep["kinds"]:
        for nb in k["notebook"].split("/"):
            m = measured.setdefault(nb, [0.0, 0.0, 0])
            m[0] += k["train_span_s"]
            m[1] += k["seconds"]
            m[2] += k["steps"]
    rows = []
    for c in costs:
        nb = c["notebook"]
        span, secs, steps = measured.get(nb, [0.0, 0.0, 0])
        paper_steps = c.get("steps")
        step_s = span / steps if steps and span else None
        run_s = secs / steps if steps else None
        low = step_s * paper_steps / 3600 if step_s and paper_steps else None
        high = run_s * paper_steps / 3600 if run_s and paper_steps else None
        model = c.get("hours")
        ratio = low / model if low and model else None
        rows.append({"notebook": nb, "measured_steps": steps, "step_s": step_s, "whole_run_s_per_step": run_s,
                     "paper_optimiser_steps": paper_steps, "gpu_hours_from_steps": low, "gpu_hours_from_whole_runs": high,
                     "cost_model_gpu_hours": model, "ratio_steps_to_model": ratio,
                     "differs_over_30pct": ratio is not None and abs(ratio - 1) > 0.3})
    return rows


def record(sources: Sequence[Path], dest: Path = DEST, bench: Path = BENCH, *, force: bool = False) -> Path:
    """Unpack the device archive(s) into ``dest``: per-notebook logs, environment, report; README with the summary.

    A ``dest`` that already holds a record is refused unless ``force``: writing over it would lose that record (the
    cost model reads the 2026-11-25 one in ``docs/bench/gpu/notebooks/``); record a new call into a dated folder."""
    dest = Path(dest)
    if (dest / "report.json").is_file() and not force:
        raise FileExistsError(f"{dest} already holds a record (report.json): recording into it would replace it; give another "
                              f"--dest (e.g. {DEST.parent}/notebooks-<date>) or --force")
    with tempfile.TemporaryDirectory() as tmp:
        folders = _unpack(sources, Path(tmp))
        merged = Path(tmp) / "merged"
        for sub in ("runs", "figures", "logs", "env"):
            (merged / sub).mkdir(parents=True, exist_ok=True)
        timings = ["notebook\trc\tseconds\tstatus"]
        for f in folders:
            for sub in ("runs", "figures", "logs", "env"):
                if (f / sub).is_dir():
                    shutil.copytree(f / sub, merged / sub, dirs_exist_ok=True)
            if (f / "timings.tsv").is_file():
                timings += [ln for ln in (f / "timings.tsv").read_text(encoding="utf-8").splitlines()[1:] if ln.strip()]
        (merged / "timings.tsv").write_text("\n".join(timings) + "\n", encoding="utf-8")
        rep = summarize(merged)
        rows = []
        if Path(bench).is_file():
            from .cost import notebook_costs

            _, costs = notebook_costs(json.loads(Path(bench).read_text(encoding="utf-8")), "paper")
            rows = extrapolate(rep, costs)
        rep["extrapolation"] = rows
        dest.mkdir(parents=True, exist_ok=True)
        for sub in ("logs", "env"):
            if (merged / sub).is_dir() and any((merged / sub).iterdir()):
                shutil.copytree(merged / sub, dest / sub, dirs_exist_ok=True)
        shutil.copy(merged / "timings.tsv", dest / "timings.tsv")
        (dest / "report.json").write_text(json.dumps(rep, indent=1, default=sorted), encoding="utf-8")
        md = report_markdown(rep)
        if rows:
            md += ("\nGPU-hours of the full paper profile: the paper's optimiser steps (the cost model's count) x the measured "
                   "seconds per step, (i) of the training spans (steps and the evaluations between epochs: a lower bound) and "
                   "(ii) of the whole runs (loading, evaluation and saving included; paper-gpu's runs are short, so these fixed "
                   "costs weigh more than at paper size: an upper bound), beside the cost model's estimate "
                   "(`python -m benchmarks cost docs/bench/gpu/bench.json`); ratio = (i) / cost model.\n\n"
                   "| notebook | measured steps | s/step (i) | s/step (ii) | paper optimiser steps | GPU-hours (i) | GPU-hours (ii) "
                   "| cost model GPU-hours | ratio |\n|---|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                flag = " (>30 %)" if r["differs_over_30pct"] else ""
                md += (f"| {r['notebook']} | {r['measured_steps']} | {_fmt(r['step_s'], 3)} | {_fmt(r['whole_run_s_per_step'], 3)} | "
                       f"{_fmt(r['paper_optimiser_steps'])} | {_fmt(r['gpu_hours_from_steps'], 1)} | "
                       f"{_fmt(r['gpu_hours_from_whole_runs'], 1)} | {_fmt(r['cost_model_gpu_hours'], 1)} | "
                       f"{_fmt(r['ratio_steps_to_model'])}{flag} |\n")
        (dest / "README.md").write_text(md, encoding="utf-8")
    return dest / "README.md"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks gpu-notebooks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("wheels", help="print name==version of every distribution to carry")
    w.add_argument("--image", default=str(IMAGE_PACKAGES), help="the image's distributions, one a line")
    r = sub.add_parser("report", help="write DIR/report.json and DIR/report.md")
    r.add_argument("dir")
    r.add_argument("--peak-tflops", type=float, default=None)
    c = sub.add_parser("record", help="the device archive(s) -> docs/bench/gpu/notebooks/")
    c.add_argument("sources", nargs="+", help="gpu_notebooks*.tar.gz archives, or folders holding them")
    c.add_argument("--dest", default=str(DEST))
    c.add_argument("--bench", default=str(BENCH), help="the bench.json whose rates the cost model uses")
    c.add_argument("--force", action="store_true", help="replace the record that --dest already holds")
    a = p.parse_args(list(argv) if argv is not None else None)
    if a.command == "wheels":
        for name, version in wheel_list(image_packages(Path(a.image))).items():
            print(f"{name}=={version}")
    elif a.command == "report":
        rep = write_report(Path(a.dir), a.peak_tflops)
        print(report_markdown(rep))
        return 0 if all(n["ok"] for n in rep["notebooks"]) else 1
    else:
        try:
            print(f"written: {record([Path(s) for s in a.sources], Path(a.dest), Path(a.bench), force=a.force)}")
        except FileExistsError as exc:
            print(f"python -m benchmarks gpu-notebooks record: {exc}", file=sys.stderr)
            return 2
    return 0
