"""A profile section as a typed, checked config: the one way every section's YAML becomes its frozen dataclass.

:meth:`codeswitch.core.profiles.Profile.section` reads a section of ``configs/<profile>.yaml`` (after ``extends:`` and
``--set`` overrides) and hands it here:

* :func:`build_dataclass` builds the section's ``Config`` strictly: an unknown key, a value of the wrong type or out of
  range (:data:`RANGES`, by field name) is a :class:`ConfigError` naming the file (or the ``--set``) and the key;
* :func:`section_prepare` is the one ``prepare`` for sections with backbones: older spellings refused with the new
  name (:data:`HF_RENAMED`), ``backbone:`` turned into ``backbones:``, each backbone built by :func:`backbones_from`;
* :func:`check_fields` checks a config built in code (``dataclasses.replace``) by the same rules.

Example::

    cfg = build_dataclass(Config, {"num_train_epochs": 2}, where="configs/smoke.yaml: section 'glue'")
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Callable, Mapping, Sequence, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A profile file, a section or an override is malformed.

    ``path``: the keys below the section (or the top level) of the value at fault,
    where known (``("sail", "num_train_epochs")``), so the error can name the ``--set``
    that gave it rather than the file.
    """

    def __init__(self, message: str, path: Sequence[str] = ()):
        super().__init__(message)
        self.path = tuple(path)


def build_dataclass(cls: type[T], raw: Mapping[str, Any], *, where: str, path: Sequence[str] = ()) -> T:
    """Instantiate a (frozen) dataclass from a mapping, strictly.

    Unknown keys raise :class:`ConfigError` naming ``where`` and the key; lists
    become tuples where the field is a tuple; nested dataclasses are built
    recursively; scalars are checked against ``int``/``float``/``bool``/``str``, then
    against :data:`RANGES` (by field name).  ``path``: the keys above ``raw`` (for
    :attr:`ConfigError.path`).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(fields)}", (*path, unknown[0]))
    kwargs = {}
    for key, value in raw.items():
        kwargs[key] = _coerce(value, hints.get(key, Any), f"{where}: key '{key}'", (*path, key))
        check_range(key, kwargs[key], where=f"{where}: key '{key}'", path=(*path, key))
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}", (*path, *getattr(exc, "path", ()))) from exc


# --------------------------------------------------------------------------- older spellings, backbones: one way for every section
#: keys several sections renamed to Hugging Face's names (``TrainingArguments``)
HF_RENAMED = {"epochs": "num_train_epochs", "eval_batch_size": "per_device_eval_batch_size"}


def backbone_named(backbones: Sequence[T], name: str, *, section: str) -> T:
    """The backbone called ``name`` (``KeyError`` listing the names there are)."""
    for b in backbones:
        if b.name == name:
            return b
    raise KeyError(f"{section}: no backbone named {name!r} (have {[b.name for b in backbones]})")


def refuse_renamed(raw: Mapping[str, Any], renamed: Mapping[str, Any], *, where: str, section: str,
                   removed: Mapping[str, str] | None = None) -> None:
    """Refuse keys spelled the older way, naming the new key.

    ``renamed`` maps an old key of the section to its new name (``{"epochs":
    "num_train_epochs"}``), or a sub-section to its own such mapping (``{"sail":
    {"epochs": "num_train_epochs"}}``); ``removed`` maps a key that is gone to why.
    """
    for old, new in renamed.items():
        if isinstance(new, Mapping):  # a sub-section's own renamed keys
            sub = raw.get(old)
            for o, n in (new.items() if isinstance(sub, Mapping) else ()):
                if o in sub:
                    raise ConfigError(f"{where}: key '{section}.{old}.{o}' is now '{section}.{old}.{n}'; rename it", (old, o))
        elif old in raw:
            raise ConfigError(f"{where}: key '{old}' is now '{new}' (Hugging Face's name); rename it", (old,))
    for old, why in (removed or {}).items():
        if old in raw:
            raise ConfigError(f"{where}: key '{old}' was removed: {why}; delete it", (old,))


def older_backbone(raw: Mapping[str, Any], *, where: str, section: str) -> dict:
    """``raw`` with the older ``backbone: <ref>`` turned into ``backbones: [{name: ref, model: ref}]``."""
    raw = dict(raw)
    if "backbone" not in raw:
        return raw
    if raw.get("backbones") is not None:
        raise ConfigError(f"{where}: give '{section}.backbones' (a list of {{name, model}}) or the older 'backbone', not both",
                          ("backbone",))
    raw.pop("backbones", None)
    ref = raw.pop("backbone")
    if not isinstance(ref, str):
        raise ConfigError(f"{where}: key '{section}.backbone': expected a model reference; got {ref!r}", ("backbone",))
    return dict(raw, backbones=[{"name": ref, "model": ref}])


def section_prepare(section: str, backbone: type | None = None, *, renamed: Mapping[str, Any] | None = None,
                    removed: Mapping[str, str] | None = None, older: bool = False,
                    item_renamed: Mapping[str, str] | None = None, **backbones_kw) -> Callable[[dict, str], dict]:
    """The ``prepare`` of a profile section (for :meth:`Profile.section`), the one for every section with backbones.

    It refuses the ``renamed`` (and ``removed``) keys, naming the new one (:func:`refuse_renamed`); with ``older``,
    turns the older ``backbone: <ref>`` into the list form (:func:`older_backbone`); and builds ``backbones`` as
    ``backbone`` instances with :func:`backbones_from` (``backbones_kw``: its options, such as ``paper``,
    ``hub_ids``, ``by_name``, ``bare_refs``; ``item_renamed``: a backbone's older field names), so that an error
    names the file, the section and the item.  A section then keeps only its ``Backbone`` dataclass and its table of
    paper defaults::

        _prepare = section_prepare(SECTION, Backbone, renamed=HF_RENAMED, paper=PAPER_BACKBONES, hub_ids=True)
    """

    def prepare(raw: dict, where: str) -> dict:
        refuse_renamed(raw, renamed or {}, where=where, section=section, removed=removed)
        if older:
            raw = older_backbone(raw, where=where, section=section)
        if backbone is not None and raw.get("backbones") is not None:
            raw = dict(raw, backbones=backbones_from(raw["backbones"], backbone, key=f"{where}: {section}.backbones",
                                                     section=section, renamed=item_renamed, **backbones_kw))
        return raw

    return prepare


def backbones_from(raw: Any, cls: type[T], *, key: str = "backbones", section: str = "", paper: Sequence[T] = (),
                   hub_ids: bool = False, bare_refs: bool = False, by_name: bool = False,
                   renamed: Mapping[str, str] | None = None) -> tuple[T, ...]:
    """The backbones of a section as a tuple of ``cls`` (a frozen ``{name, model, ...}`` dataclass): the one conversion.

    ``raw`` is the list form (items: ``cls`` instances or mappings ``{name, model, ...}``),
    or the older mapping ``{name: {model, ...}}``.  A mapping whose ``name`` is one of
    ``paper``'s labels may leave out what that paper backbone fills in; a string item is
    a paper label (``hub_ids``: or a paper backbone's model id; ``bare_refs``: or any
    model reference, named after itself — then ``raw`` may be one string too).
    ``renamed``: older field names of an item, refused naming the new one.  Errors are
    :class:`ConfigError` naming ``key`` and the item (``key[i]``; ``by_name``: ``key.NAME``).
    """
    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    schema = ", ".join(fields)
    by_label = {b.name: b for b in paper}
    by_model = {b.model: b.name for b in paper} if hub_ids else {}
    if bare_refs and isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, Mapping):  # the older form {name: {model, ...}}: the names become the `name` field
        items = [(f"{key}.{name}", str(name), spec if isinstance(spec, cls) else {"name": str(name), **_backbone_mapping(spec, f"{key}.{name}", schema, ("backbones", str(name)))})
                 for name, spec in raw.items()]
    elif isinstance(raw, (list, tuple)):
        items = []
        for i, spec in enumerate(raw):
            item = f"{key}[{i}]"
            if isinstance(spec, str):
                label = spec if spec in by_label else by_model.get(spec)
                if label is not None:
                    spec = {"name": label}
                elif bare_refs:
                    spec = {"name": spec, "model": spec}
                elif paper:
                    what = "neither a paper backbone ({}) nor its hub id" if hub_ids else "not a paper backbone ({})"
                    first = next(iter(by_label))
                    raise ConfigError(
                        f"{item}: '{spec}' is {what.format(', '.join(by_label))}; name it and give its settings "
                        f"{{{schema}}}, e.g. --set '{section}.backbones=[{{\"name\": \"{first}\", \"model\": \"{spec}\"}}]' "
                        "(the other settings are filled in for a paper label)", ("backbones", str(i)))
            if not isinstance(spec, cls):
                spec = dict(_backbone_mapping(spec, item, schema, ("backbones", str(i))))
                for old, new in (renamed or {}).items():
                    if old in spec:
                        raise ConfigError(f"{item}: key '{old}' is now '{new}' (the one backbone schema {{{schema}}}); rename it", ("backbones", str(i), old))
                if "name" not in spec:
                    raise ConfigError(f"{item}: a backbone in list form needs a 'name' (its row label); got {spec!r}", ("backbones", str(i)))
                if by_name:
                    item = f"{key}.{spec['name']}"
            items.append((item, str(i), spec))
    else:
        raise ConfigError(f"{key}: expected a list of {{{schema}}} (or a mapping by name); got {raw!r}", ("backbones",))
    if not items:
        raise ConfigError(f"{key}: at least one backbone is needed", ("backbones",))
    out = []
    for item, part, spec in items:
        if not isinstance(spec, cls):
            if spec["name"] in by_label:  # the paper's settings where the paper's backbone is meant
                spec = {**{f: getattr(by_label[spec["name"]], f) for f in fields if f != "name"}, **spec}
            spec = build_dataclass(cls, spec, where=item, path=("backbones", part))
        out.append(spec)
    names = [b.name for b in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: backbone names must be unique, got {names}", ("backbones",))
    return tuple(out)


def _backbone_mapping(spec: Any, where: str, schema: str, path: Sequence[str]) -> Mapping:
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping with {schema}; got {spec!r}", path)
    return spec


# --------------------------------------------------------------------------- range checks
def _positive(v) -> bool:
    return v > 0


def _non_negative(v) -> bool:
    return v >= 0


def _unit(v) -> bool:
    return 0 <= v <= 1


def _unit_open(v) -> bool:
    return 0 <= v < 1


def _seed(v) -> bool:
    return isinstance(v, int) and 0 <= v < 2**32


_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "seed": (_seed, "an integer in [0, 2**32) (what numpy and torch accept as a seed)"),
    "positive": (_positive, "> 0"),
    "count": (_positive, ">= 1"),  # an integer count (> 0 is >= 1 for integers)
    "non_negative": (_non_negative, ">= 0"),
    "unit": (_unit, "in [0, 1]"),
    "unit_open": (_unit_open, "in [0, 1)"),
    "neighbors": (lambda v: v >= 2, ">= 2"),
}
_FIELDS_BY_RULE = {
    "seed": ("seeds", "seed", "split_seed", "pretrain_seed", "align_seed"),
    "positive": ("num_train_epochs", "learning_rate", "temperature", "temperatures", "max_grad_norm", "mnrl_scale",
                 "tsne_perplexity", "hybrid_step"),
    "count": ("batch_size", "simcse_batch_size", "concse_batch_size", "per_device_eval_batch_size", "released_simcse_batch_size",
              "max_length", "max_length_single", "max_length_pair", "max_seq_length", "query_max_length", "passage_max_length",
              "released_simcse_max_length", "doc_stride", "max_answer_length", "depth", "fusion_depth", "search_chunk_size",
              "umap_points", "walkthrough_n", "min_np_tokens", "max_train_rows", "max_eval_rows", "max_train_samples",
              "max_eval_samples", "train_max_queries", "tune_max_queries", "eval_max_queries", "parallel_train_size", "parallel_valid_size",
              "lexicon_train_size", "max_pairs", "ablation_seeds", "cpu_threads", "glue_size", "nli_size", "stsb_size"),
    "non_negative": ("warmup_steps", "corpus_sample", "weight_decay", "margin", "margins", "triplet_weight", "triplet_weights", "align_weight",
                     "reg_weight", "word_reg_weight", "patience", "heldout_pairs", "lexicon_valid_size", "construct_n",
                     "encode_sort_window", "encode_bucket_step", "bm25_k1", "umap_min_dist", "bucket_cost", "align_layer", "std_ddof"),
    "unit": ("sentence_rate", "word_rate", "bm25_b", "softmax_threshold", "align_prob_threshold"),
    "unit_open": ("warmup_ratio",),
    "neighbors": ("umap_neighbors",),
}
#: field name -> (rule, what it must be): the one table of value domains, applied to every profile key of that name
#: (the executor section checks its own, in codeswitch.pipeline.executors)
RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {f: _RULES[rule] for rule, names in _FIELDS_BY_RULE.items() for f in names}
#: tuple-valued keys that must not be empty when given (None: the default applies)
NON_EMPTY = ("seeds", "tasks", "scenarios", "variants", "temperatures", "margins", "triplet_weights")
#: list-valued keys whose items are positions, not a grid (a split's fractions, a translator's model and languages,
#: a job's setup lines): a repeated value there is meaningful.  Every other list must hold each value once.
POSITIONAL_LISTS = ("glue_split", "sts_split", "hf", "setup")


def check_range(key: str, value: Any, *, where: str, path: Sequence[str] = ()) -> None:
    """Check ``value`` of the profile key ``key`` against :data:`RANGES` and :data:`NON_EMPTY`; raise :class:`ConfigError`.

    ``None`` passes (an optional setting left unset); in a tuple every item is checked.

    >>> check_range("warmup_ratio", 0.1, where="glue")
    >>> try:
    ...     check_range("num_train_epochs", 0, where="glue: key 'num_train_epochs'")
    ... except ConfigError as exc:
    ...     print(exc)
    glue: key 'num_train_epochs': must be > 0, got 0
    """
    if value is None:
        return
    if key in NON_EMPTY and isinstance(value, (tuple, list)) and not value:
        raise ConfigError(f"{where}: must not be empty (give at least one value, or leave the key out)", path)
    items = value if isinstance(value, (tuple, list)) else (value,)
    for v in items:  # Infinity and NaN are never a setting (json reads them from --set; YAML reads .inf/.nan)
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{where}: must be a finite number, got {v!r}", path)
    if isinstance(value, (tuple, list)) and key not in POSITIONAL_LISTS:
        scalars = [v for v in value if v is None or isinstance(v, (str, int, float))]
        twice = sorted({v for v in scalars if scalars.count(v) > 1}, key=str)
        if twice:  # a grid with a value twice: one run counted twice, n inflated, std and p-values from a copy
            what = "seed" if key.endswith("seeds") else "value"
            raise ConfigError(f"{where}: each {what} must appear once; {', '.join(map(str, twice))} appear(s) more than once "
                              f"in {list(value)}", path)
    rule = RANGES.get(key)
    if rule is None:
        return
    ok, domain = rule
    for v in items:
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if not ok(v):
            raise ConfigError(f"{where}: must be {domain}, got {v!r}", path)


def check_fields(obj: Any, prefix: str = "") -> None:
    """Check every field of a config dataclass (nested ones and backbones included) against :data:`RANGES` and :data:`NON_EMPTY`.

    Each section's ``Config.__post_init__`` calls it, so a config built in code (or by
    ``dataclasses.replace``) meets the same rules as one read from a profile, where
    :func:`build_dataclass` has already checked each key, naming the file or ``--set``.
    """
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        check_range(f.name, value, where=f"{prefix}{f.name}")
        for item in value if isinstance(value, tuple) else (value,):
            if dataclasses.is_dataclass(item) and not isinstance(item, type):
                check_fields(item, f"{prefix}{f.name}.")


def _coerce(value: Any, hint: Any, where: str, path: Sequence[str] = ()) -> Any:
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
                return _coerce(value, a, where, path)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(f"{where}: {value!r} fits none of {non_none}", path)
    if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return build_dataclass(hint, value, where=where, path=path)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            value = [value]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], where, path) for v in value)
        if args and len(args) == len(value):
            return tuple(_coerce(v, a, where, path) for v, a in zip(value, args))
        return tuple(value)
    if origin is list:
        return [_coerce(v, args[0] if args else Any, where, path) for v in value]
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}", path)
        return dict(value)
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {list(args)}", path)
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {value!r}", path)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}", path)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}", path)
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}", path)
        return value
    return value
