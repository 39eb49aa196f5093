"""What notebook 06 needs (for the preflight): the backbone, IIT Bombay, the MUSE lexicon, GLUECoS."""

from __future__ import annotations

from ..core.resources import Resource, model_resource
from ..core.profiles import Profile

NB = ("06",)


def resources(profile: Profile) -> list[Resource]:
    from .config import load as load_config
    from .gluecos_data import TASKS

    c = load_config(profile)
    out = [
        model_resource(NB, ("alignment", "backbones", 0, "model"), c.backbone.model),
        Resource(NB, "dataset", "alignment.parallel_source", c.parallel_source, key=("alignment", "parallel_source"),
                 repo_type="dataset", local_name=f"datasets/{c.parallel_source.split('/')[-1]}"),
        Resource(NB, "file", "alignment.lexicon_source", c.lexicon_source, key=("alignment", "lexicon_source"),
                 cache_dir=str(profile.runs_dir / "_downloads"), local_name="lexicon",
                 value=f"lexicon/{c.lexicon_source.rstrip('/').split('/')[-1]}", path_only=not c.lexicon_source.startswith("http")),
    ]
    files = []
    for task, spec in TASKS.items():
        if not c.runs_task(task):  # alignment.gluecos_tasks: a task left out needs no files
            continue
        sub = c.task_subdirs.get(task, spec.default_subdir)
        files += ["|".join(f"{sub}/{n}" for n in names) for split, names in spec.files.items() if split != "test"]  # test: optional
    out.append(Resource(NB, "dataset", "alignment.gluecos_dir", c.gluecos_dir, key=("alignment", "gluecos_dir"), path_only=True,
                        files=tuple(files), note="GLUECoS after its download and preprocessing scripts (github.com/microsoft/GLUECoS): "
                        "Data/Processed_Data; not on the hub"))
    return out
