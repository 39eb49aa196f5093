"""The run cache: every training or evaluation run keyed by a hash of its complete config.

A run's result is one JSON file, ``<cache root>/<hash>.json``, holding the config it
was computed from and the result.  Files are written atomically (a temporary file
in the same folder, flushed and fsync'ed, then ``os.replace``), so killing the
process at any moment leaves either the finished file or nothing.  A re-run finds
the file and skips the work: this is what makes ``reproduce.sh`` resumable.

Tables and figures are built from these records alone (see :mod:`codeswitch.core.report`).

A record is JSON with one extension: a non-finite float of a result (a NaN score) is
written as ``NaN`` / ``Infinity`` / ``-Infinity``, the tokens Python's :mod:`json` writes and
reads back as floats, so every reader gets the float back (schema 3).  Records of schema 2 and
earlier stored them as the text ``"nan"``, ``"inf"`` or ``"-inf"``; :func:`decode_record` reads
those back as floats too, so old caches stay usable.  Config hashes and checksums are computed on
strict JSON (a non-finite float hashed as that text), so they are the same in both schemas.

Records are verified on read: each stores its key, its config and a checksum of its
result; a record that is unreadable, truncated, of another config, or whose result
does not match its checksum is moved aside to ``<name>.corrupt`` (with a warning
naming it) and recomputed — never a crash, never a silent reuse.  Temporary files
and folders carry the host and process id of their writer, so those of a killed
process are removed the next time the same file or folder is written.

Example::

    cache = RunCache(cfg.runs_dir / "glue")
    results = run_grid(cache, grid, train_and_evaluate, desc="Koglish-GLUE")
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import socket
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .profiles import as_dict
from .progress import progress

SCHEMA = 3  # 2: records carry a checksum of their result; 3: non-finite floats stored as NaN/Infinity, not as text
#: how schemas <= 2 stored a non-finite float (``repr``); :func:`decode_record` reads them back as floats
_LEGACY_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_UMASK = os.umask(0o022)
os.umask(_UMASK)


# --------------------------------------------------------------------------- atomic I/O
_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"
_STALE_OTHER_HOST_S = 24 * 3600  # a temp of another machine (shared filesystem) is stale after a day


def _temp_prefix(dest: Path) -> str:
    """``.<name>.tmp-<host>-<pid>-``: hidden, and says whose it is (see :func:`remove_stale_temps`)."""
    return f".{dest.name}.tmp-{_HOST}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
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
            stale = (not _pid_alive(pid)) if host == _HOST else time.time() - p.lstat().st_mtime > _STALE_OTHER_HOST_S
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
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise naming_path(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file ordinary permissions
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
    return atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, sort_keys=True, ensure_ascii=False) + "\n")


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
        tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(dest), dir=folder))
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
            os.chmod(p, 0o666 & ~_UMASK)
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
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(dest), dir=dest.parent))
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700; the result is an ordinary folder
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


def _jsonable(obj: Any, *, nonfinite_as_text: bool = True) -> Any:
    """``obj`` as plain JSON values.  A non-finite float becomes the text ``"nan"``/``"inf"``/``"-inf"`` (strict JSON, for
    hashes and files other programs read), or stays a float with ``nonfinite_as_text=False`` (run records, schema 3)."""
    obj = as_dict(obj)
    if isinstance(obj, dict):
        return {str(k): _jsonable(v, nonfinite_as_text=nonfinite_as_text) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v, nonfinite_as_text=nonfinite_as_text) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 0) == 0:
        obj = obj.item()  # numpy / torch scalars
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return _jsonable(obj.tolist(), nonfinite_as_text=nonfinite_as_text)
    if isinstance(obj, float) and not math.isfinite(obj) and nonfinite_as_text:
        return repr(obj)  # strict JSON has no NaN/inf; keep it visible rather than crash
    return obj


def _legacy_nonfinite(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _legacy_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_legacy_nonfinite(v) for v in obj]
    return _LEGACY_NONFINITE.get(obj, obj) if isinstance(obj, str) else obj


def decode_record(record: dict) -> dict:
    """A run record as read from its file, with every non-finite float of its result a float.

    Schema 3 records already hold floats (``NaN`` in the file); a record of schema <= 2 held the text
    ``"nan"``/``"inf"``/``"-inf"`` instead, turned back into floats here (the only place a reader needs to know).
    Call it after verification: the checksum is computed on the stored form.
    """
    if isinstance(record, dict) and record.get("schema", 1) < 3 and "result" in record:
        return record | {"result": _legacy_nonfinite(record["result"])}
    return record


def read_record(path: str | Path) -> dict:
    """The run record in ``path`` (unverified; :class:`RunCache` verifies), decoded by :func:`decode_record`."""
    return decode_record(json.loads(Path(path).read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- warnings the console must see
WARNINGS_FILE_VAR = "CODESWITCH_WARNINGS_FILE"


def report_warning(message: str, category: type[Warning], *, stacklevel: int = 2) -> None:
    """``warnings.warn`` and, under ``reproduce.sh`` (``$CODESWITCH_WARNINGS_FILE`` set), one JSON line in that file.

    The warnings that change what a run computes or reads (a corrupt record moved aside, rows
    dropped, a checkpoint rebuilt) are otherwise seen only inside the executed notebook (or a
    worker's log); the pipeline prints them on the console after each notebook, sums them up at
    the end and lists them in ``INDEX.md`` (:func:`read_reported_warnings`).
    """
    warnings.warn(message, category, stacklevel=stacklevel + 1)
    target = os.environ.get(WARNINGS_FILE_VAR)
    if not target:
        return
    line = json.dumps({"kind": category.__name__, "message": message, "pid": os.getpid(),
                       "notebook": os.environ.get("CODESWITCH_NOTEBOOK")}, ensure_ascii=False) + "\n"
    try:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666 & ~_UMASK)
        try:
            os.write(fd, line.encode("utf-8"))  # one write per line: appends from several processes do not interleave
        finally:
            os.close(fd)
    except OSError:
        pass  # the warning itself was issued; only the summary misses it


def read_reported_warnings(path: str | Path) -> list[dict]:
    """The warnings :func:`report_warning` appended to ``path``, each once (a warning repeated by every run is one entry)."""
    out, seen = [], set()
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for line in lines:
        try:
            w = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill
        if isinstance(w, dict) and (w.get("kind"), w.get("message")) not in seen:
            seen.add((w.get("kind"), w.get("message")))
            out.append(w)
    return out


#: what each reported warning's kind means, for the summary
WARNING_KINDS = {
    "CorruptRecordWarning": "run record(s) moved aside and recomputed",
    "CheckpointWarning": "saved folder(s) failed their manifest and were rebuilt",
    "KoglishRowsDropped": "Koglish file(s) with rows dropped (koglish_invalid_rows: drop)",
    "StaleDigestWarning": "file(s) whose content changed under an unchanged size and time stamp (the new content is used)",
    "TrustedStatNotice": "large local file(s) identified by size and time stamp, not re-hashed (--verify re-hashes them)",
}


def summarize_warnings(entries: Sequence[Mapping]) -> list[str]:
    """One line per kind (how many, what it means), then one line per warning."""
    counts: dict[str, int] = {}
    for w in entries:
        counts[w["kind"]] = counts.get(w["kind"], 0) + 1
    lines = [f"{n} {WARNING_KINDS.get(k, k)}" for k, n in counts.items()]
    return lines + [f"{w['kind']}: {w['message']}" for w in entries]


# --------------------------------------------------------------------------- hashing
def canonical_json(config: Mapping[str, Any]) -> str:
    """The config as canonical JSON (sorted keys, no whitespace): the thing that is hashed."""
    return json.dumps(_jsonable(config), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_hash(config: Mapping[str, Any]) -> str:
    """A 16-hex-digit key for a complete run config (backbone, data source, hyperparameters, seed)."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------- the cache
class CorruptRecordWarning(UserWarning):
    """A run record failed verification; it was moved aside and the run is recomputed."""


def result_checksum(result: Any) -> str:
    """SHA-256 of a result's canonical JSON: stored in its record, checked on every read."""
    return hashlib.sha256(canonical_json({"result": result}).encode("utf-8")).hexdigest()


class RunCache:
    """A folder of finished runs, one verified JSON file per config hash.

    :func:`run_grid` checks that the folder can be written before it computes
    anything (a clear error before any training, not after it).
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, config: Mapping[str, Any]) -> Path:
        return self.root / f"{config_hash(config)}.json"

    def _problem(self, record: Any, config: Mapping[str, Any]) -> str | None:
        if not isinstance(record, dict) or record.get("result") is None:
            return "it holds no result"
        if record.get("key") != config_hash(config) or canonical_json(record.get("config") or {}) != canonical_json(config):
            return "its stored key/config is not the one expected (a record of another run)"
        if "checksum" in record:
            if record["checksum"] != result_checksum(record["result"]):
                return "its result does not match its checksum"
        elif record.get("schema", 1) >= 2:
            return "it has no checksum"
        return None  # a schema-1 record (before checksums) whose config matches is accepted

    def _quarantine(self, p: Path, problem: str) -> None:
        dest = p.with_name(p.name + ".corrupt")
        try:
            os.replace(p, dest)
            where = f"moved to {dest}"
        except OSError as exc:
            where = f"could not be moved aside ({exc})"
        report_warning(f"run record {p} is not used: {problem}; {where}; the run is recomputed", CorruptRecordWarning, stacklevel=3)

    def record(self, config: Mapping[str, Any]) -> dict | None:
        """The verified record of ``config``; ``None`` when absent or when it failed verification (then moved aside)."""
        p = self.path(config)
        try:
            raw = p.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self._quarantine(p, f"it is unreadable or truncated ({type(exc).__name__}: {exc})")
            return None
        problem = self._problem(record, config)
        if problem:
            self._quarantine(p, problem)
            return None
        return decode_record(record)

    def get(self, config: Mapping[str, Any]) -> dict | None:
        """The cached result of ``config``, or ``None`` when it has not finished (or its record failed verification)."""
        record = self.record(config)
        return None if record is None else record["result"]

    def put(self, config: Mapping[str, Any], result: Mapping[str, Any], *, seconds: float | None = None,
            stats: Mapping[str, Any] | None = None) -> Path:
        payload = _jsonable(result, nonfinite_as_text=False)
        record = {
            "schema": SCHEMA,
            "key": config_hash(config),
            "config": _jsonable(config),
            "result": payload,
            "checksum": result_checksum(payload),
            "seconds": None if seconds is None else round(seconds, 3),
        }
        if stats:  # what the run used (codeswitch.core.runstats): outside the result and its checksum
            record["stats"] = _jsonable(stats, nonfinite_as_text=False)
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=True)  # NaN/Infinity: see the module docstring
        return atomic_write_text(self.path(config), text + "\n")

    def run(self, config: Mapping[str, Any], fn: Callable[[], Mapping[str, Any]]) -> dict:
        """Return the cached result of ``config``, computing and storing it with ``fn()`` if absent.

        The computation holds the run's lock (:func:`run_lock`): a second process asking
        for the same run waits for it and then reads the record instead of computing it twice.
        """
        cached = self.get(config)
        if cached is not None:
            return cached
        with run_lock(self.path(config)):
            cached = self.get(config)  # computed by another process while we waited
            if cached is not None:
                return cached
            from .runstats import measure

            start = time.perf_counter()
            with measure() as stats:
                result = fn()
            self.put(config, result, seconds=time.perf_counter() - start, stats=stats.as_dict())
        return read_record(self.path(config))["result"]

    def locked(self, config: Mapping[str, Any]) -> bool:
        """True while another process holds this run's lock (it is computing the run)."""
        return lock_held(self.path(config))

    def records(self) -> list[dict]:
        """Every finished run in this cache whose record verifies, as ``{"key", "config", "result", ...}`` dicts, sorted by key."""
        out = []
        for p in sorted(self.root.glob("*.json")):
            try:
                record = json.loads(p.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, ValueError):
                warnings.warn(f"run record {p} is unreadable or truncated: left out", CorruptRecordWarning, stacklevel=2)
                continue
            config = record.get("config") if isinstance(record, dict) else None
            problem = "it has no config" if not isinstance(config, dict) else self._problem(record, config)
            if problem or p.name != f"{config_hash(config)}.json":
                warnings.warn(f"run record {p} is left out: {problem or 'its name is not its key'}", CorruptRecordWarning, stacklevel=2)
                continue
            out.append(decode_record(record))
        return out

    def __contains__(self, config: Mapping[str, Any]) -> bool:
        return self.record(config) is not None

    def __repr__(self) -> str:
        return f"RunCache({str(self.root)!r}, {len(list(self.root.glob('*.json')))} runs)"


def run_grid(
    cache: RunCache,
    configs: Sequence[Mapping[str, Any]],
    fn: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    *,
    desc: str = "runs",
    executor: Any = None,
) -> list[dict]:
    """Run every config of a grid through the cache; results come back in the order of ``configs``.

    Prints how many runs are cached and how many remain, and shows a progress bar
    over the runs still to do.  A run that raises stops the grid (finished runs
    stay cached, so fixing the cause and re-running continues where it stopped).

    ``executor`` (an :class:`codeswitch.pipeline.executors.ExecutorConfig`, or ``None`` =
    inline, in this process): with ``local``, ``slurm`` or ``submitit-local`` the
    pending runs go to worker processes or jobs, which write their records
    themselves; ``fn`` must then be picklable (a module-level function or a
    ``functools.partial`` of one).  A failed run does not stop the others; at the
    end :class:`codeswitch.pipeline.tasks.GridFailed` names each failed spec and its log.
    """
    configs = list(configs)
    todo = [c for c in configs if c not in cache]
    if todo:
        ensure_writable(cache.root)  # a read-only runs/ fails now, not after the first run has trained
    print(f"{desc}: {len(configs)} runs, {len(configs) - len(todo)} cached, {len(todo)} to run", flush=True)
    if executor is not None and getattr(executor, "kind", "inline") != "inline":
        executor.run_pending(cache, todo, fn, desc=desc)  # the executor module imports this one, never the reverse
        return [cache.get(c) for c in configs]
    from .utils import frozen_gc

    with frozen_gc():  # the process's objects skip the Trainer's full collection of every run
        for config in progress(todo, desc=desc, unit="run"):
            cache.run(config, lambda c=config: fn(c))
    return [cache.get(c) for c in configs]




# --------------------------------------------------------------------------- per-run lock
# A lock file next to the record, ``.<key>.json.lock``, held with flock(2) while the run
# is computed.  The kernel drops a flock when its holder dies (killed, OOM, node loss on
# filesystems whose server tracks it), so a dead process's lock is taken over by the next
# one; the file itself is removed by the holder once its record is written.  NFS (v4, and
# v3 with lockd) maps flock to POSIX byte-range locks, so this also works across nodes.
LOCK_POLL_SECONDS = 2.0


def _lock_path(record: Path) -> Path:
    return record.parent / f".{record.name}.lock"


@contextmanager
def run_lock(record: str | Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the lock of the run whose record is ``record`` for the block.

    ``wait=True``: block until the lock is free (printing once whom we wait for) and yield
    ``True``.  ``wait=False``: yield ``False`` at once when another process holds it.
    """
    import fcntl

    record = Path(record)
    lock = _lock_path(record)
    lock.parent.mkdir(parents=True, exist_ok=True)
    announced = False
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666 & ~_UMASK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                os.close(fd)
                yield False
                return
            if not announced:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
                print(f"waiting for {record.name}: computed by {holder}", flush=True)
                announced = True
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocks until the holder finishes or dies
        try:
            st = os.stat(lock)
        except FileNotFoundError:
            st = None
        if st is None or st.st_ino != os.fstat(fd).st_ino:
            os.close(fd)  # the holder removed the file after we opened it: lock the new one
            continue
        break
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        yield True
    finally:
        try:
            os.unlink(lock)  # before unlocking: a waiter that got the old inode retries on the new file
        except FileNotFoundError:
            pass
        os.close(fd)


def lock_held(record: str | Path) -> bool:
    """True when a live process holds the lock of the run whose record is ``record``."""
    import fcntl

    lock = _lock_path(Path(record))
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
