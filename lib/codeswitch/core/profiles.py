"""Typed run profiles: ``configs/<profile>.yaml`` -> frozen dataclasses.

A *profile* fixes everything a notebook needs to know about where it runs:
the seeds, the device and precision, whether the network may be used, and one
section per experiment (``koglish``, ``glue``, ``concse``, ...).  Each experiment
module owns the dataclass of its own section and asks for it with
:meth:`Profile.section`; keys are checked strictly so a typo in a YAML file or
an override fails loudly, naming the file and the key.

Two profiles ship with the project:

* ``smoke`` (default): CPU only, no network, tiny models built from config,
  data the project makes itself.  The whole pipeline runs in minutes.
* ``paper``: the papers' backbones and datasets from the Hugging Face hub, the
  papers' hyperparameters, five seeds, GPU.

Example::

    cfg = load_profile("smoke", overrides={"seeds": [1], "glue.num_train_epochs": 1})
    glue = cfg.section("glue", Config)
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import logging
import os
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from .sampling import RULES as SAMPLE_RULES
from .deltas import apply_override, blame_override, expand_standins, read_profile_data
from .sections import ConfigError, build_dataclass

T = TypeVar("T")

PROFILES = ("smoke", "paper", "paper-ci", "paper-gpu", "quick", "quick-ci")
_LOGGED_CPU_AUTO: set[str] = set()
_TOP_LEVEL = ("description", "seeds", "device", "precision", "offline", "koglish_source", "koglish_invalid_rows", "cpu_threads",
              "verify_hashes", "train_sample")
#: the sections a profile may have: one per experiment, and where runs are computed
SECTIONS = ("koglish", "glue", "concse", "contrastivemix", "alignment", "calbert", "executor")
#: sections that choose where runs are computed, not what they compute: overriding them keeps the figures folder
NOT_RESULT_CHANGING = ("executor",)
# keys of any section that change what is saved, never a result (codeswitch.core.kept): out of the figures folder's hash
NOT_RESULT_CHANGING_KEYS = ("keep_models",)
# Section keys that became top-level keys: (section, key) -> the top-level key.  An old
# profile that still has one gets an error saying where the setting lives now.
_MOVED_TO_TOP = {
    ("glue", "cpu_threads"): "cpu_threads",
    ("concse", "cpu_threads"): "cpu_threads",
    ("alignment", "cpu_threads"): "cpu_threads",
    ("calbert", "torch_threads"): "cpu_threads",
}


def project_root(start: Path | None = None) -> Path:
    """The repository root: ``$CODESWITCH_HOME`` or the first parent holding ``configs/`` and ``pyproject.toml``."""
    env = os.environ.get("CODESWITCH_HOME")
    if env:
        return Path(env).resolve()
    candidates = [Path(start or Path.cwd()).resolve(), Path(__file__).resolve()]
    for base in candidates:
        for p in (base, *base.parents):
            if (p / "configs").is_dir() and (p / "pyproject.toml").is_file():
                return p
    raise ConfigError(
        "cannot find the project root (a folder with configs/ and pyproject.toml); "
        "run from inside the repository or set CODESWITCH_HOME"
    )


@dataclass(frozen=True)
class Profile:
    """The resolved profile. Built by :func:`load_profile`; never edited in place."""

    name: str
    description: str = ""
    seeds: tuple[int, ...] = (11111, 22222, 33333, 44444, 55555)
    device: str = "auto"  # "auto" | "cpu" | "cuda"
    precision: str = "auto"  # "auto" (bf16 on GPUs that have it, else fp32) | "fp32" | "bf16" | "fp16"
    offline: bool = False  # True: never touch the network (HF_HUB_OFFLINE=1)
    koglish_source: str = "Jangyeong"  # hub namespace or a local folder in the released layout
    # a Koglish row whose `cross` is not its sentence with source_np0 -> target_np0 (first occurrence):
    # "error" (stop, naming file, row and column) | "drop" (count, warn and leave the row out)
    koglish_invalid_rows: str = "error"
    cpu_threads: int | None = None  # torch intra-op threads when running on CPU (None: torch's default)
    # when a cached digest whose size and mtime match is computed again: "always" (once per process), seconds, or
    # None (never: trust the stat entry); see codeswitch.core.identity, "Trusting the stat entry"
    verify_hashes: str | int | None = None
    # how a section's row cap on a training set cuts it (codeswitch.core.sampling): "head" (the first rows, as the
    # released code) | "random" (a sample drawn with one fixed seed, in file order: the quick profile's rule)
    train_sample: str = "head"
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)  # project root; outputs live below it
    output_root: Path | None = None  # where runs/ and figures/ go (default: root)
    source_file: str = ""  # the YAML this came from, for error messages
    overrides: Mapping[str, Any] = field(default_factory=dict)  # the dotted overrides applied (--set / a notebook's parameters)

    # ---- paths owned by the library (notebooks never build paths by hand) ----
    @property
    def runs_dir(self) -> Path:
        return (self.output_root or self.root) / "runs" / self.name

    @property
    def figures_dir(self) -> Path:
        """``figures/<profile>/``, or ``figures/<profile>+<hash>/`` for a run with overrides (:func:`figures_folder`)."""
        return (self.output_root or self.root) / "figures" / figures_folder(self.name, self.overrides)

    def section(self, name: str, cls: type[T], *, prepare: Callable[[dict, str], dict] | None = None) -> T:
        """Build the experiment dataclass ``cls`` from the section ``name`` (defaults where absent).

        ``prepare(raw, where)``, when given, turns the raw mapping into the one ``cls``
        reads first (an older spelling converted, or refused with a clear error).
        """
        raw = dict(self.sections.get(name) or {})
        _check_moved(name, raw, where=self.source_file)
        where = f"{self.source_file}: section '{name}'"
        try:
            if prepare is not None:
                raw = prepare(raw, where)
            return build_dataclass(cls, raw, where=where)
        except ConfigError as exc:
            raise blame_override(exc, (name, *exc.path), self.overrides, self.source_file) from None

    def torch_device(self):
        """The torch device this profile runs on."""
        import torch

        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        problem = None
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            problem = "no CUDA GPU is visible"
        elif self.device.startswith("cuda:") and int(self.device[5:]) >= torch.cuda.device_count():
            problem = f"only {torch.cuda.device_count()} CUDA GPU(s) are visible"
        if problem:  # named with the --set that asked for it, when one did
            raise blame_override(ConfigError(f"{self.source_file}: device '{self.device}' asked for, but {problem}", ("device",)),
                                  ("device",), self.overrides, self.source_file)
        return torch.device(self.device)

    @contextlib.contextmanager
    def torch_threads(self) -> Iterator[None]:
        """Run a block with ``cpu_threads`` torch intra-op threads when this profile runs on CPU; restore the count after.

        :func:`load_profile` already sets the count process-wide (on a CPU run);
        experiments also enter this around their training, so a grid runs with the
        profile's count whatever ran before it in the process (and on ``device: auto``
        resolving to the CPU).  Nothing happens when ``cpu_threads`` is unset or on a GPU.
        """
        from .utils import torch_threads

        with torch_threads(self.cpu_threads if self.cpu_threads and self.torch_device().type == "cpu" else None):
            yield

    def amp_dtype(self):
        """The autocast dtype for this profile, or ``None`` for full fp32 (:func:`resolve_precision`)."""
        return resolve_precision(self.precision, self.torch_device(), where=self.source_file)[0]

    def precision_name(self) -> str:
        """The resolved precision, ``"fp32" | "bf16" | "fp16"`` — never ``"auto"`` (what run keys record)."""
        dev = self.torch_device()
        if self.precision == "auto" and dev.type != "cuda" and self.name not in _LOGGED_CPU_AUTO:
            _LOGGED_CPU_AUTO.add(self.name)  # one line per profile and process
            logging.getLogger("codeswitch").warning("precision: auto resolves to fp32 on %s (bf16/fp16 autocast is for GPUs)", dev)
        return resolve_precision(self.precision, dev, where=self.source_file)[1]

    def summary(self) -> str:
        lines = [f"profile      {self.name}  ({self.source_file})"]
        if self.description:
            lines.append(f"description  {self.description}")
        lines += [
            f"seeds        {list(self.seeds)}",
            f"device       {self.device}",
            f"precision    {self.precision}",
            f"offline      {self.offline}",
            f"cpu threads  {self.cpu_threads or 'default'}",
            f"koglish      {self.koglish_source}",
            f"train caps   {self.train_sample}",
            f"runs         {self.runs_dir}",
            f"figures      {self.figures_dir}",
            f"sections     {', '.join(sorted(self.sections)) or '-'}",
        ]
        if self.overrides:
            lines.append(f"overrides    {', '.join(f'{k}={json.dumps(v)}' for k, v in sorted(self.overrides.items()))}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):  # pragma: no cover - notebook display
        p.text(self.summary())

    def __repr__(self) -> str:
        return f"Profile(name={self.name!r}, seeds={self.seeds}, device={self.device!r}, offline={self.offline})"

    # ---- pickling (executors send a profile to worker processes and Slurm jobs) ----
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["sections"] = dict(self.sections)  # a MappingProxyType does not pickle
        state["overrides"] = dict(self.overrides)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        state["sections"] = types.MappingProxyType(dict(state["sections"]))
        state["overrides"] = types.MappingProxyType(dict(state.get("overrides") or {}))
        object.__setattr__(self, "__dict__", state)
        apply_process_settings(self)  # a worker gets the threads and offline mode load_profile gives


def result_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The overrides that can change a result, sorted by key: all but those of :data:`NOT_RESULT_CHANGING` sections
    and :data:`NOT_RESULT_CHANGING_KEYS` keys."""
    return {k: overrides[k] for k in sorted(overrides or {})
            if k.split(".", 1)[0] not in NOT_RESULT_CHANGING and k.rsplit(".", 1)[-1] not in NOT_RESULT_CHANGING_KEYS}


def overrides_hash(overrides: Mapping[str, Any] | None) -> str | None:
    """8 hex digits of the SHA-256 of the sorted result-changing overrides (canonical JSON); ``None`` without any.

    >>> overrides_hash({}) is None
    True
    >>> overrides_hash({"seeds": [1], "glue.num_train_epochs": 1}) == overrides_hash({"glue.num_train_epochs": 1, "seeds": [1]})
    True
    """
    kept = result_overrides(overrides)
    if not kept:
        return None
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _result_settings(node: Any) -> Any:
    """``node`` without the keys of :data:`NOT_RESULT_CHANGING_KEYS`, at any depth."""
    if isinstance(node, Mapping):
        return {str(k): _result_settings(v) for k, v in node.items() if k not in NOT_RESULT_CHANGING_KEYS}
    if isinstance(node, (list, tuple)):
        return [_result_settings(v) for v in node]
    return node


def profile_hash(profile: "Profile") -> str:
    """12 hex digits of the SHA-256 of the resolved profile's result-changing settings (overrides applied): seeds,
    device, precision, the Koglish source and rule, and every section but :data:`NOT_RESULT_CHANGING` (and the keys of
    :data:`NOT_RESULT_CHANGING_KEYS`).  Each artifact records it (:func:`codeswitch.core.provenance.provenance`);
    ``INDEX.md`` marks an artifact whose hash is not the current profile's as stale.  A profile edited and then
    reverted hashes as before; the description, the thread count and ``verify_hashes`` do not count."""
    settings = {
        "seeds": list(profile.seeds), "device": profile.device, "precision": profile.precision,
        "koglish_source": profile.koglish_source, "koglish_invalid_rows": profile.koglish_invalid_rows,
        "sections": {k: _result_settings(v) for k, v in sorted(profile.sections.items()) if k not in NOT_RESULT_CHANGING},
    }
    if profile.train_sample != "head":  # the default leaves every hash recorded before the key existed as it was
        settings["train_sample"] = profile.train_sample
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def figures_folder(profile_name: str, overrides: Mapping[str, Any] | None = None) -> str:
    """The folder name under ``figures/`` for a profile and its overrides: the one place this is decided.

    ``<profile>`` without overrides; ``<profile>+<8-hex hash of the sorted overrides>`` with any
    result-changing one, so a run with ``--set`` never overwrites the profile's own tables.

    >>> figures_folder("smoke")
    'smoke'
    >>> figures_folder("smoke", {"seeds": [1]})
    'smoke+4d399ba2'
    """
    h = overrides_hash(overrides)
    return profile_name if h is None else f"{profile_name}+{h}"


PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def resolve_precision(precision: str, device, *, where: str = "precision"):
    """``(autocast dtype or None, name)`` for a precision setting on a device: the one place "auto" is decided.

    ``"auto"``: bf16 on a GPU that has it, fp16 (with loss scaling) on one that does
    not, fp32 on the CPU.  ``"bf16"`` on a GPU without bf16 falls back to fp16 the same
    way.  The name is what run keys record: ``"fp32"``, ``"bf16"`` or ``"fp16"``.

    >>> resolve_precision("auto", "cpu")
    (None, 'fp32')
    """
    import torch

    if precision not in PRECISIONS:
        raise ConfigError(f"{where}: unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
    dev = torch.device(device)
    if precision == "fp32" or (precision == "auto" and dev.type != "cuda"):
        return None, "fp32"
    if precision == "fp16" or (dev.type == "cuda" and not torch.cuda.is_bf16_supported()):
        return torch.float16, "fp16"
    return torch.bfloat16, "bf16"


def seeds_for(profile: Profile, section_seeds: Sequence[int] | None = None, count: int | None = None) -> tuple[int, ...]:
    """The seeds an experiment runs: its section's own list when it has one, else the profile's; the first ``count``.

    The one way every experiment resolves its seeds (``count``: e.g. ablations that
    run on fewer seeds than the main table).
    """
    seeds = tuple(int(s) for s in section_seeds) if section_seeds else tuple(profile.seeds)
    if count is not None:
        if not 1 <= count <= len(seeds):
            raise ConfigError(f"{profile.source_file}: asked for {count} seed(s), the list {list(seeds)} has {len(seeds)}")
        seeds = seeds[:count]
    return seeds


VERIFY_VAR = "CODESWITCH_VERIFY_HASHES"  # always | <seconds> | never: over the profile's verify_hashes (reproduce.sh --verify)
PROFILE_VERIFY_VAR = "CODESWITCH_PROFILE_VERIFY_HASHES"  # the last loaded profile's verify_hashes (apply_process_settings)
PROFILE_ARG_VAR = "CODESWITCH_PROFILE_ARG"  # the last loaded profile as reproduce.sh's --profile takes it (messages name it)


def verify_age(value: Any = None) -> float | None:
    """When a digest whose stat entry matches is computed again: ``0.0`` always (once per process), ``N`` seconds
    after it was last hashed, ``None`` never.  ``value``: a setting to read (default: ``$CODESWITCH_VERIFY_HASHES``,
    else the loaded profile's ``verify_hashes``)."""
    if value is None:
        value = os.environ.get(VERIFY_VAR) or os.environ.get(PROFILE_VERIFY_VAR) or None
    if value is None or str(value).strip().lower() in ("", "never", "off", "none"):
        return None
    if str(value).strip().lower() == "always":
        return 0.0
    try:
        age = float(value)
    except (TypeError, ValueError):
        age = -1.0
    if not age >= 0:
        raise ValueError(f"verify_hashes: {value!r} is not 'always', 'never' or a number of seconds >= 0")
    return age


def load_profile(
    profile: str = "smoke",
    overrides: Mapping[str, Any] | None = None,
    *,
    root: str | Path | None = None,
    output_root: str | Path | None = None,
) -> Profile:
    """Read ``configs/<profile>.yaml`` and apply ``overrides``.

    ``profile`` is a profile name or a path to a YAML file.  ``overrides`` maps
    dotted keys to values: ``{"seeds": [1], "glue.num_train_epochs": 2}``.  The output
    folder (runs/ and figures/) is ``output_root``, else ``$CODESWITCH_OUTPUT_ROOT``,
    else the project root.  An offline profile sets ``HF_HUB_OFFLINE=1`` for the
    whole process, so nothing can reach the network by accident.
    """
    root_p = Path(root).resolve() if root else project_root()
    path = Path(profile)
    if path.suffix not in (".yaml", ".yml"):
        path = root_p / "configs" / f"{profile}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (root_p / "configs").glob("*.yaml"))
        raise ConfigError(f"no profile '{profile}': {path} does not exist (known: {', '.join(known)})")
    data = read_profile_data(path, root_p)
    data = expand_standins(copy.deepcopy(data), root_p)
    source = str(path.relative_to(root_p)) if path.is_relative_to(root_p) else str(path)
    for name in data:  # the file's own keys, before any override
        if name not in _TOP_LEVEL and name not in SECTIONS:
            raise ConfigError(f"{source}: unknown key or section '{name}' (top-level keys: {', '.join(_TOP_LEVEL)}; "
                              f"sections: {', '.join(SECTIONS)})")
    overrides = dict(overrides or {})
    for key, value in overrides.items():
        where = f"--set {key}={json.dumps(value, default=str)} (over {source})"
        head = key.split(".", 1)[0]
        if head not in _TOP_LEVEL and head not in SECTIONS:
            raise ConfigError(f"{where}: unknown {'section' if '.' in key else 'top-level key'} '{head}' "
                              f"(top-level keys: {', '.join(_TOP_LEVEL)}; sections: {', '.join(SECTIONS)})")
        if head in _TOP_LEVEL and "." in key:
            raise ConfigError(f"{where}: '{head}' is a top-level key, not a section")
        apply_override(data, key, value, where=where)

    top = {k: data.pop(k) for k in list(data) if k in _TOP_LEVEL}
    sections = {}
    for name, body in data.items():
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: '{name}' is neither a known top-level key ({', '.join(_TOP_LEVEL)}) nor a section mapping")
        _check_moved(name, body, where=str(path))
        sections[name] = body
    out_env = os.environ.get("CODESWITCH_OUTPUT_ROOT")
    out = Path(output_root).resolve() if output_root else (Path(out_env).resolve() if out_env else None)
    try:
        kwargs = build_dataclass(_TopLevel, top, where=source)
    except ConfigError as exc:
        raise blame_override(exc, exc.path, overrides, source) from None
    prof = Profile(
        name=path.stem,
        description=kwargs.description,
        seeds=tuple(int(s) for s in kwargs.seeds),
        device=kwargs.device,
        precision=kwargs.precision,
        offline=kwargs.offline,
        koglish_source=kwargs.koglish_source,
        koglish_invalid_rows=kwargs.koglish_invalid_rows,
        cpu_threads=kwargs.cpu_threads,
        verify_hashes=kwargs.verify_hashes,
        train_sample=kwargs.train_sample,
        sections=types.MappingProxyType(sections),
        root=root_p,
        output_root=out,
        source_file=source,
        overrides=types.MappingProxyType(overrides),
    )
    apply_process_settings(prof)
    return prof


def apply_process_settings(profile: Profile) -> None:
    """The process-wide settings a profile implies: torch threads on CPU, offline mode."""
    if profile.cpu_threads and profile.device in ("cpu", "auto"):
        # Tiny models on a small CPU: one thread avoids contention (measured 5-30x faster per step on 2 shared cores).
        import torch

        if profile.device == "cpu" or not torch.cuda.is_available():  # the same rule as Profile.torch_threads
            torch.set_num_threads(profile.cpu_threads)
    source = Path(profile.source_file)
    os.environ[PROFILE_ARG_VAR] = profile.name if source.parent.name == "configs" and source.stem == profile.name else str(source)
    if profile.verify_hashes is None:
        os.environ.pop(PROFILE_VERIFY_VAR, None)
    else:
        os.environ[PROFILE_VERIFY_VAR] = str(profile.verify_hashes)  # read by identity in this process, its kernels and workers
    if profile.offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"


@dataclass(frozen=True)
class _TopLevel:
    description: str = ""
    seeds: tuple[int, ...] = (11111, 22222, 33333, 44444, 55555)
    device: str = "auto"
    precision: str = "auto"
    offline: bool = False
    koglish_source: str = "Jangyeong"
    koglish_invalid_rows: str = "error"
    cpu_threads: int | None = None
    verify_hashes: str | int | None = None
    train_sample: str = "head"

    def __post_init__(self):
        try:
            if self.verify_hashes is not None:
                verify_age(self.verify_hashes)
        except ValueError as exc:
            raise ConfigError(f"key 'verify_hashes': {exc}", ("verify_hashes",)) from None
        if self.koglish_invalid_rows not in ("error", "drop"):
            raise ConfigError(f"key 'koglish_invalid_rows': {self.koglish_invalid_rows!r} is not 'error' or 'drop'",
                              ("koglish_invalid_rows",))
        if self.train_sample not in SAMPLE_RULES:
            raise ConfigError(f"key 'train_sample': {self.train_sample!r} is not one of {', '.join(SAMPLE_RULES)} (how a row cap "
                              "cuts a training set: its first rows, or a sample drawn with one fixed seed)", ("train_sample",))
        if not DEVICE.fullmatch(self.device):
            raise ConfigError(f"key 'device': {self.device!r} is not 'auto', 'cpu', 'cuda' or 'cuda:N'", ("device",))


#: the device settings there are (whether a CUDA GPU is visible is checked by Profile.torch_device, before a run starts)
DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")


def _check_moved(section: str, body: Mapping[str, Any], *, where: str) -> None:
    """Reject a section key that moved to the top level, saying where it lives now."""
    for (sec, key), top in _MOVED_TO_TOP.items():
        if sec == section and key in body:
            value = "null" if body[key] is None else body[key]
            raise ConfigError(
                f"{where}: section '{section}': key '{key}' has moved to the top-level '{top}' "
                f"(one setting for every experiment); delete '{section}.{key}' and set '{top}: {value}' at the top level"
            )


def as_dict(obj: Any) -> Any:
    """A JSON-ready copy of a config dataclass (tuples become lists), for hashing and display."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: as_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): as_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_dict(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj
