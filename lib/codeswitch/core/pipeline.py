"""The headless driver behind ``./reproduce.sh``: every numbered notebook, in order, through papermill.

``python -m codeswitch.core.pipeline --profile smoke [--only 01,03] [--list]``

* Executed notebooks go to ``runs/<profile>/notebooks/<name>.ipynb`` (written as
  ``<name>.running.ipynb`` while they run, renamed when they end).
* A failing notebook stops the pipeline with a non-zero exit, naming the notebook
  and the failing cell; the executed copy, traceback included, is kept.
* Progress: the notebook being run, its cells, elapsed time, and the library's
  progress bars as plain log lines.
* At the end ``figures/<profile>/INDEX.md`` lists every table and figure written,
  from which notebook, with profile, git commit and date.

The same :func:`run_notebook` is what the test suite calls.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

from .profiles import PROFILES, load_profile, parse_overrides, project_root
from .runs import atomic_write_text, prepare_output


@dataclass(frozen=True)
class NotebookSpec:
    number: str
    file: str
    title: str
    artifacts: tuple[str, ...]  # what the notebook must write under figures/<profile>/

    @property
    def stem(self) -> str:
        return Path(self.file).stem


NOTEBOOKS: tuple[NotebookSpec, ...] = (
    NotebookSpec(
        "01", "01_koglish_dataset.ipynb", "Koglish: constructing code-switched data (ConCSE §3)",
        ("concse_table1", "concse_figure1", "concse_table1_exclusions"),
    ),
    NotebookSpec(
        "02", "02_koglish_glue.ipynb", "Koglish-GLUE: EN2EN / EN2CS / CS2CS (ConCSE §5.1)",
        ("concse_table2", "concse_table2_gain"),
    ),
    NotebookSpec(
        "03", "03_concse.ipynb", "ConCSE vs SimCSE on Koglish-STS (ConCSE §4, §5.2)",
        ("concse_table3", "concse_table3_figure"),
    ),
    NotebookSpec(
        "04", "04_concse_ablations.ipynb", "ConCSE ablations (ConCSE §5.3)",
        (
            "concse_table4", "concse_table5", "concse_table6", "concse_table7",
            "concse_table5_plot", "concse_table6_plot", "concse_table7_plot",
            "concse_ablation_variant", "concse_ablation_simcse_settings",
        ),
    ),
    NotebookSpec(
        "05", "05_contrastivemix.ipynb", "ContrastiveMix: zero-shot multilingual retrieval",
        (
            "contrastivemix_table1", "contrastivemix_table2", "contrastivemix_table3", "contrastivemix_table4",
            "contrastivemix_figure1", "contrastivemix_figure2", "contrastivemix_figure3",
        ),
    ),
    NotebookSpec(
        "06", "06_alignment.ipynb", "Sentence- and word-level alignment for code-switching",
        ("alignment_table3_1", "alignment_table3_2", "alignment_figure3_1"),
    ),
    NotebookSpec(
        "07", "07_calbert.ipynb", "CalBERT: Siamese pre-training for code-mixed text",
        ("calbert_table6", "calbert_table7", "calbert_table12"),
    ),
)


class NotebookFailed(RuntimeError):
    def __init__(self, spec: NotebookSpec, executed: Path, cell: int | None, detail: str):
        self.spec, self.executed, self.cell, self.detail = spec, executed, cell, detail
        where = f"cell {cell}" if cell is not None else "before any cell ran"
        super().__init__(f"notebook {spec.file} failed in {where}: {detail}\n  executed copy (with traceback): {executed}")


def notebooks_dir(root: Path | None = None) -> Path:
    return (root or project_root()) / "notebooks"


def available(root: Path | None = None) -> list[NotebookSpec]:
    """The registered notebooks that exist in ``notebooks/``, in order."""
    nb_dir = notebooks_dir(root)
    return [s for s in NOTEBOOKS if (nb_dir / s.file).is_file()]


def select(specs: Sequence[NotebookSpec], only: str | None) -> list[NotebookSpec]:
    if not only:
        return list(specs)
    wanted = [w.strip().zfill(2) for w in only.split(",") if w.strip()]
    known = {s.number for s in NOTEBOOKS}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise SystemExit(f"--only: no notebook numbered {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    missing = [w for w in wanted if w not in {s.number for s in specs}]
    if missing:
        raise SystemExit(f"--only: notebook(s) {', '.join(missing)} are registered but not present in notebooks/ yet")
    return [s for s in specs if s.number in wanted]


def run_notebook(
    spec: NotebookSpec,
    profile: str = "smoke",
    *,
    output_root: Path | None = None,
    overrides: Mapping | None = None,
    root: Path | None = None,
    log_output: bool = True,
) -> Path:
    """Execute one notebook headlessly; return the executed copy's path or raise :class:`NotebookFailed`."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    root = root or project_root()
    prof = load_profile(profile, root=root, output_root=output_root)
    prepare_output(prof.runs_dir)  # a non-writable runs/ fails here, before any training; temps of killed runs go
    out_dir = prof.runs_dir / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    running = out_dir / f"{spec.stem}.running.ipynb"
    final = out_dir / spec.file
    env_before = dict(os.environ)
    os.environ.update(
        {
            "CODESWITCH_NOTEBOOK": spec.stem,
            "CODESWITCH_LOG_PROGRESS": "1",
            "CODESWITCH_HOME": str(root),
            "MPLBACKEND": "Agg",
            "PYTHONHASHSEED": "0",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    if output_root is not None:
        os.environ["CODESWITCH_OUTPUT_ROOT"] = str(Path(output_root).resolve())
    try:
        pm.execute_notebook(
            str(notebooks_dir(root) / spec.file),
            str(running),
            parameters={"profile": profile, "overrides": dict(overrides or {})},
            kernel_name="python3",
            cwd=str(notebooks_dir(root)),
            log_output=log_output,
            progress_bar=False,
            request_save_on_cell_execute=True,
        )
    except PapermillExecutionError as exc:
        os.replace(running, final)
        raise NotebookFailed(spec, final, exc.exec_count, f"{exc.ename}: {exc.evalue}") from None
    except BaseException as exc:
        if running.exists():
            os.replace(running, final)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise NotebookFailed(spec, final, None, f"{type(exc).__name__}: {exc}") from None
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    os.replace(running, final)
    return final


def git_commit(root: Path) -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return (sha or "unknown") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write_index(profile: str, *, output_root: Path | None = None, root: Path | None = None) -> Path:
    """Write ``figures/<profile>/INDEX.md`` from the index entries the notebooks left."""
    from .report import read_index

    root = root or project_root()
    prof = load_profile(profile, root=root, output_root=output_root)
    entries = read_index(prof.figures_dir)
    by_name = {e["name"]: e for e in entries}
    order = [a for s in NOTEBOOKS for a in s.artifacts]
    names = [n for n in order if n in by_name] + sorted(n for n in by_name if n not in order)
    lines = [
        f"# Tables and figures — profile `{profile}`",
        "",
        f"- git commit: `{git_commit(root)}`",
        f"- written: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- executed notebooks: `{prof.runs_dir.relative_to(prof.output_root or root) / 'notebooks'}/`",
        "",
        "| artifact | kind | files | notebook | profile | written | caption |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in names:
        e = by_name[n]
        files = ", ".join(f"[{f}]({f})" for f in e["files"])
        caption = e["caption"].replace("|", "\\|")
        lines.append(f"| `{n}` | {e['kind']} | {files} | `{e['notebook']}` | {e['profile']} | {e['written']} | {caption} |")
    missing = [a for s in available(root) for a in s.artifacts if a not in by_name]
    if missing:
        lines += ["", "Not (yet) produced: " + ", ".join(f"`{m}`" for m in missing)]
    return atomic_write_text(prof.figures_dir / "INDEX.md", "\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="reproduce.sh",
        description="Run the numbered notebooks headlessly and regenerate every table and figure into figures/<profile>/.",
    )
    parser.add_argument("--profile", default="smoke", help=f"profile name or YAML path (shipped: {', '.join(PROFILES)}; default smoke)")
    parser.add_argument("--only", default=None, help="comma-separated notebook numbers, e.g. 02,03")
    parser.add_argument("--list", action="store_true", help="list the notebooks and the artifacts each writes, then exit")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a profile value (JSON), e.g. --set seeds=[1] --set glue.epochs=1")
    args = parser.parse_args(argv)
    root = project_root()
    specs = available(root)
    if args.list:
        for s in NOTEBOOKS:
            mark = " " if s in specs else "-"
            print(f"{mark} {s.number}  {s.file:<32} {s.title}")
            print(f"      writes: {', '.join(s.artifacts)}")
        print("\n('-' = registered but not in notebooks/ yet)")
        return 0
    chosen = select(specs, args.only)
    overrides = parse_overrides(args.overrides)
    prof = load_profile(args.profile, root=root)  # fails fast on a bad profile name
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    logging.getLogger("papermill").setLevel(logging.INFO)
    print(f"reproduce: profile {prof.name}, {len(chosen)} notebook(s): {', '.join(s.number for s in chosen)}", flush=True)
    t_all = time.perf_counter()
    for i, spec in enumerate(chosen, 1):
        print(f"\n=== [{i}/{len(chosen)}] {spec.file} — {spec.title} ===", flush=True)
        t0 = time.perf_counter()
        try:
            executed = run_notebook(spec, args.profile, overrides=overrides, root=root)
        except NotebookFailed as exc:
            print(f"\nFAILED: {exc}", file=sys.stderr, flush=True)
            write_index(args.profile, root=root)
            return 1
        print(f"=== done {spec.file} in {time.perf_counter() - t0:.0f} s -> {executed}", flush=True)
    index = write_index(args.profile, root=root)
    print(f"\nreproduce: all done in {time.perf_counter() - t_all:.0f} s; index: {index}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
