"""What every ``./reproduce.sh`` command shares (the notebooks' run, ``--check``, ``export``): the one rule for relative
paths (a path typed on the command line is read from where it was typed), the exit codes, and the check of every
section's settings before anything starts.  :mod:`codeswitch.pipeline.cli` and :mod:`codeswitch.pipeline.export`
import it; it imports neither."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.deltas import parse_overrides
from ..core.sections import ConfigError

#: the one exit-code convention of ./reproduce.sh (--help prints it; docs/running.md, "Exit codes")
EXIT_CODES = """exit codes (one convention for every command):
  0    done: the run completed; --check / --dry-run: everything the selected notebooks need is there
  1    done, with a problem found: --check / --dry-run found something missing (a report, not a failure to run);
       a notebook or a run failed (the others are cached; run again to resume); export: a row without a kept model
  2    nothing was started: a bad option, profile or --set value, an unwritable output folder, or (a real run)
       a resource the selected notebooks need is not there -- e.g. `./reproduce.sh --profile paper` offline
       without local copies exits 2, while `--check` and `--dry-run` of the same profile exit 1
  130  interrupted (Ctrl-C): finished runs are cached; rerun to resume
  143  terminated (SIGTERM: kill, a cluster's time limit or scancel): the same as Ctrl-C"""


def validate_sections(profile) -> None:
    """Build every section's typed config (each package's ``load``, from the one registry,
    :func:`codeswitch.pipeline.registry.packages`), overrides applied, so a bad value stops the run before any notebook."""
    from .registry import packages

    for pkg in packages():
        try:
            pkg.load(profile)
        except ConfigError:
            raise
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"section '{pkg.SECTION}': {exc}") from None


def check_settings(profile, notebooks) -> None:
    """The settings of the packages serving ``notebooks`` that depend on what they name (each package's optional
    ``check_settings``, :data:`codeswitch.core.experiment.OPTIONAL`): a ``ConfigError`` before any notebook starts, not
    in the middle of a grid (alignment's ``align_layer`` deeper than its backbone was found after 105 minutes)."""
    from .registry import packages

    chosen = set(notebooks)
    for pkg in packages():
        fn = getattr(pkg, "check_settings", None)
        if fn is not None and chosen & set(pkg.NOTEBOOKS):
            fn(profile)


# --------------------------------------------------------------------------- one rule for relative paths
CWD_VAR = "CODESWITCH_CWD"  # where the command was typed (reproduce.sh exports it before it changes into the repository)


def command_cwd() -> Path:
    """The directory the command was typed in: ``$CODESWITCH_CWD`` (set by ``reproduce.sh``), else the process's."""
    return Path(os.environ.get(CWD_VAR) or os.getcwd())


def _is_path(text: str, cwd: Path) -> bool:
    """A command-line value that names a local path: ``./``, ``../``, ``~``, absolute, or a relative path with a ``/``
    that exists from ``cwd`` (``data/sail2017``).  ``nyu-mll/glue`` (no such folder here) is a hub id, ``synthetic`` a
    word: both are left as they are."""
    if text.startswith(("/", "./", "../", "~")) or text in (".", ".."):
        return True
    return "/" in text and "://" not in text and (cwd / text).exists()


def absolute_paths(value, cwd: Path | None = None):
    """``value`` (an override's value: a string, or lists and mappings of them) with every relative path made
    absolute from ``cwd`` (default :func:`command_cwd`): the one rule, that of every command-line tool.  Resolved
    once here, so the preflight, the kernel (papermill's parameters: its cwd is ``notebooks/``) and the provenance
    all receive the same absolute path."""
    cwd = Path(cwd or command_cwd())
    if isinstance(value, str):
        if not _is_path(value, cwd):
            return value
        return str((cwd / os.path.expanduser(value)).resolve()) if not Path(value).is_absolute() else value
    if isinstance(value, list):
        return [absolute_paths(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: absolute_paths(v, cwd) for k, v in value.items()}
    return value


def _profile_path(profile: str, cwd: Path) -> str:
    """``--profile``: a name stays a name; a YAML path is made absolute from where the command was typed."""
    if Path(profile).suffix not in (".yaml", ".yml"):
        return profile
    return str((cwd / os.path.expanduser(profile)).resolve())


def resolve_cli_paths(args, cwd: Path | None = None):
    """``args`` with ``--profile``, every ``--set`` value, ``--prepare`` and ``export``'s DIR absolute (:func:`absolute_paths`)."""
    import json

    cwd = Path(cwd or command_cwd())
    args.profile = _profile_path(args.profile, cwd)
    if getattr(args, "overrides", None):
        out = []
        for item in args.overrides:
            (key, value), = parse_overrides([item]).items()
            resolved = absolute_paths(value, cwd)
            out.append(item if resolved == value else f"{key}={json.dumps(resolved, ensure_ascii=False)}")
        args.overrides = out
    for name in ("prepare", "dir"):
        if getattr(args, name, None):
            setattr(args, name, str((cwd / os.path.expanduser(getattr(args, name))).resolve()))
    return args
