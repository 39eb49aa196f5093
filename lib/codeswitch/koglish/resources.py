"""What notebooks 01-04 need from the Koglish side (for the preflight, :mod:`codeswitch.pipeline.preflight`)."""

from __future__ import annotations

from ..core.resources import MODEL_FILES, Resource, is_builtin, model_resource
from ..core.profiles import Profile
from .data import GLUE_TASKS, is_local

#: the authors' hub repositories under the ``koglish_source`` namespace
REPOS = ("Koglish_GLUE", "Koglish_NLI", "Koglish_STS", "Koglish_SICK")
#: notebooks that read ``koglish_source``
READERS = ("01", "02", "03", "04")



def _benepar_probe(name: str):
    """Where benepar finds ``name`` (as ``benepar.Parser`` does: a folder in benepar's released format, or an NLTK
    data package ``models/<name>``) and whether it is there."""

    def probe():
        import importlib.util
        from pathlib import Path

        if Path(name).expanduser().exists() or "/" in name:
            folder = Path(name).expanduser()
            ok = (folder / "benepar_model.bin").is_file() and (folder / "config.json").is_file()
            return (str(folder) if ok else f"{folder} (a benepar model folder: config.json + benepar_model.bin)"), ok
        if importlib.util.find_spec("nltk") is None:
            return "nltk not installed", False
        import nltk

        try:
            return nltk.data.find(f"models/{name}"), True
        except LookupError:
            return f"nltk_data/models/{name} (not found by nltk.data.find)", False

    return probe


def _benepar_fetch(name: str):
    """``--prepare``: benepar's own downloader into ``<target>/models/<name>`` (an NLTK data folder); the path to set."""

    def fetch(target):
        import benepar

        if not benepar.download(name, download_dir=str(target), quiet=True, raise_on_error=True):
            raise RuntimeError(f"benepar.download({name!r}) failed")
        return target / "models" / name

    return fetch


def resources(profile: Profile) -> list[Resource]:
    from .config import load

    c = load(profile)
    src = profile.koglish_source
    out: list[Resource] = []
    if is_builtin(src):
        out.append(Resource(READERS, "dataset", "koglish_source", src, key=("koglish_source",)))
    elif is_local(src):
        out.append(Resource(READERS, "dataset", "koglish_source", src, key=("koglish_source",), path_only=True,
                            files=("Koglish_GLUE", "Koglish_NLI", "Koglish_STS"),
                            note="the parent of Koglish_GLUE/, Koglish_NLI/, Koglish_STS/ (SICK: Koglish_STS/sick or SICK, or Koglish_SICK/)"))
    else:
        for repo in REPOS:
            out.append(Resource(READERS, "dataset", "koglish_source", f"{src}/{repo}", key=("koglish_source",), repo_type="dataset",
                                files=("*.csv|**/*.csv",), local_name=f"koglish/{repo}", value="koglish"))
    if c.construct_source == "glue":
        out.append(Resource(("01",), "dataset", "koglish.glue_hub", c.glue_hub, key=("koglish", "glue_hub"), repo_type="dataset",
                            files=tuple(f"{t}/train-*" for t in GLUE_TASKS), local_name="datasets/glue"))
    if c.parser == "benepar":
        out.append(Resource(("01",), "package", "koglish.parser", "benepar"))
        out.append(Resource(("01",), "file", "koglish.benepar_model", c.benepar_model, key=("koglish", "benepar_model"),
                            probe=_benepar_probe(c.benepar_model), fetch=_benepar_fetch(c.benepar_model), local_name="nltk_data",
                            fix="" if "/" in c.benepar_model else
                            f"python -c \"import benepar; benepar.download('{c.benepar_model}')\"   # into ~/nltk_data, where nltk finds it",
                            note="benepar's parser: an NLTK data package (benepar.download) or a folder in its released format"))
    if c.translator == "hf":
        out.append(model_resource(("01",), ("koglish", "hf_model"), c.hf_model, files=(*MODEL_FILES, "tokenizer*|sentencepiece*")))
    elif c.translator == "google":
        out.append(Resource(("01",), "credential", "koglish.google_key_env", c.google_key_env))
    elif c.dictionary:
        out.append(Resource(("01",), "file", "koglish.dictionary", c.dictionary, key=("koglish", "dictionary"), path_only=True))
    return out
