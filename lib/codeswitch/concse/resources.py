"""What notebooks 03 and 04 need (for the preflight); Koglish data: :mod:`codeswitch.koglish.resources`."""

from __future__ import annotations

from ..core.resources import Resource, model_resource
from ..core.profiles import Profile


def resources(profile: Profile) -> list[Resource]:
    from .config import load as load_config

    c = load_config(profile)
    return [
        model_resource(("03", "04"), ("concse", "backbones", i, "model"), b.model)
        for i, b in enumerate(c.backbones)
    ]
