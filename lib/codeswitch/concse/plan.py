"""The plan of notebooks 03 and 04: one :class:`~codeswitch.concse.config.ConCSERun` per table cell, the labels of
the tables, and the two notebooks' stages.

Table 3 (notebook 03) and the ablations (Tables 4–7 and two extra comparisons, notebook 04); ``studies`` picks
which.  A run is keyed by its spec (:meth:`~codeswitch.core.experiment.RunSpec.key`), so a run that two tables need
is trained once: ConCSE v6 of Table 4 *is* the τ = 0.05 point of Table 5, the λ = 1.2 point of Table 6, the α = 1
point of Table 7 and Table 3's ConCSE-mBERT row; λ = "N/A" (no triplet term) *is* v3.

The section's settings reach a run here only: :func:`spec` copies them from the
:class:`~codeswitch.concse.config.Config` into the spec (τ, α, λ, the loss variant, ``keep_models`` ...), which
the trainer and the loss read as it is.
"""

from __future__ import annotations

import functools
from typing import Sequence

from ..core.experiment import Stage
from ..core.models import backbone_id, is_tiny
from ..core.profiles import Profile, seeds_for
from .config import SECTION, Backbone, Config, ConCSERun, koglish_ref, load
from .loss import TERMS, VARIANTS

__all__ = ["EXPERIMENT", "TASK_LABELS", "AVG", "STSB", "METHOD_LABELS", "LOSS_VARIANTS", "ABLATIONS", "STUDIES",
           "STUDY_SETTINGS", "setting_label", "spec", "plan", "run_desc", "stages"]

EXPERIMENT = SECTION
TASK_LABELS = {"stsb": "STS-B", "sts12": "STS12", "sts13": "STS13", "sts14": "STS14", "sts15": "STS15", "sts16": "STS16", "sick": "SICK"}
AVG = "Avg."
STSB = "Koglish-STS-B"
METHOD_LABELS = {"simcse": "SimCSE", "concse": "ConCSE"}

# Table 4: which loss terms each variant uses (§5.3).
LOSS_VARIANTS: dict[str, tuple[str, ...]] = {
    "v1": ("contrastive",),
    "v2": ("triplet",),
    "v3": ("contrastive", "align"),
    "v4": ("triplet", "align"),
    "v5": ("contrastive", "triplet"),
    "v6": ("contrastive", "triplet", "align"),
}

# the studies of plan(): Table 3 (notebook 03), and the ablations (notebook 04)
ABLATIONS = ("table4", "table5", "table6", "table7", "variant", "simcse_settings")
STUDIES = ("table3",) + ABLATIONS

#: how a study names the setting its runs vary (the progress lines of 04 say which ablation a run is)
STUDY_SETTINGS = {"table4": "Table 4 {}", "table5": "Table 5 τ={}", "table6": "Table 6 λ={}", "table7": "Table 7 α={}",
                  "variant": "loss variant {}", "simcse_settings": "{}"}

#: the settings a run of the plan may set for itself (a sweep's point, an ablation's variant), replacing the section's
SWEPT = ("terms", "temperature", "margin", "triplet_weight", "variant", "simcse_settings")


def setting_label(value: float | None) -> str:
    """A swept value as the paper prints it: 1.0 -> "1", 0.05 -> "0.05", None -> "N/A"."""
    return "N/A" if value is None else f"{value:g}"


def spec(c: Config, profile: Profile, backbone: Backbone, method: str, seed: int, *, koglish: str, study: str = "table3",
         label: str = "", **changes) -> ConCSERun:
    """One run of ``c``: the section's settings, those in ``changes`` (of :data:`SWEPT`) replacing theirs.

    Settings a run does not use are left ``None`` (e.g. the margin when the triplet
    term is off), so e.g. λ = "N/A" and v3 are the same run.
    """
    unknown = sorted(set(changes) - set(SWEPT))
    if unknown:
        raise TypeError(f"spec: unknown setting(s) {unknown} (a run may set {list(SWEPT)})")
    s = dict(terms=TERMS, temperature=c.temperature, margin=c.margin, triplet_weight=c.triplet_weight, variant=c.variant,
             simcse_settings=c.simcse_settings) | changes
    common = dict(
        experiment=EXPERIMENT, backbone=backbone.name, model=backbone.model, koglish=koglish, method=method, seed=int(seed),
        learning_rate=backbone.learning_rate, num_train_epochs=c.num_train_epochs, warmup_ratio=c.warmup_ratio,
        max_grad_norm=c.max_grad_norm, weight_decay=c.weight_decay, precision=profile.precision_name(),
        koglish_source=str(profile.koglish_source), per_device_eval_batch_size=c.per_device_eval_batch_size,
        study=study, label=label, keep_models=c.keep_models, gradient_checkpointing=c.gradient_checkpointing,
        max_train_rows=c.max_train_rows, max_eval_rows=c.max_eval_rows,
        koglish_invalid_rows=None if profile.koglish_invalid_rows == "error" else profile.koglish_invalid_rows,
        train_sample=profile.train_sample if c.max_train_rows and profile.train_sample != "head" else None,
        sts_tests=None if tuple(c.sts_tests) == tuple(TASK_LABELS) else tuple(c.sts_tests),
        # a tiny backbone changes with its recipe (corpus, size, build version)
        backbone_id=backbone_id(backbone.model) if is_tiny(backbone.model) else None,
        packing=True if c.packing else None, torch_compile=c.torch_compile or None,
        head=None if c.head == "dense_tanh" else c.head,  # the default head leaves every key as it was
    )
    if method == "simcse":
        released = s["simcse_settings"] == "released_code"
        return ConCSERun(
            **common, temperature=s["temperature"], simcse_settings=s["simcse_settings"],
            batch_size=(backbone.released_simcse_batch_size or c.released_simcse_batch_size) if released else backbone.simcse_batch_size,
            max_length=c.released_simcse_max_length if released else c.max_length,
        )
    if method != "concse":
        raise ValueError(f"method must be 'simcse' or 'concse', got {method!r}")
    terms = tuple(t for t in TERMS if t in set(s["terms"]))  # canonical order
    uses_sim = "contrastive" in terms or "align" in terms
    uses_tri = "triplet" in terms
    return ConCSERun(
        **common, terms=terms,
        temperature=s["temperature"] if uses_sim else None,
        margin=s["margin"] if uses_tri else None,
        triplet_weight=s["triplet_weight"] if uses_tri else None,
        variant=s["variant"] if ("contrastive" in terms or uses_tri) else None,
        batch_size=backbone.concse_batch_size, max_length=c.max_length, bucket_cost=None if c.packing else c.bucket_cost,
    )


def plan(profile: Profile, studies: Sequence[str] = STUDIES, *, c: Config | None = None) -> list[ConCSERun]:
    """Every run of ``studies``, one spec per table cell (a run two tables need appears twice, with one key).

    Table 3: SimCSE and ConCSE × every backbone × every seed.  The ablations: the
    ablation backbone on the first ``ablation_seeds`` seeds — the loss variants (Table
    4, with SimCSE), the τ, λ and α sweeps (Tables 5–7), the released loss vs the
    equations read literally, and SimCSE's matched vs released-code settings.
    ``c``: the section's Config where the caller has built it (:func:`~codeswitch.concse.experiment.run`).
    """
    unknown = [s for s in studies if s not in STUDIES]
    if unknown:
        raise ValueError(f"studies: unknown {unknown} (known: {', '.join(STUDIES)})")
    c = load(profile) if c is None else c
    koglish = koglish_ref(profile)
    out: list[ConCSERun] = []
    if "table3" in studies:
        out += [spec(c, profile, b, method, seed, koglish=koglish, label=f"{METHOD_LABELS[method]}-{b.name}")
                for b in c.backbones for method in ("simcse", "concse") for seed in seeds_for(profile, c.seeds)]
    b = c.backbone(c.ablation_backbone)
    for seed in seeds_for(profile, c.seeds, c.ablation_seeds) if set(studies) & set(ABLATIONS) else ():
        run = functools.partial(spec, c, profile, b, seed=seed, koglish=koglish)  # run(method, study=, label=, **changes)
        if "table4" in studies:
            out += [run("concse", study="table4", label=v, terms=terms) for v, terms in LOSS_VARIANTS.items()]
            out.append(run("simcse", study="table4", label="SimCSE"))
        if "table5" in studies:
            out += [run("concse", study="table5", label=setting_label(t), temperature=t) for t in c.temperatures]
        if "table6" in studies:
            out += [run("concse", study="table6", label=setting_label(w), terms=LOSS_VARIANTS["v3"]) if w is None
                    else run("concse", study="table6", label=setting_label(w), triplet_weight=w) for w in c.triplet_weights]
        if "table7" in studies:
            out += [run("concse", study="table7", label=setting_label(m), margin=m) for m in c.margins]
        if "variant" in studies:
            out += [run("concse", study="variant", label=v, variant=v) for v in VARIANTS]
        if "simcse_settings" in studies:
            out += [run("concse", study="simcse_settings", label="ConCSE (v6)"),
                    run("simcse", study="simcse_settings", label="SimCSE matched", simcse_settings="matched"),
                    run("simcse", study="simcse_settings", label="SimCSE released_code", simcse_settings="released_code")]
    return out


def run_desc(spec: ConCSERun) -> str:
    """A run's progress label: method, backbone, the study and setting it stands for (not Table 3's), seed.

    ``"ConCSE-mBERT-base seed 11111"`` for Table 3; ``"ConCSE-mBERT-base, Table 5 τ=0.1, seed 11111"`` for an
    ablation (a run several tables share is named after the first that plans it).
    """
    what = f"{METHOD_LABELS[spec.method]}-{spec.backbone}"
    if spec.study in STUDY_SETTINGS:
        return f"{what}, {STUDY_SETTINGS[spec.study].format(spec.label)}, seed {spec.seed}"
    return f"{what} seed {spec.seed}"


# --------------------------------------------------------------------------- the two notebooks' stages (executors)
def stages(profile: Profile) -> list[Stage]:
    """Two independent stages, one per notebook: Table 3 (notebook 03) and the ablations (notebook 04), both cached in
    ``runs/<profile>/concse/`` (a run both need is computed once)."""
    c = load(profile)
    cache = profile.runs_dir / EXPERIMENT
    return [Stage("table3", plan(profile, ("table3",), c=c), cache, notebook="03", desc="ConCSE Table 3"),
            Stage("ablations", plan(profile, ABLATIONS, c=c), cache, notebook="04", desc="ConCSE ablations")]
