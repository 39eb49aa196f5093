"""What a notebook needs from outside the project: the :class:`Resource` each paper package's ``resources.py`` declares.

A paper package lists its models, datasets, files, packages and credentials as
``resources(profile) -> list[Resource]``; the preflight of the orchestration layer
(:mod:`codeswitch.pipeline.preflight`: ``./reproduce.sh --check`` / ``--prepare``) gathers,
checks and fetches them.  This module is the vocabulary both sides share; it imports no
layer above ``core``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

__all__ = ["Resource", "Status", "BUILTIN_REFS", "KINDS", "MODEL_FILES", "model_resource", "is_url", "is_builtin",
           "is_local", "local_path", "missing_files"]

#: references the project makes itself (nothing to fetch)
BUILTIN_REFS = ("synthetic", "shipped")
KINDS = ("model", "dataset", "file", "package", "credential")


@dataclass(frozen=True)
class Resource:
    """One thing a notebook needs.

    ``key`` is the path of the setting in the profile YAML (``("glue", "backbones",
    "mBERT-base", "model")``; list items by index); ``files`` are glob patterns that
    must exist inside the repository or folder (``a|b``: either).  ``local_name`` is
    the folder under ``DIR`` that ``--prepare`` fills, ``value`` what the setting
    becomes there (default: ``local_name``; e.g. the parent of ``Koglish_GLUE/``).
    """

    notebooks: tuple[str, ...]
    kind: str
    setting: str
    ref: str
    key: tuple = ()
    files: tuple[str, ...] = ()
    repo_type: str = "model"  # for hub ids: "model" | "dataset"
    cache_dir: str = ""  # where the code downloads a URL on first use
    local_name: str = ""
    value: str | None = None
    note: str = ""
    path_only: bool = False  # the setting is always a path (relative: from the project root), never a hub id
    probe: Callable[[], tuple[str, bool]] | None = field(default=None, compare=False)  # a custom presence check
    fetch: Callable[[Path], Path] | None = field(default=None, compare=False)  # --prepare for a probed resource: download under the folder, return the path to set
    fix: str = ""  # for a probed resource: the shell command that gets it (what --check prints)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"resource kind {self.kind!r} not in {KINDS}")


#: what a local copy of a model must hold for ``from_pretrained`` (``a|b``: either)
MODEL_FILES = ("config.json", "*.safetensors|*.bin")


def model_resource(notebooks: tuple[str, ...], key: tuple, ref: str, *, setting: str | None = None,
                   files: tuple[str, ...] = MODEL_FILES) -> Resource:
    """A model a notebook loads with ``from_pretrained``: the setting at ``key`` (shown as ``setting``, default the
    dotted key), the files a local copy must hold, and ``models/<name>`` as its ``--prepare`` folder."""
    return Resource(tuple(notebooks), "model", setting or ".".join(map(str, key)), ref, key=key, files=files,
                    local_name=f"models/{ref.split('/')[-1]}")


@dataclass(frozen=True)
class Status:
    resource: Resource
    source: str  # "project" | "local" | "hub" | "url" | "package" | "env"
    where: str
    present: bool
    missing_files: tuple[str, ...] = ()


def is_url(ref: str) -> bool:
    return ref.startswith(("http://", "https://"))


def is_builtin(ref: str) -> bool:
    return ref in BUILTIN_REFS or ref.startswith("tiny-")


def is_local(ref: str, root: Path) -> bool:
    """A path (absolute, ~, ./, or an existing relative path), not a hub id."""
    if ref.startswith(("/", "./", "../", "~")):
        return True
    p = Path(ref)
    return (root / p).exists() or p.suffix in (".csv", ".json", ".tsv", ".txt") or len(p.parts) > 2


def local_path(ref: str, root: Path) -> Path:
    p = Path(os.path.expanduser(ref))
    return p if p.is_absolute() else (root / p)


def missing_files(folder: Path, patterns: Sequence[str]) -> tuple[str, ...]:
    """The patterns (``a|b`` = either) with no match under ``folder``."""
    out = []
    for pat in patterns:
        if not any(any(folder.glob(alt)) for alt in pat.split("|")):
            out.append(pat)
    return tuple(out)
