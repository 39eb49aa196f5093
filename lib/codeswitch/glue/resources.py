"""What notebook 02 needs (for the preflight); Koglish data: :mod:`codeswitch.koglish.resources`."""

from __future__ import annotations

from ..core.resources import Resource, model_resource
from ..core.profiles import Profile


def resources(profile: Profile) -> list[Resource]:
    from .config import load

    raw = (profile.sections.get("glue") or {}).get("backbones")
    by_name = isinstance(raw, dict)  # the older mapping form: items by name; the list form: by index
    out = []
    for i, b in enumerate(load(profile).backbones):
        key = ("glue", "backbones", b.name if by_name else i, "model")
        out.append(model_resource(("02",), key, b.model, setting=f"glue.backbones.{b.name}.model"))
    return out
