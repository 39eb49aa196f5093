"""Provenance: what every table, figure and ``INDEX.md`` records about how it was made.

One dict, built by :func:`provenance` and written by :mod:`codeswitch.core.report`:

================  ====================================================================
key               what
================  ====================================================================
``profile``       the profile's name (``smoke``, ``paper``, a YAML file's stem)
``profile_file``  the YAML it was read from
``overrides``     every override applied (``--set`` / a notebook's ``overrides``), sorted
``overrides_hash``  8 hex digits of the result-changing ones (``None`` without any)
``folder``        the folder under ``figures/`` (``<profile>`` or ``<profile>+<hash>``)
``git_commit``    the commit of the code (12 hex digits; ``unknown`` outside git)
``git_dirty``     whether tracked files differed from that commit
``inputs``        the identities of the data and models the runs read (:func:`inputs_of`):
                  ``{what: [reference or identity, ...]}``; ``None`` when not given
================  ====================================================================

A run with overrides writes into a folder of its own (:func:`codeswitch.core.profiles.figures_folder`),
so the profile's tables are never overwritten by a changed setting.

The input identities are what the run records hold: each spec's
:meth:`~codeswitch.core.experiment.RunSpec.inputs` (dataset and model references), or,
where a record stores the identities of what it read (``record["inputs"]``: content
hashes and resolved revisions, once the run cache records them), those.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .profiles import Profile, figures_folder, overrides_hash, profile_hash

__all__ = ["provenance", "inputs_of", "recording_inputs", "records_inputs", "current_inputs", "git_state", "lines", "input_kinds"]

_INPUTS: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("codeswitch_inputs", default=None)


def git_state(root: Path, *, full: bool = False) -> tuple[str, bool]:
    """``(commit, dirty)`` of the repository at ``root``: 12 hex digits (all 40 with ``full``; ``"unknown"`` outside git) and
    whether tracked files changed.

    ``$CODESWITCH_COMMIT`` (``<sha>`` or ``<sha>-dirty``), where set, wins: a copy of the tree without its own history
    (the GPU machine's, whose ``.git`` may be another commit's) names the commit it was copied from that way
    (scripts/gpu_notebooks.sh and scripts/device_bench.sh set it from the carried ``runs/paper-gpu-carry/COMMIT``)."""
    named = os.environ.get("CODESWITCH_COMMIT", "").strip()
    if named:
        sha, dirty = named.removesuffix("-dirty"), named.endswith("-dirty")
        return (sha if full else sha[:12]), dirty
    try:
        head = subprocess.run(["git", "rev-parse", "--verify", "--quiet", *([] if full else ["--short=12"]), "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=10)
        sha = head.stdout.strip() if head.returncode == 0 else ""
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return (sha or "unknown"), bool(sha and dirty)
    except (OSError, subprocess.SubprocessError):
        return "unknown", False


@functools.lru_cache(maxsize=8)
def _git_state_cached(root: str) -> tuple[str, bool]:
    return git_state(Path(root))


def inputs_of(results: Iterable[tuple[Any, Mapping | None]]) -> dict[str, list[str]]:
    """The input identities of a set of runs: ``{what: sorted distinct references}`` (``what``: ``model``, ``koglish``, ...).

    ``results`` yields ``(spec, record)`` pairs (a :class:`codeswitch.core.experiment.Results`).
    A record's own ``inputs`` (the identities it stored when it ran) win over the spec's
    references, which are written as ``ref @ identity`` (the content hash or hub commit the
    run's key holds, :meth:`RunSpec.input_identities`); a structured identity is compact JSON.
    """
    out: dict[str, set[str]] = {}
    for spec, record in results:
        held = record.get("inputs") if isinstance(record, Mapping) else None
        refs = held if isinstance(held, Mapping) and held else spec.inputs()
        # the identity each reference had when keyed: a local content hash or a hub commit (core.identity)
        idents = {} if refs is held else (getattr(spec, "input_identities", dict)() or {})
        for what, ref in refs.items():
            text = ref if isinstance(ref, str) else json.dumps(ref, sort_keys=True, separators=(",", ":"), default=str)
            ident = idents.get(what)
            if ident is not None:
                text += " @ " + (ident if isinstance(ident, str) else json.dumps(ident, sort_keys=True, separators=(",", ":"), default=str))
            out.setdefault(str(what), set()).add(text)
    return {k: sorted(v) for k, v in sorted(out.items())}


@contextlib.contextmanager
def recording_inputs(inputs: Mapping[str, Any] | None) -> Iterator[None]:
    """Within the block, tables and figures written without an explicit ``inputs`` record these."""
    token = _INPUTS.set(inputs)
    try:
        yield
    finally:
        _INPUTS.reset(token)


def current_inputs() -> Mapping[str, Any] | None:
    """The inputs :func:`recording_inputs` set for the current block (``None`` outside one)."""
    return _INPUTS.get()


def records_inputs(fn: Callable) -> Callable:
    """Decorate an experiment's ``tables(results, profile)`` / ``figures(results, profile)``: what it writes records
    the inputs of ``results`` (:func:`inputs_of`)."""

    @functools.wraps(fn)
    def wrapper(results, profile, *args, **kwargs):
        with recording_inputs(inputs_of(results)):
            return fn(results, profile, *args, **kwargs)

    return wrapper


def provenance(profile: Profile, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The provenance of an artifact written under ``profile`` (see the module docstring); ``inputs`` default: :func:`current_inputs`."""
    commit, dirty = _git_state_cached(str(profile.root))
    if inputs is None:
        inputs = current_inputs()
    return {
        "profile": profile.name,
        "profile_file": profile.source_file,
        "profile_hash": profile_hash(profile),  # the resolved profile's settings: INDEX.md marks a stale artifact
        "overrides": {k: profile.overrides[k] for k in sorted(profile.overrides)},
        "overrides_hash": overrides_hash(profile.overrides),
        "folder": figures_folder(profile.name, profile.overrides),
        "git_commit": commit,
        "git_dirty": dirty,
        "inputs": None if inputs is None else {str(k): _relative(inputs[k], profile) for k in sorted(inputs)},
    }


def _relative(value: Any, profile: Profile) -> Any:
    """An input reference with the paths of this machine made relative: a file under the repository (or under
    the output root) as ``lib/codeswitch/assets/…``, so INDEX.md and the notes read the same on every machine."""
    if isinstance(value, (list, tuple)):
        return [_relative(v, profile) for v in value]
    if not isinstance(value, str):
        return value
    for base in dict.fromkeys(b for b in (profile.output_root, profile.root) if b is not None):
        prefix = str(Path(base).resolve()).rstrip("/") + "/"
        value = value.replace(prefix, "")
    return value


def lines(prov: Mapping[str, Any]) -> list[str]:
    """The provenance as short human lines (the notes under a table, the header of ``INDEX.md``)."""
    overrides = prov.get("overrides") or {}
    out = [
        f"profile: {prov['profile']} ({prov['profile_file']})",
        f"profile settings hash: {prov.get('profile_hash') or 'not recorded'}",
        "overrides: " + (", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in overrides.items()) + f" (hash {prov['overrides_hash']})"
                         if overrides else "none"),
        f"git commit: {prov['git_commit']}" + (" (working tree dirty: uncommitted changes)" if prov.get("git_dirty") else ""),
    ]
    inputs = prov.get("inputs")
    if inputs is None:
        out.append("inputs: not recorded")
    else:
        out.append("inputs: " + ("; ".join(f"{k}: {', '.join(v) if isinstance(v, (list, tuple)) else v}" for k, v in inputs.items())
                                 or "none"))
    return out


#: data references that name the project's own stand-ins (built by a generator, or shipped under lib/codeswitch/assets/)
SYNTHETIC_DATA = ("synthetic", "shipped")
#: the input keys that name a model (every other key names data)
MODEL_KEYS = ("model",)


def _ref(text: Any) -> str:
    return str(text).split(" @ ", 1)[0].strip()


def is_synthetic_data(ref: Any) -> bool:
    """A data reference of the project's own stand-ins: ``synthetic``/``shipped`` (maybe with a suffix), a file under
    ``lib/codeswitch/assets/`` or the mini Koglish the generator builds (``…/koglish_synthetic/…``)."""
    r = _ref(ref)
    return (r in SYNTHETIC_DATA or r.startswith(tuple(f"{s}{sep}" for s in SYNTHETIC_DATA for sep in ":/-_ "))
            or "codeswitch/assets/" in r or "koglish_synthetic" in r)


def input_kinds(inputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What kind of inputs a run read, from its recorded inputs (:func:`inputs_of`); ``None`` when none are recorded.

    ``{"data": "synthetic" | "real" | "mixed" | None, "model": "tiny" | "pretrained" | "mixed" | None,
    "real_data": [refs], "synthetic_data": [refs], "tiny_models": [refs], "pretrained_models": [refs]}``: data is
    synthetic when every reference is a stand-in (:func:`is_synthetic_data`); a model is tiny when the project builds it
    (:func:`codeswitch.core.models.is_tiny`: ``tiny-*``, their masked-LM pre-trained versions, slices of a real model),
    else a real pretrained model (a hub id or a local copy)."""
    if inputs is None:
        return None
    from .models import is_tiny

    out: dict[str, list[str]] = {"real_data": [], "synthetic_data": [], "tiny_models": [], "pretrained_models": []}
    for key, refs in inputs.items():
        for ref in refs if isinstance(refs, (list, tuple)) else [refs]:
            r = _ref(ref)
            if str(key) in MODEL_KEYS:
                out["tiny_models" if is_tiny(r) else "pretrained_models"].append(r)
            else:
                out["synthetic_data" if is_synthetic_data(r) else "real_data"].append(f"{key}: {r}")
    kinds: dict[str, Any] = {k: sorted(set(v)) for k, v in out.items()}

    def kind(a: str, b: str, names: tuple[str, str]) -> str | None:
        return None if not (kinds[a] or kinds[b]) else names[0] if not kinds[b] else names[1] if not kinds[a] else "mixed"

    kinds["data"] = kind("synthetic_data", "real_data", ("synthetic", "real"))
    kinds["model"] = kind("tiny_models", "pretrained_models", ("tiny", "pretrained"))
    return kinds


def describe_inputs(kinds: Mapping[str, Any]) -> str:
    """``kinds`` (:func:`input_kinds`) in words: "real data (koglish/Koglish_STS: …); real pretrained models (…)"."""
    parts = []
    data = {"synthetic": "synthetic data (the project's stand-ins)",
            "real": f"real data ({'; '.join(kinds['real_data'])})",
            "mixed": f"real data ({'; '.join(kinds['real_data'])}) beside synthetic stand-ins ({'; '.join(kinds['synthetic_data'])})"}
    models = {"tiny": f"tiny models built here ({', '.join(kinds['tiny_models'])})",
              "pretrained": f"real pretrained models ({', '.join(kinds['pretrained_models'])})",
              "mixed": f"real pretrained models ({', '.join(kinds['pretrained_models'])}) and tiny ones built here "
                       f"({', '.join(kinds['tiny_models'])})"}
    if kinds.get("data"):
        parts.append(data[kinds["data"]])
    if kinds.get("model"):
        parts.append(models[kinds["model"]])
    return "; ".join(parts)
