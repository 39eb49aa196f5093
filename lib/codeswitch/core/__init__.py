"""The shared core: what every experiment stands on, and nothing paper-specific.

``profiles`` (typed run profiles, ``configs/<profile>.yaml``), ``runs`` (the run
cache: config hash -> atomic JSON result), ``report`` (tables and figures beside the
papers' numbers), ``reported/`` (the papers' reported numbers, with provenance),
``pipeline`` (the papermill driver behind ``reproduce.sh``; only the CLI imports it),
``hub`` (hub ids / local paths, clear offline errors), ``models`` (backbones: hub id,
local path or ``tiny-*``), ``encoders`` (the dual encoder, its loaders, batch
tokenisation), ``progress``, ``utils``, ``distributed``.

Layer rule: the core imports nothing of ``codeswitch.common`` or the paper packages
(``tests/test_architecture.py`` checks it; ``docs/architecture.md`` explains it).
"""
