"""Resolving model and dataset references: a local path, a Hugging Face hub id, or a ``tiny-*`` name.

Every model and dataset reference in a profile goes through :func:`resolve`.
A local folder is used as is.  A hub id is used as is when the hub answers, or
from the local Hugging Face cache when it was downloaded before.  When neither
works the run stops within seconds with :class:`MissingResourceError`, which
names the resource and says how to point at a local copy — never a hang, never a
bare traceback from deep inside ``from_pretrained``.
"""

from __future__ import annotations

import os
import shlex
import socket
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlparse


class MissingResourceError(RuntimeError):
    """A model or dataset that can be neither found locally nor downloaded."""


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")


@lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Can a TCP connection to the hub be opened within ``timeout`` seconds? (Checked once per process.)"""
    if offline():
        return False
    url = urlparse(hub_endpoint())
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def cached_snapshot(repo_id: str, repo_type: str) -> str | None:
    """The local Hugging Face cache's snapshot folder of a repository, or None (``local_files_only``: no network)."""
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(repo_id, repo_type=repo_type, local_files_only=True)
    except Exception:  # noqa: BLE001 - any failure means "not in the local cache"
        return None


def resolve(ref: str, *, kind: str = "model", what: str = "", local_dir: str | None = None, set_to: str | None = None) -> str:
    """Turn a reference into something ``from_pretrained`` / ``load_dataset`` can open without hanging.

    ``kind`` is ``"model"`` or ``"dataset"``; ``what`` names the setting the
    reference came from (e.g. ``"glue.backbones"``) for the error message;
    ``local_dir`` / ``set_to``: where the message suggests downloading the copy and
    what it suggests setting ``what`` to (default: the same folder).
    """
    if not ref:
        raise MissingResourceError(f"empty {kind} reference{f' in {what}' if what else ''}")
    path = Path(os.path.expanduser(ref))
    if path.exists():
        return str(path.resolve())
    if ref.startswith(("/", "./", "../", "~")) or path.suffix in (".csv", ".json", ".tsv", ".txt"):
        raise MissingResourceError(f"{kind} '{ref}'{f' ({what})' if what else ''}: no such file or folder")
    repo_type = "dataset" if kind == "dataset" else "model"
    if hub_reachable():
        return ref
    cached = cached_snapshot(ref, repo_type)
    if cached:
        return cached if kind == "model" else ref
    reason = "offline mode is on (HF_HUB_OFFLINE=1)" if offline() else f"the hub ({hub_endpoint()}) cannot be reached"
    raise MissingResourceError(missing_message(ref, kind=kind, reason=reason, what=what, local_dir=local_dir, set_to=set_to))


def missing_message(ref: str, *, kind: str, reason: str, what: str = "", local_dir: str | None = None, set_to: str | None = None,
                    profile: str | None = None) -> str:
    """How to fetch ``ref`` elsewhere (the ``hf`` CLI of the pinned huggingface_hub) and point ``what`` at the copy.

    ``profile``: the profile the commands name (default: the profile this process loaded last; ``<profile>`` only when
    none was loaded)."""
    from .profiles import PROFILE_ARG_VAR

    profile = profile or os.environ.get(PROFILE_ARG_VAR)
    profile = shlex.quote(profile) if profile else "<profile>"
    local_dir = local_dir or f"/some/folder/{ref.split('/')[-1]}"
    set_to = set_to or local_dir
    key = what or "<section.key>"
    setting = f" Set {what} to {set_to}" if what else f" Point the profile's setting at {set_to}"
    return (
        f"{kind} '{ref}' is needed but {reason} and it is not in the local Hugging Face cache.\n"
        f"  Fix: on a machine with network, run\n"
        f"      hf download {'--repo-type dataset ' if kind == 'dataset' else ''}{ref} --local-dir {local_dir}\n"
        f"  and copy that folder here.{setting} (a local path is accepted anywhere a hub id is), e.g.\n"
        f"      ./reproduce.sh --profile {profile} --set '{key}={set_to}'\n"
        f"  or, in a notebook's parameters cell: overrides = {{\"{key}\": \"{set_to}\"}}\n"
        f"  (./reproduce.sh --profile {profile} --check lists every missing resource at once; --prepare DIR fetches them all)."
    )


def is_dataset_snapshot(folder: str | Path) -> bool:
    """Does ``folder`` look like a downloaded hub dataset repository (data files ``datasets`` can load)?"""
    folder = Path(folder)
    return folder.is_dir() and any(
        any(folder.glob(p)) for p in ("*.parquet", "*/*.parquet", "*/*/*.parquet", "*.arrow", "*/*.arrow", "dataset_infos.json")
    )
