"""What notebooks 03 and 04 need (for the preflight); Koglish data: :mod:`codeswitch.koglish.resources`."""

from __future__ import annotations

from ..core.preflight import Resource
from ..core.profiles import Profile
from ..koglish.resources import MODEL_FILES


def resources(cfg: Profile) -> list[Resource]:
    from .config import load as load_config

    c = load_config(cfg)
    return [
        Resource(("03", "04"), "model", f"concse.backbones.{i}.model", b.model, key=("concse", "backbones", i, "model"),
                 files=MODEL_FILES, local_name=f"models/{b.model.split('/')[-1]}")
        for i, b in enumerate(c.backbones)
    ]
