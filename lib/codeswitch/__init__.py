"""codeswitch: a reproducible companion to ConCSE/Koglish, ContrastiveMix, code-switching alignment and CalBERT.

Packages (one per paper over a shared core; ``docs/architecture.md``)
-------------------------------------------------------------------
core/            profiles, run cache, reports, the papers' numbers, pipeline, hub, models, encoders
common/          what several papers share: STS, GLUE metrics, romanisation, sentiment data, fast paths
koglish/         Koglish construction and loading (notebook 01)
glue/            Koglish-GLUE fine-tuning (02)
concse/          ConCSE sentence embeddings and ablations (03, 04)
contrastivemix/  ContrastiveMix dense retrieval (05)
alignment/       alignment objectives for code-switching, GLUECoS (06)
calbert/         CalBERT Siamese pre-training (07)
"""

__version__ = "0.1.0"
