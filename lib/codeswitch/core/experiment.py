"""The experiment contract: typed run specs, their results, and what every paper package exposes.

Every paper package (``codeswitch.koglish``, ``glue``, ``concse``, ``contrastivemix``,
``alignment``, ``calbert``) exposes, at package level (:data:`CONTRACT`, :data:`CONTRACT_VALUES`,
:data:`KEPT_CONTRACT`, :data:`STANDINS`, :data:`OPTIONAL`; :func:`check` verifies them all)::

    SECTION, NOTEBOOKS           its profile section (= its name) and the notebooks it serves, in order
    Config                       frozen dataclass of its profile section
    load(profile)                -> Config          the section, built and validated once (``profile.section(SECTION, Config)``)
    plan(profile)                -> list[RunSpec]   every run the experiment needs, typed
    stages(profile)              -> list[Stage]     the runs of ``plan`` grouped into stages, in dependency
                                                    order, each with its cache folder (what ``run`` and the
                                                    executors both read: ``reproduce.sh --executor ...``)
    run_one(spec, profile)       -> dict            one run, computed (module-level: an executor in
                                                    another process imports and calls it)
    run(profile)                 -> Results         every run of ``plan`` through ``core.runs.run_grid``
    tables(results, profile)     -> dict            writes the tables (figures/<profile>/), returns their paths
    figures(results, profile)    -> dict            writes the figures, returns their paths
    resources(profile)           -> list[Resource]  what it needs from outside (:mod:`codeswitch.core.resources`)
    build_standins(root)         -> {name: folder}  its stand-in data for the paper path in CI, or ``None``
    SELECTION_RULE               the run of a row that ``keep_models: best`` keeps (``None``: it keeps no models);
                                 where not ``None``: kept_row(spec), kept_dir(profile, spec), kept_plan(profile),
                                 kept_model(spec, profile) (:mod:`codeswitch.core.kept`)
    check_settings(profile)      optional: the settings that depend on what they name (alignment: ``align_layer`` against
                                 each backbone's depth), checked where that is on disk already; raises ``ConfigError``.
                                 ``./reproduce.sh`` calls it for the selected notebooks before the first one starts
                                 (:data:`OPTIONAL`)

A :class:`RunSpec` is built once from the config section and passed as it is to the
runner and the trainer.  Its cache key is :meth:`RunSpec.key`: every field (as
:func:`~codeswitch.core.profiles.as_dict` writes it) except the ones marked
:func:`not_in_key` and the optional ones left ``None``, so adding an optional field
keeps every existing key; a field holding another :class:`RunSpec` (a run this one
needs, e.g. an evaluation's trained model) enters as that run's key.  The key also
holds the identity of what the run reads: :meth:`RunSpec.inputs` names its data and
model references, and the key's ``"inputs"`` entry holds, for each, the content hash
of a local file or folder or the commit a hub reference resolves to
(:func:`codeswitch.core.identity.input_identity`; names the project builds itself,
such as ``tiny-bert`` or ``synthetic``, are identified by the spec's own fields).
``RESULT_VERSION`` (a class attribute, set per experiment) enters as
``"result_version"``: bumping it when method code changes retires every old record.

``tests/test_contract.py`` checks the contract of every package with :func:`check`.  The
packages themselves are listed once, above them all, in :mod:`codeswitch.pipeline.registry`:
``core`` imports none of them.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence

from .identity import input_identity
from .profiles import as_dict
from .runs import RunCache, config_hash, run_grid

__all__ = ["RunSpec", "Results", "Stage", "not_in_key", "run_specs", "plan_table", "CONTRACT", "CONTRACT_VALUES", "KEPT_CONTRACT", "STANDINS", "OPTIONAL",
           "check"]

_KEY = "key"


def not_in_key(default: Any = dataclasses.MISSING, **kwargs) -> Any:
    """A :class:`RunSpec` field that does not enter the cache key (display or logging only, or read from the profile)."""
    return field(default=default, metadata={_KEY: False}, **kwargs)


@dataclass(frozen=True)
class RunSpec:
    """One run of an experiment: a frozen dataclass with typed fields; subclass it per experiment."""

    #: bumped by an experiment when a change of its method code changes results (None: not versioned)
    RESULT_VERSION: ClassVar[int | None] = None
    #: the inputs() names that are models (resolved as hub models, not datasets)
    MODEL_INPUTS: ClassVar[frozenset[str]] = frozenset({"model", "translator"})

    def key(self) -> dict[str, Any]:
        """The cache key: every field in the key, ``None`` optionals left out, the result version and
        the identities of the inputs (see the module docstring)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get(_KEY, True) and value is not None:
                out[f.name] = value.key() if isinstance(value, RunSpec) else as_dict(value)  # a run it needs: that run's key
        if self.RESULT_VERSION is not None:
            out["result_version"] = self.RESULT_VERSION
        identities = self.input_identities()
        if identities:
            out["inputs"] = identities
        return out

    def input_identities(self) -> dict[str, str]:
        """``{name: identity}`` of the :meth:`inputs` that have one (local content hash, hub commit)."""
        out = {}
        for name, ref in sorted(self.inputs().items()):
            ident = input_identity(ref, repo_type="model" if name in self.MODEL_INPUTS else "dataset")
            if ident is not None:
                out[name] = ident
        return out

    def key_hash(self) -> str:
        """The 16-hex-digit hash the run cache files this run under."""
        return config_hash(self.key())

    def inputs(self) -> Mapping[str, str]:
        """The data and model references this run reads (``{"what": ref}``); the run cache content-hashes them.

        The default names nothing; an experiment whose key carries no data identity
        must override it.
        """
        return {}

    def label(self) -> str:
        """A short human-readable name for progress lines."""
        return ", ".join(f"{k}={v}" for k, v in self.key().items() if isinstance(v, (str, int)) and k not in ("experiment", "result_version"))[:120]


@dataclass(frozen=True)
class Results(Sequence):
    """The cached records of a plan, in plan order, each with its spec: ``for spec, record in results``."""

    specs: tuple[RunSpec, ...]
    records: tuple[dict, ...]

    def __post_init__(self):
        if len(self.specs) != len(self.records):
            raise ValueError(f"Results: {len(self.specs)} specs but {len(self.records)} records")

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, i):
        return (self.specs[i], self.records[i])

    def __iter__(self) -> Iterator[tuple[RunSpec, dict]]:
        return iter(zip(self.specs, self.records))


@dataclass(frozen=True)
class Stage(Sequence):
    """The runs of one stage of an experiment: specs that need nothing but the runs of the stages in ``after``.

    A sequence of its specs (``aligns, fine, figure = A.stages(profile)`` unpacks them), with
    where their records go (``cache_dir``, what :func:`run_specs` is given), the names of the
    stages of the same package whose outputs they read (``after``: a stage waits for those,
    nothing else), and, for a package that serves several notebooks, the notebook whose
    tables read them (``notebook``; ``None``: every notebook of the package).
    """

    name: str
    specs: tuple[RunSpec, ...]
    cache_dir: Path
    after: tuple[str, ...] = ()
    notebook: str | None = None
    desc: str = ""  # the progress lines' name (default: the stage's name)

    def __post_init__(self):
        object.__setattr__(self, "specs", tuple(self.specs))
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        object.__setattr__(self, "after", tuple(self.after))
        if self.name in self.after:
            raise ValueError(f"stage {self.name!r} cannot run after itself")

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, i):
        return self.specs[i]

    def __iter__(self) -> Iterator[RunSpec]:
        return iter(self.specs)

    def __add__(self, other: Sequence[RunSpec]) -> list[RunSpec]:
        """The specs of both, as a list (``pre + fine``)."""
        return [*self, *other]

    def __radd__(self, other: Sequence[RunSpec]) -> list[RunSpec]:
        return [*other, *self]

    def run(self, run_one: Callable[[RunSpec, Any], Mapping], profile) -> Results:
        """Every spec of the stage through the run cache (:func:`run_specs`)."""
        return run_specs(self.specs, run_one, profile, cache_dir=self.cache_dir, desc=self.desc or self.name)


def run_specs(specs: Sequence[RunSpec], run_one: Callable[[RunSpec, Any], Mapping], profile, *, cache_dir: str | Path,
              desc: str) -> Results:
    """Every spec through :func:`codeswitch.core.runs.run_grid` (cached by :meth:`RunSpec.key`); a finished run is never redone."""
    specs = list(specs)
    by_key = {s.key_hash(): s for s in specs}
    records = run_grid(RunCache(cache_dir), [s.key() for s in specs], lambda key: run_one(by_key[config_hash(key)], profile), desc=desc)
    return Results(tuple(specs), tuple(records))


def plan_table(specs: Sequence[RunSpec], *, show: Sequence[str] = ()) -> "pd.DataFrame":
    """A plan as a reader needs it: one row per spec, the fields of ``show`` (shown even when constant;
    a display field that is not in the key may be named), the key fields that *differ* between the specs,
    and the key hash the run cache files each run under.

    A spec's key has 20-odd fields, most of them the same for every run of a table;
    the settings they share are the section's config, shown once at the top of the notebook.
    Nested values (a run a spec needs, the input identities) are left out: their hash is in ``key``.
    """
    import pandas as pd

    keys = [s.key() for s in specs]
    flat = [{k: v for k, v in key.items() if not isinstance(v, (dict, list)) and k not in ("experiment", "result_version")}
            for key in keys]
    names = list(dict.fromkeys(k for row in flat for k in row))
    varying = [k for k in names if len({repr(row.get(k)) for row in flat}) > 1]
    rows = []
    for spec, key, row in zip(specs, keys, flat):
        out = {k: getattr(spec, k, row.get(k)) for k in show}
        out |= {k: row.get(k) for k in varying if k not in show}
        out["key"] = config_hash(key)  # = spec.key_hash()
        rows.append(out)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the contract
#: the functions every paper package exposes at package level, with their required positional arguments
CONTRACT: Mapping[str, tuple[str, ...]] = {
    "load": ("profile",),         # the section's Config, built and validated once (profile.section(SECTION, Config))
    "plan": ("profile",),
    "stages": ("profile",),
    "run_one": ("spec", "profile"),
    "run": ("profile",),
    "tables": ("results", "profile"),
    "figures": ("results", "profile"),
    "resources": ("profile",),    # what the profile needs from outside (core.resources.Resource), for --check/--prepare
}
#: the values every paper package declares at package level, with their types
CONTRACT_VALUES: Mapping[str, type | tuple[type, ...]] = {
    "SECTION": str,                          # its profile section (= the package's name)
    "NOTEBOOKS": tuple,                      # the notebooks it serves, in order ("03", "04")
    "SELECTION_RULE": (str, type(None)),     # which run of a row keep_models=best keeps (None: it keeps no models)
}
#: the kept-model functions (core.kept) a package whose SELECTION_RULE is not None exposes
KEPT_CONTRACT: Mapping[str, tuple[str, ...]] = {
    "kept_row": ("spec",),
    "kept_dir": ("profile", "spec"),
    "kept_plan": ("profile",),
    "kept_model": ("spec", "profile"),
}
#: ``build_standins(root) -> {name: folder}`` writes the package's stand-in data for the paper path in CI; ``None``: it has none
STANDINS = "build_standins"
#: the functions a package may expose (a package without one has nothing to check there), with their required arguments
OPTIONAL: Mapping[str, tuple[str, ...]] = {
    "check_settings": ("profile",),
}


def _signature_problems(name: str, fn_name: str, fn, params: tuple[str, ...]) -> list[str]:
    if not callable(fn):
        return [f"{name}.{fn_name}: missing"]
    problems = []
    got = [p.name for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty
           and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if got != list(params):
        problems.append(f"{name}.{fn_name}{inspect.signature(fn)}: expected the required arguments {list(params)}")
    if "<locals>" in getattr(fn, "__qualname__", ""):
        problems.append(f"{name}.{fn_name}: not a module-level function (an executor in another process could not import it)")
    return problems


def check(package) -> list[str]:
    """What ``package`` lacks of the contract (empty when it has everything)."""
    name = getattr(package, "__name__", repr(package))
    problems = []
    config = getattr(package, "Config", None)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config) and config.__dataclass_params__.frozen):
        problems.append(f"{name}.Config: not a frozen dataclass")
    for fn_name, params in CONTRACT.items():
        problems += _signature_problems(name, fn_name, getattr(package, fn_name, None), params)
    for value_name, kind in CONTRACT_VALUES.items():
        if not hasattr(package, value_name):
            problems.append(f"{name}.{value_name}: missing")
        elif not isinstance(getattr(package, value_name), kind):
            problems.append(f"{name}.{value_name}: not a {kind}")
    if getattr(package, "SELECTION_RULE", None) is not None:
        for fn_name, params in KEPT_CONTRACT.items():
            problems += _signature_problems(name, fn_name, getattr(package, fn_name, None), params)
    for fn_name, params in OPTIONAL.items():
        if hasattr(package, fn_name):
            problems += _signature_problems(name, fn_name, getattr(package, fn_name), params)
    if not hasattr(package, STANDINS):
        problems.append(f"{name}.{STANDINS}: missing (None where the package has no stand-in data)")
    elif getattr(package, STANDINS) is not None:
        problems += _signature_problems(name, STANDINS, getattr(package, STANDINS), ("root",))
    return problems
