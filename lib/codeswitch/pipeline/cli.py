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

One notebook is run by :func:`codeswitch.pipeline.execute.run_notebook`, which the test suite calls too.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Sequence

from ..core.deltas import parse_overrides
from ..core.profiles import PROFILES, load_profile, project_root
from ..core.sections import ConfigError
from ..core.atomic import atomic_write_text
from .command import EXIT_CODES, check_settings, resolve_cli_paths, validate_sections
from .execute import NotebookFailed, check_outputs, progress_path, run_notebook, write_index
from .notebooks import NOTEBOOKS, NotebookSpec, available, select


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
        check_settings(profile, [s.number for s in chosen])  # ... and on a value what it names refutes (a layer a backbone lacks)
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

    from ..core.atomic import HOST, STALE_OTHER_HOST_S, pid_alive

    folder = Path(runs_dir) / ".warnings"
    current = atomic_write_text(folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{HOST}-{os.getpid()}.jsonl", "")
    pattern = re.compile(r"^\d{8}-\d{6}-(?:([A-Za-z0-9]+)-)?(\d+)\.jsonl$")  # (without a host: written before hosts were named)
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if p == current or not m:
            continue
        try:
            live = pid_alive(int(m.group(2))) if m.group(1) in (None, HOST) else time.time() - p.stat().st_mtime < STALE_OTHER_HOST_S
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

    numbers = None if not args.only else [s.number for s in select(available(root), args.only)]
    try:
        prof = load_profile(args.profile, parse_overrides(args.overrides), root=root)
        validate_sections(prof)
        check_settings(prof, numbers or [s.number for s in available(root)])
    except ConfigError as exc:
        print(f"reproduce.sh: {exc}", file=sys.stderr)
        return 2
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
    from ..core.publish import disk_use
    from .preflight import kept_estimates, render_kept

    return render_kept(kept_estimates(profile, notebooks), disk_use(profile.runs_dir))


if __name__ == "__main__":
    sys.exit(main())
