"""Kept models leave the run cache: listed (:func:`kept_models`), exported to a folder in the papers' layout, and
published to the Hugging Face hub.  What is kept, and how, is :mod:`codeswitch.core.kept`.

``./reproduce.sh export --profile P [--set K=V ...] [--only NN] DIR`` copies exactly the kept models of the plan
of that profile and those ``--set`` values (:func:`plan_export`) into ``DIR/<paper>/<table>/<row>/``
(:func:`export_models`: every file hashed against its manifest first; new folders only unless ``force``, which
never deletes a file an export did not write; the rows without a model listed); ``--push-to-hub ORG`` uploads them
with ``huggingface_hub`` (:func:`push_to_hub`; the token from ``$HF_TOKEN`` only).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .kept import META, MODELS, Row, check_setting, read_meta, row_key, slug
from .atomic import atomic_directory

__all__ = ["kept_models", "export", "push_to_hub", "ExportError", "PlanRun", "ExportPlan", "plan_export", "export_targets",
           "export_models", "disk_use"]


def kept_models(runs_dir: str | Path, notebooks: Sequence[str] | None = None) -> list[tuple[Path, dict]]:
    """``[(folder, meta)]`` of every kept model under ``runs/<profile>/`` (``notebooks``: only theirs), sorted."""
    out = []
    for meta_file in sorted(Path(runs_dir).glob(f"*/{MODELS}/*/{META}")) + sorted(Path(runs_dir).glob(f"*/*/{MODELS}/*/{META}")):
        meta = read_meta(meta_file.parent)
        if meta is not None and (notebooks is None or meta.get("notebook") in notebooks):
            out.append((meta_file.parent, meta))
    return out


class ExportError(Exception):
    """Why an export is refused; the message names the path."""


@dataclass(frozen=True)
class PlanRun:
    """A run of the exported plan that keeps a model (a package's ``kept_plan``): its section and that section's
    ``keep_models``, its spec, row and kept folder (the package's ``kept_dir(profile, spec)``)."""

    section: str
    setting: str
    spec: Any
    row: Row
    folder: Path


@dataclass(frozen=True)
class ExportPlan:
    """What an export copies: ``models`` ``[(kept folder, meta)]`` (each the model of a run of the plan, its stored key
    checked) and ``missing``: the rows ``keep_models`` asks a model for that have none."""

    models: tuple[tuple[Path, dict], ...]
    missing: tuple[str, ...]


def _row_text(row: Row, seed: bool = False) -> str:
    return row.folder() + (f" (seed {row.seed})" if seed and row.seed is not None else "")


def plan_export(runs: Sequence[PlanRun]) -> ExportPlan:
    """The kept models of the plan ``runs`` and the rows without one: ``best`` expects one model per row (any of its
    runs'), ``all`` one per run, ``none`` nothing (the models a notebook kept to load are exported where present).  A
    folder whose ``codeswitch.json`` names another run is refused (:class:`ExportError`, naming it)."""
    models: dict[Path, dict] = {}
    expected: dict[tuple, list[PlanRun]] = {}
    for r in runs:
        check_setting(r.setting, where=f"{r.section}.keep_models")
        if r.setting == "best":
            expected.setdefault((r.section, *row_key(r.row)), []).append(r)
        elif r.setting == "all":
            expected.setdefault((r.section, *row_key(r.row), r.row.seed, r.spec.key_hash()), []).append(r)
        folder = Path(r.folder)
        if folder in models or not folder.exists():
            continue
        meta = read_meta(folder)
        if meta is None or meta.get("key_hash") != r.spec.key_hash():
            raise ExportError(f"{folder}: its {META} is unreadable or names another run than the plan's "
                              f"({_row_text(r.row, True)}, key {r.spec.key_hash()}); remove the folder and rerun its notebook")
        models[folder] = meta
    missing = [_row_text(rs[0].row, rs[0].setting == "all") for rs in expected.values()
               if not any(Path(r.folder) in models for r in rs)]
    return ExportPlan(tuple(models.items()), tuple(dict.fromkeys(missing)))


def export_targets(items: Sequence[tuple[Path, dict]], dest: str | Path) -> list[tuple[Path, Path, dict]]:
    """``[(kept folder, target, meta)]``: ``dest/<paper>/<table>/<row>/`` (``.../seed-<seed>/`` where a row has several
    models).  Two models that would share a target are refused (:class:`ExportError` naming both), never decided by
    the order they were found in."""
    per_row: dict[str, int] = {}
    for _, m in items:
        per_row[Row(**m["row"]).folder()] = per_row.get(Row(**m["row"]).folder(), 0) + 1
    out, seen = [], {}
    for folder, meta in items:
        row = Row(**meta["row"])
        target = Path(dest) / row.folder()
        if per_row[row.folder()] > 1:
            target = target / f"seed-{row.seed}"
        if target in seen:
            raise ExportError(f"{target}: two kept models of the plan would be exported there, {seen[target]} and {folder} "
                              "(the same row and seed); export refuses to pick one")
        seen[target] = folder
        out.append((Path(folder), target, meta))
    return out


def _verified_copy(folder: Path, tmp: Path) -> list[str]:
    """Copy ``folder`` into ``tmp`` and check the copy against the manifest, every file hashed now (publication:
    no cached digest trusted); the manifest's file list.  :class:`ExportError` names the file that fails."""
    from .checkpoints import verify_manifest

    problems = verify_manifest(folder, fresh=True)
    if problems:
        raise ExportError(f"{folder}: not exported, its files do not match its manifest: {'; '.join(problems)} "
                          "(run its notebook again to rebuild it)")
    shutil.copytree(folder, tmp, dirs_exist_ok=True)
    problems = verify_manifest(tmp, fresh=True)
    if problems:
        raise ExportError(f"{folder}: the copy in {tmp} does not match the manifest: {'; '.join(problems)}")
    from .identity import MANIFEST

    return sorted(json.loads((tmp / MANIFEST).read_text(encoding="utf-8"))["files"]) + [MANIFEST]


def _written_before(target: Path) -> set[str]:
    """The files an earlier export wrote into ``target`` (its manifest's, and the manifest): the only ones --force
    may replace or remove."""
    from .identity import MANIFEST

    try:
        return set(json.loads((target / MANIFEST).read_text(encoding="utf-8"))["files"]) | {MANIFEST}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def export_models(items: Sequence[tuple[Path, dict]], dest: str | Path, *, force: bool = False,
                  notes: Callable[[str], Any] | None = None) -> list[Path]:
    """Copy each kept model ``(folder, meta)`` into its target (:func:`export_targets`), each verified against its
    manifest with every file hashed now (a swapped weight file is refused, naming it).  An existing target is refused
    (:class:`ExportError` naming it) before anything is written, unless ``force``: then the model's files replace
    theirs and the files an earlier export wrote that this model lacks are removed; no other file is deleted (each
    one left is passed to ``notes``).  Returns the targets written."""
    targets = export_targets(items, dest)
    taken = [t for _, t, _ in targets if t.exists()]
    if taken and not force:
        raise ExportError(f"{taken[0]}: already exists" + (f" (and {len(taken) - 1} other target(s))" if len(taken) > 1 else "")
                          + "; export writes only into new folders: choose another DIR, or give --force to replace the "
                          "files an export wrote there (no other file is deleted)")
    from .checkpoints import verify_manifest

    for folder, _, _ in targets:  # every model verified before anything is written: no partial publication
        problems = verify_manifest(folder, fresh=True)
        if problems:
            raise ExportError(f"{folder}: not exported, its files do not match its manifest: {'; '.join(problems)} "
                              "(run its notebook again to rebuild it); nothing was exported")
    written = []
    for folder, target, _ in targets:
        if not target.exists():
            with atomic_directory(target) as tmp:
                _verified_copy(folder, tmp)
            written.append(target)
            continue
        if not target.is_dir():
            raise ExportError(f"{target}: exists and is not a folder")
        ours_before = _written_before(target)
        import tempfile

        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.export-", dir=target.parent))
        try:
            files = _verified_copy(folder, tmp)
            for rel in files:  # each file replaced by a rename: never half-written
                dst = target / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / rel, dst)
            for rel in sorted(ours_before - set(files)):  # what the earlier export wrote and this model lacks
                (target / rel).unlink(missing_ok=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        others = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()
                        and p.relative_to(target).as_posix() not in set(files))
        if others and notes:
            notes(f"{target}: kept {len(others)} file(s) that export did not write: {', '.join(others[:5])}"
                  + (" …" if len(others) > 5 else ""))
        written.append(target)
    return written


def export(runs_dir: str | Path, dest: str | Path, notebooks: Sequence[str] | None = None, *, force: bool = False) -> list[Path]:
    """Copy every kept model under ``runs_dir`` (of ``notebooks``) with :func:`export_models`: for a library caller who
    has one plan's cache.  ``./reproduce.sh export`` exports exactly the kept models of one plan instead
    (:func:`plan_export`), those of other configurations in the same cache left out."""
    return export_models([(f, m) for f, m in kept_models(runs_dir, notebooks)], dest, force=force)


def push_to_hub(folders: Iterable[str | Path], org: str, *, api=None, private: bool = True) -> list[str]:
    """Upload each exported folder as the model repository ``<org>/<paper>-<table>-<row>[-seed-N]``; the token is
    read from the environment only (``$HF_TOKEN``; ``HfApi`` reads it).  ``api``: an ``HfApi`` (tests pass a fake
    hub).  Returns the repository ids."""
    if api is None:
        from huggingface_hub import HfApi

        if not os.environ.get("HF_TOKEN"):
            raise PermissionError("--push-to-hub: set HF_TOKEN in the environment (a write token); it is read from nowhere else")
        api = HfApi(token=os.environ["HF_TOKEN"])
    repos = []
    for folder in folders:
        folder = Path(folder)
        meta = read_meta(folder) or {}
        row = Row(**meta["row"]) if "row" in meta else None
        name = slug(f"{row.paper}-{row.table}-{row.row}" + (f"-seed-{row.seed}" if folder.name.startswith("seed-") else "")
                     if row else folder.name)
        repo = f"{org}/{name}"
        api.create_repo(repo, repo_type="model", private=private, exist_ok=True)
        api.upload_folder(repo_id=repo, repo_type="model", folder_path=str(folder),
                          commit_message=f"codeswitch: {name} (run {meta.get('key_hash')}, commit {meta.get('git_commit')})")
        repos.append(repo)
    return repos


def disk_use(runs_dir: str | Path) -> dict[str, tuple[int, int]]:
    """``{section: (kept models, bytes)}`` under ``runs/<profile>/`` (what ``--check`` prints)."""
    out: dict[str, tuple[int, int]] = {}
    for folder, meta in kept_models(runs_dir):
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        n, b = out.get(meta["section"], (0, 0))
        out[meta["section"]] = (n + 1, b + size)
    return out
