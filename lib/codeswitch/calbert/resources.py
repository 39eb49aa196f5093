"""What notebook 07 needs (for the preflight): five backbones, the pre-training pairs, SAIL 2017, IITP."""

from __future__ import annotations

from ..core.resources import Resource, model_resource
from ..core.profiles import Profile

NB = ("07",)


def resources(profile: Profile) -> list[Resource]:
    from ..common.sentiment import FORMATS
    from ..core.models import BUNDLED
    from .config import load as settings
    from .data import TASK_HELP

    def needed(fmt: str) -> tuple[str, ...]:  # train and validation (test is optional), any accepted name
        return tuple("|".join(FORMATS[fmt].files[split]) for split in ("train", "validation"))

    c = settings(profile)
    out = [
        Resource(NB, "package", f"calbert.backbones.{i}.model", BUNDLED[b.model], note=f"{b.model}: its weights ship in this package")
        if b.model in BUNDLED else
        model_resource(NB, ("calbert", "backbones", i, "model"), b.model)
        for i, b in enumerate(c.backbones)
    ]
    out.append(Resource(NB, "dataset", "calbert.pretrain.pairs", c.pretrain.pairs, key=("calbert", "pretrain", "pairs"),
                        repo_type="dataset", local_name=f"datasets/{c.pretrain.pairs.split('/')[-1]}"))
    out.append(Resource(NB, "dataset", "calbert.sail.source", c.sail.source, key=("calbert", "sail", "source"), path_only=True,
                        files=needed("sail"), note=TASK_HELP["sail"]))
    out.append(Resource(NB, "dataset", "calbert.iitp.source", c.iitp.source, key=("calbert", "iitp", "source"), path_only=True,
                        files=needed("iitp"), note=TASK_HELP["iitp"]))
    return out
