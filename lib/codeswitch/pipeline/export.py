"""``./reproduce.sh export DIR``: copy the kept models of one run's plan into ``DIR/<paper>/<table>/<row>/`` (issue 41),
each verified against its manifest, optionally uploaded to the Hugging Face hub; ``docs/models.md``."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Sequence

from ..core.deltas import parse_overrides
from ..core.profiles import load_profile, project_root
from ..core.sections import ConfigError
from .command import EXIT_CODES, resolve_cli_paths, validate_sections
from .notebooks import NOTEBOOKS, select


def export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reproduce.sh export",
        description="Copy the kept models of one run's plan (its --profile and --set values; keep_models: best | all) into "
                    "DIR/<paper>/<table>/<row>/, each verified against its manifest (every file hashed) and with its model "
                    "card; optionally upload them to the Hugging Face hub (token: $HF_TOKEN only).  Rows the plan keeps no "
                    "model of are listed, and the exit code is then 1.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="where the models go (new folders only, unless --force)")
    p.add_argument("--profile", default="smoke", help="profile name or YAML path of the run to export (default smoke)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="the --set values of the run to export (its plan, hence its models, depends on them)")
    p.add_argument("--only", default=None, help="comma-separated notebook numbers, e.g. 03,05")
    p.add_argument("--force", action="store_true",
                   help="export into existing row folders: replace the files an export wrote there; no other file is deleted")
    p.add_argument("--push-to-hub", metavar="ORG", default=None,
                   help="upload each exported model as the repository ORG/<paper>-<table>-<row> (private; $HF_TOKEN); "
                        "only when every row has its model")
    p.add_argument("--dry-run", action="store_true", help="list the kept models that would be exported and the rows without "
                                                          "one; copy nothing")
    return p


def export_plan_runs(profile, numbers: Sequence[str] | None = None) -> tuple[list, list[str]]:
    """The runs of ``profile``'s plan that keep a model (each package's ``kept_plan`` and ``kept_dir``, for the packages
    with a ``SELECTION_RULE`` serving ``numbers``), and the sections whose runs cannot be named (their data is not here:
    the kept folders are named by the runs' keys, which hold the data's hash)."""
    from ..core.publish import PlanRun
    from .registry import packages

    runs, unnamed = [], []
    for pkg in packages():
        if pkg.SELECTION_RULE is None or (numbers is not None and not set(numbers) & set(pkg.NOTEBOOKS)):
            continue
        setting = pkg.load(profile).keep_models
        for planned in pkg.kept_plan(profile):
            if not hasattr(planned.spec, "key_hash"):
                unnamed.append(pkg.SECTION)
                break
            runs.append(PlanRun(pkg.SECTION, setting, planned.spec, planned.row, pkg.kept_dir(profile, planned.spec)))
    return runs, unnamed


def _unwritable(dest: Path) -> Path | None:
    """The folder that stops ``dest`` from being created or written (its nearest existing parent, or itself)."""
    p = dest
    while not p.exists() and p != p.parent:
        p = p.parent
    return None if p.is_dir() and os.access(p, os.W_OK | os.X_OK) else p


def _export_dry_run(plan, dest: Path, what: str, err) -> int | None:
    """``export --dry-run``: where each kept model of the plan would go; an exit code on an error, else ``None``."""
    from ..core.publish import ExportError, export_targets

    try:
        targets = export_targets(plan.models, dest)
    except ExportError as exc:
        err(f"reproduce.sh export: {exc}")
        return 1
    print(f"export (dry run): {what}; {len(targets)} kept model(s) of its plan would be copied into {dest}/"
          + "".join(f"\n  {t.relative_to(dest)}  <- {f}" for f, t, _ in targets))
    return None


def _export_copy(plan, dest: Path, what: str, prof, force: bool, err, written: list) -> int | None:
    """Copy the plan's kept models into ``dest`` (verified, new folders only unless ``force``), appending each folder
    written to ``written``; an exit code on an error or when there is nothing to export, else ``None``."""
    from ..core.publish import ExportError, export_models

    try:
        written += export_models(plan.models, dest, force=force, notes=lambda m: print(f"export: {m}", flush=True))
    except ExportError as exc:
        err(f"reproduce.sh export: {exc}")
        return 1
    except OSError as exc:
        err(f"reproduce.sh export: cannot write {exc.filename or dest}: {exc.strerror or exc}")
        return 1
    for p in written:
        print(f"exported {p}")
    if not written and not plan.missing:
        err(f"reproduce.sh export: no kept model of {what}'s plan under {prof.runs_dir} (set <section>.keep_models: "
            "best or all in the profile and run the notebooks)")
        return 1
    return None


def export_main(argv: Sequence[str]) -> int:
    """``./reproduce.sh export``: exactly the kept models of the plan of ``--profile`` and ``--set`` (issue 41:
    :func:`export_plan_runs`, :func:`codeswitch.core.publish.plan_export`), each verified against its manifest with every
    file hashed (:func:`codeswitch.core.publish.export_models`); new folders only unless ``--force``; the rows without a
    kept model listed (exit 1); every error names its path."""
    from ..core.publish import ExportError, plan_export, push_to_hub

    args = resolve_cli_paths(export_parser().parse_args(argv))
    root = project_root()
    err = functools.partial(print, file=sys.stderr, flush=True)
    try:
        prof = load_profile(args.profile, parse_overrides(args.overrides), root=root)
        validate_sections(prof)
    except ConfigError as exc:
        err(f"reproduce.sh export: {exc}")
        return 2
    dest = Path(args.dir)
    if args.push_to_hub and prof.offline:
        err(f"reproduce.sh export: --push-to-hub {args.push_to_hub}: profile {prof.name} ({prof.source_file}) is offline "
            "(offline: true), so nothing is uploaded; export without --push-to-hub, or under a profile that may use the network")
        return 2
    blocked = None if args.dry_run else _unwritable(dest)
    if blocked is not None:
        err(f"reproduce.sh export: cannot write into {dest}: {blocked} is " + ("not a folder" if blocked.exists() and not
                                                                               blocked.is_dir() else "not writable"))
        return 2
    numbers = None if not args.only else [s.number for s in select(NOTEBOOKS, args.only)]
    try:
        runs, unnamed = export_plan_runs(prof, numbers)
        plan = plan_export(runs)
    except (ExportError, OSError) as exc:
        err(f"reproduce.sh export: {exc}")
        return 1
    except Exception as exc:  # noqa: BLE001 - a plan that cannot be built (its data unreadable): one line naming it
        err(f"reproduce.sh export: the plan of profile {prof.name} cannot be built: {type(exc).__name__}: {exc}")
        return 2
    what = f"profile {prof.name}" + (f" with {' '.join('--set ' + o for o in args.overrides)}" if args.overrides else "")
    for section in unnamed:
        err(f"reproduce.sh export: {section}: the runs of its plan cannot be named (its data is not here: the kept folders "
            "are named by the runs' keys, which hold the data's hash); its models are not exported")
    written = []
    failed = _export_dry_run(plan, dest, what, err) if args.dry_run else _export_copy(plan, dest, what, prof, args.force, err, written)
    if failed is not None:
        return failed
    if plan.missing:
        err(f"reproduce.sh export: {len(plan.missing)} row(s) of {what}'s plan have no kept model (keep_models asks for "
            "them; run their notebooks with the same --profile and --set to keep them):"
            + "".join(f"\n  {row}" for row in plan.missing))
    if unnamed or plan.missing:
        if args.push_to_hub:
            err(f"reproduce.sh export: --push-to-hub {args.push_to_hub}: nothing uploaded while a row lacks its model")
        return 1
    if args.push_to_hub and not args.dry_run:
        try:
            for repo in push_to_hub(written, args.push_to_hub):
                print(f"uploaded {repo}")
        except PermissionError as exc:
            err(f"reproduce.sh export: {exc}")
            return 2
        except Exception as exc:  # noqa: BLE001 - the hub's errors (network, authorisation): one line, naming the folder
            err(f"reproduce.sh export: --push-to-hub {args.push_to_hub}: uploading from {dest} failed: "
                f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
            return 1
    return 0
