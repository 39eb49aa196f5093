"""Where a profile's settings come from, as deltas on a base: a profile file that says ``extends: BASE`` (the base's
settings with the file's own over them, :func:`merge_delta`, :func:`read_profile_data`), the one variable a file may use
(``${CODESWITCH_STANDINS}``, :func:`expand_standins`), and ``--set KEY=VALUE`` overrides over the result
(:func:`parse_overrides`, :func:`apply_override`, :func:`blame_override`).  :func:`codeswitch.core.profiles.load_profile`
reads a profile through these, then types and validates it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from .sections import ConfigError

__all__ = ["EXTENDS", "STANDINS_VAR", "merge_delta", "read_profile_data", "standins_root", "expand_standins", "apply_override",
           "blame_override", "parse_overrides"]

# --------------------------------------------------------------------------- extends:
EXTENDS = "extends"


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


def _extended_path(ref: Any, path: Path, root: Path) -> Path:
    """What ``extends: REF`` in ``path`` names: a profile name (``configs/REF.yaml``) or a YAML path (relative: from
    the folder of the file that says it)."""
    if not isinstance(ref, str) or not ref:
        raise ConfigError(f"{path}: key '{EXTENDS}' must name a profile (e.g. paper) or a YAML file, not {ref!r}")
    if Path(ref).suffix in (".yaml", ".yml"):
        base = Path(os.path.expanduser(ref))
        return base if base.is_absolute() else (path.parent / base).resolve()
    return root / "configs" / f"{ref}.yaml"


def merge_delta(base: Any, delta: Any, *, where: str, path: tuple = ()) -> Any:
    """``base`` with ``delta`` over it: mappings merge key by key; a list of named entries (``backbones``:
    ``[{name: ..., ...}]``) is the entries the delta names, in its order, each the base's entry of that name with the
    delta's keys over it (a delta lists every entry it keeps, and in each only the keys it changes; a name the base
    lacks is a :class:`ConfigError`); any other value (a number, a string, a list of plain values such as a grid)
    replaces the base's.  Unknown keys are left to the typed sections, which refuse them naming the file and the key."""
    if isinstance(base, dict) and isinstance(delta, dict):
        out = dict(base)
        for key, value in delta.items():
            out[key] = merge_delta(base[key], value, where=where, path=(*path, key)) if key in base else value
        return out
    if _named_list(base) and _named_list(delta):
        names = [entry["name"] for entry in base]
        unknown = [entry["name"] for entry in delta if entry["name"] not in names]
        if unknown:
            dotted = ".".join(map(str, path))
            raise ConfigError(f"{where}: key '{dotted}': no entry named {unknown[0]!r} in the profile it extends "
                              f"(entries: {', '.join(map(str, names))})", path)
        by_name = {entry["name"]: entry for entry in base}
        return [merge_delta(by_name[entry["name"]], entry, where=where, path=(*path, i)) for i, entry in enumerate(delta)]
    return delta


def _named_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, dict) and "name" in x for x in value)


def read_profile_data(path: str | Path, root: str | Path, *, _seen: tuple[Path, ...] = ()) -> dict:
    """A profile file's settings, resolved: a file that says ``extends: BASE`` is BASE's settings (themselves
    resolved) with the file's own over them (:func:`merge_delta`).  The result has no ``extends`` key."""
    path, root = Path(path).resolve(), Path(root)
    if path in _seen:
        raise ConfigError(f"{path}: '{EXTENDS}' goes round in a circle: {' -> '.join(str(p) for p in (*_seen, path))}")
    data = _read_yaml(path)
    if EXTENDS not in data:
        return data
    delta = dict(data)
    base_path = _extended_path(delta.pop(EXTENDS), path, root)
    if not base_path.is_file():
        raise ConfigError(f"{path}: key '{EXTENDS}': {base_path} does not exist")
    base = read_profile_data(base_path, root, _seen=(*_seen, path))
    return merge_delta(base, delta, where=str(path))


STANDINS_VAR = "${CODESWITCH_STANDINS}"


def standins_root(root: Path) -> Path:
    """The folder of the local stand-ins (paper-ci): ``$CODESWITCH_STANDINS``, else ``<root>/runs/_standins``."""
    env = os.environ.get("CODESWITCH_STANDINS")
    return Path(env).resolve() if env else Path(root) / "runs" / "_standins"


def expand_standins(node: Any, root: Path) -> Any:
    """Replace ``${CODESWITCH_STANDINS}`` in every string value (the only variable a profile may use)."""
    if isinstance(node, dict):
        return {k: expand_standins(v, root) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_standins(v, root) for v in node]
    if isinstance(node, str) and STANDINS_VAR in node:
        return node.replace(STANDINS_VAR, str(standins_root(root)))
    return node


# --------------------------------------------------------------------------- --set overrides
def apply_override(data: dict, dotted: str, value: Any, where: str) -> None:
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


def blame_override(exc: ConfigError, path: Sequence[str], overrides: Mapping[str, Any], source: str) -> ConfigError:
    """``exc`` reworded to name the ``--set`` that gave the value at ``path`` (when an override did), else as it is."""
    parts = [str(p) for p in path]

    def same(at: list[str], key: list[str]) -> bool:  # a list index in the value's path matches a named item in the key
        return all(a == k or (a.isdigit() and not k.isdigit()) for a, k in zip(at, key))

    for key, value in overrides.items():
        kp = key.split(".")
        if parts and same(parts, kp):
            msg = str(exc)
            origin = f"--set {key}={json.dumps(value, default=str)} (over {source})"
            msg = msg.replace(source, origin, 1) if msg.startswith(source) else f"{origin}: {msg}"
            return ConfigError(msg, exc.path)
    return exc


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
