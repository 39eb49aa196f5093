"""What notebook 02 needs (for the preflight); Koglish data: :mod:`codeswitch.koglish.resources`."""

from __future__ import annotations

from ..core.preflight import Resource
from ..core.profiles import Profile
from ..koglish.resources import MODEL_FILES


def resources(cfg: Profile) -> list[Resource]:
    from .experiment import load_config

    raw = (cfg.sections.get("glue") or {}).get("backbones")
    labels = list(raw) if isinstance(raw, dict) else None
    out = []
    for i, (label, b) in enumerate(load_config(cfg).backbones.items()):
        key = ("glue", "backbones", label, "model") if labels is not None else ()  # a list: left as written
        out.append(Resource(("02",), "model", f"glue.backbones.{label}.model", b.model, key=key, files=MODEL_FILES,
                            local_name=f"models/{b.model.split('/')[-1]}"))
    return out
