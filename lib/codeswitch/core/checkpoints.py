"""Verified model folders: a manifest of every file (size, SHA-256), written last; a folder is used only when it verifies.

Every saved model folder (CalBERT checkpoints, alignment aligners, retrieval
checkpoints, tiny backbones, the synthetic Koglish) is built with
:func:`checkpoint_directory`: the folder is assembled in a hidden temporary
sibling (:func:`codeswitch.core.atomic.atomic_directory`), ``MANIFEST.sha256.json``
is written into it last, and the whole folder is renamed into place.  Before a
saved folder is reused, :func:`checkpoint_ok` checks the manifest against the
files; a missing, resized or changed file (or a missing manifest) makes it
return ``False`` with a warning naming the folder and what is wrong, and the
caller rebuilds it — a checkpoint with a deleted ``tokenizer.json`` is never
silently loaded.

Example::

    if not checkpoint_ok(folder, what="CalBERT checkpoint"):
        with checkpoint_directory(folder) as tmp:
            model.save_pretrained(tmp)
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .identity import MANIFEST, file_sha256s
from .runs import report_warning
from .atomic import atomic_directory

__all__ = ["MANIFEST", "write_manifest", "verify_manifest", "checkpoint_ok", "checkpoint_directory", "CheckpointWarning"]


class CheckpointWarning(UserWarning):
    """A saved folder failed its manifest check and is rebuilt."""


def _listing(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def write_manifest(folder: str | Path) -> Path:
    """Write ``MANIFEST.sha256.json`` (every file's relative path, size and SHA-256) into ``folder``."""
    folder = Path(folder)
    listing = _listing(folder)
    files = {p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "sha256": d} for p, d in zip(listing, file_sha256s(listing))}
    if not files:
        raise ValueError(f"{folder}: nothing was saved into the folder")
    out = folder / MANIFEST
    out.write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


def verify_manifest(folder: str | Path, *, fresh: bool = False) -> list[str]:
    """What is wrong with ``folder`` (empty list: it verifies).  Digests as :mod:`codeswitch.core.identity` says (files
    under 64 MiB hashed once per process); ``fresh``: every file hashed now (publication)."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder} does not exist"]
    try:
        files = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
    except FileNotFoundError:
        return [f"no {MANIFEST} (an unfinished or pre-manifest build)"]
    except (ValueError, KeyError, TypeError) as exc:
        return [f"{MANIFEST} is unreadable ({exc})"]
    problems, to_hash = [], []
    for rel, meta in sorted(files.items()):
        p = folder / rel
        if not p.is_file():
            problems.append(f"{rel} is missing")
        elif p.stat().st_size != meta["size"]:
            problems.append(f"{rel} has {p.stat().st_size} bytes, the manifest says {meta['size']}")
        else:
            to_hash.append((rel, p, meta["sha256"]))
    for (rel, _, want), got in zip(to_hash, file_sha256s((p for _, p, _ in to_hash), fresh=fresh)):
        if got != want:
            problems.append(f"{rel} changed (SHA-256 differs from the manifest)")
    return problems


def checkpoint_ok(folder: str | Path, *, what: str = "saved folder") -> bool:
    """``True`` when ``folder`` exists and its manifest verifies; ``False`` (with a warning naming the problem) otherwise.

    An absent folder is simply ``False``, without a warning (it was never built).
    """
    folder = Path(folder)
    if not folder.exists():
        return False
    problems = verify_manifest(folder)
    if problems:
        report_warning(f"{what} {folder} is not used and will be rebuilt: {'; '.join(problems)}", CheckpointWarning, stacklevel=2)
        return False
    return True


@contextmanager
def checkpoint_directory(dest: str | Path, *, replace: bool = True) -> Iterator[Path]:
    """:func:`~codeswitch.core.atomic.atomic_directory` that writes the manifest last, just before the rename."""
    with atomic_directory(dest, replace=replace) as tmp:
        yield tmp
        write_manifest(tmp)
