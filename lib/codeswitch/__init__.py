"""codeswitch: a reproducible companion to ConCSE/Koglish, ContrastiveMix, code-switching alignment and CalBERT.

Modules
-------
profiles   typed run profiles (``configs/<profile>.yaml``)
runs       the run cache (config hash -> atomic JSON result)
report     tables and figures from cached results, beside the papers' numbers
reported   the papers' reported numbers, with provenance
models     backbones: hub id, local path, or ``tiny-*`` built from config
hub        resolving hub ids / local paths with clear offline errors
pipeline   the papermill driver behind ``reproduce.sh``
progress   log-friendly progress bars
data/      Koglish, synthetic smoke data, code-mixing, readers
"""

__version__ = "0.1.0"
