"""What notebook 02 needs (for the preflight); Koglish data: :mod:`codeswitch.koglish.resources`."""

from __future__ import annotations

from ..core.preflight import Resource
from ..core.profiles import Profile
from ..koglish.resources import MODEL_FILES


def resources(cfg: Profile) -> list[Resource]:
    from .config import load

    raw = (cfg.sections.get("glue") or {}).get("backbones")
    by_name = isinstance(raw, dict)  # the older mapping form: items by name; the list form: by index
    out = []
    for i, b in enumerate(load(cfg).backbones):
        key = ("glue", "backbones", b.name if by_name else i, "model")
        out.append(Resource(("02",), "model", f"glue.backbones.{b.name}.model", b.model, key=key, files=MODEL_FILES,
                            local_name=f"models/{b.model.split('/')[-1]}"))
    return out
