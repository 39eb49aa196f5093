"""The orchestration layer, above the paper packages: what runs the notebooks and everything around them.

    registry     the six paper packages, in notebook order (the one place that imports them all)
    cli          the papermill driver behind ``./reproduce.sh`` (``python -m codeswitch.pipeline``)
    executors    inline, a local pool (one GPU each) or Slurm/submitit: every stage of the selected notebooks at once
    preflight    ``--check`` / ``--prepare``: each package's ``resources(profile)``, present or not, and fetching them
    standins     local stand-ins of every paper backbone and (each package's ``build_standins``) dataset, for paper-ci
    book         ``--book``: a static site of the executed notebooks, INDEX.md and figures

Layers (``tests/test_architecture.py``): ``core`` ← ``common`` ← ``koglish`` ← the five other paper
packages ← this one.  Nothing below imports it.
"""
