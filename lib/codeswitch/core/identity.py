"""The identity of a run's inputs: what goes into a run key besides its settings.

A run key must change whenever anything the run reads changes, and only then.
Settings are covered by the config itself; this module covers the rest:

* **local files and folders** — by the SHA-256 of their bytes (a folder: of its
  files' relative names and digests; hidden entries such as ``.git`` or the
  temporary siblings of an interrupted write are left out).  Digests are cached
  in ``runs/_identity/sha256.json`` by ``(path, size, mtime_ns)``, so a large
  corpus is hashed once, not at every run;
* **hub models and datasets** — by the commit hash the reference resolves to:
  ``HfApi().model_info(...).sha`` / ``dataset_info(...).sha`` when the hub answers,
  else the revision of the snapshot in the local Hugging Face cache; a moving
  ``main`` therefore gives new keys instead of silently reusing old results;
* **precision** — the dtype the run actually computes in (``"fp32"``, ``"bf16"``,
  ``"fp16"``), never ``"auto"``, so CPU fp32 and GPU bf16 results do not share keys;
* a per-experiment ``RESULT_VERSION`` (a constant in each experiment module) that a
  change of method code bumps.

Each helper is one small call, so a typed run spec can adopt it as it is::

    key["koglish"] = identity.source_identity(ref, path)   # {"ref", "sha256"} or {"ref", "revision"}
    key["precision"] = identity.precision_name(profile)
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from .runs import atomic_write_json

__all__ = [
    "file_sha256",
    "tree_sha256",
    "content_id",
    "hub_revision",
    "model_identity",
    "source_identity",
    "precision_name",
    "digest_cache_path",
]

_CHUNK = 1 << 20
MANIFEST = "MANIFEST.sha256.json"  # a checkpoint's manifest (core.checkpoints): not part of its content
_LOCK = threading.Lock()
_MEMO: dict[str, dict[str, Any]] = {}  # cache file -> its entries (loaded once per process)


def digest_cache_path() -> Path:
    """``$CODESWITCH_DIGESTS`` or ``<project root>/runs/_identity/sha256.json``."""
    env = os.environ.get("CODESWITCH_DIGESTS")
    if env:
        return Path(env)
    from .profiles import project_root

    return project_root() / "runs" / "_identity" / "sha256.json"


def _entries(cache: Path) -> dict[str, Any]:
    key = str(cache)
    if key not in _MEMO:
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
            _MEMO[key] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            _MEMO[key] = {}  # absent or unreadable: start afresh (it is only a cache)
    return _MEMO[key]


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a file's bytes, cached by ``(absolute path, size, mtime_ns)``."""
    digest, fresh = _digest(Path(path))
    if fresh:
        _save()
    return digest


def _save() -> None:
    cache = digest_cache_path()
    with _LOCK:
        entries = _entries(cache)
        for gone in [p for p in entries if not os.path.exists(p)]:
            del entries[gone]  # files deleted since (temporary folders, replaced checkpoints): forget them
        try:
            atomic_write_json(cache, entries)
        except OSError:
            pass  # a read-only project: the digest is still right, only not remembered


def _digest(path: Path) -> tuple[str, bool]:
    """(digest, whether it was computed now rather than read from the cache)."""
    path = path.resolve()
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns]
    cache = digest_cache_path()
    with _LOCK:
        hit = _entries(cache).get(str(path))
        if hit and hit[:2] == stamp:
            return hit[2], False
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    digest = h.hexdigest()
    with _LOCK:
        _entries(cache)[str(path)] = [*stamp, digest]
    return digest, True


def _files(folder: Path, *, exclude: tuple[str, ...] = ()) -> list[Path]:
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for n in sorted(names):
            if not n.startswith(".") and n not in exclude:
                out.append(Path(root) / n)
    return out


def tree_sha256(path: str | Path, *, exclude: tuple[str, ...] = ()) -> str:
    """SHA-256 of a file, or of a folder's (relative name, file digest) list; hidden entries are skipped."""
    path = Path(path)
    if path.is_file():
        return file_sha256(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder")
    h, fresh = hashlib.sha256(), False
    for f in _files(path, exclude=exclude):
        digest, new = _digest(f)
        fresh |= new
        h.update(f"{f.relative_to(path).as_posix()}\0{digest}\n".encode())
    if fresh:
        _save()  # once per folder, not once per file
    return h.hexdigest()


def content_id(path: str | Path) -> str:
    """A short content id (16 hex digits) of a local file or folder, for run keys."""
    return tree_sha256(path, exclude=(MANIFEST,))[:16]


@lru_cache(maxsize=None)
def hub_revision(ref: str, repo_type: str = "model") -> str | None:
    """The commit hash a hub reference resolves to; ``None`` when neither the hub nor the local cache knows it.

    Online: ``HfApi().model_info(ref).sha`` (``dataset_info`` for datasets).  Offline:
    the snapshot folder of the local Hugging Face cache, whose name is the commit.
    Resolved once per process.
    """
    from .hub import _cached_snapshot, hub_reachable

    if hub_reachable():
        try:
            from huggingface_hub import HfApi

            api = HfApi()
            info = api.dataset_info(ref, timeout=10) if repo_type == "dataset" else api.model_info(ref, timeout=10)
            if info.sha:
                return info.sha
        except Exception:  # noqa: BLE001 - a gated/unknown repo: fall back to the cache
            pass
    snap = _cached_snapshot(ref, repo_type)
    return Path(snap).name if snap else None


def _local(ref: str) -> Path | None:
    path = Path(os.path.expanduser(str(ref)))
    return path if path.exists() else None


def model_identity(ref: str) -> str:
    """A model reference as a run key: ``name@sha256:<16>`` for a local folder, ``id@<commit>`` for a hub id.

    (``tiny-*`` backbones are keyed by their recipe: :func:`codeswitch.core.models.backbone_id`.)
    A hub id whose revision cannot be resolved stands for itself.
    """
    local = _local(ref)
    if local is not None:
        return f"{local.resolve().name}@sha256:{content_id(local)}"
    rev = hub_revision(str(ref), "model")
    return f"{ref}@{rev}" if rev else str(ref)


def source_identity(ref: str, path: str | Path | None = None, *, repo_type: str = "dataset") -> dict[str, Any]:
    """A data reference as a run key: ``{"ref", "sha256"}`` for local data, ``{"ref", "revision"}`` for the hub.

    ``path`` is the local file or folder the reference was resolved to (default:
    ``ref`` itself when it exists).  Neither local nor resolvable: ``{"ref"}`` alone.
    """
    local = Path(path) if path is not None and Path(path).exists() else _local(ref)
    if local is not None:
        return {"ref": str(ref) if _local(ref) is None else local.resolve().name, "sha256": content_id(local)}
    rev = hub_revision(str(ref), repo_type)
    return {"ref": str(ref), "revision": rev} if rev else {"ref": str(ref)}


def precision_name(profile) -> str:
    """The precision a run computes in, resolved: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (never ``"auto"``)."""
    import torch

    return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[profile.amp_dtype()]
