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
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .atomic import UMASK, atomic_write_text, ensure_writable, jsonable
from .progress import progress

SCHEMA = 3  # 2: records carry a checksum of their result; 3: non-finite floats stored as NaN/Infinity, not as text
#: how schemas <= 2 stored a non-finite float (``repr``); :func:`decode_record` reads them back as floats
_LEGACY_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


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
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666 & ~UMASK)
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
    return json.dumps(jsonable(config), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


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
        payload = jsonable(result, nonfinite_as_text=False)
        record = {
            "schema": SCHEMA,
            "key": config_hash(config),
            "config": jsonable(config),
            "result": payload,
            "checksum": result_checksum(payload),
            "seconds": None if seconds is None else round(seconds, 3),
        }
        if stats:  # what the run used (codeswitch.core.runstats): outside the result and its checksum
            record["stats"] = jsonable(stats, nonfinite_as_text=False)
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
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666 & ~UMASK)
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
