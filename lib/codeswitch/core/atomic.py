"""Atomic files and folders: a writer killed at any moment leaves the finished file (or folder) or nothing.

A file is written to a temporary sibling (flushed, fsync'ed) and renamed over its name (:func:`atomic_write_bytes`,
``_text``, ``_json``); a folder is built in a temporary sibling and renamed (:func:`atomic_directory`); a group of
files that must appear together goes through one temporary folder and a completion marker, rolled forward by the next
writer if the moves were cut (:func:`atomic_files`).  Temporaries carry their writer's host and process id, so those of
a killed process are removed the next time the same file or folder is written (:func:`remove_stale_temps`,
:func:`prepare_output`).  An I/O error names the path (:func:`naming_path`).  The run cache
(:mod:`codeswitch.core.runs`) writes its records through these; so does everything else that writes a result.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .profiles import as_dict

UMASK = os.umask(0o022)
os.umask(UMASK)


HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"
STALE_OTHER_HOST_S = 24 * 3600  # a temp of another machine (shared filesystem) is stale after a day


def temp_prefix(dest: Path) -> str:
    """``.<name>.tmp-<host>-<pid>-``: hidden, and says whose it is (see :func:`remove_stale_temps`)."""
    return f".{dest.name}.tmp-{HOST}-{os.getpid()}-"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def remove_stale_temps(dest: str | Path) -> list[Path]:
    """Remove the temporary siblings of ``dest`` left by killed writers; return what was removed.

    A temp of this machine is stale when its writer process is gone; one of another
    machine when it is older than a day.  Called before every atomic write, so a
    SIGKILLed build is cleaned up the next time the same file or folder is built.
    """
    dest = Path(dest)
    removed = []
    pattern = re.compile(re.escape(f".{dest.name}.tmp-") + r"([A-Za-z0-9]+)-(\d+)-")
    try:
        siblings = list(dest.parent.glob(f".{glob_escape(dest.name)}.tmp-*"))
    except OSError:
        return removed
    for p in siblings:
        m = pattern.match(p.name)
        if not m:
            continue
        host, pid = m.group(1), int(m.group(2))
        try:
            stale = (not pid_alive(pid)) if host == HOST else time.time() - p.lstat().st_mtime > STALE_OTHER_HOST_S
        except OSError:
            continue
        if stale:
            if p.is_dir() and not p.is_symlink() and (p / _COMPLETE).is_file():
                _roll_forward(p, dest.parent)  # a file group whose writer was killed while moving it into place
            elif p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def remove_all_stale_temps(root: str | Path) -> list[Path]:
    """:func:`remove_stale_temps` for every temp below ``root`` (a run's start: builds it will never redo included)."""
    root = Path(root)
    pattern = re.compile(r"^\.(.+)\.tmp-[A-Za-z0-9]+-\d+-")
    removed = []
    for folder, dirs, names in os.walk(root):
        for n in dirs + names:
            m = pattern.match(n)
            if m:
                removed += remove_stale_temps(Path(folder) / m.group(1))
        dirs[:] = [d for d in dirs if not pattern.match(d)]  # never descend into a temp
    return removed


def prepare_output(runs_dir: str | Path) -> Path:
    """At the start of a run: fail now if ``runs_dir`` cannot be written; remove the temps of killed runs below its parent."""
    runs_dir = ensure_writable(runs_dir)
    for p in remove_all_stale_temps(runs_dir.parent):
        print(f"removed {p} (left by a killed run)", flush=True)
    return runs_dir


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def ensure_writable(folder: str | Path, *, what: str = "the run cache") -> Path:
    """Create ``folder`` and check a file can be written there; a clear error otherwise (before any training)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PermissionError(
            f"{what} {folder} is not writable ({exc.strerror or exc}): results could not be saved, so nothing is run. "
            "Fix its permissions or write the outputs elsewhere (CODESWITCH_OUTPUT_ROOT=DIR)."
        ) from exc
    return folder


def naming_path(exc: OSError, path: str | Path, doing: str = "writing") -> OSError:
    """``exc`` as an error of the same class that names ``path`` (a full disk's ``[Errno 28]`` names no file)."""
    if exc.filename is not None and str(path) in (str(exc.filename), str(getattr(exc, "filename2", None))):
        return exc
    detail = (exc.strerror or str(exc)) + (f": {exc.filename}" if exc.filename is not None else "")
    try:
        return type(exc)(exc.errno, f"{detail} ({doing} {path})", str(path)) if exc.errno else type(exc)(f"{detail} ({doing} {path})")
    except TypeError:  # a subclass with another signature
        return OSError(exc.errno, f"{detail} ({doing} {path})", str(path))


def _io_failure(exc: BaseException) -> bool:
    """An error of a library's own type that is an I/O failure underneath (safetensors' ``SafetensorError: ...
    No space left on device (os error 28)``, which is no ``OSError`` and names no file)."""
    text = str(exc)
    return type(exc).__name__ == "SafetensorError" or "No space left on device" in text or "(os error " in text


def as_naming_path(exc: BaseException, path: str | Path, doing: str = "writing") -> BaseException | None:
    """``exc`` as an ``OSError`` naming ``path`` when it is an I/O failure (:func:`naming_path`, :func:`_io_failure`);
    ``None`` for any other error (raise it as it is)."""
    if isinstance(exc, OSError):
        return naming_path(exc, path, doing)
    if isinstance(exc, Exception) and _io_failure(exc):
        import errno as _errno

        code = _errno.ENOSPC if "No space left" in str(exc) or "os error 28" in str(exc) else _errno.EIO
        return OSError(code, f"{type(exc).__name__}: {exc} ({doing} {path})", str(path))
    return None


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part.

    An ``OSError`` (a full disk, a read-only folder) names ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise naming_path(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~UMASK)  # mkstemp makes 0600; give the file ordinary permissions
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise naming_path(exc, path) from exc
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(jsonable(obj), indent=2, sort_keys=True, ensure_ascii=False) + "\n")


_COMPLETE = ".complete"  # in a file group's temporary folder: every file is written, the moves may start


@contextmanager
def atomic_files(folder: str | Path, name: str) -> Iterator[Path]:
    """Write the files of one artifact (``<name>.md``, ``.tex``, ``.csv``, ``.provenance.json`` …) into ``folder`` as one unit.

    The block writes them into a temporary folder (``.<name>.tmp-<host>-<pid>-…``, yielded);
    when it ends, a ``.complete`` marker is written there and each file is moved into
    ``folder``.  A writer killed before the marker leaves only its temporary folder (removed
    by the next writer; the old files stay, all of them); one killed during the moves leaves
    a complete temporary folder, which the next writer of the same artifact, or
    :func:`remove_all_stale_temps` at the next run's start, moves into place first (rolled
    forward): a new ``.md`` is never left for good beside an old ``.csv``.
    """
    folder = Path(folder)
    dest = folder / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(dest)  # (rolls a killed writer's complete group forward)
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(dest), dir=folder))
    except OSError as exc:
        raise naming_path(exc, dest) from exc
    try:
        yield tmp
        atomic_write_bytes(tmp / _COMPLETE, b"")  # (each file was written with atomic_write_*: fsync'ed)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        named = None if isinstance(exc, OSError) and exc.filename else as_naming_path(exc, dest)  # (savefig's ENOSPC)
        if named is not None:
            raise named from exc
        raise
    _roll_forward(tmp, folder)


def _roll_forward(tmp: Path, folder: Path) -> None:
    """Move every file of a complete group folder into ``folder``, then remove it."""
    for p in sorted(tmp.iterdir()):
        if p.name != _COMPLETE:
            os.chmod(p, 0o666 & ~UMASK)
            os.replace(p, folder / p.name)
    shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def atomic_directory(dest: str | Path, *, replace: bool = True) -> Iterator[Path]:
    """Build a folder in a temporary sibling of ``dest``; rename it to ``dest`` when the block ends without error.

    A failure (or an interrupt) inside the block removes the half-built folder, so
    ``dest`` is either absent, the old one, or complete.  ``replace=True``: an
    existing ``dest`` is replaced.  ``replace=False`` (content-addressed builds, where
    two processes may build the same folder at once): if ``dest`` appeared meanwhile,
    it is kept and the new copy dropped — theirs is identical.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(dest)  # a killed earlier build of the same folder
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(dest), dir=dest.parent))
    try:
        os.chmod(tmp, 0o777 & ~UMASK)  # mkdtemp makes 0700; the result is an ordinary folder
        yield tmp
        if replace and dest.exists():
            shutil.rmtree(dest)
        try:
            os.replace(tmp, dest)
        except OSError:
            if replace or not dest.exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        named = as_naming_path(exc, dest, "building")  # (a full disk while a model is saved names no file)
        if named is not None:
            raise named from exc
        raise


def jsonable(obj: Any, *, nonfinite_as_text: bool = True) -> Any:
    """``obj`` as plain JSON values.  A non-finite float becomes the text ``"nan"``/``"inf"``/``"-inf"`` (strict JSON, for
    hashes and files other programs read), or stays a float with ``nonfinite_as_text=False`` (run records, schema 3)."""
    obj = as_dict(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v, nonfinite_as_text=nonfinite_as_text) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, nonfinite_as_text=nonfinite_as_text) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 0) == 0:
        obj = obj.item()  # numpy / torch scalars
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return jsonable(obj.tolist(), nonfinite_as_text=nonfinite_as_text)
    if isinstance(obj, float) and not math.isfinite(obj) and nonfinite_as_text:
        return repr(obj)  # strict JSON has no NaN/inf; keep it visible rather than crash
    return obj
