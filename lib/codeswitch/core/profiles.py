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
import json
import logging
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

import yaml

T = TypeVar("T")

PROFILES = ("smoke", "paper", "paper-ci")
_LOGGED_CPU_AUTO: set[str] = set()
_TOP_LEVEL = ("description", "seeds", "device", "precision", "offline", "koglish_source", "koglish_invalid_rows", "cpu_threads")
# Section keys that became top-level keys: (section, key) -> the top-level key.  An old
# profile that still has one gets an error saying where the setting lives now.
_MOVED_TO_TOP = {
    ("glue", "cpu_threads"): "cpu_threads",
    ("concse", "cpu_threads"): "cpu_threads",
    ("alignment", "cpu_threads"): "cpu_threads",
    ("calbert", "torch_threads"): "cpu_threads",
}


class ConfigError(ValueError):
    """A profile file, a section or an override is malformed."""


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
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)  # project root; outputs live below it
    output_root: Path | None = None  # where runs/ and figures/ go (default: root)
    source_file: str = ""  # the YAML this came from, for error messages

    # ---- paths owned by the library (notebooks never build paths by hand) ----
    @property
    def runs_dir(self) -> Path:
        return (self.output_root or self.root) / "runs" / self.name

    @property
    def figures_dir(self) -> Path:
        return (self.output_root or self.root) / "figures" / self.name

    def section(self, name: str, cls: type[T], *, prepare: Callable[[dict, str], dict] | None = None) -> T:
        """Build the experiment dataclass ``cls`` from the section ``name`` (defaults where absent).

        ``prepare(raw, where)``, when given, turns the raw mapping into the one ``cls``
        reads first (an older spelling converted, or refused with a clear error).
        """
        raw = dict(self.sections.get(name) or {})
        _check_moved(name, raw, where=self.source_file)
        if prepare is not None:
            raw = prepare(raw, f"{self.source_file}: section '{name}'")
        return build_dataclass(cls, raw, where=f"{self.source_file}: section '{name}'")

    def torch_device(self):
        """The torch device this profile runs on."""
        import torch

        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"{self.source_file}: device '{self.device}' asked for, but no CUDA GPU is visible")
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
            f"runs         {self.runs_dir}",
            f"figures      {self.figures_dir}",
            f"sections     {', '.join(sorted(self.sections)) or '-'}",
        ]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):  # pragma: no cover - notebook display
        p.text(self.summary())

    def __repr__(self) -> str:
        return f"Profile(name={self.name!r}, seeds={self.seeds}, device={self.device!r}, offline={self.offline})"

    # ---- pickling (executors send a profile to worker processes and Slurm jobs) ----
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["sections"] = dict(self.sections)  # a MappingProxyType does not pickle
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        state["sections"] = types.MappingProxyType(dict(state["sections"]))
        object.__setattr__(self, "__dict__", state)
        apply_process_settings(self)  # a worker gets the threads and offline mode load_profile gives


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
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    data = _expand_standins(copy.deepcopy(data), root_p)
    for key, value in (overrides or {}).items():
        _apply_override(data, key, value, where=f"{path} (override '{key}')")

    top = {k: data.pop(k) for k in list(data) if k in _TOP_LEVEL}
    sections = {}
    for name, body in data.items():
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: '{name}' is neither a known top-level key ({', '.join(_TOP_LEVEL)}) nor a section mapping")
        _check_moved(name, body, where=str(path))
        sections[name] = body
    out_env = os.environ.get("CODESWITCH_OUTPUT_ROOT")
    out = Path(output_root).resolve() if output_root else (Path(out_env).resolve() if out_env else None)
    kwargs = build_dataclass(_TopLevel, top, where=str(path))
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
        sections=types.MappingProxyType(sections),
        root=root_p,
        output_root=out,
        source_file=str(path.relative_to(root_p)) if path.is_relative_to(root_p) else str(path),
    )
    apply_process_settings(prof)
    return prof


def apply_process_settings(prof: Profile) -> None:
    """The process-wide settings a profile implies: torch threads on CPU, offline mode."""
    if prof.cpu_threads and prof.device in ("cpu", "auto"):
        # Tiny models on a small CPU: one thread avoids contention (measured 5-30x faster per step on 2 shared cores).
        import torch

        if prof.device == "cpu" or not torch.cuda.is_available():  # the same rule as Profile.torch_threads
            torch.set_num_threads(prof.cpu_threads)
    if prof.offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"


STANDINS_VAR = "${CODESWITCH_STANDINS}"


def standins_root(root: Path) -> Path:
    """The folder of the local stand-ins (paper-ci): ``$CODESWITCH_STANDINS``, else ``<root>/runs/_standins``."""
    env = os.environ.get("CODESWITCH_STANDINS")
    return Path(env).resolve() if env else Path(root) / "runs" / "_standins"


def _expand_standins(node: Any, root: Path) -> Any:
    """Replace ``${CODESWITCH_STANDINS}`` in every string value (the only variable a profile may use)."""
    if isinstance(node, dict):
        return {k: _expand_standins(v, root) for k, v in node.items()}
    if isinstance(node, list):
        return [_expand_standins(v, root) for v in node]
    if isinstance(node, str) and STANDINS_VAR in node:
        return node.replace(STANDINS_VAR, str(standins_root(root)))
    return node


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

    def __post_init__(self):
        if self.koglish_invalid_rows not in ("error", "drop"):
            raise ValueError(f"key 'koglish_invalid_rows': {self.koglish_invalid_rows!r} is not 'error' or 'drop'")


def _check_moved(section: str, body: Mapping[str, Any], *, where: str) -> None:
    """Reject a section key that moved to the top level, saying where it lives now."""
    for (sec, key), top in _MOVED_TO_TOP.items():
        if sec == section and key in body:
            value = "null" if body[key] is None else body[key]
            raise ConfigError(
                f"{where}: section '{section}': key '{key}' has moved to the top-level '{top}' "
                f"(one setting for every experiment); delete '{section}.{key}' and set '{top}: {value}' at the top level"
            )


def _apply_override(data: dict, dotted: str, value: Any, where: str) -> None:
    """Set ``dotted`` in ``data``; in a list of ``{name, ...}`` items (backbones) a part selects the item by name."""
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        if isinstance(node, list):  # a list item by index (concse.backbones.0.model) or by its name (glue.backbones.mBERT-base.model)
            node = node[_list_item(node, part, where)]
            continue
        if part not in node:
            node[part] = {}
        if not isinstance(node[part], (dict, list)):
            raise ConfigError(f"{where}: '{part}' is not a section")
        node = node[part]
    if isinstance(node, list):
        node[_list_item(node, parts[-1], where)] = value
    else:
        node[parts[-1]] = value


def _list_item(items: list, part: str, where: str) -> int:
    """The position of ``part`` in a list: an index, or the name of a ``{name: ...}`` item."""
    if part.isdigit():
        if int(part) >= len(items):
            raise ConfigError(f"{where}: '{part}' is not an index of a list of {len(items)} item(s)")
        return int(part)
    named = [i for i, item in enumerate(items) if isinstance(item, dict) and item.get("name") == part]
    if len(named) != 1:
        names = [item.get("name") for item in items if isinstance(item, dict)]
        raise ConfigError(f"{where}: no item named '{part}' in the list (names: {names}; or give an index)")
    return named[0]


def build_dataclass(cls: type[T], raw: Mapping[str, Any], *, where: str) -> T:
    """Instantiate a (frozen) dataclass from a mapping, strictly.

    Unknown keys raise :class:`ConfigError` naming ``where`` and the key; lists
    become tuples where the field is a tuple; nested dataclasses are built
    recursively; scalars are checked against ``int``/``float``/``bool``/``str``.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(fields)}")
    kwargs = {}
    for key, value in raw.items():
        kwargs[key] = _coerce(value, hints.get(key, Any), f"{where}: key '{key}'")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or value is None and (type(None) in args):
        return value
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if value is None:
            return None
        errors = []
        for a in non_none:
            try:
                return _coerce(value, a, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(f"{where}: {value!r} fits none of {non_none}")
    if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return build_dataclass(hint, value, where=where)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            value = [value]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], where) for v in value)
        if args and len(args) == len(value):
            return tuple(_coerce(v, a, where) for v, a in zip(value, args))
        return tuple(value)
    if origin is list:
        return [_coerce(v, args[0] if args else Any, where) for v in value]
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


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


def parse_overrides(items: Sequence[str]) -> dict:
    """``["glue.num_train_epochs=2", "seeds=[1]"]`` → ``{"glue.num_train_epochs": 2, "seeds": [1]}`` (values read as JSON, else kept as text)."""
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--set expects KEY=VALUE, got '{item}'")
        key, value = item.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out
