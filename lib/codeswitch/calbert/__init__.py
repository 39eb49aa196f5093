"""CalBERT (notebook 07): ``config`` (the ``calbert`` section and the run specs of its two
stages), ``data`` (the Siamese pre-training pairs), ``train`` (Siamese pre-training and
classifier fine-tuning), ``experiment`` (plan, run, figures, Tables 6–8, 12, 13), ``tables`` (the tables contract, Tables 4, 9, 10, 14).

The experiment contract (:mod:`codeswitch.core.experiment`) at package level::

    from codeswitch import calbert as CB
    specs = CB.plan(profile); results = CB.run(profile); CB.tables(results, profile); CB.figures(results, profile)
"""

from .config import Config, FinetuneRun, PretrainRun, ScratchRun
from .experiment import figures, plan, run, run_one, stages
from .tables import tables

from .config import SECTION, load
from .resources import resources
from .standins import build as build_standins
from .experiment import SELECTION_RULE, kept_dir, kept_model, kept_plan, kept_row

NOTEBOOKS = ('07',)  # the notebooks this package serves

__all__ = ["Config", "PretrainRun", "ScratchRun", "FinetuneRun", "plan", "stages", "run_one", "run", "tables", "figures", "SECTION", "NOTEBOOKS", "load", "resources", "build_standins", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]
