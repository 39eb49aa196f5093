"""The identity of a run's inputs: what goes into a run key besides its settings.

A run key must change whenever anything the run reads changes, and only then.  A
run spec's fields cover its settings (with precision resolved); its ``inputs()``
name the data and model references it reads, and :meth:`codeswitch.core.experiment.RunSpec.key`
adds the identity of each (:func:`input_identity`):

* **local files and folders** — by the SHA-256 of their bytes (a folder: of its
  files' relative names and digests; hidden entries such as ``.git`` or the
  temporary siblings of an interrupted write, and a checkpoint's manifest, are left
  out).  Digests are cached in ``runs/_identity/sha256.json`` by ``(path, size,
  mtime_ns)``, so a large corpus is hashed once, not at every key (see "Trusting
  the stat entry" below);
* **hub models and datasets** — by the commit the reference resolves to:
  ``HfApi().model_info(...).sha`` / ``dataset_info(...).sha`` when the hub answers,
  else the revision of the snapshot in the local Hugging Face cache; a moving
  ``main`` therefore gives new keys instead of silently reusing old results;
* a name the project builds or ships itself (``tiny-bert``, ``synthetic``,
  ``shipped``) has no identity here: the spec's own fields carry it (a tiny
  backbone's recipe hash, the synthetic data's generator hash, a shipped file's hash).

Each experiment's specs also carry a ``RESULT_VERSION`` that a change of method
code bumps (see ``docs/architecture.md``, "Trusting the run cache").

Trusting the stat entry (the trade-off)
---------------------------------------
A cached digest could be reused while the file's size and mtime are unchanged: cheap, and wrong
when a file changes but keeps both (an edit followed by ``touch -r``, ``cp -p``, ``rsync -t`` of
another file of the same size, or a weight file swapped for one of the same size with its time
stamp restored): the key would name the old content and the old result be reused with exit code 0.

So **content hashing is the default** (issue 41): every file under :data:`HASH_BELOW` bytes (64 MiB;
``$CODESWITCH_HASH_BELOW`` over it) is hashed again once per process whatever its stat entry says
(every smoke input is far below it: hashing all of them costs well under a second, measured in
``docs/reproducibility.md``).  The size-and-time shortcut is kept only for **large local copies**
(a corpus, a paper-size weight file), whose re-hashing costs seconds per GB in every process; a
trusted large file is said once per run (a :class:`TrustedStatNotice` naming it, in the console
summary and ``INDEX.md``).  For those, ``verify_hashes`` (a profile key; ``$CODESWITCH_VERIFY_HASHES``
or ``reproduce.sh --verify`` over it) decides when a digest whose stat entry matches is computed again:

* ``always`` — every input and checkpoint file is re-hashed once per process (the
  paper profiles' setting: the cost is reading each input once per notebook or worker,
  seconds per GB, small beside a GPU run and nothing beside a wrong table);
* a number of seconds N — an entry hashed more than N seconds ago is re-hashed (a
  long-lived cache is re-checked now and then; an edit within N seconds of the last
  hash that keeps size and mtime still goes unseen);
* unset / ``never`` (the smoke profile) — the stat entry of a large file is trusted (the
  documented blind spot above, for large local copies only).

A re-hash that finds other content updates the cache, so the key (and the manifest
check) follows the bytes; it is reported as a :class:`StaleDigestWarning`.
Publication (``reproduce.sh export``) re-hashes every file of a model whatever the size
(``file_sha256s(..., fresh=True)``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from .profiles import PROFILE_VERIFY_VAR, VERIFY_VAR, verify_age  # noqa: F401 - the setting is read here
from .runs import report_warning
from .atomic import atomic_write_json

__all__ = [
    "file_sha256",
    "file_sha256s",
    "tree_sha256",
    "content_id",
    "hub_revision",
    "input_identity",
    "digest_cache_path",
    "HASH_BELOW",
    "hash_below",
    "StaleDigestWarning",
    "TrustedStatNotice",
]

_CHUNK = 1 << 20
MANIFEST = "MANIFEST.sha256.json"  # a checkpoint's manifest (core.checkpoints): not part of its content
_LOCK = threading.Lock()
_MEMO: dict[str, dict[str, Any]] = {}  # cache file -> its entries (loaded once per process)


_VERIFIED: dict[str, list] = {}  # path -> the stamp re-hashed by this process (verify_hashes: always)
_TRUSTED_SAID: set[str] = set()  # large files whose trusted stat entry this process has reported
#: files below this many bytes are content-hashed once per process whatever their stat entry says (the default rule)
HASH_BELOW = 64 * 2**20
HASH_BELOW_VAR = "CODESWITCH_HASH_BELOW"  # bytes, over HASH_BELOW


def hash_below() -> int:
    """The size under which a file's digest is always computed again once per process (``$CODESWITCH_HASH_BELOW``,
    else :data:`HASH_BELOW`)."""
    value = os.environ.get(HASH_BELOW_VAR)
    if not value:
        return HASH_BELOW
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"${HASH_BELOW_VAR}: {value!r} is not a number of bytes >= 0")
    return n


class StaleDigestWarning(UserWarning):
    """A file's content changed although its size and mtime did not (the cached digest was stale)."""


class TrustedStatNotice(UserWarning):
    """A large local file is identified by its cached digest while its size and mtime are unchanged (not re-hashed)."""


def digest_cache_path() -> Path:
    """``$CODESWITCH_DIGESTS``, else ``runs/_identity/sha256.json`` below ``$CODESWITCH_OUTPUT_ROOT`` or the project root."""
    env = os.environ.get("CODESWITCH_DIGESTS")
    if env:
        return Path(env)
    from .profiles import project_root

    out = os.environ.get("CODESWITCH_OUTPUT_ROOT")
    return (Path(out) if out else project_root()) / "runs" / "_identity" / "sha256.json"


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


def file_sha256s(paths, *, fresh: bool = False) -> list[str]:
    """:func:`file_sha256` of several files, the digest cache written once (not once per file).  ``fresh``: every
    file is hashed now whatever its size and stat entry (publication: ``reproduce.sh export``)."""
    out, fresh_any = [], False
    for p in paths:
        digest, new = _digest(Path(p), force=fresh)
        out.append(digest)
        fresh_any |= new
    if fresh_any:
        _save()
    return out


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


def _digest(path: Path, *, force: bool = False) -> tuple[str, bool]:
    """(digest, whether it was computed now rather than read from the cache).  ``force``: computed now."""
    path = path.resolve()
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns]
    cache = digest_cache_path()
    with _LOCK:
        hit = _entries(cache).get(str(path))
        if not force and hit and hit[:2] == stamp and not _due(str(path), hit):
            return hit[2], False
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    digest = h.hexdigest()
    if hit and hit[:2] == stamp and hit[2] != digest:
        report_warning(f"{path}: its content changed although its size and mtime did not (edited, then its time stamp "
                       "restored?); the new content is used", StaleDigestWarning, stacklevel=3)
    with _LOCK:
        _entries(cache)[str(path)] = [*stamp, digest, round(time.time(), 3)]
        _VERIFIED[str(path)] = stamp
    return digest, True


def _due(path: str, hit: list) -> bool:
    """Whether a cache entry whose stat matches is re-hashed now (see "Trusting the stat entry"): a file under
    :func:`hash_below` always (once per process); a large one as ``verify_hashes`` says."""
    if _VERIFIED.get(path) == hit[:2]:
        return False  # re-hashed by this process already
    if hit[0] < hash_below():
        return True  # content hashing, the default
    age = verify_age()
    hashed_at = hit[3] if len(hit) > 3 else 0.0  # entries of older versions: of unknown age
    if age is not None and (age == 0.0 or time.time() - hashed_at > age):
        return True
    if path not in _TRUSTED_SAID:  # said once per file and process; the run's summary shows each message once
        _TRUSTED_SAID.add(path)
        report_warning(f"{path}: a large local copy ({_size(hit[0])}; every input under {_size(hash_below())} is re-hashed) "
                       "is identified by its cached digest while its size and time stamp are unchanged; an edit that keeps "
                       "both goes unseen; --verify re-hashes it", TrustedStatNotice, stacklevel=4)
    return False


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


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
    from .hub import cached_snapshot, hub_reachable

    if hub_reachable():
        try:
            from huggingface_hub import HfApi

            api = HfApi()
            info = api.dataset_info(ref, timeout=10) if repo_type == "dataset" else api.model_info(ref, timeout=10)
            if info.sha:
                return info.sha
        except Exception:  # noqa: BLE001 - a gated/unknown repo: fall back to the cache
            pass
    snap = cached_snapshot(ref, repo_type)
    return Path(snap).name if snap else None


def input_identity(ref: Any, *, repo_type: str = "dataset") -> str | None:
    """The identity of one input reference, for run keys.

    ``"sha256:<16 hex>"`` for a local file or folder (its content), ``"rev:<commit>"``
    for a hub repository that resolves, ``None`` for anything else (a name the project
    builds or ships, whose identity the spec's fields carry; or a hub id that neither
    the hub nor the local cache knows — it then stands for itself).
    """
    if ref is None or not isinstance(ref, (str, os.PathLike)) or not str(ref):
        return None
    path = Path(os.path.expanduser(str(ref)))
    if path.exists():
        return f"sha256:{content_id(path)}"
    if str(ref).startswith(("http://", "https://")):
        return None  # a URL names a fixed release file
    rev = hub_revision(str(ref), repo_type)
    return f"rev:{rev}" if rev else None
