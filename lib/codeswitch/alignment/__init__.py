"""Alignment objectives for code-switching (notebook 06): ``config`` (the ``alignment``
section and the run specs of its stages), ``data`` (parallel corpora, word aligners,
the lexicon reader), ``loss``, ``train`` (the alignment trainer), ``gluecos_data`` /
``gluecos_train`` / ``gluecos_evaluate`` (GLUECoS fine-tuning and scoring), ``experiment``.

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import alignment as A
    specs = A.plan(profile); results = A.run(profile); A.tables(results, profile); A.figures(results, profile)
"""

from .config import AlignRun, Config, FigureRun, FinetuneRun
from .experiment import figures, plan, run, run_one, stages, tables

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('06',)  # the notebooks this package serves

__all__ = ["Config", "AlignRun", "FinetuneRun", "FigureRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
