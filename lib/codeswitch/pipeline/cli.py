"""The headless driver behind ``./reproduce.sh``: every numbered notebook, in order, through papermill.

``python -m codeswitch.pipeline --profile smoke [--only 01,03] [--list]``

* Executed notebooks go to ``runs/<profile>/notebooks/<name>.ipynb`` (written as
  ``<name>.running.ipynb`` while they run, renamed when they end); a run with overrides
  keeps its own beside its tables, in ``runs/<profile>+<hash>/notebooks/`` (:func:`executed_dir`).
* A failing notebook stops the pipeline with a non-zero exit, naming the notebook
  and the failing cell; the executed copy, traceback included, is kept.
* Output: per notebook one start line, the library's progress as plain log lines
  (indented; see :mod:`codeswitch.progress`), and one end line with its time and
  the artifacts it wrote.  Papermill's cell log, the cells' own output and the
  kernel's warnings stay out of the log (they are in the executed notebook).
* At the end ``figures/<profile>/INDEX.md`` lists every table and figure written,
  from which notebook, with the provenance (profile, overrides, git commit, inputs).
  A run with overrides writes into ``figures/<profile>+<hash>/`` instead
  (:func:`codeswitch.core.profiles.figures_folder`), never over the profile's own tables.
* The whole profile (every section, the overrides, every resource the selected
  notebooks read: local paths, and hub models and datasets when the hub cannot be
  reached) is validated before the first notebook starts (:func:`missing_resources`).

The same :func:`run_notebook` is what the test suite calls.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

from ..core.profiles import PROFILES, load_profile, parse_overrides, project_root
from ..core.sections import ConfigError
from ..core.runs import atomic_write_text, prepare_output
from .command import EXIT_CODES, resolve_cli_paths, validate_sections
from .notebooks import (NOTEBOOKS, PARTIAL, NotebookSpec, available, executed_dir, failed_notebooks, notebooks_dir,
                        partial_copy, select, set_aside)


class NotebookFailed(RuntimeError):
    def __init__(self, spec: NotebookSpec, executed: Path, cell: int | None, detail: str):
        self.spec, self.executed, self.cell, self.detail = spec, executed, cell, detail
        where = f"cell {cell}" if cell is not None else "before any cell ran"
        super().__init__(f"notebook {spec.file} failed in {where}: {detail}\n  executed copy (with traceback): {executed}")


def run_notebook(
    spec: NotebookSpec,
    profile: str = "smoke",
    *,
    output_root: Path | None = None,
    overrides: Mapping | None = None,
    root: Path | None = None,
    log_output: bool = False,
    progress_file: Path | None = None,
) -> Path:
    """Execute one notebook headlessly; return the executed copy's path or raise :class:`NotebookFailed`."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    root = root or project_root()
    prof = load_profile(profile, overrides, root=root, output_root=output_root)
    check_outputs(prof)  # a non-writable runs/ or figures/ fails here, before any training; temps of killed runs go
    out_dir = executed_dir(prof)
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
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # no "Writing model shards: 0%" stubs; the library's own bars remain
            "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        }
    )
    # progress lines go to a side file (reproduce.sh prints it); the notebook keeps one final line per loop
    own_progress = progress_file is None
    progress_file = Path(progress_file) if progress_file is not None else progress_path(out_dir, spec)
    os.environ["CODESWITCH_PROGRESS_FILE"] = str(progress_file)
    if output_root is not None:
        os.environ["CODESWITCH_OUTPUT_ROOT"] = str(Path(output_root).resolve())
    from ..core.runs import _temp_prefix

    # the kernel's connection file (else /tmp/tmp*.json, left behind when this process is killed): a temp named
    # after this process, which the next run's prepare_output removes once this process is gone
    connection = out_dir / f"{_temp_prefix(out_dir / 'kernel.json')}{spec.stem}.json"
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
            extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no "running over TCP without encryption" warning
            kernel_manager_class=_kernel_manager_class(connection),  # a class: the client still owns, and stops, the kernel
        )
    except PapermillExecutionError as exc:
        kept = set_aside(running, final, "failed")
        raise NotebookFailed(spec, kept, exc.exec_count, f"{exc.ename}: {exc.evalue}") from None
    except BaseException as exc:
        interrupted = isinstance(exc, (KeyboardInterrupt, SystemExit))
        kept = set_aside(running, final, "interrupted" if interrupted else "failed")
        if interrupted:
            raise
        raise NotebookFailed(spec, kept, None, f"{type(exc).__name__}: {exc}") from None
    finally:
        os.environ.clear()
        os.environ.update(env_before)
        if own_progress:
            progress_file.unlink(missing_ok=True)
        connection.unlink(missing_ok=True)
    os.replace(running, final)  # a complete copy: the only thing that ever replaces one
    for what in PARTIAL:  # the partial copies of earlier runs are out of date now
        partial_copy(final, what).unlink(missing_ok=True)
    return final


def progress_path(folder: Path, spec: NotebookSpec) -> Path:
    """This process's progress file for ``spec`` in ``folder``: named after the host and the process, so two runs of one
    notebook at once never share one (each console would print both runs' bars); a killed run's is a temp the next
    run's :func:`codeswitch.core.runs.prepare_output` removes."""
    from ..core.runs import _temp_prefix

    return Path(folder) / f"{_temp_prefix(Path(folder) / f'{spec.stem}.progress.log')}log"


def _kernel_manager_class(connection: Path) -> type:
    """jupyter_client's kernel manager, with two changes for headless runs.

    * The kernel's connection file goes to ``connection`` (below the run's folder) instead of
      ``/tmp/tmp*.json``, so a killed kernel leaves nothing behind in /tmp.
    * Shutting a kernel down sends no interrupt first: ``shutdown_kernel`` sends SIGINT before its
      shutdown request, and a kernel still finishing its last message (07, with its many tables)
      logged ``[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel`` on the terminal of a clean
      run.  The shutdown request (then SIGTERM, SIGKILL after ``shutdown_wait_time``) ends it as before.
    """
    from jupyter_client import AsyncKernelManager

    class HeadlessKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            kwargs.setdefault("connection_file", str(connection))
            super().__init__(**kwargs)

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    return HeadlessKernelManager


def write_index(profile: str, *, output_root: Path | None = None, root: Path | None = None, overrides: Mapping | None = None,
                warnings_file: Path | None = None) -> Path:
    """Write ``INDEX.md`` in the profile's figures folder (``figures/<profile>[+<hash>]/``) from the index entries the notebooks left.

    Its header is the provenance of the run (:mod:`codeswitch.core.provenance`): profile, overrides, git commit
    (and whether the tree was dirty); each artifact's row names the inputs its runs read.  ``warnings_file``: the
    warnings this run reported (:func:`codeswitch.core.runs.report_warning`), listed under the table.
    """
    from ..core.provenance import lines as provenance_lines, provenance
    from ..core.report import md_escape, read_index
    from ..core.runs import read_reported_warnings, remove_all_stale_temps, summarize_warnings

    root = root or project_root()
    prof = load_profile(profile, overrides, root=root, output_root=output_root)
    remove_all_stale_temps(prof.figures_dir)  # a table write killed while moving its files into place: completed now
    entries = read_index(prof.figures_dir)
    by_name = {e["name"]: e for e in entries}
    order = [a for s in NOTEBOOKS for a in s.artifacts]
    names = [n for n in order if n in by_name] + sorted(n for n in by_name if n not in order)
    prov = provenance(prof, inputs={})
    lines = [
        f"# Tables and figures — profile `{prof.name}`" + (f", with overrides (`{prof.figures_dir.name}`)" if prov["overrides"] else ""),
        "",
        *(f"- {md_escape(line)}" for line in provenance_lines(prov) if not line.startswith("inputs:")),
        f"- written: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- executed notebooks: [`{executed_dir(prof).relative_to(prof.output_root or root)}/`]"
        f"({Path(os.path.relpath(executed_dir(prof), prof.figures_dir)).as_posix()}/)",
        "",
        "| artifact | kind | files | notebook | profile | written | caption | inputs | the paper's claim: "
        + ("its outcome on the smoke data (not a test of the paper) |" if prof.name == "smoke" else "supported by this run? |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    stale = []
    other_settings = []
    for n in names:
        e = by_name[n]
        files = ", ".join(f"[{f}]({f})" for f in e["files"])
        caption = md_escape(e["caption"])
        made_with = (e.get("provenance") or {}).get("profile_hash")
        mark = "" if made_with == prov["profile_hash"] else " **STALE**"
        lines.append(f"| `{n}`{mark} | {e['kind']} | {files} | `{e['notebook']}` | {e['profile']} | {e['written']} | {caption} | "
                     f"{_inputs_cell(e)} | {_claim_cell(e)} |")
        if mark:
            other_settings.append(f"`{n}` ({made_with or 'settings not recorded'})")
        written_by = (e.get("provenance") or {}).get("git_commit")
        if written_by and written_by != prov["git_commit"]:
            stale.append(f"`{n}` ({written_by})")
    failed = failed_notebooks(prof)
    if failed:
        lines += ["", "**The last run of these notebooks did not complete**; their artifacts above are from an earlier run:", "",
                  *(f"- `{stem}`: {md_escape(reason)} (log: [{log.name}]({Path(os.path.relpath(log, prof.figures_dir)).as_posix()}))"
                    for stem, reason, log in failed)]
    if other_settings:
        lines += ["", f"**STALE**: made with other profile settings than this profile's now (settings hash "
                      f"{prov['profile_hash']}): " + ", ".join(other_settings) + ". Run their notebooks again."]
    if stale:
        lines += ["", "Written by another commit than this index: " + ", ".join(stale)]
    from ..core.claims import inputs_note

    recorded = {k: v for e in by_name.values() for k, v in (((e.get("provenance") or {}).get("inputs")) or {}).items()}
    note = inputs_note(prof.name, recorded)  # what the numbers are, read from the inputs the artifacts recorded
    if note:
        lines += ["", note]
    missing = [a for s in available(root) for a in s.artifacts if a not in by_name]
    if missing:
        lines += ["", "Not (yet) produced: " + ", ".join(f"`{m}`" for m in missing)]
    reported = read_reported_warnings(warnings_file) if warnings_file else []
    if reported:
        lines += ["", "Warnings of the run that wrote this index:", "", *(f"- {md_escape(w)}" for w in summarize_warnings(reported))]
    return atomic_write_text(prof.figures_dir / "INDEX.md", "\n".join(lines) + "\n")


def _inputs_cell(entry: Mapping) -> str:
    """INDEX.md's inputs column: the input identities recorded with the artifact."""
    from ..core.report import md_escape

    inputs = (entry.get("provenance") or {}).get("inputs")
    if inputs is None:
        return "not recorded"
    return md_escape("; ".join(f"{k}: {', '.join(v) if isinstance(v, (list, tuple)) else v}" for k, v in inputs.items())) or "none"


class _ProgressTail:
    """Print what the notebook's progress bars write to ``path`` (indented) while a notebook runs."""

    def __init__(self, path: Path):
        import threading

        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def _run(self) -> None:
        with open(self.path, encoding="utf-8") as f:
            while True:
                line = f.readline()
                if line:
                    print("   " + line.rstrip("\n"), flush=True)
                elif self._stop.is_set():
                    return
                else:
                    time.sleep(0.2)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)
        self.path.unlink(missing_ok=True)


def _written(spec: NotebookSpec, figures_dir: Path, since: float) -> str:
    """The notebook's registered artifacts written during this run, as ``name (md, csv, tex)`` items."""
    from ..core.report import read_index

    fresh = {e["name"]: e for e in read_index(figures_dir) if e.get("notebook") == spec.stem
             and (figures_dir / e["files"][0]).is_file() and (figures_dir / e["files"][0]).stat().st_mtime >= since}
    return f"{len(fresh)} artifact(s): " + (", ".join(sorted(fresh)) if fresh else "none")


def missing_resources(profile, notebooks: Sequence[str] | None = None) -> list[str]:
    """What the selected notebooks need and cannot get, one line each (the preflight, :mod:`codeswitch.pipeline.preflight`).

    A local file or folder that is not there, a package, a credential, and a hub model or dataset (or a URL)
    that is not in the local cache while the hub cannot be reached (offline mode, or no connection): each would
    otherwise fail only when its notebook reaches it, after a kernel started, possibly hours in.  A hub resource
    missing from the cache while the hub is reachable is downloaded on first use and is not listed.  Each line
    names the setting and where its value came from (the profile file, or the ``--set`` that gave it).
    """
    from . import preflight
    from ..core.hub import hub_reachable

    out = []
    for s in preflight.check(profile, notebooks=notebooks):
        if s.present or (s.source in ("hub", "url") and hub_reachable()):
            continue
        setting = s.resource.setting
        origin = next((f"--set {k}" for k in profile.overrides if setting == k or setting.startswith(k + ".")), profile.source_file)
        if s.source == "local":
            what = f"lacks {', '.join(s.missing_files)}" if s.missing_files and Path(s.where).exists() else "does not exist"
            out.append(f"{setting} = {s.resource.ref!r} ({origin}): {s.where} {what}")
        else:
            out.append(f"{s.resource.kind} {setting} = {s.resource.ref!r} ({origin}): {s.where}")
    return out


def _claim_cell(entry: Mapping) -> str:
    """INDEX.md's claim column: verdict mark and the claim (tables; figures show the claim of their table); under the
    smoke profile worded from the artifact's recorded inputs (synthetic or real data), as its table note is."""
    from ..core.claims import Claim, real_data
    from ..core.report import md_escape

    c = entry.get("claim")
    if not c:
        return "–" if entry.get("kind") == "table" else ""
    claim = Claim(**c)
    cell = claim.index_cell(entry.get("profile"), real_data=real_data((entry.get("provenance") or {}).get("inputs")))
    return f"{md_escape(cell)}: {md_escape(claim.text)}"


#: the one exit-code convention of ./reproduce.sh (--help prints it; docs/running.md, "Exit codes")
def parser() -> argparse.ArgumentParser:
    """``./reproduce.sh``'s options (``./reproduce.sh --help`` prints them all)."""
    parser = argparse.ArgumentParser(
        prog="reproduce.sh",
        usage="%(prog)s [options]\n       %(prog)s export DIR [--profile P] [--set K=V ...] [--only N,M] [--dry-run] [--force] [--push-to-hub ORG]"
              "   (copy the kept models; %(prog)s export --help)",
        description="Run the numbered notebooks headlessly and regenerate every table and figure into figures/<profile>/.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--profile", default="smoke", help=f"profile name or YAML path (shipped: {', '.join(PROFILES)}; default smoke)")
    parser.add_argument("--only", default=None, help="comma-separated notebook numbers, e.g. 02,03")
    parser.add_argument("--list", action="store_true", help="list the notebooks and the artifacts each writes, then exit")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a profile value (JSON), e.g. --set seeds=[1] --set glue.num_train_epochs=1")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the profile, every --set value and every resource the selected notebooks need, print what "
                             "would run, and exit without running: 0 when all is there, 1 when something is missing")
    # ---- where runs are computed (issue 16): not result-changing, so never passed to the notebooks as overrides
    parser.add_argument("--executor", default=None, choices=("inline", "local", "slurm", "submitit-local"),
                        help="compute the runs inline (default), in local worker processes, or as Slurm jobs; "
                             "with a non-inline executor every pending run is submitted first, then the notebooks build")
    parser.add_argument("--runs-only", action="store_true",
                        help="compute every run the selected notebooks read (with the executor; inline: in this process) "
                             "into the run cache, then exit without building the notebooks: they build later from the "
                             "cache, here or on another machine, with the same command without --runs-only")
    parser.add_argument("--workers", type=int, default=None, help="--executor local: worker processes (default: one per GPU, else 1); --executor submitit-local: "
                        "at most this many jobs at once (default: one per core)")
    parser.add_argument("--runs-per-gpu", type=int, default=None,
                        help="--executor local: runs computed side by side on each GPU (executor.local.runs_per_gpu; default 1)")
    parser.add_argument("--partition", default=None, help="--executor slurm: the partition")
    parser.add_argument("--account", default=None, help="--executor slurm: the account")
    parser.add_argument("--verify", action="store_true",
                        help="re-hash every input and checkpoint, even those whose size and mtime are unchanged "
                             "(the profile's verify_hashes: always; the paper profiles do it by default)")
    parser.add_argument("--book", action="store_true",
                        help="build the static website of the profile's executed notebooks, INDEX.md and figures into "
                             "runs/<profile>/book/ (after a run; nothing is executed), then exit")
    _preflight_flags(parser)
    return parser


def _book(args, root: Path) -> int:
    """``--book``: the static site of the last run (nothing is executed)."""
    from .book import BookError, build

    try:
        index = build(args.profile, overrides=parse_overrides(args.overrides), root=root)
    except (BookError, ConfigError) as exc:
        print(f"reproduce.sh --book: {exc}", file=sys.stderr)
        return 2
    print(f"book: {index.relative_to(root) if index.is_relative_to(root) else index} (open it in a browser, or publish {index.parent.name}/ as it is)")
    return 0


def _list(specs) -> int:
    """``--list``: the notebooks and the artifacts each writes."""
    for s in NOTEBOOKS:
        mark = " " if s in specs else "-"
        print(f"{mark} {s.number}  {s.file:<32} {s.title}")
        print(f"      writes: {', '.join(s.artifacts)}")
    if len(specs) < len(NOTEBOOKS):
        print("\n('-' = registered but not in notebooks/ yet)")
    return 0


def _validated(args, overrides: dict, chosen, root: Path):
    """The profile, every section, the resources and the executor, checked before any notebook starts:
    ``(profile, missing resources, executor)``, or the exit code 2 after a clear error."""
    from .executors import SECTION, executor_config

    if any(k == SECTION or k.startswith(SECTION + ".") for k in overrides):
        raise SystemExit(f"--set {SECTION}...: choose where runs are computed with --executor/--workers/--runs-per-gpu/--partition/--account "
                         f"or the profile's '{SECTION}:' section (it is not a result-changing override)")
    try:
        profile = load_profile(args.profile, overrides, root=root)  # fails fast on a bad profile name or --set key
        validate_sections(profile)  # ... and on a bad value, before any notebook starts
        missing = missing_resources(profile, [s.number for s in chosen])  # ... and on anything they need that is not there
        executor = executor_config(profile, kind=args.executor, workers=args.workers, partition=args.partition, account=args.account,
                                   runs_per_gpu=args.runs_per_gpu)
        profile.torch_device()  # ... and on a device this machine does not have (device: cuda, no GPU visible)
    except ConfigError as exc:
        print(f"reproduce.sh: {exc}", file=sys.stderr)
        return 2
    return profile, missing, executor


def _stop_before_running(args, profile, missing: list[str], executor, chosen, overrides: dict) -> int | None:
    """What a dry run prints, or why a real run does not start (a missing resource, a read-only runs/): its exit code;
    ``None``: go on."""
    check = shlex.join(["./reproduce.sh", *_command_args(args), "--check"])
    if missing and not args.dry_run:
        print(f"reproduce.sh: {len(missing)} resource(s) the selected notebooks need are not there; nothing was started "
              f"(fix them, or choose other notebooks with --only; `{check}` prints how):\n  " + "\n  ".join(missing), file=sys.stderr)
        return 2
    if args.dry_run:
        print(f"reproduce (dry run): profile {profile.name} and {len(overrides)} override(s) valid; executor {executor.kind}; "
              f"would run {', '.join(s.number for s in chosen)}; tables and figures into {profile.figures_dir.name}/")
        if missing:
            print(f"  a real run would stop here: {len(missing)} resource(s) not there (`{check}` prints how to get them):\n    "
                  + "\n    ".join(missing))
            return 1
        return 0
    try:
        check_outputs(profile)  # before any output is opened: a read-only runs/ or figures/ stops here, with the fix
    except PermissionError as exc:
        print(f"reproduce.sh: {exc}", file=sys.stderr)
        return 2
    return None


def check_outputs(profile) -> None:
    """Every folder a run writes, checked writable before any work (``PermissionError`` naming the folder): the run
    cache (with its kept models), the executed notebooks' folder, and the tables' and figures' folder (a read-only
    ``figures/`` was found only after all training, in the cell that saved the first table)."""
    from ..core.runs import ensure_writable

    prepare_output(profile.runs_dir)
    ensure_writable(executed_dir(profile), what="the executed notebooks' folder")
    ensure_writable(profile.figures_dir, what="the tables' and figures' folder")


def _after_failure(args, root: Path, overrides: dict, warnings_file: Path) -> None:
    """What a failed run still does (print the warnings, write INDEX.md), never raising over the first error: a failure
    here (a read-only figures/, the cause of the first error, often) is one more line on stderr."""
    for step in (lambda: _print_warnings(warnings_file),
                 lambda: write_index(args.profile, root=root, overrides=overrides, warnings_file=warnings_file)):
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - reported, never over the error that stopped the run
            print(f"reproduce.sh: also: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _run_environment(args, profile) -> Path:
    """This run's process environment (``--verify``, the warnings file, logging); returns the warnings file."""
    from ..core.identity import VERIFY_VAR
    from ..core.runs import WARNINGS_FILE_VAR

    if args.verify:
        os.environ[VERIFY_VAR] = "always"  # this process, its kernels and its workers
    warnings_file = fresh_warnings_file(profile.runs_dir)
    os.environ[WARNINGS_FILE_VAR] = str(warnings_file)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stdout)
    logging.getLogger("papermill").setLevel(logging.WARNING)
    return warnings_file


def _run_notebooks(args, profile, executor, chosen, overrides: dict, root: Path, warnings_file: Path) -> int:
    """Every chosen notebook in order (with an executor, after submitting every run at once); the index at the end."""
    from .executors import Submission

    t_all = time.perf_counter()
    if args.runs_only:
        return _runs_only(args, profile, executor, chosen, overrides, root, t_all)
    grid = None
    if executor.kind != "inline":  # submit everything; a notebook builds once its own runs are cached
        print(f"\n=== runs of every selected notebook, executor {executor.kind} ===", flush=True)
        grid = Submission([s.number for s in chosen], load_profile(args.profile, overrides, root=root), executor).start()
    shown = 0
    for i, spec in enumerate(chosen, 1):
        failures = grid.wait(spec.number) if grid else []
        if failures:
            failures = grid.wait()  # the others went on: report every failure once the grid ended
            for f in failures:
                print(f"\nFAILED: {f.describe()}", file=sys.stderr, flush=True)
            print(f"\n{len(failures)} run(s) failed (logs and specs above); the others are cached. "
                  "Fix the cause and run again: only what is missing is submitted.", file=sys.stderr, flush=True)
            _after_failure(args, root, overrides, warnings_file)
            return 1
        print(f"[{i}/{len(chosen)}] {spec.number} {spec.title} ...", flush=True)
        t0, wall0 = time.perf_counter(), time.time()
        try:
            with _ProgressTail(progress_path(profile.runs_dir, spec)) as tail:
                executed = run_notebook(spec, args.profile, overrides=overrides, root=root, progress_file=tail.path)
        except NotebookFailed as exc:
            print(f"\nFAILED: {exc}", file=sys.stderr, flush=True)
            _after_failure(args, root, overrides, warnings_file)
            return 1
        rel = executed.relative_to(root) if executed.is_relative_to(root) else executed
        print(f"[{i}/{len(chosen)}] {spec.number} done in {time.perf_counter() - t0:.0f} s; "
              f"{_written(spec, profile.figures_dir, wall0 - 1)}; executed notebook {rel}", flush=True)
        shown = _print_warnings(warnings_file, shown, live=True)
    if grid:
        grid.wait()  # every run is cached by now: the pool's shutdown
    _print_warnings(warnings_file)
    index = write_index(args.profile, root=root, overrides=overrides, warnings_file=warnings_file)
    print(f"\nreproduce: all done in {time.perf_counter() - t_all:.0f} s; index: {index}", flush=True)
    return 0


def _runs_only(args, profile, executor, chosen, overrides: dict, root: Path, t_all: float) -> int:
    """``--runs-only``: every planned run of the chosen notebooks into the cache, no notebook built (a GPU node
    computes, a laptop or login node builds the notebooks from the cache afterwards)."""
    from .executors import Submission

    numbers = [s.number for s in chosen]
    print(f"\n=== runs of notebook(s) {', '.join(numbers)}, executor {executor.kind}; --runs-only: no notebook is built ===",
          flush=True)
    grid = Submission(numbers, load_profile(args.profile, overrides, root=root), executor).start()
    failures = grid.wait()
    for f in failures:
        print(f"\nFAILED: {f.describe()}", file=sys.stderr, flush=True)
    if failures:
        print(f"\n{len(failures)} run(s) failed (logs and specs above); the others are cached. Fix the cause and run "
              "again: only what is missing is computed.", file=sys.stderr, flush=True)
        return 1
    print(f"\nreproduce --runs-only: every run of notebook(s) {', '.join(numbers)} is cached under {profile.runs_dir} "
          f"({time.perf_counter() - t_all:.0f} s); the same command without --runs-only builds the notebooks from it",
          flush=True)
    return 0


#: what Ctrl-C prints (and nothing else), with the exit code 130 (128 + SIGINT, as a shell reports it)
INTERRUPTED = "interrupted: rerun to resume"
#: what SIGTERM prints, with the exit code 143 (128 + SIGTERM)
TERMINATED = "terminated (SIGTERM): rerun to resume"


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a cluster's time limit, ``scancel``), raised where Ctrl-C raises KeyboardInterrupt, so that it
    stops a run the same clean way (a subclass: every ``except KeyboardInterrupt`` handles it)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """``./reproduce.sh``: check everything first, then run the chosen notebooks one by one (or ``export``, ``--check``,
    ``--prepare``, ``--book``, ``--list``, ``--dry-run``).  Ctrl-C: one line, :data:`INTERRUPTED`, and exit 130
    (finished runs are cached; a complete executed notebook is kept, the interrupted copy lies beside it).  SIGTERM
    (where nothing else handles it): the same, with :data:`TERMINATED` and exit 143; Python's default would end the
    process at once, leaving the notebook's ``.running`` copy and no word of what happened."""
    import signal
    import threading

    previous = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _main(argv)
    except Terminated:
        print(TERMINATED, file=sys.stderr, flush=True)
        return 143
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr, flush=True)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["export"]:
        from .export import export_main

        return export_main(argv[1:])
    args = resolve_cli_paths(parser().parse_args(argv))
    root = project_root()
    if args.check or args.prepare:
        return _preflight(args, root)
    if args.book:
        return _book(args, root)
    specs = available(root)
    if args.list:
        return _list(specs)
    chosen = select(specs, args.only)
    overrides = parse_overrides(args.overrides)
    validated = _validated(args, overrides, chosen, root)
    if isinstance(validated, int):
        return validated
    profile, missing, executor = validated
    stop = _stop_before_running(args, profile, missing, executor, chosen, overrides)
    if stop is not None:
        return stop
    warnings_file = _run_environment(args, profile)
    print(f"reproduce: profile {profile.name}, {len(chosen)} notebook(s): {', '.join(s.number for s in chosen)}", flush=True)
    return _run_notebooks(args, profile, executor, chosen, overrides, root, warnings_file)


def fresh_warnings_file(runs_dir: Path) -> Path:
    """This run's (empty) warnings file, ``<runs_dir>/.warnings/<time>-<host>-<pid>.jsonl``; the files of earlier runs are
    removed once it exists, so the folder holds the current run's alone (and that of a run still going on beside it: a
    live process of this machine, or another machine's file younger than a day)."""
    import re

    from ..core.runs import _HOST, _STALE_OTHER_HOST_S, _pid_alive

    folder = Path(runs_dir) / ".warnings"
    current = atomic_write_text(folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{_HOST}-{os.getpid()}.jsonl", "")
    pattern = re.compile(r"^\d{8}-\d{6}-(?:([A-Za-z0-9]+)-)?(\d+)\.jsonl$")  # (without a host: written before hosts were named)
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if p == current or not m:
            continue
        try:
            live = _pid_alive(int(m.group(2))) if m.group(1) in (None, _HOST) else time.time() - p.stat().st_mtime < _STALE_OTHER_HOST_S
            if not live:
                p.unlink(missing_ok=True)
        except OSError:
            pass  # a file another run removed first
    return current


def _print_warnings(path: Path, shown: int = 0, *, live: bool = False) -> int:
    """Print the warnings the runs reported (:func:`codeswitch.core.runs.report_warning`): after a notebook the new
    ones (``live``; ``shown``: how many were printed before), at the end a summary of all.  Returns how many there are."""
    from ..core.runs import read_reported_warnings, summarize_warnings

    reported = read_reported_warnings(path)
    if live:
        for w in reported[shown:]:
            print(f"   warning: {w['message']}", flush=True)
    elif reported:
        print(f"\nreproduce: {len(reported)} warning(s) in this run (also in INDEX.md):", flush=True)
        for line in summarize_warnings(reported):
            print(f"  {line}", flush=True)
    return len(reported)


# --------------------------------------------------------------------------- preflight (pipeline/preflight.py)
def _preflight_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="list every model, dataset, file, package and credential the profile needs, where each resolves "
                        "and whether it is present (no network, no kernel); exit 1 if anything is missing")
    parser.add_argument("--prepare", metavar="DIR", default=None,
                        help="(network) download everything the profile needs into DIR and write DIR/profile.yaml, "
                        "a profile pointing every reference at DIR")


def _command_args(args) -> list[str]:
    """The run's own ``--profile … [--only …] [--set …]``, for the commands its messages print (to paste as printed)."""
    out = ["--profile", args.profile]
    if args.only:
        out += ["--only", args.only]
    for s in args.overrides:
        out += ["--set", s]
    return out


def _preflight(args, root: Path) -> int:
    from . import preflight

    try:
        prof = load_profile(args.profile, parse_overrides(args.overrides), root=root)
        validate_sections(prof)
    except ConfigError as exc:
        print(f"reproduce.sh: {exc}", file=sys.stderr)
        return 2
    numbers = None if not args.only else [s.number for s in select(available(root), args.only)]
    if args.prepare:
        out = preflight.prepare(prof, args.prepare)
        prof = load_profile(str(out), root=root)
        print()
    statuses = preflight.check(prof, notebooks=numbers)
    print(f"preflight: profile {prof.name} ({prof.source_file})")
    print(_kept_models_line(prof, numbers))
    print(preflight.render(statuses, shlex.join(["./reproduce.sh", *_command_args(args)])))
    return 0 if all(s.present for s in statuses) else 1


def _kept_models_line(profile, notebooks=None) -> str:
    """``--check``'s lines on kept models (issue 28): the disk each section's ``keep_models`` will take (estimated
    from the plan) and the disk its kept models use now (:func:`codeswitch.pipeline.preflight.render_kept`)."""
    from ..core.kept import disk_use
    from .preflight import kept_estimates, render_kept

    return render_kept(kept_estimates(profile, notebooks), disk_use(profile.runs_dir))


if __name__ == "__main__":
    sys.exit(main())
